//! Every limit of wakesim in one place: what bounds a run, a scenario file, a wake logic's calls,
//! an adapter's answers and the work of the engine. Running out of a run's limit is an outcome,
//! never a hang; exceeding a file's limit is an error naming the file, line and key.
//!
//! The modelled hosts' own constants (gptme's watch storm guards, its 100-record prompt-queue
//! cap, pi's retry and compaction timings) are part of the models and stay with them; what is
//! here bounds wakesim itself.

/// Limits of one run. Running out of any is an outcome, never a hang.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Producers and faults act in `[0, active_ms)`; then the quiescent phase begins.
    pub active_ms: u64,
    /// The quiescent phase ends at `active_ms + quiesce_ms_max` at the latest.
    pub quiesce_ms_max: u64,
    /// Events a run may process.
    pub steps_max: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            active_ms: 120_000,
            quiesce_ms_max: 600_000,
            steps_max: 200_000,
        }
    }
}

/// Race-window codes a family may use (`sim::record::Window::code` is below it): the monitor
/// counts marks in an array this long.
pub const WINDOW_CODES_MAX: usize = 32;

/// Calls a single wake-logic invocation may make before the run is stopped as runaway.
pub const CALLS_MAX: u32 = 10_000;

/// How often a timed fault that found the host unable to take it tries again, and how far apart.
pub const TIMED_FAULT_ATTEMPTS_MAX: u32 = 40;
pub const TIMED_FAULT_RETRY_MS: u64 = 500;

/// The payload of a panic that stops a runaway wake logic past [`CALLS_MAX`]; the run ends with
/// the step-budget outcome.
pub struct BudgetExceeded;

/// Hard limits on scenario values, so a typo cannot ask for a run that never ends.
pub const SEEDS_MAX: u64 = 100_000_000;
pub const DURATION_MS_MAX: u64 = 24 * 3_600_000;
pub const STEPS_MAX: u64 = 10_000_000;
pub const MESSAGES_MAX: u64 = 10_000;
/// The largest scenario or regression file wakesim reads (a real one is a few KiB).
pub const INPUT_BYTES_MAX: u64 = 1 << 20;
/// The largest report (`merge` input) wakesim reads.
pub const REPORT_BYTES_MAX: u64 = 256 << 20;

/// Explore's scope as a scenario's `[explore]` may set it: producer messages at most, unusual
/// choices per run at most.
pub const EXPLORE_MESSAGES_MAX: u64 = 16;

/// Candidate runs at most when `run` shrinks a failure it saves (`wakesim shrink` takes its own
/// `--runs-max`): a few seconds in the kernel, bounded through an adapter too.
pub const SAVE_SHRINK_RUNS_MAX: u64 = 5_000;
pub const EXPLORE_DEVIATIONS_MAX: usize = 8;
/// Interior points per delay range at most (`explore --interior N`): a delay's points are
/// capped at 32 anyway.
pub const EXPLORE_INTERIOR_MAX: u64 = 16;

/// The default wall-clock bound on any single answer of an adapter during runs.
pub const ADAPTER_TIMEOUT_MS_DEFAULT: u64 = 10_000;
/// The default bound on starting: the `hello` and the first `ready` after a spawn (the module
/// loads and compiles then).
pub const ADAPTER_START_TIMEOUT_MS_DEFAULT: u64 = 30_000;
/// The largest bound a scenario may give either.
pub const ADAPTER_TIMEOUT_MS_MAX: u64 = 3_600_000;
/// Constants a scenario may declare for an external logic.
pub const ADAPTER_CONSTANTS_MAX: usize = 32;
/// Live adapter processes a runner keeps; the least recently used beyond it is stopped.
pub const ADAPTERS_LIVE_MAX: usize = 16;
/// Longest line an adapter may write; a longer one is a protocol fault, not an allocation.
pub const ADAPTER_LINE_BYTES_MAX: usize = 1 << 20;
/// How much of the adapter's stderr a fault report keeps.
pub const ADAPTER_STDERR_TAIL_BYTES_MAX: usize = 4096;
pub const ADAPTER_STDERR_TAIL_LINES_MAX: usize = 20;
/// How much of an adapter's line a fault quotes, in characters.
pub const ADAPTER_QUOTE_MAX: usize = 160;
/// How much of a handler's error (`done.error`) a panic outcome keeps, in bytes.
pub const HANDLER_ERROR_CHARS_MAX: usize = 2000;
/// Names an adapter may introduce (custom types, hook names), each at most
/// `ADAPTER_NAME_BYTES_MAX` bytes; beyond, a name reads as its fallback.
pub const ADAPTER_NAMES_MAX: usize = 256;
pub const ADAPTER_NAME_BYTES_MAX: usize = 64;

/// The remote-host protocol version wakesim speaks with real hosts' drivers.
pub const REMOTE_PROTOCOL_VERSION: u64 = 1;
/// The default wall-clock bound on one line of a driver during a run.
pub const REMOTE_TIMEOUT_MS_DEFAULT: u64 = 10_000;
/// The default bound on a driver's start-up: its `hello` (it imports the host), and while its
/// launcher installs the pinned packages on first use, each gap between its `installing` lines
/// (written every 5 s). A driver stopped or silent while starting is an adapter fault within it.
pub const REMOTE_START_TIMEOUT_MS_DEFAULT: u64 = 60_000;
/// Lines one real-host run may have per step of its budget (draws, notes, observations).
pub const REMOTE_LINES_PER_STEP_MAX: u64 = 64;
/// Live driver processes a runner keeps; the least recently used beyond it is stopped.
pub const REMOTES_LIVE_MAX: usize = 8;

/// A parallel sweep cuts a seed range into this many chunks per thread, each of this many
/// seeds at least and at most.
pub const PARALLEL_CHUNKS_PER_THREAD: u64 = 8;
pub const PARALLEL_CHUNK_MIN: u64 = 64;
pub const PARALLEL_CHUNK_MAX: u64 = 4096;

/// Shards of one fleet run (`run --shard K/N`): far above any fleet, and low enough that the
/// jump hash's floating-point steps stay exact.
pub const SHARD_COUNT_MAX: u64 = 1 << 20;
/// Failing seeds `merge --save-failures` may keep per scenario (`--cap`).
pub const SAVE_FAILURES_CAP_MAX: usize = 100;
/// The bound on a real host's install on first use as a whole (`installing` lines, then the
/// `hello`): Node 22, the pinned host and an extension's package, each an `npm ci`.
pub const REMOTE_INSTALL_TIMEOUT_MS: u64 = 900_000;
/// The text of a `sendUserMessage` an adapter's wake logic sends, as the timeline shows it: at
/// most this many bytes, ellipsis included (a longer text is cut at a character boundary and
/// ends in `…`), so a trace stays small. The adapters cut to the same bound before sending.
pub const USER_MESSAGE_TEXT_BYTES_MAX: usize = 200;
