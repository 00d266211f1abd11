//! The closed outcome taxonomy and the content-free diagnostic record. A diagnostic carries only
//! names, numbers and enumerated words: never a prompt, scope id, context, body or token.

use serde::Serialize;

/// What happened to one stage of a hook run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Context was injected (no diagnostic line is written for it).
    Ready,
    /// Nothing to do for this payload (wrong event, blank prompt, unreadable stdin…).
    Skipped,
    /// The Server answered with an empty PreparedContext.
    Empty,
    /// 401: the token is missing or wrong.
    AuthenticationFailed,
    /// 403: the token is not allowed to do this.
    Forbidden,
    /// 404 with `scope_not_found`: the scope does not exist on this Server.
    ScopeNotFound,
    /// 404 without an error envelope: the Server does not have this route (too old or not PowerContext).
    VersionMismatch,
    /// A redirect, an unexpected status, a bad body or a schema violation.
    InvalidResponse,
    /// Connection refused or reset, or 503.
    ServerUnavailable,
    /// The request or the process budget ran out.
    Timeout,
    /// A setting is invalid; nothing was sent.
    ConfigInvalid,
    /// The prompt looked like it holds a secret; it was not persisted.
    CaptureSkippedSecret,
    /// The prompt held secrets; it was captured with each one replaced by `[REDACTED:<rule>]`.
    CaptureRedacted,
    /// The prompt exceeds the Server's content limit; it was not captured.
    CaptureSkippedTooLarge,
    /// The prompt could not be decoded exactly (invalid UTF-8 or lone surrogates); not persisted.
    CaptureSkippedLossy,
    /// The Server holds a different Source under the same id (409).
    CaptureConflict,
    /// The capture was written to the local spool for later delivery.
    CaptureSpooled,
    /// Flush is unavailable because the Server has no model configured (503 `inference_unavailable`).
    InferenceUnavailable,
    /// Flush calls ran out before the cursor reached the captured position.
    FlushIncomplete,
    /// The Claude Code context cap made the hook request fewer bytes than configured.
    MaxBytesClamped,
    /// Prepared context too large for the host channel; dropped.
    ContextTooLarge,
    /// Local state (ledger, spool) could not be used; the hook went on without it.
    StateUnavailable,
    /// The state directory was looser than 0700 and was tightened; the hook used it.
    StateRepaired,
    /// A bug: the hook panicked and failed open.
    InternalError,
}

impl Outcome {
    /// The snake_case name used in diagnostics and documentation.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Skipped => "skipped",
            Self::Empty => "empty",
            Self::AuthenticationFailed => "authentication_failed",
            Self::Forbidden => "forbidden",
            Self::ScopeNotFound => "scope_not_found",
            Self::VersionMismatch => "version_mismatch",
            Self::InvalidResponse => "invalid_response",
            Self::ServerUnavailable => "server_unavailable",
            Self::Timeout => "timeout",
            Self::ConfigInvalid => "config_invalid",
            Self::CaptureSkippedSecret => "capture_skipped_secret",
            Self::CaptureRedacted => "capture_redacted",
            Self::CaptureSkippedTooLarge => "capture_skipped_too_large",
            Self::CaptureSkippedLossy => "capture_skipped_lossy",
            Self::CaptureConflict => "capture_conflict",
            Self::CaptureSpooled => "capture_spooled",
            Self::InferenceUnavailable => "inference_unavailable",
            Self::FlushIncomplete => "flush_incomplete",
            Self::MaxBytesClamped => "max_bytes_clamped",
            Self::ContextTooLarge => "context_too_large",
            Self::StateUnavailable => "state_unavailable",
            Self::StateRepaired => "state_repaired",
            Self::InternalError => "internal_error",
        }
    }

    /// Whether a failed capture with this outcome may be retried later (kept in the spool).
    #[must_use]
    pub fn is_retryable(self) -> bool {
        matches!(self, Self::ServerUnavailable | Self::Timeout)
    }
}

