//! One line of a driver during a run: a draw to answer, a record to feed the monitor, the mix, or
//! the end. Every field is checked; what does not fit the protocol is an error naming it, which the
//! world turns into an adapter fault.

use serde_json::Value;

use super::{RemoteKernel, Text, Vocab};
use crate::adapter::FaultKind;
use crate::adapter::intern as intern_or;
use crate::sim::choice::Ratio;
use crate::sim::msg::{MsgFrom, MsgId, MsgKind, Payload};
use crate::sim::record::{Actor, Ev, Refusal, Starter, WorkOp};
use crate::sim::sink::Sink;
use crate::sim::swarm::Mix;
use crate::sim::time::Ms;

/// A name the driver chose (a site label, a fault, a producer kind, a stream), kept once.
fn intern(s: &str) -> &'static str {
    intern_or(s, "?")
}

/// `num/den` from a JSON pair, for mixes.
fn ratio(v: &Value) -> Option<Ratio> {
    Some(Ratio::new(v.get(0)?.as_u64()?, v.get(1)?.as_u64()?))
}

/// Advance the kernel's clock to a time the driver reported, which must not go backwards.
fn at(k: &mut RemoteKernel, t: u64) -> Result<(), String> {
    if t < k.now().0 {
        return Err(format!(
            "time went backwards: {t} ms after {} ms",
            k.now().0
        ));
    }
    k.advance_to(Ms(t));
    Ok(())
}

/// Record an observation or note at the driver's time.
fn emit(k: &mut RemoteKernel, t: u64, actor: Actor, state: u8, ev: Ev<Text>) -> Result<(), String> {
    at(k, t)?;
    k.emit(actor, state, ev);
    Ok(())
}

/// How a run ended, as the driver says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndCause {
    Quiet,
    Horizon,
    Steps,
    /// No thread of the host can run again (a driver with a thread scheduler): a verdict,
    /// NO-DEADLOCK's, recorded as `Ev::Deadlock` at the end.
    Deadlock,
}

/// How a run ended and how many events (the driver's virtual steps: timer callbacks) it took.
pub struct End {
    pub cause: EndCause,
    pub steps: u64,
}

pub enum Step {
    /// Write `{"type":"value","value":N}`.
    Answer(u64),
    /// A `choose` was drawn: write its `value` (with the next draws' material to a driver that
    /// draws ahead).
    Drawn(u64),
    /// An observation or a note was recorded.
    Record,
    Mix(Mix),
    End(End),
}

pub enum LineError {
    /// The driver's own `error` line: its message, and its kind (`"kind":"load"`: the code
    /// under test did not load; otherwise the driver cannot go on).
    Reported(String, FaultKind),
    /// Not the protocol.
    Protocol(String),
}

impl From<String> for LineError {
    fn from(s: String) -> LineError {
        LineError::Protocol(s)
    }
}

impl From<&str> for LineError {
    fn from(s: &str) -> LineError {
        LineError::Protocol(s.to_string())
    }
}

/// The fault an `error` line reports: `"kind":"load"` when the code under test did not load,
/// a protocol fault (the driver cannot go on) otherwise.
pub fn error_kind(v: &Value) -> FaultKind {
    match v.get("kind").and_then(Value::as_str) {
        Some("load") => FaultKind::Load,
        _ => FaultKind::Protocol,
    }
}

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a Value, String> {
    v.get(name).ok_or_else(|| format!("`{name}` is missing"))
}

fn uint(v: &Value, name: &str) -> Result<u64, String> {
    field(v, name)?
        .as_u64()
        .ok_or_else(|| format!("`{name}` is not a non-negative integer"))
}

fn uint_or(v: &Value, name: &str, default: u64) -> Result<u64, String> {
    match v.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(_) => uint(v, name),
    }
}

fn boolean(v: &Value, name: &str) -> Result<bool, String> {
    field(v, name)?
        .as_bool()
        .ok_or_else(|| format!("`{name}` is not a boolean"))
}

fn string<'a>(v: &'a Value, name: &str) -> Result<&'a str, String> {
    field(v, name)?
        .as_str()
        .ok_or_else(|| format!("`{name}` is not a string"))
}

