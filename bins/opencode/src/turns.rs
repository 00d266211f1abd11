//! The OpenCode turn cache: for each session, the one user message whose context is being (or has
//! been) prepared, and the digest of that context. OpenCode prepares in `chat.message` and injects
//! in a later transform, in separate processes: the context itself travels through the plugin
//! shim's memory (`prepare` prints it, the shim hands it back to `inject`), and only the turn and
//! the digest live on disk, one file per session under the state directory, every
//! read-modify-write under one file lock (held for milliseconds, never across a network call), at
//! most [`MAX_SESSIONS`] sessions, each expiring after [`TTL`].
//!
//! It owns the stale-turn rules and nothing else: it never talks to the network, never stores a
//! token or a context, and never lets context be injected into any message but the exact one it
//! was prepared for.
//!
//! Ordering: turns of a session are ordered by (message creation time, message id) — OpenCode's
//! message ids are ascending, so the id breaks ties within a millisecond. A prepare may only claim
//! the session for a message at least as new as the one already there, and may only store its
//! result while its own claim (its ticket) still stands. An older `chat.message` that completes
//! after a newer one therefore changes nothing.

use std::cmp::Ordering as CmpOrdering;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::lock::{self, LockGuard};
use powercontext_hooks_core::state::{
    StateDir, StateError, now_millis, read_versioned, sweep_temps, versioned_bytes, write_cache,
};
use powercontext_hooks_core::workspace::sha256_hex;

/// The cache's subdirectory of the state directory.
pub const DIR: &str = "opencode-turns";
/// The lock file serializing every change to the cache.
pub const LOCK: &str = "turns.lock";
/// Most sessions kept; the least recently prepared go first.
pub const MAX_SESSIONS: usize = 256;
/// A prepared turn is served at most this long after it was prepared (long agent turns keep
/// their context for every model step; a forgotten session does not keep it forever).
pub const TTL: Duration = Duration::from_secs(2 * 3600);

/// One session's current turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// The session id (file names are digests; this guards against any collision).
    pub session: String,
    /// The user message this turn belongs to.
    pub message: String,
    /// When OpenCode created that message (Unix ms).
    pub created_ms: u64,
    /// Identifies the prepare run that claimed the turn; only it may store the result.
    pub ticket: String,
    /// When the claim was made (Unix ms), for expiry.
    pub prepared_ms: u64,
    /// SHA-256 of the prepared context, once ready; absent while pending, for an empty prompt or
    /// answer. The context itself is never written here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// A file written by an older version that kept the context itself: removed when read.
    #[serde(rename = "content", default, skip_serializing, deserialize_with = "present")]
    pub legacy: bool,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

impl Turn {
    fn key(&self) -> (u64, &str) {
        (self.created_ms, &self.message)
    }
}

/// Whether a prepare for `(created_ms, message)` may claim the session, given its current turn:
/// yes unless the current turn belongs to a strictly newer message. The same message may be
/// claimed again (the latest prepare of a message wins).
#[must_use]
pub fn may_claim(current: Option<&Turn>, created_ms: u64, message: &str) -> bool {
    current.is_none_or(|t| t.key().cmp(&(created_ms, message)) != CmpOrdering::Greater)
}

/// Whether the prepare holding `ticket` for `message` may still store its result.
#[must_use]
pub fn may_commit(current: Option<&Turn>, message: &str, ticket: &str) -> bool {
    current.is_some_and(|t| t.message == message && t.ticket == ticket)
}

/// Whether `offered` may be injected into `message` of `session` at `now_ms`: only when it is
/// non-blank and the context prepared for the current turn, that turn is that exact message of
/// that exact session, and it has not expired.
#[must_use]
pub fn servable(current: Option<&Turn>, session: &str, message: &str, now_ms: u64, offered: &str) -> bool {
    let Some(t) = current else { return false };
    let ttl = u64::try_from(TTL.as_millis()).unwrap_or(u64::MAX);
    t.session == session
        && t.message == message
        && now_ms.saturating_sub(t.prepared_ms) <= ttl
        && !offered.trim().is_empty()
        && t.digest.as_deref() == Some(sha256_hex(offered.as_bytes()).as_str())
}

