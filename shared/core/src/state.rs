//! The on-disk state directory shared by every host executable and the CLI: where it is, its
//! permissions (directory 0700, files 0600, everything owned by the effective user), the format
//! version carried by every file, atomic writes (temp file + fsync + rename) and the sweep of temp
//! files a killed writer left behind. It never overwrites a file written by a newer format, never
//! stores a token, never follows a symlink inside the directory and never opens a non-regular
//! file there; a directory or file another user owns or can write is never used.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::base::default_state_dir;
pub use crate::base::euid;
use crate::deadline::Deadline;
use crate::env::Env;
use crate::lock::{self, LockError, LockGuard};

/// The format version written into every state file. A file with a larger number was written by
/// a newer release: it is left untouched and reported.
pub const FORMAT: u64 = 1;

/// Prefix of in-flight temp files; anything with it found under the state lock is a leftover.
pub const TEMP_PREFIX: &str = ".tmp.";

/// The lock serializing every read-modify-write of the state files (held for milliseconds).
pub const STATE_LOCK: &str = "state.lock";

/// The longest a hook waits for the state lock (also bounded by its process deadline): a hook
/// that cannot get it in time skips the state work and still answers on time.
pub const HOOK_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Why the state could not be used. Content-free: no paths, no data.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Neither the override variable nor a home directory names a location.
    #[error("no state directory (set POWERCONTEXT_HOOKS_STATE_DIR)")]
    NoLocation,
    /// The lock stayed busy until the deadline.
    #[error("state lock busy")]
    Busy,
    /// A file has a newer format version; it was left untouched.
    #[error("a state file was written by a newer version of powercontext-hooks")]
    NewerFormat,
    /// A file is not valid state; it was moved aside as `*.corrupt`.
    #[error("a state file was unreadable and was moved aside")]
    Corrupt,
    /// The directory or a file in it is owned by another user, writable by group or others, or a
    /// symlink: it is never used.
    #[error("the state directory or a file in it is owned by another user or writable by others")]
    Unsafe,
    /// A file-system error (read-only, full disk, permissions…).
    #[error("state directory unusable: {0}")]
    Io(#[from] io::Error),
}

impl StateError {
    /// A closed detail word for diagnostics.
    #[must_use]
    pub fn detail(&self) -> &'static str {
        match self {
            Self::NoLocation => "no_location",
            Self::Busy => "lock_busy",
            Self::NewerFormat => "newer_format",
            Self::Corrupt => "corrupt",
            Self::Unsafe => "unsafe_permissions",
            Self::Io(e) => match e.raw_os_error() {
                Some(28) => "disk_full",
                Some(30) => "read_only",
                Some(27) => "file_too_large",
                _ if e.kind() == io::ErrorKind::PermissionDenied => "permission_denied",
                _ if e.kind() == io::ErrorKind::NotADirectory => "not_a_directory",
                _ => "io_error",
            },
        }
    }
}

impl From<LockError> for StateError {
    fn from(e: LockError) -> Self {
        match e {
            LockError::Busy => Self::Busy,
            LockError::Io(e) => Self::Io(e),
        }
    }
}

/// The largest state file read (a ledger of thousands of scopes fits many times over; a spool
/// entry holds at most one capture of 200,000 characters).
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// A temp file older than this belongs to a writer that died: no hook or drainer lives this long.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(600);

static TIGHTENED: AtomicBool = AtomicBool::new(false);

/// Whether this process tightened a loose state directory (reported once by the caller).
#[must_use]
pub fn take_tightened() -> bool {
    TIGHTENED.swap(false, Ordering::Relaxed)
}

/// What is wrong with a state directory's permissions, if anything (read-only check for `status`
/// and `doctor`; the hooks repair a loose mode themselves).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirProblem {
    /// Owned by another user: never used.
    ForeignOwner,
    /// A symlink or not a directory where a directory belongs: never used.
    NotADirectory,
    /// Owned by us but readable or writable by group or others: tightened on next use.
    LooseMode,
}

impl DirProblem {
    /// What to do about it (shown by `status` and `doctor`).
    #[must_use]
    pub fn fix(self) -> &'static str {
        match self {
            Self::ForeignOwner => {
                "the state directory is owned by another user: remove it (or set POWERCONTEXT_HOOKS_STATE_DIR to a directory you own); it is never used as it is"
            }
            Self::NotADirectory => {
                "a symlink or file stands where the state directory or its spool belongs: remove it"
            }
            Self::LooseMode => "chmod 700 the state directory (the next hook does it)",
        }
    }

    /// The closed detail word.
    #[must_use]
    pub fn word(self) -> &'static str {
        match self {
            Self::ForeignOwner | Self::NotADirectory => "unsafe_permissions",
            Self::LooseMode => "loose_permissions",
        }
    }
}

