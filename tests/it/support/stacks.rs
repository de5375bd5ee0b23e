//! The checker's view of interned call stacks and CPU samples, resolved the
//! way trace_processor's stack profile tables are: every id a stack refers to
//! must have been interned before, on the same sequence.

use std::collections::HashMap;

use nsys2perfetto::perfetto::proto::InternedData;

/// One sequence's interned stacks.
#[derive(Default)]
pub struct StackState {
    functions: HashMap<u64, String>,
    paths: HashMap<u64, String>,
    mappings: HashMap<u64, Vec<u64>>,
    frames: HashMap<u64, (u64, u64)>,
    callstacks: HashMap<u64, Vec<u64>>,
}

/// A frame as the trace names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NamedFrame {
    pub function: String,
    pub module: String,
}

#[derive(Clone, Debug)]
pub struct Sample {
    pub ts: u64,
    pub tid: u32,
    pub cpu: Option<u32>,
    /// Outermost frame first.
    pub stack: Vec<NamedFrame>,
}

impl StackState {
    /// Takes the stack entries of `i` (a packet's interned data).
    pub fn intern(&mut self, i: &InternedData, order: usize, errors: &mut Vec<String>) {
        let mut ok = |iid: Option<u64>, what: &str| match iid {
            Some(iid) if iid > 0 => Some(iid),
            _ => {
                errors.push(format!("packet {order}: {what} without iid"));
                None
            }
        };
        let text =
            |b: &Option<Vec<u8>>| String::from_utf8_lossy(b.as_deref().unwrap_or(&[])).into_owned();
        for f in &i.function_names {
            if let Some(iid) = ok(f.iid, "function name") {
                self.functions.insert(iid, text(&f.str));
            }
        }
        for p in &i.mapping_paths {
            if let Some(iid) = ok(p.iid, "mapping path") {
                self.paths.insert(iid, text(&p.str));
            }
        }
        for m in &i.mappings {
            if let Some(iid) = ok(m.iid, "mapping") {
                self.mappings.insert(iid, m.path_string_ids.clone());
            }
        }
        for f in &i.frames {
            if let Some(iid) = ok(f.iid, "frame") {
                self.frames.insert(
                    iid,
                    (f.function_name_id.unwrap_or(0), f.mapping_id.unwrap_or(0)),
                );
            }
        }
        for c in &i.callstacks {
            if let Some(iid) = ok(c.iid, "callstack") {
                self.callstacks.insert(iid, c.frame_ids.clone());
            }
        }
    }

    /// The frames of callstack `iid`, outermost first; an error for any id
    /// not interned (trace_processor counts those as stackprofile errors).
    pub fn resolve(&self, iid: u64, order: usize, errors: &mut Vec<String>) -> Vec<NamedFrame> {
        let Some(frame_ids) = self.callstacks.get(&iid) else {
            errors.push(format!("packet {order}: callstack {iid} not interned"));
            return Vec::new();
        };
        let mut stack = Vec::with_capacity(frame_ids.len());
        for id in frame_ids {
            let Some(&(function, mapping)) = self.frames.get(id) else {
                errors.push(format!("packet {order}: frame {id} not interned"));
                continue;
            };
            let function = self.functions.get(&function).cloned().unwrap_or_else(|| {
                errors.push(format!(
                    "packet {order}: function name {function} not interned"
                ));
                String::new()
            });
            let module = match self.mappings.get(&mapping) {
                Some(paths) => paths
                    .iter()
                    .map(|p| {
                        self.paths.get(p).cloned().unwrap_or_else(|| {
                            errors.push(format!("packet {order}: mapping path {p} not interned"));
                            String::new()
                        })
                    })
                    .collect::<Vec<_>>()
                    .join("/"),
                None => {
                    errors.push(format!("packet {order}: mapping {mapping} not interned"));
                    String::new()
                }
            };
            stack.push(NamedFrame { function, module });
        }
        stack
    }
}
