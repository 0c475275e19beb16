//! [`ExternalCli`]: a gptme-CLI wake logic that lives in an adapter process.
//!
//! The module registers at most one STEP_PRE and one LOOP_CONTINUE hook; `ready` names them with
//! their priorities. The host runs the STEP_PRE hook before every model request (`step_pre`
//! event, answered by `done` with the items it yields) and the LOOP_CONTINUE hook among its own
//! hooks by priority (`loop_continue` event). A LOOP_CONTINUE hook blocks in gptme: it releases
//! `_job_lock` for file I/O and waits on the conversation's condition. Here the adapter ends
//! such a segment with `unlock` or `wait` instead of `done`; the host lets other threads run and
//! later continues the same hook with a `resume` event (`io`, `notified` or `timed_out`), exactly
//! as it resumes a built-in hook's [`Flow`].
//!
//! The calls are the [`Cli`] handle's: `claim_completions`, `jobs`, `mark_wait_expired`,
//! `take_prompts`, `control_file`, `subagent_pending`. What a hook yields is named by content:
//! an item `{"carries": [ids]}` carries the claimed completions and taken prompts whose markers
//! `[wakesim mN]` its text holds; `{"notice": "input"}` is "Background wait yielded to pending
//! session input." about the `control.jsonl` the handler read last; `{"notice": "timeout"}`
//! reports the jobs the hook marked `_wait_expired` and did not report yet.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde::Serialize;

use super::api::{Claimed, Cli, CliWake, ControlFile, Flow, Item, JobRef, PromptRecord, Resume};
use serde::Deserialize;

use crate::adapter::protocol::{AdapterCall, Answer, Event, FromAdapter, HookSpec, ItemSpec};
use crate::adapter::{
    AdapterFault, Calls, Slot, SlotRef, Step, carries, fault, handler_threw, intern,
};
use crate::family::common::conv::ConvId;
use crate::limits::DURATION_MS_MAX;
use crate::sim::msg::{MsgId, conv_name};

const CALLS: Calls = Calls {
    family: "the gptme CLI",
    list: "claim_completions, jobs, mark_wait_expired, take_prompts, control_file, \
           subagent_pending",
};

/// The calls an adapter of this family may make: the gptme CLI's API (`docs/protocol.md`): completions, jobs, the prompt queue, the control file, and the ends of a blocking hook's segment (`unlock`, `wait`). Its `Family::Call`; every call
/// rejects fields it does not have.
#[derive(Deserialize, Debug)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum CliCall {
    ClaimCompletions { conversation_id: Option<String> },
    Jobs {},
    MarkWaitExpired { job: Option<u64> },
    TakePrompts { max: u64 },
    ControlFile {},
    SubagentPending {},
    Unlock {},
    Wait { timeout_ms: u64 },
}

impl AdapterCall for CliCall {
    const TYPES: &'static [&'static str] = &[
        "claim_completions",
        "jobs",
        "mark_wait_expired",
        "take_prompts",
        "control_file",
        "subagent_pending",
        "unlock",
        "wait",
    ];

    fn name(&self) -> &'static str {
        match self {
            CliCall::ClaimCompletions { .. } => "claim_completions",
            CliCall::Jobs { .. } => "jobs",
            CliCall::MarkWaitExpired { .. } => "mark_wait_expired",
            CliCall::TakePrompts { .. } => "take_prompts",
            CliCall::ControlFile { .. } => "control_file",
            CliCall::SubagentPending { .. } => "subagent_pending",
            CliCall::Unlock { .. } => "unlock",
            CliCall::Wait { .. } => "wait",
        }
    }
}

/// The hooks the module registered: the STEP_PRE hook's name as timelines show it, the
/// LOOP_CONTINUE hook's name and priority.
#[derive(Clone, Copy, Debug, Default)]
struct Hooks {
    step_pre: Option<&'static str>,
    loop_continue: Option<(&'static str, i32)>,
}

/// How a handler of the adapter ended.
enum End {
    Done { items: Vec<Item>, stop: bool },
    Threw(Option<serde_json::Value>),
    Unlock,
    Wait(u64),
}

/// A gptme-cli event.
#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum CliEvent {
    StepPre {
        now: u64,
        conversation_id: String,
        interactive: bool,
        prompt_queue: usize,
    },
    LoopContinue {
        now: u64,
        conversation_id: String,
        interactive: bool,
        prompt_queue: usize,
        idle_max_ms: u64,
    },
    Resume {
        now: u64,
        why: &'static str,
    },
}