fn small(v: &Value, name: &str) -> Result<u8, String> {
    u8::try_from(uint(v, name)?).map_err(|_| format!("`{name}` is over 255"))
}

fn u32_of(v: &Value, name: &str) -> Result<u32, String> {
    u32::try_from(uint(v, name)?).map_err(|_| format!("`{name}` is over 2^32"))
}

fn actor(v: &Value) -> Result<Actor, String> {
    Ok(match string(v, "actor")? {
        "producer" => Actor::Producer,
        "wake" => Actor::Wake,
        "host" => Actor::Host,
        "fault" => Actor::Fault,
        "user" => Actor::User,
        "check" => Actor::Check,
        other => return Err(format!("unknown actor `{other}`")),
    })
}

/// The family's state code for a state name, as the model's timelines print it.
fn state(v: &Value, vocab: &Vocab) -> Result<u8, String> {
    let name = string(v, "state")?;
    let code = vocab.states.iter().position(|s| *s == name);
    code.and_then(|c| u8::try_from(c).ok())
        .ok_or_else(|| format!("unknown state `{name}`"))
}

/// A family's named value by its wire name.
fn named<T: Copy>(list: &[(&'static str, T)], name: &str, what: &str) -> Result<T, String> {
    list.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, x)| *x)
        .ok_or_else(|| format!("unknown {what} `{name}`"))
}

fn msg(v: &Value, name: &str, produced: usize) -> Result<MsgId, String> {
    let id = uint(v, name)?;
    if id >= produced as u64 {
        return Err(format!(
            "`{name}` {id} is not a message produced in this run ({produced} so far)"
        ));
    }
    Ok(MsgId(id as u32))
}

fn kind(name: &str) -> Result<MsgKind, String> {
    MsgKind::ALL
        .into_iter()
        .find(|k| k.name() == name)
        .ok_or_else(|| format!("unknown message kind `{name}`"))
}

/// A label is a static site name: at most 64 bytes (interned for the choice log).
fn label(v: &Value) -> Result<&'static str, String> {
    let l = string(v, "label")?;
    if l.len() > 64 || l.is_empty() {
        return Err("`label` must be 1 to 64 bytes".to_string());
    }
    Ok(intern(l))
}

/// A `choose` line: draw from the run's choices as the model's kernel would.
fn draw(v: &Value, k: &mut RemoteKernel) -> Result<u64, String> {
    let label = label(v)?;
    let c = &mut k.choices;
    Ok(
        match v.get("kind").and_then(Value::as_str).unwrap_or("choose") {
            "choose" | "order" => {
                let bound = uint(v, "bound")?;
                if bound == 0 {
                    return Err("`bound` must be at least 1".to_string());
                }
                c.choose(bound, label)
            }
            "delay" => {
                let (lo, hi) = (uint(v, "lo")?, uint(v, "hi")?);
                c.delay(lo, hi.max(lo), label)
            }
            "instant" => {
                let (lo, hi) = (uint(v, "lo")?, uint(v, "hi")?);
                c.instant(lo, hi.max(lo), label)
            }
            "chance" => {
                let (num, den) = (uint(v, "num")?, uint(v, "den")?);
                if den == 0 {
                    return Err("`den` must be at least 1".to_string());
                }
                u64::from(c.chance(Ratio::new(num, den), label))
            }
            other => return Err(format!("unknown choose kind `{other}`")),
        },
    )
}

