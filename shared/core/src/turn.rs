//! One host turn's shared mechanics, used by every host executable: the transport built from the
//! settings, the persistence gate, recall with its diagnostics, capture with flush, ledger and
//! spool, and scope resolution (through the resolved-scope cache on the prompt path). A capture
//! that passed the gate is written ahead to the spool before the first network call and is never
//! sent before the answer: after it, it is handed to the detached drainer (or, with background
//! draining off or without a spool entry, delivered by this process), always to a scope resolved
//! by the Server for it, never to a cached one. Hosts keep only what differs (payload fields, how
//! context is wrapped). Never writes stdout.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};

use crate::after::{AfterAnswer, Deferred};
use crate::bootstrap::{self, Bootstrap, Lifecycle};
use crate::capture::{self, CaptureGate};
use crate::config::Settings;
use crate::deadline::Deadline;
use crate::drain;
use crate::emit;
use crate::env::Env;
use crate::flush::FlushPolicy;
use crate::host::Integration;
use crate::http::Transport;
use crate::journal;
use crate::outcome::{Diagnostic, Failure, Outcome, Stage};
use crate::recall;
use crate::scope::ScopeQuery;
use crate::scope_cache::ScopeCache;
use crate::session::{self, BoundaryChange, Change, Filtered, SessionFile};
use crate::spool::{self, SpoolLimits, SpooledCapture, WriteAhead, WriteAheadError};
use crate::state::{self, StateDir};
use crate::wire::{CaptureRequest, PreparedContext};

/// What one capture persists, independent of the scope: the parts of the upstream `source_id`
/// and the deterministic metadata (so a replay dedupes instead of conflicting).
#[derive(Debug, Clone, PartialEq)]
pub struct Capture {
    /// Session id (empty when the host gave none).
    pub session: String,
    /// Turn id (empty when the host gave none).
    pub turn: String,
    /// The text captured, exactly as hashed.
    pub content: String,
    /// Metadata sent with it.
    pub metadata: Map<String, Value>,
}

impl Capture {
    /// A user prompt with its session and turn (both always present), tagged as the
    /// `user_prompt_submit` of `integration`, as the shim hosts (Pi, OpenClaw) capture it.
    #[must_use]
    pub fn user_prompt(integration: Integration, prompt: &str, cwd: &str, session: &str, turn: &str) -> Self {
        Self {
            session: session.to_owned(),
            turn: turn.to_owned(),
            content: prompt.to_owned(),
            metadata: capture::metadata(
                integration.as_str(),
                "user_prompt_submit",
                &[
                    ("cwd", Some(cwd)),
                    ("session_id", Some(session)),
                    ("turn_id", Some(turn)),
                ],
            ),
        }
    }

    /// The same capture with `content` as its text (the gated prompt: private blocks removed,
    /// secrets redacted).
    #[must_use]
    pub fn with_content(mut self, content: String) -> Self {
        self.content = content;
        self
    }

    /// The request for `scope`, with the integration's `source_id` prefix.
    #[must_use]
    pub fn request(&self, integration: Integration, scope: &str) -> CaptureRequest {
        capture::request(
            integration.source_prefix(),
            scope,
            (&self.session, &self.turn),
            &self.content,
            &self.metadata,
        )
    }
}

/// A prompt as every host hands it to [`Turn::begin`]: the host's mapping of its payload.
pub struct Prompt<'p> {
    /// The prompt exactly as typed (recall query and capture text both come from it).
    pub text: &'p str,
    /// Stdin had to be repaired: recall only, never captured.
    pub lossy: bool,
    /// The host session (binding key, session record), when the host named one.
    pub session: Option<&'p str>,
    /// The session's working directory (never looked at with a configured scope).
    pub cwd: &'p std::path::Path,
    /// What this prompt captures when the gate lets it through; its content becomes the gated
    /// text.
    pub capture: Capture,
    /// Whether recall is wanted, asked once the capture gate has decided (it may take local state,
    /// e.g. DSH's once-per-turn claim): without recall and without a capture, nothing is sent.
    pub recall: &'p dyn Fn() -> bool,
}

/// A turn whose prompt passed the capture gate and whose scope is known: what [`Turn::begin`]
/// gives every host.
pub struct Begun<'a> {
    /// The turn.
    pub turn: Turn<'a>,
    /// The scope recall uses (possibly from the cache; a capture never does).
    pub scope: String,
    /// Whether the host wants recall this turn (see [`Prompt::recall`]).
    pub recalls: bool,
    capture: Option<Capture>,
}