fn dir_problem(meta: &fs::Metadata) -> Option<DirProblem> {
    if !meta.is_dir() {
        Some(DirProblem::NotADirectory)
    } else if meta.uid() != euid() {
        Some(DirProblem::ForeignOwner)
    } else if meta.mode() & 0o077 != 0 {
        Some(DirProblem::LooseMode)
    } else {
        None
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
#[must_use]
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Milliseconds since the Unix epoch.
#[must_use]
pub fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The state directory (it may not exist yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// The configured location: `POWERCONTEXT_HOOKS_STATE_DIR`, else the user state directory.
    ///
    /// # Errors
    /// [`StateError::NoLocation`] when nothing names one.
    pub fn locate(env: &Env) -> Result<Self, StateError> {
        default_state_dir(env).map(Self::at).ok_or(StateError::NoLocation)
    }

    /// A state directory at an explicit path.
    #[must_use]
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The directory.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// A file in the directory.
    #[must_use]
    pub fn file(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Creates the directory (0700) and a subdirectory if missing, and checks both: owned by the
    /// effective user, a real directory (the subdirectory is never a symlink). A looser mode on a
    /// directory we own is tightened to 0700 (see [`take_tightened`]).
    ///
    /// # Errors
    /// [`StateError::Unsafe`] for another user's directory or a symlinked subdirectory, else the
    /// I/O error when a directory cannot be created.
    pub fn ensure(&self, sub: Option<&str>) -> Result<(), StateError> {
        // The root may be reached through symlinks the user set up; what it resolves to is checked.
        let meta = match fs::metadata(&self.root) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Some(parent) = self.root.parent() {
                    fs::create_dir_all(parent)?;
                }
                match DirBuilder::new().mode(0o700).create(&self.root) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e.into()),
                }
                fs::metadata(&self.root)?
            }
            Err(e) => return Err(e.into()),
        };
        if !meta.is_dir() {
            return Err(io::Error::from(io::ErrorKind::NotADirectory).into());
        }
        check_dir(&self.root, &meta)?;
        let Some(sub) = sub else { return Ok(()) };
        let target = self.root.join(sub);
        let meta = match fs::symlink_metadata(&target) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match DirBuilder::new().mode(0o700).create(&target) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e.into()),
                }
                fs::symlink_metadata(&target)?
            }
            Err(e) => return Err(e.into()),
        };
        check_dir(&target, &meta)
    }

    /// Whether the directory exists, without creating it.
    ///
    /// # Errors
    /// The I/O error ([`io::ErrorKind::NotADirectory`] for a file or anything else standing where
    /// the directory belongs): a caller refuses it rather than read it as empty.
    pub fn exists(&self) -> Result<bool, StateError> {
        match fs::metadata(&self.root) {
            Ok(m) if m.is_dir() => Ok(true),
            Ok(_) => Err(io::Error::from(io::ErrorKind::NotADirectory).into()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The permission problems of the directory and its spool, without changing anything.
    #[must_use]
    pub fn inspect(&self, sub: &str) -> Vec<DirProblem> {
        let mut out = Vec::new();
        if let Ok(meta) = fs::metadata(&self.root) {
            out.extend(dir_problem(&meta));
            if let Ok(meta) = fs::symlink_metadata(self.root.join(sub)) {
                out.extend(dir_problem(&meta));
            }
        }
        out.dedup();
        out
    }

    /// Creates the directory if needed, takes the state lock within `deadline`, and sweeps
    /// leftover temp files from the top level (only lock holders write, so any temp file seen
    /// now belongs to a writer that died).
    ///
    /// # Errors
    /// [`StateError::Busy`] when the deadline passed, or the I/O error.
    pub fn lock(&self, deadline: &Deadline) -> Result<LockGuard, StateError> {
        self.ensure(None)?;
        let guard = lock::acquire(&self.file(STATE_LOCK), deadline)?;
        sweep_temps(&self.root);
        Ok(guard)
    }

    /// Reads a versioned JSON file. `Ok(None)` when it does not exist. A newer format is reported
    /// and left alone; an unparsable file is moved aside (`<name>.corrupt`) and reported.
    ///
    /// # Errors
    /// [`StateError::NewerFormat`], [`StateError::Corrupt`] or the I/O error.
    pub fn read_json<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, StateError> {
        read_versioned(&self.file(name))
    }

    /// [`Self::read_json`] as a JSON value, for a caller that decodes it itself (a file whose
    /// typed decoding fails is the caller's to set aside, see [`set_aside`]).
    ///
    /// # Errors
    /// As [`Self::read_json`].
    pub fn read_json_value(&self, name: &str) -> Result<Option<Value>, StateError> {
        read_versioned_value(&self.file(name))
    }

    /// Writes a versioned JSON file atomically (the caller holds the state lock).
    ///
    /// # Errors
    /// The I/O error; the previous file is then unchanged.
    pub fn write_json<T: Serialize>(
        &self,
        _lock: &LockGuard,
        name: &str,
        value: &T,
    ) -> Result<(), StateError> {
        Ok(write_atomic(&self.root, name, &versioned_bytes(value)?)?)
    }

    /// Writes a versioned JSON cache file (turn state) atomically but without fsync; see
    /// [`write_cache`]. The caller holds the state lock.
    ///
    /// # Errors
    /// The I/O error; the previous file is then unchanged.
    pub fn write_cache_json<T: Serialize>(
        &self,
        _lock: &LockGuard,
        name: &str,
        value: &T,
    ) -> Result<(), StateError> {
        Ok(write_cache(&self.root, name, &versioned_bytes(value)?)?)
    }

    /// Removes a file (the caller holds the state lock); a missing file is fine.
    ///
    /// # Errors
    /// The I/O error.
    pub fn remove(&self, _lock: &LockGuard, name: &str) -> Result<(), StateError> {
        match fs::remove_file(self.file(name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}

/// Whether a file's metadata shows it is owned by this user and not writable by anyone else:
/// only then may a hook trust what it says.
#[must_use]
pub fn owned_private(meta: &fs::Metadata) -> bool {
    meta.uid() == euid() && meta.mode() & 0o022 == 0
}

/// Checks one directory of the state: ours and a real directory; a loose mode is tightened.
fn check_dir(path: &Path, meta: &fs::Metadata) -> Result<(), StateError> {
    match dir_problem(meta) {
        None => Ok(()),
        Some(DirProblem::LooseMode) => {
            fs::set_permissions(path, fs::Permissions::from_mode(0o700))?;
            TIGHTENED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Some(_) => Err(StateError::Unsafe),
    }
}

/// What opening a state file found.
#[derive(Debug)]
pub enum Opened {
    /// A regular file of ours, opened without following a symlink.
    File(File, fs::Metadata),
    /// Nothing under that name.
    Missing,
    /// A symlink, directory, FIFO, socket or device: never opened.
    NotRegular,
    /// Another user's file, or one group or others may write: never used.
    Unsafe,
}

/// Opens a state file for reading the safe way: `lstat` first (a non-regular file is never
/// opened), then `O_NOFOLLOW | O_NONBLOCK`, then `fstat` again on what was actually opened.
///
/// # Errors
/// The I/O error of the open itself.
pub fn open_state_file(path: &Path) -> io::Result<Opened> {
    match fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => return Ok(Opened::NotRegular),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Opened::Missing),
        Err(e) => return Err(e),
    }
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(crate::lock::no_follow_flags())
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Opened::Missing),
        // ELOOP: it became a symlink in between.
        Err(e) if e.raw_os_error() == Some(40) => return Ok(Opened::NotRegular),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Ok(Opened::NotRegular);
    }
    if !owned_private(&meta) {
        return Ok(Opened::Unsafe);
    }
    Ok(Opened::File(file, meta))
}

/// Reads an opened state file, at most [`MAX_FILE_BYTES`]; `None` when it is larger.
///
/// # Errors
/// The I/O error.
pub fn read_bounded(file: &mut File) -> io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= MAX_FILE_BYTES).then_some(bytes))
}

