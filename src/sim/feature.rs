//! What a run reached, as the feedback searches (`sim::search::Guide`) count it: its
//! *features*. `features` names them for `coverage` (a window with its count class, an
//! opportunity fault with how often it fired, two windows in one run, a window with a fault, the
//! class of model requests made); `anchored_features` gives each the place in the run's choice
//! log where it was reached, and adds the runs of a fault firing in a row, so a chain of rare
//! draws is reached, and kept, one link at a time.

use crate::sim::choice::Choice;
use crate::sim::record::Window;
use crate::sim::swarm::Mix;

/// Points the anchored search marks besides the family's race windows (`Choices::search_mark`,
/// which a family calls where it emits the observation): another conversation's work started
/// (an `Ev::Work` start of a conversation other than this one, 0), where isolation races
/// begin...
pub const FOREIGN_WORK: u8 = 0xF0;
/// ...and the session blocked in its idle wait with work of its own pending (an `Ev::Waiting`
/// with `own > 0`), where a wait's races begin. Window codes are below
/// `limits::WINDOW_CODES_MAX`, so neither is a window's. Each counts as a window's mark for its
/// first count class and for where an extension arms, not for pairs, faults or the window before
/// a run of firings.
pub const WAIT_FOR_WORK: u8 = 0xF1;

/// Whether a mark's code is a family's race window (not one of the search's own marks).
pub fn is_window(code: u8) -> bool {
    usize::from(code) < crate::limits::WINDOW_CODES_MAX
}

/// A feature's number: its kind (1 a window's count class, 2 a fault's firing class, 3 two
/// windows, 4 a window with a fault, 6 the requests' class, 7 and 8 a run of firings), and two
/// values.
fn key(kind: u64, a: u64, b: u64) -> u64 {
    kind << 56 | (a & 0xff_ffff) << 32 | (b & 0xffff_ffff)
}

/// The features of a run as `features` names them, each with where in its choice log the run
/// reached it (`None`: nowhere in particular), into `out` (cleared first): a window's count
/// class where its mark of that count came (`marks_at`), an opportunity fault's firing class
/// just after the firing of that count (a `chance` at the fault's site that came out 1), two
/// windows where the later first mark came, a window with a fault where the later of the
/// window's first mark and the fault's first firing came (a timed fault, on from the start,
/// counts from 0), the runs of a fault firing in a row (`run_features`), and the requests'
/// class nowhere.
pub fn anchored_features(
    marks_at: &[(u8, u32)],
    mix: &Mix,
    requests: u32,
    log: &[Choice],
    out: &mut Vec<(u64, Option<u32>)>,
) {
    out.clear();
    out.push((key(6, bucket(requests), 0), None));
    let mut count = [0u32; 256];
    let mut first = [u32::MAX; 256];
    for &(code, at) in marks_at {
        let c = &mut count[usize::from(code)];
        *c += 1;
        if first[usize::from(code)] == u32::MAX {
            first[usize::from(code)] = at;
        }
        // A count class is reached at its lowest count: 1, 2, 3, 4, 8, 16, 32 (a search mark's
        // first only: a job or a wait is common, and each class would be an anchor to pick).
        if matches!(*c, 1 | 2 | 3 | 4 | 8 | 16 | 32) && (is_window(code) || *c == 1) {
            out.push((key(1, u64::from(code), bucket(*c)), Some(at)));
        }
    }
    let reached: Vec<u8> = (0..=255u8)
        .filter(|&c| first[usize::from(c)] != u32::MAX && is_window(c))
        .collect();
    for (i, &w) in reached.iter().enumerate() {
        for &v in &reached[i + 1..] {
            let at = first[usize::from(w)].max(first[usize::from(v)]);
            out.push((key(3, u64::from(w), u64::from(v)), Some(at)));
        }
    }
    let mut fired_at: Vec<(&str, u32)> = Vec::with_capacity(mix.fired.len());
    for (name, n) in &mix.fired {
        let code = name_code(name);
        if *n == 0 {
            out.push((key(2, code, 0), None));
            continue;
        }
        let mut c = 0u32;
        for (i, ch) in log.iter().enumerate() {
            if ch.bound == 2 && ch.value == 1 && ch.label == *name {
                c += 1;
                let at = i as u32 + 1;
                if c == 1 {
                    fired_at.push((name, at));
                }
                if matches!(c, 1 | 2 | 3 | 4 | 8 | 16 | 32) {
                    out.push((key(2, code, bucket(c)), Some(at)));
                }
            }
        }
    }
    run_features(marks_at, mix, log, out);
    for (name, _) in &mix.faults {
        let fired = mix.fired.iter().find(|(f, _)| f == name).map(|(_, n)| *n);
        let from = match fired {
            Some(0) => continue,
            // Opportunity faults: from their first firing (at the end if the log has none).
            Some(_) => fired_at
                .iter()
                .find(|(f, _)| f == name)
                .map_or(log.len() as u32, |(_, at)| *at),
            // Timed faults: on from the start.
            None => 0,
        };
        for &w in &reached {
            out.push((
                key(4, name_code(name), u64::from(w)),
                Some(from.max(first[usize::from(w)])),
            ));
        }
    }
}

