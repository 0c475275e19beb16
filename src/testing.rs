//! wakesim from a downstream crate's `cargo test`: run a scenario against your own wake logic,
//! and on failure get the shrunk story, a saved failure and a command that reproduces it.
//!
//! ```no_run
//! use wakesim::family::Registry;
//!
//! #[test]
//! fn my_wake_survives_two_wakes_during_preparation() {
//!     let registry = Registry::builtin().with_pi("my.wake", "my wake logic", my_crate::wake);
//!     wakesim::testing::check(&registry, "tests/wake.toml");
//! }
//! # mod my_crate { pub fn wake() -> Box<dyn wakesim::family::pi::api::PiWake> { unimplemented!() } }
//! ```
//!
//! `check` (or [`Check`] for more settings) does what `wakesim run` does for one scenario file:
//! 1. its saved failures (the scenario's `regressions` directory) run first, each judged by the
//!    scenario's current expectation;
//! 2. its seed budget runs on every core;
//! 3. a seed whose outcome the expectation does not allow is shrunk, saved beside the scenario
//!    (never over an existing file), printed as a story, and the test panics with the verdict
//!    and a reproduce command: `WAKESIM_SEED=<seed> cargo test -p <crate> <test> -- --exact`.
//!
//! With `WAKESIM_SEED` set, only that seed runs and its whole timeline is printed (as madsim's
//! `MADSIM_TEST_SEED`); the test fails when the seed's outcome is not allowed, so the command
//! reproduces the failure. An inline scenario ([`Check::inline`]) has no file to save beside:
//! its failures are shrunk and printed, not saved.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::engine::parallel::run_scenario_parallel;
use crate::engine::regression::{Replayed, Saved, of_scenario, save_failure};
use crate::engine::verdict::allowed;
use crate::engine::{Runner, describe};
use crate::error::Result;
use crate::family::Registry;
use crate::report;
use crate::scenario::{Expect, Scenario};

/// The environment variable naming the one seed to run (the reproduce command sets it).
pub const SEED_ENV: &str = "WAKESIM_SEED";

/// Run the scenario file at `path` against `registry`; panic with the verdict when its
/// expectation is not met. A relative path is relative to the crate's root (where `cargo test`
/// runs tests).
#[track_caller]
pub fn check(registry: &Registry, path: impl AsRef<Path>) {
    Check::file(registry, path).run();
}

/// A scenario check with settings; `run` panics on failure, `try_run` returns it.
pub struct Check<'r> {
    registry: &'r Registry,
    source: Source,
    seeds: Option<Range<u64>>,
    save: bool,
}

enum Source {
    File(PathBuf),
    Inline { name: String, text: String },
}

impl<'r> Check<'r> {
    /// A scenario file.
    pub fn file(registry: &'r Registry, path: impl AsRef<Path>) -> Check<'r> {
        Check {
            registry,
            source: Source::File(path.as_ref().to_path_buf()),
            seeds: None,
            save: true,
        }
    }

    /// A scenario written in the test; `name` stands for its file in errors and stories.
    pub fn inline(registry: &'r Registry, name: &str, text: &str) -> Check<'r> {
        Check {
            registry,
            source: Source::Inline {
                name: name.to_string(),
                text: text.to_string(),
            },
            seeds: None,
            save: false,
        }
    }

    /// Run these seeds instead of the scenario's budget.
    pub fn seeds(mut self, seeds: Range<u64>) -> Check<'r> {
        self.seeds = Some(seeds);
        self
    }

    /// Do not save a failure beside the scenario (it is still shrunk and printed).
    pub fn no_save(mut self) -> Check<'r> {
        self.save = false;
        self
    }

    /// Run; on failure print the story and panic with the verdict and the reproduce command.
    #[track_caller]
    pub fn run(self) {
        match self.try_run() {
            Ok(()) => {}
            Err(Failure(message)) => panic!("{message}"),
        }
    }

    /// Run; the failure's message (verdict, story, reproduce command) as an error. A bad
    /// scenario file or a bad `WAKESIM_SEED` is a failure too.
    pub fn try_run(self) -> std::result::Result<(), Failure> {
        self.go().map_err(|e| Failure(format!("wakesim: {e}")))?
    }

