//! The nsys processes running for this program, known beyond the code that
//! waits for them: a program about to end at once (a second signal) stops
//! them first ([`stop_children_now`]), so that none outlives it.

use std::path::PathBuf;
use std::sync::Mutex;

/// How a running child is stopped at once.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// Its process group killed (`nsys export`, `QdstrmImporter`).
    Group,
    /// A profiling session ended: nsys's group, everything below nsys (the
    /// command runs in a session of its own) and nsys's session agent.
    Profiling,
}

/// The children running, each with the files it writes that stopping it
/// at once would leave (see [`writes`]).
static RUNNING: Mutex<Vec<(u32, Stop, Vec<PathBuf>)>> = Mutex::new(Vec::new());

/// A child known to be running, until dropped (once it has been waited for).
pub(super) struct Running(u32);

/// Makes `pid` known until the returned value is dropped.
pub(super) fn running(pid: u32, stop: Stop) -> Running {
    RUNNING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((pid, stop, Vec::new()));
    Running(pid)
}

/// Notes `files`, written for the running child `pid` (by what it started):
/// stopped at once, it cannot remove them, so [`stop_children_now`] does.
pub(super) fn writes(pid: u32, files: &[PathBuf]) {
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, written)) = running.iter_mut().find(|(p, _, _)| *p == pid) {
        written.extend_from_slice(files);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&(pid, _, _)| pid != self.0);
    }
}

/// Kills every nsys process running for this program, with what it started
/// (a profiled command, a session agent, the raw capture the agent wrote),
/// without waiting for them to end cleanly.
pub fn stop_children_now() {
    let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for (pid, stop, written) in running {
        match stop {
            Stop::Group => kill_group(pid),
            Stop::Profiling => super::profile::kill_session(pid),
        }
        for file in written {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// Kills the process group led by `pid`.
pub(super) fn kill_group(pid: u32) {
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// Has the child that `command` starts killed with the thread that starts
/// it (Linux): a program killed by SIGKILL leaves no nsys working for
/// nobody.
pub(super) fn dies_with_parent(command: &mut std::process::Command) {
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id();
        // SAFETY: the closure runs in the child between fork and exec, and
        // calls only async-signal-safe functions (prctl, getppid, raise).
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(command, move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // The parent died before the prctl: nothing would signal it.
                if u32::try_from(libc::getppid()).ok() != Some(parent) {
                    libc::raise(libc::SIGKILL);
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}
