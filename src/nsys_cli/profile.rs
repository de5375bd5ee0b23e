//! Profiling a command with `nsys profile`, and making sure a report comes
//! out of it: where nsys could not import its raw capture (`.qdstrm`) itself,
//! the `QdstrmImporter` of the same install does it.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use super::children::{self, Stop};
use super::export::nsys_message;
use crate::error::{plain, Error, Result};

/// One run of `nsys profile` on a command. Start from [`NsysProfile::new`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct NsysProfile {
    /// The command to profile, its program first.
    pub command: Vec<OsString>,
    /// The `nsys` CLI (`nsys` from PATH by default).
    pub nsys: PathBuf,
    /// What nsys traces (`--trace`, such as `cuda,nvtx,osrt`); nsys's own
    /// default when `None`.
    pub trace: Option<String>,
    /// The report's path without its extension: the report is
    /// `<output>.nsys-rep`. Without one, the first of `report1`, `report2`,
    /// ... in the current directory (as nsys numbers its reports) with no
    /// report, raw capture or trace of that name yet.
    pub output: Option<PathBuf>,
    /// More options for `nsys profile`, passed as they are.
    pub nsys_args: Vec<OsString>,
    /// Overwrite a report of the same name; without it, one is refused
    /// before nsys runs.
    pub overwrite: bool,
    /// How long nsys may go on after its command ended (or, where the
    /// command was never seen, after nsys started) before the caller is told
    /// what is being waited for ([`NsysProfile::run_telling`]).
    pub wait_notice: Duration,
}

/// A long wait for nsys, told once: nsys 2022.4 now and then never ends
/// after its command has, and then only stopping it helps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LongWait {
    /// How long nsys has run.
    pub nsys_running: Duration,
    /// How long ago its command ended, where it was seen running; `None`
    /// where no command of nsys's was seen running.
    pub command_ended: Option<Duration>,
}

impl std::fmt::Display for LongWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.command_ended {
            Some(ago) => format!("the command ended {} s ago", ago.as_secs()),
            None => format!(
                "nsys has run {} s and no command of it is running",
                self.nsys_running.as_secs()
            ),
        };
        write!(
            f,
            "{what}; waiting for nsys to write its report (a long capture can take minutes; \
             nsys 2022.4 sometimes never ends here): Ctrl-C stops nsys and keeps nothing"
        )
    }
}

/// What a profiling run left.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Profiled {
    /// The report (`.nsys-rep`).
    pub report: PathBuf,
    /// The command's exit code as nsys passed it on (128 + the signal for
    /// a command, or an nsys, that a signal ended).
    pub exit_code: i32,
    /// The `QdstrmImporter` that made the report, where nsys left only its
    /// raw capture.
    pub imported_by: Option<PathBuf>,
}

impl NsysProfile {
    /// Profiling `command` with `nsys` from PATH and its default traces, into
    /// the first free `reportN.nsys-rep` in the current directory.
    pub fn new<I, S>(command: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        NsysProfile {
            command: command.into_iter().map(Into::into).collect(),
            nsys: PathBuf::from("nsys"),
            trace: None,
            output: None,
            nsys_args: Vec::new(),
            overwrite: false,
            wait_notice: WAIT_NOTICE,
        }
    }

    /// The report this run makes: `<output>.nsys-rep` (an extension given
    /// with the output is taken off first).
    pub fn report_path(&self) -> PathBuf {
        with_extension(&self.base_name(), "nsys-rep")
    }

    /// The raw capture nsys writes before it imports it: `<output>.qdstrm`.
    pub fn qdstrm_path(&self) -> PathBuf {
        with_extension(&self.base_name(), "qdstrm")
    }

    /// The output without a report's extension, which nsys would add again.
    fn base_name(&self) -> PathBuf {
        match &self.output {
            Some(output) => base_name(output),
            None => unused_report_name(Path::new("")),
        }
    }

