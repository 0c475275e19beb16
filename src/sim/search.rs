//! How a run's seed becomes its choice stream: the search strategy.
//!
//! `Swarm` is wakesim's uniform swarm sampling, the meaning `--seed N` has always had: the
//! choices are drawn from `ChaCha8Rng::seed_from_u64(N)` as each site asks (every snapshot,
//! golden trace hash and replay line rests on it, and a run whose search is `Swarm` is that run,
//! byte for byte).
//!
//! `Boost` is a guided search over the same choice stream, for bugs that need rare draws to
//! coincide. Uniform sampling pays the product of the rare draws' probabilities: a fault that
//! fires at 1 opportunity in 12, twice, inside a window reached by 1 seed in 5, is a seed in
//! 720. A boosted run picks, as each draw site (a choice's label) is first met, whether that site
//! is boosted, for at most `depth` sites in all (PCT's bug depth, Burckhardt et al., ASPLOS
//! 2010: a bug of depth d needs d ordering decisions to line up, and a run that makes d of its
//! decisions extreme meets it with a probability that does not shrink with the product of their
//! rates). The swarm mix's own draws (which faults are on, their rates, the producer kinds) are
//! never boosted. At a boosted site a `chance` is a fair coin, or, at half the boosted sites,
//! comes out its rare way 15 times in 16 (so a rare fault can fire many times in a row), and a
//! delay's or instant's uniform draws fall in one eighth of its range (its focus), so the events
//! it times cluster. Every other draw is the uniform one. Which sites a run boosts is drawn too, so one seed range tries
//! many combinations: the strategy is a pure function of (scenario, seed, depth), its stream
//! seeded apart from swarm's (`BOOST_STREAM`), so `--search boost --seed N` is a different run
//! from `--seed N`, and replays as exactly itself.
//!
//! `Guided` is a portfolio ([`portfolio`]): per seed, drawn from the seed alone, swarm's own run
//! of it, a boost at a cycled depth, or a pinned run (`Choices::pinned`, swarm testing of the
//! delays: each site pinned, at a fair coin, to one corner of its range). `Coverage` adds
//! feedback ([`Guide`]): in blocks of `COVERAGE_BLOCK` seeds, half the seeds mutate the choices
//! of earlier runs of the block that reached a new coverage feature ([`features`]). `Anchored`
//! is feedback with positions ([`anchored_features`]): a window mark carries the length of the
//! choice log when it came (`Choices::mark`), a fault firing is a place in the log, and a run
//! that reaches a feature keeps its choices up to that point as an anchor, which later seeds
//! replay (one to three choices redrawn) before drawing afresh. The rare-bug suite's figures
//! for each, and why none is the default, are in docs/guide/search.md.
//!
//! A boosted run records its draws like any other run (value 0 still the simplest option, a
//! boosted coin recorded as the `chance` it answers), so its recorded choices replay, shrink
//! and save as regressions without the search.

use std::fmt;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::sim::choice::{Choice, Choices, Profile, below};
use crate::sim::feature::{anchored_features, features, window_of};
use crate::sim::record::Window;
use crate::sim::swarm::Mix;

/// The search strategy that turns a seed into a choice stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Search {
    /// Uniform swarm sampling: the seed's own stream (the default).
    #[default]
    Swarm,
    /// Rare-draw boosting at up to `depth` draw sites per run.
    Boost { depth: u32 },
    /// The portfolio: each seed swarm's, a boost's or a pinned run (`portfolio`).
    Guided,
    /// Coverage feedback over blocks of `COVERAGE_BLOCK` seeds ([`Guide`]).
    Coverage,
    /// Anchored feedback ([`Guide`] in its anchored mode): a run that reaches a new feature is
    /// kept cut just after the point it reached it, and later seeds of the block replay that
    /// prefix and draw only the rest afresh.
    Anchored,
}

/// The depth `boost` has when none is given.
pub const BOOST_DEPTH_DEFAULT: u32 = 3;
/// The largest depth accepted (a run rarely has more draw sites than this).
pub const BOOST_DEPTH_MAX: u32 = 16;

/// Mixed into a boosted run's seed so that its stream is not swarm's stream of any seed.
pub const BOOST_STREAM: u64 = 0x6f62_7374_5f77_616b;

