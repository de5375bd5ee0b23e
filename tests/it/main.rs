//! The integration tests, in one binary: the crate and the support code are compiled and
//! linked once, not once per file. Run one area with `cargo test --test it cli::`.

mod support;

mod analyze;
mod batch;
mod callstacks;
mod cli;
mod compare;
mod conventions;
mod cpu;
mod damaged;
mod determinism;
mod devices;
mod edge_cases;
mod events;
mod filter;
mod fixtures;
mod gpu_model;
mod graphs;
mod green_contexts;
mod group_names;
mod json;
mod libraries;
mod library;
mod merge;
mod metrics;
mod naming;
mod nvtx_unnamed;
mod official_schema;
mod one_way_out;
mod open;
mod overhead;
mod profile;
mod progress;
mod projection;
mod report;
mod reports;
mod scale;
mod series;
mod stats;
mod stats_memory;
mod steps;
mod trace_processor;