    /// Runs `nsys profile` on the command (its input and output are this
    /// process's), then imports the raw capture if nsys left only that.
    ///
    /// While nsys runs, `cancel` is watched: once set, nsys is told to end
    /// the collection (which stops the command), forced if it does not, and
    /// what it wrote is removed; the run then fails with
    /// [`Error::ProfilingInterrupted`].
    pub fn run(&self, cancel: Option<&AtomicBool>) -> Result<Profiled> {
        self.run_telling(cancel, &mut |_| {})
    }

    /// [`NsysProfile::run`], telling `told` once when nsys goes on
    /// [`NsysProfile::wait_notice`] after its command ended.
    pub fn run_telling(
        &self,
        cancel: Option<&AtomicBool>,
        told: &mut dyn FnMut(LongWait),
    ) -> Result<Profiled> {
        let Some(program) = self.command.first() else {
            return Err(Error::InvalidOption("no command to profile".into()));
        };
        let base = self.base_name();
        let report = with_extension(&base, "nsys-rep");
        let qdstrm = with_extension(&base, "qdstrm");
        let dir = match report.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(Error::NoOutputDirectory { path: report, dir });
        }
        if !self.overwrite {
            for existing in [&report, &qdstrm] {
                if existing.exists() {
                    return Err(Error::ReportExists {
                        path: existing.clone(),
                    });
                }
            }
        }
        // Files older than this were not made by this run.
        let started = SystemTime::now() - Duration::from_secs(1);
        let mut command = Command::new(&self.nsys);
        command.arg("profile").arg("--output").arg(&base);
        if let Some(trace) = &self.trace {
            command.arg(format!("--trace={trace}"));
        }
        if self.overwrite {
            command.arg("--force-overwrite=true");
        }
        command.args(&self.nsys_args).args(&self.command);
        // A group of its own: a Ctrl-C at the terminal reaches this process
        // only, which then asks nsys to end the collection as nsys expects
        // (a SIGINT to nsys's helpers as well leaves its session hanging).
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command.spawn().map_err(|e| Error::ProfileFailed {
            reason: match e.kind() {
                std::io::ErrorKind::NotFound => format!("{} was not found", self.nsys.display()),
                _ => format!("{} could not be run: {}", self.nsys.display(), plain(&e)),
            },
        })?;
        let running = children::running(child.id(), Stop::Profiling);
        let cancelled = || cancel.is_some_and(|c| c.load(Ordering::Relaxed));
        let status = match wait_for_nsys(&mut child, cancel, self.wait_notice, told) {
            Waited::Exited(status) => {
                end_session_agent(child.id());
                Some(status)
            }
            Waited::Failed(e) => {
                stop_profiling(&mut child, &self.nsys);
                return Err(Error::ProfileFailed {
                    reason: format!("nsys could not be waited for: {}", plain(&e)),
                });
            }
            Waited::Cancelled => {
                // The raw capture the agent writes, known before nsys is
                // asked to stop: the agent closes it as it ends, and then
                // neither a second signal (which ends the program at once)
                // nor `end_session_agent` would find it open.
                let captures = agent_captures(child.id());
                children::writes(child.id(), &captures);
                stop_profiling(&mut child, &self.nsys);
                for capture in captures {
                    let _ = std::fs::remove_file(capture);
                }
                None
            }
        };
        drop(running);
        // Also where nsys ended as the program was being stopped (killed
        // with it): what this run made is removed.
        let Some(status) = status.filter(|_| !cancelled()) else {
            for path in [&report, &qdstrm] {
                if made_since(path, started) {
                    let _ = std::fs::remove_file(path);
                }
            }
            return Err(Error::ProfilingInterrupted {
                command: program.to_string_lossy().into_owned(),
            });
        };
        let exit_code = exit_code(status);
        if made_since(&report, started) {
            return Ok(Profiled {
                report,
                exit_code,
                imported_by: None,
            });
        }
        if !made_since(&qdstrm, started) {
            return Err(Error::ProfileFailed {
                reason: format!(
                    "nsys made no report ({} is absent; nsys exited with status {exit_code})",
                    report.display()
                ),
            });
        }
        let Some(importer) = find_qdstrm_importer(&self.nsys) else {
            return Err(Error::QdstrmOnly {
                qdstrm,
                nsys: self.nsys.clone(),
            });
        };
        import_qdstrm(&importer, &qdstrm, &report, cancel)?;
        Ok(Profiled {
            report,
            exit_code,
            imported_by: Some(importer),
        })
    }
}

