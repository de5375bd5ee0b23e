//! One way out: every command that writes a file refuses an output that is
//! one of its inputs, by any name (the path, `./path`, a hard link, a
//! symbolic link), and an Nsight Systems report or SQLite export recognised
//! by its content whatever its name, and leaves it as it was: the same bytes,
//! the same modification time, no temporary file beside it, a non-zero exit
//! and one line saying why. `--force` replaces a report that is no input,
//! never an input. The inputs are copies of demo/demo.sqlite, so these tests
//! need no ../shared; a real .nsys-rep is used where ../shared has one.

use crate::support::program::{demo, BIN};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

fn run(dir: &Path, args: &[String]) -> Output {
    Command::new(BIN)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("binary runs")
}

/// What a file below the directory is: where a link points, its bytes and
/// its modification time.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    link: Option<PathBuf>,
    bytes: Vec<u8>,
    modified: SystemTime,
}

/// Every file and link below `dir`, by its path relative to `dir`.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Seen> {
    let mut seen = BTreeMap::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                dirs.push(path);
                continue;
            }
            let link = meta
                .file_type()
                .is_symlink()
                .then(|| std::fs::read_link(&path).unwrap());
            let target = std::fs::metadata(&path).unwrap();
            seen.insert(
                path.strip_prefix(dir).unwrap().to_owned(),
                Seen {
                    link,
                    bytes: std::fs::read(&path).unwrap(),
                    modified: target.modified().unwrap(),
                },
            );
        }
    }
    seen
}

/// A command line that writes one file, given as `{}`, and the inputs it
/// reads.
struct Writer {
    args: &'static str,
    inputs: &'static [&'static str],
}

/// Every command and flag that writes a file.
const WRITERS: &[Writer] = &[
    Writer {
        args: "convert a.sqlite -q -o {}",
        inputs: &["a.sqlite"],
    },
    Writer {
        args: "convert a.sqlite --findings -q -o {}",
        inputs: &["a.sqlite"],
    },
    Writer {
        args: "convert a.sqlite --format json -q -o {}",
        inputs: &["a.sqlite"],
    },
    Writer {
        args: "merge a.sqlite b.sqlite -q -o {}",
        inputs: &["a.sqlite", "b.sqlite"],
    },
    Writer {
        args: "merge a.sqlite b.sqlite --format json -q -o {}",
        inputs: &["a.sqlite", "b.sqlite"],
    },
    Writer {
        args: "stats a.sqlite b.sqlite -o {}",
        inputs: &["a.sqlite", "b.sqlite"],
    },
    Writer {
        args: "analyze a.sqlite -o {}",
        inputs: &["a.sqlite"],
    },
    Writer {
        args: "compare a.sqlite b.sqlite -o {}",
        inputs: &["a.sqlite", "b.sqlite"],
    },
    Writer {
        args: "compare a.sqlite b.sqlite --summary -o {}",
        inputs: &["a.sqlite", "b.sqlite"],
    },
    Writer {
        args: "compare a.sqlite b.sqlite --trace {}",
        inputs: &["a.sqlite", "b.sqlite"],
    },
    Writer {
        args: "series --param n=1 a.sqlite --param n=2 b.sqlite --events cpush -q -o {}",
        inputs: &["a.sqlite", "b.sqlite"],
    },
    Writer {
        args: "series --param n=1 a.sqlite --param n=2 b.sqlite --events cpush -q --svg {}",
        inputs: &["a.sqlite", "b.sqlite"],
    },
    Writer {
        args: "report a.sqlite b.sqlite --format md -o {}",
        inputs: &["a.sqlite", "b.sqlite"],
    },
    Writer {
        args: "report a.sqlite --format html -o {}",
        inputs: &["a.sqlite"],
    },
];

impl Writer {
    fn args(&self, output: &str, force: bool) -> Vec<String> {
        let mut args: Vec<String> = self
            .args
            .split(' ')
            .map(|a| a.replace("{}", output))
            .collect();
        if force {
            args.push("--force".into());
        }
        args
    }