static TICKETS: AtomicU64 = AtomicU64::new(0);

fn new_ticket() -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        TICKETS.fetch_add(1, Ordering::Relaxed)
    )
}

/// The on-disk cache.
#[derive(Debug, Clone)]
pub struct TurnCache {
    state: StateDir,
}

impl TurnCache {
    /// The cache inside the configured state directory.
    ///
    /// # Errors
    /// [`StateError::NoLocation`] when no state directory is configured.
    pub fn locate(env: &Env) -> Result<Self, StateError> {
        StateDir::locate(env).map(|state| Self { state })
    }

    /// The cache inside an explicit state directory.
    #[must_use]
    pub fn at(state_dir: impl Into<PathBuf>) -> Self {
        Self {
            state: StateDir::at(state_dir),
        }
    }

    /// The cache directory.
    #[must_use]
    pub fn dir(&self) -> PathBuf {
        self.state.path().join(DIR)
    }

    /// Whether this session already has a turn here (a later prompt of a session seen before).
    pub fn knows(&self, session: &str) -> bool {
        self.dir().join(Self::file_name(session)).exists()
    }

    fn file_name(session: &str) -> String {
        format!("{}.json", sha256_hex(session.as_bytes()))
    }

    fn lock(&self, deadline: &Deadline) -> Result<LockGuard, StateError> {
        self.state.ensure(Some(DIR))?;
        let dir = self.dir();
        let guard = lock::acquire(&dir.join(LOCK), deadline)?;
        // Only lock holders write here, so a temp file seen now belongs to a writer that died.
        sweep_temps(&dir);
        Ok(guard)
    }

    fn read(&self, session: &str) -> Result<Option<Turn>, StateError> {
        let turn: Option<Turn> = read_versioned(&self.dir().join(Self::file_name(session)))?;
        Ok(turn.filter(|t| t.session == session))
    }

    fn write(&self, _lock: &LockGuard, turn: &Turn) -> Result<(), StateError> {
        // A cache: losing a write to a power cut costs one prompt without context, never a torn file.
        write_cache(
            &self.dir(),
            &Self::file_name(&turn.session),
            &versioned_bytes(turn)?,
        )?;
        Ok(())
    }

    /// Starts a turn: unless the session already holds a newer message, makes `message` its
    /// current turn with no content yet (so nothing older can be served from now on) and returns
    /// the ticket that [`commit`](Self::commit) needs. `Ok(None)`: a newer turn exists.
    ///
    /// # Errors
    /// [`StateError`] when the lock or the files cannot be used.
    pub fn begin(
        &self,
        deadline: &Deadline,
        session: &str,
        message: &str,
        created_ms: u64,
    ) -> Result<Option<String>, StateError> {
        let guard = self.lock(deadline)?;
        let current = self.read_or_reset(session)?;
        if !may_claim(current.as_ref(), created_ms, message) {
            return Ok(None);
        }
        let ticket = new_ticket();
        let turn = Turn {
            session: session.to_owned(),
            message: message.to_owned(),
            created_ms,
            ticket: ticket.clone(),
            prepared_ms: now_millis(),
            digest: None,
            legacy: false,
        };
        self.write(&guard, &turn)?;
        prune(&self.dir(), &guard, MAX_SESSIONS, TTL, SystemTime::now());
        Ok(Some(ticket))
    }

