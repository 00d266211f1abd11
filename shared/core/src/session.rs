//! The per-session memory record: which bootstrap receipt the session's prompts cite, whether the
//! next turn must bootstrap (after a compaction, or a bootstrap that failed), and which recalled
//! items were already injected since the session's last start, clear or compaction, so the same
//! block is not injected turn after turn on hosts whose injections stay in the conversation.
//! Content-free by construction: artifact ids and revisions, a receipt id and a salted digest,
//! never text, never a scope id. One small file per session, never behind a link. A run's changes
//! are applied after its answer is out, to the record as it is then: a boundary another process
//! recorded meanwhile (a compaction) wins, and this run's changes are dropped.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::bootstrap::{ItemRef, Lifecycle, artifact_key};
use crate::deadline::Deadline;
use crate::env::Env;
use crate::host::Integration;
use crate::state::{self, StateDir, StateError};

/// The subdirectory of the state directory.
pub const DIR: &str = "sessions";
/// Most item keys remembered per session window (oldest forgotten first).
pub const MAX_ITEMS: usize = 512;
/// Records untouched for this long are removed when a session starts.
pub const MAX_AGE: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);
/// Largest record read (a full one is about 60 KiB).
const MAX_RECORD_BYTES: u64 = 256 * 1024;

/// The lock serializing every change to the records (held for one small read and write); in the
/// state directory, beside `sessions/`, which holds records only.
pub const LOCK: &str = "sessions.lock";

/// How long a change waits for that lock (a prompt's change runs after its answer; a compaction
/// mark at a boundary that answers nothing).
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// What is kept for one session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The last bootstrap receipt recorded as injected, for `bootstrap_receipt_id`.
    #[serde(default)]
    pub receipt_id: Option<String>,
    /// SHA-256 of the receipt id and the scope it belongs to (a receipt is only valid in its own
    /// scope; the random receipt id salts the digest, so it does not reveal the scope).
    #[serde(default)]
    pub receipt_scope: Option<String>,
    /// A boundary the next turn must bootstrap for (a compaction, or a bootstrap that failed).
    #[serde(default)]
    pub pending: Option<Lifecycle>,
    /// Boundaries seen so far: makes each boundary's event id distinct, and tells a run whether
    /// another boundary happened while it was working.
    #[serde(default)]
    pub generation: u32,
    /// Items injected since the last start, clear or compaction (`family id revision`).
    #[serde(default)]
    pub injected: Vec<String>,
    /// When the record was begun (Unix ms; 0 before it was): part of every boundary's event id,
    /// so a session whose record was lost (pruned, unreadable) never reuses an id of its earlier
    /// life, which the Server would answer `already_delivered`.
    #[serde(default)]
    pub epoch: u64,
    /// The mark of the last session-start context this session's host was given, on a host that
    /// echoes it into the next prompt's text (see [`crate::start_echo`]): a length and a digest,
    /// never the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_echo: Option<String>,
}

impl Record {
    /// A new window: nothing injected, no receipt, nothing pending.
    pub fn restart(&mut self) {
        self.receipt_id = None;
        self.receipt_scope = None;
        self.pending = None;
        self.injected.clear();
    }

    /// Remembers items as injected (bounded).
    pub fn remember<I: IntoIterator<Item = String>>(&mut self, keys: I) {
        for key in keys {
            if !self.injected.contains(&key) {
                self.injected.push(key);
            }
        }
        if self.injected.len() > MAX_ITEMS {
            let extra = self.injected.len() - MAX_ITEMS;
            self.injected.drain(..extra);
        }
    }

    /// Remembers a delivered bootstrap package: its receipt and its whole (untruncated) items.
    pub fn delivered(&mut self, scope: &str, receipt_id: &str, items: &[ItemRef]) {
        self.receipt_id = Some(receipt_id.to_owned());
        self.receipt_scope = Some(receipt_digest(receipt_id, scope));
        self.remember(items.iter().filter(|i| !i.truncated).map(|i| i.key.clone()));
    }

