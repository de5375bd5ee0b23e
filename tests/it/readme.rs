//! The README's examples are tests: every ` ```console ` block of README.md is run by
//! trycmd, each `$ nsys2perfetto ...` line against the real fixtures, and what the
//! program prints must be what the block shows. A changed number fails here instead of
//! going stale. Figures that vary by machine (times) are written `[..]` in the README,
//! which trycmd takes for "any text".
//!
//! The commands run in a scratch directory that mirrors ../shared/fixtures (its
//! `sqlite/`, `reports/` and `local/` files, linked, and each export also at the top,
//! so `h100_torch_graph_node.sqlite` names one) and holds `demo/demo.sqlite`: what an
//! example writes lands there, never in ../shared or the checkout.
//!
//! `TRYCMD=overwrite cargo test --test it readme::` writes the program's current
//! output back into README.md, to review with `git diff`.

use std::path::{Path, PathBuf};

use crate::support::fixtures::{require, Need};

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn readme_examples_print_what_the_readme_says() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    // Two examples read .qdrep reports, which need nsys to export them.
    if require(Need::Nsys).is_none() {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = tempfile::tempdir().unwrap();
    let cwd = scratch.path().join("README.in");
    mirror(&shared.join("fixtures"), &cwd);
    std::fs::create_dir(cwd.join("demo")).unwrap();
    std::fs::copy(repo.join("demo/demo.sqlite"), cwd.join("demo/demo.sqlite")).unwrap();
    let readme = scratch.path().join("README.md");
    std::fs::copy(repo.join("README.md"), &readme).unwrap();

    trycmd::TestCases::new()
        .register_bin(
            "nsys2perfetto",
            PathBuf::from(env!("CARGO_BIN_EXE_nsys2perfetto")),
        )
        .env("NO_COLOR", "1")
        .case(&readme)
        .run();

    if std::env::var_os("TRYCMD").is_some_and(|m| m == "overwrite") {
        std::fs::copy(&readme, repo.join("README.md")).unwrap();
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
