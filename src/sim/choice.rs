//! The single source of nondeterminism in a run.
//!
//! Every decision the simulator makes that is not fixed by the scenario (a delay, which of two
//! events due at the same instant goes first, whether a fault fires) is a *choice*: an integer
//! `value < bound`, drawn here and recorded in order. A run is a pure function of the scenario and
//! its choice sequence. Random mode draws the sequence from `ChaCha8Rng` seeded with the run's
//! seed; replay mode reads a recorded sequence back. That one stream is what replay, shrinking and
//! exhaustive enumeration all work on.
//!
//! Conventions that make shrinking and enumeration work:
//! - value 0 is always the simplest option (no fault, shortest delay, first event in order);
//! - a decision with a single option draws nothing and records nothing;
//! - probabilities are integer weights, never floats.

use rand::{Rng, SeedableRng};

mod boost;
mod delay;

use boost::{Boost, EXTEND_STREAM, Extend, FOCI, FRESH_STREAM, PIN_STREAM};
use delay::{SPANS, Span};

use crate::sim::search::{Guide, Search, boost_seed, coverage_block_start, portfolio};
use rand_chacha::ChaCha8Rng;

/// One recorded decision: `value` in `0..bound`, drawn at the site named by `label`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    pub bound: u64,
    pub value: u64,
    pub label: &'static str,
}

/// How delay draws are shaped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Only draw delays from the boundary set (explore mode): no uniform class.
    pub boundary_only: bool,
    /// In the boundary-only profile, evenly spaced interior points every delay's boundary set
    /// gains (`explore --interior N`); 0, the default, adds none (outside events' instants have
    /// `INSTANT_GRID` of their own, or this many if more).
    pub interior: u64,
}

/// Where a replayed sequence stopped matching the model that consumes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Index of the first choice whose bound (or site) differs.
    pub index: usize,
    pub label: &'static str,
    pub bound: u64,
    /// The site and bound the recording has at `index`: a replay diverges when either differs.
    pub recorded_label: &'static str,
    pub recorded_bound: u64,
}

enum Source {
    Random(Box<ChaCha8Rng>),
    /// A boosted run (`sim::search`, `Search::Boost`): its own generator, and which draw sites
    /// it boosts.
    Boost(Box<Boost>),
    /// A recorded sequence. Past its end every draw is 0, the simplest option.
    Replay {
        values: Vec<Choice>,
        pos: usize,
    },
}

/// The recorded choice stream of one run (a `Prng` that remembers every draw).
pub struct Choices {
    source: Source,
    log: Vec<Choice>,
    /// Whether draws are logged. A bulk run judged only by its verdict reads no log (it is
    /// replayed from its seed), so it draws without one; everything else keeps it.
    logging: bool,
    profile: Profile,
    /// Constants of the logic under test; delays are biased toward them and one either side.
    constants: Vec<u64>,
    /// The constants as last given to `set_constants` (unsorted), to skip an unchanged set.
    given: Vec<u64>,
    /// The boundary neighbourhoods `c - 1, c, c + 1` of every constant, sorted and distinct:
    /// what a delay's boundary set draws from besides `lo` and `hi`, computed once per set of
    /// constants instead of per draw.
    near: Vec<u64>,
    divergence: Option<Divergence>,
    /// Draws made past the end of a replayed sequence.
    extended: usize,
    /// The boundary sets of recent delay ranges, each a pure function of the range and `near`
    /// (emptied when `near` changes), in the slot `span_slot` of its range gives: a host draws
    /// most of its delays from a handful of ranges, so a draw skips the two searches of `near`.
    /// Boxed: a `Choices` is moved by value into every run (`Drive`), so it is kept small.
    spans: Box<[Span; SPANS]>,
    /// A guided run's replayed prefix (`sim::search::Guide`): its draws come from it while the
    /// model asks for the sites and bounds it recorded, then from `source`.
    prefix: Option<Box<Prefix>>,
    /// Log every draw even in a bulk run: a guided block keeps runs' choices to mutate.
    keep_log: bool,
    /// With `keep_log`: each race window marked (`Choices::mark`), its code with the log's length
    /// then, so a feedback search can cut a run's choices just after the mark.
    marks_at: Vec<(u8, u32)>,
}

