pub mod checker;
pub mod synth;
