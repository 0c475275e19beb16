//! Reliability (issue 10): nothing hangs, nothing is orphaned, nothing is overwritten.
//!
//! - the evil-adapter suite: adapters that misbehave in every way we know of, each of which must
//!   end as an adapter-fault verdict or an exit-2 error with a clear message, in bounded time,
//!   with no process of its group left running;
//! - the bad-scenario corpus (`tests/data/bad*/`, one snapshot of every message) and a generated
//!   fuzz of scenario text: exit 0, 1 or 2, never a panic or a hang;
//! - atomic, never-silent writes of regressions; checked output; `merge` of incomplete shard sets;
//! - the smaller defects of the issue, each with the test that would have caught it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{root, tempdir};

/// The most a single wakesim invocation of this suite may take before it counts as a hang.
const HANG: Duration = Duration::from_secs(60);

/// What one invocation did.
struct Ran {
    out: Output,
    hung: bool,
    took: Duration,
}

/// Run the built binary in `dir` with a watchdog: past [`HANG`] it is killed and reported hung.
fn run_bounded(args: &[&str], dir: &Path) -> Ran {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wakesim"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wakesim starts");
    // Read both pipes on threads, so a chatty run cannot block on a full pipe.
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let t1 = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut so, &mut v).ok();
        v
    });
    let t2 = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut se, &mut v).ok();
        v
    });
    let mut hung = false;
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if started.elapsed() > HANG {
            hung = true;
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = started.elapsed();
    let out = Output {
        status,
        stdout: t1.join().expect("stdout thread"),
        stderr: t2.join().expect("stderr thread"),
    };
    Ran { out, hung, took }
}

/// The processes of group `pgid` still running (zombies are dead: they only wait for a reaper,
/// and in a container PID 1 may never reap an orphan).
#[cfg(target_os = "linux")]
fn live_in_group(pgid: i32) -> Vec<String> {
    let mut live = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...: comm may hold spaces, so split after the last ')'.
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if rest.len() > 2 && rest[2] == pgid.to_string() && rest[0] != "Z" && rest[0] != "X" {
            live.push(stat[..close + 1].to_string());
        }
    }
    live
}

#[cfg(not(target_os = "linux"))]
fn live_in_group(_pgid: i32) -> Vec<String> {
    Vec::new()
}

