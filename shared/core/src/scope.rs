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
use crate::workspace;

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
    /// The client-derived scope for Servers without the resolve route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legacy: Option<String>,
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
    ) -> Self {
        if let Some(id) = explicit {
            return Self {
                explicit: Some(id.to_owned()),
                keys: Vec::new(),
                legacy: None,
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
            external_id: workspace::workspace_external_id(integration, cwd, deadline),
        });
        let legacy = Some(workspace::legacy_scope(integration, None, cwd, deadline));
        Self {
            explicit: None,
            keys,
            legacy,
        }
    }

    /// Resolves the scope id through the Server.
    ///
    /// # Errors
    /// The classified [`Failure`] when the Server could not name a scope.
    pub fn resolve(&self, transport: &Transport) -> Result<String, Failure> {
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
        match (failure.outcome, &self.legacy) {
            // No resolve route: a 0.0.x Server, which accepts client-derived scopes.
            (Outcome::VersionMismatch, Some(legacy)) => Ok(legacy.clone()),
            _ => Err(failure),
        }
    }
}
