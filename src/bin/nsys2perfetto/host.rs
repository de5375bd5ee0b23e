//! This machine's name, for the `ssh -L` lines that `open` and `serve`
//! print.

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