/// `output` without a report's extension, which nsys would add again.
fn base_name(output: &Path) -> PathBuf {
    match output.extension().and_then(OsStr::to_str) {
        Some("nsys-rep" | "qdrep" | "qdstrm") => output.with_extension(""),
        _ => output.to_owned(),
    }
}

/// `base` with `.extension` added (not replacing a dot in the name:
/// `run.v2` becomes `run.v2.nsys-rep`).
fn with_extension(base: &Path, extension: &str) -> PathBuf {
    let mut name = base.as_os_str().to_owned();
    name.push(".");
    name.push(extension);
    PathBuf::from(name)
}

/// The first of `report1`, `report2`, ... in `dir` (as nsys numbers its
/// reports) with no report, raw capture or trace of that name yet.
fn unused_report_name(dir: &Path) -> PathBuf {
    (1u32..)
        .map(|n| dir.join(format!("report{n}")))
        .find(|base| {
            ["nsys-rep", "qdstrm", "perfetto-trace"]
                .iter()
                .all(|ext| !with_extension(base, ext).exists())
        })
        .expect("some name is free")
}

/// Whether `path` is a file written at or after `since`.
fn made_since(path: &Path, since: SystemTime) -> bool {
    std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .and_then(|m| m.modified().ok())
        .is_some_and(|t| t >= since)
}

fn exit_code(status: ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return 128 + signal;
    }
    1
}

enum Waited {
    Exited(ExitStatus),
    Cancelled,
    Failed(std::io::Error),
}

/// How often a running child is checked on.
const POLL: Duration = Duration::from_millis(20);

fn wait(child: &mut Child, cancel: Option<&AtomicBool>) -> Waited {
    loop {
        if let Some(waited) = finished(child, cancel) {
            return waited;
        }
        std::thread::sleep(POLL);
    }
}

/// How the wait for `child` ended where it has (the child exited, or
/// `cancel` is set); none while it runs on.
fn finished(child: &mut Child, cancel: Option<&AtomicBool>) -> Option<Waited> {
    match child.try_wait() {
        Ok(Some(status)) => Some(Waited::Exited(status)),
        Ok(None) if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) => Some(Waited::Cancelled),
        Ok(None) => None,
        Err(e) => Some(Waited::Failed(e)),
    }
}

/// The default of [`NsysProfile::wait_notice`].
const WAIT_NOTICE: Duration = Duration::from_secs(30);

/// How often nsys's command is looked for.
const LOOK: Duration = Duration::from_millis(500);

/// [`wait`] for nsys, telling `told` once when it has gone on `notice`
/// after its command ended.
fn wait_for_nsys(
    nsys: &mut Child,
    cancel: Option<&AtomicBool>,
    notice: Duration,
    told: &mut dyn FnMut(LongWait),
) -> Waited {
    let started = Instant::now();
    let mut next_look = started;
    let (mut seen, mut ended) = (false, None);
    let mut said = false;
    loop {
        if let Some(waited) = finished(nsys, cancel) {
            return waited;
        }
        let now = Instant::now();
        if !said && now >= next_look {
            next_look = now + LOOK;
            let running = command_running(nsys.id());
            match running {
                Some(true) => (seen, ended) = (true, None),
                Some(false) if seen => ended = ended.or(Some(now)),
                _ => {}
            }
            // Unseen: a command too short to be seen, or none yet.
            let since = match (running, seen) {
                (Some(false), true) => ended,
                (Some(false), false) => Some(started),
                _ => None,
            };
            if let Some(since) = since.filter(|&at| now.duration_since(at) >= notice) {
                said = true;
                told(LongWait {
                    nsys_running: now.duration_since(started),
                    command_ended: seen.then(|| now.duration_since(since)),
                });
            }
        }
        std::thread::sleep(POLL);
    }
}

