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

use serde_json::Value;

use crate::adapter::{AdapterFault, Slot, SlotRef, Step, fault, handler_threw, intern, json_str};
use crate::family::common::conv::ConvId;
use crate::family::gptme_cli::api::{
    Claimed, Cli, CliWake, ControlFile, Flow, Item, JobRef, PromptRecord, Resume,
};
use crate::limits::DURATION_MS_MAX;
use crate::sim::msg::{MsgId, conv_name};

const CALLS: &str = "claim_completions, jobs, mark_wait_expired, take_prompts, control_file, \
                     subagent_pending";

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
    Threw(Value),
    Unlock,
    Wait(u64),
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

fn conv_id(v: &Value, key: &str) -> Result<ConvId, String> {
    match v.get(key).and_then(Value::as_str) {
        Some(s) if s.len() == 1 && s.as_bytes()[0].is_ascii_uppercase() => {
            Ok(ConvId(s.as_bytes()[0] - b'A'))
        }
        _ => Err(format!(
            "`{key}` must name a conversation (\"A\" is this session's)"
        )),
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

fn job_fields(j: &JobRef) -> String {
    format!(
        r#""job":{},"id":{},"conversation_id":"{}""#,
        j.index,
        j.id(),
        conv_name(j.conversation().0)
    )
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
        let (events, ready) = slot.reset().unwrap_or_else(|f| fault(f));
        let hooks = read_hooks(&events, &ready)
            .unwrap_or_else(|w| fault(slot.bad(&ready, &w, "resetting for a new run")));
        *self.hooks.borrow_mut() = Some(hooks);
        hooks
    }

    /// Write the event and execute the adapter's calls on `cli` until the handler ends.
    fn handle(&mut self, cli: &mut Cli<'_>, event: &'static str, line: &str) -> End {
        let suspendable = event != "step_pre";
        let slot = Rc::clone(&self.slot);
        let mut slot = slot.borrow_mut();
        let doing = format!("handling `{event}` at {} ms", cli.now().0);
        let end = slot.exchange(line, &doing, "the gptme CLI", CALLS, |s, ty, v| {
            self.call(cli, s, ty, v, &doing, suspendable)
        });
        drop(slot);
        match end {
            Ok(End::Threw(v)) => {
                handler_threw(event, &v);
                unreachable!("a handler that threw ends the run")
            }
            Ok(end) => end,
            Err(f) => fault(f),
        }
    }

    /// A hook's end as the host's [`Flow`].
    fn flow(&mut self, cli: &mut Cli<'_>, event: &'static str, line: &str) -> Flow {
        match self.handle(cli, event, line) {
            End::Done { items, stop } => Flow::Return { items, stop },
            End::Unlock => Flow::Unlock,
            End::Wait(timeout_ms) => Flow::Wait { timeout_ms },
            End::Threw(_) => unreachable!("handled"),
        }
    }

    /// One message of the adapter inside a handler.
    fn call(
        &mut self,
        cli: &mut Cli<'_>,
        slot: &mut Slot,
        ty: &str,
        v: &Value,
        doing: &str,
        suspendable: bool,
    ) -> Result<Step<End>, AdapterFault> {
        let bad = |slot: &mut Slot, what: String| slot.bad(v, &what, doing);
        let answer = |slot: &mut Slot, value: &str| {
            slot.write(&format!(r#"{{"type":"result","value":{value}}}"#), doing)
        };
        match ty {
            "done" => {
                if v.get("error").is_some() {
                    return Ok(Step::End(End::Threw(v.clone())));
                }
                let stop = match v.get("stop") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => return Err(bad(slot, "`stop` must be a boolean".into())),
                };
                let items = self.items(v).map_err(|w| bad(slot, w))?;
                Ok(Step::End(End::Done { items, stop }))
            }
            "unlock" | "wait" if !suspendable => Err(bad(
                slot,
                format!("`{ty}` ends only a LOOP_CONTINUE hook (a STEP_PRE hook cannot block)"),
            )),
            "unlock" => Ok(Step::End(End::Unlock)),
            "wait" => match v.get("timeout_ms").and_then(Value::as_u64) {
                Some(ms) if ms <= DURATION_MS_MAX => Ok(Step::End(End::Wait(ms))),
                _ => Err(bad(
                    slot,
                    format!("`timeout_ms` must be an integer in 0..={DURATION_MS_MAX}"),
                )),
            },
            "claim_completions" => {
                let cid = conv_id(v, "conversation_id").map_err(|w| bad(slot, w))?;
                let claimed = cli.claim_completions(cid);
                let mut list = Vec::with_capacity(claimed.len());
                for c in &claimed {
                    self.claimed.insert(c.msg, *c);
                    self.jobs.insert(c.job.index, c.job);
                    let stdout = format!("output of {} [wakesim {}]\n", c.job.name, c.msg);
                    list.push(format!(
                        r#"{{{},"command":{},"returncode":0,"stdout":{},"stderr":""}}"#,
                        job_fields(&c.job),
                        json_str(&format!("sleep-and-print {}", c.job.id())),
                        json_str(&stdout)
                    ));
                }
                answer(slot, &format!("[{}]", list.join(",")))?;
                Ok(Step::Next)
            }
            "jobs" => {
                let jobs = cli.jobs();
                let mut list = Vec::with_capacity(jobs.len());
                for j in &jobs {
                    self.jobs.insert(j.job.index, j.job);
                    list.push(format!(
                        r#"{{{},"running":{},"notified":{},"wait_expired":{}}}"#,
                        job_fields(&j.job),
                        j.running,
                        j.notified,
                        j.wait_expired
                    ));
                }
                answer(slot, &format!("[{}]", list.join(",")))?;
                Ok(Step::Next)
            }
            "mark_wait_expired" => {
                let job = v
                    .get("job")
                    .and_then(Value::as_u64)
                    .and_then(|i| u32::try_from(i).ok())
                    .and_then(|i| self.jobs.get(&i).copied())
                    .ok_or_else(|| {
                        bad(
                            slot,
                            "`job` must be the handle of a job the simulator handed out in this \
                             run"
                            .into(),
                        )
                    })?;
                cli.mark_wait_expired(job);
                if !self.expired.contains(&job) {
                    self.expired.push(job);
                }
                Ok(Step::Next)
            }
            "take_prompts" => {
                let Some(max) = v.get("max").and_then(Value::as_u64) else {
                    return Err(bad(slot, "`max` must be a non-negative integer".into()));
                };
                let taken = cli.take_prompts(usize::try_from(max).unwrap_or(usize::MAX));
                let mut list = Vec::with_capacity(taken.len());
                for r in &taken {
                    self.prompts.insert(r.msg, *r);
                    let content = if r.steer {
                        format!("steer prompt [wakesim {}]", r.msg)
                    } else {
                        format!("prompt [wakesim {}]", r.msg)
                    };
                    list.push(format!(
                        r#"{{"content":{},"steer":{}}}"#,
                        json_str(&content),
                        r.steer
                    ));
                }
                answer(slot, &format!("[{}]", list.join(",")))?;
                Ok(Step::Next)
            }
            "control_file" => {
                let control = cli.control_file();
                self.control = control.or(self.control);
                match control {
                    None => answer(slot, "null")?,
                    Some(c) => answer(
                        slot,
                        &format!(
                            r#"{{"size":{},"contents":{}}}"#,
                            c.size(),
                            json_str(&control_contents(&c))
                        ),
                    )?,
                }
                Ok(Step::Next)
            }
            "subagent_pending" => {
                let pending = cli.subagent_pending();
                answer(slot, if pending { "true" } else { "false" })?;
                Ok(Step::Next)
            }
            _ => Ok(Step::NotMine),
        }
    }

    /// `done.items`: what the hook yields, as the host's items.
    fn items(&mut self, v: &Value) -> Result<Vec<Item>, String> {
        let list = match v.get("items") {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(a)) => a,
            Some(_) => return Err("`items` must be a list".into()),
        };
        let mut items = Vec::new();
        for it in list {
            match (it.get("notice").and_then(Value::as_str), it.get("carries")) {
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
                (None, Some(_)) => {
                    let ids = crate::adapter::carries(it)?;
                    if ids.is_empty() {
                        return Err("an item that carries nothing and is no notice".into());
                    }
                    for id in ids {
                        if let Some(c) = self.claimed.get(&id) {
                            items.push(Item::Completion(*c));
                        } else if let Some(r) = self.prompts.get(&id) {
                            items.push(Item::Prompt(*r));
                        } else {
                            return Err(format!(
                                "an item carries {id}, which is neither a completion the hook \
                                 claimed nor a prompt it took in this run"
                            ));
                        }
                    }
                }
                (None, None) => {
                    return Err(
                        "an item must have `carries` (producer messages) or a `notice`".into(),
                    );
                }
            }
        }
        Ok(items)
    }

    /// A new hook invocation starts: nothing read or marked in it yet.
    fn begin(&mut self) {
        self.control = None;
        self.expired.clear();
    }
}

/// The hooks `ready` names: `events` (a subset of `step_pre`, `loop_continue`) and, for each,
/// `hooks.<event> = {"name": .., "priority": ..}`.
fn read_hooks(events: &[String], ready: &Value) -> Result<Hooks, String> {
    let mut hooks = Hooks::default();
    for e in events {
        let spec = ready.get("hooks").and_then(|h| h.get(e.as_str()));
        let name = spec.and_then(|s| s.get("name")).and_then(Value::as_str);
        let priority = spec
            .and_then(|s| s.get("priority"))
            .and_then(Value::as_i64)
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
        let line = format!(
            r#"{{"type":"event","event":"step_pre","now":{},"conversation_id":"{}","interactive":{},"prompt_queue":{}}}"#,
            cli.now().0,
            conv_name(cli.conversation().0),
            cli.interactive(),
            cli.prompt_queue_len()
        );
        match self.handle(cli, "step_pre", &line) {
            End::Done { items, .. } => items,
            _ => unreachable!("a STEP_PRE hook ends with done"),
        }
    }

    fn loop_continue(&mut self, cli: &mut Cli<'_>) -> Flow {
        if self.hooks().loop_continue.is_none() {
            return Flow::nothing();
        }
        self.begin();
        let line = format!(
            r#"{{"type":"event","event":"loop_continue","now":{},"conversation_id":"{}","interactive":{},"prompt_queue":{},"idle_max_ms":{}}}"#,
            cli.now().0,
            conv_name(cli.conversation().0),
            cli.interactive(),
            cli.prompt_queue_len(),
            cli.idle_max_ms()
        );
        self.flow(cli, "loop_continue", &line)
    }

    fn resume(&mut self, cli: &mut Cli<'_>, why: Resume) -> Flow {
        let why = match why {
            Resume::Io => "io",
            Resume::Notified => "notified",
            Resume::TimedOut => "timed_out",
        };
        let line = format!(
            r#"{{"type":"event","event":"resume","now":{},"why":"{why}"}}"#,
            cli.now().0
        );
        self.flow(cli, "resume", &line)
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