/// The longest run an anchored feature tells apart: an opportunity fault firing this many times
/// in a row (or more) is one feature.
pub const RUN_MAX: u32 = 8;

/// Runs of an opportunity fault, into `out`: each length from 1 to `RUN_MAX` that a run of
/// firings in a row at the fault's site reached (a draw at the site that did not fire ends the
/// run), where it reached it, alone and with the window last marked before the run began (or
/// none). A chain (a fault firing at five replies running, after a wait timed out) is then
/// reached one link at a time: the run that makes four in a row is kept, and its mutants try
/// the fifth.
fn run_features(
    marks_at: &[(u8, u32)],
    mix: &Mix,
    log: &[Choice],
    out: &mut Vec<(u64, Option<u32>)>,
) {
    for (name, n) in &mix.fired {
        if *n == 0 {
            continue;
        }
        let code = name_code(name);
        let from = out.len();
        let mut run = 0u32;
        // The window last marked so far, and the one last marked before the current run began
        // (256: none).
        let (mut last, mut before) = (256u64, 256u64);
        let mut mark = 0usize;
        for (i, ch) in log.iter().enumerate() {
            while mark < marks_at.len() && marks_at[mark].1 as usize <= i {
                if is_window(marks_at[mark].0) {
                    last = u64::from(marks_at[mark].0);
                }
                mark += 1;
            }
            if ch.bound != 2 || ch.label != *name {
                continue;
            }
            if ch.value == 0 {
                run = 0;
                continue;
            }
            if run == 0 {
                before = last;
            }
            run += 1;
            if run <= RUN_MAX {
                let at = Some(i as u32 + 1);
                for k in [
                    key(7, code, u64::from(run)),
                    key(8, code ^ (before << 12), u64::from(run)),
                ] {
                    // Each where the run first reached it.
                    if !out[from..].iter().any(|&(x, _)| x == k) {
                        out.push((k, at));
                    }
                }
            }
        }
    }
}

/// The race window an anchored feature names, if it names one: a window's count class, the
/// later of two windows (as `anchored_features` keys a pair: the higher code), a window with a
/// fault, the window marked before a run of firings. The anchored search arms a mutant's
/// extension at that window's next mark.
pub fn window_of(feature: u64, mix: &Mix) -> Option<u8> {
    let (kind, a, b) = (
        feature >> 56,
        (feature >> 32) & 0xff_ffff,
        feature & 0xffff_ffff,
    );
    match kind {
        1 => u8::try_from(a).ok(),
        3 | 4 => u8::try_from(b).ok(),
        // `code ^ before << 12`: the fault's own code tells `before` apart (256: none).
        8 => mix.fired.iter().find_map(|(name, _)| {
            let d = a ^ name_code(name);
            (d & 0xfff == 0)
                .then(|| u8::try_from(d >> 12).ok())
                .flatten()
        }),
        _ => None,
    }
}

/// AFL's count classes: 0, 1, 2, 3, 4 to 7, 8 to 15, 16 to 31, 32 and more.
fn bucket(n: u32) -> u64 {
    match n {
        0..=3 => u64::from(n),
        4..=7 => 4,
        8..=15 => 5,
        16..=31 => 6,
        _ => 7,
    }
}