    fn go(&self) -> Result<std::result::Result<(), Failure>> {
        // As the CLI's `--seeds`: an empty or reversed range runs nothing, so it judges nothing.
        if let Some(r) = self.seeds.as_ref().filter(|r| r.is_empty()) {
            return Err(crate::error::Error::Usage(format!(
                ".seeds({}..{}) is empty: give A..B with A < B",
                r.start, r.end
            )));
        }
        let scn = match &self.source {
            Source::File(p) => Scenario::load(p, self.registry)?,
            Source::Inline { name, text } => Scenario::parse(Path::new(name), text, self.registry)?,
        };
        let mut runner = Runner::new(self.registry);
        runner.prepare(&scn)?;
        let reproduce = |seed: u64| reproduce_command(seed);
        if let Some(seed) = seed_from_env()? {
            return Ok(one_seed(&mut runner, &scn, seed, &reproduce(seed)));
        }
        if let Source::File(_) = self.source {
            for reg in of_scenario(&scn, self.registry)? {
                let (Replayed::Run { result, met } | Replayed::Stale { result, met, .. }) =
                    reg.replay(&mut runner, true);
                if !met {
                    let mut result = result;
                    result.replay = Some(reproduce(reg.seed));
                    let story = report::text::story(&scn, &result, None);
                    return Ok(Err(Failure(format!(
                        "{}: the saved failure {} ({}) is not met: it {}\n{story}",
                        scn.path.display(),
                        reg.path.display(),
                        reg.expectation_label(),
                        describe(&result.outcome),
                    ))));
                }
            }
        }
        let range = (self.seeds.clone()).unwrap_or(0..scn.seeds);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let rep = run_scenario_parallel(self.registry, &scn, range, threads, &|_| {});
        if rep.met {
            return Ok(Ok(()));
        }
        let why = rep.why.clone().unwrap_or_default();
        let Some(u) = &rep.unexpected else {
            // Nothing to show: a failing scenario whose failure no seed found.
            return Ok(Err(Failure(format!(
                "{}: expected {}, but {why}",
                scn.path.display(),
                scn.expect
            ))));
        };
        let mut message = format!(
            "{}: expected {}, but {why}\n",
            scn.path.display(),
            scn.expect
        );
        match save_failure(&mut runner, &scn, u.seed, self.save)? {
            Some(mut f) => {
                f.run.replay = Some(reproduce(u.seed));
                message += &report::text::story(&scn, &f.run, None);
                message += &match &f.saved {
                    Some(Saved::Wrote(p)) => {
                        format!("saved as {} (it runs first from now on)\n", p.display())
                    }
                    Some(Saved::Kept(p)) => format!("already saved as {}\n", p.display()),
                    None => String::new(),
                };
            }
            None => message += &format!("reproduce: {}\n", reproduce(u.seed)),
        }
        Ok(Err(Failure(message)))
    }
}

/// Why a check failed: the verdict, the story and the reproduce command, as printed.
#[derive(Debug)]
pub struct Failure(pub String);

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `WAKESIM_SEED`, if set: a decimal or 0x-hex seed.
fn seed_from_env() -> Result<Option<u64>> {
    let Ok(v) = std::env::var(SEED_ENV) else {
        return Ok(None);
    };
    let t = v.trim();
    let parsed = match t.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    };
    parsed.map(Some).map_err(|_| {
        crate::error::Error::Usage(format!(
            "{SEED_ENV}={v} is not a seed (a u64, decimal or 0x-hex)"
        ))
    })
}

/// One seed, its whole timeline printed; a failure when its outcome is not allowed.
fn one_seed(
    runner: &mut Runner<'_>,
    scn: &Scenario,
    seed: u64,
    reproduce: &str,
) -> std::result::Result<(), Failure> {
    // A plain seed (not recorded choices): the reproduce line is passed, not set as `replay`.
    let r = runner.run_seed(scn, seed, true);
    let timeline = report::text::timeline_with(scn, &r, &format!("reproduce: {reproduce}"));
    let ok = match &scn.expect {
        Expect::Pass => r.outcome.is_pass(),
        e => allowed(e, &r.outcome).1,
    };
    // Printed once: here when the seed passes, in the failure's message when it does not.
    if ok {
        eprintln!("{timeline}");
        return Ok(());
    }
    Err(Failure(format!(
        "{}: seed {seed} ({SEED_ENV}) is not allowed by expect {}: it {}\n{timeline}",
        scn.path.display(),
        scn.expect,
        describe(&r.outcome)
    )))
}

