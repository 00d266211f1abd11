//! What is left on disk of an OpenCode turn: the sessions this state has seen. A session not seen
//! yet is new, and `prepare` pins it to the scope it resolved to. One owner-only marker per
//! session (named by the digest of its id, holding only the format version) under the state
//! directory, created on the session's
//! first prompt (the only write; a later prompt costs one `lstat`), removed on `session.deleted`,
//! at most [`MAX_SESSIONS`], none kept past [`MAX_AGE`].
//!
//! Who decides what about a turn's context, now that a prompt is one process: `prepare` decides
//! whether the turn gets a context and its exact part text, and answers it with the exact turn it
//! belongs to (session id, message id). The plugin shim claims the session in memory when
//! `chat.message` starts (so an earlier message's context is never served after it, even when the
//! newer prepare answers nothing), keeps that run's answer only if no newer message claimed the
//! session meanwhile, and in the messages transform adds the text, as a message of its own, only
//! right after the user message with exactly those ids, once per request. So this module owns no turn rule: it never stores a
//! context, a digest, a prompt or a scope, never talks to the network, and never decides an
//! injection.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::lock::{self, LockGuard};
use powercontext_hooks_core::state::{StateDir, StateError, sweep_temps, versioned_value_bytes, write_cache};
use powercontext_hooks_core::workspace::sha256_hex;

/// The markers' subdirectory of the state directory.
pub const DIR: &str = "opencode-turns";
/// The lock file serializing every change to the markers.
pub const LOCK: &str = "turns.lock";
/// Most sessions remembered; the least recently seen go first (one forgotten that way is pinned
/// again on its next prompt, to the scope the Server resolves for it: its own binding).
pub const MAX_SESSIONS: usize = 256;
/// A marker is removed this long after the session was first seen.
pub const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// A marker's file name ends so.
const MARKER: &str = ".seen";
/// The turn files of earlier versions (the prepared turn and its context's digest) end so: they
/// are removed the next time a session is seen.
const EARLIER: &str = ".json";

/// The sessions this state has seen.
#[derive(Debug, Clone)]
pub struct SeenSessions {
    state: StateDir,
}

impl SeenSessions {
    /// The markers inside the configured state directory.
    ///
    /// # Errors
    /// [`StateError::NoLocation`] when no state directory is configured.
    pub fn locate(env: &Env) -> Result<Self, StateError> {
        StateDir::locate(env).map(|state| Self { state })
    }

    /// The markers inside an explicit state directory.
    #[must_use]
    pub fn at(state_dir: impl Into<PathBuf>) -> Self {
        Self {
            state: StateDir::at(state_dir),
        }
    }

    /// The markers' directory.
    #[must_use]
    pub fn dir(&self) -> PathBuf {
        self.state.path().join(DIR)
    }

    /// The marker of `session`.
    #[must_use]
    pub fn marker(&self, session: &str) -> PathBuf {
        self.dir().join(Self::marker_name(session))
    }

    fn marker_name(session: &str) -> String {
        format!("{}{MARKER}", sha256_hex(session.as_bytes()))
    }

    /// Whether `session` was seen before (a plain file; a link there counts as nothing).
    #[must_use]
    pub fn knows(&self, session: &str) -> bool {
        fs::symlink_metadata(self.marker(session)).is_ok_and(|m| m.is_file())
    }

    fn lock(&self, deadline: &Deadline) -> Result<LockGuard, StateError> {
        self.state.ensure(Some(DIR))?;
        let dir = self.dir();
        let guard = lock::acquire(&dir.join(LOCK), deadline)?;
        // Only lock holders write here, so a temp file seen now belongs to a writer that died.
        sweep_temps(&dir);
        Ok(guard)
    }

    /// Records `session` as seen, then bounds the markers (count and age).
    ///
    /// # Errors
    /// [`StateError`] when the lock or the files cannot be used.
    pub fn remember(&self, deadline: &Deadline, session: &str) -> Result<(), StateError> {
        let guard = self.lock(deadline)?;
        let bytes = versioned_value_bytes(serde_json::Value::Object(serde_json::Map::new()))?;
        write_cache(&self.dir(), &Self::marker_name(session), &bytes)?;
        prune(&self.dir(), &guard, MAX_SESSIONS, MAX_AGE, SystemTime::now());
        Ok(())
    }

