//! How answers are written out, once for every command: tables (aligned text, CSV, JSON
//! Lines, [`table`]), pages as documents of blocks ([`page`]), their charts ([`chart`]),
//! their tables of data ([`data_table`], long names shortened by [`names`]),
//! the times in them ([`format`]), numbers in JSON documents ([`json`]), and the escaping
//! each output format needs ([`escape`]). The analyses make documents and tables; this
//! writes them.

pub(crate) mod chart;
pub(crate) mod data_table;
pub(crate) mod escape;
pub(crate) mod format;
pub(crate) mod json;
pub(crate) mod markdown;
pub(crate) mod names;
pub(crate) mod page;
pub(crate) mod table;
