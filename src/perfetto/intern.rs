//! Per-sequence string interning: a string seen again is sent once and then
//! referred to by a small id (iid), which keeps repeated names nearly free.
//!
//! A string is interned only from its second use: many names are unique (a
//! PyTorch NVTX range is named `aten::to, op_id = 316791`), and for those the
//! interning entry plus the reference cost more than the string inline.

use std::hash::BuildHasher;

use hashbrown::hash_table::Entry;
use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap};

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
    /// Interned strings, with their hash and iid.
    ids: HashTable<(u64, Box<str>, u64)>,
    /// Hashes of the strings seen once. Most names are seen once, so they are
    /// remembered without a copy. A string whose hash another string already
    /// has is interned on its first use: a few bytes more, never a wrong name.
    seen_once: HashTable<u64>,
    next: u64,
}

impl Interner {
    pub(super) fn intern(&mut self, s: &str) -> Interned {
        // One hash serves both tables.
        let hash = FxBuildHasher.hash_one(s);
        if let Some((_, _, iid)) = self
            .ids
            .find(hash, |(h, known, _)| *h == hash && **known == *s)
        {
            return Interned::Known(*iid);
        }
        if let Entry::Vacant(first) = self.seen_once.entry(hash, |&h| h == hash, |&h| h) {
            first.insert(hash);
            return Interned::Inline;
        }
        // iids start at 1: 0 means "unset" to trace_processor.
        self.next += 1;
        self.ids
            .insert_unique(hash, (hash, s.into(), self.next), |(h, _, _)| *h);
        Interned::New(self.next)
    }

    /// Forgets every string, keeping the memory.
    pub(super) fn clear(&mut self) {
        self.ids.clear();
        self.seen_once.clear();
        self.next = 0;
    }

    /// Distinct strings remembered, interned or seen once.
    pub(super) fn len(&self) -> usize {
        self.ids.len() + self.seen_once.len()
    }
}

/// Interning of `'static` names (arg names), from their first use: they are
/// few and come back with every event, and a name that lives as long as the
/// program is known by its address alone, with no text to hash or compare.
/// (Two copies of one text at two addresses get two iids, for the same text.)
#[derive(Default)]
pub(super) struct StaticInterner {
    /// By address and length: the fast path, one lookup per argument.
    ids: FxHashMap<(usize, usize), u64>,
    /// By text: equal names at two addresses (the linker need not merge
    /// equal literals) share one iid, so that the bytes written do not
    /// depend on how the binary was linked.
    by_text: FxHashMap<&'static str, u64>,
    next: u64,
}

impl StaticInterner {
    /// The name's iid, and whether it is new (its entry is still to be sent).
    /// Called for every argument of every slice: inlined into the encoding.
    #[inline]
    pub(super) fn intern(&mut self, s: &'static str) -> (u64, bool) {
        match self.ids.get(&(s.as_ptr() as usize, s.len())) {
            Some(&iid) => (iid, false),
            None => self.intern_new_address(s),
        }
    }

    #[cold]
    fn intern_new_address(&mut self, s: &'static str) -> (u64, bool) {
        let (iid, new) = match self.by_text.get(s) {
            Some(&iid) => (iid, false),
            None => {
                self.next += 1;
                self.by_text.insert(s, self.next);
                (self.next, true)
            }
        };
        self.ids.insert((s.as_ptr() as usize, s.len()), iid);
        (iid, new)
    }

    pub(super) fn clear(&mut self) {
        self.ids.clear();
        self.by_text.clear();
        self.next = 0;
    }

    pub(super) fn len(&self) -> usize {
        self.by_text.len()
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

    #[test]
    fn static_names_are_interned_from_the_first_use() {
        let mut i = StaticInterner::default();
        assert_eq!(i.intern("bytes"), (1, true));
        assert_eq!(i.intern("grid"), (2, true));
        assert_eq!(i.intern("bytes"), (1, false));
        i.clear();
        assert_eq!(i.intern("grid"), (1, true));
    }

    #[test]
    fn equal_names_at_two_addresses_share_an_iid() {
        let mut i = StaticInterner::default();
        let elsewhere: &'static str = Box::leak(String::from("bytes").into_boxed_str());
        assert_eq!(i.intern("bytes"), (1, true));
        assert_eq!(i.intern(elsewhere), (1, false));
        assert_eq!(i.intern("grid"), (2, true));
        assert_eq!(i.len(), 2);
    }
}
