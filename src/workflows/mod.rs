//! The workflows around a conversion: the one way an input path becomes a
//! report ([`input`]), a file converted into a trace that appears only when
//! complete ([`file`], [`output`]), directories of reports converted in
//! parallel ([`directories`]), several reports merged into one trace
//! ([`merge`]), the analyses of files ([`analyses`]) and their answers
//! saved as files ([`saved`]), and a trace handed to ui.perfetto.dev
//! ([`serve`]).

pub(crate) mod analyses;
pub(crate) mod directories;
pub(crate) mod file;
pub(crate) mod hub;
pub(crate) mod input;
pub(crate) mod merge;
pub(crate) mod new_directories;
pub(crate) mod output;
pub(crate) mod query;
pub(crate) mod saved;
pub mod serve;
pub(crate) mod tab_memory;
pub(crate) mod tested;

pub(crate) use input::with_report;