/// The stage a diagnostic is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Stage {
    /// Configuration.
    #[serde(rename = "config")]
    Config,
    /// Reading the host payload.
    #[serde(rename = "payload")]
    Payload,
    /// Scope resolution.
    #[serde(rename = "scope_resolve")]
    Scope,
    /// `POST /v1/context/prepare`.
    #[serde(rename = "context_prepare")]
    Prepare,
    /// `POST /v1/context/bootstrap` and its receipts.
    #[serde(rename = "context_bootstrap")]
    Bootstrap,
    /// `POST /v1/sources/content`.
    #[serde(rename = "source_capture")]
    Capture,
    /// `POST /v1/memory/flush`.
    #[serde(rename = "memory_flush")]
    Flush,
    /// Local state.
    #[serde(rename = "state")]
    State,
    /// The process itself.
    #[serde(rename = "process")]
    Process,
}

impl Stage {
    fn component_suffix(self) -> &'static str {
        match self {
            Self::Prepare | Self::Bootstrap | Self::Scope | Self::Payload | Self::Config | Self::Process => {
                "recall"
            }
            Self::Capture | Self::Flush | Self::State => "capture",
        }
    }
}

/// One content-free diagnostic line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// `powercontext.<host>.recall` or `.capture`.
    pub component: String,
    /// The stage.
    pub event: Stage,
    /// The outcome.
    pub outcome: Outcome,
    /// HTTP status, when one was received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// `empty`/`ready` for PreparedContext answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_status: Option<&'static str>,
    /// Content size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_bytes: Option<u64>,
    /// The setting (variable, file key) that needs fixing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setting: Option<String>,
    /// A closed word giving detail (e.g. the secret rule, `redirect`, `body_too_large`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<&'static str>,
    /// What is wrong with `setting` (an unknown file key, the range a value must be in), written
    /// by the configuration resolver: content-free, never the value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl Diagnostic {
    /// A diagnostic for `component_prefix` (`powercontext.claude_code`) at `stage`.
    #[must_use]
    pub fn new(component_prefix: &str, event: Stage, outcome: Outcome) -> Self {
        Self {
            component: format!("{component_prefix}.{}", event.component_suffix()),
            event,
            outcome,
            http_status: None,
            context_status: None,
            content_bytes: None,
            setting: None,
            detail: None,
            problem: None,
        }
    }

    /// Adds an HTTP status.
    #[must_use]
    pub fn status(mut self, status: Option<u16>) -> Self {
        self.http_status = status;
        self
    }

    /// Adds a closed detail word.
    #[must_use]
    pub fn detail(mut self, detail: &'static str) -> Self {
        self.detail = Some(detail);
        self
    }

    /// Adds what is wrong with the setting (a [`crate::config::ConfigError`]'s problem).
    #[must_use]
    pub fn problem(mut self, problem: impl Into<String>) -> Self {
        self.problem = Some(problem.into());
        self
    }

    /// Adds the setting name.
    #[must_use]
    pub fn setting(mut self, setting: impl Into<String>) -> Self {
        self.setting = Some(setting.into());
        self
    }

    /// One JSON line (without the newline).
    #[must_use]
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{\"outcome\":\"internal_error\"}"))
    }
}

/// A failed call, classified. Content-free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// The outcome class.
    pub outcome: Outcome,
    /// The HTTP status, when one was received.
    pub http_status: Option<u16>,
    /// A closed detail word.
    pub detail: Option<&'static str>,
}

impl Failure {
    /// A failure without status or detail.
    #[must_use]
    pub fn new(outcome: Outcome) -> Self {
        Self {
            outcome,
            http_status: None,
            detail: None,
        }
    }

    /// Turns the failure into a diagnostic for a stage.
    #[must_use]
    pub fn diagnostic(self, component_prefix: &str, stage: Stage) -> Diagnostic {
        let mut d = Diagnostic::new(component_prefix, stage, self.outcome).status(self.http_status);
        d.detail = self.detail;
        d
    }
}
