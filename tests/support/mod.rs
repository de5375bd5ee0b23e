pub mod checker;
pub mod source;
pub mod synth;