/// Wait a little for a group to be gone (the group is ended before wakesim exits, but SIGKILL
/// is delivered asynchronously).
fn left_behind(pgid: i32) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let live = live_in_group(pgid);
        if live.is_empty() || Instant::now() > deadline {
            return live;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How a case must end.
enum Ends {
    /// `run` meets `verdict = "adapter-fault"` (exit 0) and the fault's detail says this.
    Fault(&'static str),
    /// Exit 2, and stderr says this.
    Error(&'static str),
}

struct Evil {
    mode: &'static str,
    /// Wrap the adapter in `sh -c '...; exit $?'`, so the adapter is a grandchild of wakesim.
    wrapped: bool,
    /// More keys of the wake table.
    extra: String,
    /// The subcommand and its arguments before the scenario file.
    cmd: &'static [&'static str],
    ends: Ends,
}

fn evil(mode: &'static str, ends: Ends) -> Evil {
    Evil {
        mode,
        wrapped: false,
        extra: String::new(),
        cmd: &["run"],
        ends,
    }
}

/// The scenario for a case: pi, two messages, bounds of a second.
fn evil_scenario(case: &Evil, dir: &Path) -> (PathBuf, PathBuf) {
    let script = root().join("tests/data/adapters/evil.py");
    let tag = format!(
        "{}{}",
        case.mode,
        if case.wrapped { "-wrapped" } else { "" }
    );
    let pgfile = dir.join(format!("{tag}-{}.pg", case.cmd[0]));
    let _ = std::fs::remove_file(&pgfile);
    let command = if case.wrapped {
        format!(
            r#"["sh", "-c", "python3 '{}' {} '{}'; exit $?"]"#,
            script.display(),
            case.mode,
            pgfile.display()
        )
    } else {
        format!(
            r#"["python3", "{}", "{}", "{}"]"#,
            script.display(),
            case.mode,
            pgfile.display()
        )
    };
    let text = format!(
        r#"name = "evil {tag}"
host = "pi"
wake = {{ command = {command}, timeout_ms = 1000, start_timeout_ms = 2000{} }}
seeds = 20
snapshot_seed = 0
[producers]
messages = 2
[expect]
verdict = "adapter-fault"
"#,
        case.extra
    );
    let file = dir.join(format!("{tag}-{}.toml", case.cmd[0]));
    std::fs::write(&file, text).expect("scenario written");
    (file, pgfile)
}

fn evil_cases() -> Vec<Evil> {
    use Ends::{Error, Fault};
    let big = format!(r#", options = {{ pad = "{}" }}"#, "x".repeat(400_000));
    let mut cases = vec![
        evil("exit-at-once", Error("the adapter did not start")),
        evil("never-answer", Error("no answer within 2000 ms")),
        evil("garbage", Error("not JSON")),
        evil("wrong-protocol", Error("the adapter speaks protocol 99")),
        evil("huge-line", Fault("a line longer than 1048576 bytes")),
        evil("invalid-utf8", Fault("invalid unicode")),
        evil("not-protocol", Fault("without a string `type`")),
        evil("hang-mid-run", Fault("(timeout): no answer within 1000 ms")),
        evil("crash-mid-run", Fault("(exited)")),
        Evil {
            extra: big,
            ..evil(
                "never-read-stdin",
                Error("did not read its stdin within 2000 ms"),
            )
        },
        evil("flood-stderr", Fault("(exited)")),
        evil("fork-holding-stdout", Fault("(timeout)")),
        evil("sleeper-child", Fault("(timeout)")),
        evil("unknown-id", Fault("`carries` names m1000")),
        evil("future-id", Fault("`carries` names m3")),
        evil("out-of-turn", Fault("unexpected `ready`")),
        evil("unknown-call", Fault("called `launch_missiles`")),
    ];
    // Behind a wrapper, the adapter is wakesim's grandchild: only ending the group ends it.
    for mode in ["hang-mid-run", "sleeper-child", "crash-mid-run"] {
        cases.push(Evil {
            wrapped: true,
            ..evil(mode, Fault(""))
        });
    }
    // The other commands that run seeds stop at the fault too.
    cases.push(Evil {
        cmd: &["explore"],
        ..evil("crash-mid-run", Fault("adapter fault (exited)"))
    });
    cases.push(Evil {
        cmd: &["explore"],
        ..evil("hang-mid-run", Fault("adapter fault (timeout)"))
    });
    cases.push(Evil {
        cmd: &["replay", "--seed", "3"],
        ..evil("crash-mid-run", Fault("adapter fault (exited)"))
    });
    cases
}

/// Tally of a suite, for the README's reliability section.
#[derive(Default, Debug)]
struct Tally {
    cases: usize,
    clear: usize,
    panics: usize,
    hangs: usize,
    left: usize,
}

#[test]
fn evil_adapters_end_as_faults_or_errors_in_bounded_time_leaving_no_process() {
    let dir = tempdir("evil");
    let mut tally = Tally::default();
    let mut problems = Vec::new();
    for case in evil_cases() {
        let (file, pgfile) = evil_scenario(&case, &dir);
        let mut args: Vec<&str> = case.cmd.to_vec();
        let file_arg = file.to_str().expect("utf-8");
        // replay takes the file first.
        if args[0] == "replay" {
            args.insert(1, file_arg);
        } else {
            args.push(file_arg);
            args.extend(["--format", "json"]);
        }
        let name = format!("{} {}", case.cmd.join(" "), file.display());
        let ran = run_bounded(&args, &dir);
        tally.cases += 1;
        let stdout = String::from_utf8_lossy(&ran.out.stdout);
        let stderr = String::from_utf8_lossy(&ran.out.stderr);
        if ran.hung {
            tally.hangs += 1;
            problems.push(format!("{name}: hung"));
        }
        if stderr.contains("panicked") {
            tally.panics += 1;
            problems.push(format!("{name}: panicked: {stderr}"));
        }
        let code = ran.out.status.code();
        let clear = match case.ends {
            Ends::Fault(says) if args[0] == "replay" => {
                code == Some(1) && stdout.contains(says) && stdout.contains("reproduce:")
            }
            Ends::Fault(says) if args[0] == "explore" => {
                code == Some(0)
                    && stdout.contains(r#""stopped_at_adapter_fault":true"#)
                    && stdout.contains(says)
            }
            Ends::Fault(says) => {
                code == Some(0)
                    && stdout.contains(r#""failing_seeds_by_outcome":{"adapter-fault":1}"#)
                    && stdout.contains(says)
            }
            Ends::Error(says) => code == Some(2) && stderr.contains(says),
        };
        if clear {
            tally.clear += 1;
        } else {
            problems.push(format!(
                "{name}: exit {code:?}, not the expected end\nstdout: {stdout}\nstderr: {stderr}"
            ));
        }
        // Every case takes at most a few of its one- and two-second bounds.
        if ran.took > Duration::from_secs(30) {
            problems.push(format!("{name}: took {:?}", ran.took));
        }
        match std::fs::read_to_string(&pgfile) {
            Ok(pg) => {
                let pgid: i32 = pg.trim().parse().expect("a process group id");
                let live = left_behind(pgid);
                if !live.is_empty() {
                    tally.left += live.len();
                    problems.push(format!("{name}: left running: {live:?}"));
                    // Clean up after the failing case, by its group only.
                    let _ = Command::new("kill")
                        .args(["-KILL", "--", &format!("-{pgid}")])
                        .status();
                }
            }
            Err(e) => problems.push(format!("{name}: the adapter never started: {e}")),
        }
    }
    eprintln!("evil-adapter suite: {tally:?}");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert_eq!(tally.clear, tally.cases);
}

// ---------------------------------------------------------------------------------------------
// Checked output, shard sets, seed ranges, threads.

/// Run the binary from the repository root with stdout going to `stdout`.
fn wakesim_to(args: &[&str], stdout: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wakesim"))
        .args(args)
        .current_dir(root())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("wakesim runs")
}

const PASSING: &str = "tests/data/reliab/passes.toml";
const FAILING: &str = "scenarios/pi/g0-idle-wake-skips-harness.toml";

#[cfg(target_os = "linux")]
#[test]
fn a_report_that_cannot_be_written_is_exit_2_with_the_reason() {
    for args in [
        &["run", PASSING, "--seeds", "0..5", "--format", "json"][..],
        &["run", PASSING, "--seeds", "0..5"],
        &["replay", PASSING, "--seed", "1"],
        &["list"],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let out = wakesim_to(args, Stdio::from(full));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("cannot write the report to stdout: No space left on device"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn merge_refuses_empty_cut_partial_duplicate_and_mixed_shard_sets() {
    let dir = tempdir("merge");
    let shard = |k: u64, n: u64| {
        let out = wakesim_to(
            &[
                "run",
                PASSING,
                "--seeds",
                "0..40",
                "--format",
                "json",
                "--shard",
                &format!("{k}/{n}"),
            ],
            Stdio::piped(),
        );
        assert_eq!(out.status.code(), Some(0));
        let f = dir.join(format!("shard-{k}-of-{n}.jsonl"));
        std::fs::write(&f, &out.stdout).expect("written");
        f.to_str().expect("utf-8").to_string()
    };
    let (a, b, c) = (shard(1, 2), shard(2, 2), shard(1, 3));
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "").expect("written");
    let cut = dir.join("cut.jsonl");
    let text = std::fs::read_to_string(&b).expect("read");
    std::fs::write(&cut, text.lines().next().expect("a line")).expect("written");
    let stopped = dir.join("stopped.jsonl");
    let text = std::fs::read_to_string(&b).expect("read");
    std::fs::write(
        &stopped,
        text.replace(
            r#""type":"summary","#,
            r#""type":"summary","stopped":"time budget","#,
        ),
    )
    .expect("written");
    // Shard 1 again, with a different report: a retried job that did not reproduce.
    let edited = dir.join("edited.jsonl");
    let text = std::fs::read_to_string(&a).expect("read");
    std::fs::write(&edited, text.replacen("\"events\":", "\"events\":1", 1)).expect("written");
    let (empty, cut, stopped, edited) = (
        empty.to_str().unwrap(),
        cut.to_str().unwrap(),
        stopped.to_str().unwrap(),
        edited.to_str().unwrap(),
    );
    let refused = [
        (vec![empty], "no summary line"),
        (vec![a.as_str(), cut], "no summary line"),
        (vec![a.as_str()], "shard 2/2 missing"),
        (vec![a.as_str(), stopped], "this run stopped before its end"),
        (
            vec![a.as_str(), edited, b.as_str()],
            "shard 1/2 given twice",
        ),
        (
            vec![a.as_str(), b.as_str(), c.as_str()],
            "outputs of different runs",
        ),
    ];
    for (files, says) in refused {
        let mut args = vec!["merge"];
        args.extend(&files);
        let out = wakesim_to(&args, Stdio::piped());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{files:?}: {err}");
        assert!(err.contains(says), "{files:?}: {err}");
        assert!(out.stdout.is_empty(), "{files:?}");
    }
    let out = wakesim_to(&["merge", &b, &a], Stdio::piped());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""seeds":40"#));
    // Idempotent: the same shard given twice counts once.
    let twice = wakesim_to(&["merge", &a, &b, &a], Stdio::piped());
    assert_eq!(twice.status.code(), Some(0));
    assert_eq!(twice.stdout.len(), out.stdout.len());
}

#[test]
fn seeds_near_u64_max_are_all_run_and_replay_as_reported() {
    let out = wakesim_to(
        &[
            "run",
            PASSING,
            "--seeds",
            "18446744073709551564..18446744073709551615",
            "--format",
            "json",
            "--threads",
            "2",
        ],
        Stdio::piped(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let summary: serde_json::Value =
        serde_json::from_str(text.lines().last().expect("a summary")).expect("json");
    assert_eq!(summary["seeds"], 51, "{text}");
    // Every seed ran: a pi run has dozens of events, a skipped one none.
    assert!(
        summary["events"].as_u64().expect("events") > 51 * 10,
        "{text}"
    );
    let replay = wakesim_to(
        &["replay", PASSING, "--seed", "18446744073709551614"],
        Stdio::piped(),
    );
    assert_eq!(replay.status.code(), Some(0));
}

#[test]
fn zero_threads_is_a_usage_error() {
    let out = wakesim_to(&["run", PASSING, "--threads", "0"], Stdio::piped());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--threads must be at least 1"));
}

#[test]
fn an_empty_shard_of_an_expect_fail_scenario_is_not_a_failure() {
    // Seeds 0..1 in two shards: shard 2 holds no seed (the seed assignment, engine::shard,
    // gives seed 0 of this scenario to shard 1).
    let out = wakesim_to(
        &[
            "run", FAILING, "--seeds", "0..1", "--shard", "2/2", "--format", "json",
        ],
        Stdio::piped(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(r#""seeds":0"#), "{text}");
}

#[test]
fn the_text_report_counts_an_adapter_fault_after_an_earlier_failure() {
    let dir = tempdir("fault-after-failure");
    let case = Evil {
        cmd: &["run"],
        ..evil("drops-then-crashes", Ends::Fault(""))
    };
    let (file, _) = evil_scenario(&case, &dir);
    let text = std::fs::read_to_string(&file)
        .expect("read")
        .replace(r#"verdict = "adapter-fault""#, r#"verdict = "pass""#);
    std::fs::write(&file, text).expect("write");
    let ran = run_bounded(&["run", file.to_str().expect("utf-8")], &dir);
    let stdout = String::from_utf8_lossy(&ran.out.stdout);
    assert_eq!(ran.out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("adapter-fault 1"), "{stdout}");
    assert!(stdout.contains("no-loss 1"), "{stdout}");
}

#[test]
fn a_relative_adapter_program_works_from_a_relative_scenario_path() {
    let dir = tempdir("relative-program");
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).expect("sub");
    let script = sub.join("adapter.sh");
    let pgfile = dir.join("relative.pg");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec python3 '{}' crash-mid-run '{}'\n",
            root().join("tests/data/adapters/evil.py").display(),
            pgfile.display()
        ),
    )
    .expect("script");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    std::fs::write(
        sub.join("x.toml"),
        "name = \"relative\"\nhost = \"pi\"\nwake = { command = [\"./adapter.sh\"] }\nseeds = 5\n\
         snapshot_seed = 0\n[producers]\nmessages = 2\n[expect]\nverdict = \"adapter-fault\"\n",
    )
    .expect("scenario");
    let ran = run_bounded(&["run", "sub/x.toml"], &dir);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&ran.out.stdout),
        String::from_utf8_lossy(&ran.out.stderr),
    );
    assert_eq!(ran.out.status.code(), Some(0), "{stdout}{stderr}");
}

#[test]
fn explore_keeps_the_scope_bounds_of_scenario_files() {
    for (flag, v, says) in [
        (
            "--deviations",
            "100",
            "--deviations 100 is out of range 0..=8",
        ),
        ("--messages", "0", "--messages 0 is out of range 1..=16"),
        ("--runs-max", "0", "--runs-max 0 is out of range"),
    ] {
        let out = wakesim_to(&["explore", PASSING, flag, v], Stdio::piped());
        assert_eq!(out.status.code(), Some(2), "{flag}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{flag}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Regression files: never overwritten, written atomically, never outside the project.

/// `replay --record` of seed 3 of the G0 scenario into `dir`.
fn record_into(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wakesim"));
    c.args(["replay", FAILING, "--seed", "3", "--record", "--out"])
        .arg(dir)
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

const SEED_FILE: &str = "g0-idle-wake-skips-harness-seed-3.toml";
const SEED_FILE_NAMED: &str = "g0-idle-wake-skips-harness-seed-3-harness.toml";

#[test]
fn an_existing_regression_is_kept_and_the_new_one_named_with_its_invariant() {
    let dir = tempdir("keep-regression");
    let old = "# a human's note\nformat = \"wakesim-regression/1\"\n# (an older regression)\n";
    std::fs::write(dir.join(SEED_FILE), old).expect("write");
    let out = record_into(&dir).output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("kept {}", dir.join(SEED_FILE).display())),
        "{err}"
    );
    assert!(
        err.contains(&format!("wrote {}", dir.join(SEED_FILE_NAMED).display())),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join(SEED_FILE)).expect("kept"),
        old
    );
    let new = std::fs::read_to_string(dir.join(SEED_FILE_NAMED)).expect("new");
    assert!(new.contains("invariant = \"harness\""), "{new}");
    // The same regression again: nothing written, said so.
    let out = record_into(&dir).output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already holds this regression"), "{err}");
    let names: Vec<_> = std::fs::read_dir(&dir).expect("dir").flatten().collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn a_writer_killed_midway_leaves_the_old_file_intact_and_no_torn_file() {
    let dir = tempdir("killed-writer");
    let old = "# a committed regression, with a human comment\n".repeat(20);
    std::fs::write(dir.join(SEED_FILE), &old).expect("write");
    // The whole new file, from one uninterrupted run.
    let whole_dir = tempdir("killed-writer-whole");
    let _ = std::fs::remove_file(whole_dir.join(SEED_FILE));
    record_into(&whole_dir).output().expect("runs");
    let whole = std::fs::read(whole_dir.join(SEED_FILE)).expect("whole");
    // Kill the writer at spread-out moments, from before it starts to after it is done.
    for i in 0..24u64 {
        let _ = std::fs::remove_file(dir.join(SEED_FILE_NAMED));
        let mut child = record_into(&dir).spawn().expect("spawn");
        std::thread::sleep(Duration::from_micros(i * i * 150));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            std::fs::read_to_string(dir.join(SEED_FILE)).expect("old file"),
            old,
            "kill {i}"
        );
        if let Ok(new) = std::fs::read(dir.join(SEED_FILE_NAMED)) {
            assert_eq!(new, whole, "kill {i}: a torn file");
        }
        for e in std::fs::read_dir(&dir).expect("dir").flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(
                name == SEED_FILE || name == SEED_FILE_NAMED || name.starts_with('.'),
                "kill {i}: {name}"
            );
        }
    }
}

#[test]
fn no_default_regression_directory_outside_the_current_directory() {
    // The system's temp dir, outside the repository (`tempdir` is inside it, under target/).
    let dir = std::env::temp_dir().join(format!("wakesim-outside-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("x.toml");
    std::fs::copy(root().join(FAILING), &file).expect("copy");
    let out = wakesim_to(
        &[
            "replay",
            file.to_str().expect("utf-8"),
            "--seed",
            "3",
            "--record",
        ],
        Stdio::null(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is outside the current directory"), "{err}");
    assert!(err.contains("--out DIR"), "{err}");
    let parent = dir.parent().expect("parent").join("regressions");
    assert!(!parent.join("x-seed-3.toml").exists());
}

// ---------------------------------------------------------------------------------------------
// The bad-scenario corpus and the fuzz of scenario text.

#[test]
fn bad_input_files_name_file_line_and_key_and_exit_2() {
    let all = common::bad_file_errors("tests/data/bad-input", 50);
    common::insta_settings().bind(|| insta::assert_snapshot!("reliability__bad-input", all));
}

/// Files that are not scenario text at all, made here (a FIFO or a 2 MB file is not committed):
/// each is a clear exit 2 in bounded time, never a hang on a FIFO or a read of a huge file.
#[cfg(unix)]
#[test]
fn special_files_are_refused_clearly_without_blocking() {
    let dir = tempdir("special");
    let at = |name: &str| dir.join(name);
    for name in [
        "dir.toml",
        "loop.toml",
        "fifo.toml",
        "binary.toml",
        "huge.toml",
        "latin1.toml",
    ] {
        let _ = std::fs::remove_file(at(name));
    }
    let _ = std::fs::remove_dir_all(at("dir.toml"));
    std::fs::create_dir_all(at("dir.toml")).expect("dir");
    std::os::unix::fs::symlink("loop.toml", at("loop.toml")).expect("link");
    let mk = Command::new("mkfifo")
        .arg(at("fifo.toml"))
        .status()
        .expect("mkfifo");
    assert!(mk.success());
    std::fs::write(
        at("binary.toml"),
        b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe",
    )
    .expect("binary");
    std::fs::write(at("huge.toml"), "# padding\n".repeat(200_000)).expect("huge");
    std::fs::write(at("latin1.toml"), b"name = \"caf\xe9\"\n").expect("latin1");
    let cases: [(&[&str], &str); 8] = [
        (
            &["explore", "dir.toml"],
            "dir.toml: not a regular file (a directory)",
        ),
        (
            &["replay", "dir.toml", "--seed", "1"],
            "not a regular file (a directory)",
        ),
        (
            &["run", "loop.toml"],
            "loop.toml: Too many levels of symbolic links",
        ),
        (
            &["run", "fifo.toml"],
            "fifo.toml: not a regular file (a FIFO)",
        ),
        (
            &["shrink", "fifo.toml", "--seed", "1"],
            "not a regular file (a FIFO)",
        ),
        (
            &["run", "binary.toml"],
            "binary.toml: not UTF-8 text (an invalid byte at offset 10)",
        ),
        (
            &["run", "huge.toml"],
            "huge.toml: 2000000 bytes, more than the 1048576",
        ),
        (
            &["run", "latin1.toml"],
            "latin1.toml: not UTF-8 text (an invalid byte at offset 11)",
        ),
    ];
    for (args, says) in cases {
        let ran = run_bounded(args, &dir);
        let err = String::from_utf8_lossy(&ran.out.stderr);
        assert!(!ran.hung, "{args:?} hung");
        assert_eq!(ran.out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // A directory with a link cycle and a second link to one scenario: each file runs once.
    let tree = at("tree");
    let _ = std::fs::remove_dir_all(&tree);
    std::fs::create_dir_all(tree.join("a")).expect("tree");
    std::fs::copy(root().join(PASSING), tree.join("a/p.toml")).expect("copy");
    std::os::unix::fs::symlink("..", tree.join("a/up")).expect("link");
    std::os::unix::fs::symlink("p.toml", tree.join("a/again.toml")).expect("link");
    let ran = run_bounded(&["run", "tree", "--seeds", "0..2"], &dir);
    let out = String::from_utf8_lossy(&ran.out.stdout);
    assert_eq!(ran.out.status.code(), Some(0), "{out}");
    assert!(out.contains("1 scenarios, 2 seeds"), "{out}");
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;
    use wakesim::engine::Runner;
    use wakesim::family::Registry;
    use wakesim::scenario::Scenario;

    const KEYS: &[&str] = &[
        "name",
        "description",
        "host",
        "wake",
        "seeds",
        "snapshot_seed",
        "duration_ms",
        "quiesce_ms_max",
        "steps_max",
        "messages",
        "events",
        "spacing_ms",
        "start_ms",
        "kinds",
        "subagents",
        "auth_error",
        "retries",
        "persist_failure",
        "latency_ms_max",
        "must_reach",
        "verdict",
        "invariant",
        "also",
        "requests",
        "deviations",
        "runs_max",
        "step_ms",
        "tool_turns",
        "command",
        "timeout_ms",
        "format",
        "choices",
        "colour",
    ];
    const HEADERS: &[&str] = &[
        "[producers]",
        "[faults]",
        "[timing]",
        "[check]",
        "[coverage]",
        "[explore]",
        "[expect]",
        "[[expect]]",
        "[wake]",
        "[producers.messages]",
        "[",
        "[]",
    ];
    const VALUES: &[&str] = &[
        "\"pi\"",
        "\"pi-0.58\"",
        "\"gptme-server\"",
        "\"gptme-cli\"",
        "\"pi.gentle\"",
        "\"pi.is-idle\"",
        "\"gptme.w2-one-wake-per-burst\"",
        "\"gptme.b1-idle-wait\"",
        "0",
        "1",
        "2",
        "3",
        "-1",
        "7",
        "100",
        "10000",
        "100000001",
        "18446744073709551615",
        "99999999999999999999",
        "1.5",
        "nan",
        "inf",
        "true",
        "\"\"",
        "\"pass\"",
        "\"fail\"",
        "\"panic\"",
        "\"adapter-fault\"",
        "\"no-loss\"",
        "\"fifo\"",
        "\"no-spin\"",
        "\"1/2\"",
        "\"3/2\"",
        "\"1/0\"",
        "\"0/0\"",
        "[]",
        "[1, 2]",
        "[\"stale-ctx\"]",
        "[\"burst-drained\"]",
        "{ min = 1, max = 2 }",
        "{ min = 5, max = 1 }",
        "{ min = 0, max = 86400000 }",
        "{ share = \"1/1\", rate = \"1/2\", max = 1 }",
        "{ command = [] }",
        "{ command = [\"/nonexistent\"] }",
        "\"\\u0000\"",
        "'''x'''",
        "1979-05-27",
    ];

    /// A valid scenario the line fuzz starts from half the time.
    const BASE: &str =
        "name = \"x\"\nhost = \"pi\"\nwake = \"pi.gentle\"\nseeds = 3\nsnapshot_seed = 0\n";

    fn line() -> impl Strategy<Value = String> {
        prop_oneof![
            1 => proptest::sample::select(HEADERS).prop_map(str::to_string),
            4 => (proptest::sample::select(KEYS), proptest::sample::select(VALUES))
                .prop_map(|(k, v)| format!("{k} = {v}")),
            1 => "[ -~]{0,30}",
        ]
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            // Lines from the vocabulary, after a valid head or alone.
            (any::<bool>(), proptest::collection::vec(line(), 0..14)).prop_map(|(head, lines)| {
                let mut t = if head {
                    BASE.to_string()
                } else {
                    String::new()
                };
                for l in lines {
                    t += &l;
                    t.push('\n');
                }
                t
            }),
            // A whole valid scenario with bytes cut, doubled or replaced.
            proptest::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<u8>()), 1..6)
                .prop_map(|edits| {
                    let mut b = std::fs::read(root().join(PASSING)).expect("base");
                    for (i, op, byte) in edits {
                        let at = i.index(b.len().max(1)).min(b.len().saturating_sub(1));
                        match op {
                            0 if !b.is_empty() => {
                                b.remove(at);
                            }
                            1 => b.insert(at, byte),
                            _ if !b.is_empty() => b[at] = byte,
                            _ => {}
                        }
                    }
                    String::from_utf8_lossy(&b).into_owned()
                }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 400,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// In-process: parsing never panics, and a scenario that parses runs two seeds without
        /// panicking out of the runner.
        #[test]
        fn scenario_text_never_panics_the_parser_or_the_runner(t in text()) {
            let registry = Registry::builtin();
            let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                Scenario::parse(Path::new("fuzz.toml"), &t, &registry)
            }));
            let parsed = parsed.map_err(|_| TestCaseError::fail(format!("parse panicked on:\n{t}")))?;
            if let Ok(scn) = parsed {
                // Adapters are the evil suite's: a fuzzed command is not run here.
                if scn.adapter.is_none() {
                    let mut runner = Runner::new(&registry);
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        runner.run_scenario(&scn, 0..2)
                    }));
                    prop_assert!(r.is_ok(), "the runner panicked on:\n{}", t);
                }
            } else if let Err(e) = parsed {
                prop_assert_eq!(e.exit_code(), 2);
                prop_assert!(e.to_string().starts_with("fuzz.toml:"), "{}", e);
            }
        }
    }

    /// Through the binary, fewer cases: exit 0, 1 or 2, no panic, no hang.
    #[test]
    fn the_binary_exits_0_1_or_2_on_fuzzed_files() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::{Config, TestRng, TestRunner};
        let dir = tempdir("fuzz-bin");
        let config = Config {
            failure_persistence: None,
            ..Config::default()
        };
        // A fixed seed: the same 40 files every time.
        let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(config_rng()));
        for i in 0..40 {
            let t = text().new_tree(&mut runner).expect("a case").current();
            let file = dir.join(format!("case-{i}.toml"));
            std::fs::write(&file, &t).expect("write");
            let ran = run_bounded(
                &["run", file.to_str().expect("utf-8"), "--seeds", "0..2"],
                &dir,
            );
            let err = String::from_utf8_lossy(&ran.out.stderr);
            assert!(!ran.hung, "hung on:\n{t}");
            assert!(!err.contains("panicked"), "panicked on:\n{t}\n{err}");
            assert!(
                matches!(ran.out.status.code(), Some(0..=2)),
                "exit {:?} on:\n{t}\n{err}",
                ran.out.status.code()
            );
        }
    }

    fn config_rng() -> proptest::test_runner::RngAlgorithm {
        proptest::test_runner::RngAlgorithm::ChaCha
    }
}

#[test]
fn a_gptme_server_wake_carrying_an_unknown_id_is_an_adapter_fault_naming_it() {
    let dir = tempdir("gptme-unknown-id");
    let file = dir.join("wake-unknown.toml");
    std::fs::write(
        &file,
        format!(
            r#"name = "wake-unknown"
host = "gptme-server"
wake = {{ command = ["python3", "{}", "wake-unknown"], timeout_ms = 2000 }}
seeds = 5
snapshot_seed = 0
[producers]
events = {{ min = 2, max = 2 }}
spacing_ms = {{ min = 0, max = 2000 }}
[faults]
user_steps = "1/1"
[expect]
verdict = "adapter-fault"
"#,
            root()
                .join("tests/data/adapters/misbehave_gptme.py")
                .display()
        ),
    )
    .expect("write");
    let ran = run_bounded(
        &["run", file.to_str().expect("utf-8"), "--format", "json"],
        &dir,
    );
    let out = String::from_utf8_lossy(&ran.out.stdout);
    assert_eq!(ran.out.status.code(), Some(0), "{out}");
    assert!(
        out.contains("`carries` names m8, a message the simulator has not produced"),
        "{out}"
    );
}
