//! Explicit operations on the Server: the one table of what each calls (method, path, whether it
//! changes anything, where its scope goes) for the memory commands (`remember`, `search`, `list`,
//! `pin`, `unpin`) and for the curated set the hosts' tools offer (`op`), each host's gate for
//! them, and the one connection that runs them. Unlike the hooks these never fail open: a failure
//! is an error that names its fix. Nothing here prints a token or a scope id.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use powercontext_hooks_core::config::Settings;
use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::host::ExplicitSurface;
use powercontext_hooks_core::http::{HttpError, Reply, Transport};
use powercontext_hooks_core::scope::ScopeQuery;
use powercontext_hooks_core::workspace::Discovery;
use serde_json::Value;

use crate::support::install::Host;

/// An HTTP method an operation uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Put,
}

impl Method {
    /// The method as HTTP spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Put => "PUT",
        }
    }
}

/// Where an operation's scope id goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeIn {
    /// The `scope_id` member of the JSON body.
    Body,
    /// The `{scope}` segment of the path.
    Path,
}

/// One operation on the Server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// What the user types (several calls can serve one command).
    pub command: &'static str,
    pub method: Method,
    /// The path; `{scope}` and `{id}` are filled in, each as one percent-encoded segment.
    pub path: &'static str,
    /// Whether it changes anything on the Server.
    pub mutates: bool,
    pub scope: ScopeIn,
}

/// Creates an atomic memory.
pub const REMEMBER: Op = Op {
    command: "remember",
    method: Method::Post,
    path: "/v1/memory/remember",
    mutates: true,
    scope: ScopeIn::Body,
};
/// Searches active atomic memories.
pub const SEARCH: Op = Op {
    command: "search",
    method: Method::Post,
    path: "/v1/atomic-memory/search",
    mutates: false,
    scope: ScopeIn::Body,
};
/// Lists atomic memories (active ones by default).
pub const LIST: Op = Op {
    command: "list",
    method: Method::Post,
    path: "/v1/atomic-memory/list",
    mutates: false,
    scope: ScopeIn::Body,
};
/// Finds the memories carrying a tag (the pinned ones).
pub const TAGGED: Op = Op {
    command: "list",
    method: Method::Post,
    path: "/v1/scopes/{scope}/artifact-tags/query",
    mutates: false,
    scope: ScopeIn::Path,
};
/// Reads a memory's tags and their entity tag.
pub const READ_TAGS: Op = Op {
    command: "pin",
    method: Method::Get,
    path: "/v1/scopes/{scope}/artifacts/atomic-memory/{id}/tags",
    mutates: false,
    scope: ScopeIn::Path,
};
/// Replaces a memory's tags (`If-Match` the entity tag read before).
pub const WRITE_TAGS: Op = Op {
    command: "pin",
    method: Method::Put,
    path: "/v1/scopes/{scope}/artifacts/atomic-memory/{id}/tags",
    mutates: true,
    scope: ScopeIn::Path,
};

/// What a curated operation reads first, to fill in what its write needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepare {
    /// Nothing: the arguments are the request body.
    None,
    /// The memory itself: its kind (kept unless given) and its entity tag (sent as `If-Match`).
    ReadArtifact,
    /// The memory's lifecycle state: its current revision and `state_version`.
    ReadState,
}

/// One operation of the explicit surface: what the model (through a host's native tool) or a
/// script (through `powercontext-hooks op`) may ask of the Server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Curated {
    /// The name `powercontext-hooks op` takes; the hosts' tool is `pc_<name>`.
    pub name: &'static str,
    /// One line for the tool description and the help.
    pub summary: &'static str,
    /// The Server operation id (checked against the pinned Server's `/openapi.json`).
    pub operation_id: &'static str,
    /// The call that does the work.
    pub call: Op,
    /// The request body members the Server requires besides `scope_id` (checked too).
    pub body_required: &'static [&'static str],
    /// The arguments the caller must give (`id` fills the path's `{id}`).
    pub args_required: &'static [&'static str],
    pub prepare: Prepare,
}

impl Curated {
    /// The tool name the hosts register.
    pub fn tool(&self) -> String {
        format!("pc_{}", self.name)
    }
}

#[expect(clippy::too_many_arguments, reason = "one row of the table, written as a row")]
const fn curated(
    name: &'static str,
    summary: &'static str,
    operation_id: &'static str,
    method: Method,
    path: &'static str,
    mutates: bool,
    body_required: &'static [&'static str],
    args_required: &'static [&'static str],
    prepare: Prepare,
) -> Curated {
    let scope = if matches!(method, Method::Get) || matches!(prepare, Prepare::ReadArtifact) {
        ScopeIn::Path
    } else {
        ScopeIn::Body
    };
    Curated {
        name,
        summary,
        operation_id,
        call: Op {
            command: "op",
            method,
            path,
            mutates,
            scope,
        },
        body_required,
        args_required,
        prepare,
    }
}