    /// The names by which `-o` names one of the inputs: the path, the path
    /// through `.`, a hard link and a symbolic link (made by [`setup`]).
    fn input_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for input in self.inputs {
            let stem = input.trim_end_matches(".sqlite");
            names.push(input.to_string());
            names.push(format!("./{input}"));
            names.push(format!("hard-{stem}"));
            #[cfg(unix)]
            names.push(format!("link-{stem}.out"));
        }
        names
    }
}

/// Reports that are none of the inputs: an SQLite export, a report, and an
/// export under a name of no report (judged by its content, not its name).
const OTHER_REPORTS: [&str; 3] = ["other.sqlite", "other.nsys-rep", "disguised.trace"];

/// A directory holding the inputs a.sqlite and b.sqlite, a hard link and a
/// symbolic link to each, and [`OTHER_REPORTS`].
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for name in ["a.sqlite", "b.sqlite", "other.sqlite", "disguised.trace"] {
        std::fs::copy(demo(), d.join(name)).unwrap();
    }
    for stem in ["a", "b"] {
        std::fs::hard_link(
            d.join(format!("{stem}.sqlite")),
            d.join(format!("hard-{stem}")),
        )
        .unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(format!("{stem}.sqlite"), d.join(format!("link-{stem}.out")))
            .unwrap();
    }
    std::fs::write(d.join("other.nsys-rep"), nsys_report()).unwrap();
    dir
}

/// A real report (a copy of one of ../shared), or, without ../shared, the
/// header every report starts with (`NVIDIA Tegra Profiler Report`, as in
/// each .nsys-rep and .qdrep of ../shared/fixtures/reports).
fn nsys_report() -> Vec<u8> {
    let real = crate::support::fixtures::shared_dir()
        .join("fixtures/reports/jax-toolbox_cuda_graph_pdl_stream_capture.nsys-rep");
    match std::fs::read(&real) {
        Ok(bytes) => bytes,
        Err(_) => b"NVIDIA Tegra Profiler Report 1.\nthe rest of a report".to_vec(),
    }
}