/// A recorded prefix a guided run replays before drawing afresh.
struct Prefix {
    values: Vec<Choice>,
    pos: usize,
}

impl Choices {
    /// Random mode: draws come from `ChaCha8Rng::seed_from_u64(seed)`.
    pub fn random(seed: u64, profile: Profile) -> Choices {
        Choices::with_source(
            Source::Random(Box::new(ChaCha8Rng::seed_from_u64(seed))),
            profile,
        )
    }

    /// A run of `seed` under `search`: `Swarm` is [`Choices::random`], the seed's own stream;
    /// `Boost` draws from a stream of its own (`search::boost_seed`) and boosts rare draws at
    /// up to `depth` sites (`sim::search`).
    pub fn searched(seed: u64, search: Search, profile: Profile) -> Choices {
        match search {
            Search::Swarm => Choices::random(seed, profile),
            Search::Boost { depth } => Choices::with_source(
                Source::Boost(Box::new(Boost {
                    rng: ChaCha8Rng::seed_from_u64(boost_seed(seed)),
                    depth,
                    boosted: 0,
                    sites: Vec::new(),
                    pin: false,
                    pins: Vec::new(),
                    extend: None,
                    mix_tries: 1,
                })),
                profile,
            ),
            Search::Guided => portfolio(seed),
            // Alone, a coverage seed is what its block plans for it with nothing observed (the
            // portfolio's run); the runner plans it from the block's earlier runs
            // (`engine::runner`).
            Search::Coverage | Search::Anchored => {
                Guide::new(search, coverage_block_start(seed)).choices(seed)
            }
        }
    }

    /// A guided mutant's stream: `prefix` replayed while the model asks for its sites and
    /// bounds, then draws from `suffix` (swarm or a boost) seeded with `seed`. Logs always.
    pub fn spliced(prefix: Vec<Choice>, suffix: Search, seed: u64) -> Choices {
        let suffix = match suffix {
            Search::Guided | Search::Coverage | Search::Anchored => Search::Swarm,
            s => s,
        };
        Choices::searched(seed, suffix, Profile::default()).after(prefix)
    }

    /// This stream (logging every draw) after `prefix`: the prefix replayed while the model asks
    /// for its sites and bounds, then this stream's own draws.
    pub fn after(self, prefix: Vec<Choice>) -> Choices {
        let mut c = self.keeping_log();
        c.prefix = Some(Box::new(Prefix {
            values: prefix,
            pos: 0,
        }));
        c
    }

    /// A pinned run of `seed` (a guided block's fresh runs, `sim::search::Guide`): swarm testing
    /// of the timing. Each delay site is pinned at a fair coin to one class of its boundary set
    /// or its uniform class, so every delay it draws from its boundary set is the same corner
    /// (all jobs as long as the longest, every report at the end of the active phase); an
    /// unpinned site, and every `chance`, draws as swarm. Two events timed by different sites meet at a
    /// corner with the probability of two coins, not of two boundary points drawn at random.
    pub fn pinned(seed: u64) -> Choices {
        Choices::unboosted(seed, PIN_STREAM, |b| b.pin = true).keeping_log()
    }

    /// A boost source of depth 0 seeded apart with `stream`, set up by `with` (a pinned or an
    /// extending run).
    fn unboosted(seed: u64, stream: u64, with: impl FnOnce(&mut Boost)) -> Choices {
        let mut c = Choices::searched(seed, Search::Boost { depth: 0 }, Profile::default());
        if let Source::Boost(b) = &mut c.source {
            b.rng = ChaCha8Rng::seed_from_u64(boost_seed(seed ^ stream));
            with(b);
        }
        c
    }