impl Begun<'_> {
    /// One recall for `query` in the turn's scope (see [`Turn::recall`]).
    // Called once per prompt: kept out of line so that each host's (speed-optimized) prompt
    // path calls this size-optimized copy instead of inlining the turn machinery into itself.
    #[inline(never)]
    #[must_use]
    pub fn recall(&self, query: &str, max_bytes: u32) -> Option<String> {
        let captured = self.capture.as_ref().map(|c| c.content.as_str());
        self.turn.recall_with(&self.scope, query, captured, max_bytes)
    }

    /// Ends the prompt path: the work for after the answer, the gated capture with it (see
    /// [`Turn::defer_capture`]); nothing is sent before the answer is out. A host that drops the
    /// value instead leaves its capture in the spool, for the next drainer.
    // Called once per prompt: kept out of line so that each host's (speed-optimized) prompt
    // path calls this size-optimized copy instead of inlining the turn machinery into itself.
    #[inline(never)]
    pub fn finish(self) -> AfterAnswer {
        if let Some(capture) = self.capture {
            self.turn.defer(capture);
        }
        self.turn.into_after()
    }
}

/// A host turn in progress: settings, transport and the integration's diagnostics.
pub struct Turn<'a> {
    /// The host.
    pub integration: Integration,
    /// The environment (credentials for later drains come from here, never from disk).
    pub env: &'a Env,
    /// Resolved settings.
    pub settings: &'a Settings,
    /// The Server connection, bounded by the process deadline.
    pub transport: Transport,
    /// When this host's delivered captures are flushed.
    pub flush: FlushPolicy,
    /// The host session's record (bootstrap receipt, injected items), when the host named one.
    pub session: Option<SessionFile>,
    /// The capture written ahead, claimed until delivered (then retired) or left for the drainer.
    ahead: Mutex<Option<WriteAhead>>,
    /// The capture was too large for the spool: not written ahead.
    too_large: AtomicBool,
    /// The scope the Server resolved during this turn (not taken from the cache), if any.
    fresh_scope: Mutex<Option<String>>,
    /// The prompt's scope query (what a deferred capture resolves when nothing was pinned).
    query: Mutex<Option<ScopeQuery>>,
    /// The prompt the capture gate scanned and the recall query it produced, so the prompt is
    /// scanned once per turn. The prompt is `None` when it is the capture's content as it is (the
    /// gate let it through unchanged): a large prompt is then not held once more for this.
    query_cache: std::sync::OnceLock<(Option<String>, Option<String>)>,
    /// What this turn leaves for after its answer (see [`Turn::into_after`]).
    after: Mutex<AfterAnswer>,
}

impl<'a> Turn<'a> {
    /// Builds the transport; an unusable proxy variable is reported as `config_invalid`.
    #[must_use]
    pub fn open(
        integration: Integration,
        env: &'a Env,
        settings: &'a Settings,
        deadline: &Deadline,
    ) -> Option<Self> {
        match settings.transport(deadline, env) {
            Ok(transport) => Some(Self {
                integration,
                env,
                settings,
                transport,
                flush: FlushPolicy::of(integration, settings),
                session: None,
                ahead: Mutex::new(None),
                too_large: AtomicBool::new(false),
                fresh_scope: Mutex::new(None),
                query: Mutex::new(None),
                query_cache: std::sync::OnceLock::new(),
                after: Mutex::new(AfterAnswer::none()),
            }),
            Err(name) => {
                emit::diagnostic(
                    &Diagnostic::new(integration.component(), Stage::Config, Outcome::ConfigInvalid)
                        .setting(name),
                );
                None
            }
        }
    }

    /// A diagnostic of this host.
    #[must_use]
    pub fn diag(&self, stage: Stage, outcome: Outcome) -> Diagnostic {
        Diagnostic::new(self.integration.component(), stage, outcome)
    }

