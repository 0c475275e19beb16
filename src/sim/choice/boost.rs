//! A boosted or pinned run's draw sites (`Search::Boost`, `Choices::pinned`): which sites a run
//! boosts and where their draws focus, and which class each pinned delay site keeps.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{Ratio, below};
use crate::sim::swarm::FAULT_ON;

/// A boosted run's state: the generator, the depth (how many sites it may boost) and every draw
/// site met so far with whether it is boosted, in the order met.
pub(super) struct Boost {
    pub(super) rng: ChaCha8Rng,
    pub(super) depth: u32,
    pub(super) boosted: u32,
    /// Each site met: its label, whether it is boosted, and its focus (which of `FOCI` equal
    /// parts of a delay's range its uniform draws fall in, when boosted).
    pub(super) sites: Vec<(&'static str, bool, u8)>,
    /// A pinned run (`Choices::pinned`): each delay site met is pinned, at a fair coin, to one
    /// class of its boundary set (or its uniform class), drawn once; `pins` holds each site met
    /// with that class (`u64::MAX`: not pinned).
    pub(super) pin: bool,
    pub(super) pins: Vec<(&'static str, u64)>,
    /// An extending run (`Choices::extending` and its kin): the one `chance` site whose draws
    /// come out 1 (fire) 15 times in 16 once the extension is armed, so a chain goes on.
    pub(super) extend: Option<Extend>,
    /// How many draws a `fault on` coin takes (on if any comes out on): 1 keeps the scenario's
    /// share; an anchored fresh extending run (`Choices::extending_fresh`) takes 2 or 3, so its
    /// mix has more faults on at once (a share of 1/3 becomes 5/9 or 19/27).
    pub(super) mix_tries: u32,
}

/// When an extending run's extension takes effect, and at which site.
///
/// An anchor's mutant knows its site (the fault that fired where the anchor was cut, or one
/// that fired in its run) and is armed at once, or when its window is marked again or its log
/// reaches the anchor's cut (whichever comes first: a mutated prefix may not mark the window
/// again). A fresh extending run knows no site: once armed (at the run's first window mark, or
/// at a drawn change point in its log) the first rare `chance` that comes out 1 becomes its
/// site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Extend {
    /// The site extended; `None` until a fresh run's first rare firing once armed.
    pub(super) site: Option<&'static str>,
    /// The extension is in force.
    pub(super) armed: bool,
    /// Arms at the mark of this window (`Some(None)`: of any race window).
    pub(super) on_mark: Option<Option<u8>>,
    /// Arms once the log holds this many draws.
    pub(super) at_draw: Option<usize>,
}

impl Extend {
    /// Extended from the start, at `site`.
    pub(super) fn now(site: &'static str) -> Extend {
        Extend {
            site: Some(site),
            armed: true,
            on_mark: None,
            at_draw: None,
        }
    }

    /// A window (or one of the search's own marks, `feature::search_mark`) was marked: arm if it is
    /// the one waited for; waiting for any window, only a family's race window arms.
    #[inline]
    pub(super) fn marked(&mut self, code: u8) {
        match self.on_mark {
            Some(Some(w)) if w == code => self.armed = true,
            Some(None) if crate::sim::feature::is_window(code) => self.armed = true,
            _ => {}
        }
    }

    /// Whether the `chance` at `label`, drawn with `drawn` draws in the log, is extended (arming
    /// the extension first if `drawn` reached its change point). A fresh run adopts its site
    /// in `Choices::chance`.
    #[inline]
    pub(super) fn covers(&mut self, label: &'static str, drawn: usize) -> bool {
        if !self.armed && self.at_draw.is_some_and(|at| drawn >= at) {
            self.armed = true;
        }
        self.armed
            && self
                .site
                .is_some_and(|l| std::ptr::eq(l, label) || l == label)
    }
}

/// Mixed into a pinned run's seed (`Choices::pinned`): its stream is not a boosted one's.
pub(super) const PIN_STREAM: u64 = 0x7069_6e5f_7374_7265;

/// Mixed into an extending run's seed (`Choices::extending`).
pub(super) const EXTEND_STREAM: u64 = 0x6578_7465_6e64_696e;

/// Mixed (with `EXTEND_STREAM`) into a fresh extending run's seed (`Choices::extending_fresh`).
pub(super) const FRESH_STREAM: u64 = 0x6672_6573_685f_6578;

/// A boosted delay site draws its uniform class from one of this many equal parts of its range:
/// the events it times cluster, so two of them meet a window together more often.
pub(super) const FOCI: u64 = 8;

impl Boost {
    /// A `chance` at `ratio` (strictly between 0 and 1) at `label`, past an extending run's own
    /// site: a `fault on` coin drawn `mix_tries` times (on if any draw is); at a boosted site a
    /// fair coin, or at the other half of the boosted sites the rare outcome 15 times in 16 (so
    /// it can come out many times in a row); else the uniform draw.
    pub(super) fn chance(&mut self, ratio: Ratio, label: &'static str) -> u64 {
        let draw = |rng: &mut ChaCha8Rng| u64::from(below(rng, ratio.den) >= ratio.den - ratio.num);
        if self.mix_tries > 1 && label == FAULT_ON {
            return (0..self.mix_tries).fold(0, |on, _| on | draw(&mut self.rng));
        }
        match self.site(label) {
            (true, focus) if u64::from(focus) < FOCI / 2 => below(&mut self.rng, 2),
            (true, _) => {
                let rare = u64::from(2 * ratio.num < ratio.den);
                let common = below(&mut self.rng, 16) != 0;
                if common { rare } else { 1 - rare }
            }
            (false, _) => draw(&mut self.rng),
        }
    }

    /// The class a pinned run's delay site `label` draws among `classes` (`None`: unpinned).
    pub(super) fn pinned(&mut self, label: &'static str, classes: u64) -> Option<u64> {
        let pin = match self
            .pins
            .iter()
            .find(|(l, _)| std::ptr::eq(*l, label) || *l == label)
        {
            Some((_, p)) => *p,
            None => {
                let p = if below(&mut self.rng, 2) == 1 {
                    self.rng.next_u64()
                } else {
                    u64::MAX
                };
                self.pins.push((label, p));
                p
            }
        };
        (pin != u64::MAX).then(|| pin % classes)
    }

    /// Whether the site `label` is boosted, and its focus; a site met for the first time is
    /// boosted with a fair coin while fewer than `depth` are.
    #[inline]
    pub(super) fn site(&mut self, label: &'static str) -> (bool, u8) {
        if let Some((_, b, f)) =
            (self.sites.iter()).find(|(l, _, _)| std::ptr::eq(*l, label) || *l == label)
        {
            return (*b, *f);
        }
        // The swarm mix's own draws (which faults a seed switches on, at what rate, which
        // producers) are left uniform: the depth goes to the run's decisions.
        let plan = matches!(label, "fault on" | "fault rate" | "producer kinds");
        let b = !plan && self.boosted < self.depth && below(&mut self.rng, 2) == 1;
        let f = if b {
            below(&mut self.rng, FOCI) as u8
        } else {
            0
        };
        self.boosted += u32::from(b);
        self.sites.push((label, b, f));
        (b, f)
    }
}