/// Serializes `value` with a `"format": FORMAT` field added.
///
/// # Errors
/// An I/O error of kind `InvalidData` when the value is not a JSON object.
pub fn versioned_bytes<T: Serialize>(value: &T) -> io::Result<Vec<u8>> {
    versioned_value_bytes(serde_json::to_value(value).map_err(io::Error::other)?)
}

/// [`versioned_bytes`] of a value already built (the one generic step done): built once, not
/// per state type.
///
/// # Errors
/// An I/O error when the value is not an object.
#[inline(never)]
pub fn versioned_value_bytes(value: Value) -> io::Result<Vec<u8>> {
    let Value::Object(fields) = value else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "state must be an object",
        ));
    };
    let mut out = serde_json::Map::with_capacity(fields.len() + 1);
    out.insert("format".into(), Value::from(FORMAT));
    out.extend(fields.into_iter().filter(|(k, _)| k != "format"));
    let mut bytes = serde_json::to_vec(&Value::Object(out)).map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// [`versioned_bytes`] of a struct without a `format` field of its own, in one pass: no
/// intermediate [`Value`], so a long text in it is escaped once, straight into the bytes.
/// `capacity` is the size expected.
///
/// # Errors
/// An I/O error when the value is not a struct or a map.
pub fn versioned_struct_bytes<T: Serialize>(value: &T, capacity: usize) -> io::Result<Vec<u8>> {
    #[derive(Serialize)]
    struct Versioned<'a, T> {
        format: u64,
        #[serde(flatten)]
        value: &'a T,
    }
    let mut bytes = Vec::with_capacity(capacity);
    serde_json::to_writer(
        &mut bytes,
        &Versioned {
            format: FORMAT,
            value,
        },
    )
    .map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Reads and checks a versioned file (see [`StateDir::read_json`]).