/// The curated explicit surface, in the order the hosts list their tools. Candidate decisions
/// (approve, reject, revise) are deliberately absent: a human makes them, never the model.
pub const CURATED: [Curated; 14] = [
    curated(
        "search",
        "Search the project's memories (query; optional limit, mode).",
        "search_memory",
        Method::Post,
        "/v1/memory/search",
        false,
        &["query"],
        &["query"],
        Prepare::None,
    ),
    curated(
        "memory_list",
        "List the project's memory entries (optional limit, cursor, include_inactive).",
        "list_memory_entries",
        Method::Post,
        "/v1/memory/entries/list",
        false,
        &[],
        &[],
        Prepare::None,
    ),
    curated(
        "memory_get",
        "Read one memory by its artifact id (id).",
        "get_artifact",
        Method::Get,
        "/v1/scopes/{scope}/artifacts/atomic-memory/{id}",
        false,
        &[],
        &["id"],
        Prepare::None,
    ),
    curated(
        "remember",
        "Remember a fact or decision (kind, text; optional reason).",
        "remember_memory",
        Method::Post,
        "/v1/memory/remember",
        true,
        &["kind", "text"],
        &["kind", "text"],
        Prepare::None,
    ),
    curated(
        "memory_revise",
        "Replace a memory's text (id, text; optional kind).",
        "replace_artifact",
        Method::Put,
        "/v1/scopes/{scope}/artifacts/atomic-memory/{id}",
        true,
        &["content"],
        &["id", "text"],
        Prepare::ReadArtifact,
    ),
    curated(
        "memory_retire",
        "Retire (forget) a memory (id).",
        "change_atomic_memory_lifecycle",
        Method::Post,
        "/v1/atomic-memory/lifecycle",
        true,
        &["target", "state"],
        &["id"],
        Prepare::ReadState,
    ),
    curated(
        "handoff_activate",
        "Start a handoff at a boundary (boundary_source, objective).",
        "activate_handoff",
        Method::Post,
        "/v1/handoff/activate",
        true,
        &["boundary_source", "objective"],
        &["boundary_source", "objective"],
        Prepare::None,
    ),
    curated(
        "handoff_prepare",
        "Draft a handoff (objective, evidence).",
        "prepare_handoff",
        Method::Post,
        "/v1/handoff/prepare",
        false,
        &["objective", "evidence"],
        &["objective", "evidence"],
        Prepare::None,
    ),
    curated(
        "handoff_finalize",
        "Check a handoff draft (draft).",
        "finalize_handoff",
        Method::Post,
        "/v1/handoff/finalize",
        false,
        &["draft"],
        &["draft"],
        Prepare::None,
    ),
    curated(
        "handoff_commit",
        "Store a finalized handoff (handoff).",
        "commit_handoff",
        Method::Post,
        "/v1/handoff/commit",
        true,
        &["handoff"],
        &["handoff"],
        Prepare::None,
    ),
    curated(
        "handoff_continue",
        "Continue from a stored handoff (selection).",
        "continue_handoff",
        Method::Post,
        "/v1/handoff/continue",
        false,
        &["selection"],
        &["selection"],
        Prepare::None,
    ),
    curated(
        "task_outcome",
        "Record a task's outcome (source_id, outcome).",
        "record_task_outcome",
        Method::Post,
        "/v1/work/outcomes/record",
        true,
        &["source_id", "outcome"],
        &["source_id", "outcome"],
        Prepare::None,
    ),
    curated(
        "review_list",
        "List review candidates (optional status, family, limit, cursor).",
        "list_candidates",
        Method::Post,
        "/v1/candidates/list",
        false,
        &[],
        &[],
        Prepare::None,
    ),
    curated(
        "review_get",
        "Read one review candidate (candidate_id).",
        "get_candidate",
        Method::Post,
        "/v1/candidates/get",
        false,
        &["candidate_id"],
        &["candidate_id"],
        Prepare::None,
    ),
];

/// Server operations that exist but are never on the model surface: a review decision is a
/// human's, made with the official CLI.
pub const OFF_MODEL_SURFACE: [&str; 3] = ["approve_candidate", "reject_candidate", "revise_candidate"];

/// The read a curated operation does first (`None` for a direct call).
pub const fn prepare_call(prepare: Prepare) -> Option<Op> {
    match prepare {
        Prepare::None => None,
        Prepare::ReadArtifact => Some(READ_ARTIFACT),
        Prepare::ReadState => Some(READ_STATE),
    }
}