/// A fault's name as a stable number (FNV-1a, 24 bits).
fn name_code(name: &str) -> u64 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    u64::from(h & 0x00ff_ffff)
}

/// The coverage features of a run, into `out` (cleared first): each race window reached with
/// its count class, each opportunity fault with how often it fired (class), each pair of
/// windows reached together, each window with each fault that fired (or, timed, was on) in the
/// same run, and the class of the model requests made.
pub fn features(marks: &[(Window, u32)], mix: &Mix, requests: u32, out: &mut Vec<u64>) {
    out.clear();
    out.push(key(6, bucket(requests), 0));
    for (w, n) in marks {
        out.push(key(1, u64::from(w.code), bucket(*n)));
        for (v, _) in marks {
            if v.code > w.code {
                out.push(key(3, u64::from(w.code), u64::from(v.code)));
            }
        }
    }
    for (name, n) in &mix.fired {
        out.push(key(2, name_code(name), bucket(*n)));
    }
    for (name, _) in &mix.faults {
        let fired = mix.fired.iter().find(|(f, _)| f == name).map(|(_, n)| *n);
        if fired == Some(0) {
            continue;
        }
        for (w, _) in marks {
            out.push(key(4, name_code(name), u64::from(w.code)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A coin drawn at `label` that came out `value`.
    fn coin(label: &'static str, value: u64) -> Choice {
        Choice {
            bound: 2,
            value,
            label,
        }
    }

    /// A mix with `tool_calls` on at 1/2, fired `fired` times.
    fn tool_calls_mix(fired: u32) -> Mix {
        Mix {
            faults: vec![("tool_calls", crate::sim::choice::Ratio::new(1, 2))],
            producers: Vec::new(),
            fired: vec![("tool_calls", fired)],
        }
    }

    /// Features name what a run reached: a window's count class, a fault's firings, windows
    /// together, a window with a fault that fired or, timed, was on; a fault on that never
    /// fired adds no window pair.
    #[test]
    fn features_tell_apart_what_runs_reached() {
        const A: Window = Window::new(1, "a", "");
        const B: Window = Window::new(2, "b", "");
        let f = |marks: &[(Window, u32)], fired: u32| {
            let mut out = Vec::new();
            features(marks, &tool_calls_mix(fired), 3, &mut out);
            out.sort_unstable();
            out
        };
        let one = f(&[(A, 1)], 0);
        assert_eq!(
            one.len(),
            3,
            "requests, window a, tool_calls fired 0: {one:x?}"
        );
        assert_ne!(f(&[(A, 1)], 0), f(&[(A, 5)], 0), "count classes differ");
        assert_ne!(f(&[(A, 1)], 1), f(&[(A, 1)], 5), "firing classes differ");
        assert_eq!(
            f(&[(A, 1), (B, 1)], 1).len(),
            7,
            "with the pair and a fault per window"
        );
    }

    /// Anchored features carry where the run reached them: a window's count class at the mark
    /// of that count, a fault's firing class just after that firing, a pair of windows at the
    /// later first mark, a window with a fault at the later of the two, a run of firings at
    /// each of its lengths, alone and with the window marked before it began; requests nowhere.
    #[test]
    fn anchored_features_are_placed_where_the_run_reached_them() {
        let mix = tool_calls_mix(2);
        let c = coin;
        let mut log = vec![c("x", 1); 30];
        log[4] = c("tool_calls", 1);
        log[9] = c("tool_calls", 0);
        log[15] = c("tool_calls", 1);
        let mut out = Vec::new();
        anchored_features(&[(3, 10), (3, 12), (5, 20)], &mix, 7, &log, &mut out);
        let tc = name_code("tool_calls");
        let want = [
            (key(6, bucket(7), 0), None),
            (key(1, 3, 1), Some(10)),
            (key(1, 3, 2), Some(12)),
            (key(1, 5, 1), Some(20)),
            (key(3, 3, 5), Some(20)),
            (key(2, tc, 1), Some(5)),
            (key(2, tc, 2), Some(16)),
            (key(7, tc, 1), Some(5)),
            (key(8, tc ^ 256 << 12, 1), Some(5)),
            (key(8, tc ^ 3 << 12, 1), Some(16)),
            (key(4, tc, 3), Some(10)),
            (key(4, tc, 5), Some(20)),
        ];
        assert_eq!(out, want);
    }

    /// Another conversation's work starting is a mark with its first count class, where an
    /// extension arms, but pairs with no window, names no window with a fault and is not the
    /// window before a run of firings.
    #[test]
    fn foreign_work_is_a_mark_but_no_window() {
        let mix = tool_calls_mix(1);
        let c = coin;
        let mut log = vec![c("x", 1); 20];
        log[15] = c("tool_calls", 1);
        let mut out = Vec::new();
        let marks = [(3, 10), (FOREIGN_WORK, 12), (FOREIGN_WORK, 14)];
        anchored_features(&marks, &mix, 7, &log, &mut out);
        let tc = name_code("tool_calls");
        let fw = u64::from(FOREIGN_WORK);
        assert!(out.contains(&(key(1, fw, 1), Some(12))));
        assert!(
            !out.contains(&(key(1, fw, 2), Some(14))),
            "only its first count class"
        );
        assert!(
            out.contains(&(key(8, tc ^ 3 << 12, 1), Some(16))),
            "{out:x?}"
        );
        assert!(!out.iter().any(|&(x, _)| x == key(3, 3, fw)));
        assert!(!out.iter().any(|&(x, _)| x == key(4, tc, fw)));
        assert_eq!(window_of(key(1, fw, 1), &mix), Some(FOREIGN_WORK));
        assert!(is_window(3) && !is_window(FOREIGN_WORK) && !is_window(WAIT_FOR_WORK));
    }

    /// The window a feature names: a window's count class, the later-keyed of two windows, a
    /// window with a fault, the window before a run of firings; none for the rest.
    #[test]
    fn a_feature_names_its_window() {
        let mix = tool_calls_mix(2);
        let tc = name_code("tool_calls");
        assert_eq!(window_of(key(1, 3, 2), &mix), Some(3));
        assert_eq!(window_of(key(3, 3, 5), &mix), Some(5));
        assert_eq!(window_of(key(4, tc, 7), &mix), Some(7));
        assert_eq!(window_of(key(8, tc ^ 9 << 12, 2), &mix), Some(9));
        for none in [
            key(8, tc ^ 256 << 12, 2),
            key(2, tc, 1),
            key(6, 3, 0),
            key(7, tc, 3),
        ] {
            assert_eq!(window_of(none, &mix), None, "{none:x}");
        }
    }

    /// A chain is reached a link at a time: each length of a run of firings in a row is a
    /// feature where the run reached it, once a run however many runs reach it, and a draw at
    /// the site that did not fire starts the count again; the window is the one last marked
    /// before the run began, not one marked during it.
    #[test]
    fn runs_of_a_fault_are_features_link_by_link() {
        let mix = tool_calls_mix(5);
        let c = |value: u64| Choice {
            bound: 2,
            value,
            label: "tool_calls",
        };
        let other = Choice {
            bound: 5,
            value: 1,
            label: "delay",
        };
        // Fires at 1, 2 (a run of 2), misses at 3, fires at 4, 6, 7 (a run of 3; 5 is
        // another site's draw), window 9 marked at 3 and window 4 at 6.
        let log = [c(1), c(1), c(0), c(1), other, c(1), c(1)];
        let mut out = Vec::new();
        run_features(&[(9, 3), (4, 6)], &mix, &log, &mut out);
        let tc = name_code("tool_calls");
        let (none, w9) = (tc ^ 256 << 12, tc ^ 9 << 12);
        let want = [
            (key(7, tc, 1), Some(1)),
            (key(8, none, 1), Some(1)),
            (key(7, tc, 2), Some(2)),
            (key(8, none, 2), Some(2)),
            (key(8, w9, 1), Some(4)),
            (key(8, w9, 2), Some(6)),
            (key(7, tc, 3), Some(7)),
            (key(8, w9, 3), Some(7)),
        ];
        assert_eq!(out, want);
    }
}