///
/// # Errors
/// As [`StateDir::read_json`].
pub fn read_versioned<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, StateError> {
    let Some(value) = read_versioned_value(path)? else {
        return Ok(None);
    };
    match serde_json::from_value::<T>(value) {
        Ok(state) => Ok(Some(state)),
        Err(_) => Err(set_aside(path)),
    }
}

/// [`read_versioned`] up to the typed decoding (the file read, checked and parsed into a
/// [`Value`]): built once, not per state type.
#[inline(never)]
fn read_versioned_value(path: &Path) -> Result<Option<Value>, StateError> {
    let mut file = match open_state_file(path)? {
        Opened::File(f, _) => f,
        Opened::Missing => return Ok(None),
        Opened::NotRegular => return Err(set_aside(path)),
        Opened::Unsafe => return Err(StateError::Unsafe),
    };
    let Some(bytes) = read_bounded(&mut file)? else {
        return Err(set_aside(path));
    };
    match versioned_value(&bytes) {
        Err(StateError::Corrupt) => Err(set_aside(path)),
        other => other.map(Some),
    }
}

/// Checks and decodes the bytes of a versioned file read from `path`; an invalid one is set
/// aside (`<name>.corrupt`).
///
/// # Errors
/// As [`StateDir::read_json`].
pub fn parse_versioned_at<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<Option<T>, StateError> {
    match parse_versioned(bytes) {
        Err(StateError::Corrupt) => Err(set_aside(path)),
        other => other,
    }
}

/// Parses versioned JSON bytes already read: a newer format is [`StateError::NewerFormat`], an
/// unparsable text [`StateError::Corrupt`] (nothing is moved: the caller owns the file).
///
/// # Errors
/// As described.
pub fn parse_versioned<T: DeserializeOwned>(bytes: &[u8]) -> Result<Option<T>, StateError> {
    serde_json::from_value::<T>(versioned_value(bytes)?)
        .map(Some)
        .map_err(|_| StateError::Corrupt)
}

/// [`parse_versioned`] up to the typed decoding: the bytes parsed into a [`Value`] whose format
/// this build reads. Built once, not per state type.
#[inline(never)]
fn versioned_value(bytes: &[u8]) -> Result<Value, StateError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|_| StateError::Corrupt)?;
    match value.get("format").and_then(Value::as_u64) {
        Some(f) if f > FORMAT => Err(StateError::NewerFormat),
        Some(_) => Ok(value),
        None => Err(StateError::Corrupt),
    }
}

/// Moves an unreadable file aside as `<name>.corrupt` (a rename: never follows, never opens).
pub fn set_aside(path: &Path) -> StateError {
    let mut aside = path.as_os_str().to_owned();
    aside.push(".corrupt");
    match fs::rename(path, PathBuf::from(aside)) {
        Ok(()) => StateError::Corrupt,
        Err(e) => StateError::Io(e),
    }
}

static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Writes `dir/name` atomically: a 0600 temp file in the same directory, fsync, rename, then an
/// fsync of the directory so the rename itself survives a power cut. A crash leaves either the
/// old file or the new one, plus at worst a temp file that the next lock holder sweeps.
///
/// # Errors
/// The I/O error (the temp file is removed).
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    write_renamed(dir, name, bytes, true)
}

