//! What a sequence writes: slices with their args, flows and call stacks, and
//! counter values.

use super::stacks::StackFrame;

/// A slice to write: `[start, end)` in trace time.
pub struct Slice<'a> {
    /// Its start, in trace time.
    pub start: u64,
    /// `None` when the slice never ended: it is closed when the sequence finishes.
    pub end: Option<u64>,
    /// Its name.
    pub name: &'a str,
    /// Its category.
    pub category: &'a str,
    /// The values shown in its details.
    pub args: &'a [Arg<'a>],
    /// Flows that start at this slice.
    pub flows_out: &'a [u64],
    /// Flows that end at this slice.
    pub flows_in: &'a [u64],
    /// The call stack the slice was entered from, innermost frame first.
    pub callstack: Option<&'a [StackFrame<'a>]>,
    /// The `event_id`s of the GPU work this slice submitted (see
    /// [`SequenceWriter::gpu_work`](super::SequenceWriter::gpu_work)).
    pub submits: &'a [u64],
}

/// A named value shown in the slice's details (trace_processor's `args`, as `debug.<name>`).
/// Names are fixed by the mapping, so they are `'static`: a sequence knows a
/// name by its address, without hashing or comparing its text.
#[derive(Clone, Copy, Debug)]
pub struct Arg<'a> {
    /// Its name.
    pub name: &'static str,
    /// Its value.
    pub value: ArgValue<'a>,
}

/// A counter's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CounterValue {
    /// An integer.
    Int(i64),
    /// A real.
    Double(f64),
}

#[derive(Clone, Copy, Debug, PartialEq)]
/// The value of an [`Arg`].
pub enum ArgValue<'a> {
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    Uint(u64),
    /// A real.
    Double(f64),
    /// A boolean.
    Bool(bool),
    /// Text.
    Str(&'a str),
}

impl<'a> Slice<'a> {
    /// A slice with no flows and no call stack.
    pub fn new(
        start: u64,
        end: Option<u64>,
        name: &'a str,
        category: &'a str,
        args: &'a [Arg<'a>],
    ) -> Self {
        Self {
            start,
            end,
            name,
            category,
            args,
            flows_out: &[],
            flows_in: &[],
            callstack: None,
            submits: &[],
        }
    }

    /// The slice, having submitted the GPU work with these `event_id`s.
    pub fn submits(mut self, event_ids: &'a [u64]) -> Self {
        self.submits = event_ids;
        self
    }

    /// The slice, with flows that start at it.
    pub fn flows_out(mut self, ids: &'a [u64]) -> Self {
        self.flows_out = ids;
        self
    }

    /// The slice, with flows that end at it.
    pub fn flows_in(mut self, ids: &'a [u64]) -> Self {
        self.flows_in = ids;
        self
    }

    /// The slice, entered from `frames` (innermost first), if any.
    pub fn callstack(mut self, frames: Option<&'a [StackFrame<'a>]>) -> Self {
        self.callstack = frames;
        self
    }
}

impl<'a> Arg<'a> {
    /// The arg `name` with `value`.
    pub fn new(name: &'static str, value: ArgValue<'a>) -> Self {
        Self { name, value }
    }
}
