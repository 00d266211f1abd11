//! Bounded reads of the files other people and programs write that we only read (our config file,
//! the official CLI's files, a repository's `.git/config`, a host's settings): a regular file of at
//! most a cap, opened non-blocking so that a FIFO swapped in after the look is never waited on,
//! and read at most cap + 1 bytes whatever its size claimed. It never reads the state directory's
//! files (those are owner-only, see [`crate::state`]) and never says what a file holds.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Whether a link to a regular file is read (dotfile managers link configuration files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// The link's target is read.
    Follow,
    /// A link is refused as not regular.
    Refuse,
}

/// Why a file that is there was not read.
#[derive(Debug)]
pub enum Problem {
    /// A directory, FIFO, device or socket (or, with [`Links::Refuse`], a link).
    NotRegular,
    /// Larger than the cap.
    TooLarge,
    /// The look or the read failed.
    Unreadable(io::Error),
}

/// The bytes of the regular file at `path` and the metadata of what was actually opened (for an
/// owner check), `None` when there is no file.
///
/// # Errors
/// A [`Problem`] when something is there but is not a regular file of at most `cap` bytes.
pub fn read(path: &Path, cap: u64, links: Links) -> Result<Option<(Vec<u8>, Metadata)>, Problem> {
    let looked = match links {
        Links::Follow => std::fs::metadata(path),
        Links::Refuse => std::fs::symlink_metadata(path),
    };
    match looked {
        Ok(m) if !m.is_file() => return Err(Problem::NotRegular),
        Ok(m) if m.len() > cap => return Err(Problem::TooLarge),
        Ok(_) => {}
        Err(e) if is_absent(&e) => return Ok(None),
        Err(e) => return Err(Problem::Unreadable(e)),
    }
    let mut flags = libc::O_NONBLOCK;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let file: File = OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(Problem::Unreadable)?;
    // The path may have been swapped between the look and the open: judge what was opened.
    let meta = file.metadata().map_err(Problem::Unreadable)?;
    if !meta.is_file() {
        return Err(Problem::NotRegular);
    }
    // Sized from the file's length: one read and the end-of-file read, not a growing series.
    let expected = usize::try_from(meta.len().min(cap)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(expected.saturating_add(1));
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(Problem::Unreadable)?;
    if bytes.len() as u64 > cap {
        return Err(Problem::TooLarge);
    }
    Ok(Some((bytes, meta)))
}

/// Whether a failed look means "no file there": missing, or a path component that is not a
/// directory (`HOME` naming a file: `$HOME/.config/…` cannot exist), which is the same answer.
#[must_use]
pub fn is_absent(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_small_regular_file_is_read_and_a_link_only_when_followed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        assert!(read(&file, 8, Links::Follow).unwrap().is_none());
        std::fs::write(&file, "12345678").unwrap();
        assert_eq!(read(&file, 8, Links::Follow).unwrap().unwrap().0, b"12345678");
        assert!(matches!(read(&file, 7, Links::Follow), Err(Problem::TooLarge)));
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(read(&link, 8, Links::Follow).unwrap().is_some());
        assert!(matches!(read(&link, 8, Links::Refuse), Err(Problem::NotRegular)));
        assert!(matches!(
            read(dir.path(), 8, Links::Follow),
            Err(Problem::NotRegular)
        ));
        let fifo = dir.path().join("p");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert!(matches!(read(&fifo, 8, Links::Follow), Err(Problem::NotRegular)));
        // A device is refused by its type, never read.
        assert!(matches!(
            read(Path::new("/dev/zero"), 8, Links::Follow),
            Err(Problem::NotRegular)
        ));
    }
}
