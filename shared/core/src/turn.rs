//! One host turn's shared mechanics, used by every host executable: the transport built from the
//! settings, the persistence gate, recall with its diagnostics, capture with flush, ledger and
//! spool, and scope resolution that keeps an offline capture for later. Hosts keep only what
//! differs (payload fields, how context is wrapped, their flush policy). Never writes stdout.

use serde_json::{Map, Value};

use crate::capture::{self, CaptureGate};
use crate::config::Settings;
use crate::deadline::Deadline;
use crate::drain;
use crate::emit;
use crate::env::Env;
use crate::host::Integration;
use crate::http::Transport;
use crate::ledger;
use crate::outcome::{Diagnostic, Failure, Outcome, Stage};
use crate::recall;
use crate::scope::ScopeQuery;
use crate::spool::{self, SpooledCapture};
use crate::state;
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
        CaptureRequest {
            scope_id: scope.to_owned(),
            source_id: capture::source_id(
                integration.source_prefix(),
                scope,
                &self.session,
                &self.turn,
                &self.content,
            ),
            content: self.content.clone(),
            metadata: self.metadata.clone(),
        }
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
    /// Whether a spooled capture should be flushed once delivered (Pi: always; others: when
    /// `flush_on_capture` is on).
    pub flush_wanted: bool,
    /// The prompt the capture gate scanned and the recall query it produced, so the prompt is
    /// scanned once per turn.
    query_cache: std::sync::OnceLock<(String, Option<String>)>,
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
        match Transport::new(
            settings.server_url.value.clone(),
            settings.authorization.value.clone(),
            settings.request_timeout.value,
            *deadline,
            env,
        ) {
            Ok(transport) => Some(Self {
                integration,
                env,
                settings,
                transport,
                flush_wanted: settings.flush_on_capture.value,
                query_cache: std::sync::OnceLock::new(),
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
            let _ = self.query_cache.set((text.to_owned(), query));
        }
        let skipped = match gated {
            CaptureGate::Allowed(text) => return Some(text.into_owned()),
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

    /// Resolves the scope. When the Server cannot be reached and a capture is pending, the
    /// capture is spooled with the binding keys, so replay lands in the scope it would have
    /// landed in online.
    #[must_use]
    pub fn resolve(&self, query: ScopeQuery, pending: Option<&Capture>) -> Option<String> {
        match query.resolve(&self.transport) {
            Ok(scope) => Some(scope),
            Err(f) => {
                self.report(Stage::Scope, f);
                if let Some(capture) = pending
                    && drain::is_retryable(&f)
                {
                    self.spool(query, capture);
                }
                None
            }
        }
    }

    /// One recall round trip: the text of a ready context, or `None` after reporting why not.
    /// The query never carries a private block or a detected secret, whatever `capture_secrets`.
    #[must_use]
    pub fn recall(&self, scope: &str, query: &str, max_bytes: u32) -> Option<String> {
        let cached = self
            .query_cache
            .get()
            .filter(|(prompt, _)| prompt == query)
            .map(|(_, q)| q.as_deref().map(std::borrow::Cow::Borrowed));
        let Some(query) = cached.unwrap_or_else(|| capture::recall_query(query)) else {
            emit::diagnostic(&self.diag(Stage::Prepare, Outcome::Skipped).detail("private"));
            return None;
        };
        match recall::prepare(&self.transport, scope, &query, max_bytes) {
            Ok(PreparedContext::Ready(text)) => Some(text),
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

    /// Sends a capture; a retryable failure spools it with the resolved scope. Returns the
    /// Source position when the Server took it.
    #[must_use]
    pub fn send(&self, scope: &str, capture: &Capture) -> Option<u64> {
        match capture::send(&self.transport, &capture.request(self.integration, scope)) {
            Ok(position) => Some(position),
            Err(f) => {
                self.report(Stage::Capture, f);
                if drain::is_retryable(&f) {
                    self.spool(ScopeQuery::resolved(scope), capture);
                }
                None
            }
        }
    }

    /// Sends a capture and, with `flush_on_capture`, flushes through its position; a flush that
    /// does not finish leaves the position in the ledger (unless the Server has no model, which
    /// will never flush).
    pub fn capture_and_flush(&self, scope: &str, capture: &Capture) {
        let Some(position) = self.send(scope, capture) else {
            return;
        };
        if !self.settings.flush_on_capture.value {
            return;
        }
        if let Err(f) = capture::flush_through(
            &self.transport,
            scope,
            position,
            self.settings.flush_max_calls.value,
        ) {
            self.report(Stage::Flush, f);
            if f.outcome != Outcome::InferenceUnavailable {
                self.keep_pending(scope, position);
            }
        }
    }

    /// Records a captured position in the shared ledger for a later flush.
    pub fn keep_pending(&self, scope: &str, position: u64) {
        let wait = self.transport.deadline().within(state::HOOK_LOCK_WAIT);
        ledger::keep_pending(
            self.integration.component(),
            self.env,
            &wait,
            self.transport.base().as_str(),
            scope,
            position,
            self.integration.as_str(),
        );
    }

    /// Keeps a capture the Server could not take, with exactly what replay needs to rebuild the
    /// online request. The gate already ran: no secret reaches the disk.
    pub fn spool(&self, query: ScopeQuery, capture: &Capture) {
        let entry = SpooledCapture {
            integration: self.integration.as_str().to_owned(),
            server: self.transport.base().as_str().to_owned(),
            source_prefix: self.integration.source_prefix().to_owned(),
            query,
            session: capture.session.clone(),
            turn: capture.turn.clone(),
            content: capture.content.clone(),
            metadata: capture.metadata.clone(),
            flush: self.flush_wanted,
        };
        let wait = self.transport.deadline().within(state::HOOK_LOCK_WAIT);
        spool::keep_for_later(self.integration.component(), self.env, &wait, &entry);
    }
}
