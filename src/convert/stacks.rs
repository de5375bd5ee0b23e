//! Call chains of the report as Perfetto stack frames.

use crate::nsys::cpu::ChainFrame;
use crate::nsys::Report;
use crate::perfetto::StackFrame;

/// Reused space for the frames of one stack.
#[derive(Default)]
pub(super) struct Frames<'r> {
    frames: Vec<StackFrame<'r>>,
}

impl<'r> Frames<'r> {
    /// `chain`'s frames, innermost first, named from the report's strings.
    /// Unresolved symbols and modules keep the name nsys gave them.
    pub(super) fn of(&mut self, report: &'r Report, chain: &[ChainFrame]) -> &[StackFrame<'r>] {
        self.frames.clear();
        self.frames.extend(chain.iter().map(|f| StackFrame {
            function: name_or(report.string(Some(f.symbol)), "[unknown]"),
            module: name_or(report.string(Some(f.module)), "[unknown]"),
        }));
        &self.frames
    }
}

fn name_or<'a>(name: &'a str, fallback: &'a str) -> &'a str {
    if name.is_empty() {
        fallback
    } else {
        name
    }
}
