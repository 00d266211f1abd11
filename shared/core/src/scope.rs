//! Scope resolution through the Server: explicit id → `POST /v1/scope-bindings/resolve` with the
//! session and workspace binding keys → the Server's default scope; against an old Server without
//! the resolve route, the client-derived scope of the 0.0.x hooks. Never logs a scope id.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::deadline::Deadline;
use crate::host::Integration;
use crate::http::{Transport, failure_for};
use crate::outcome::{Failure, Outcome};
use crate::wire::{BindingKey, ResolveRequest, descriptor_scope};
use crate::workspace::{self, Discovery};

/// Everything needed to resolve a scope later, without the host payload: kept with spooled
/// captures so an offline prompt lands in exactly the scope it would have landed in online.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeQuery {
    /// The configured scope id, if any (wins over everything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit: Option<String>,
    /// Binding keys, most specific first.
    #[serde(default)]
    pub keys: Vec<BindingKey>,
    /// The client-derived scope for Servers without the resolve route, when already known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legacy: Option<String>,
    /// Where to derive the client-derived scope from, only if an old Server asks for it: deriving
    /// it costs git calls that a current Server never needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legacy_from: Option<LegacySource>,
}

/// The inputs of the client-derived (0.0.x) scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacySource {
    /// Integration name (`claude-code`, …).
    pub integration: String,
    /// The session working directory.
    pub cwd: String,
}

impl ScopeQuery {
    /// Builds the query for a host event: the session key (when the host gave a usable session id)
    /// and the workspace key computed exactly as the official CLI computes it for this integration.
    #[must_use]
    pub fn for_event(
        integration: Integration,
        explicit: Option<&str>,
        session_id: Option<&str>,
        cwd: &Path,
        deadline: &Deadline,
        discovery: Discovery,
    ) -> Self {
        if let Some(id) = explicit {
            return Self {
                explicit: Some(id.to_owned()),
                keys: Vec::new(),
                legacy: None,
                legacy_from: None,
            };
        }
        let mut keys = Vec::with_capacity(2);
        if let Some(s) = session_id
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.chars().count() <= 256)
        {
            keys.push(BindingKey {
                integration: integration.as_str().to_owned(),
                kind: "session".to_owned(),
                external_id: s.to_owned(),
            });
        }
        keys.push(BindingKey {
            integration: integration.as_str().to_owned(),
            kind: "workspace".to_owned(),
            external_id: workspace::workspace_external_id_with(integration, cwd, deadline, discovery),
        });
        let legacy_from = Some(LegacySource {
            integration: integration.as_str().to_owned(),
            cwd: cwd.to_string_lossy().into_owned(),
        });
        Self {
            explicit: None,
            keys,
            legacy: None,
            legacy_from,
        }
    }

    /// A query for a scope that is already resolved (a capture that failed after resolution).
    #[must_use]
    pub fn resolved(scope: &str) -> Self {
        Self {
            explicit: Some(scope.to_owned()),
            keys: Vec::new(),
            legacy: None,
            legacy_from: None,
        }
    }

    /// Resolves the scope id through the Server.
    ///
    /// # Errors
    /// The classified [`Failure`] when the Server could not name a scope.
    pub fn resolve(&self, transport: &Transport) -> Result<String, Failure> {
        let _stage = crate::process::enter(crate::outcome::Stage::Scope);
        if let Some(id) = &self.explicit {
            return Ok(id.clone());
        }
        let request = ResolveRequest {
            binding_keys: &self.keys,
            allow_default: true,
        };
        let reply = transport
            .post_json("/v1/scope-bindings/resolve", &request)
            .map_err(|e| e.failure())?;
        if reply.status == 200 {
            return descriptor_scope(&reply.body).ok_or(Failure {
                outcome: Outcome::InvalidResponse,
                http_status: Some(200),
                detail: Some("schema"),
            });
        }
        let failure = failure_for(&reply);
        if failure.outcome != Outcome::VersionMismatch {
            return Err(failure);
        }
        // No resolve route: a 0.0.x Server, which accepts client-derived scopes.
        if let Some(legacy) = &self.legacy {
            return Ok(legacy.clone());
        }
        let derived = self.legacy_from.as_ref().and_then(|src| {
            let integration = Integration::parse(&src.integration)?;
            Some(workspace::legacy_scope(
                integration,
                None,
                Path::new(&src.cwd),
                transport.deadline(),
            ))
        });
        derived.ok_or(failure)
    }
}
