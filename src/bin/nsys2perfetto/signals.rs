//! Ctrl-C and SIGTERM: a run stops cleanly at the first; at the second it
//! ends at once, but only after the nsys processes it runs are stopped and
//! its temporary folders removed: nothing outlives it, however it was
//! signalled (`timeout` signals the program and then its process group, two
//! signals in an instant). SIGXFSZ: a write past the file size limit fails
//! as an error.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// SIGINT and SIGTERM, caught: the first sets the cancellation flag that
/// the run watches (it then cleans up and stops); a second one of either
/// ends the program at once ([`end_now`]).
pub struct Signals {
    pub cancel: Arc<AtomicBool>,
    /// The exit status the last signal calls for (128 + its number), 0 for none.
    status: Arc<AtomicUsize>,
}

impl Signals {
    #[cfg(unix)]
    pub fn watch() -> std::io::Result<Signals> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        use signal_hook::flag;
        let signals = Signals {
            cancel: Arc::new(AtomicBool::new(false)),
            status: Arc::new(AtomicUsize::new(0)),
        };
        for signal in [SIGINT, SIGTERM] {
            let status = 128 + signal;
            flag::register_usize(signal, Arc::clone(&signals.status), status as usize)?;
            flag::register(signal, Arc::clone(&signals.cancel))?;
        }
        // The second signal is seen by a thread, outside the handler, where
        // processes can be looked for and folders removed.
        let mut arrivals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
        let status = Arc::clone(&signals.status);
        std::thread::Builder::new()
            .name("signals".to_owned())
            .spawn(move || {
                let mut seen = 0;
                for _ in arrivals.forever() {
                    seen += 1;
                    if seen >= 2 {
                        end_now(status.load(Ordering::SeqCst));
                    }
                }
            })?;
        // Past the file size limit (`ulimit -f`), SIGXFSZ would kill the
        // process in the middle of a write and leave its temporary file
        // behind. Caught, it leaves the write to fail (EFBIG): an error like
        // any other, after which the temporary file is removed. A handler,
        // unlike SIG_IGN, is not inherited by nsys or a profiled program.
        flag::register(
            signal_hook::consts::SIGXFSZ,
            Arc::new(AtomicBool::new(false)),
        )?;
        Ok(signals)
    }

    #[cfg(not(unix))]
    pub fn watch() -> std::io::Result<Signals> {
        Ok(Signals {
            cancel: Arc::new(AtomicBool::new(false)),
            status: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The exit status for the signal received, if one was.
    pub fn received(&self) -> Option<u8> {
        match self.status.load(Ordering::SeqCst) {
            0 => None,
            status => Some(u8::try_from(status).unwrap_or(u8::MAX)),
        }
    }
}

/// How long the run gets to finish by itself once its nsys processes are
/// stopped: it watches the cancellation flag, and then removes what it
/// wrote (its outputs' temporary files) as it returns.
#[cfg(unix)]
const FINISH: std::time::Duration = std::time::Duration::from_secs(2);

/// Ends the program at a second signal: its nsys processes (with what they
/// started) killed, the run given [`FINISH`] to end by itself, then its
/// temporary folders removed and the program ended with `status`.
#[cfg(unix)]
fn end_now(status: usize) -> ! {
    nsys2perfetto::stop_children_now();
    std::thread::sleep(FINISH);
    nsys2perfetto::temporaries::remove_own();
    eprintln!("nsys2perfetto: interrupted again: stopped at once");
    let status = i32::try_from(status).unwrap_or(1);
    // SAFETY: _exit(2) ends the process without running anything of the
    // threads still at work (no exit handlers racing with them).
    unsafe { libc::_exit(status) }
}