impl Search {
    /// `swarm`, `boost` or `boost:D` (D in 1..=16); the error says what is accepted.
    pub fn parse(s: &str) -> Result<Search, String> {
        let s = s.trim();
        if s == "swarm" {
            return Ok(Search::Swarm);
        }
        if s == "guided" {
            return Ok(Search::Guided);
        }
        if s == "coverage" {
            return Ok(Search::Coverage);
        }
        if s == "anchored" {
            return Ok(Search::Anchored);
        }
        if s == "boost" {
            return Ok(Search::Boost {
                depth: BOOST_DEPTH_DEFAULT,
            });
        }
        if let Some(d) = s.strip_prefix("boost:") {
            return match d.parse::<u32>() {
                Ok(depth) if (1..=BOOST_DEPTH_MAX).contains(&depth) => Ok(Search::Boost { depth }),
                _ => Err(format!(
                    "`{s}`: a boost's depth is an integer from 1 to {BOOST_DEPTH_MAX}"
                )),
            };
        }
        Err(format!(
            "`{s}` is not a search: `swarm` (uniform), `guided` (a portfolio of swarm, boosted and pinned seeds), `coverage` (coverage feedback over blocks of {COVERAGE_BLOCK} seeds), `anchored` (feedback that keeps a run's choices up to the point it reached a new feature and redraws the rest), `boost` or `boost:D` (rare draws boosted at up to D sites a run, D from 1 to {BOOST_DEPTH_MAX}; {BOOST_DEPTH_DEFAULT} when left out)"
        ))
    }

    /// Whether a seed is planned from its block's earlier runs (`coverage`, `anchored`).
    pub fn is_fed_back(self) -> bool {
        matches!(self, Search::Coverage | Search::Anchored)
    }

    /// Whether this is the default, uniform swarm.
    pub fn is_swarm(self) -> bool {
        self == Search::Swarm
    }
}

impl fmt::Display for Search {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Search::Swarm => f.write_str("swarm"),
            Search::Boost { depth } => write!(f, "boost:{depth}"),
            Search::Guided => f.write_str("guided"),
            Search::Coverage => f.write_str("coverage"),
            Search::Anchored => f.write_str("anchored"),
        }
    }
}