    /// Ends the turn: what it leaves for after its answer (a bootstrap receipt, the session
    /// record's change, a deferred capture), for the answer step to run.
    pub fn into_after(self) -> AfterAnswer {
        self.after
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock_after(&self) -> std::sync::MutexGuard<'_, AfterAnswer> {
        self.after
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reports a classified failure.
    pub fn report(&self, stage: Stage, failure: Failure) {
        emit::diagnostic(&failure.diagnostic(self.integration.component(), stage));
    }

    /// The persistence policy, decided before any network call so a secret never waits on
    /// anything: capture enabled, exact text (not repaired), private blocks removed, within the
    /// bound, secrets withheld or redacted (`capture_secrets`). Returns the text to capture.
    #[must_use]
    pub fn capture_text(&self, text: &str, lossy: bool) -> Option<String> {
        if !self.settings.capture_prompts.value {
            return None;
        }
        if lossy {
            emit::diagnostic(&self.diag(Stage::Capture, Outcome::CaptureSkippedLossy));
            return None;
        }
        let (gated, query) = capture::gate_and_query(text, self.settings.capture_secrets.value);
        if let Some(query) = query {
            let as_is = matches!(gated, CaptureGate::Allowed(std::borrow::Cow::Borrowed(_)));
            let _ = self.query_cache.set(((!as_is).then(|| text.to_owned()), query));
        }
        let skipped = match gated {
            CaptureGate::Allowed(std::borrow::Cow::Borrowed(text)) => {
                return Some(crate::spare::string_of(text));
            }
            CaptureGate::Allowed(std::borrow::Cow::Owned(text)) => return Some(text),
            CaptureGate::Redacted(text, kind) => {
                emit::diagnostic(&self.diag(Stage::Capture, Outcome::CaptureRedacted).detail(kind));
                return Some(text);
            }
            CaptureGate::Secret(kind) => self
                .diag(Stage::Capture, Outcome::CaptureSkippedSecret)
                .detail(kind),
            CaptureGate::TooLarge => self.diag(Stage::Capture, Outcome::CaptureSkippedTooLarge),
            CaptureGate::Private => self.diag(Stage::Capture, Outcome::Skipped).detail("private"),
        };
        emit::diagnostic(&skipped);
        None
    }

    /// The scope for a prompt. A pending capture is first written ahead to the spool (with the
    /// binding keys, so a replay lands in the scope it would have landed in online); when the
    /// Server cannot be reached it simply stays there. A scope the Server resolved for the same
    /// keys within the cache's validity is used without asking again: it only steers recall, since
    /// the capture is resolved afresh before it is sent (see [`Turn::defer_capture`]).
    #[must_use]
    pub fn resolve(&self, query: ScopeQuery, pending: Option<&Capture>) -> Option<String> {
        if let Some(capture) = pending {
            self.write_ahead(&query, capture);
        }
        *self
            .query
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(query.clone());
        let cache = query
            .explicit
            .is_none()
            .then(|| ScopeCache::locate(self.env))
            .flatten();
        let server = self.transport.base().as_str();
        if let Some(scope) = cache
            .as_ref()
            .and_then(|c| c.get(server, self.integration, &query))
        {
            return Some(scope);
        }
        self.resolve_with(&query, pending.is_some(), cache.as_ref())
    }

    /// The scope straight from the Server, never from the cache, which it refreshes: a
    /// `SessionStart` sees a binding changed a moment ago.
    #[must_use]
    pub fn resolve_fresh(&self, query: ScopeQuery) -> Option<String> {
        let cache = query
            .explicit
            .is_none()
            .then(|| ScopeCache::locate(self.env))
            .flatten();
        self.resolve_with(&query, false, cache.as_ref())
    }

    /// Drops the cached scope for `query`, so the next prompt resolves it (a `SessionStart` that
    /// has no reason to ask the Server itself).
    pub fn forget_cached_scope(&self, query: &ScopeQuery) {
        if let Some(cache) = ScopeCache::locate(self.env) {
            cache.forget(self.transport.base().as_str(), self.integration, query);
        }
    }

    fn resolve_with(&self, query: &ScopeQuery, pending: bool, cache: Option<&ScopeCache>) -> Option<String> {
        match query.resolve(&self.transport) {
            Ok(scope) => {
                if let Some(c) = cache {
                    c.put(self.transport.base().as_str(), self.integration, query, &scope);
                }
                *self
                    .fresh_scope
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(scope.clone());
                Some(scope)
            }
            Err(f) => {
                self.report(Stage::Scope, f);
                if pending {
                    self.settle(!drain::is_permanent_rejection(&f));
                }
                None
            }
        }
    }

    /// This turn belongs to host session `session`: its prompts cite the session's bootstrap
    /// receipt, skip items already injected in the session's window, and bootstrap when one is
    /// due (see [`Turn::recall`]).
    #[must_use]
    pub fn in_session(mut self, session: Option<&str>) -> Self {
        self.session = session
            .filter(|s| !s.trim().is_empty())
            .and_then(|s| SessionFile::locate(self.env, self.integration, s));
        self
    }

    /// The prompt path every host shares, up to recall: the turn in its session, the capture
    /// gate (before any network call), the capture written ahead, the scope. `None` (after
    /// reporting why) when there is nothing to do or no scope.
    // Called once per prompt: kept out of line so that each host's (speed-optimized) prompt
    // path calls this size-optimized copy instead of inlining the turn machinery into itself.
    #[inline(never)]
    #[must_use]
    pub fn begin(
        integration: Integration,
        env: &'a Env,
        settings: &'a Settings,
        deadline: &Deadline,
        prompt: Prompt<'_>,
    ) -> Option<Begun<'a>> {
        let turn = Self::open(integration, env, settings, deadline)?.in_session(prompt.session);
        let capture = turn
            .capture_text(prompt.text, prompt.lossy)
            .map(|text| prompt.capture.with_content(text));
        let mut recalls = (prompt.recall)();
        if recalls {
            // A prompt that is private as a whole has no query: nothing to resolve a scope for.
            // Only the gate above filled the cache, for this prompt.
            let private = match turn.query_cache.get() {
                Some((_, q)) => q.is_none(),
                None => {
                    let q = capture::recall_query(prompt.text).map(std::borrow::Cow::into_owned);
                    let none = q.is_none();
                    let _ = turn.query_cache.set((Some(prompt.text.to_owned()), q));
                    none
                }
            };
            if private {
                emit::diagnostic(&turn.diag(Stage::Prepare, Outcome::Skipped).detail("private"));
                recalls = false;
            }
        }
        if capture.is_none() && !recalls {
            return None;
        }
        let query = ScopeQuery::for_event(
            integration,
            settings.scope_id.value.as_deref(),
            prompt.session,
            prompt.cwd,
            deadline,
            crate::workspace::Discovery::for_env(env),
        );
        let scope = turn.resolve(query, capture.as_ref())?;
        Some(Begun {
            turn,
            scope,
            recalls,
            capture,
        })
    }

