//! How answers are written out: tables (aligned text, CSV, JSON Lines) in
//! one way for every command, and the escaping each output format needs,
//! once each.

pub(crate) mod escape;
pub(crate) mod table;