    /// An extending run of `seed` after `prefix` (`sim::search::Guide`'s chain anchors): every
    /// draw uniform except the `chance` site `label`, which comes out 1 fifteen times in sixteen,
    /// so a run of that site's firings the prefix ended in goes on for several more.
    pub fn extending(prefix: Vec<Choice>, label: &'static str, seed: u64) -> Choices {
        Choices::unboosted(seed, EXTEND_STREAM, |b| b.extend = Some(Extend::now(label)))
            .after(prefix)
    }

    /// An extending run of `seed` after `prefix` (`sim::search::Guide`'s window anchors, whose
    /// prefix may be mutated): `label` comes out 1 fifteen times in sixteen from the next mark
    /// of `window` (if the anchor has one) or from draw `at` on, whichever comes first; before
    /// that, and at every other site, draws are uniform.
    pub fn extending_from(
        prefix: Vec<Choice>,
        label: &'static str,
        window: Option<u8>,
        at: usize,
        seed: u64,
    ) -> Choices {
        Choices::unboosted(seed, EXTEND_STREAM, |b| {
            b.extend = Some(Extend {
                site: Some(label),
                armed: false,
                on_mark: window.map(Some),
                at_draw: Some(at),
            });
        })
        .after(prefix)
    }

    /// A fresh extending run of `seed` (the anchored search's fresh runs): uniform until the
    /// run's first window mark, or until draw `at` when `at` is given; from then on the first
    /// rare `chance` that comes out 1 (a fault that fires at less than one opportunity in two)
    /// fires again fifteen times in sixteen. A race window then a fault firing several times in
    /// a row (a wait, then a chain of tool calls) comes in one run of a few, without knowing
    /// which window or which fault.
    ///
    /// Its mix has more faults on than the scenario's shares give: each `fault on` coin is
    /// drawn two or three times (drawn once per run) and on if any draw is, so a fault at a
    /// share of 1/3 is on in 5/9 or 19/27 of these runs. A rare coincidence usually needs
    /// several faults on at once (a stale control file and tool calls), which the shares,
    /// made for a uniform spread, make rare; the coin is recorded as the `chance` it answers,
    /// so the run replays as itself. Swarm's and pinned fresh runs keep the shares, so a bug
    /// that one of the extra faults would mask stays in reach.
    pub fn extending_fresh(seed: u64, at: Option<usize>) -> Choices {
        Choices::unboosted(seed, EXTEND_STREAM ^ FRESH_STREAM, |b| {
            b.mix_tries = 2 + below(&mut b.rng, 2) as u32;
            b.extend = Some(Extend {
                site: None,
                armed: false,
                on_mark: at.is_none().then_some(None),
                at_draw: at,
            });
        })
        .keeping_log()
    }

    /// This stream, logging every draw whatever the run keeps (a guided block reads the log).
    pub fn keeping_log(mut self) -> Choices {
        self.keep_log = true;
        self.logging = true;
        self
    }

    /// The next draw from a guided run's prefix, if it has one and the model asks for what it
    /// recorded there; the first mismatch ends the prefix.
    #[inline(always)]
    fn prefixed(&mut self, bound: u64, label: &'static str) -> Option<u64> {
        self.prefix.as_ref()?;
        self.next_prefixed(bound, label)
    }

    #[cold]
    #[inline(never)]
    fn next_prefixed(&mut self, bound: u64, label: &'static str) -> Option<u64> {
        let p = self.prefix.as_mut()?;
        match p.values.get(p.pos) {
            Some(c) if c.bound == bound && c.label == label => {
                p.pos += 1;
                Some(c.value.min(bound - 1))
            }
            _ => {
                self.prefix = None;
                None
            }
        }
    }

    /// Replay mode: draws come from `values`; past the end every draw is 0.
    pub fn replay(values: Vec<Choice>, profile: Profile) -> Choices {
        Choices::with_source(Source::Replay { values, pos: 0 }, profile)
    }