/// Whether the command of the nsys of pid `nsys` runs: a process below
/// nsys in a session of its own (nsys's launcher starts the command so);
/// `None` where processes cannot be looked at.
fn command_running(nsys: u32) -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        let processes = processes()?;
        let mut below = vec![nsys];
        let mut i = 0;
        while i < below.len() {
            let parent = below[i];
            for &(pid, p, session) in &processes {
                if p == parent && !below.contains(&pid) {
                    if session == pid {
                        return Some(true);
                    }
                    below.push(pid);
                }
            }
            i += 1;
        }
        Some(false)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = nsys;
        None
    }
}

/// Every process's pid and its folder under /proc.
#[cfg(target_os = "linux")]
fn process_dirs() -> Option<impl Iterator<Item = (u32, std::path::PathBuf)>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    Some(entries.flatten().filter_map(|entry| {
        let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
        Some((pid, entry.path()))
    }))
}

/// (pid, parent, session) of every process.
#[cfg(target_os = "linux")]
fn processes() -> Option<Vec<(u32, u32, u32)>> {
    let mut processes = Vec::new();
    for (pid, dir) in process_dirs()? {
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        // After the name in parentheses: state, parent, group, session.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if let (Some(Ok(parent)), Some(Ok(session))) = (
            fields.get(1).map(|f| f.parse::<u32>()),
            fields.get(3).map(|f| f.parse::<u32>()),
        ) {
            processes.push((pid, parent, session));
        }
    }
    Some(processes)
}

/// `roots` and every process below them.
#[cfg(target_os = "linux")]
fn with_descendants(roots: &[u32]) -> Vec<u32> {
    let processes = processes().unwrap_or_default();
    let mut below = roots.to_vec();
    let mut i = 0;
    while i < below.len() {
        let parent = below[i];
        for &(pid, p, _) in &processes {
            if p == parent && !below.contains(&pid) {
                below.push(pid);
            }
        }
        i += 1;
    }
    below
}

