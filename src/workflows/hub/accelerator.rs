//! trace_processor for traces too big for a browser tab, as `open --tp`
//! uses it: the UI's own trace_processor (WebAssembly in the tab) cannot
//! hold them, so the hub loads the trace in trace_processor_shell on this
//! machine, which the UI then uses as its accelerator. One runs at a time
//! (the UI talks to one); the hub stops it when it stops.

use std::path::PathBuf;
use std::process::Child;
use std::sync::Mutex;

use super::bound::Pinned;
use crate::error::{Error, Result};
use crate::workflows::serve::{spawn_trace_processor, trace_processor_on_path};

/// The trace_processor for traces too big for a tab: where it is, or why
/// there is none; its port; the tab's limit.
pub(crate) struct Accelerators {
    /// The program, or why there is none (a line the page shows).
    pub(crate) program: std::result::Result<PathBuf, String>,
    /// The port it listens on (the UI's default, 9001, unless told).
    pub(crate) port: u16,
    /// The memory beyond which a trace does not fit a tab.
    pub(crate) tab_limit: u64,
    /// The one running, with the trace it loaded (kept in the cache while
    /// it runs).
    running: Mutex<Option<(Child, Pinned)>>,
}

impl Accelerators {
    /// `given` (`--tp`), else trace_processor_shell or trace_processor on
    /// PATH, as `open` looks for it.
    pub(crate) fn new(given: Option<PathBuf>, port: u16, tab_limit: u64) -> Accelerators {
        let program = match given {
            Some(path) if path.is_file() => Ok(path),
            Some(path) => Err(format!("--tp {}: no such file", path.display())),
            None => trace_processor_on_path().ok_or_else(|| {
                "trace_processor_shell is not on PATH: start serve with --tp PATH \
                 (https://perfetto.dev/docs/analysis/trace-processor)"
                    .to_owned()
            }),
        };
        Accelerators {
            program,
            port,
            tab_limit,
            running: Mutex::new(None),
        }
    }

    /// Stops the one running, if any.
    pub(crate) fn stop(&self) {
        let old = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some((mut child, _trace)) = old {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts trace_processor on `trace`, stopping the one before.
    pub(crate) fn start(&self, trace: Pinned) -> Result<()> {
        let program = self
            .program
            .clone()
            .map_err(|reason| Error::Serve { reason })?;
        self.stop();
        if std::net::TcpListener::bind(("127.0.0.1", self.port)).is_err() {
            return Err(Error::Serve {
                reason: format!(
                    "port {} of 127.0.0.1 is in use (another trace_processor?): stop what \
                     uses it, or start serve with another --tp-port",
                    self.port
                ),
            });
        }
        let child = spawn_trace_processor(&program, trace.path(), self.port)?;
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = Some((child, trace));
        Ok(())
    }
}