    fn with_source(source: Source, profile: Profile) -> Choices {
        Choices {
            source,
            log: Vec::with_capacity(256),
            logging: true,
            profile,
            constants: Vec::new(),
            given: Vec::new(),
            near: Vec::new(),
            divergence: None,
            extended: 0,
            spans: Box::new([Span::default(); SPANS]),
            prefix: None,
            keep_log: false,
            marks_at: Vec::new(),
        }
    }

    /// Reset to random mode with a new seed and the default profile, keeping allocations (the
    /// generator's box, the log, the constants): bulk runs reuse one `Choices`.
    pub fn reseed(&mut self, seed: u64) {
        match &mut self.source {
            Source::Random(rng) => **rng = ChaCha8Rng::seed_from_u64(seed),
            Source::Replay { .. } | Source::Boost(_) => {
                self.source = Source::Random(Box::new(ChaCha8Rng::seed_from_u64(seed)));
            }
        }
        self.profile = Profile::default();
        self.prefix = None;
        self.keep_log = false;
        self.marks_at.clear();
        self.log.clear();
        self.divergence = None;
        self.extended = 0;
    }

    /// Log draws (the default) or not. Without a log, [`Choices::log`] stays empty; the draws
    /// themselves are the same.
    pub fn set_logging(&mut self, on: bool) {
        self.logging = on || self.keep_log;
    }

    /// Set the constants that delay draws are biased toward.
    pub fn set_constants(&mut self, constants: &[u64]) {
        // Every seed of a scenario sets the same constants: keep what was derived from them
        // (for no constants too: `constants` and `near` start empty, as they are derived).
        if self.given == constants {
            return;
        }
        self.given.clear();
        self.given.extend_from_slice(constants);
        self.constants.clear();
        self.constants.extend_from_slice(constants);
        self.constants.sort_unstable();
        self.constants.dedup();
        self.near.clear();
        *self.spans = [Span::default(); SPANS];
        for &c in &self.constants {
            for v in [c.saturating_sub(1), c, c.saturating_add(1)] {
                if self.near.last().is_none_or(|&last| last < v) {
                    self.near.push(v);
                }
            }
        }
    }

