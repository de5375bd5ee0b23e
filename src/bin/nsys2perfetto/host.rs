//! What the commands that serve or run programs need to know of this
//! machine: its name, for the `ssh -L` lines they print, and the programs
//! on PATH.

use std::path::PathBuf;

/// The first of `programs` found in a directory of PATH.
pub fn on_path(programs: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    programs.iter().find_map(|program| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

/// This machine's name as the kernel has it (what `hostname` prints), or
/// the one /etc/hostname holds, for the `ssh` lines printed to reach it from
/// a laptop; a placeholder where neither says.
pub fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .into_iter()
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .map(|name| name.trim().to_owned())
        .find(|name| !name.is_empty())
        .unwrap_or_else(|| "THIS-MACHINE".to_owned())
}
