pub mod checker;
pub mod sched;
pub mod source;
pub mod stacks;
pub mod synth;
