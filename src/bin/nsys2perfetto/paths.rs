//! Checks of the files a command names, made before any work: a run that
//! would fail at its end to write its result, or at its third report to read
//! one, fails at once instead. What an output may be is the library's
//! [`OutputFile`]: here the flags every writing command shares.

use std::path::Path;

use nsys2perfetto::{Error, OutputFile};

use crate::Usage;

/// The flags of every command that writes files.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct Writing {
    /// Replace an existing Nsight Systems report (.nsys-rep, .qdrep) or
    /// SQLite file named as an output; without, such a file is refused,
    /// whatever its name. An input is never replaced.
    #[arg(long)]
    pub force: bool,
}

impl Writing {
    /// The file at `path`, which must be none of `inputs` and, without
    /// `--force`, no report or export: checked now, before any input is read
    /// (a refusal is a usage error), and again when written.
    pub fn output<P: AsRef<Path>>(&self, path: &Path, inputs: &[P]) -> Result<OutputFile, Usage> {
        let output = OutputFile::new(path).inputs(inputs).force(self.force);
        output.check().map_err(|e| Usage(e.to_string()))?;
        Ok(output)
    }
}

/// Refuses an input that is not there (or cannot be looked at): a runtime
/// error, as when it is read; whether it is a report is said then.
pub fn present(input: &Path) -> Result<(), Error> {
    match std::fs::metadata(input) {
        Ok(_) => Ok(()),
        Err(cause) => {
            let path = input.to_owned();
            Err(Error::Unreadable { path, cause })
        }
    }
}

/// Refuses two outputs of one command that name one file (by any name):
/// the second would replace the first. Both `-` would mix two outputs on
/// standard output.
pub fn distinct(first: (&str, &OutputFile), second: (&str, &OutputFile)) -> Result<(), Usage> {
    if first.1.is_standard_output() && second.1.is_standard_output() {
        return Err(both_to_standard_output(first.0, second.0));
    }
    match first.1.is_same_file(second.1.path()) {
        true => Err(Usage(format!(
            "{} and {} name the same file, {}: give each its own",
            first.0,
            second.0,
            first.1.path().display()
        ))),
        false => Ok(()),
    }
}

/// Two outputs of one command on standard output: refused, each needs a
/// stream of its own.
pub fn both_to_standard_output(first: &str, second: &str) -> Usage {
    Usage(format!(
        "{first} and {second} would both go to standard output: give one of them a file"
    ))
}

/// Refuses a trace to standard output (`-o -`) where standard output is a
/// terminal: a trace is bytes for a file or a pipe, not for the screen.
pub fn no_trace_to_terminal(output: &OutputFile) -> Result<(), Usage> {
    use std::io::IsTerminal;
    match output.is_standard_output() && std::io::stdout().is_terminal() {
        true => Err(Usage(TRACE_TO_TERMINAL.into())),
        false => Ok(()),
    }
}

/// Why a trace is not written to a terminal.
pub const TRACE_TO_TERMINAL: &str =
    "standard output is a terminal: redirect it to a file or a pipe for -o -";

/// Where an output went, as its user reads it: `-` is standard output.
pub fn shown(output: &Path) -> String {
    match nsys2perfetto::is_standard_output(output) {
        true => "standard output".to_owned(),
        false => output.display().to_string(),
    }
}

/// Notes each of `inputs` that an nsys newer than any tested made (not with
/// `-q`): it is read all the same.
pub fn note_untested<P: AsRef<Path>>(inputs: impl IntoIterator<Item = P>, quiet: bool) {
    if quiet {
        return;
    }
    for input in inputs {
        if let Some(note) = nsys2perfetto::untested_version(input.as_ref()) {
            crate::note(note);
        }
    }
}

/// Whether `out` is written as a directory: with a trailing slash.
pub fn names_directory(out: &Path) -> bool {
    out.as_os_str()
        .to_string_lossy()
        .ends_with(['/', std::path::MAIN_SEPARATOR])
}

/// Checks `-o`, which must name a directory (`why` says why): one that
/// exists, or one named with a trailing slash, made by [`nsys2perfetto::NewDirectories`].
pub fn check_directory(out: &Path, why: &str) -> Result<(), String> {
    // Without its trailing slash: "file/" is a file named so, not missing.
    match std::fs::metadata(out.components().as_path()) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(format!("{} is not a directory: {why}", out.display())),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::Output {
            path: out.to_owned(),
            cause: e,
        }
        .to_string()),
        Err(_) if names_directory(out) => Ok(()),
        Err(_) => Err(format!(
            "directory {} does not exist (write {}/ to have it made)",
            out.display(),
            out.display()
        )),
    }
}