/// Ends the profiling session of the nsys of pid `nsys_pid` at once, for a
/// program that is about to end: nsys's group, every process below nsys
/// (its command, in a session of its own), and its session agent with what
/// runs below it are killed, and the raw capture the agent wrote removed.
pub(super) fn kill_session(nsys_pid: u32) {
    #[cfg(target_os = "linux")]
    {
        let agent = session_agent(nsys_pid).map(|(pid, _)| pid);
        let captures = agent.map(open_captures).unwrap_or_default();
        let mut roots = vec![nsys_pid];
        roots.extend(agent);
        // Found before any is killed: an orphan is no longer below nsys.
        let doomed = with_descendants(&roots);
        children::kill_group(nsys_pid);
        for pid in doomed {
            if let Ok(pid) = libc::pid_t::try_from(pid) {
                // SAFETY: kill(2) has no memory-safety preconditions.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        for capture in captures {
            let _ = std::fs::remove_file(capture);
        }
    }
    #[cfg(not(target_os = "linux"))]
    children::kill_group(nsys_pid);
}

/// Waits up to `limit` for `child` to exit; whether it did.
fn exits_within(child: &mut Child, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if !matches!(child.try_wait(), Ok(None)) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// How long nsys gets to end a collection it was asked to end.
const GRACE: Duration = Duration::from_secs(20);

/// Ends the profiling session: nsys is asked to end the collection (SIGINT,
/// as a Ctrl-C would), and it stops the command (which it runs in a session
/// of its own) with SIGTERM. An nsys that does not end in time has its
/// session shut down (the command killed) and its process group killed;
/// then the agent it started for the session, which lives outside that
/// group, is ended too.
fn stop_profiling(child: &mut Child, nsys: &Path) {
    let nsys_pid = child.id();
    #[cfg(unix)]
    {
        let pid = nsys_pid as libc::pid_t;
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(pid, libc::SIGINT) };
        if !exits_within(child, GRACE) {
            if let Some((_, session)) = session_agent(nsys_pid) {
                let shutdown = Command::new(nsys)
                    .args(["shutdown", "--kill=sigkill"])
                    .arg(format!("--session={session}"))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn();
                if let Ok(mut shutdown) = shutdown {
                    if !exits_within(&mut shutdown, Duration::from_secs(5)) {
                        let _ = shutdown.kill();
                        let _ = shutdown.wait();
                    }
                }
            }
            exits_within(child, Duration::from_secs(2));
        }
        // Whatever is left in nsys's group (its launcher, its output relay).
        // SAFETY: as above.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let _ = child.kill();
    let _ = child.wait();
    end_session_agent(nsys_pid);
}

/// Ends the agent that the nsys of pid `nsys_pid` started for its session
/// once that nsys is gone: it quits by itself after a session that ended
/// well, and lingers (and upsets later sessions) after one that did not.
fn end_session_agent(nsys_pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while let Some((pid, _)) = session_agent(nsys_pid) {
        if Instant::now() >= deadline {
            // The raw capture it was writing, in the temporary directory,
            // goes with it: nsys is gone and will not move it into place.
            let captures = open_captures(pid);
            #[cfg(unix)]
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL)
            };
            std::thread::sleep(POLL);
            for capture in captures {
                let _ = std::fs::remove_file(capture);
            }
            return;
        }
        std::thread::sleep(POLL);
    }
}

/// The raw captures that the session agent of the nsys of pid `nsys_pid`
/// has open (none where it has no agent).
fn agent_captures(nsys_pid: u32) -> Vec<PathBuf> {
    session_agent(nsys_pid).map_or_else(Vec::new, |(agent, _)| open_captures(agent))
}

/// The raw captures (`nsys-report-*.qdstrm`, nsys's temporary name) that
/// the process `pid` has open.
fn open_captures(pid: u32) -> Vec<PathBuf> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter(|target| {
            target
                .file_name()
                .and_then(OsStr::to_str)
                .is_some_and(|name| name.starts_with("nsys-report-") && name.ends_with(".qdstrm"))
        })
        .collect()
}

/// The pid and session name of the agent that the nsys of pid `nsys_pid`
/// started: the process run as `nsys --start-agent`, whose session is named
/// `profile-<program>-<nsys_pid>` (nsys's own naming of unnamed sessions).
fn session_agent(nsys_pid: u32) -> Option<(u32, String)> {
    #[cfg(target_os = "linux")]
    {
        let suffix = format!("-{nsys_pid}");
        for (pid, dir) in process_dirs()? {
            let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
                continue;
            };
            let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
            if !args.contains(&&b"--start-agent"[..]) {
                continue;
            }
            let session = args.iter().find_map(|a| a.strip_prefix(b"--session-name="));
            if let Some(session) = session.and_then(|s| std::str::from_utf8(s).ok()) {
                if session.starts_with("profile-") && session.ends_with(&suffix) {
                    return Some((pid, session.to_owned()));
                }
            }
        }
        None
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = nsys_pid;
        None
    }
}

