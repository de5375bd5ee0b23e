//! Ctrl-C and SIGTERM: a conversion stops cleanly at the first, the program at the second.
//! SIGXFSZ: a write past the file size limit fails as an error.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// SIGINT and SIGTERM, caught: the first sets the cancellation flag that
/// the conversion watches (it then cleans up and stops); a second one of
/// either ends the program at once.
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
            // First, so that it sees the flag as the previous signal left it.
            flag::register_conditional_shutdown(signal, status, Arc::clone(&signals.cancel))?;
            flag::register_usize(signal, Arc::clone(&signals.status), status as usize)?;
            flag::register(signal, Arc::clone(&signals.cancel))?;
        }
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
