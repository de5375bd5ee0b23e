//! The command line as a user's shell meets it: every enumerated flag lists
//! its values in `--help`, the completion scripts load in bash, zsh and fish
//! and complete those values, and the manual pages name every command.

use std::process::Command;

use clap::ValueEnum;
use nsys2perfetto::analyze::Rule;
use nsys2perfetto::compare::Kind;
use nsys2perfetto::report::PageFormat;
use nsys2perfetto::stats::{StatsReport, TableFormat};
use nsys2perfetto::Part;

use crate::support::fixtures::skip;
use crate::support::program::BIN;

fn stdout_of(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The commands `nsys2perfetto --help` lists (all but `help`).
fn commands() -> Vec<String> {
    let help = stdout_of(&["--help"]);
    let listed = help
        .split_once("Commands:\n")
        .expect("a list of commands")
        .1;
    // A command's line is indented by two; its wrapped description, more.
    listed
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Whether `line` of a `--help` starts an option (`  -o, --output <FILE>`,
/// `      --format <FORMAT>`), not one of the lines of its text.
fn starts_option(line: &str) -> bool {
    line.starts_with("  -") || line.starts_with("      --")
}

/// The values `--help` of `command` lists for `flag`: its
/// `[possible values: ...]`, wrapped lines joined.
fn listed_values(command: &str, flag: &str) -> Vec<String> {
    let help = stdout_of(&[command, "--help"]);
    let lines: Vec<&str> = help.lines().collect();
    let start = lines
        .iter()
        .position(|l| starts_option(l) && l.contains(&format!("{flag} <")))
        .unwrap_or_else(|| panic!("{command} --help has no {flag}:\n{help}"));
    // The option's text runs to the next option.
    let end = lines[start + 1..]
        .iter()
        .position(|l| starts_option(l))
        .map_or(lines.len(), |n| start + 1 + n);
    let text: Vec<&str> = lines[start..end].iter().map(|l| l.trim()).collect();
    let text = text.join(" ");
    let Some((_, values)) = text.split_once("[possible values: ") else {
        panic!("{command} {flag}: no values listed in {text:?}");
    };
    let values = values.split_once(']').expect("the list's end").0;
    values.split(',').map(|v| v.trim().to_owned()).collect()
}

/// Every flag of every command says in `--help` what it does: `-q` too,
/// whose help each command gives itself (`reading::quiet_help` in the
/// program), past the flag's shared declaration.
#[test]
fn every_flag_of_every_command_has_its_help() {
    for command in commands() {
        let help = stdout_of(&[&command, "--help"]);
        let lines: Vec<&str> = help.lines().collect();
        for (start, line) in lines.iter().enumerate().filter(|(_, l)| starts_option(l)) {
            // Its text: after the flag on its line (two spaces apart), or
            // below it, indented, up to the next option or heading.
            let beside = line.trim().split_once("  ").map_or("", |(_, text)| text);
            let below = lines[start + 1..]
                .iter()
                .take_while(|l| !starts_option(l) && (l.is_empty() || l.starts_with(' ')))
                .map(|l| l.trim());
            let text: Vec<&str> = std::iter::once(beside.trim()).chain(below).collect();
            let text = text.join(" ");
            let said = text.trim();
            assert!(
                !said.is_empty() && !said.starts_with('['),
                "{command} --help: {} has no help:\n{help}",
                line.trim()
            );
        }
    }
}

/// The flags every command shares (the nsys CLI, quiet, the output and its
/// refusals) sit under `Options:` in every `--help`, never under the
/// heading of a group of flags declared before them (`Filters:`).
#[test]
fn shared_flags_sit_under_options_in_every_help() {
    for command in commands() {
        let help = stdout_of(&[&command, "--help"]);
        let mut heading = "";
        for line in help.lines() {
            if !line.starts_with(' ') && line.ends_with(':') {
                heading = line;
            }
            let flag = line.trim_start().split([' ', ',']).next().unwrap_or("");
            let shared = ["--nsys", "-q", "--force", "-o", "--output"];
            if starts_option(line) && shared.contains(&flag) {
                assert_eq!(
                    heading,
                    "Options:",
                    "{command} --help: {}\n{help}",
                    line.trim()
                );
            }
        }
    }
}

/// The names clap knows a value enum by, the first of each value.
fn clap_names<T: ValueEnum>() -> Vec<String> {
    T::value_variants()
        .iter()
        .filter_map(|v| v.to_possible_value())
        .map(|v| v.get_name().to_owned())
        .collect()
}

/// The names of every enumerated flag, in `--help`: those the library names
/// (its own `name()`s, each parsed back by its `FromStr`), and the binary's.
#[test]
fn every_enumerated_flag_lists_its_values_in_help() {
    let names = |all: &[&str]| all.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let parts = names(&Part::ALL.map(Part::name));
    let kinds = names(&Kind::ALL.map(Kind::name));
    let rules = names(&Rule::ALL.map(Rule::name));
    let reports = names(&StatsReport::ALL.map(StatsReport::name));
    let table_formats = clap_names::<TableFormat>();
    let page_formats = clap_names::<PageFormat>();
    // Each listed format is one the library's own parser takes, and they
    // are all different formats.
    let parsed: Vec<TableFormat> = table_formats.iter().map(|f| f.parse().unwrap()).collect();
    assert!(parsed
        .iter()
        .enumerate()
        .all(|(i, f)| !parsed[..i].contains(f)));
    assert_eq!(table_formats.len(), 4, "table, csv, json and md");
    let parsed: Vec<PageFormat> = page_formats.iter().map(|f| f.parse().unwrap()).collect();
    assert!(parsed
        .iter()
        .enumerate()
        .all(|(i, f)| !parsed[..i].contains(f)));
    assert_eq!(page_formats.len(), 3, "html, md and json");

    let trace_formats = names(&["perfetto", "json"]);
    let gpu_models = names(&["trackevent", "typed"]);
    let expected: Vec<(&str, &str, &Vec<String>)> = vec![
        ("convert", "--format", &trace_formats),
        ("convert", "--gpu-model", &gpu_models),
        ("convert", "--exclude", &parts),
        ("convert", "--only", &parts),
        ("profile", "--format", &trace_formats),
        ("profile", "--exclude", &parts),
        ("merge", "--format", &trace_formats),
        ("merge", "--exclude", &parts),
        ("merge", "--only", &parts),
        ("stats", "--report", &reports),
        ("stats", "--format", &table_formats),
        ("analyze", "--rule", &rules),
        ("analyze", "--format", &table_formats),
        ("compare", "--kind", &kinds),
        ("compare", "--format", &table_formats),
        ("report", "--format", &page_formats),
    ];
    for (command, flag, values) in &expected {
        assert_eq!(
            &listed_values(command, flag),
            *values,
            "{command} --help, {flag}"
        );
    }
    // Every command with a --format lists its formats, commands added
    // later included.
    for command in commands() {
        let help = stdout_of(&[&command, "--help"]);
        if help
            .lines()
            .any(|l| starts_option(l) && l.contains("--format <"))
        {
            assert!(!listed_values(&command, "--format").is_empty());
        }
    }
}

/// An old name is still taken, though `--help` lists only the new ones,
/// and a bad value is refused in one line naming the values.
#[test]
fn old_names_are_taken_and_bad_values_refused_with_the_list() {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/demo/demo.sqlite");
    let old = Command::new(BIN)
        .args(["analyze", "--rule", "gpu-starv", demo])
        .output()
        .unwrap();
    assert!(old.status.success(), "{old:?}");
    assert!(String::from_utf8_lossy(&old.stdout).contains("(gpu_gaps)"));

    let bad = Command::new(BIN)
        .args(["compare", demo, demo, "--kind", "kernels"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8(bad.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let kinds: Vec<&str> = Kind::ALL.map(Kind::name).to_vec();
    assert!(
        stderr.contains(&format!("[possible values: {}]", kinds.join(", "))),
        "{stderr}"
    );
}

/// The script of `shell`, written to a file of `dir`.
fn script(dir: &std::path::Path, shell: &str) -> std::path::PathBuf {
    let path = dir.join(format!("completions.{shell}"));
    std::fs::write(&path, stdout_of(&["completions", shell])).unwrap();
    path
}

/// Whether `shell` is installed; a test that needs it skips (fails in CI)
/// where it is not.
fn installed(shell: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {shell}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        skip(&format!("{shell} is not installed (.ci/run installs it)"));
    }
    found
}

/// bash sources the script as the help says (`source <(...)`), and it
/// completes `stats --format ` with the formats.
#[test]
fn bash_completion_loads_and_completes_values() {
    if !installed("bash") {
        return;
    }
    let program = std::path::Path::new(BIN);
    let dir = program.parent().unwrap().to_str().unwrap();
    let complete = r#"
        source <(nsys2perfetto completions bash) || exit 1
        COMP_WORDS=(nsys2perfetto stats --format "")
        COMP_CWORD=3
        COMP_LINE="nsys2perfetto stats --format "
        COMP_POINT=${#COMP_LINE}
        _nsys2perfetto nsys2perfetto "" --format
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let out = Command::new("bash")
        .args(["-c", complete])
        .env("PATH", format!("{dir}:{}", std::env::var("PATH").unwrap()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut offered: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    offered.sort();
    let mut formats = clap_names::<TableFormat>();
    formats.sort();
    assert_eq!(offered, formats);
}

/// zsh loads the script under compinit, which defines its completion
/// function.
#[test]
fn zsh_completion_loads() {
    if !installed("zsh") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = script(dir.path(), "zsh");
    let out = Command::new("zsh")
        .args(["-f", "-c"])
        .arg(format!(
            "autoload -U compinit && compinit -u -d {}/zcompdump && source {} && (( $+functions[_nsys2perfetto] ))",
            dir.path().display(),
            script.display()
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
}

/// fish loads the script, and completes `report --format ` with the page
/// formats.
#[test]
fn fish_completion_loads_and_completes_values() {
    if !installed("fish") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = script(dir.path(), "fish");
    let out = Command::new("fish")
        .args(["--no-config", "-c"])
        .arg(format!(
            "source {} && complete -C 'nsys2perfetto report --format '",
            script.display()
        ))
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    let mut offered: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_owned())
        .collect();
    offered.sort();
    let mut formats = clap_names::<PageFormat>();
    formats.sort();
    assert_eq!(offered, formats);
}

/// `man` is a roff page naming every command; `man COMMAND` the command's,
/// with its flags; an unknown command is refused in one line.
#[test]
fn man_pages_name_every_command_and_flag() {
    let page = stdout_of(&["man"]);
    assert!(page.contains(".TH nsys2perfetto 1"), "{page}");
    for command in commands() {
        assert!(
            page.contains(&format!("nsys2perfetto\\-{}", command.replace('-', "\\-"))),
            "{command}"
        );
    }
    let convert = stdout_of(&["man", "convert"]);
    assert!(convert.contains(".TH nsys2perfetto-convert 1"), "{convert}");
    for flag in ["\\-\\-exclude", "\\-\\-gpu\\-model", "\\-\\-time"] {
        assert!(convert.contains(flag), "{flag}");
    }
    let unknown = Command::new(BIN).args(["man", "nope"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    let stderr = String::from_utf8(unknown.stderr).unwrap();
    assert!(
        stderr.starts_with("nsys2perfetto: error: no command \"nope\""),
        "{stderr}"
    );
}