/// Imports `qdstrm` into `report` with `importer` (`QdstrmImporter`), and
/// removes `qdstrm` once the report is made, as nsys does when it imports.
fn import_qdstrm(
    importer: &Path,
    qdstrm: &Path,
    report: &Path,
    cancel: Option<&AtomicBool>,
) -> Result<()> {
    let failed = |reason: String| Error::ImportFailed {
        qdstrm: qdstrm.to_owned(),
        importer: importer.to_owned(),
        reason,
    };
    // Its progress bar and messages go to a file: read only if it fails.
    let mut log = tempfile::tempfile().map_err(|e| failed(plain(&e)))?;
    let clone = |log: &File| log.try_clone().map_err(|e| failed(plain(&e)));
    let (log_out, log_err) = (clone(&log)?, clone(&log)?);
    let mut command = Command::new(importer);
    command
        .arg("-f")
        .arg("-i")
        .arg(qdstrm)
        .arg("-o")
        .arg(report)
        .stdin(Stdio::null())
        .stdout(log_out)
        .stderr(log_err);
    // Its own group, as nsys's: a signal to the program's group (`timeout`)
    // does not end it behind the program's back; the program stops it.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    children::dies_with_parent(&mut command);
    let mut child = command.spawn().map_err(|e| failed(plain(&e)))?;
    let _running = children::running(child.id(), Stop::Group);
    let cancelled = || cancel.is_some_and(|c| c.load(Ordering::Relaxed));
    let status = match wait(&mut child, cancel) {
        Waited::Exited(status) if !cancelled() => status,
        Waited::Failed(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failed(plain(&e)));
        }
        Waited::Cancelled | Waited::Exited(_) => {
            children::kill_group(child.id());
            let _ = child.wait();
            // Made by this run, as the report would have been: nothing is kept.
            for made in [report, qdstrm] {
                let _ = std::fs::remove_file(made);
            }
            return Err(Error::ProfilingInterrupted {
                command: importer.display().to_string(),
            });
        }
    };
    if status.success() && report.is_file() {
        let _ = std::fs::remove_file(qdstrm);
        return Ok(());
    }
    let _ = std::fs::remove_file(report);
    let mut said = Vec::new();
    let _ = log
        .seek(SeekFrom::Start(0))
        .and_then(|_| log.read_to_end(&mut said));
    // Its progress bar redraws with carriage returns: one line per draw.
    let said = String::from_utf8_lossy(&said).replace('\r', "\n");
    Err(failed(nsys_message(&said).unwrap_or_else(|| {
        format!("it exited with status {}", exit_code(status))
    })))
}

/// The `QdstrmImporter` of the nsys install that `nsys` belongs to: looked
/// for in the `host-linux-*` and `linux-desktop-*` folders near the CLI,
/// following each link from the name given to the real program (a Debian
/// install links `/usr/bin/nsys` to `/usr/lib/nsight-systems/bin/nsys`, whose
/// host folder is `/usr/lib/nsight-systems/host-linux-x64`), then on PATH.
fn find_qdstrm_importer(nsys: &Path) -> Option<PathBuf> {
    let start = if nsys.components().count() > 1 {
        Some(nsys.to_owned())
    } else {
        on_path(nsys.as_os_str())
    };
    let mut hops = Vec::new();
    let mut at = start;
    while let Some(path) = at.take() {
        if hops.len() > 16 || hops.contains(&path) {
            break;
        }
        at = std::fs::read_link(&path)
            .ok()
            .map(|target| match path.parent() {
                Some(dir) => dir.join(target),
                None => target,
            });
        hops.push(path);
    }
    if let Some(real) = hops.last().and_then(|p| std::fs::canonicalize(p).ok()) {
        hops.push(real);
    }
    for hop in &hops {
        // The CLI sits in bin/ or target-linux-x64/ of the install, or in
        // a version folder below it: three levels up is far enough.
        for dir in hop.ancestors().skip(1).take(3) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut hosts: Vec<PathBuf> = entries
                .flatten()
                .filter(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.starts_with("host-linux-") || name.starts_with("linux-desktop-")
                })
                .map(|e| e.path().join(IMPORTER))
                .filter(|p| is_executable(p))
                .collect();
            hosts.sort();
            if let Some(found) = hosts.into_iter().next() {
                return Some(found);
            }
        }
    }
    on_path(OsStr::new(IMPORTER))
}