/// Reads one atomic memory (and its entity tag).
pub const READ_ARTIFACT: Op = Op {
    command: "op",
    method: Method::Get,
    path: "/v1/scopes/{scope}/artifacts/atomic-memory/{id}",
    mutates: false,
    scope: ScopeIn::Path,
};
/// Reads an atomic memory's lifecycle state.
pub const READ_STATE: Op = Op {
    command: "op",
    method: Method::Get,
    path: "/v1/scopes/{scope}/artifacts/atomic-memory/{id}/state",
    mutates: false,
    scope: ScopeIn::Path,
};

/// Every host's explicit surface (a column of the host table), in the table's order.
pub fn host_surfaces() -> impl Iterator<Item = (Host, &'static ExplicitSurface)> {
    Host::ALL.into_iter().map(|h| (h, &h.spec().explicit))
}

/// The curated operation called `name`.
pub fn curated_named(name: &str) -> Option<&'static Curated> {
    CURATED.iter().find(|c| c.name == name)
}

/// Every operation (a test holds the table's rules over all of them).
#[cfg(test)]
pub const ALL: [Op; 6] = [REMEMBER, SEARCH, LIST, TAGGED, READ_TAGS, WRITE_TAGS];

/// Whose settings and which scope an operation uses: the same rules as the host's hook.
#[derive(Debug, Clone, clap::Args)]
pub struct Target {
    /// Whose connection settings and scope binding to use.
    #[arg(long, default_value = "claude-code", value_parser = crate::support::install::host_arg())]
    pub host: Host,
    /// Project directory whose scope to use (default: here), resolved as the host's hook would.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// An explicit scope id instead of resolving one.
    #[arg(long, value_name = "SCOPE_ID")]
    pub scope: Option<String>,
}

/// The Server gave no usable answer: its failure class (`server_unavailable`, `timeout`,
/// `authentication_failed`, …) kept so a caller can sort it, and a message naming the fix.
#[derive(Debug)]
pub struct Unreachable {
    pub outcome: String,
    pub message: String,
}

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Unreachable {}

/// A Server connection with its scope resolved.
pub struct Conn {
    transport: Transport,
    scope: String,
    settings: Settings,
    host: Host,
}

/// `text` as one URL path segment: every byte but the unreserved ones percent-encoded, so a
/// scope id can never add a segment, a query or a fragment.
pub(crate) fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    // `.` and `..` alone would still be read as dot segments.
    match out.as_str() {
        "." => "%2E".to_owned(),
        ".." => "%2E%2E".to_owned(),
        _ => out,
    }
}

/// A reply's status and the Server's error code (never its message: it may quote input).
pub(crate) fn describe(reply: &Reply) -> String {
    let code = reply.body["error"]["code"].as_str().unwrap_or("no error code");
    format!("HTTP {} ({code})", reply.status)
}

