//! The resolved-scope cache: what `POST /v1/scope-bindings/resolve` last answered for one (Server,
//! integration, binding keys), so a prompt within [`DEFAULT_VALIDITY`] of the last resolve goes
//! straight to prepare. It only ever steers recall: a capture never takes its scope from here
//! (the drainer, or the hook after its answer, resolves again first). It never logs a scope id,
//! never follows a symlink, never trusts a file another user owns or others may write, and never
//! reads more than [`MAX_ENTRY_BYTES`].
//!
//! Layout: `scopes/<hash>.json`, one small file per key, where the name is a hash of the Server URL
//! and the binding keys (so neither a path nor a session id shows in a listing). Written through a
//! temp file and a rename without a lock or an fsync: losing an entry only costs one resolve.
//!
//! Validity, and why 30 s: a binding is changed by hand (the official CLI or the Server API),
//! rarely, and the next prompt after it is typed seconds later at best; within a burst of agent
//! steps (DSH's pre-step, OpenCode's per message) or back-to-back prompts the cache takes resolve
//! off every prompt but the first. A changed binding therefore shows in recall at most 30 s
//! later, at once after a `SessionStart` (which always resolves and rewrites the entry), and
//! never in a capture, which is always resolved afresh.

use std::fs;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::host::Integration;
use crate::scope::ScopeQuery;
use crate::state::{self, Opened, StateDir, now_millis, open_state_file, parse_versioned};
use crate::workspace::sha256_hex;

/// The subdirectory of the state directory.
pub const DIR: &str = "scopes";

/// How long a resolved scope steers recall without asking the Server again.
pub const DEFAULT_VALIDITY: Duration = Duration::from_secs(30);

/// Overrides the validity in whole seconds; `0` turns the cache off.
pub const VALIDITY_VAR: &str = crate::variables::HOOKS_SCOPE_CACHE_SECONDS;

/// An entry is a scope id and a time: anything larger is not ours.
pub const MAX_ENTRY_BYTES: u64 = 4096;

/// Entries this much older than their validity are removed by the drainer.
pub const PRUNE_AGE: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    scope: String,
    /// When the Server answered, Unix milliseconds.
    at: u64,
}

/// The cache of one state directory.
#[derive(Debug, Clone)]
pub struct ScopeCache {
    state: StateDir,
    validity: Duration,
}

impl ScopeCache {
    /// The cache in the configured state directory with the configured validity; `None` when it
    /// is off or there is no state directory.
    #[must_use]
    pub fn locate(env: &Env) -> Option<Self> {
        let validity = validity(env);
        if validity.is_zero() {
            return None;
        }
        Some(Self {
            state: StateDir::locate(env).ok()?,
            validity,
        })
    }

    /// A cache at an explicit state directory.
    #[must_use]
    pub fn at(state: StateDir, validity: Duration) -> Self {
        Self { state, validity }
    }

    fn path(&self, server: &str, integration: Integration, query: &ScopeQuery) -> Option<PathBuf> {
        // An explicit scope id needs no Server: nothing to cache.
        if query.explicit.is_some() {
            return None;
        }
        let keys = serde_json::to_string(&query.keys).ok()?;
        let material = format!("v1\n{server}\n{}\n{keys}", integration.as_str());
        let hash = sha256_hex(material.as_bytes());
        Some(self.state.file(DIR).join(format!("{}.json", &hash[..32])))
    }

    /// The cached scope for this key while it is valid. Anything unexpected (missing, a symlink,
    /// another user's, too large, unparsable, from the future) is a miss.
    #[must_use]
    pub fn get(&self, server: &str, integration: Integration, query: &ScopeQuery) -> Option<String> {
        let path = self.path(server, integration, query)?;
        let Ok(Opened::File(file, _)) = open_state_file(&path) else {
            return None;
        };
        let mut bytes = Vec::new();
        file.take(MAX_ENTRY_BYTES + 1).read_to_end(&mut bytes).ok()?;
        if bytes.len() as u64 > MAX_ENTRY_BYTES {
            return None;
        }
        let entry: Entry = parse_versioned(&bytes).ok().flatten()?;
        let age = now_millis().checked_sub(entry.at)?;
        (u128::from(age) < self.validity.as_millis() && !entry.scope.is_empty()).then_some(entry.scope)
    }

    /// Records what the Server just resolved. Best effort: a failure only costs a resolve later.
    pub fn put(&self, server: &str, integration: Integration, query: &ScopeQuery, scope: &str) {
        let Some(path) = self.path(server, integration, query) else {
            return;
        };
        if self.state.ensure(Some(DIR)).is_err() {
            return;
        }
        let entry = Entry {
            scope: scope.to_owned(),
            at: now_millis(),
        };
        let (Ok(bytes), Some(dir), Some(name)) = (
            state::versioned_bytes(&entry),
            path.parent(),
            path.file_name().and_then(|n| n.to_str()),
        ) else {
            return;
        };
        let _ = state::write_cache(dir, name, &bytes);
    }

