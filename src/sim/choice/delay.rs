//! Delays and instants: a range's boundary set (its ends, the logic's constants and one either
//! side), kept per range in `Choices::spans`, and the draws biased toward it.

use super::*;

/// How many delay ranges keep their boundary set (a power of two: slots are a hash's low bits).
pub(super) const SPANS: usize = 16;

/// The slot of `lo..=hi` in `Choices::spans`.
#[inline(always)]
fn span_slot(lo: u64, hi: u64) -> usize {
    let h = (lo ^ hi.rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 60) as usize & (SPANS - 1)
}

/// A delay range's boundary set, as `delay_with_grid` reads it from `near`: the inside points
/// are `near[a..a + inside]`, and `n` points in all (with `lo`, and `hi` unless a constant's
/// neighbourhood is `hi`). `n` is at least 1 for a range; 0 marks an empty slot.
#[derive(Clone, Copy, Default)]
pub(super) struct Span {
    lo: u64,
    hi: u64,
    a: u32,
    inside: u32,
    n: u32,
}

impl Choices {
    /// A delay in `lo..=hi` milliseconds, biased toward the boundary set: `lo`, `hi`, and each
    /// constant of the logic under test and one either side of it. Half the weight goes to the
    /// boundary set and half to a uniform draw (none in the boundary-only profile).
    pub fn delay(&mut self, lo: u64, hi: u64, label: &'static str) -> u64 {
        self.delay_with_grid(lo, hi, label, self.profile.interior)
    }

    /// When an outside event happens (a producer message, a timed fault) in `lo..=hi`. In
    /// random mode exactly `delay`. In the boundary-only profile the boundary set gains
    /// `INSTANT_GRID` evenly spaced interior points: an outside event lands in a window of the
    /// host's activity (a generation, a wait) that no constant marks, so exploration still
    /// reaches the windows of long ranges.
    pub fn instant(&mut self, lo: u64, hi: u64, label: &'static str) -> u64 {
        self.delay_with_grid(lo, hi, label, INSTANT_GRID.max(self.profile.interior))
    }

    pub(super) fn delay_with_grid(
        &mut self,
        lo: u64,
        hi: u64,
        label: &'static str,
        grid: u64,
    ) -> u64 {
        if hi <= lo {
            return lo;
        }
        if self.profile.boundary_only {
            return self.delay_boundary_only(lo, hi, label, grid);
        }
        let Span { a, inside, n, .. } = self.span(lo, hi);
        let (a, inside, n) = (a as usize, inside as usize, n as usize);
        // Weights: 1 per boundary point, `n` for the uniform class, so each half is even.
        let classes = n as u64 + 1;
        let index = if let Some(v) = self.prefixed(classes, label) {
            v
        } else {
            match &mut self.source {
                Source::Random(rng) => {
                    let r = below(rng, 2 * n as u64);
                    r.min(n as u64)
                }
                // A boosted site's delay comes from its boundary set only.
                Source::Boost(b) => match b.pin.then(|| b.pinned(label, n as u64 + 1)).flatten() {
                    Some(class) => class,
                    None => below(&mut b.rng, 2 * n as u64).min(n as u64),
                },
                Source::Replay { .. } => self.next_replayed(classes, label),
            }
        };
        self.record(classes, index, label);
        let index = index as usize;
        if index == 0 {
            lo
        } else if index < n && index <= inside {
            self.near[a + index - 1]
        } else if index < n {
            // Past the inside points comes `hi` (when no constant's neighbourhood is `hi`).
            hi
        } else {
            // `choose(hi - lo + 1)`, which draws: `hi > lo`. A boosted site draws it inside its
            // focus, recorded as the same choice.
            let width = hi - lo + 1;
            if let Some(v) = self.prefixed(width, label) {
                self.record(width, v, label);
                return lo + v;
            }
            let Source::Boost(b) = &mut self.source else {
                return lo + self.draw(width, label);
            };
            let v = match b.site(label) {
                (true, f) => {
                    let w = width.div_ceil(FOCI);
                    let start = (u64::from(f) * w).min(width - 1);
                    let end = (start + w).min(width);
                    start + below(&mut b.rng, end - start)
                }
                (false, _) => below(&mut b.rng, width),
            };
            self.record(width, v, label);
            lo + v
        }
    }

    /// The boundary set of `lo..=hi` (`hi > lo`): kept for recent ranges.
    #[inline]
    fn span(&mut self, lo: u64, hi: u64) -> Span {
        let slot = span_slot(lo, hi);
        let s = self.spans[slot];
        if s.lo == lo && s.hi == hi && s.n > 0 {
            return s;
        }
        self.new_span(slot, lo, hi)
    }

    /// `span` of a range not in its slot: computed, and kept there.
    #[cold]
    #[inline(never)]
    fn new_span(&mut self, slot: usize, lo: u64, hi: u64) -> Span {
        // The boundary set is `lo`, the neighbourhoods of the constants inside `(lo, hi]`, and
        // `hi`, ascending and distinct, at most `BOUNDARY_POINTS_MAX` of them (the first ones).
        // `near` is sorted, so the inside ones are one slice of it.
        let a = self.near.partition_point(|&v| v <= lo);
        let b = self.near.partition_point(|&v| v <= hi);
        let inside = b - a;
        let hi_inside = inside > 0 && self.near[b - 1] == hi;
        let n = (1 + inside + usize::from(!hi_inside)).min(BOUNDARY_POINTS_MAX);
        // `near` has three points a constant, and `n` is at most `BOUNDARY_POINTS_MAX`.
        let span = Span {
            lo,
            hi,
            a: a as u32,
            inside: inside as u32,
            n: n as u32,
        };
        self.spans[slot] = span;
        span
    }

    /// `delay_with_grid` in the boundary-only profile (explore): the boundary set, with the
    /// grid's interior points, and no uniform class.
    #[cold]
    #[inline(never)]
    fn delay_boundary_only(&mut self, lo: u64, hi: u64, label: &'static str, grid: u64) -> u64 {
        let mut points = [0u64; BOUNDARY_POINTS_MAX];
        let mut n = 0;
        let mut push = |v: u64| {
            if v >= lo && v <= hi && n < points.len() && !points[..n].contains(&v) {
                points[n] = v;
                n += 1;
            }
        };
        push(lo);
        for &c in &self.near {
            push(c);
        }
        push(hi);
        for i in 1..=grid {
            push(lo + (hi - lo) * i / (grid + 1));
        }
        let points = &mut points[..n];
        // lo, the sorted constants' neighbourhoods, then hi are already ascending; only the grid
        // points interleave.
        if grid > 0 {
            points.sort_unstable();
        }
        let classes = n as u64;
        let index = if classes <= 1 {
            0
        } else {
            let v = match &mut self.source {
                Source::Random(rng) => below(rng, classes),
                Source::Boost(b) => below(&mut b.rng, classes),
                Source::Replay { .. } => self.next_replayed(classes, label),
            };
            self.record(classes, v, label);
            v as usize
        };
        points[index]
    }
}