impl Conn {
    /// Resolves the settings as the host's hook would (flags > env > file > defaults; the token
    /// from the config, the environment or the official CLI) and the scope as its recall would.
    pub fn open(target: &Target) -> Result<Self> {
        let env = Env::from_process();
        let host = target.host;
        let settings = Settings::for_hook(host, &env)?;
        let deadline = Deadline::after(Duration::from_secs(15));
        let transport = Transport::new(
            settings.server_url.value.clone(),
            settings.authorization.value.clone(),
            Duration::from_secs(5),
            deadline,
            &env,
        )
        .map_err(|var| anyhow!("the proxy variable {var} cannot be used"))?;
        if target.scope.as_deref().is_some_and(|s| s.trim().is_empty()) {
            bail!("--scope is empty: give a scope id, or leave it out to use the one the hooks resolve");
        }
        if let Some(d) = &target.cwd
            && !d.is_dir()
        {
            bail!("--cwd {} is not a directory", d.display());
        }
        let cwd = match &target.cwd {
            Some(d) => d.clone(),
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        let mut conn = Self {
            transport,
            scope: String::new(),
            settings,
            host,
        };
        let explicit = target
            .scope
            .clone()
            .or_else(|| conn.settings.scope_id.value.clone());
        conn.scope = ScopeQuery::for_event(
            host,
            explicit.as_deref(),
            None,
            &cwd,
            &deadline,
            Discovery::for_env(&env),
        )
        .resolve(&conn.transport)
        .map_err(|f| conn.unreachable("could not resolve the scope", f.outcome.as_str()))?;
        Ok(conn)
    }

    /// An error for a Server that did not answer usefully, with the fix for its cause.
    pub fn unreachable(&self, what: &str, outcome: &str) -> anyhow::Error {
        let settings = &self.settings;
        let fix = match outcome {
            "server_unavailable" | "timeout" => format!(
                "is the Server running at {} (from {})? Point the hooks elsewhere with \
                 `powercontext-hooks setup {} --server-url URL`",
                settings.server_url.value.as_str(),
                settings.server_url.origin,
                self.host.as_str()
            ),
            "authentication_failed" | "forbidden" => {
                format!("check the token ({})", settings.authorization.origin)
            }
            _ => format!("run `powercontext-hooks doctor {}`", self.host.as_str()),
        };
        anyhow::Error::new(Unreachable {
            outcome: outcome.to_owned(),
            message: format!("{what}: {outcome}; {fix}"),
        })
    }

    /// Runs `op`: `{scope}` and `{id}` filled in, the scope put in the body when it goes there.
    /// `if_match` only for a conditional PUT. A reply that arrived is returned whatever its
    /// status; no reply is an error naming the fix.
    pub fn call(
        &self,
        op: &Op,
        id: Option<&str>,
        body: Option<Value>,
        if_match: Option<&str>,
    ) -> Result<Reply> {
        let mut path = op.path.replace("{scope}", &path_segment(&self.scope));
        if let Some(id) = id {
            path = path.replace("{id}", &path_segment(id));
        }
        let mut body = body.unwrap_or_else(|| Value::Object(serde_json::Map::new()));
        if op.scope == ScopeIn::Body {
            body["scope_id"] = Value::from(self.scope.as_str());
        }
        let sent = match (op.method, if_match) {
            (Method::Get, _) => self.transport.get(&path),
            (Method::Post, _) => self.transport.post_json(&path, &body),
            (Method::Put, Some(tag)) => self.transport.put_json_if_match(&path, &body, tag),
            (Method::Put, None) => self.transport.put_json(&path, &body),
        };
        sent.map_err(|e: HttpError| {
            self.unreachable("the Server did not answer", e.failure().outcome.as_str())
        })
    }

    /// Like [`Self::call`], and a status other than 200 is an error: a missing scope says so,
    /// anything else gives the status and the Server's error code.
    pub fn call_ok(&self, op: &Op, body: Value) -> Result<Value> {
        let reply = self.call(op, None, Some(body), None)?;
        match reply.status {
            200 => Ok(reply.body),
            404 if reply.body["error"]["code"] == "scope_not_found" => bail!(
                "the scope does not exist on this Server ({}); check --scope or the scope binding of --cwd",
                describe(&reply)
            ),
            401 | 403 => Err(self.unreachable(
                &format!("the Server refused `{}` ({})", op.command, describe(&reply)),
                "authentication_failed",
            )),
            _ => bail!("the Server refused `{}`: {}", op.command, describe(&reply)),
        }
    }
}

/// One atomic memory as the Server describes it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Memory {
    pub id: String,
    pub kind: String,
    pub text: String,
}

impl Memory {
    /// Reads an `AtomicMemoryRecord`.
    pub fn from_record(v: &Value) -> Result<Self> {
        let field = |name: &str, at: &Value| -> Result<String> {
            at.as_str()
                .map(str::to_owned)
                .with_context(|| format!("the Server's memory record has no `{name}`"))
        };
        Ok(Self {
            id: field("artifact.artifact_id", &v["artifact"]["artifact_id"])?,
            kind: field("kind", &v["kind"])?,
            text: field("text", &v["text"])?,
        })
    }

    /// The id as `list` shows it: `art_` and the first 8 characters after it.
    pub fn short_id(&self) -> &str {
        short_id(&self.id)
    }
}

/// `art_` and the next 8 characters (the whole id when shorter).
pub fn short_id(id: &str) -> &str {
    let end = id.char_indices().nth(12).map_or(id.len(), |(i, _)| i);
    &id[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_ids_stay_one_path_segment() {
        assert_eq!(path_segment("scp_abc-1"), "scp_abc-1");
        assert_eq!(path_segment("x?y=1#"), "x%3Fy%3D1%23");
        assert_eq!(path_segment("team/alpha"), "team%2Falpha");
        assert_eq!(path_segment(".."), "%2E%2E");
        assert_eq!(path_segment("é "), "%C3%A9%20");
    }

    #[test]
    fn the_table_says_which_operations_write() {
        let writes: Vec<&str> = ALL.iter().filter(|o| o.mutates).map(|o| o.path).collect();
        assert_eq!(
            writes,
            [
                "/v1/memory/remember",
                "/v1/scopes/{scope}/artifacts/atomic-memory/{id}/tags"
            ]
        );
        // A mutation is never a GET, and a path-scoped operation names its scope in the path.
        for op in ALL {
            assert!(!(op.mutates && op.method == Method::Get), "{op:?}");
            assert_eq!(op.scope == ScopeIn::Path, op.path.contains("{scope}"), "{op:?}");
        }
        assert_eq!(short_id("art_3eab2661932f446da3944212256a4d5c"), "art_3eab2661");
        assert_eq!(short_id("art_1"), "art_1");
    }
}