/// The draws a driver made ahead from the material wakesim sent it (`Choices::ahead`), in
/// order: `[label, bound, value]` for a uniform `choose`/`order`, `[label, num, den, value]` for
/// a `chance`. Each is drawn here again, so the run's choices are logged (and the generator
/// moves) as if each had been a `choose` line; a value that differs from wakesim's own draw is a
/// protocol fault (the driver's reduction or its bookkeeping is wrong).
fn drawn(list: &Value, k: &mut RemoteKernel) -> Result<(), String> {
    let list = list.as_array().ok_or("`drawn` is not a list")?;
    for (i, d) in list.iter().enumerate() {
        let bad =
            || format!("`drawn` {i} is not [label, bound, value] or [label, num, den, value]");
        let d = d.as_array().ok_or_else(bad)?;
        let n = |j: usize| d.get(j).and_then(Value::as_u64).ok_or_else(bad);
        let l = d.first().and_then(Value::as_str).ok_or_else(bad)?;
        if l.len() > 64 || l.is_empty() {
            return Err(format!("`drawn` {i}: a label must be 1 to 64 bytes"));
        }
        let label = intern(l);
        let (ours, theirs) = match d.len() {
            3 => {
                let bound = n(1)?;
                if bound == 0 {
                    return Err(format!("`drawn` {i}: `bound` must be at least 1"));
                }
                (k.choices.choose(bound, label), n(2)?)
            }
            4 => {
                let (num, den) = (n(1)?, n(2)?);
                if den == 0 {
                    return Err(format!("`drawn` {i}: `den` must be at least 1"));
                }
                (
                    u64::from(k.choices.chance(Ratio::new(num, den), label)),
                    n(3)?,
                )
            }
            _ => return Err(bad()),
        };
        if ours != theirs {
            return Err(format!(
                "`drawn` {i} ({l}) is {theirs}, but wakesim's draw there is {ours}"
            ));
        }
    }
    Ok(())
}

/// An observation line's `Ev`.
fn observation(v: &Value, produced: usize, vocab: &Vocab) -> Result<Ev<Text>, String> {
    let ev = string(v, "ev")?;
    Ok(match ev {
        "appended" => Ev::Appended {
            msg: msg(v, "msg", produced)?,
        },
        "request" => Ev::Request {
            req: u32_of(v, "req")?,
            harness: boolean(v, "harness")?,
        },
        "dropped" => Ev::Dropped {
            msg: msg(v, "msg", produced)?,
            reason: named(vocab.drops, string(v, "reason")?, "drop reason")?,
        },
        "idle" => Ev::Idle {
            idle: boolean(v, "idle")?,
        },
        "starter" => {
            let n = u32_of(v, "n")?;
            let who = match string(v, "who")? {
                "prompt" => Starter::Prompt(n),
                "direct" => Starter::Direct(n),
                "continue" => Starter::Continue(n),
                other => return Err(format!("unknown starter `{other}`")),
            };
            Ev::Starter {
                who,
                accepted: boolean(v, "accepted")?,
            }
        }
        "run_flag" => Ev::RunFlag {
            on: boolean(v, "on")?,
        },
        "agent_run" => Ev::AgentRun {
            on: boolean(v, "on")?,
        },
        "settled" => Ev::Settled,
        "interleaved" => Ev::Interleaved {
            req: u32_of(v, "req")?,
            msg: match v.get("msg") {
                None | Some(Value::Null) => None,
                Some(_) => Some(msg(v, "msg", produced)?),
            },
        },
        "mark" => {
            let w = string(v, "window")?;
            let found = vocab.windows.iter().find(|x| x.name == w).copied();
            Ev::Mark(found.ok_or_else(|| format!("unknown window `{w}`"))?)
        }
        "pass" => Ev::Pass {
            pass: u32_of(v, "pass")?,
            on: boolean(v, "on")?,
        },
        "wake" => {
            let ids = field(v, "msgs")?
                .as_array()
                .ok_or("`msgs` is not a list")?
                .iter()
                .map(|m| {
                    let id = m.as_u64().ok_or("`msgs` holds a non-integer")?;
                    if id >= produced as u64 {
                        return Err(format!("`msgs` holds {id}, not a message of this run"));
                    }
                    Ok(MsgId(id as u32))
                })
                .collect::<Result<Vec<_>, String>>()?;
            let refused = match v.get("refused") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => {
                    Some(Refusal::Other(named(vocab.refusals, s, "refusal")?))
                }
                Some(r) => Some(Refusal::Wake(u32_of(r, "wake")?)),
            };
            Ev::Wake {
                pass: u32_of(v, "pass")?,
                wake: u32_of(v, "wake")?,
                msgs: Payload::from_slice(&ids),
                refused,
            }
        }
        "work" => {
            let op = match field(v, "op")? {
                Value::String(s) if s == "started" => WorkOp::Started,
                Value::String(s) if s == "killed" => WorkOp::Killed,
                o @ Value::Object(_) => WorkOp::Finished(msg(o, "finished", produced)?),
                _ => return Err("`op` is not started, killed or {\"finished\":id}".to_string()),
            };
            Ev::Work {
                work: u32_of(v, "work")?,
                shown: u32_of(v, "shown")?,
                conv: small(v, "conv")?,
                op,
            }
        }
        "work_noticed" => Ev::WorkNoticed {
            work: u32_of(v, "work")?,
        },
        "waiting" => Ev::Waiting {
            own: u32_of(v, "own")?,
            foreign: u32_of(v, "foreign")?,
        },
        "input_interrupt" => Ev::InputInterrupt {
            input: uint(v, "input")?,
        },
        "session_end" => Ev::SessionEnd {
            cause: named(vocab.ends, string(v, "cause")?, "session end")?,
        },
        "owner_claimed" => Ev::OwnerClaimed {
            msg: msg(v, "msg", produced)?,
        },
        other => return Err(format!("unknown observation `{other}`")),
    })
}