/// The seed of a boosted run's generator: the run's seed mixed with `BOOST_STREAM` (SplitMix64's
/// finaliser, so neighbouring seeds are unrelated streams).
pub fn boost_seed(seed: u64) -> u64 {
    let mut z = seed ^ BOOST_STREAM;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The depths the portfolio's boosted seeds cycle through (`portfolio`): a bug of one of these
/// depths meets its depth within a few boosted seeds.
const PORTFOLIO_DEPTHS: [u32; 4] = [2, 3, 4, 6];
/// Mixed into a guided seed's own generator (which strategy, which parent, which mutation).
const GUIDE_STREAM: u64 = 0x6775_6964_655f_7773;

/// The generator that plans seed `seed` of a guided or coverage search.
fn planner(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(boost_seed(seed ^ GUIDE_STREAM))
}

/// A boost at one of `PORTFOLIO_DEPTHS`.
fn cycled_boost(rng: &mut ChaCha8Rng) -> Search {
    Search::Boost {
        depth: PORTFOLIO_DEPTHS[below(rng, PORTFOLIO_DEPTHS.len() as u64) as usize],
    }
}

/// The `guided` search's stream for `seed`: a portfolio, one strategy per seed drawn from the
/// seed alone. A third of the seeds are swarm's own seed (the same run as `--search swarm
/// --seed N`, so a guided range finds at least what uniform sampling finds in a third of it),
/// a third are boosted at a depth cycled over `PORTFOLIO_DEPTHS` (a rare draw repeated or
/// several at once), a third are pinned (`Choices::pinned`: two events timed by different sites
/// meeting at the same corner). The rare-bug suite shows why no single one of them is enough.
pub fn portfolio(seed: u64) -> Choices {
    let mut rng = planner(seed);
    match below(&mut rng, 3) {
        0 => Choices::random(seed, Profile::default()),
        1 => Choices::searched(seed, cycled_boost(&mut rng), Profile::default()),
        _ => Choices::pinned(seed),
    }
}

/// Seeds a coverage block holds. Seed N of the `coverage` search is planned from the runs of
/// the seeds before it in its block (`N - N % COVERAGE_BLOCK .. N`), in order, and from nothing
/// else: a replay, a thread's chunk or a shard that starts at N first runs those (at most
/// `COVERAGE_BLOCK - 1` runs of microseconds each), so a coverage seed is a pure function of
/// the scenario and the seed whatever the threads and shards.
pub const COVERAGE_BLOCK: u64 = 1024;
/// At most this many runs a coverage block keeps to mutate (the oldest is replaced past it).
pub const COVERAGE_CORPUS_MAX: usize = 256;

/// The first seed of `seed`'s coverage block.
pub fn coverage_block_start(seed: u64) -> u64 {
    seed - seed % COVERAGE_BLOCK
}

/// A coverage or anchored block's state: the coverage features its runs reached so far (each
/// with how many runs reached it) and the runs that reached a new one (coverage), or their
/// choices up to where they reached it (anchored), which later seeds mutate.
///
/// Plans are AFL's loop over wakesim's choice stream: half the seeds (and every seed until a
/// run is kept) are the portfolio's (`portfolio`); the others take a kept run's choices and
/// either cut them at a random point (its prefix replayed, the rest drawn afresh) or redraw one
/// to four of its choices (the rest replayed while the model asks for the same sites and
/// bounds, then drawn afresh), the fresh draws swarm's or a boost's. A kept prefix keeps
/// whatever its run reached (a wait that timed out, a fault that fired five times) and the
/// fresh suffix tries what can follow it.
#[derive(Clone, Debug)]
pub struct Guide {
    /// `Coverage` or `Anchored`: how kept runs are mutated.
    search: Search,
    start: u64,
    seen: std::collections::BTreeMap<u64, u32>,
    /// Each kept run: its choices and its features.
    corpus: Vec<(Vec<Choice>, Vec<u64>)>,
    kept: u64,
    features: Vec<u64>,
    /// Anchored: each feature first reached in the block with the choices its run had drawn
    /// when it reached it (`anchored_features`).
    anchors: Vec<Anchor>,
    positioned: Vec<(u64, Option<u32>)>,
    /// The last plan `choices` made: the anchor it mutates and its prefix's length.
    last: std::cell::Cell<(Option<usize>, u32)>,
}

/// An anchored block's kept prefix: the choices a run had drawn when it reached `feature`,
/// which no earlier run of the block had reached.
#[derive(Clone, Debug)]
struct Anchor {
    prefix: Vec<Choice>,
    feature: u64,
    picks: u32,
    /// The opportunity faults its run drew at (`drawn_faults`): the sites its mutants extend.
    sites: std::sync::Arc<[&'static str]>,
    /// The race window its feature names (`feature::window_of`), where an extension arms.
    window: Option<u8>,
}

/// The first this many runs of a block that reach a feature, past the prefix they replayed,
/// each anchor it: the first run to reach a window is often one whose earlier draws leave
/// nothing for the rest of the bug (its jobs all started, its faults off), so one anchor a
/// feature would put every mutant on it.
pub const ANCHORS_PER_FEATURE: u32 = 16;
/// At most this many anchors a block keeps (the oldest is replaced past it).
pub const ANCHORS_MAX: usize = 512;

impl Guide {
    /// The state before the first seed of the block starting at `start`, for `search`
    /// (`Coverage` or `Anchored`; any other plans as `Coverage`).
    pub fn new(search: Search, start: u64) -> Guide {
        Guide {
            search: if search == Search::Anchored {
                Search::Anchored
            } else {
                Search::Coverage
            },
            start,
            seen: std::collections::BTreeMap::new(),
            corpus: Vec::new(),
            kept: 0,
            features: Vec::new(),
            anchors: Vec::new(),
            positioned: Vec::new(),
            last: std::cell::Cell::new((None, 0)),
        }
    }

    /// The search this block plans for.
    pub fn search(&self) -> Search {
        self.search
    }

    /// The first seed of this block.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// How many runs (coverage) or prefixes (anchored) the block keeps to mutate.
    pub fn corpus_len(&self) -> usize {
        match self.search {
            Search::Anchored => self.anchors.len(),
            _ => self.corpus.len(),
        }
    }

    /// The choice stream of `seed` (a seed of this block), given the runs observed so far.
    pub fn choices(&self, seed: u64) -> Choices {
        if self.search == Search::Anchored {
            return self.anchored_choices(seed);
        }
        let mut rng = planner(seed ^ COVERAGE_STREAM);
        if self.corpus.is_empty() || below(&mut rng, 2) == 0 {
            return portfolio(seed).keeping_log();
        }
        // Half the time one of the four runs kept last (what the block reached most recently
        // is what it has mutated least), else any kept run.
        let n = self.corpus.len() as u64;
        let pick = if below(&mut rng, 2) == 0 {
            n - 1 - below(&mut rng, n.min(4))
        } else {
            below(&mut rng, n)
        };
        let parent = &self.corpus[pick as usize].0;
        let prefix = if below(&mut rng, 2) == 0 {
            let cut = below(&mut rng, parent.len() as u64 + 1) as usize;
            parent[..cut].to_vec()
        } else {
            let mut p = parent.clone();
            for _ in 0..1 + below(&mut rng, 4) {
                let i = below(&mut rng, p.len() as u64) as usize;
                p[i].value = below(&mut rng, p[i].bound);
            }
            p
        };
        let suffix = if below(&mut rng, 2) == 0 {
            Search::Swarm
        } else {
            cycled_boost(&mut rng)
        };
        Choices::spliced(prefix, suffix, rng.next_u64())
    }

    /// An anchored seed: a fresh run (`anchored_fresh`) half the time and until the block has
    /// an anchor; else a mutant of an anchor, drawn with a weight that falls as its feature is
    /// reached again (each of its mutants reaches it) and as it is picked.
    ///
    /// Most mutants *extend*: a fault site fires 15 times in 16 after the anchor, every other
    /// draw uniform. An anchor cut just after a coin came out 1 (a fault fired) extends that
    /// site at half its picks, one to three earlier choices of its prefix redrawn (replayed
    /// whole, such a mutant found the suite's bugs two to ten times more slowly than redrawn:
    /// the anchor's own run already tried what follows its exact timings). Any other anchor
    /// whose run drew at an opportunity fault extends one of those faults, drawn evenly: its
    /// prefix (at three picks in four with one to three choices redrawn) is replayed, and the extension arms at the next mark of the
    /// anchor's window or at the anchor's cut, whichever comes first. A redrawn choice makes
    /// the run leave the prefix soon after it, so the window's first half (a wait, a job
    /// outliving it, an input landing) is tried again with other timings, and the fault then
    /// fires in a row where the window left the session. An anchor whose run met no fault
    /// draws its rest afresh after one to three redrawn choices: swarm's, a boost's or a
    /// pinned run's.
    fn anchored_choices(&self, seed: u64) -> Choices {
        let mut rng = planner(seed ^ ANCHOR_STREAM);
        self.last.set((None, 0));
        if self.anchors.is_empty() || below(&mut rng, 2) == 0 {
            return anchored_fresh(seed);
        }
        let weight = |a: &Anchor| -> u64 {
            let n = self.seen.get(&a.feature).copied().unwrap_or(1).max(1);
            (1u64 << 40) / u64::from(n) / u64::from(1 + a.picks)
        };
        let total: u64 = self.anchors.iter().map(weight).sum();
        let mut r = below(&mut rng, total.max(1));
        let mut pick = self.anchors.len() - 1;
        for (i, a) in self.anchors.iter().enumerate() {
            let w = weight(a);
            if r < w {
                pick = i;
                break;
            }
            r -= w;
        }
        let anchor = &self.anchors[pick];
        let mut prefix = anchor.prefix.clone();
        self.last.set((Some(pick), prefix.len() as u32));
        if let Some(last) = prefix.last().filter(|c| c.bound == 2 && c.value == 1)
            && below(&mut rng, 2) == 0
        {
            let label = last.label;
            let before = prefix.len() - 1;
            redraw(&mut rng, &mut prefix[..before]);
            return Choices::extending(prefix, label, rng.next_u64());
        }
        if !anchor.sites.is_empty() {
            let label = anchor.sites[below(&mut rng, anchor.sites.len() as u64) as usize];
            let at = prefix.len();
            if below(&mut rng, 4) != 0 {
                redraw(&mut rng, &mut prefix);
            }
            return Choices::extending_from(prefix, label, anchor.window, at, rng.next_u64());
        }
        redraw(&mut rng, &mut prefix);
        let s = rng.next_u64();
        match below(&mut rng, 4) {
            0 | 1 => Choices::random(s, Profile::default()).after(prefix),
            2 => Choices::spliced(prefix, cycled_boost(&mut rng), s),
            _ => Choices::pinned(s).after(prefix),
        }
    }

    /// Account a finished run of this block: its coverage features (`features`), and its
    /// choices, kept when it reached a feature no earlier run of the block did (anchored: cut
    /// where it reached each such feature, from `marks_at` and its log).
    pub fn observe(
        &mut self,
        marks: &[(Window, u32)],
        marks_at: &[(u8, u32)],
        mix: &Mix,
        requests: u32,
        log: Vec<Choice>,
    ) {
        if self.search == Search::Anchored {
            let mut f = std::mem::take(&mut self.positioned);
            anchored_features(marks_at, mix, requests, &log, &mut f);
            let (pick, inherited) = self.last.replace((None, 0));
            if let Some(a) = pick.and_then(|i| self.anchors.get_mut(i)) {
                a.picks += 1;
            }
            let mut sites: Option<std::sync::Arc<[&'static str]>> = None;
            // One anchor a cut: a run that reaches several new features at one point (a window's
            // mark is its count class, its pairs and its faults at once) keeps that prefix once,
            // under the first of them, so it is not picked as often as it has features.
            let mut cuts: Vec<u32> = Vec::new();
            for &(x, at) in &f {
                let n = self.seen.entry(x).or_insert(0);
                *n = n.saturating_add(1);
                let new = *n <= ANCHORS_PER_FEATURE;
                let Some(at) = at.filter(|&at| new && at > inherited) else {
                    continue;
                };
                if cuts.contains(&at) {
                    continue;
                }
                cuts.push(at);
                let sites = sites.get_or_insert_with(|| drawn_faults(mix, &log)).clone();
                let a = Anchor {
                    prefix: log[..(at as usize).min(log.len())].to_vec(),
                    feature: x,
                    picks: 0,
                    sites,
                    window: window_of(x, mix),
                };
                if self.anchors.len() < ANCHORS_MAX {
                    self.anchors.push(a);
                } else {
                    let i = (self.kept % ANCHORS_MAX as u64) as usize;
                    self.anchors[i] = a;
                }
                self.kept += 1;
            }
            self.positioned = f;
            return;
        }
        let mut f = std::mem::take(&mut self.features);
        features(marks, mix, requests, &mut f);
        let mut new = false;
        for &x in &f {
            let n = self.seen.entry(x).or_insert(0);
            new |= *n == 0;
            *n = n.saturating_add(1);
        }
        if new && !log.is_empty() {
            let entry = (log, f.clone());
            if self.corpus.len() < COVERAGE_CORPUS_MAX {
                self.corpus.push(entry);
            } else {
                let i = (self.kept % COVERAGE_CORPUS_MAX as u64) as usize;
                self.corpus[i] = entry;
            }
            self.kept += 1;
        }
        self.features = f;
    }
}

/// Mixed into an anchored seed's planner.
const ANCHOR_STREAM: u64 = 0x616e_6368_6f72_6564;

/// Mixed into the planner of an anchored fresh run.
const FRESH_PLAN: u64 = 0x6672_6573_685f_706c;

/// A fresh change-point run arms its extension at a draw drawn below this (the first few model
/// replies and timings of a run).
const CHANGE_POINTS: u64 = 30;

/// The anchored search's fresh runs, one strategy per seed drawn from the seed alone: two in
/// five extend the first rare fault that fires after the run's first window mark, one in five
/// the first that fires after an early change point (`Choices::extending_fresh`, whose mix has
/// more faults on than the scenario's shares give), one in five is swarm's own run of the seed
/// and one in five a pinned run (`Choices::pinned`). The extending runs reach a window and a
/// fault firing in a row after it, the shape of a rare coincidence, at the rate of the window
/// alone; swarm and pinned keep what uniform sampling and corner timings find.
fn anchored_fresh(seed: u64) -> Choices {
    let mut rng = planner(seed ^ FRESH_PLAN);
    match below(&mut rng, 5) {
        0 | 1 => Choices::extending_fresh(seed, None),
        2 => Choices::extending_fresh(seed, Some(below(&mut rng, CHANGE_POINTS) as usize)),
        3 => Choices::random(seed, Profile::default()).keeping_log(),
        _ => Choices::pinned(seed),
    }
}

/// Redraw one to three of `choices`, each uniformly within its bound.
fn redraw(rng: &mut ChaCha8Rng, choices: &mut [Choice]) {
    if choices.is_empty() {
        return;
    }
    for _ in 0..1 + below(rng, 3) {
        let i = below(rng, choices.len() as u64) as usize;
        choices[i].value = below(rng, choices[i].bound);
    }
}

/// The opportunity faults switched on in `mix` whose site `log` drew at, in the order first
/// drawn: what an anchor of the run may extend.
fn drawn_faults(mix: &Mix, log: &[Choice]) -> std::sync::Arc<[&'static str]> {
    let mut sites: Vec<&'static str> = Vec::new();
    for c in log {
        if c.bound == 2
            && !sites.contains(&c.label)
            && mix.fired.iter().any(|(name, _)| *name == c.label)
        {
            sites.push(c.label);
        }
    }
    sites.into()
}

/// Mixed into a coverage seed's planner, so its choice of portfolio or mutant is not the
/// portfolio's own choice of strategy.
const COVERAGE_STREAM: u64 = 0x636f_7665_7261_6765;

#[cfg(test)]
mod tests;