const IMPORTER: &str = "QdstrmImporter";

/// `program` as PATH finds it.
fn on_path(program: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    meta.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_names_take_one_extension() {
        let p = |o: &str| {
            let mut run = NsysProfile::new(["true"]);
            run.output = Some(PathBuf::from(o));
            (run.report_path(), run.qdstrm_path())
        };
        assert_eq!(p("out/run").0, PathBuf::from("out/run.nsys-rep"));
        assert_eq!(p("out/run.nsys-rep").0, PathBuf::from("out/run.nsys-rep"));
        assert_eq!(p("run.v2").0, PathBuf::from("run.v2.nsys-rep"));
        assert_eq!(p("run.qdstrm").1, PathBuf::from("run.qdstrm"));
    }

    #[test]
    fn unused_names_skip_every_kind_of_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(unused_report_name(dir.path()), dir.path().join("report1"));
        std::fs::write(dir.path().join("report1.qdstrm"), b"").unwrap();
        std::fs::write(dir.path().join("report2.perfetto-trace"), b"").unwrap();
        assert_eq!(unused_report_name(dir.path()), dir.path().join("report3"));
    }

    #[cfg(unix)]
    #[test]
    fn finds_the_importer_through_links() {
        use std::os::unix::fs::{symlink, PermissionsExt};
        // Debian's layout: /usr/bin/nsys -> ../lib/nsight-systems/bin/nsys
        // -> ../target-linux-x64/nsys, a link to a folder elsewhere; the
        // importer in /usr/lib/nsight-systems/host-linux-x64.
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        for dir in [
            "usr/bin",
            "usr/lib/nsight-systems/bin",
            "usr/lib/nsight-systems/host-linux-x64",
            "usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64",
        ] {
            std::fs::create_dir_all(r.join(dir)).unwrap();
        }
        let executable = |path: PathBuf| {
            std::fs::write(&path, b"#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path
        };
        executable(r.join("usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64/nsys"));
        let importer = executable(r.join("usr/lib/nsight-systems/host-linux-x64/QdstrmImporter"));
        symlink(
            "../x86_64-linux-gnu/nsight-systems/target-linux-x64",
            r.join("usr/lib/nsight-systems/target-linux-x64"),
        )
        .unwrap();
        symlink(
            "../target-linux-x64/nsys",
            r.join("usr/lib/nsight-systems/bin/nsys"),
        )
        .unwrap();
        symlink("../lib/nsight-systems/bin/nsys", r.join("usr/bin/nsys")).unwrap();
        let found = find_qdstrm_importer(&r.join("usr/bin/nsys")).unwrap();
        assert!(same(&found, &importer), "{}", found.display());

        // NVIDIA's own layout: <install>/target-linux-x64/nsys beside
        // <install>/host-linux-x64/QdstrmImporter.
        let install = r.join("opt/nvidia/nsight-systems/2024.1.1");
        std::fs::create_dir_all(install.join("target-linux-x64")).unwrap();
        std::fs::create_dir_all(install.join("host-linux-x64")).unwrap();
        let nsys = executable(install.join("target-linux-x64/nsys"));
        let importer = executable(install.join("host-linux-x64/QdstrmImporter"));
        let found = find_qdstrm_importer(&nsys).unwrap();
        assert!(same(&found, &importer), "{}", found.display());

        // A CLI with no host folder near it: no importer (unless PATH has one).
        let lone = r.join("lone");
        std::fs::create_dir_all(lone.join("bin")).unwrap();
        let nsys = executable(lone.join("bin/nsys"));
        if on_path(OsStr::new(IMPORTER)).is_none() {
            assert_eq!(find_qdstrm_importer(&nsys), None);
        }
    }

    fn same(a: &Path, b: &Path) -> bool {
        std::fs::canonicalize(a).unwrap() == std::fs::canonicalize(b).unwrap()
    }
}