    /// Marks a turn ready with the digest of its prepared context, only if `ticket` still holds
    /// the session's turn for `message`. Returns whether it was marked.
    ///
    /// # Errors
    /// [`StateError`] when the lock or the files cannot be used.
    pub fn commit(
        &self,
        deadline: &Deadline,
        session: &str,
        message: &str,
        ticket: &str,
        content: &str,
    ) -> Result<bool, StateError> {
        let guard = self.lock(deadline)?;
        let Some(mut turn) = self.read_or_reset(session)? else {
            return Ok(false);
        };
        if !may_commit(Some(&turn), message, ticket) {
            return Ok(false);
        }
        turn.digest = Some(sha256_hex(content.as_bytes()));
        self.write(&guard, &turn)?;
        Ok(true)
    }

    /// Which of the `offered` contexts may be injected into `message` of `session`, if any (see
    /// [`servable`]).
    ///
    /// # Errors
    /// [`StateError`] when the lock or the files cannot be used.
    pub fn lookup<'a, S: AsRef<str>>(
        &self,
        deadline: &Deadline,
        session: &str,
        message: &str,
        offered: &'a [S],
    ) -> Result<Option<&'a str>, StateError> {
        let _guard = self.lock(deadline)?;
        let current = self.read_or_reset(session)?;
        let now = now_millis();
        Ok(offered
            .iter()
            .map(AsRef::as_ref)
            .find(|o| servable(current.as_ref(), session, message, now, o)))
    }

    /// Whether a context was prepared for exactly `message` of `session` and has not expired
    /// (whatever the shim offers).
    ///
    /// # Errors
    /// [`StateError`] when the lock or the files cannot be used.
    pub fn prepared_for(
        &self,
        deadline: &Deadline,
        session: &str,
        message: &str,
    ) -> Result<bool, StateError> {
        let _guard = self.lock(deadline)?;
        let ttl = u64::try_from(TTL.as_millis()).unwrap_or(u64::MAX);
        Ok(self.read_or_reset(session)?.is_some_and(|t| {
            t.message == message && t.digest.is_some() && now_millis().saturating_sub(t.prepared_ms) <= ttl
        }))
    }

    /// Drops everything kept for a session. Returns whether there was anything.
    ///
    /// # Errors
    /// [`StateError`] when the lock or the files cannot be used.
    pub fn forget(&self, deadline: &Deadline, session: &str) -> Result<bool, StateError> {
        let _guard = self.lock(deadline)?;
        match fs::remove_file(self.dir().join(Self::file_name(session))) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads a session's turn; a corrupt file (already moved aside) counts as none, so one bad
    /// file never blocks a session for good. A newer format is left alone and reported.
    fn read_or_reset(&self, session: &str) -> Result<Option<Turn>, StateError> {
        match self.read(session) {
            Err(StateError::Corrupt) => Ok(None),
            // Never leave a context on disk, nor serve one from there.
            Ok(Some(t)) if t.legacy => {
                let _ = fs::remove_file(self.dir().join(Self::file_name(session)));
                Ok(None)
            }
            other => other,
        }
    }
}