    /// Drops the entry for this key (a `SessionStart` that does not resolve): the next prompt asks
    /// the Server.
    pub fn forget(&self, server: &str, integration: Integration, query: &ScopeQuery) {
        if let Some(path) = self.path(server, integration, query) {
            // A removal never follows a link: `unlink` removes the name itself.
            let _ = fs::remove_file(path);
        }
    }

    /// Removes entries not refreshed for [`PRUNE_AGE`] and stale temp files (the drainer calls
    /// this, off the prompt path). Only regular files of ours are removed.
    pub fn prune(&self) {
        let dir = self.state.file(DIR);
        state::sweep_stale_temps(&dir);
        let Ok(entries) = fs::read_dir(&dir) else { return };
        for e in entries.flatten() {
            let Ok(meta) = e.metadata() else { continue };
            let old = meta
                .modified()
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > PRUNE_AGE);
            let ours = e.file_name().to_str().is_some_and(|n| n.ends_with(".json"));
            if old && ours && meta.file_type().is_file() {
                let _ = fs::remove_file(e.path());
            }
        }
    }
}

/// The validity in effect: [`VALIDITY_VAR`] when it is a whole number of seconds, else the default.
#[must_use]
pub fn validity(env: &Env) -> Duration {
    env.text(VALIDITY_VAR)
        .and_then(parse_validity)
        .unwrap_or(DEFAULT_VALIDITY)
}

/// [`VALIDITY_VAR`]'s value: whole seconds from 0 (off) to a day; `None` for anything else (the
/// configuration resolver reports it).
#[must_use]
pub fn parse_validity(text: &str) -> Option<Duration> {
    let secs = text.trim().parse::<u32>().ok().filter(|s| *s <= 86_400)?;
    Some(Duration::from_secs(u64::from(secs)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::BindingKey;
    use std::os::unix::fs::PermissionsExt;

    fn query(session: &str) -> ScopeQuery {
        ScopeQuery {
            explicit: None,
            keys: vec![BindingKey {
                integration: "codex".into(),
                kind: "session".into(),
                external_id: session.into(),
            }],
            legacy: None,
            legacy_from: None,
        }
    }

    #[test]
    fn hit_within_validity_miss_after_and_per_key() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = ScopeCache::at(StateDir::at(tmp.path()), Duration::from_millis(300));
        let (srv, i) = ("http://127.0.0.1:9", Integration::Codex);
        assert_eq!(cache.get(srv, i, &query("a")), None);
        cache.put(srv, i, &query("a"), "scp_a");
        assert_eq!(cache.get(srv, i, &query("a")).as_deref(), Some("scp_a"));
        assert_eq!(cache.get(srv, i, &query("b")), None);
        assert_eq!(cache.get("http://127.0.0.1:8", i, &query("a")), None);
        assert_eq!(cache.get(srv, Integration::ClaudeCode, &query("a")), None);
        // Explicit ids are never cached.
        let explicit = ScopeQuery::resolved("scp_x");
        cache.put(srv, i, &explicit, "scp_x");
        assert_eq!(cache.get(srv, i, &explicit), None);
        std::thread::sleep(Duration::from_millis(350));
        assert_eq!(cache.get(srv, i, &query("a")), None);
        // Names never show a key or a scope.
        for e in fs::read_dir(tmp.path().join(DIR)).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            assert!(!name.contains("scp_") && !name.contains("codex"), "{name}");
        }
    }

    #[test]
    fn foreign_looking_entries_are_misses() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = ScopeCache::at(StateDir::at(tmp.path()), Duration::from_secs(30));
        let (srv, i) = ("http://127.0.0.1:9", Integration::Codex);
        cache.put(srv, i, &query("a"), "scp_a");
        let path = cache.path(srv, i, &query("a")).unwrap();
        // Writable by others: not trusted.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(cache.get(srv, i, &query("a")), None);
        // A symlink to a valid entry: never followed.
        fs::remove_file(&path).unwrap();
        let elsewhere = tmp.path().join("other.json");
        fs::write(
            &elsewhere,
            format!("{{\"format\":1,\"scope\":\"scp_z\",\"at\":{}}}", now_millis()),
        )
        .unwrap();
        fs::set_permissions(&elsewhere, fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert_eq!(cache.get(srv, i, &query("a")), None);
        // Oversized: a miss, read no further than the bound.
        fs::remove_file(&path).unwrap();
        fs::write(&path, vec![b' '; 10_000]).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(cache.get(srv, i, &query("a")), None);
    }
}