/// Handle one line of a run.
pub fn line(ty: &str, v: &Value, vocab: &Vocab, k: &mut RemoteKernel) -> Result<Step, LineError> {
    if let Some(d) = v.get("drawn") {
        drawn(d, k)?;
    }
    let produced = k.sink.messages().len();
    match ty {
        "choose" => Ok(Step::Drawn(draw(v, k)?)),
        "produce" => {
            let t = uint(v, "t")?;
            let source = small(v, "source")?;
            let from = MsgFrom {
                kind: kind(string(v, "kind")?)?,
                source,
                origin: u8::try_from(uint_or(v, "origin", u64::from(source))?)
                    .map_err(|_| "`origin` is over 255".to_string())?,
                conv: u8::try_from(uint_or(v, "conv", 0)?)
                    .map_err(|_| "`conv` is over 255".to_string())?,
                stream: match v.get("stream") {
                    None | Some(Value::Null) => None,
                    Some(s) => Some(intern(s.as_str().ok_or("`stream` is not a string")?)),
                },
            };
            let st = match v.get("state") {
                None => 0,
                Some(_) => state(v, vocab)?,
            };
            // A driver that numbers its messages itself says which id it expects (the count of
            // this run's messages so far) and waits for no answer.
            let expected = match v.get("id") {
                None | Some(Value::Null) => None,
                Some(_) => Some(uint(v, "id")?),
            };
            at(k, t)?;
            let id = k.produce_from(from, st);
            match expected {
                None => Ok(Step::Answer(u64::from(id.0))),
                Some(e) if e == u64::from(id.0) => Ok(Step::Record),
                Some(e) => Err(format!("`id` {e} is not the next message's id {}", id.0).into()),
            }
        }
        "obs" => {
            let ev = observation(v, produced, vocab)?;
            emit(k, uint(v, "t")?, actor(v)?, state(v, vocab)?, ev)?;
            Ok(Step::Record)
        }
        "note" => {
            let text = string(v, "text")?;
            let ev = Ev::Note(Text(text.into()));
            emit(k, uint(v, "t")?, actor(v)?, state(v, vocab)?, ev)?;
            Ok(Step::Record)
        }
        "mix" => {
            let faults = field(v, "faults")?
                .as_array()
                .ok_or("`faults` is not a list")?
                .iter()
                .map(|f| {
                    let name = f
                        .get(0)
                        .and_then(Value::as_str)
                        .ok_or("a fault without a name")?;
                    let r = f
                        .as_array()
                        .and_then(|a| ratio(&Value::Array(a[1..].to_vec())))
                        .ok_or("a fault without [name, num, den]")?;
                    Ok((intern(name), r))
                })
                .collect::<Result<Vec<_>, String>>()?;
            let producers = field(v, "producers")?
                .as_array()
                .ok_or("`producers` is not a list")?
                .iter()
                .map(|p| {
                    p.as_str()
                        .map(intern)
                        .ok_or("a producer kind is not a string")
                })
                .collect::<Result<Vec<_>, &str>>()?;
            // Drivers do not count an opportunity fault's firings (yet): coverage reads none.
            Ok(Step::Mix(Mix {
                faults,
                producers,
                fired: Vec::new(),
            }))
        }
        "end" => {
            let t = uint(v, "t")?;
            at(k, t)?;
            let cause = match string(v, "cause")? {
                "quiet" => EndCause::Quiet,
                "horizon" => EndCause::Horizon,
                "steps" => EndCause::Steps,
                "deadlock" => EndCause::Deadlock,
                other => return Err(format!("unknown end cause `{other}`").into()),
            };
            if cause == EndCause::Deadlock {
                // The stuck threads' count and the state the host was left in.
                let ev = Ev::Deadlock {
                    threads: u32_of(v, "threads")?,
                };
                k.emit(Actor::Check, state(v, vocab)?, ev);
            }
            let steps = uint_or(v, "steps", 0)?;
            if steps > k.limits().steps_max {
                return Err(format!("`steps` {steps} is over steps_max").into());
            }
            Ok(Step::End(End { cause, steps }))
        }
        "error" => Err(LineError::Reported(
            v.get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_string(),
            error_kind(v),
        )),
        other => Err(format!("unexpected `{other}` during a run").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{CheckParams, InvariantSet, Monitor};
    use crate::limits::Limits;
    use crate::sim::Kernel;
    use crate::sim::choice::{Choices, Profile};
    use serde_json::json;

    fn kernel(seed: u64) -> RemoteKernel {
        Kernel::new(
            Choices::random(seed, Profile::default()),
            Monitor::new(InvariantSet::default(), CheckParams::default(), false),
            Limits::default(),
        )
    }

    fn vocab() -> Vocab {
        Vocab {
            states: &["IDLE"],
            windows: &[],
            drops: &[],
            refusals: &[],
            ends: &[],
        }
    }

    /// A driver's `drawn` draws are drawn again, in order, before its line: the log is the one
    /// `choose` lines would give; a wrong value or a malformed entry is a protocol error naming
    /// it, and an `id` on `produce` is checked, not answered.
    #[test]
    fn drawn_draws_are_drawn_again_and_checked() {
        let mut asked = kernel(5);
        let a = asked.choices.choose(3, "py.thread.acquire");
        let b = u64::from(asked.choices.chance(Ratio::new(1, 2), "fault on"));
        let c = asked.choices.delay(10, 5_000, "model");
        let mut k = kernel(5);
        let v = json!({"type": "choose", "label": "model", "kind": "delay", "lo": 10, "hi": 5000,
            "drawn": [["py.thread.acquire", 3, a], ["fault on", 1, 2, b]]});
        assert!(matches!(line("choose", &v, &vocab(), &mut k), Ok(Step::Drawn(x)) if x == c));
        assert_eq!(k.choices.log(), asked.choices.log());

        let bad = |drawn: Value, says: &str| {
            let mut k = kernel(5);
            let v = json!({"type": "end", "t": 0, "cause": "quiet", "drawn": drawn});
            match line("end", &v, &vocab(), &mut k) {
                Err(LineError::Protocol(msg)) => assert!(msg.contains(says), "{msg}"),
                _ => panic!("{says}: not a protocol error"),
            }
        };
        bad(
            json!([["py.thread.acquire", 3, (a + 1) % 3]]),
            "wakesim's draw there is",
        );
        bad(json!([["x", 0, 0]]), "`bound` must be at least 1");
        bad(json!([["x", 2]]), "`drawn` 0 is not");
        bad(json!({"x": 1}), "`drawn` is not a list");

        let mut k = kernel(1);
        let p = json!({"type": "produce", "t": 0, "kind": "watch", "source": 0, "id": 0});
        assert!(matches!(
            line("produce", &p, &vocab(), &mut k),
            Ok(Step::Record)
        ));
        let p = json!({"type": "produce", "t": 0, "kind": "watch", "source": 0, "id": 5});
        assert!(
            matches!(line("produce", &p, &vocab(), &mut k), Err(LineError::Protocol(m)) if m.contains("not the next message's id 1"))
        );
    }
}
