//! Writing answers out, once for every command: pages as documents of
//! blocks ([`page`]), their charts ([`chart`]) and the times in
//! them ([`format`]). The analyses make documents; this writes them.

pub(crate) mod chart;
pub(crate) mod format;
pub(crate) mod page;
