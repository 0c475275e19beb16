//! Trace hashes by an explicit, versioned encoding.
//!
//! A trace hash names a run: the golden file (`tests/data/trace-hashes.txt`), snapshots and the
//! determinism checks compare them. So what a record feeds the hasher is written out by hand,
//! type by type ([`Encode`]), never derived: reordering an enum's variants or adding a field
//! cannot change a hash by accident, and a change that means to is a new [`ENCODING`] version.
//!
//! Encoding version 1 (the one every committed hash uses):
//! - every scalar (`u8`, `u32`, `u64`, `i32` as its two's-complement `u32`, `bool` as 0 or 1,
//!   a variant's tag) is one 64-bit *word*;
//! - a string is its UTF-8 bytes in 8-byte little-endian words (the last zero-padded), then the
//!   word `0xff`;
//! - a list is its length as a word, then its elements;
//! - an `Option` is the tag 0 (none) or 1 (some) and then the value;
//! - an enum is its tag, then its fields in order; a struct is its fields in order.
//!
//! Each type's tags are the literal numbers in its `encode`. Version 1 reproduces, word for word,
//! what the `derive(Hash)` of earlier versions fed the same hasher (a tag was the variant's
//! position), so hashes recorded before the explicit encoding still hold.
//!
//! Each word is mixed in as `h = (h.rotate_left(5) ^ word) * 0x517c_c1b7_2722_0a95`, from the
//! FNV offset basis: the same in debug and release and on every platform.

/// The version of the encoding below. Bump it, and regenerate the golden file in a commit of
/// its own, when a change to an `encode` is meant to change hashes.
pub const ENCODING: u32 = 1;

/// The trace hasher: a stable word-at-a-time hash (the standard hasher is randomly keyed per
/// process). It deliberately does not implement `std::hash::Hasher`, so nothing derived can
/// feed it.
#[derive(Clone, Copy, Debug)]
pub struct TraceHasher(u64);

impl Default for TraceHasher {
    fn default() -> Self {
        TraceHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl TraceHasher {
    /// One word.
    #[inline]
    pub fn word(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    /// A variant's tag.
    #[inline]
    pub fn tag(&mut self, tag: u64) {
        self.word(tag);
    }

    #[inline]
    pub fn u8(&mut self, v: u8) {
        self.word(u64::from(v));
    }

    #[inline]
    pub fn u32(&mut self, v: u32) {
        self.word(u64::from(v));
    }

    #[inline]
    pub fn u64(&mut self, v: u64) {
        self.word(v);
    }

    #[inline]
    pub fn i32(&mut self, v: i32) {
        self.word(u64::from(v as u32));
    }

    #[inline]
    pub fn bool(&mut self, v: bool) {
        self.word(u64::from(v));
    }

    /// A string: its bytes in words, then the end word `0xff`.
    pub fn str(&mut self, s: &str) {
        for chunk in s.as_bytes().chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.word(u64::from_le_bytes(w));
        }
        self.word(0xff);
    }

    /// A list's length.
    #[inline]
    pub fn len(&mut self, n: usize) {
        self.word(n as u64);
    }

    /// An optional value: tag 0, or tag 1 and the value.
    #[inline]
    pub fn option<T>(&mut self, v: Option<T>, some: impl FnOnce(&mut TraceHasher, T)) {
        match v {
            None => self.tag(0),
            Some(x) => {
                self.tag(1);
                some(self, x);
            }
        }
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// A value of a trace, as the encoding above writes it.
pub trait Encode {
    fn encode(&self, h: &mut TraceHasher);
}

impl<T: Encode + ?Sized> Encode for &T {
    fn encode(&self, h: &mut TraceHasher) {
        (**self).encode(h);
    }
}

impl<T: Encode> Encode for [T] {
    fn encode(&self, h: &mut TraceHasher) {
        h.len(self.len());
        for x in self {
            x.encode(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of version 1, pinned: a change here changes every trace hash.
    #[test]
    fn version_1_words_are_pinned() {
        let mut h = TraceHasher::default();
        h.u64(120_000);
        h.tag(3);
        h.u8(2);
        h.bool(true);
        h.i32(-1);
        h.str("message");
        h.str("");
        h.len(2);
        h.option(Some(7u32), |h, v| h.u32(v));
        h.option(None::<u32>, |h, v| h.u32(v));
        assert_eq!(h.finish(), 0xa662_e170_4674_aa63, "{:016x}", h.finish());
    }
}
