//! The gptme hosts (`wake-systems.md` §1): the server ([`server`]: conversations with sessions,
//! `request_watch_wake`, the deferred watch queue) and the noninteractive CLI chat loop
//! ([`cli`]: hooks by priority, background jobs, the idle wait). Both share the narration in
//! [`note`].

pub mod cli;
pub mod note;
pub mod server;

/// A conversation, named by its logdir (`conversation_id = logdir.name`). `ConvId(0)` is the
/// conversation under test (A); others are foreign (B, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConvId(pub u8);

impl std::fmt::Display for ConvId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", crate::trace::conv_name(self.0))
    }
}
