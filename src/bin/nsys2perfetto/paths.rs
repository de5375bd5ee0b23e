//! Checks of the files a command names, made before any work: a run that
//! would fail at its end to write its result, or at its third report to read
//! one, fails at once instead.

use std::path::Path;

use nsys2perfetto::Error;

/// Refuses an output that cannot be written: a directory, or a file in a
/// directory that does not exist (`-` is standard output).
pub fn writable(output: &Path) -> Result<(), String> {
    if output == Path::new("-") {
        return Ok(());
    }
    if output.is_dir() {
        let path = output.to_owned();
        return Err(Error::OutputIsDirectory { path }.to_string());
    }
    let dir = match output.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        let (path, dir) = (output.to_owned(), dir.to_owned());
        return Err(Error::NoOutputDirectory { path, dir }.to_string());
    }
    Ok(())
}

/// Refuses an input that is not there (or cannot be looked at); whether it
/// is a report is said when it is read.
pub fn present(input: &Path) -> Result<(), String> {
    match std::fs::metadata(input) {
        Ok(_) => Ok(()),
        Err(cause) => {
            let path = input.to_owned();
            Err(Error::Unreadable { path, cause }.to_string())
        }
    }
}
