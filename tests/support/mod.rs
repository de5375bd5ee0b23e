pub mod checker;
pub mod convert;
pub mod fixtures;
pub mod nsys;
pub mod sched;
pub mod source;
pub mod stacks;
pub mod synth;
