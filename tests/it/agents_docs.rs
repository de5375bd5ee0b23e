//! docs/agents.md's examples are tests, as the README's are (see
//! `readme.rs`): each ` ```console ` block run by trycmd against the real
//! fixtures, in a scratch directory that mirrors them, with Perfetto's
//! trace_processor named by NSYS2PERFETTO_TRACE_PROCESSOR and the query
//! cache in the scratch directory.
//!
//! `TRYCMD=overwrite cargo test --test it agents_docs::` writes the
//! program's current output back into docs/agents.md.

use std::path::{Path, PathBuf};

use crate::readme::mirror;
use crate::support::fixtures::{require, Need};

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn agents_page_examples_print_what_the_page_says() {
    let (Some(shared), Some(tp)) = (require(Need::Shared), require(Need::TraceProcessor)) else {
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = tempfile::tempdir().unwrap();
    let cwd = scratch.path().join("agents.in");
    mirror(&shared.join("fixtures"), &cwd);
    let page = scratch.path().join("agents.md");
    std::fs::copy(repo.join("docs/agents.md"), &page).unwrap();

    trycmd::TestCases::new()
        .register_bin(
            "nsys2perfetto",
            PathBuf::from(env!("CARGO_BIN_EXE_nsys2perfetto")),
        )
        .env("NO_COLOR", "1")
        .env("NSYS2PERFETTO_TRACE_PROCESSOR", tp.display().to_string())
        .env(
            "XDG_CACHE_HOME",
            scratch.path().join("cache").display().to_string(),
        )
        .case(&page)
        .run();

    if std::env::var_os("TRYCMD").is_some_and(|m| m == "overwrite") {
        std::fs::copy(&page, repo.join("docs/agents.md")).unwrap();
    }
}
