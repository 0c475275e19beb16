//! Conversations: a conversation named by its logdir, and the queue pass both gptme hosts use.

use crate::sim::hash::{Encode, TraceHasher};

/// A conversation, named by its logdir (`conversation_id = logdir.name`). `ConvId(0)` is the
/// conversation under test (A); others are foreign (B, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConvId(pub u8);

impl std::fmt::Display for ConvId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", crate::sim::msg::conv_name(self.0))
    }
}

/// Remove and return, in order, the items of `queue` that `take` selects; the others keep their
/// order. The queue operations of both hosts (take this logdir's events, claim this
/// conversation's completions, purge a reset conversation's) are this one pass.
pub(crate) fn take_where<T: Copy>(
    queue: &mut std::collections::VecDeque<T>,
    take: impl Fn(&T) -> bool,
) -> Vec<T> {
    take_map_where(queue, take, |e| e)
}

/// [`take_where`], each item taken returned as `map` makes it (one allocation, of the size
/// taken, and none when nothing is).
pub(crate) fn take_map_where<T: Copy, U>(
    queue: &mut std::collections::VecDeque<T>,
    take: impl Fn(&T) -> bool,
    map: impl Fn(T) -> U,
) -> Vec<U> {
    // Most passes take nothing: then nothing moves and nothing is allocated. Many take
    // everything (one conversation's queue): then the queue is emptied into the result.
    if queue.is_empty() {
        return Vec::new();
    }
    let n = queue.iter().filter(|e| take(e)).count();
    if n == 0 {
        return Vec::new();
    }
    let mut taken = Vec::with_capacity(n);
    if n == queue.len() {
        taken.extend(queue.drain(..).map(map));
        return taken;
    }
    queue.retain(|e| {
        let mine = take(e);
        if mine {
            taken.push(map(*e));
        }
        !mine
    });
    taken
}

impl Encode for ConvId {
    fn encode(&self, h: &mut TraceHasher) {
        h.u8(self.0);
    }
}
