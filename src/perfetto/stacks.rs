//! Call stacks, interned per sequence: function names, mappings (one per
//! module path), frames and whole callstacks each get an iid, so that a stack
//! seen again costs one number. CPU samples and slices refer to them.

use rustc_hash::FxHashMap;

use super::proto::{Callstack, Frame, InternedData, InternedString, Mapping};

/// A frame of a call stack: a function in a module (a binary or library).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StackFrame<'a> {
    /// The function's name.
    pub function: &'a str,
    /// The binary or library it is in.
    pub module: &'a str,
}

#[derive(Default)]
pub(super) struct StackInterner {
    functions: FxHashMap<Box<str>, u64>,
    /// A module's mapping and its path share one iid.
    modules: FxHashMap<Box<str>, u64>,
    frames: FxHashMap<(u64, u64), u64>,
    callstacks: FxHashMap<Box<[u64]>, u64>,
    frame_ids: Vec<u64>,
}

impl StackInterner {
    /// The iid of the callstack of `frames`, innermost first, adding to `out`
    /// whatever the sequence has not seen yet.
    pub(super) fn callstack(&mut self, frames: &[StackFrame], out: &mut InternedData) -> u64 {
        let mut frame_ids = std::mem::take(&mut self.frame_ids);
        frame_ids.clear();
        // Perfetto lists a callstack's frames outermost first.
        for frame in frames.iter().rev() {
            frame_ids.push(self.frame(frame, out));
        }
        let iid = match self.callstacks.get(frame_ids.as_slice()) {
            Some(&iid) => iid,
            None => {
                let iid = self.callstacks.len() as u64 + 1;
                self.callstacks.insert(frame_ids.as_slice().into(), iid);
                out.callstacks.push(Callstack {
                    iid: Some(iid),
                    frame_ids: frame_ids.clone(),
                });
                iid
            }
        };
        self.frame_ids = frame_ids;
        iid
    }

    /// Entries remembered: bounds the memory of a sequence.
    pub(super) fn len(&self) -> usize {
        self.functions.len() + self.modules.len() + self.frames.len() + self.callstacks.len()
    }

    fn frame(&mut self, frame: &StackFrame, out: &mut InternedData) -> u64 {
        let function = intern_string(&mut self.functions, frame.function, &mut out.function_names);
        let module = match self.modules.get(frame.module) {
            Some(&iid) => iid,
            None => {
                let iid = intern_string(&mut self.modules, frame.module, &mut out.mapping_paths);
                out.mappings.push(Mapping {
                    iid: Some(iid),
                    path_string_ids: vec![iid],
                });
                iid
            }
        };
        let next = self.frames.len() as u64 + 1;
        *self.frames.entry((function, module)).or_insert_with(|| {
            out.frames.push(Frame {
                iid: Some(next),
                function_name_id: Some(function),
                mapping_id: Some(module),
                rel_pc: None,
            });
            next
        })
    }
}

fn intern_string(
    ids: &mut FxHashMap<Box<str>, u64>,
    s: &str,
    out: &mut Vec<InternedString>,
) -> u64 {
    if let Some(&iid) = ids.get(s) {
        return iid;
    }
    let iid = ids.len() as u64 + 1;
    ids.insert(s.into(), iid);
    out.push(InternedString {
        iid: Some(iid),
        str: Some(s.as_bytes().to_vec()),
    });
    iid
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame<'a>(function: &'a str, module: &'a str) -> StackFrame<'a> {
        StackFrame { function, module }
    }

    #[test]
    fn a_stack_seen_again_is_one_iid_and_frames_are_shared() {
        let mut stacks = StackInterner::default();
        let mut out = InternedData::default();
        let a = [frame("leaf", "libc.so"), frame("main", "app")];
        let b = [frame("other", "libc.so"), frame("main", "app")];
        let first = stacks.callstack(&a, &mut out);
        assert_eq!(stacks.callstack(&a, &mut out), first);
        let second = stacks.callstack(&b, &mut out);
        assert_ne!(first, second);
        assert_eq!(out.callstacks.len(), 2);
        assert_eq!(out.frames.len(), 3, "main is one frame");
        assert_eq!(out.mappings.len(), 2);
        assert_eq!(out.function_names.len(), 3);
        // Outermost first: main, then the leaf.
        let iid_of = |name: &str| {
            let f = out
                .function_names
                .iter()
                .find(|f| f.str.as_deref() == Some(name.as_bytes()));
            let f = f.unwrap().iid;
            out.frames
                .iter()
                .find(|fr| fr.function_name_id == f)
                .unwrap()
                .iid
                .unwrap()
        };
        assert_eq!(
            out.callstacks[0].frame_ids,
            vec![iid_of("main"), iid_of("leaf")]
        );
    }
}