    /// The receipt to cite in a prepare for `scope`, if it belongs to that scope.
    #[must_use]
    pub fn receipt_for(&self, scope: &str) -> Option<&str> {
        let id = self.receipt_id.as_deref()?;
        (self.receipt_scope.as_deref() == Some(receipt_digest(id, scope).as_str())).then_some(id)
    }
}

fn receipt_digest(receipt_id: &str, scope: &str) -> String {
    crate::workspace::sha256_hex(format!("{receipt_id}\0{scope}").as_bytes())
}

/// Whether `name` is a file this module writes (a record, a set-aside record, or a temp file).
fn own_name(name: &str) -> bool {
    let stem = name
        .strip_suffix(".json.corrupt")
        .or_else(|| name.strip_suffix(".json"));
    stem.is_some_and(|s| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        || name.starts_with(state::TEMP_PREFIX)
}

/// Where one session's record lives.
#[derive(Debug, Clone)]
pub struct SessionFile {
    dir: PathBuf,
    name: String,
}

impl SessionFile {
    /// The record of `session` on `integration` (the session id is hashed into the name).
    #[must_use]
    pub fn new(state: &StateDir, integration: Integration, session: &str) -> Self {
        let key = crate::workspace::sha256_hex(format!("{}\0{session}", integration.as_str()).as_bytes());
        Self {
            dir: state.path().join(DIR),
            name: format!("{}.json", &key[..32]),
        }
    }

    /// The record for the environment's state directory, when there is one.
    #[must_use]
    pub fn locate(env: &Env, integration: Integration, session: &str) -> Option<Self> {
        StateDir::locate(env)
            .ok()
            .map(|s| Self::new(&s, integration, session))
    }

    /// The record's key: a digest of the integration and session id, never the id itself.
    #[must_use]
    pub fn key(&self) -> &str {
        self.name.trim_end_matches(".json")
    }

    /// The epoch this run's ids use: the loaded record's, else a new one (now) for a session that
    /// has no record yet and can keep one. A run that cannot keep a record (a read-only state
    /// directory, a `sessions` that is not a directory of ours) or that finds one it cannot use (a
    /// newer format, another user's, a link) uses 0, the same every run, so the Server still
    /// delivers each boundary's package once instead of on every prompt.
    #[must_use]
    pub fn epoch(&self, loaded: Option<&Record>) -> u64 {
        match loaded.map(|r| r.epoch) {
            Some(e) if e != 0 => e,
            Some(_) if self.keepable() => state::now_millis(),
            None if self.keepable() && fs::symlink_metadata(self.path()).is_err() => state::now_millis(),
            _ => 0,
        }
    }

    /// Whether a record could be written: the `sessions` directory is a writable directory of
    /// ours, or it does not exist yet and the state directory is one.
    fn keepable(&self) -> bool {
        let ours = |p: &Path| {
            fs::metadata(p).is_ok_and(|m| m.is_dir() && m.uid() == state::euid())
                && rustix::fs::access(p, rustix::fs::Access::WRITE_OK).is_ok()
        };
        match fs::symlink_metadata(&self.dir) {
            Ok(m) => !m.file_type().is_symlink() && ours(&self.dir),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                ours(self.dir.parent().unwrap_or(Path::new(".")))
            }
            Err(_) => false,
        }
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }

    /// The `sessions` directory, when it is a real directory (not a link) of this user's that
    /// nobody else can write.
    fn usable_dir(&self) -> bool {
        fs::symlink_metadata(&self.dir).is_ok_and(|m| m.is_dir() && state::owned_private(&m))
    }

    /// The record: `Ok(None)` when the session has none yet; an error when it cannot be used
    /// (not a regular file of ours, too large, unreadable, a newer format).
    fn read(&self) -> Result<Option<Record>, StateError> {
        if !self.usable_dir() {
            return Ok(None);
        }
        // No link is followed and a FIFO never blocks: the opened file itself is checked.
        let file = match fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(self.path())
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let meta = file.metadata()?;
        if !meta.is_file()
            || meta.len() > MAX_RECORD_BYTES
            || !state::owned_private(&meta)
            || meta.nlink() != 1
        {
            return Err(StateError::Io(std::io::Error::other("unusable session record")));
        }
        let mut bytes = Vec::new();
        file.take(MAX_RECORD_BYTES).read_to_end(&mut bytes)?;
        state::parse_versioned::<Record>(&bytes)
    }

    /// The record, or `None` when the session has none yet or it cannot be used (a record is a
    /// cache: a missing one only costs a repeated item or a repeated bootstrap).
    #[must_use]
    pub fn load(&self) -> Option<Record> {
        self.read().ok().flatten()
    }

    /// Writes the record (see [`SessionFile::update`]).
    pub fn store(&self, record: &Record) {
        self.update(|r| {
            r.clone_from(record);
            true
        });
    }

    /// Read-modify-write of the record under the directory's lock, so two runs of one session (a
    /// prompt settling what it injected, a compaction being marked) never lose each other's
    /// write; `change` says whether anything changed. Written by atomic rename, 0600, no fsync
    /// (see [`state::write_cache`]). A loose `sessions` directory is tightened first; never into a
    /// linked or foreign one, never over a record of a newer format. A lock not had within
    /// [`LOCK_WAIT`] skips the change (a record is a cache).
    fn update(&self, change: impl FnOnce(&mut Record) -> bool) {
        let root = StateDir::at(self.dir.parent().unwrap_or(Path::new(".")));
        if root.ensure(Some(DIR)).is_err() || !self.usable_dir() {
            return;
        }
        let Ok(_guard) = crate::lock::acquire(&root.file(LOCK), &Deadline::after(LOCK_WAIT)) else {
            return;
        };
        let mut r = match self.read() {
            Ok(found) => found.unwrap_or_default(),
            // An unparsable record (a torn write after a power cut) counts as absent and is
            // replaced; a newer format or a file that is not ours is never overwritten.
            Err(StateError::Corrupt) => Record::default(),
            Err(_) => return,
        };
        if change(&mut r)
            && let Ok(bytes) = state::versioned_bytes(&r)
        {
            let _ = state::write_cache(&self.dir, &self.name, &bytes);
        }
    }

    /// A compaction is under way: what was injected is about to be dropped, so the window starts
    /// again and the session's next prompt bootstraps with lifecycle `compact` (unless a
    /// `SessionStart` for the compaction does it first). A run still working on the old window
    /// sees the new generation and drops its changes.
    pub fn mark_compacted(&self) {
        self.update(|r| {
            r.restart();
            if r.epoch == 0 {
                r.epoch = state::now_millis();
            }
            r.pending = Some(Lifecycle::Compact);
            r.generation = r.generation.wrapping_add(1);
            true
        });
    }

    /// Removes this module's records (and leftover temp files) not written for [`MAX_AGE`];
    /// called at session start, never per prompt. Nothing else in the directory is touched.
    pub fn prune_old(&self) {
        if !self.usable_dir() {
            return;
        }
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        let now = std::time::SystemTime::now();
        for entry in entries.flatten().take(10_000) {
            if !entry.file_name().to_str().is_some_and(own_name) {
                continue;
            }
            let Ok(meta) = fs::symlink_metadata(entry.path()) else {
                continue;
            };
            let old = meta
                .modified()
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .is_some_and(|age| age > MAX_AGE);
            if old && meta.is_file() {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// The mark of the session-start context the host was given (see [`Record::start_echo`]).
    pub fn record_start_echo(&self, mark: String) {
        self.update(|r| {
            r.start_echo = Some(mark);
            true
        });
    }

    /// Applies a run's [`Change`] to the record as it is now (see the module doc).
    pub fn apply(&self, change: Change, written: bool, delivered: Option<&Delivered>) {
        self.update(|r| {
            if r.generation != change.seen_generation {
                return false;
            }
            // The epoch this run's ids used is kept, so a retried boundary gets the same id.
            let mut changed = r.epoch == 0 && change.epoch != 0;
            if changed {
                r.epoch = change.epoch;
            }
            if let Some(b) = change.boundary {
                if b.restart {
                    r.restart();
                }
                r.pending = b.pending_after;
                r.generation = r.generation.wrapping_add(1);
                changed = true;
            }
            if written && change.persists {
                if !change.fresh.is_empty() {
                    r.remember(change.fresh);
                    changed = true;
                }
                if let Some(d) = delivered {
                    match &d.receipt_id {
                        Some(id) => r.delivered(&d.scope, id, &d.items),
                        None => r.remember(d.items.iter().filter(|i| !i.truncated).map(|i| i.key.clone())),
                    }
                    changed = true;
                }
            }
            changed
        });
    }
}

/// A boundary a run handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundaryChange {
    /// Start a new window (not on resume, not when only a retry is scheduled).
    pub restart: bool,
    /// What the next prompt must bootstrap for (the boundary again, when its bootstrap failed).
    pub pending_after: Option<Lifecycle>,
}

/// What one run changes in its session's record, applied once its answer is out.
#[derive(Debug)]
pub struct Change {
    /// The record.
    pub file: SessionFile,
    /// The record's generation when the run read it.
    pub seen_generation: u32,
    /// The epoch the run used (see [`Record::epoch`]), kept by a record that has none.
    pub epoch: u64,
    /// Whether injections stay in the host's conversation (otherwise nothing is remembered).
    pub persists: bool,
    /// A boundary this run handled.
    pub boundary: Option<BoundaryChange>,
    /// Recalled items new in the window, remembered if the answer was written.
    pub fresh: Vec<String>,
}

/// A bootstrap package the answer carried.
#[derive(Debug)]
pub struct Delivered {
    /// Its scope.
    pub scope: String,
    /// The receipt, when it was recorded as injected.
    pub receipt_id: Option<String>,
    /// Its items.
    pub items: Vec<ItemRef>,
}

/// The line that opens the item envelope of a PreparedContext.
const BEGIN: &str = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n";
/// The line that closes it.
const END: &str = "\nEND_POWERCONTEXT_PREPARED_CONTEXT_V1";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    #[serde(borrow)]
    trust: &'a RawValue,
    #[serde(borrow)]
    items: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct Cited {
    citation: serde_json::Value,
}

/// What the window filter did to a prepared context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filtered {
    /// Inject this text; these item keys are new in the window.
    Inject(String, Vec<String>),
    /// Every item was injected already in this window.
    AllSeen,
}

/// The citation's artifact key: an `artifact_ref`, or an `artifact` address (a reference with the
/// scope it lives in, flat or nested as `{scope_id, artifact: {…}}`).
fn citation_key(citation: &serde_json::Value) -> Option<String> {
    let obj = citation.as_object()?;
    let target = obj.get("artifact_ref").or_else(|| obj.get("artifact"))?;
    match target.get("artifact") {
        Some(inner) if inner.is_object() => artifact_key(inner),
        _ => artifact_key(target),
    }
}

/// Drops the items of a prepared context that were injected already in this window, keeping the
/// Server's own bytes for everything else (the envelope's items are re-joined exactly as sent).
/// A content this client cannot read item by item (or an envelope with fields it does not know)
/// is passed through whole.
#[must_use]
pub fn filter_seen(content: &str, seen: &[String]) -> Filtered {
    let Some((head, rest)) = content.split_once(BEGIN) else {
        return Filtered::Inject(content.to_owned(), Vec::new());
    };
    let Some((body, tail)) = rest.rsplit_once(END) else {
        return Filtered::Inject(content.to_owned(), Vec::new());
    };
    // A body that cannot open an envelope (a plain-text context) is passed through without a
    // parse error: building one counts lines with `memchr`, whose first use probes the CPU.
    let opens = body
        .trim_start_matches([' ', '\n', '\r', '\t'])
        .starts_with(['{', '[']);
    let Some(envelope) = opens
        .then(|| serde_json::from_str::<Envelope<'_>>(body).ok())
        .flatten()
    else {
        return Filtered::Inject(content.to_owned(), Vec::new());
    };
    let mut kept = Vec::with_capacity(envelope.items.len());
    let mut fresh = Vec::new();
    for raw in &envelope.items {
        let key = serde_json::from_str::<Cited>(raw.get())
            .ok()
            .and_then(|c| citation_key(&c.citation));
        match key {
            Some(k) if seen.contains(&k) => {}
            Some(k) => {
                fresh.push(k);
                kept.push(raw.get());
            }
            // An item without a readable citation cannot be recognised later: always shown.
            None => kept.push(raw.get()),
        }
    }
    if kept.is_empty() {
        return Filtered::AllSeen;
    }
    if kept.len() == envelope.items.len() {
        return Filtered::Inject(content.to_owned(), fresh);
    }
    let text = format!(
        "{head}{BEGIN}{{\"trust\":{},\"items\":[{}]}}{END}{tail}",
        envelope.trust.get(),
        kept.join(",")
    );
    Filtered::Inject(text, fresh)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, text: &str) -> String {
        format!(
            r#"{{"citation":{{"artifact_ref":{{"family":"atomic-memory","artifact_id":"{id}","revision":1}}}},"content":"{text}","truncated":false,"kind":"atomic-memory"}}"#
        )
    }

    fn prepared(items: &[String]) -> String {
        format!(
            "Policy line.\n\n{BEGIN}{{\"trust\":\"untrusted_history\",\"items\":[{}]}}{END}",
            items.join(",")
        )
    }

    #[test]
    fn seen_items_are_dropped_and_the_rest_keeps_its_bytes() {
        let (a, b) = (item("art_a", "alpha \\u2028 x"), item("art_b", "beta"));
        let whole = prepared(&[a.clone(), b.clone()]);
        assert_eq!(
            filter_seen(&whole, &[]),
            Filtered::Inject(
                whole.clone(),
                vec!["atomic-memory art_a 1".into(), "atomic-memory art_b 1".into()]
            )
        );
        assert_eq!(
            filter_seen(&whole, &["atomic-memory art_a 1".into()]),
            Filtered::Inject(prepared(&[b]), vec!["atomic-memory art_b 1".into()])
        );
        let all = [
            "atomic-memory art_a 1".to_owned(),
            "atomic-memory art_b 1".to_owned(),
        ];
        assert_eq!(filter_seen(&whole, &all), Filtered::AllSeen);
        // A new revision is a new item.
        assert!(
            matches!(filter_seen(&whole, &["atomic-memory art_a 2".into()]), Filtered::Inject(t, _) if t == whole)
        );
    }

    #[test]
    fn unreadable_contents_pass_through() {
        for text in [
            "plain text",
            "x\nBEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\nnot json\nEND_POWERCONTEXT_PREPARED_CONTEXT_V1",
        ] {
            assert_eq!(
                filter_seen(text, &["a".into()]),
                Filtered::Inject(text.to_owned(), vec![])
            );
        }
    }

    #[test]
    fn records_are_bounded_and_receipts_scoped() {
        let mut r = Record::default();
        r.remember((0..MAX_ITEMS + 10).map(|i| format!("k{i}")));
        assert_eq!(r.injected.len(), MAX_ITEMS);
        assert_eq!(r.injected[0], "k10");
        r.delivered(
            "scp_a",
            "bcr_1",
            &[ItemRef {
                key: "x@1".into(),
                truncated: true,
            }],
        );
        assert_eq!(r.receipt_for("scp_a"), Some("bcr_1"));
        assert_eq!(r.receipt_for("scp_b"), None);
        assert!(
            !r.injected.contains(&"x@1".to_owned()),
            "a truncated item stays eligible"
        );
        r.restart();
        assert_eq!(
            r,
            Record {
                generation: 0,
                ..Record::default()
            }
        );
    }

    #[test]
    fn items_cited_by_address_are_recognised() {
        let nested = r#"{"citation":{"artifact":{"scope_id":"scp_parent","artifact":{"family":"atomic-memory","artifact_id":"art_p","revision":3}}},"content":"parent fact","truncated":false,"kind":"atomic-memory"}"#.to_owned();
        let flat = r#"{"citation":{"artifact":{"scope_id":"scp_x","family":"profile","artifact_id":"art_f","revision":1}},"content":"f","truncated":false}"#.to_owned();
        let whole = prepared(&[nested, flat, item("art_b", "beta")]);
        assert_eq!(
            filter_seen(&whole, &[]),
            Filtered::Inject(
                whole.clone(),
                vec![
                    "atomic-memory art_p 3".into(),
                    "profile art_f 1".into(),
                    "atomic-memory art_b 1".into()
                ]
            )
        );
    }

    #[test]
    fn an_envelope_with_unknown_fields_passes_through_whole() {
        let text = format!(
            "P\n\n{BEGIN}{{\"trust\":\"untrusted_history\",\"items\":[{}],\"next\":1}}{END}",
            item("art_a", "a")
        );
        assert_eq!(
            filter_seen(&text, &["atomic-memory art_a 1".into()]),
            Filtered::Inject(text.clone(), vec![])
        );
    }

    #[test]
    fn prune_and_store_never_touch_a_linked_or_foreign_directory() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        let precious = victim.join("notes.txt");
        let record_like = victim.join(format!("{}.json", "a".repeat(32)));
        let old = std::time::SystemTime::now() - MAX_AGE - std::time::Duration::from_secs(3600);
        for f in [&precious, &record_like] {
            std::fs::write(f, "precious").unwrap();
            std::fs::File::options()
                .write(true)
                .open(f)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        std::os::unix::fs::symlink(&victim, state.join(DIR)).unwrap();
        let f = SessionFile::new(&StateDir::at(&state), Integration::ClaudeCode, "s");
        f.prune_old();
        f.store(&Record::default());
        assert!(
            precious.exists() && record_like.exists(),
            "prune went through the link"
        );
        assert_eq!(
            std::fs::read_dir(&victim).unwrap().count(),
            2,
            "store wrote through the link"
        );

        // In a real directory only this module's own old files go.
        std::fs::remove_file(state.join(DIR)).unwrap();
        let own = SessionFile::new(&StateDir::at(&state), Integration::ClaudeCode, "t");
        own.store(&Record::default());
        let foreign = state.join(DIR).join("notes.txt");
        std::fs::write(&foreign, "x").unwrap();
        for p in [&foreign, &own.path()] {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        own.prune_old();
        assert!(foreign.exists());
        assert!(!own.path().exists());
    }

    #[test]
    fn changes_wait_for_each_other_and_a_loose_directory_is_tightened() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = SessionFile::new(&StateDir::at(dir.path()), Integration::Pi, "s");
        f.store(&Record::default());
        let sessions = dir.path().join(DIR);
        std::fs::set_permissions(&sessions, std::fs::Permissions::from_mode(0o775)).unwrap();
        assert!(f.load().is_none(), "a loose directory is not read");
        f.mark_compacted();
        let mode = std::fs::metadata(&sessions).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(f.load().unwrap().generation, 1);

        // A change waits for the lock holder and applies to what it left.
        let held = crate::lock::acquire(
            &dir.path().join(LOCK),
            &Deadline::after(std::time::Duration::from_secs(1)),
        )
        .unwrap();
        let other = f.clone();
        let marker = std::thread::spawn(move || other.mark_compacted());
        std::thread::sleep(std::time::Duration::from_millis(150));
        let holder = Record {
            generation: 7,
            ..Record::default()
        };
        state::write_cache(&sessions, &f.name, &state::versioned_bytes(&holder).unwrap()).unwrap();
        drop(held);
        marker.join().unwrap();
        assert_eq!(f.load().unwrap().generation, 8);
    }

    #[test]
    fn a_boundary_recorded_meanwhile_wins_over_a_run_that_read_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = SessionFile::new(&StateDir::at(dir.path()), Integration::Dsh, "s");
        let mut r = Record::default();
        r.remember(["atomic-memory old 1".to_owned()]);
        f.store(&r);
        let change = Change {
            file: f.clone(),
            seen_generation: 0,
            epoch: 1,
            persists: true,
            boundary: None,
            fresh: vec!["atomic-memory new 1".into()],
        };
        f.mark_compacted();
        f.apply(change, true, None);
        let now = f.load().unwrap();
        assert_eq!(now.pending, Some(Lifecycle::Compact));
        assert!(now.injected.is_empty(), "{now:?}");

        // Without a boundary in between the run's items are remembered, if written.
        let fresh = |written| {
            let change = Change {
                file: f.clone(),
                seen_generation: f.load().unwrap().generation,
                epoch: 1,
                persists: true,
                boundary: None,
                fresh: vec![format!("atomic-memory w{written} 1")],
            };
            f.apply(change, written, None);
        };
        fresh(false);
        fresh(true);
        assert_eq!(
            f.load().unwrap().injected,
            vec!["atomic-memory wtrue 1".to_owned()]
        );
    }

    #[test]
    fn the_epoch_a_run_used_is_kept_and_one_that_cannot_be_kept_is_zero() {
        let dir = tempfile::tempdir().unwrap();
        let f = SessionFile::new(&StateDir::at(dir.path()), Integration::Dsh, "s");
        // A record of an older version has none: the run's own is kept, though nothing else changed.
        f.store(&Record::default());
        let used = f.epoch(f.load().as_ref());
        assert_ne!(used, 0);
        let change = Change {
            file: f.clone(),
            seen_generation: 0,
            epoch: used,
            persists: true,
            boundary: None,
            fresh: Vec::new(),
        };
        f.apply(change, false, None);
        assert_eq!(f.load().unwrap().epoch, used);
        assert_eq!(f.epoch(f.load().as_ref()), used);

        // Where `sessions` cannot hold a record, every run uses the same epoch.
        let blocked = tempfile::tempdir().unwrap();
        std::fs::write(blocked.path().join(DIR), "a file").unwrap();
        let g = SessionFile::new(&StateDir::at(blocked.path()), Integration::Dsh, "s");
        assert_eq!(g.epoch(None), 0);
        // And where a record stands that this run cannot use (here: a newer format).
        let newer = tempfile::tempdir().unwrap();
        let h = SessionFile::new(&StateDir::at(newer.path()), Integration::Dsh, "s");
        h.store(&Record::default());
        std::fs::write(h.path(), r#"{"v":999}"#).unwrap();
        assert_eq!(h.load(), None);
        assert_eq!(h.epoch(None), 0);
        std::fs::remove_file(h.path()).unwrap();
        assert_ne!(h.epoch(None), 0, "no record yet: a new epoch");
    }

    #[test]
    fn records_round_trip_without_content() {
        let dir = tempfile::tempdir().unwrap();
        let f = SessionFile::new(&StateDir::at(dir.path()), Integration::ClaudeCode, "sess-SECRET");
        assert_eq!(f.load(), None);
        let mut r = Record::default();
        r.delivered(
            "scp_SECRETSCOPE",
            "bcr_9",
            &[ItemRef {
                key: "atomic-memory art_1 1".into(),
                truncated: false,
            }],
        );
        f.store(&r);
        assert_eq!(f.load(), Some(r));
        let bytes = std::fs::read_to_string(f.path()).unwrap();
        assert!(!bytes.contains("SECRET"), "{bytes}");
        assert!(
            !f.key().contains("sess"),
            "the session id is hashed into the name"
        );
    }
}