    /// A session boundary seen by `SessionStart` (start, resume, clear, compaction): a new window
    /// of injected items (except on resume, which restores the transcript and what it had been
    /// given) and the boundary's bootstrap package, if there is one. Everything is recorded once
    /// the answer is out; a bootstrap that failed is retried by the session's next prompt. A
    /// resume on a host whose resumed transcript still holds the window's package (nothing
    /// pending) injects nothing: the package is already there.
    #[must_use]
    pub fn session_start(&self, scope: &str, lifecycle: Lifecycle) -> Option<String> {
        let file = self.session.as_ref();
        let loaded = file.and_then(SessionFile::load);
        let generation = loaded.as_ref().map_or(0, |r| r.generation);
        let epoch = file.map_or(0, |f| f.epoch(loaded.as_ref()));
        if let Some(f) = file {
            f.prune_old();
        }
        let still_there = lifecycle == Lifecycle::Resume
            && self.integration.resume_keeps_start_context()
            && loaded
                .as_ref()
                .is_some_and(|r| r.pending.is_none() && r.receipt_for(scope).is_some());
        if still_there {
            return None;
        }
        let fetched = self.fetch_bootstrap(
            scope,
            lifecycle,
            (epoch, generation),
            self.settings.bootstrap_max_bytes.value,
        );
        self.hold_change(
            (epoch, generation),
            Some(boundary_after(lifecycle, fetched.is_ok())),
            Vec::new(),
        );
        let (content, held) = fetched.ok().flatten()?;
        self.lock_after().settle_package(held);
        Some(content)
    }

    /// A `SessionStart` that could not reach the Server, or one with bootstrap off: the window
    /// still starts again; the next prompt bootstraps when bootstrap is on.
    pub fn session_start_offline(&self, lifecycle: Lifecycle) {
        let file = self.session.as_ref();
        let loaded = file.and_then(SessionFile::load);
        let seen = (
            file.map_or(0, |f| f.epoch(loaded.as_ref())),
            loaded.map_or(0, |r| r.generation),
        );
        let retry = self.settings.bootstrap.value;
        self.hold_change(seen, Some(boundary_after(lifecycle, !retry)), Vec::new());
    }

