//! What happened to each message so far, derived from observations only.

use crate::sim::msg::{MsgId, MsgInfo};
use crate::sim::record::{Ev, Reason};
use crate::sim::time::Ms;

/// At most this many messages carried by one request leave the owed list one by one.
const FEW: usize = 8;

/// The life of one message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsgLedger {
    pub appended_at: Option<Ms>,
    pub appended_times: u32,
    /// The first model request that carried it.
    pub delivered_at: Option<Ms>,
    pub dropped: Option<Reason>,
}

/// Per-message state, plus the messages appended since the last model request.
#[derive(Default)]
pub struct Ledger {
    msgs: Vec<MsgLedger>,
    unrequested: Vec<MsgId>,
    /// Produced, not yet delivered, not dropped: in production order.
    owed: Vec<MsgId>,
    /// First appends, in order.
    append_order: Vec<MsgId>,
}

impl Ledger {
    pub fn clear(&mut self) {
        self.msgs.clear();
        self.unrequested.clear();
        self.owed.clear();
        self.append_order.clear();
    }

    pub fn get(&self, id: MsgId) -> MsgLedger {
        self.msgs.get(id.0 as usize).copied().unwrap_or_default()
    }

    /// Messages appended since the last model request: the next request carries them.
    pub fn unrequested(&self) -> &[MsgId] {
        &self.unrequested
    }

    /// Messages produced and neither delivered nor dropped.
    pub fn owed(&self) -> &[MsgId] {
        &self.owed
    }

    pub fn append_order(&self) -> &[MsgId] {
        &self.append_order
    }

    /// A message's life; observations only ever name messages a producer made.
    fn known(&mut self, msg: MsgId) -> &mut MsgLedger {
        let i = msg.0 as usize;
        assert!(i < self.msgs.len(), "{msg} observed before it was produced");
        &mut self.msgs[i]
    }

    /// Take `msg` off the owed list, if it is there. The list is in production order, i.e.
    /// ascending ids (`apply` asserts it for every `Produced`), so a binary search finds it.
    fn forget_owed(&mut self, msg: MsgId) {
        if let Ok(i) = self.owed.binary_search(&msg) {
            self.owed.remove(i);
        }
    }

    #[inline(always)]
    pub(super) fn apply<N>(&mut self, t: Ms, ev: &Ev<N>, messages: &[MsgInfo]) {
        match *ev {
            Ev::Produced { msg } => {
                assert!(
                    (msg.0 as usize) < messages.len(),
                    "{msg} produced but not registered"
                );
                if self.msgs.len() <= msg.0 as usize {
                    self.msgs.resize(msg.0 as usize + 1, MsgLedger::default());
                }
                // The owed list stays in production order: what FIFO and NO-LOSS report first.
                assert!(
                    self.owed.last().is_none_or(|last| *last < msg),
                    "{msg} produced out of order"
                );
                self.owed.push(msg);
            }
            Ev::Appended { msg } => {
                let m = self.known(msg);
                m.appended_times += 1;
                let first = m.appended_at.is_none();
                if first {
                    m.appended_at = Some(t);
                }
                let delivered = m.delivered_at.is_some();
                if first {
                    self.append_order.push(msg);
                }
                if !delivered && !self.unrequested.contains(&msg) {
                    self.unrequested.push(msg);
                }
            }
            Ev::Request { .. } => {
                // Only a message this request delivers leaves the owed list (owed means neither
                // delivered nor dropped). A request carries a few: each is found by a binary
                // search; many are removed in one pass.
                let few = self.unrequested.len() <= FEW;
                for i in 0..self.unrequested.len() {
                    let id = self.unrequested[i];
                    let m = &mut self.msgs[id.0 as usize];
                    if m.delivered_at.is_none() {
                        m.delivered_at = Some(t);
                        if few {
                            self.forget_owed(id);
                        }
                    }
                }
                if !few {
                    let msgs = &self.msgs;
                    self.owed
                        .retain(|id| msgs[id.0 as usize].delivered_at.is_none());
                }
                self.unrequested.clear();
            }
            Ev::OwnerClaimed { msg } => {
                let m = self.known(msg);
                if m.delivered_at.is_none() {
                    m.delivered_at = Some(t);
                }
                self.forget_owed(msg);
            }
            Ev::Dropped { msg, reason } => {
                let m = self.known(msg);
                if m.delivered_at.is_none() && m.dropped.is_none() {
                    m.dropped = Some(reason);
                    self.forget_owed(msg);
                    self.unrequested.retain(|id| *id != msg);
                }
            }
            _ => {}
        }
    }
}