/// A job as the protocol shows it.
#[derive(Serialize)]
struct JobJson {
    job: u32,
    id: u32,
    conversation_id: String,
}

impl JobJson {
    fn of(j: &JobRef) -> JobJson {
        JobJson {
            job: j.index,
            id: j.id(),
            conversation_id: conv_name(j.conversation().0).to_string(),
        }
    }
}

/// A claimed completion: the job and its output.
#[derive(Serialize)]
struct ClaimedJson {
    #[serde(flatten)]
    job: JobJson,
    command: String,
    returncode: i32,
    stdout: String,
    stderr: &'static str,
}

/// A registered job's state.
#[derive(Serialize)]
struct JobViewJson {
    #[serde(flatten)]
    job: JobJson,
    running: bool,
    notified: bool,
    wait_expired: bool,
}

/// A record taken from the prompt-queue file.
#[derive(Serialize)]
struct PromptJson {
    content: String,
    steer: bool,
}

/// `control.jsonl` as read.
#[derive(Serialize)]
struct ControlJson {
    size: u32,
    contents: String,
}

/// A gptme-CLI wake logic behind the adapter protocol. One instance per run; the process is
/// shared.
pub struct ExternalCli {
    slot: SlotRef,
    constants_ms: Vec<u64>,
    /// Read from `ready` at the run's first call (`loop_continue_priority` and `name` take
    /// `&self`, hence the cell).
    hooks: RefCell<Option<Hooks>>,
    /// What the adapter was handed this run, by message or job handle: what its items and calls
    /// may name.
    claimed: BTreeMap<MsgId, Claimed>,
    prompts: BTreeMap<MsgId, PromptRecord>,
    jobs: BTreeMap<u32, JobRef>,
    /// In the current hook: the `control.jsonl` read last, and the jobs marked expired and not
    /// reported yet.
    control: Option<ControlFile>,
    expired: Vec<JobRef>,
}

/// The conversation a `conversation_id` names: `"A"` is this session's.
fn conv_id(v: Option<&str>) -> Result<ConvId, String> {
    match v {
        Some(s) if s.len() == 1 && s.as_bytes()[0].is_ascii_uppercase() => {
            Ok(ConvId(s.as_bytes()[0] - b'A'))
        }
        _ => Err("`conversation_id` must name a conversation (\"A\" is this session's)".into()),
    }
}

