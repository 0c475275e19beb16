//! The event queue: ordered by (time, scheduling order), with same-instant order left to a
//! choice.

use super::choice::Choices;
use super::time::Ms;

/// Pending events. Events due at the same instant form a *ready set* (in scheduling order) and the
/// next one is picked by a choice, so every interleaving of simultaneous continuations is
/// reachable, including ones scheduled at the current instant by the event being handled.
///
/// Microtasks (a continuation after an `await` that does no I/O) model JavaScript's microtask
/// queue: while any is ready, only microtasks are candidates, so an external event (a producer
/// message, a timer) never lands between two hops of a promise chain; the order among ready
/// microtasks is still a choice.
///
/// The other events wait in one vector sorted by time *descending*, an event before every event
/// scheduled earlier for the same instant: the next event is the last, and the ready set is the
/// suffix due at its time, in reverse scheduling order. Most events are due soon, so a push
/// lands near the end and moves few entries, and popping the next event moves none.
/// Microtasks are always due at the current instant and wait in their own list. The next event,
/// and what is drawn to pick it, is as if both lived in one ready set in scheduling order: with
/// microtasks and other events ready, the `n`-th microtask ("microtask order"); with only one
/// kind ready, the `n`-th of those ("same-instant order"); a single candidate draws nothing.
pub struct Queue<E> {
    /// Events other than microtasks, by time, then scheduling order, both descending (the next
    /// event last).
    events: Vec<(Ms, E)>,
    /// Microtasks, all due at the current instant, in scheduling order.
    micro: Vec<(Ms, E)>,
    /// A seed's plan is being pushed (`begin_plan`): events are appended in scheduling order
    /// and put in place once, by `end_plan`, instead of each being inserted (a plan schedules
    /// in ascending time, each insert at the front of the vector).
    planning: bool,
}

impl<E> Default for Queue<E> {
    fn default() -> Self {
        Queue {
            events: Vec::with_capacity(64),
            micro: Vec::with_capacity(8),
            planning: false,
        }
    }
}

impl<E> Queue<E> {
    pub fn clear(&mut self) {
        self.events.clear();
        self.micro.clear();
        self.planning = false;
    }

    #[inline]
    pub fn push(&mut self, t: Ms, ev: E) {
        if self.planning {
            self.events.push((t, ev));
            return;
        }
        // Before every event due at `t` or earlier: after them in scheduling order.
        let at = self.events.partition_point(|(u, _)| *u > t);
        self.events.insert(at, (t, ev));
    }

    /// Collect the pushes of a plan (an empty queue's first events) and order them at
    /// [`Queue::end_plan`]: the same queue as pushing each, without an insert per event.
    /// Nothing is popped or peeked in between. A queue that is not empty pushes as usual.
    pub fn begin_plan(&mut self) {
        self.planning = self.events.is_empty();
    }

    /// Put the plan's events where pushing each would have: by time descending and, at one
    /// time, the later scheduled first. Reversed, they are latest scheduled first; a stable
    /// sort by time descending keeps that order within a time.
    pub fn end_plan(&mut self) {
        if std::mem::take(&mut self.planning) {
            self.events.reverse();
            self.events.sort_by(|(a, _), (b, _)| b.cmp(a));
        }
    }

    /// Queue a microtask at `t` (the current instant).
    pub fn push_micro(&mut self, t: Ms, ev: E) {
        assert!(
            self.micro.first().is_none_or(|(m, _)| *m == t),
            "microtasks are due at the current instant"
        );
        self.micro.push((t, ev));
    }

    /// A microtask is pending (microtasks are queued at the current instant only, so it is due).
    pub fn micro_pending(&self) -> bool {
        !self.micro.is_empty()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.micro.is_empty()
    }

    pub fn len(&self) -> usize {
        self.events.len() + self.micro.len()
    }

    /// The time of the next event, if any.
    pub fn peek_time(&self) -> Option<Ms> {
        assert!(!self.planning, "the queue is peeked during a plan");
        match (self.micro.first(), self.events.last()) {
            (Some((t, _)), _) | (None, Some((t, _))) => Some(*t),
            (None, None) => None,
        }
    }

    /// Remove and return the next event; among events due at the same instant the choice picks.
    #[inline]
    pub fn pop(&mut self, choices: &mut Choices) -> Option<(Ms, E)> {
        assert!(!self.planning, "the queue is popped during a plan");
        if let Some(&(t, _)) = self.micro.first() {
            let micros = self.micro.len() as u64;
            let others = self.events.last().is_some_and(|(u, _)| *u == t);
            let label = if others {
                "microtask order"
            } else {
                "same-instant order"
            };
            // One candidate draws nothing (`choose(1)` is 0 and unrecorded): no call for it.
            let i = if micros == 1 {
                0
            } else {
                choices.choose(micros, label) as usize
            };
            // The last one leaves by `pop`: no shift, no call to move nothing.
            return if i + 1 == self.micro.len() {
                self.micro.pop()
            } else {
                Some(self.micro.remove(i))
            };
        }
        let last = self.events.len().checked_sub(1)?;
        let t = self.events[last].0;
        let ready = 1
            + (self.events[..last].iter().rev())
                .take_while(|(u, _)| *u == t)
                .count();
        // The `i`-th of the ready set in scheduling order is `i` from the end.
        let i = if ready == 1 {
            0
        } else {
            choices.choose(ready as u64, "same-instant order") as usize
        };
        if i == 0 {
            return self.events.pop();
        }
        Some(self.events.remove(last - i))
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

    /// A plan's pushes, collected and ordered once, leave the queue that pushing each leaves,
    /// ties included, whatever order the times come in.
    #[test]
    fn a_plan_orders_its_events_as_pushing_each_would() {
        for seed in 0..64u64 {
            let mut c = Choices::random(seed, Profile::default());
            let times: Vec<u64> = (0..1 + seed % 24).map(|_| c.choose(6, "t")).collect();
            let mut one = Queue::default();
            let mut plan = Queue::default();
            plan.begin_plan();
            for (i, &t) in times.iter().enumerate() {
                one.push(Ms(t), i);
                plan.push(Ms(t), i);
            }
            plan.end_plan();
            assert_eq!(one.events, plan.events, "times {times:?}");
            assert!(!plan.planning);
        }
        // Not empty: pushes as usual.
        let mut q = Queue::default();
        q.push(Ms(3), 0);
        q.begin_plan();
        q.push(Ms(1), 1);
        assert_eq!(q.events, [(Ms(3), 0), (Ms(1), 1)]);
        q.end_plan();
        assert_eq!(q.events, [(Ms(3), 0), (Ms(1), 1)]);
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
