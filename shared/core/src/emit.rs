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

/// Writes the one protocol line to stdout (a newline is appended); true when it was written and
/// flushed.
pub fn stdout_line(line: &str) -> bool {
    let _guard = lock();
    let mut out = std::io::stdout().lock();
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    make_room(&out, buf.len());
    // A closed stdout means the host stopped listening; there is nobody left to tell.
    out.write_all(buf.as_bytes()).is_ok() && out.flush().is_ok()
}

/// The most a stdout pipe is grown to: Linux's default limit for an unprivileged process, so the
/// hook behaves the same whoever runs it.
const MAX_PIPE_BYTES: usize = 1 << 20;

/// Grows a stdout pipe (up to [`MAX_PIPE_BYTES`]) until `len` more bytes fit: the line then goes
/// in without blocking, so a host that reads stdout only once the hook has exited still gets the
/// whole line, and the watchdog can never end the process halfway through it. Not a pipe, or no
/// room to be had (a larger answer, a lower system limit): nothing changes.
fn make_room(out: &impl std::os::fd::AsFd, len: usize) {
    let Ok(capacity) = rustix::pipe::fcntl_getpipe_size(out) else {
        return;
    };
    let unread = rustix::io::ioctl_fionread(out)
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    if capacity.saturating_sub(unread) < len {
        let want = (unread + len).next_power_of_two();
        if want <= MAX_PIPE_BYTES {
            let _ = rustix::pipe::fcntl_setpipe_size(out, want);
        }
    }
}

/// Writes one diagnostic line to stderr.
pub fn diagnostic(d: &Diagnostic) {
    journal::observe(d);
    let line = with_newline(d.to_line());
    let _guard = lock();
    let _ = std::io::stderr().lock().write_all(&line);
}

/// The line and its newline in one buffer: stderr is unbuffered, so `writeln!` would make two
/// `write`s, and one keeps a line whole next to other processes' lines on a shared pipe.
fn with_newline(line: String) -> Vec<u8> {
    let mut bytes = line.into_bytes();
    bytes.push(b'\n');
    bytes
}

/// Writes a final diagnostic line without ever blocking the caller for more than a few
/// milliseconds: the write happens on its own thread, which waits briefly for a line in progress
/// to finish and then writes anyway (stderr is a separate stream from a stalled stdout). A stderr
/// the host does not read only loses the line; the caller goes on.
pub fn last_words(d: &Diagnostic) {
    journal::observe(d);
    let line = with_newline(d.to_line());
    let (done, finished) = std::sync::mpsc::channel();
    // A thread that cannot be started (a process at its limit) costs the line, never the exit.
    let spawned = std::thread::Builder::new().spawn(move || {
        let guard = lock_briefly();
        let _ = std::io::stderr().lock().write_all(&line);
        drop(guard);
        let _ = done.send(());
    });
    // Long enough for a loaded machine to schedule the writer, short next to any budget.
    if spawned.is_ok() {
        let _ = finished.recv_timeout(std::time::Duration::from_millis(60));
    }
}

/// Our line lock, if it can be had within 20 ms (a writer that holds it longer is blocked on a
/// host that does not read).
fn lock_briefly() -> Option<MutexGuard<'static, ()>> {
    let start = std::time::Instant::now();
    loop {
        match LOCK.try_lock() {
            Ok(g) => return Some(g),
            Err(TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => {}
        }
        if start.elapsed() > std::time::Duration::from_millis(20) {
            return None;
        }
        std::thread::yield_now();
    }
}

/// Ends the process with exit code 0 without tearing a line in progress. Used by the watchdog and
/// the panic hook: both must fail open, and neither may block: a stdout writer stalled on a host
/// that does not read keeps its lock, so nothing here waits on stdout.
#[allow(clippy::exit, reason = "fail-open exit from the watchdog and the panic hook")]
pub fn exit_quietly() -> ! {
    // The run is journaled first (it never touches this module's lock), from a helper thread with
    // a bounded wait: a state directory on a stalled disk (a hung network home) must not hold the
    // exit past the budget.
    let (done, finished) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().spawn(move || {
        journal::finish_abrupt();
        let _ = done.send(());
    });
    if spawned.is_ok() {
        let _ = finished.recv_timeout(std::time::Duration::from_millis(100));
    }
    // A line being written by another thread is finished first; if this thread itself holds the
    // lock (a panic inside a write), exit at once rather than deadlock.
    let guard = lock_briefly();
    // No stdout flush: every line is written and flushed under the lock, so nothing is buffered
    // once the lock is free, and flushing would block behind a stalled writer. `exit` itself only
    // try-locks stdout.
    std::mem::forget(guard);
    std::process::exit(0)
}
