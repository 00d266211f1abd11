//! The per-session memory record: which bootstrap receipt the session's prompts cite, whether the
//! next turn must bootstrap again (after a compaction), and which recalled items were already
//! injected since the session's last start or compaction, so the same block is not injected turn
//! after turn. Content-free by construction: artifact ids and revisions, a receipt id and digests,
//! never text, never a scope id. One small file per session, written without the shared lock
//! (a lost update costs at most one repeated item).

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::bootstrap::{ItemRef, Lifecycle, artifact_key};
use crate::env::Env;
use crate::host::Integration;
use crate::state::{self, StateDir};

/// The subdirectory of the state directory.
pub const DIR: &str = "sessions";
/// Most item keys remembered per session window (oldest forgotten first).
pub const MAX_ITEMS: usize = 512;
/// Records untouched for this long are removed when a session starts.
pub const MAX_AGE: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);
/// Largest record read (a full one is about 40 KiB).
const MAX_RECORD_BYTES: u64 = 256 * 1024;

/// What is kept for one session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The last bootstrap receipt recorded as injected, for `bootstrap_receipt_id`.
    #[serde(default)]
    pub receipt_id: Option<String>,
    /// SHA-256 of the scope that receipt belongs to (a receipt is only valid in its own scope).
    #[serde(default)]
    pub receipt_scope: Option<String>,
    /// A boundary the next turn must bootstrap for (set by a compaction).
    #[serde(default)]
    pub pending: Option<Lifecycle>,
    /// How many bootstraps this session asked for (makes each boundary's event id distinct).
    #[serde(default)]
    pub generation: u32,
    /// Items injected since the last start or compaction: `family/artifact_id@revision`.
    #[serde(default)]
    pub injected: Vec<String>,
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
        self.receipt_scope = Some(scope_digest(scope));
        self.remember(items.iter().filter(|i| !i.truncated).map(|i| i.key.clone()));
    }

    /// The receipt to cite in a prepare for `scope`, if it belongs to that scope.
    #[must_use]
    pub fn receipt_for(&self, scope: &str) -> Option<&str> {
        (self.receipt_scope.as_deref() == Some(scope_digest(scope).as_str()))
            .then_some(self.receipt_id.as_deref())
            .flatten()
    }
}

fn scope_digest(scope: &str) -> String {
    crate::workspace::sha256_hex(scope.as_bytes())
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

    /// A compaction is under way: what was injected is about to be dropped, so the window starts
    /// again and the session's next prompt bootstraps with lifecycle `compact` (unless a
    /// `SessionStart` for the compaction does it first).
    pub fn mark_compacted(&self) {
        let mut r = self.load().unwrap_or_default();
        r.restart();
        r.pending = Some(Lifecycle::Compact);
        self.store(&r);
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }

    /// The record, or `None` when the session has none yet (or it cannot be used: a record is a
    /// cache, and a missing one only costs a repeated item).
    #[must_use]
    pub fn load(&self) -> Option<Record> {
        let path = self.path();
        let meta = fs::symlink_metadata(&path).ok()?;
        if !meta.is_file() || meta.len() > MAX_RECORD_BYTES || !state::owned_private(&meta) {
            return None;
        }
        state::read_versioned::<Record>(&path).ok().flatten()
    }

    /// Writes the record (atomic rename, 0600, no fsync: see [`state::write_cache`]).
    pub fn store(&self, record: &Record) {
        if StateDir::at(self.dir.parent().unwrap_or(Path::new(".")))
            .ensure(Some(DIR))
            .is_err()
        {
            return;
        }
        if let Ok(bytes) = state::versioned_bytes(record) {
            let _ = state::write_cache(&self.dir, &self.name, &bytes);
        }
    }

    /// Removes records not written for [`MAX_AGE`] (called at session start, never per prompt).
    pub fn prune_old(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        let now = std::time::SystemTime::now();
        for entry in entries.flatten().take(10_000) {
            let Ok(meta) = entry.metadata() else { continue };
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
}

/// The line that opens the item envelope of a PreparedContext.
const BEGIN: &str = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n";
/// The line that closes it.
const END: &str = "\nEND_POWERCONTEXT_PREPARED_CONTEXT_V1";

#[derive(Deserialize)]
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

/// The citation's artifact key (`artifact_ref` or `artifact` address).
fn citation_key(citation: &serde_json::Value) -> Option<String> {
    let obj = citation.as_object()?;
    obj.get("artifact_ref")
        .or_else(|| obj.get("artifact"))
        .and_then(artifact_key)
}

/// Drops the items of a prepared context that were injected already in this window, keeping the
/// Server's own bytes for everything else (the envelope's items are re-joined exactly as sent).
/// A content this client cannot read item by item is passed through whole.
#[must_use]
pub fn filter_seen(content: &str, seen: &[String]) -> Filtered {
    let Some((head, rest)) = content.split_once(BEGIN) else {
        return Filtered::Inject(content.to_owned(), Vec::new());
    };
    let Some((body, tail)) = rest.rsplit_once(END) else {
        return Filtered::Inject(content.to_owned(), Vec::new());
    };
    let Ok(envelope) = serde_json::from_str::<Envelope<'_>>(body) else {
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
                vec!["atomic-memory/art_a@1".into(), "atomic-memory/art_b@1".into()]
            )
        );
        assert_eq!(
            filter_seen(&whole, &["atomic-memory/art_a@1".into()]),
            Filtered::Inject(prepared(&[b]), vec!["atomic-memory/art_b@1".into()])
        );
        let all = [
            "atomic-memory/art_a@1".to_owned(),
            "atomic-memory/art_b@1".to_owned(),
        ];
        assert_eq!(filter_seen(&whole, &all), Filtered::AllSeen);
        // A new revision is a new item.
        assert!(
            matches!(filter_seen(&whole, &["atomic-memory/art_a@2".into()]), Filtered::Inject(t, _) if t == whole)
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
    fn records_round_trip_without_content() {
        let dir = tempfile::tempdir().unwrap();
        let f = SessionFile::new(&StateDir::at(dir.path()), Integration::ClaudeCode, "sess-SECRET");
        assert_eq!(f.load(), None);
        let mut r = Record::default();
        r.delivered(
            "scp_SECRETSCOPE",
            "bcr_9",
            &[ItemRef {
                key: "atomic-memory/art_1@1".into(),
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
