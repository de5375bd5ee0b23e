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
/// the second would replace the first.
pub fn distinct(first: (&str, &OutputFile), second: (&str, &OutputFile)) -> Result<(), Usage> {
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
