//! How a hook process starts and stops: the fail-open panic hook, the watchdog that ends the process
//! at its budget whatever is blocking, and the capped stdin read. It never decides what to inject.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::emit;
use crate::outcome::{Diagnostic, Outcome, Stage};

/// Largest stdin payload read (a 200,000-character prompt JSON-escaped fits comfortably).
pub const MAX_STDIN_BYTES: u64 = 8 * 1024 * 1024;

/// Extra time the watchdog grants past the budget before ending the process.
pub const WATCHDOG_GRACE: Duration = Duration::from_millis(50);

static WATCHDOG_AT_MS: AtomicU64 = AtomicU64::new(u64::MAX);

/// Installs the fail-open panic hook: one content-free `internal_error` line on stderr, nothing on
/// stdout, exit code 0. With `panic = "abort"` the hook runs before the abort and pre-empts it.
pub fn install_panic_hook(component: &'static str) {
    std::panic::set_hook(Box::new(move |_info| {
        // The panic message may quote data (a prompt, a body): only the outcome is reported.
        emit::diagnostic(&Diagnostic::new(
            component,
            Stage::Process,
            Outcome::InternalError,
        ));
        emit::exit_quietly();
    }));
}

/// Starts (or moves) the watchdog: at `start + budget + grace` the process exits 0, whatever any
/// thread is blocked on (a host that never closes stdin, a slow disk, a stuck lock).
pub fn arm_watchdog(start: Instant, budget: Duration) {
    let at = (budget + WATCHDOG_GRACE)
        .as_millis()
        .min(u128::from(u64::MAX - 1));
    let previous = WATCHDOG_AT_MS.swap(u64::try_from(at).unwrap_or(u64::MAX - 1), Ordering::SeqCst);
    if previous == u64::MAX {
        std::thread::spawn(move || {
            loop {
                let at = Duration::from_millis(WATCHDOG_AT_MS.load(Ordering::SeqCst));
                let elapsed = start.elapsed();
                if elapsed >= at {
                    emit::exit_quietly();
                }
                std::thread::sleep((at - elapsed).min(Duration::from_millis(250)));
            }
        });
    }
}

/// Why stdin could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinProblem {
    /// More than [`MAX_STDIN_BYTES`].
    TooLarge,
    /// A read error.
    Unreadable,
}

/// Reads stdin up to the cap.
///
/// # Errors
/// [`StdinProblem`] when the payload is too large or cannot be read.
pub fn read_stdin() -> Result<Vec<u8>, StdinProblem> {
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut handle = std::io::stdin().lock().take(MAX_STDIN_BYTES + 1);
    handle
        .read_to_end(&mut buf)
        .map_err(|_| StdinProblem::Unreadable)?;
    if buf.len() as u64 > MAX_STDIN_BYTES {
        return Err(StdinProblem::TooLarge);
    }
    Ok(buf)
}

/// Reads stdin up to the cap; when it cannot be used, reports `skipped` (`stdin_too_large` or
/// `stdin_unreadable`) for `component` and returns `None`.
#[must_use]
pub fn read_payload(component: &str) -> Option<Vec<u8>> {
    match read_stdin() {
        Ok(b) => Some(b),
        Err(p) => {
            let detail = if p == StdinProblem::TooLarge {
                "stdin_too_large"
            } else {
                "stdin_unreadable"
            };
            emit::diagnostic(&Diagnostic::new(component, Stage::Payload, Outcome::Skipped).detail(detail));
            None
        }
    }
}