    /// Holds this run's change to its session record; `seen` is the record's epoch and
    /// generation as the run read them.
    fn hold_change(&self, seen: (u64, u32), boundary: Option<BoundaryChange>, fresh: Vec<String>) {
        if let Some(file) = &self.session {
            self.lock_after().record_change(Change {
                file: file.clone(),
                seen_generation: seen.1,
                epoch: seen.0,
                persists: self.integration.injection_persists(),
                boundary,
                fresh,
            });
        }
    }

    /// The boundary's package: `Ok(None)` when the Server has none to give, `Err` when it could
    /// not be asked (reported; the boundary stays pending).
    fn fetch_bootstrap(
        &self,
        scope: &str,
        lifecycle: Lifecycle,
        (epoch, generation): (u64, u32),
        max_bytes: u32,
    ) -> Result<Option<(String, bootstrap::Held)>, ()> {
        // A stable id per boundary event: a retry of the same event gets the same receipt. Without
        // a session the event is this process; the record's epoch keeps a session whose record
        // was lost from reusing an id of its earlier life.
        let session_key = self.session.as_ref().map_or_else(
            || format!("run-{}-{}", std::process::id(), crate::state::now_millis()),
            |f| format!("{}:{epoch}", f.key()),
        );
        let event_id = format!(
            "{}:{session_key}:{}:{}",
            self.integration.as_str(),
            lifecycle.as_str(),
            generation.wrapping_add(1),
        );
        let request = bootstrap::BootstrapRequest {
            scope_id: scope,
            enabled: true,
            profile: bootstrap::PROFILE,
            lifecycle,
            integration: self.integration.as_str(),
            event_id: &event_id,
            max_bytes,
        };
        // A fresh scope's first writes can race on the Server (409 for both of two concurrent
        // first requests); the event id makes one retry safe.
        let answer = match bootstrap::request(&self.transport, &request) {
            Err(f) if f.http_status == Some(409) => bootstrap::request(&self.transport, &request),
            other => other,
        };
        match answer {
            Ok(Bootstrap::Ready {
                content,
                items,
                receipt_id,
            }) => Ok(Some((
                content,
                bootstrap::Held {
                    transport: self.transport.clone(),
                    component: self.integration.component(),
                    scope: scope.to_owned(),
                    receipt_id,
                    items,
                },
            ))),
            // No curated memory is the normal case for most scopes: nothing worth a line, but the
            // run journal records it as `empty` (what the docs call it), not as a skipped run.
            Ok(Bootstrap::Nothing("no_eligible_context")) => {
                journal::observe(
                    &self
                        .diag(Stage::Bootstrap, Outcome::Empty)
                        .status(Some(200))
                        .detail("no_eligible_context"),
                );
                Ok(None)
            }
            Ok(Bootstrap::Nothing(reason)) => {
                emit::diagnostic(
                    &self
                        .diag(Stage::Bootstrap, Outcome::Skipped)
                        .status(Some(200))
                        .detail(reason),
                );
                Ok(None)
            }
            Err(f) => {
                self.report(Stage::Bootstrap, f);
                Err(())
            }
        }
    }

    /// Makes a gated capture durable before any network call: one new spool file, no shared
    /// lock. A state problem is reported and the capture goes on without it.
    pub fn write_ahead(&self, query: &ScopeQuery, capture: &Capture) {
        // The entry without the text, which is written from the capture itself (not copied).
        let keys = Capture {
            session: capture.session.clone(),
            turn: capture.turn.clone(),
            content: String::new(),
            metadata: capture.metadata.clone(),
        };
        let entry = self.spooled(keys, query.clone());
        let written = StateDir::locate(self.env)
            .map_err(WriteAheadError::from)
            .and_then(|st| {
                let limits = SpoolLimits::from_env(self.env);
                let ahead = spool::write_ahead_text(&st, &entry, &capture.content, &limits)?;
                if !drain::background_disabled(self.env) {
                    drain::start_early(&st, self.env);
                }
                Ok(ahead)
            });
        if state::take_tightened() {
            emit::diagnostic(
                &self
                    .diag(Stage::State, Outcome::StateRepaired)
                    .detail("permissions_tightened"),
            );
        }
        match written {
            Ok(ahead) => *self.lock_ahead() = Some(ahead),
            Err(WriteAheadError::TooLarge) => self.too_large.store(true, Ordering::Relaxed),
            Err(WriteAheadError::State(e)) => emit::diagnostic(
                &self
                    .diag(Stage::State, Outcome::StateUnavailable)
                    .detail(e.detail()),
            ),
        }
    }