    /// The constants delays are biased toward.
    pub fn constants(&self) -> &[u64] {
        &self.constants
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// Every choice drawn so far, in order.
    pub fn log(&self) -> &[Choice] {
        &self.log
    }

    /// A race window with `code` was reached now: remembered with the log's length when the
    /// stream keeps its log for a feedback search (`sim::search::Guide`), else nothing.
    #[inline]
    pub fn mark(&mut self, code: u8) {
        if let Source::Boost(b) = &mut self.source
            && let Some(e) = &mut b.extend
        {
            e.marked(code);
        }
        if self.keep_log {
            self.marks_at.push((code, self.log.len() as u32));
        }
    }

    /// One of the search's own marks (`feature::FOREIGN_WORK`, `feature::WAIT_FOR_WORK`) was
    /// reached now: marked when the stream keeps its log for a feedback search, so an anchored
    /// search can cut a run there; for any other run one branch. A family calls it where it
    /// emits the observation the mark stands for.
    #[inline(always)]
    pub fn search_mark(&mut self, code: u8) {
        if self.keep_log {
            self.mark(code);
        }
    }

    /// The windows marked (`Choices::mark`), each with the log's length then, taken out.
    pub fn take_marks(&mut self) -> Vec<(u8, u32)> {
        std::mem::take(&mut self.marks_at)
    }

    /// The log, taken out (an empty log keeps its allocation here).
    pub fn take_log(&mut self) -> Vec<Choice> {
        if self.log.is_empty() {
            return Vec::new();
        }
        std::mem::take(&mut self.log)
    }

    /// The first point where a replayed sequence did not fit the model, if any.
    pub fn divergence(&self) -> Option<&Divergence> {
        self.divergence.as_ref()
    }

    /// Recorded choices a replay left unread, or draws it made past the recorded end.
    pub fn replay_mismatch(&self) -> Option<(usize, usize)> {
        match &self.source {
            Source::Replay { values, pos } if *pos < values.len() || self.extended > 0 => {
                Some((values.len().saturating_sub(*pos), self.extended))
            }
            _ => None,
        }
    }

    /// What the next draws will read, without drawing: the next `n` raw words of the generator
    /// (random mode) or the next `n` recorded values (replay mode). A remote driver that applies
    /// the same reduction as [`Choices::choose`] and [`Choices::chance`] to them (`below`'s
    /// widening multiply with rejection; a recorded value capped at `bound - 1`, 0 past the
    /// recording's end) draws locally what this stream would draw; it reports those draws and
    /// they are drawn here again, in order, so the log and the generator are as if each had been
    /// asked for.
    pub fn ahead(&self, n: usize) -> Ahead {
        match &self.source {
            Source::Random(rng) => {
                let mut rng = rng.as_ref().clone();
                Ahead::Words((0..n).map(|_| rng.next_u64()).collect())
            }
            // A driver reduces words as a uniform stream does; a boosted run is never handed to
            // one (the runner runs real hosts under swarm), so nothing is ahead of it.
            Source::Boost(_) => Ahead::Recorded {
                values: Vec::new(),
                ends: false,
            },
            Source::Replay { values, pos } => {
                let end = values.len().min(pos.saturating_add(n));
                let from = (*pos).min(end);
                Ahead::Recorded {
                    values: values[from..end].iter().map(|c| c.value).collect(),
                    ends: end == values.len(),
                }
            }
        }
    }

    /// A uniform choice in `0..bound`. `bound <= 1` draws nothing.
    pub fn choose(&mut self, bound: u64, label: &'static str) -> u64 {
        if bound <= 1 {
            return 0;
        }
        self.draw(bound, label)
    }

    /// A uniform choice in `0..bound` (`bound >= 2`), drawn and recorded: what `choose` does
    /// once it has a choice to make.
    #[inline(always)]
    fn draw(&mut self, bound: u64, label: &'static str) -> u64 {
        if let Some(v) = self.prefixed(bound, label) {
            self.record(bound, v, label);
            return v;
        }
        let value = match &mut self.source {
            Source::Random(rng) => below(rng, bound),
            Source::Boost(b) => below(&mut b.rng, bound),
            Source::Replay { .. } => self.next_replayed(bound, label),
        };
        self.record(bound, value, label);
        value
    }

    /// A choice of an index into `weights`, drawn with those integer weights.
    pub fn weighted(&mut self, weights: &[u64], label: &'static str) -> usize {
        let bound = weights.len() as u64;
        if bound <= 1 {
            return 0;
        }
        if let Some(v) = self.prefixed(bound, label) {
            self.record(bound, v, label);
            return v as usize;
        }
        let value = match &mut self.source {
            Source::Boost(b) => weighted_index(&mut b.rng, weights, label),
            Source::Random(rng) => {
                let total: u64 = weights.iter().sum();
                assert!(total > 0, "weights of {label} sum to zero");
                let mut r = below(rng, total.max(1));
                let mut index = 0;
                for (i, w) in weights.iter().enumerate() {
                    if r < *w {
                        index = i;
                        break;
                    }
                    r -= w;
                }
                index as u64
            }
            Source::Replay { .. } => self.next_replayed(bound, label),
        };
        self.record(bound, value, label);
        value as usize
    }

    /// True with probability `num/den`. Certain outcomes draw nothing.
    pub fn chance(&mut self, ratio: Ratio, label: &'static str) -> bool {
        if ratio.num == 0 {
            return false;
        }
        if ratio.num >= ratio.den {
            return true;
        }
        // `weighted(&[den - num, num])`, written out for two weights: the same draw (one
        // `below(den)`, the second class from `den - num` up), recorded the same way.
        if let Some(v) = self.prefixed(2, label) {
            self.record(2, v, label);
            return v == 1;
        }
        let value = match &mut self.source {
            Source::Random(rng) => u64::from(below(rng, ratio.den) >= ratio.den - ratio.num),
            // A boosted site's chance is a fair coin: its rare outcome at half the draws.
            Source::Boost(b) => {
                // An extending run's site, checked first: at depth 0 `site` would only record it.
                if let Some(e) = &mut b.extend {
                    if e.covers(label, self.log.len()) {
                        let v = u64::from(below(&mut b.rng, 16) != 0);
                        self.record(2, v, label);
                        return v == 1;
                    }
                    if e.armed && e.site.is_none() {
                        let v = u64::from(below(&mut b.rng, ratio.den) >= ratio.den - ratio.num);
                        if v == 1 && 2 * ratio.num < ratio.den {
                            e.site = Some(label);
                        }
                        self.record(2, v, label);
                        return v == 1;
                    }
                }
                b.chance(ratio, label)
            }
            Source::Replay { .. } => self.next_replayed(2, label),
        };
        self.record(2, value, label);
        value == 1
    }

    /// Log one draw, when logging.
    #[inline]
    fn record(&mut self, bound: u64, value: u64, label: &'static str) {
        if self.logging {
            self.log.push(Choice {
                bound,
                value,
                label,
            });
        }
    }

    #[cold]
    #[inline(never)]
    fn next_replayed(&mut self, bound: u64, label: &'static str) -> u64 {
        let Source::Replay { values, pos } = &mut self.source else {
            unreachable!("next_replayed outside replay mode")
        };
        match values.get(*pos) {
            Some(recorded) => {
                *pos += 1;
                if (recorded.bound != bound || recorded.label != label) && self.divergence.is_none()
                {
                    self.divergence = Some(Divergence {
                        index: *pos - 1,
                        label,
                        bound,
                        recorded_label: recorded.label,
                        recorded_bound: recorded.bound,
                    });
                }
                recorded.value.min(bound - 1)
            }
            None => {
                self.extended += 1;
                0
            }
        }
    }
}

/// The material of the next draws (`Choices::ahead`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ahead {
    /// The generator's next raw 64-bit words.
    Words(Vec<u64>),
    /// The recording's next values; `ends`: the recording ends after them (every later draw is 0).
    Recorded { values: Vec<u64>, ends: bool },
}

