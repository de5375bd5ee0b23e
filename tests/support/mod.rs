pub mod checker;
pub mod nsys;
pub mod sched;
pub mod source;
pub mod stacks;
pub mod synth;
