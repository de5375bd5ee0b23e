//! Per-sequence string interning: a string seen again is sent once and then
//! referred to by a small id (iid), which keeps repeated names nearly free.
//!
//! A string is interned only from its second use: many names are unique (a
//! PyTorch NVTX range is named `aten::to, op_id = 316791`), and for those the
//! interning entry plus the reference cost more than the string inline.

use rustc_hash::FxHashMap;

/// How to send a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Interned {
    /// Seen once so far: send it inline.
    Inline,
    /// Interned now: send the entry, then refer to it.
    New(u64),
    /// Already interned: refer to it.
    Known(u64),
}

#[derive(Default)]
pub(super) struct Interner {
    /// 0 for strings seen once, else their iid.
    ids: FxHashMap<Box<str>, u64>,
    next: u64,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> Interned {
        match self.ids.get_mut(s) {
            None => {
                self.ids.insert(s.into(), 0);
                Interned::Inline
            }
            Some(iid) if *iid == 0 => {
                // iids start at 1: 0 means "unset" to trace_processor.
                self.next += 1;
                *iid = self.next;
                Interned::New(self.next)
            }
            Some(iid) => Interned::Known(*iid),
        }
    }

    /// Distinct strings remembered, interned or seen once.
    pub fn len(&self) -> usize {
        self.ids.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interns_from_the_second_use() {
        let mut i = Interner::default();
        assert_eq!(i.intern("a"), Interned::Inline);
        assert_eq!(i.intern("b"), Interned::Inline);
        assert_eq!(i.intern("a"), Interned::New(1));
        assert_eq!(i.intern("a"), Interned::Known(1));
        assert_eq!(i.intern("b"), Interned::New(2));
    }
}