/// Fails unless `args` is refused: a non-zero exit, one line of error, and
/// every file below `dir` as it was (bytes, modification time, no
/// temporary file).
fn assert_refused(dir: &Path, args: &[String], needle: &str) {
    let before = snapshot(dir);
    let out = run(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded: {stderr}");
    assert!(
        matches!(out.status.code(), Some(1 | 2)),
        "{args:?}: {:?} {stderr}",
        out.status
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line, got {stderr:?}");
    assert!(lines[0].starts_with("nsys2perfetto: error: "), "{stderr}");
    assert!(
        lines[0].contains(needle),
        "{args:?}: {stderr:?} should say {needle:?}"
    );
    assert_eq!(snapshot(dir), before, "{args:?} changed a file");
}

#[test]
fn no_command_writes_over_one_of_its_inputs() {
    let dir = setup();
    let d = dir.path();
    // Without --force first: the commands that had no --force are tried
    // before any is refused for not knowing it.
    for force in [false, true] {
        for writer in WRITERS {
            for name in writer.input_names() {
                assert_refused(d, &writer.args(&name, force), "it is the input");
            }
        }
    }
}

#[test]
fn no_command_writes_over_a_report_without_force() {
    let dir = setup();
    let d = dir.path();
    for writer in WRITERS {
        // An export that is another command's input, but none of this one's.
        let others = OTHER_REPORTS
            .iter()
            .copied()
            .chain((writer.inputs.len() == 1).then_some("b.sqlite"));
        for name in others {
            assert_refused(d, &writer.args(name, false), "--force replaces it");
        }
    }
}

#[test]
fn force_replaces_a_report_that_is_no_input() {
    for writer in WRITERS {
        let dir = setup();
        let d = dir.path();
        for name in OTHER_REPORTS {
            let args = writer.args(name, true);
            let before = snapshot(d);
            let out = run(d, &args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{args:?}: {stderr}");
            let after = snapshot(d);
            assert_ne!(
                after[Path::new(name)].bytes,
                before[Path::new(name)].bytes,
                "{args:?}"
            );
            // Nothing else changed, and no temporary file is left.
            let others = |s: &BTreeMap<PathBuf, Seen>| {
                s.iter()
                    .filter(|(p, _)| *p != Path::new(name))
                    .map(|(p, seen)| (p.clone(), seen.bytes.clone(), seen.modified))
                    .collect::<Vec<_>>()
            };
            assert_eq!(others(&after), others(&before), "{args:?}");
        }
    }
}

/// A directory converted: a trace that would be written over an input
/// (through a link in the tree -o mirrors) or over a report is refused
/// before anything is converted.
#[test]
fn a_directory_conversion_writes_over_no_input_nor_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("runs")).unwrap();
    std::fs::create_dir_all(d.join("traces")).unwrap();
    std::fs::copy(demo(), d.join("runs/c.sqlite")).unwrap();
    std::fs::copy(demo(), d.join("runs/e.sqlite")).unwrap();
    let args = |more: &[&str]| -> Vec<String> {
        ["convert", "runs", "-q"]
            .iter()
            .chain(more)
            .map(|s| s.to_string())
            .collect()
    };
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("../runs/e.sqlite", d.join("traces/c.perfetto-trace")).unwrap();
        for force in [&[][..], &["--force"][..]] {
            let more = [&["-o", "traces/"][..], force].concat();
            assert_refused(d, &args(&more), "it is the input");
        }
        std::fs::remove_file(d.join("traces/c.perfetto-trace")).unwrap();
    }
    // An export named like the trace of another, beside it or in -o.
    for target in ["runs/c.perfetto-trace", "traces/c.perfetto-trace"] {
        std::fs::copy(demo(), d.join(target)).unwrap();
        let more: &[&str] = match target.starts_with("traces") {
            true => &["-o", "traces/"],
            false => &[],
        };
        assert_refused(d, &args(more), "--force replaces it");
        let forced = [more, &["--force"]].concat();
        let out = run(d, &args(&forced));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_ne!(
            std::fs::read(d.join(target)).unwrap(),
            std::fs::read(demo()).unwrap()
        );
        std::fs::remove_file(d.join(target)).unwrap();
    }
}

/// `compare -o` and `--trace` naming one file are refused: one would
/// replace the other.
#[test]
fn compare_refuses_one_file_for_its_table_and_trace() {
    let dir = setup();
    let d = dir.path();
    let args: Vec<String> = [
        "compare", "a.sqlite", "b.sqlite", "-o", "x.txt", "--trace", "./x.txt",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_refused(d, &args, "the same file");
}

/// The library refuses as the command line does, before anything is read.
#[test]
fn the_library_refuses_too() {
    let dir = setup();
    let d = dir.path();
    let before = snapshot(d);
    let options = nsys2perfetto::Options::default();
    let err =
        nsys2perfetto::convert_file(&d.join("a.sqlite"), d.join("hard-a"), &options, &mut |_| {})
            .unwrap_err();
    assert!(err.to_string().contains("it is the input"), "{err}");
    let err = nsys2perfetto::convert_file(
        &d.join("a.sqlite"),
        d.join("other.nsys-rep"),
        &options,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("--force replaces it"), "{err}");
    let inputs = [d.join("a.sqlite"), d.join("b.sqlite")];
    let merge = nsys2perfetto::merge::MergeOptions::default();
    let err = nsys2perfetto::merge::merge_files(
        &inputs,
        d.join("link-b.out"),
        &options,
        &merge,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("it is the input"), "{err}");
    assert_eq!(snapshot(d), before);
}