/// `WAKESIM_SEED=7 cargo test -p my-crate tests::my_test -- --exact`: the test's name is its
/// thread's (libtest names each test's thread after it), the package cargo's `CARGO_PKG_NAME`
/// (set when cargo runs a test).
fn reproduce_command(seed: u64) -> String {
    let thread = std::thread::current();
    let mut cmd = format!("{SEED_ENV}={seed} cargo test");
    if let Ok(pkg) = std::env::var("CARGO_PKG_NAME") {
        cmd += &format!(" -p {pkg}");
    }
    match thread.name().filter(|n| *n != "main") {
        Some(test) => cmd += &format!(" {test} -- --exact"),
        None => cmd += " <this test>",
    }
    cmd
}

/// A scenario's timeline to snapshot, from [`Check::snapshot`]: the text (`Display`), the seed
/// it is of and a one-line description.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub seed: u64,
    pub text: String,
    pub description: String,
}

impl std::fmt::Display for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Snapshots in the caller's crate. Insta's macros find the snapshot directory and settings from
/// where they are written (the calling test's file and crate), so wakesim hands over the text
/// and the calling test asserts it with its own insta:
///
/// ```no_run
/// # fn registry() -> wakesim::family::Registry { wakesim::family::Registry::builtin() }
/// #[test]
/// fn reserved_timeline() {
///     let snap = wakesim::testing::Check::file(&registry(), "scenarios/reserved.toml").snapshot();
///     insta::with_settings!({ description => snap.description.clone() }, {
///         insta::assert_snapshot!(snap);
///     });
/// }
/// ```
///
/// A changed timeline then fails that test with insta's diff, and `cargo insta review` accepts it
/// into the crate's own `snapshots/` directory beside the test.
impl Check<'_> {
    /// The timeline of the scenario's snapshot seed: its `snapshot_seed`, else seed 0 of a
    /// scenario expected to pass, else the first seed (of [`Check::seeds`] or its budget) that
    /// shows the failure it expects. The wakesim version in it reads `wakesim [version]`, so an
    /// upgrade alone does not change the snapshot. Panics, with the reason, where
    /// [`Check::try_snapshot`] returns an error.
    #[track_caller]
    pub fn snapshot(&self) -> Snapshot {
        match self.try_snapshot() {
            Ok(s) => s,
            Err(Failure(message)) => panic!("{message}"),
        }
    }

    /// As [`Check::snapshot`]; a bad scenario, or a snapshot seed that does not show what the
    /// scenario expects, is an error.
    pub fn try_snapshot(&self) -> std::result::Result<Snapshot, Failure> {
        self.snapshot_of()
            .map_err(|e| Failure(format!("wakesim: {e}")))?
    }

    fn snapshot_of(&self) -> Result<std::result::Result<Snapshot, Failure>> {
        let scn = match &self.source {
            Source::File(p) => Scenario::load(p, self.registry)?,
            Source::Inline { name, text } => Scenario::parse(Path::new(name), text, self.registry)?,
        };
        let mut runner = Runner::new(self.registry);
        runner.prepare(&scn)?;
        let seed = match (scn.snapshot_seed, &scn.expect) {
            (Some(s), _) => s,
            (None, Expect::Pass) => self.seeds.as_ref().map_or(0, |r| r.start),
            (None, _) => {
                let range = (self.seeds.clone()).unwrap_or(0..scn.seeds);
                let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
                let rep =
                    run_scenario_parallel(self.registry, &scn, range.clone(), threads, &|_| {});
                match rep.first_expected {
                    Some(s) => s,
                    None => {
                        return Ok(Err(Failure(format!(
                            "{}: no seed in {}..{} shows the expected {}, so there is no timeline to snapshot",
                            scn.path.display(),
                            range.start,
                            range.end,
                            scn.expect
                        ))));
                    }
                }
            }
        };
        let r = runner.run_seed(&scn, seed, true);
        if !crate::engine::shows_expected(&scn.expect, &r.outcome) {
            return Ok(Err(Failure(format!(
                "{}: the snapshot seed {seed} does not show the expected {} (it {})",
                scn.path.display(),
                scn.expect,
                describe(&r.outcome)
            ))));
        }
        let text = report::text::timeline(&scn, &r).replace(
            &format!("wakesim {}", env!("CARGO_PKG_VERSION")),
            "wakesim [version]",
        );
        Ok(Ok(Snapshot {
            seed,
            text,
            description: format!("{} · seed {seed}", scn.name),
        }))
    }
}