/// What `control.jsonl` holds, as text: one 40-byte record per write, each naming the write it
/// belongs to, so contents are equal exactly when the simulator's are (a same-size rewrite
/// changes the text, not the size).
fn control_contents(c: &ControlFile) -> String {
    const RECORD: usize = 40;
    let size = c.size() as usize;
    let mut text = String::with_capacity(size);
    let mut n = 0;
    while text.len() + RECORD <= size {
        let record = format!(r#"{{"op":"cancel","write":{},"line":{n}}}"#, c.version);
        text += &format!("{record:<width$}\n", width = RECORD - 1);
        n += 1;
    }
    while text.len() < size {
        text.push(' ');
    }
    text
}

impl ExternalCli {
    pub fn new(slot: SlotRef, constants_ms: Vec<u64>) -> ExternalCli {
        ExternalCli {
            slot,
            constants_ms,
            hooks: RefCell::new(None),
            claimed: BTreeMap::new(),
            prompts: BTreeMap::new(),
            jobs: BTreeMap::new(),
            control: None,
            expired: Vec::new(),
        }
    }

    /// The module's hooks, starting the run in the adapter (`reset`, `ready`) at the first call.
    fn hooks(&self) -> Hooks {
        if let Some(h) = *self.hooks.borrow() {
            return h;
        }
        let mut slot = self.slot.borrow_mut();
        let ready = slot.reset().unwrap_or_else(|f| fault(f));
        let hooks = read_hooks(&ready.events, ready.hooks.as_ref())
            .unwrap_or_else(|w| fault(slot.bad(&w, "resetting for a new run")));
        *self.hooks.borrow_mut() = Some(hooks);
        hooks
    }

    /// Write the event and execute the adapter's calls on `cli` until the handler ends.
    fn handle(&mut self, cli: &mut Cli<'_>, event: CliEvent, name: &'static str) -> End {
        let suspendable = name != "step_pre";
        let slot = Rc::clone(&self.slot);
        let mut slot = slot.borrow_mut();
        let doing = format!("handling `{name}` at {} ms", cli.now().0);
        let end = slot.exchange(&Event { event }, &doing, CALLS, |s, msg| {
            self.call(cli, s, msg, &doing, suspendable)
        });
        drop(slot);
        match end {
            Ok(End::Threw(error)) => {
                handler_threw(name, &error);
                End::Threw(None)
            }
            Ok(end) => end,
            Err(f) => fault(f),
        }
    }

    /// A hook's end as the host's [`Flow`].
    fn flow(&mut self, cli: &mut Cli<'_>, event: CliEvent, name: &'static str) -> Flow {
        match self.handle(cli, event, name) {
            End::Done { items, stop } => Flow::Return { items, stop },
            End::Unlock => Flow::Unlock,
            End::Wait(timeout_ms) => Flow::Wait { timeout_ms },
            // `done` without an error never ends as `Threw`; with one, `handle` panicked.
            End::Threw(_) => Flow::nothing(),
        }
    }

    /// One message of the adapter inside a handler.
    fn call(
        &mut self,
        cli: &mut Cli<'_>,
        slot: &mut Slot,
        msg: FromAdapter<CliCall>,
        doing: &str,
        suspendable: bool,
    ) -> Result<Step<End>, AdapterFault> {
        let end = match msg {
            FromAdapter::Done { error: Some(e), .. } => End::Threw(Some(e)),
            FromAdapter::Done { items, stop, .. } => {
                let items = self.items(items).map_err(|w| slot.bad(&w, doing))?;
                End::Done {
                    items,
                    stop: stop.unwrap_or(false),
                }
            }
            FromAdapter::Call(CliCall::Unlock {}) | FromAdapter::Call(CliCall::Wait { .. })
                if !suspendable =>
            {
                let what = format!(
                    "`{}` ends only a LOOP_CONTINUE hook (a STEP_PRE hook cannot block)",
                    msg.name()
                );
                return Err(slot.bad(&what, doing));
            }
            FromAdapter::Call(CliCall::Unlock {}) => End::Unlock,
            FromAdapter::Call(CliCall::Wait { timeout_ms }) if timeout_ms <= DURATION_MS_MAX => {
                End::Wait(timeout_ms)
            }
            FromAdapter::Call(CliCall::Wait { .. }) => {
                let what = format!("`timeout_ms` must be an integer in 0..={DURATION_MS_MAX}");
                return Err(slot.bad(&what, doing));
            }
            other => return self.query(cli, slot, other, doing),
        };
        Ok(Step::End(end))
    }

    /// A call of the CLI's, answered where it is a query.
    fn query(
        &mut self,
        cli: &mut Cli<'_>,
        slot: &mut Slot,
        msg: FromAdapter<CliCall>,
        doing: &str,
    ) -> Result<Step<End>, AdapterFault> {
        match msg {
            FromAdapter::Call(CliCall::ClaimCompletions { conversation_id }) => {
                let cid = conv_id(conversation_id.as_deref()).map_err(|w| slot.bad(&w, doing))?;
                let value: Vec<ClaimedJson> = (cli.claim_completions(cid).iter())
                    .map(|c| self.claimed(c))
                    .collect();
                slot.send(&Answer { value }, doing)?;
            }
            FromAdapter::Call(CliCall::Jobs {}) => {
                let value: Vec<JobViewJson> = (cli.jobs().iter())
                    .map(|j| {
                        self.jobs.insert(j.job.index, j.job);
                        JobViewJson {
                            job: JobJson::of(&j.job),
                            running: j.running,
                            notified: j.notified,
                            wait_expired: j.wait_expired,
                        }
                    })
                    .collect();
                slot.send(&Answer { value }, doing)?;
            }
            FromAdapter::Call(CliCall::MarkWaitExpired { job }) => {
                let job = job
                    .and_then(|i| u32::try_from(i).ok())
                    .and_then(|i| self.jobs.get(&i).copied())
                    .ok_or_else(|| {
                        slot.bad(
                            "`job` must be the handle of a job the simulator handed out in this run",
                            doing,
                        )
                    })?;
                cli.mark_wait_expired(job);
                if !self.expired.contains(&job) {
                    self.expired.push(job);
                }
            }
            FromAdapter::Call(CliCall::TakePrompts { max }) => {
                let taken = cli.take_prompts(usize::try_from(max).unwrap_or(usize::MAX));
                let value: Vec<PromptJson> = taken.iter().map(|r| self.taken(r)).collect();
                slot.send(&Answer { value }, doing)?;
            }
            FromAdapter::Call(CliCall::ControlFile {}) => {
                let control = cli.control_file();
                self.control = control.or(self.control);
                let value = control.map(|c| ControlJson {
                    size: c.size(),
                    contents: control_contents(&c),
                });
                slot.send(&Answer { value }, doing)?;
            }
            FromAdapter::Call(CliCall::SubagentPending {}) => {
                let value = cli.subagent_pending();
                slot.send(&Answer { value }, doing)?;
            }
            _ => return Ok(Step::NotMine),
        }
        Ok(Step::Next)
    }

    /// A claimed completion, remembered for the items that may name it.
    fn claimed(&mut self, c: &Claimed) -> ClaimedJson {
        self.claimed.insert(c.msg, *c);
        self.jobs.insert(c.job.index, c.job);
        ClaimedJson {
            job: JobJson::of(&c.job),
            command: format!("sleep-and-print {}", c.job.id()),
            returncode: 0,
            stdout: format!("output of {} [wakesim {}]\n", c.job.name, c.msg),
            stderr: "",
        }
    }

    /// A taken prompt record, remembered for the items that may name it.
    fn taken(&mut self, r: &PromptRecord) -> PromptJson {
        self.prompts.insert(r.msg, *r);
        let content = if r.steer {
            format!("steer prompt [wakesim {}]", r.msg)
        } else {
            format!("prompt [wakesim {}]", r.msg)
        };
        PromptJson {
            content,
            steer: r.steer,
        }
    }

    /// `done.items`: what the hook yields, as the host's items.
    fn items(&mut self, list: Option<Vec<ItemSpec>>) -> Result<Vec<Item>, String> {
        let mut items = Vec::new();
        for it in list.unwrap_or_default() {
            match (it.notice.as_deref(), it.carries) {
                (Some("input"), _) => {
                    let control = self
                        .control
                        .ok_or("an input notice, but the hook read no non-empty control.jsonl")?;
                    items.push(Item::InputPending(control));
                }
                (Some("timeout"), _) => {
                    items.push(Item::Timeout(std::mem::take(&mut self.expired)));
                }
                (Some(other), _) => {
                    return Err(format!(
                        "unknown notice `{other}` (notices: input, timeout)"
                    ));
                }
                (None, Some(ids)) => self.carried(&carries(&Some(ids)), &mut items)?,
                (None, None) => {
                    return Err(
                        "an item must have `carries` (producer messages) or a `notice`".into(),
                    );
                }
            }
        }
        Ok(items)
    }

    /// The items an item carrying `ids` stands for: completions claimed and prompts taken.
    fn carried(&self, ids: &[MsgId], items: &mut Vec<Item>) -> Result<(), String> {
        if ids.is_empty() {
            return Err("an item that carries nothing and is no notice".into());
        }
        for id in ids {
            if let Some(c) = self.claimed.get(id) {
                items.push(Item::Completion(*c));
            } else if let Some(r) = self.prompts.get(id) {
                items.push(Item::Prompt(*r));
            } else {
                return Err(format!(
                    "an item carries {id}, which is neither a completion the hook claimed nor a \
                     prompt it took in this run"
                ));
            }
        }
        Ok(())
    }

    /// A new hook invocation starts: nothing read or marked in it yet.
    fn begin(&mut self) {
        self.control = None;
        self.expired.clear();
    }
}

/// The hooks `ready` names: `events` (a subset of `step_pre`, `loop_continue`) and, for each,
/// `hooks.<event> = {"name": .., "priority": ..}`.
fn read_hooks(
    events: &[String],
    specs: Option<&BTreeMap<String, HookSpec>>,
) -> Result<Hooks, String> {
    let mut hooks = Hooks::default();
    for e in events {
        let spec = specs.and_then(|h| h.get(e));
        let name = spec.and_then(|s| s.name.as_deref());
        let priority = spec
            .and_then(|s| s.priority)
            .and_then(|p| i32::try_from(p).ok());
        let (Some(name), Some(priority)) = (name, priority) else {
            return Err(format!(
                "`ready` lists `{e}` but `hooks.{e}` has no string `name` and integer `priority`"
            ));
        };
        match e.as_str() {
            "step_pre" => {
                hooks.step_pre = Some(intern(&format!("{name} ({priority})"), "STEP_PRE hook"));
            }
            "loop_continue" => {
                hooks.loop_continue = Some((intern(name, "LOOP_CONTINUE hook"), priority));
            }
            other => {
                return Err(format!(
                    "`ready` names an event the gptme CLI does not have: `{other}` (gptme-cli \
                     events: step_pre, loop_continue)"
                ));
            }
        }
    }
    Ok(hooks)
}

impl CliWake for ExternalCli {
    fn constants_ms(&self) -> Vec<u64> {
        self.constants_ms.clone()
    }

    fn loop_continue_priority(&self) -> i32 {
        self.hooks().loop_continue.map_or(0, |(_, p)| p)
    }

    fn name(&self) -> &'static str {
        self.hooks()
            .loop_continue
            .map_or("(no LOOP_CONTINUE hook)", |(n, _)| n)
    }

    fn step_pre_name(&self) -> &'static str {
        self.hooks()
            .step_pre
            .unwrap_or("the wake logic's STEP_PRE hook")
    }

    fn step_pre(&mut self, cli: &mut Cli<'_>) -> Vec<Item> {
        if self.hooks().step_pre.is_none() {
            return Vec::new();
        }
        self.begin();
        let event = CliEvent::StepPre {
            now: cli.now().0,
            conversation_id: conv_name(cli.conversation().0).to_string(),
            interactive: cli.interactive(),
            prompt_queue: cli.prompt_queue_len(),
        };
        match self.handle(cli, event, "step_pre") {
            End::Done { items, .. } => items,
            // A STEP_PRE hook that blocks is a protocol fault (`call`); one that threw panicked.
            End::Unlock | End::Wait(_) | End::Threw(_) => Vec::new(),
        }
    }

    fn loop_continue(&mut self, cli: &mut Cli<'_>) -> Flow {
        if self.hooks().loop_continue.is_none() {
            return Flow::nothing();
        }
        self.begin();
        let event = CliEvent::LoopContinue {
            now: cli.now().0,
            conversation_id: conv_name(cli.conversation().0).to_string(),
            interactive: cli.interactive(),
            prompt_queue: cli.prompt_queue_len(),
            idle_max_ms: cli.idle_max_ms(),
        };
        self.flow(cli, event, "loop_continue")
    }

    fn resume(&mut self, cli: &mut Cli<'_>, why: Resume) -> Flow {
        let why = match why {
            Resume::Io => "io",
            Resume::Notified => "notified",
            Resume::TimedOut => "timed_out",
        };
        let event = CliEvent::Resume {
            now: cli.now().0,
            why,
        };
        self.flow(cli, event, "resume")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_contents_have_the_size_and_differ_by_write() {
        let a = ControlFile {
            version: 1,
            size: 80,
        };
        let b = ControlFile {
            version: 2,
            size: 80,
        };
        assert_eq!(control_contents(&a).len(), 80);
        assert_eq!(control_contents(&b).len(), 80);
        assert_ne!(control_contents(&a), control_contents(&b));
        assert_eq!(control_contents(&a).lines().count(), 2);
    }
}