/// Interior points `instant` adds to the boundary set when exploring.
pub const INSTANT_GRID: u64 = 7;

/// At most this many points in a delay's boundary set (the first ones, ascending).
const BOUNDARY_POINTS_MAX: usize = 32;

/// A probability as an integer ratio, written `"num/den"` in scenario files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ratio {
    pub num: u64,
    pub den: u64,
}

impl Ratio {
    pub const NEVER: Ratio = Ratio { num: 0, den: 1 };
    pub const ALWAYS: Ratio = Ratio { num: 1, den: 1 };

    pub const fn new(num: u64, den: u64) -> Ratio {
        Ratio { num, den }
    }
}

impl std::fmt::Display for Ratio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.num, self.den)
    }
}

/// A uniform integer in `0..n` (n >= 1) by Lemire's widening multiply with rejection. Written out
/// here rather than borrowed from `rand` so the mapping from generator output to choices can never
/// change under a dependency upgrade: recorded seeds stay valid.
#[inline]
pub(crate) fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    let mut m = u128::from(rng.next_u64()) * u128::from(n);
    let mut low = m as u64;
    if low < n {
        let threshold = n.wrapping_neg() % n;
        while low < threshold {
            m = u128::from(rng.next_u64()) * u128::from(n);
            low = m as u64;
        }
    }
    (m >> 64) as u64
}

/// An index into `weights` drawn with those integer weights (as a uniform stream's `weighted`).
fn weighted_index(rng: &mut ChaCha8Rng, weights: &[u64], label: &str) -> u64 {
    let total: u64 = weights.iter().sum();
    assert!(total > 0, "weights of {label} sum to zero");
    let mut r = below(rng, total);
    for (i, w) in weights.iter().enumerate() {
        if r < *w {
            return i as u64;
        }
        r -= w;
    }
    0
}

#[cfg(test)]
mod tests;
