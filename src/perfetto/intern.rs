//! Per-sequence string interning: each distinct string is sent once, then referred
//! to by a small id (iid), which keeps repeated event and arg names nearly free.

use rustc_hash::FxHashMap;

#[derive(Default)]
pub(super) struct Interner {
    ids: FxHashMap<Box<str>, u64>,
}

impl Interner {
    /// Returns the iid of `s` and whether it was new (and so must be sent).
    pub fn intern(&mut self, s: &str) -> (u64, bool) {
        if let Some(&iid) = self.ids.get(s) {
            return (iid, false);
        }
        // iids start at 1: 0 means "unset" to trace_processor.
        let iid = self.ids.len() as u64 + 1;
        self.ids.insert(s.into(), iid);
        (iid, true)
    }
}