/// Like [`write_atomic`] without the two fsyncs, for caches whose loss after a power cut costs
/// only a repeated recall (turn state): still never a torn file, and about a millisecond cheaper
/// on the prompt path.
///
/// # Errors
/// The I/O error (the temp file is removed).
pub fn write_cache(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    write_renamed(dir, name, bytes, false)
}

fn write_renamed(dir: &Path, name: &str, bytes: &[u8], durable: bool) -> io::Result<()> {
    let seq = TEMP_SEQ.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!("{TEMP_PREFIX}{name}.{}.{seq}", std::process::id()));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        f.write_all(bytes)?;
        if durable {
            f.sync_all()?;
        }
        drop(f);
        fs::rename(&temp, dir.join(name))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
        return result;
    }
    // Best effort: some file systems refuse to fsync a directory.
    if durable && let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Removes every temp file in `dir`; returns how many. Call only while holding the state lock.
pub fn sweep_temps(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(TEMP_PREFIX)))
        .filter(|e| fs::remove_file(e.path()).is_ok())
        .count()
}

/// Removes the temp files in `dir` older than [`STALE_TEMP_AGE`], for directories where writers
/// do not hold the state lock (the spool): a young temp file may be a live writer's.
pub fn sweep_stale_temps(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(TEMP_PREFIX)))
        .filter(|e| {
            e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > STALE_TEMP_AGE))
        })
        .filter(|e| fs::remove_file(e.path()).is_ok())
        .count()
}

/// Temp files present in `dir` (tests and `status`).
#[must_use]
pub fn count_temps(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(TEMP_PREFIX)))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::time::Duration;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Doc {
        n: u32,
    }

    fn deadline() -> Deadline {
        Deadline::after(Duration::from_secs(2))
    }

    #[test]
    fn permissions_format_and_roundtrip() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("a").join("state"));
        let guard = state.lock(&deadline()).unwrap();
        state.write_json(&guard, "doc.json", &Doc { n: 7 }).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(state.path()), 0o700);
        assert_eq!(mode(&state.file("doc.json")), 0o600);
        let text = fs::read_to_string(state.file("doc.json")).unwrap();
        assert!(text.starts_with("{\"format\":1,"), "{text}");
        assert_eq!(state.read_json::<Doc>("doc.json").unwrap(), Some(Doc { n: 7 }));
        assert_eq!(state.read_json::<Doc>("missing.json").unwrap(), None);
        assert_eq!(count_temps(state.path()), 0);
    }

    #[test]
    fn newer_format_is_left_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let newer = "{\"format\":2,\"n\":1,\"future\":true}";
        fs::write(state.file("doc.json"), newer).unwrap();
        assert!(matches!(
            state.read_json::<Doc>("doc.json"),
            Err(StateError::NewerFormat)
        ));
        assert_eq!(fs::read_to_string(state.file("doc.json")).unwrap(), newer);
    }

    #[test]
    fn corrupt_file_is_moved_aside() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        fs::write(state.file("doc.json"), "{\"format\":1,\"n\":").unwrap();
        assert!(matches!(
            state.read_json::<Doc>("doc.json"),
            Err(StateError::Corrupt)
        ));
        assert!(!state.file("doc.json").exists());
        assert!(state.file("doc.json.corrupt").exists());
        fs::write(state.file("doc.json"), "{\"n\":1}").unwrap();
        assert!(matches!(
            state.read_json::<Doc>("doc.json"),
            Err(StateError::Corrupt)
        ));
    }

    #[test]
    fn leftover_temps_are_swept_under_the_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        fs::write(state.file(".tmp.doc.json.999.0"), "partial").unwrap();
        assert_eq!(count_temps(state.path()), 1);
        let _guard = state.lock(&deadline()).unwrap();
        assert_eq!(count_temps(state.path()), 0);
    }

    #[test]
    fn loose_directory_mode_is_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("s");
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
        StateDir::at(&root).ensure(Some("spool")).unwrap();
        assert_eq!(fs::metadata(&root).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(
            fs::metadata(root.join("spool")).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }

    #[test]
    fn errors_have_closed_detail_words() {
        assert_eq!(
            StateError::Io(io::Error::from_raw_os_error(28)).detail(),
            "disk_full"
        );
        assert_eq!(
            StateError::Io(io::Error::from_raw_os_error(30)).detail(),
            "read_only"
        );
        assert_eq!(StateError::Busy.detail(), "lock_busy");
    }
}
