//! The documents' examples are tests: every ` ```console ` block of README.md and of
//! the user guide (docs/**/*.md, a new page included without naming it here) is run by
//! trycmd, each `$ nsys2perfetto ...` line against the real fixtures, and what the
//! program prints must be what the block shows. A changed number fails here instead of
//! going stale. Figures that vary by machine (times) are written `[..]`, which trycmd
//! takes for "any text".
//!
//! Each document's commands run in a scratch directory of its own that mirrors
//! ../shared/fixtures (its `sqlite/`, `reports/` and `local/` files, linked, and each
//! export also at the top, so `h100_torch_graph_node.sqlite` names one) and holds
//! `demo/demo.sqlite`: what an example writes lands there, never in ../shared or the
//! checkout, and no page depends on what another wrote.
//!
//! `TRYCMD=overwrite cargo test --test it readme::` writes the program's current
//! output back into the documents, to review with `git diff`.

use std::path::{Path, PathBuf};

use crate::support::fixtures::{require, Need};

/// README.md and every Markdown page under docs/, in name order: the documents
/// whose examples are tested (and whose SQL, tests/it/readme_sql.rs).
pub fn documents() -> Vec<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = vec![repo.join("README.md")];
    let mut dirs = vec![repo.join("docs")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.flatten().map(|e| e.path()) {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    found[1..].sort();
    found
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn examples_print_what_the_documents_say() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    // Some examples read .qdrep reports, which need nsys to export them.
    if require(Need::Nsys).is_none() {
        return;
    }
    // `query`'s examples (docs/agents.md) run trace_processor.
    let Some(trace_processor) = require(Need::TraceProcessor) else {
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = tempfile::tempdir().unwrap();
    let cases = trycmd::TestCases::new();
    cases
        .register_bin(
            "nsys2perfetto",
            PathBuf::from(env!("CARGO_BIN_EXE_nsys2perfetto")),
        )
        .env("NO_COLOR", "1")
        .env(
            "NSYS2PERFETTO_TRACE_PROCESSOR",
            trace_processor.display().to_string(),
        )
        // `query` keeps its traces in the cache: the scratch directory's.
        .env(
            "XDG_CACHE_HOME",
            scratch.path().join("cache").display().to_string(),
        );
    // Each document as a case of its own, named after its path (docs/stats.md is
    // docs--stats.md), beside the directory its commands run in (NAME.in).
    let mut copies = Vec::new();
    for document in documents() {
        let text = std::fs::read_to_string(&document).unwrap();
        if !text.contains("```console") {
            continue;
        }
        let relative = document.strip_prefix(repo).unwrap();
        let name = relative.to_string_lossy().replace('/', "--");
        let copy = scratch.path().join(&name);
        std::fs::write(&copy, text).unwrap();
        let cwd = copy.with_extension("in");
        mirror(&shared.join("fixtures"), &cwd);
        std::fs::create_dir(cwd.join("demo")).unwrap();
        std::fs::copy(repo.join("demo/demo.sqlite"), cwd.join("demo/demo.sqlite")).unwrap();
        cases.case(&copy);
        copies.push((copy, document));
    }
    assert!(copies.len() > 1, "the README and the guide have examples");
    cases.run();

    if std::env::var_os("TRYCMD").is_some_and(|m| m == "overwrite") {
        for (copy, document) in copies {
            std::fs::copy(copy, document).unwrap();
        }
    }
}

/// Makes `to` a tree of directories like `from`'s subdirectories, whose files are links
/// to `from`'s; each SQLite export and report is linked at the top of `to` as well.
pub(crate) fn mirror(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for dir in ["sqlite", "reports", "local"] {
        std::fs::create_dir(to.join(dir)).unwrap();
        for entry in std::fs::read_dir(from.join(dir)).unwrap().flatten() {
            let name = entry.file_name();
            std::os::unix::fs::symlink(entry.path(), to.join(dir).join(&name)).unwrap();
            if !to.join(&name).exists() {
                std::os::unix::fs::symlink(entry.path(), to.join(&name)).unwrap();
            }
        }
    }
}