/// Removes expired entries and, beyond `max` sessions, the least recently written ones; leftovers
/// (`*.corrupt`) age out the same way. Works on file modification times only (one listing, nothing
/// parsed). Call with the cache lock held.
pub fn prune(dir: &Path, _lock: &LockGuard, max: usize, ttl: Duration, now: SystemTime) -> usize {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    let mut files: Vec<(SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_name() != LOCK && e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    files.sort();
    let expired = files
        .iter()
        .take_while(|(t, _)| now.duration_since(*t).is_ok_and(|age| age > ttl))
        .count();
    let excess = files.len().saturating_sub(max);
    files
        .iter()
        .take(expired.max(excess))
        .filter(|(_, p)| fs::remove_file(p).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(message: &str, created_ms: u64, ticket: &str, content: Option<&str>) -> Turn {
        Turn {
            session: "ses".into(),
            message: message.into(),
            created_ms,
            ticket: ticket.into(),
            prepared_ms: 1_000,
            digest: content.map(|c| sha256_hex(c.as_bytes())),
            legacy: false,
        }
    }

    fn d() -> Deadline {
        Deadline::after(Duration::from_secs(2))
    }

    #[test]
    fn claims_follow_message_order() {
        let newer = turn("msg_b", 20, "t", None);
        assert!(may_claim(None, 1, "msg_a"));
        assert!(
            !may_claim(Some(&newer), 10, "msg_a"),
            "an older message never displaces a newer one"
        );
        assert!(
            !may_claim(Some(&newer), 20, "msg_a"),
            "same millisecond: the ascending id decides"
        );
        assert!(
            may_claim(Some(&newer), 20, "msg_b"),
            "the same message may be prepared again"
        );
        assert!(may_claim(Some(&newer), 20, "msg_c"));
        assert!(may_claim(Some(&newer), 21, "msg_0"));
    }

    #[test]
    fn only_the_current_ticket_commits() {
        let t = turn("msg_b", 20, "t2", None);
        assert!(may_commit(Some(&t), "msg_b", "t2"));
        assert!(!may_commit(Some(&t), "msg_b", "t1"));
        assert!(!may_commit(Some(&t), "msg_a", "t2"));
        assert!(!may_commit(None, "msg_b", "t2"));
    }

    #[test]
    fn serving_needs_the_exact_ready_turn_and_its_own_context() {
        let ready = turn("msg_b", 20, "t", Some("ctx"));
        assert!(servable(Some(&ready), "ses", "msg_b", 2_000, "ctx"));
        assert!(!servable(
            Some(&ready),
            "ses",
            "msg_b",
            2_000,
            "ctx of another turn"
        ));
        assert!(
            !servable(Some(&ready), "ses", "msg_a", 2_000, "ctx"),
            "stale turn"
        );
        assert!(
            !servable(Some(&ready), "other", "msg_b", 2_000, "ctx"),
            "other session"
        );
        let late = 1_000 + u64::try_from(TTL.as_millis()).unwrap() + 1;
        assert!(!servable(Some(&ready), "ses", "msg_b", late, "ctx"), "expired");
        let pending = turn("msg_b", 20, "t", None);
        assert!(!servable(Some(&pending), "ses", "msg_b", 2_000, "ctx"), "pending");
        let blank = turn("msg_b", 20, "t", Some(" \n"));
        assert!(!servable(Some(&blank), "ses", "msg_b", 2_000, " \n"));
    }

    #[test]
    fn out_of_order_completion_keeps_the_newer_turn() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = TurnCache::at(tmp.path().join("state"));
        // A starts, then B (newer) starts, B completes, then A completes late.
        let a = cache.begin(&d(), "ses", "msg_a", 10).unwrap().expect("A claims");
        let b = cache.begin(&d(), "ses", "msg_b", 20).unwrap().expect("B claims");
        assert!(cache.commit(&d(), "ses", "msg_b", &b, "ctx B").unwrap());
        assert!(!cache.commit(&d(), "ses", "msg_a", &a, "ctx A").unwrap());
        assert!(cache.lookup(&d(), "ses", "msg_b", &["ctx B"]).unwrap().is_some());
        assert!(cache.lookup(&d(), "ses", "msg_a", &["ctx A"]).unwrap().is_none());
        // The shim offers what it kept, newest first whatever the order runs finished in.
        assert_eq!(
            cache.lookup(&d(), "ses", "msg_b", &["ctx A", "ctx B"]).unwrap(),
            Some("ctx B")
        );
        assert_eq!(
            cache.lookup(&d(), "ses", "msg_a", &["ctx A", "ctx B"]).unwrap(),
            None
        );
        // A's claim arriving after B's (processes started out of order) is refused outright.
        assert_eq!(cache.begin(&d(), "ses", "msg_a", 10).unwrap(), None);
        assert!(cache.lookup(&d(), "ses", "msg_b", &["ctx B"]).unwrap().is_some());
    }

    #[test]
    fn a_newer_claim_invalidates_at_once_and_sessions_are_separate() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = TurnCache::at(tmp.path());
        let a = cache.begin(&d(), "ses", "msg_a", 10).unwrap().unwrap();
        assert!(cache.commit(&d(), "ses", "msg_a", &a, "ctx A").unwrap());
        let other = cache.begin(&d(), "ses_other", "msg_a", 10).unwrap().unwrap();
        assert!(
            cache
                .commit(&d(), "ses_other", "msg_a", &other, "ctx other")
                .unwrap()
        );
        cache.begin(&d(), "ses", "msg_b", 20).unwrap().unwrap();
        assert!(cache.lookup(&d(), "ses", "msg_a", &["ctx A"]).unwrap().is_none());
        assert!(
            cache.lookup(&d(), "ses", "msg_b", &["ctx A"]).unwrap().is_none(),
            "pending"
        );
        assert!(
            cache
                .lookup(&d(), "ses_other", "msg_a", &["ctx other"])
                .unwrap()
                .is_some()
        );
        assert!(cache.forget(&d(), "ses_other").unwrap());
        assert!(!cache.forget(&d(), "ses_other").unwrap());
        assert!(
            cache
                .lookup(&d(), "ses_other", "msg_a", &["ctx other"])
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn files_are_private_and_a_corrupt_file_resets_the_session() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let cache = TurnCache::at(tmp.path().join("st"));
        let t = cache.begin(&d(), "ses", "msg_a", 10).unwrap().unwrap();
        cache.commit(&d(), "ses", "msg_a", &t, "ctx").unwrap();
        let file = cache.dir().join(TurnCache::file_name("ses"));
        assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(
            fs::metadata(cache.dir()).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let text = fs::read_to_string(&file).unwrap();
        assert!(text.contains("\"format\":1,"));
        assert!(
            !text.contains("ctx"),
            "the context never reaches the disk: {text}"
        );
        assert!(cache.lookup(&d(), "ses", "msg_a", &["ctx"]).unwrap().is_some());
        fs::write(&file, "{\"format\":1,").unwrap();
        assert!(cache.lookup(&d(), "ses", "msg_a", &["ctx"]).unwrap().is_none());
        assert!(cache.begin(&d(), "ses", "msg_b", 20).unwrap().is_some());
    }

    #[test]
    fn a_turn_file_that_holds_a_context_is_removed_not_served() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = TurnCache::at(tmp.path());
        cache.begin(&d(), "ses", "msg_a", 10).unwrap().unwrap();
        let file = cache.dir().join(TurnCache::file_name("ses"));
        let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
        v["content"] = "an old context".into();
        fs::write(&file, v.to_string()).unwrap();
        assert!(!cache.prepared_for(&d(), "ses", "msg_a").unwrap());
        assert!(!file.exists());
    }

    #[test]
    fn a_held_lock_is_waited_for_only_until_the_deadline() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = TurnCache::at(tmp.path());
        cache.state.ensure(Some(DIR)).unwrap();
        let _held = lock::try_acquire(&cache.dir().join(LOCK)).unwrap();
        let short = Deadline::after(Duration::from_millis(50));
        assert!(matches!(
            cache.begin(&short, "ses", "m", 1),
            Err(StateError::Busy)
        ));
    }

    #[test]
    fn prune_bounds_count_and_age() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = TurnCache::at(tmp.path());
        for i in 0..5 {
            cache.begin(&d(), &format!("ses{i}"), "m", 1).unwrap().unwrap();
        }
        let guard = cache.lock(&d()).unwrap();
        let now = SystemTime::now();
        assert_eq!(prune(&cache.dir(), &guard, 3, TTL, now), 2);
        assert_eq!(prune(&cache.dir(), &guard, 3, TTL, now), 0);
        assert_eq!(
            prune(
                &cache.dir(),
                &guard,
                10,
                Duration::from_secs(60),
                now + Duration::from_secs(61)
            ),
            3
        );
        assert!(cache.dir().join(LOCK).exists(), "the lock file is never pruned");
    }
}
