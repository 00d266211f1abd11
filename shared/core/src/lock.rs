//! Advisory file locks between hook processes, the drainer and the CLI: the one module that calls
//! std's `File::lock`/`try_lock`. A wait is always bounded by a [`Deadline`]; it never blocks
//! without one, because a hook must answer its host on time whoever holds the lock.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use crate::deadline::Deadline;

/// A held exclusive lock; released when dropped (closing the file releases it, also on a crash).
#[derive(Debug)]
pub struct LockGuard {
    _file: File,
}

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Someone else held it until the deadline.
    #[error("lock busy until the deadline")]
    Busy,
    /// The lock file could not be opened or locked.
    #[error("lock file unusable: {0}")]
    Io(#[from] io::Error),
}

fn open(path: &Path) -> io::Result<File> {
    // Read access is enough for flock; the file is never written, so a read-only lock file
    // (another user's umask, a read-only bind mount) still works.
    // Never through a symlink planted in the state directory.
    let nofollow = no_follow_flags();
    open_private(path).or_else(|e| {
        if e.kind() == io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(30) {
            // No lock file to fall back on: the first error says why (read-only, denied).
            OpenOptions::new()
                .read(true)
                .custom_flags(nofollow)
                .open(path)
                .map_err(|other| {
                    if other.kind() == io::ErrorKind::NotFound {
                        e
                    } else {
                        other
                    }
                })
        } else {
            Err(e)
        }
    })
}

/// Opens a state file for reading and writing, creating it when absent: owner-only from its first
/// byte, never through a link planted under its name, never blocking on a FIFO.
///
/// # Errors
/// The I/O error of the open.
pub fn open_private(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(no_follow_flags())
        .open(path)
}

/// `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`: opening never follows a final symlink and never blocks
/// (a FIFO planted under a state-file name must not hang a hook or a drain).
#[must_use]
pub fn no_follow_flags() -> i32 {
    use rustix::fs::OFlags;
    #[expect(clippy::cast_possible_wrap, reason = "open(2) flags fit an int")]
    let flags = (OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC).bits() as i32;
    flags
}

/// Tries to take an exclusive lock on an already open file (a spool entry claimed by the hook
/// delivering it, or by the drainer replaying it). `Ok(false)` when someone else holds it. The
/// lock goes with the file: closing it, or the holder dying, releases it.
///
/// # Errors
/// The I/O error when the file cannot be locked at all.
pub fn try_lock_file(file: &File) -> io::Result<bool> {
    try_once(file)
}

#[expect(
    clippy::disallowed_methods,
    reason = "this module is the one place that takes file locks"
)]
fn try_once(file: &File) -> Result<bool, io::Error> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(TryLockError::WouldBlock) => Ok(false),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

/// Takes the lock if it is free right now.
///
/// # Errors
/// [`LockError::Busy`] when it is held, [`LockError::Io`] when the file is unusable.
pub fn try_acquire(path: &Path) -> Result<LockGuard, LockError> {
    let file = open(path)?;
    if try_once(&file)? {
        Ok(LockGuard { _file: file })
    } else {
        Err(LockError::Busy)
    }
}

/// Takes the lock, polling until `deadline` (std offers no timed blocking lock). The poll interval
/// grows from 1 ms to 20 ms: short waits stay short, long waits stay cheap.
///
/// # Errors
/// [`LockError::Busy`] when the deadline passed first, [`LockError::Io`] when the file is unusable.
pub fn acquire(path: &Path, deadline: &Deadline) -> Result<LockGuard, LockError> {
    let file = open(path)?;
    let mut pause = Duration::from_millis(1);
    loop {
        if try_once(&file)? {
            return Ok(LockGuard { _file: file });
        }
        let left = deadline.remaining();
        if left.is_zero() {
            return Err(LockError::Busy);
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn exclusive_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = try_acquire(&path).unwrap();
        assert!(matches!(try_acquire(&path), Err(LockError::Busy)));
        let start = Instant::now();
        assert!(matches!(
            acquire(&path, &Deadline::after(Duration::from_millis(60))),
            Err(LockError::Busy)
        ));
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_millis(55) && waited < Duration::from_millis(500),
            "{waited:?}"
        );
        drop(held);
        assert!(acquire(&path, &Deadline::after(Duration::from_millis(60))).is_ok());
    }

    #[test]
    fn waiter_gets_the_lock_once_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = try_acquire(&path).unwrap();
        let p2 = path.clone();
        let t = std::thread::spawn(move || acquire(&p2, &Deadline::after(Duration::from_secs(5))).is_ok());
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        assert!(t.join().unwrap());
    }

    #[test]
    fn missing_directory_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope").join("x.lock");
        assert!(matches!(try_acquire(&path), Err(LockError::Io(_))));
    }
}
