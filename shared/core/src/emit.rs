//! The only writer of the hook's stdout (the host protocol) and stderr (diagnostic lines). One
//! lock serializes them so a line is never torn, even when the watchdog ends the process.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "this module is the one place that writes them"
)]

use std::io::Write;
use std::sync::{Mutex, MutexGuard, TryLockError};

use crate::journal;
use crate::outcome::Diagnostic;

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes the one protocol line to stdout (a newline is appended).
pub fn stdout_line(line: &str) {
    let _guard = lock();
    let mut out = std::io::stdout().lock();
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    // A closed stdout means the host stopped listening; there is nobody left to tell.
    let _ = out.write_all(buf.as_bytes());
    let _ = out.flush();
}

/// Writes one diagnostic line to stderr.
pub fn diagnostic(d: &Diagnostic) {
    journal::observe(d);
    let line = d.to_line();
    let _guard = lock();
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// Ends the process with exit code 0 without tearing a line in progress. Used by the watchdog and
/// the panic hook: both must fail open.
#[allow(clippy::exit, reason = "fail-open exit from the watchdog and the panic hook")]
pub fn exit_quietly() -> ! {
    // The run is journaled first (it never touches this module's lock).
    journal::finish_abrupt();
    // A line being written by another thread is finished first; if this thread itself holds the
    // lock (a panic inside a write), exit at once rather than deadlock.
    let guard = match LOCK.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => {
            let start = std::time::Instant::now();
            loop {
                if let Ok(g) = LOCK.try_lock() {
                    break Some(g);
                }
                if start.elapsed() > std::time::Duration::from_millis(20) {
                    break None;
                }
                std::thread::yield_now();
            }
        }
    };
    let _ = std::io::stdout().lock().flush();
    std::mem::forget(guard);
    std::process::exit(0)
}