    /// Forgets a session. Returns whether it was known.
    ///
    /// # Errors
    /// [`StateError`] when the lock or the files cannot be used.
    pub fn forget(&self, deadline: &Deadline, session: &str) -> Result<bool, StateError> {
        let _guard = self.lock(deadline)?;
        let earlier = self
            .dir()
            .join(format!("{}{EARLIER}", sha256_hex(session.as_bytes())));
        let _ = fs::remove_file(earlier);
        match fs::remove_file(self.marker(session)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

/// Removes the turn files of earlier versions, expired markers and, beyond `max`, the oldest
/// ones; leftovers (`*.corrupt`) age out the same way. Works on file modification times only (one
/// listing, nothing read). Call with the lock held.
pub fn prune(dir: &Path, _lock: &LockGuard, max: usize, max_age: Duration, now: SystemTime) -> usize {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    let mut files: Vec<(SystemTime, PathBuf)> = Vec::new();
    let mut removed = 0;
    for e in entries.flatten() {
        if e.file_name() == LOCK || !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if e.file_name().to_string_lossy().ends_with(EARLIER) {
            removed += usize::from(fs::remove_file(e.path()).is_ok());
        } else if let Some(modified) = e.metadata().ok().and_then(|m| m.modified().ok()) {
            files.push((modified, e.path()));
        }
    }
    // Every expired marker goes, in one pass: they are the oldest. Past that, the oldest of the
    // rest go while more than `max` are left, picked one by one rather than by sorting them all:
    // after one new session only one is over the bound.
    files.retain(|(t, path)| {
        let expired = now.duration_since(*t).is_ok_and(|age| age > max_age);
        removed += usize::from(expired && fs::remove_file(path).is_ok());
        !expired
    });
    for _ in max..files.len() {
        let Some(oldest) = files
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| a.cmp(b))
            .map(|(i, _)| i)
        else {
            break;
        };
        let (_, path) = files.swap_remove(oldest);
        removed += usize::from(fs::remove_file(path).is_ok());
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d() -> Deadline {
        Deadline::after(Duration::from_secs(2))
    }

    #[test]
    fn a_session_is_new_until_remembered_and_after_it_is_forgotten() {
        let tmp = tempfile::tempdir().unwrap();
        let seen = SeenSessions::at(tmp.path().join("state"));
        assert!(!seen.knows("ses"));
        seen.remember(&d(), "ses").unwrap();
        assert!(seen.knows("ses") && !seen.knows("ses_other"));
        assert!(seen.forget(&d(), "ses").unwrap());
        assert!(!seen.forget(&d(), "ses").unwrap());
        assert!(!seen.knows("ses"));
    }

    #[test]
    fn markers_are_private_and_content_free_and_a_link_is_not_a_marker() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let seen = SeenSessions::at(tmp.path().join("st"));
        seen.remember(&d(), "ses_secret_name").unwrap();
        let file = seen.marker("ses_secret_name");
        assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(
            fs::metadata(seen.dir()).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "{\"format\":1}\n",
            "nothing but the session's existence"
        );
        let target = tmp.path().join("elsewhere");
        fs::write(&target, "").unwrap();
        std::os::unix::fs::symlink(&target, seen.marker("ses_link")).unwrap();
        assert!(!seen.knows("ses_link"));
    }

    #[test]
    fn an_earlier_turn_file_is_removed_when_a_session_is_seen() {
        let tmp = tempfile::tempdir().unwrap();
        let seen = SeenSessions::at(tmp.path());
        seen.remember(&d(), "a").unwrap();
        let earlier = seen.dir().join(format!("{}.json", sha256_hex(b"old")));
        fs::write(
            &earlier,
            r#"{"format":1,"session":"old","digest":"x","content":"an old context"}"#,
        )
        .unwrap();
        seen.remember(&d(), "b").unwrap();
        assert!(!earlier.exists());
        assert!(seen.knows("a") && seen.knows("b"));
    }

    #[test]
    fn a_held_lock_is_waited_for_only_until_the_deadline() {
        let tmp = tempfile::tempdir().unwrap();
        let seen = SeenSessions::at(tmp.path());
        seen.state.ensure(Some(DIR)).unwrap();
        let _held = lock::try_acquire(&seen.dir().join(LOCK)).unwrap();
        let short = Deadline::after(Duration::from_millis(50));
        assert!(matches!(seen.remember(&short, "ses"), Err(StateError::Busy)));
    }

    #[test]
    fn prune_bounds_count_and_age() {
        let tmp = tempfile::tempdir().unwrap();
        let seen = SeenSessions::at(tmp.path());
        for i in 0..5 {
            seen.remember(&d(), &format!("ses{i}")).unwrap();
        }
        let guard = seen.lock(&d()).unwrap();
        let now = SystemTime::now();
        assert_eq!(prune(&seen.dir(), &guard, 3, MAX_AGE, now), 2);
        assert_eq!(prune(&seen.dir(), &guard, 3, MAX_AGE, now), 0);
        assert_eq!(
            prune(
                &seen.dir(),
                &guard,
                10,
                Duration::from_secs(60),
                now + Duration::from_secs(61)
            ),
            3
        );
        assert!(seen.dir().join(LOCK).exists(), "the lock file is never pruned");
    }
}
