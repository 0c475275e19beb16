//! The event queue: ordered by (time, sequence), with same-instant order left to a choice.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::choice::Choices;
use super::time::Ms;

struct Entry<E> {
    t: Ms,
    seq: u64,
    /// A microtask: runs before any other event due at the same instant.
    micro: bool,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.t == other.t && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // BinaryHeap is a max-heap: reverse so the earliest (time, seq) pops first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.t, other.seq).cmp(&(self.t, self.seq))
    }
}

/// Pending events. Events due at the same instant form a *ready set* (in scheduling order) and the
/// next one is picked by a choice, so every interleaving of simultaneous continuations is
/// reachable, including ones scheduled at the current instant by the event being handled.
///
/// Microtasks (a continuation after an `await` that does no I/O) model JavaScript's microtask
/// queue: while any is ready, only microtasks are candidates, so an external event (a producer
/// message, a timer) never lands between two hops of a promise chain; the order among ready
/// microtasks is still a choice.
pub struct Queue<E> {
    heap: BinaryHeap<Entry<E>>,
    ready: Vec<Entry<E>>,
    seq: u64,
    /// Microtasks pending; they are always due at the current instant.
    micros: usize,
}

impl<E> Default for Queue<E> {
    fn default() -> Self {
        Queue {
            heap: BinaryHeap::with_capacity(64),
            ready: Vec::with_capacity(8),
            seq: 0,
            micros: 0,
        }
    }
}

impl<E> Queue<E> {
    pub fn clear(&mut self) {
        self.heap.clear();
        self.ready.clear();
        self.seq = 0;
        self.micros = 0;
    }

    pub fn push(&mut self, t: Ms, ev: E) {
        self.seq += 1;
        self.heap.push(Entry {
            t,
            seq: self.seq,
            micro: false,
            ev,
        });
    }

    /// Queue a microtask at `t` (the current instant).
    pub fn push_micro(&mut self, t: Ms, ev: E) {
        self.seq += 1;
        self.micros += 1;
        self.heap.push(Entry {
            t,
            seq: self.seq,
            micro: true,
            ev,
        });
    }

    /// A microtask is pending (microtasks are queued at the current instant only, so it is due).
    pub fn micro_pending(&self) -> bool {
        self.micros > 0
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.ready.is_empty()
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.ready.len()
    }

    /// The time of the next event, if any.
    pub fn peek_time(&self) -> Option<Ms> {
        match (self.ready.first(), self.heap.peek()) {
            (Some(r), _) => Some(r.t),
            (None, Some(h)) => Some(h.t),
            (None, None) => None,
        }
    }

    /// Remove and return the next event; among events due at the same instant the choice picks.
    pub fn pop(&mut self, choices: &mut Choices) -> Option<(Ms, E)> {
        let t = match self.ready.first() {
            Some(r) => r.t,
            None => self.heap.peek()?.t,
        };
        while self.heap.peek().is_some_and(|e| e.t == t) {
            let e = self.heap.pop().expect("peeked");
            self.ready.push(e);
        }
        let micros = self.ready.iter().filter(|e| e.micro).count();
        let i = if micros > 0 && micros < self.ready.len() {
            let nth = choices.choose(micros as u64, "microtask order") as usize;
            self.ready
                .iter()
                .enumerate()
                .filter(|(_, e)| e.micro)
                .nth(nth)
                .map(|(i, _)| i)
                .expect("nth < micros")
        } else if self.ready.len() > 1 {
            choices.choose(self.ready.len() as u64, "same-instant order") as usize
        } else {
            0
        };
        let e = self.ready.remove(i);
        if e.micro {
            self.micros -= 1;
        }
        assert!(
            self.micros <= self.heap.len() + self.ready.len(),
            "every pending microtask is in the queue"
        );
        Some((e.t, e.ev))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::choice::Profile;

    #[test]
    fn pops_in_time_order_and_draws_only_on_ties() {
        let mut q = Queue::default();
        let mut c = Choices::random(5, Profile::default());
        q.push(Ms(30), 'c');
        q.push(Ms(10), 'a');
        q.push(Ms(20), 'b');
        let order: Vec<char> = std::iter::from_fn(|| q.pop(&mut c).map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['a', 'b', 'c']);
        assert!(c.log().is_empty(), "no ties, so no choices");
    }

    #[test]
    fn microtasks_run_before_other_events_of_the_instant() {
        for seed in 0..32 {
            let mut q = Queue::default();
            let mut c = Choices::random(seed, Profile::default());
            q.push(Ms(5), 'm');
            q.push_micro(Ms(5), 'a');
            q.push_micro(Ms(5), 'b');
            let order: String = std::iter::from_fn(|| q.pop(&mut c).map(|(_, e)| e)).collect();
            assert!(order.ends_with('m'), "{order}");
        }
    }

    #[test]
    fn micro_pending_counts_microtasks_until_they_run() {
        let mut q = Queue::default();
        let mut c = Choices::random(1, Profile::default());
        q.push(Ms(5), 'm');
        assert!(!q.micro_pending());
        q.push_micro(Ms(5), 'a');
        q.push_micro(Ms(5), 'b');
        assert!(q.micro_pending());
        assert!(q.pop(&mut c).is_some_and(|(_, e)| e != 'm'));
        assert!(q.micro_pending(), "one microtask left");
        assert!(q.pop(&mut c).is_some_and(|(_, e)| e != 'm'));
        assert!(!q.micro_pending());
        q.push_micro(Ms(5), 'c');
        q.clear();
        assert!(!q.micro_pending());
    }

    #[test]
    fn simultaneous_events_take_every_order_over_seeds() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let mut q = Queue::default();
            let mut c = Choices::random(seed, Profile::default());
            for e in ['x', 'y', 'z'] {
                q.push(Ms(5), e);
            }
            let order: String = std::iter::from_fn(|| q.pop(&mut c).map(|(_, e)| e)).collect();
            seen.insert(order);
        }
        assert_eq!(seen.len(), 6, "all 3! orders reachable: {seen:?}");
    }
}