    /// The spool entry of `capture` for `query`.
    fn spooled(&self, capture: Capture, query: ScopeQuery) -> SpooledCapture {
        SpooledCapture {
            integration: self.integration.as_str().to_owned(),
            server: self.transport.base().as_str().to_owned(),
            source_prefix: self.integration.source_prefix().to_owned(),
            query,
            session: capture.session,
            turn: capture.turn,
            content: capture.content,
            metadata: capture.metadata,
            flush: self.flush.keep_pending,
        }
    }

    fn lock_ahead(&self) -> std::sync::MutexGuard<'_, Option<WriteAhead>> {
        self.ahead
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Ends the write-ahead: a retryable failure leaves the entry for the drainer (and says so);
    /// a delivery or a permanent failure retires it.
    fn settle(&self, keep: bool) {
        let ahead = self.lock_ahead().take();
        if keep {
            spool::report_left(
                self.integration.component(),
                ahead,
                self.too_large.load(Ordering::Relaxed),
            );
        } else if let Some(ahead) = ahead {
            ahead.retire();
        }
    }

    /// One recall round trip: the text of a ready context, or `None` after reporting why not.
    ///
    /// In a session (see [`Turn::in_session`]) a bootstrap is fetched alongside when one is due —
    /// a session's first prompt on hosts without a session-start hook, or the first prompt after
    /// a compaction or a failed bootstrap — and put before the recalled items; on hosts whose
    /// injections stay in the conversation the prepare also cites the session's receipt, and
    /// items injected earlier in the window are left out (a prompt whose items were all injected
    /// already injects nothing). What the answer delivered is recorded once it is out.
    ///
    /// The query never carries a private block or a detected secret, whatever `capture_secrets`.
    #[must_use]
    pub fn recall(&self, scope: &str, query: &str, max_bytes: u32) -> Option<String> {
        self.recall_with(scope, query, None, max_bytes)
    }

    /// [`Turn::recall`], `captured` being the content of the capture the gate let through (the
    /// prompt it scanned, when it let it through unchanged).
    fn recall_with(
        &self,
        scope: &str,
        query: &str,
        captured: Option<&str>,
        max_bytes: u32,
    ) -> Option<String> {
        let cached = self
            .query_cache
            .get()
            .filter(|(prompt, _)| match prompt {
                Some(prompt) => prompt == query,
                None => captured == Some(query),
            })
            .map(|(_, q)| q.as_deref().map(std::borrow::Cow::Borrowed));
        let Some(query) = cached.unwrap_or_else(|| capture::recall_query(query)) else {
            emit::diagnostic(&self.diag(Stage::Prepare, Outcome::Skipped).detail("private"));
            return None;
        };
        let query: &str = &query;
        let Some(file) = &self.session else {
            return self.prepare(scope, query, max_bytes, None);
        };
        let persists = self.integration.injection_persists();
        let loaded = file.load();
        let read_as = (
            file.epoch(loaded.as_ref()),
            loaded.as_ref().map_or(0, |r| r.generation),
        );
        let has_epoch = loaded.as_ref().is_some_and(|r| r.epoch != 0);
        let due = match &loaded {
            _ if !self.settings.bootstrap.value => None,
            None if self.integration.bootstraps_at_first_prompt() => Some(Lifecycle::Startup),
            None => None,
            Some(r) => r.pending,
        };
        let receipt = loaded
            .as_ref()
            .filter(|_| persists && due.is_none())
            .and_then(|r| r.receipt_for(scope));
        let (fetched, prepared) = match due {
            None => (Ok(None), self.prepare(scope, query, max_bytes, receipt)),
            Some(lifecycle) => {
                // Both parts share `max_bytes` (as long as it leaves each the Server's minimum).
                let boot = self
                    .settings
                    .bootstrap_max_bytes
                    .value
                    .min(max_bytes.saturating_sub(bootstrap::MIN_BYTES + 2))
                    .max(bootstrap::MIN_BYTES);
                let room = max_bytes.saturating_sub(boot + 2).max(bootstrap::MIN_BYTES);
                std::thread::scope(|s| {
                    let b = s.spawn(|| self.fetch_bootstrap(scope, lifecycle, read_as, boot));
                    let p = self.prepare(scope, query, room, None);
                    (b.join().unwrap_or(Err(())), p)
                })
            }
        };
        let boundary = due.map(|l| boundary_after(l, fetched.is_ok()));
        let package = fetched.ok().flatten();
        let mut seen = if persists {
            loaded.map(|r| r.injected).unwrap_or_default()
        } else {
            Vec::new()
        };
        if let Some((_, held)) = &package {
            seen.extend(held.items.iter().filter(|i| !i.truncated).map(|i| i.key.clone()));
        }
        let mut fresh = Vec::new();
        let recalled = match prepared.map(|text| session::filter_seen(&text, &seen)) {
            Some(Filtered::Inject(text, new_keys)) => {
                fresh = new_keys;
                Some(text)
            }
            Some(Filtered::AllSeen) => {
                let mut d = self.diag(Stage::Prepare, Outcome::Empty).status(Some(200));
                d.detail = Some("already_injected");
                emit::diagnostic(&d);
                None
            }
            None => None,
        };
        // A prompt that handled no boundary and injected nothing new leaves a record that has its
        // epoch as it is: no locked read and rewrite of it after the answer.
        if boundary.is_some() || !fresh.is_empty() || !has_epoch {
            self.hold_change(read_as, boundary, fresh);
        }
        match (package, recalled) {
            (Some((content, held)), recalled) => {
                self.lock_after().settle_package(held);
                Some(match recalled {
                    Some(text) => format!("{content}\n\n{text}"),
                    None => content,
                })
            }
            (None, recalled) => recalled,
        }
    }

    fn prepare(&self, scope: &str, query: &str, max_bytes: u32, receipt: Option<&str>) -> Option<String> {
        match recall::prepare_citing(&self.transport, scope, query, max_bytes, receipt) {
            Ok(PreparedContext::Ready(text)) => {
                journal::note_recalled(text.len());
                Some(text)
            }
            Ok(PreparedContext::Empty) => {
                let mut d = self.diag(Stage::Prepare, Outcome::Empty).status(Some(200));
                d.context_status = Some("empty");
                d.content_bytes = Some(0);
                emit::diagnostic(&d);
                None
            }
            Err(f) => {
                self.report(Stage::Prepare, f);
                None
            }
        }
    }

    /// Holds the turn's capture for after the answer (see [`crate::after`]): nothing is sent on
    /// the prompt path. `capture` is what was gated; `scope` is only used when the Server resolved
    /// it during this turn (then it is pinned in the spool entry: fresh, and a replay sends the
    /// same request); a scope from the cache is never used for a capture.
    pub fn defer_capture(&self, capture: &Capture) {
        self.defer(capture.clone());
    }

    /// [`Turn::defer_capture`] of a capture this turn no longer needs: its text is moved, not
    /// copied, into what is left for after the answer.
    fn defer(&self, capture: Capture) {
        let fresh = self
            .fresh_scope
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let mut ahead = self.lock_ahead().take();
        if let (Some(a), Some(scope)) = (ahead.as_mut(), fresh.as_deref())
            && let Err(e) = a.pin_scope(scope)
        {
            emit::diagnostic(
                &self
                    .diag(Stage::State, Outcome::StateUnavailable)
                    .detail(e.detail()),
            );
        }
        let background = ahead.is_some() && !drain::background_disabled(self.env);
        let state = StateDir::locate(self.env).ok();
        let query = match fresh.as_deref() {
            Some(scope) => ScopeQuery::resolved(scope),
            None => match self
                .query
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
            {
                Some(q) => q,
                // Never resolved: nothing to deliver to.
                None => return,
            },
        };
        let entry = self.spooled(capture, query);
        self.lock_after().deliver_capture(Deferred {
            component: self.integration.component(),
            ahead,
            entry,
            transport: self.transport.clone(),
            flush: self.flush,
            too_large: self.too_large.load(Ordering::Relaxed),
            background,
            state,
        });
    }
}

/// What a handled boundary leaves in the record: a new window (not on resume), and the boundary
/// still pending when its bootstrap could not be fetched.
fn boundary_after(lifecycle: Lifecycle, fetched: bool) -> BoundaryChange {
    BoundaryChange {
        restart: lifecycle != Lifecycle::Resume,
        pending_after: (!fetched).then_some(lifecycle),
    }
}
