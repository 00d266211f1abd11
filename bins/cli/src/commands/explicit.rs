//! `powercontext-hooks op <operation>`: the one implementation of an explicit operation that
//! every host's native tool calls. Arguments arrive as one JSON object on stdin; the answer is one
//! JSON object on stdout with a code from a closed set, and a failure exits non-zero. A mutation
//! runs only when the host's gate confirmed it (`--confirmed` or `"confirmed": true`); otherwise
//! it answers `confirmation_required` and sends nothing. It never prints the token or the scope,
//! and stderr carries no content.

use std::io::Read;
use std::process::ExitCode;

use serde_json::{Map, Value, json};

use crate::support::ops::{self, Conn, Curated, Prepare, Target, Unreachable};

/// The largest argument object read from stdin (the Server's own request cap).
const MAX_INPUT_BYTES: u64 = 1024 * 1024;

words! {
    /// Why an operation did not succeed: the closed set a tool result carries.
    pub enum Code {
        ConfirmationRequired => "confirmation_required",
        Cancelled => "cancelled",
        AuthFailed => "auth_failed",
        ServerUnavailable => "server_unavailable",
        Timeout => "timeout",
        InvalidArguments => "invalid_arguments",
        NotFound => "not_found",
        Conflict => "conflict",
        SecretRefused => "secret_refused",
        InvalidResponse => "invalid_response",
        ServerError => "server_error",
        ConfigError => "config_error",
    }
}

impl Code {
    /// Every code, for the help and the docs.
    pub const ALL: [Self; 12] = [
        Self::ConfirmationRequired,
        Self::Cancelled,
        Self::AuthFailed,
        Self::ServerUnavailable,
        Self::Timeout,
        Self::InvalidArguments,
        Self::NotFound,
        Self::Conflict,
        Self::SecretRefused,
        Self::InvalidResponse,
        Self::ServerError,
        Self::ConfigError,
    ];
}

/// Run one curated operation of the Server (the tools of Pi, OpenCode and DSH call this).
///
/// Reads the arguments as one JSON object on stdin. With --json it prints one JSON object:
/// {"ok":true,"operation":…,"status":…,"data":…} or {"ok":false,"operation":…,"code":…,"message":…};
/// without, the data (or the code and message on stderr).
/// Exit 0 on success, 1 on any failure (never an empty success). A mutating operation needs
/// --confirmed (or "confirmed": true in the arguments), given only after the host asked the user;
/// without it the answer is confirmation_required and nothing is sent.
#[derive(Debug, clap::Args)]
#[command(after_help = OP_AFTER_HELP)]
pub struct OpArgs {
    /// The operation (see the list below).
    #[arg(value_name = "OPERATION", required_unless_present = "list")]
    pub operation: Option<String>,
    /// Print the operations table as JSON instead: each operation's method, path, scope rule,
    /// whether it mutates and which hosts offer it; the error codes; each host's gate.
    #[arg(long, conflicts_with_all = ["operation", "confirmed"])]
    pub list: bool,
    /// The host's gate approved this mutation.
    #[arg(long)]
    pub confirmed: bool,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub target: Target,
}

const OP_AFTER_HELP: &str = "\
Operations (* = mutates, needs --confirmed):
  search, memory_list, memory_get, remember*, memory_revise*, memory_retire*, handoff_activate*,
  handoff_prepare, handoff_finalize, handoff_commit*, handoff_continue, task_outcome*, review_list,
  review_get
Error codes: confirmation_required, cancelled, auth_failed, server_unavailable, timeout,
  invalid_arguments, not_found, conflict, secret_refused, invalid_response, server_error, config_error
Review decisions (approve, reject, revise a candidate) are not operations here: make them with the
official `powercontext` CLI. docs/operations.md has each operation's arguments and each host's gate.";

/// A failed operation: its code, a message without content, and the HTTP status when one came.
#[derive(Debug)]
struct Failed {
    code: Code,
    message: String,
    status: Option<u16>,
}

fn fail(code: Code, message: impl Into<String>) -> Failed {
    Failed {
        code,
        message: message.into(),
        status: None,
    }
}

/// Runs `op`.
pub fn run(args: &OpArgs) -> anyhow::Result<ExitCode> {
    if args.list {
        let t = table();
        if args.json {
            crate::support::report::out(format_args!("{t}\n"));
        } else {
            for c in ops::CURATED {
                crate::support::report::out(format_args!(
                    "{:<17} {:<4} {:<52} {}\n",
                    c.name,
                    c.call.method.as_str(),
                    c.call.path,
                    if c.call.mutates { "mutates" } else { "reads" }
                ));
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let name = args.operation.as_deref().unwrap_or_default();
    let result = curated(name).and_then(|op| {
        let input = read_input()?;
        call(op, input, args)
    });
    let (line, code) = match result {
        Ok((status, data)) => (
            json!({"ok": true, "operation": name, "status": status, "data": data}),
            ExitCode::SUCCESS,
        ),
        Err(f) => {
            let mut v = json!({"ok": false, "operation": name, "code": f.code, "message": f.message});
            if let Some(s) = f.status {
                v["status"] = json!(s);
            }
            (v, ExitCode::from(1))
        }
    };
    if args.json {
        crate::support::report::out(format_args!("{line}\n"));
    } else if line["ok"] == true {
        crate::support::report::out(format_args!("{:#}\n", line["data"]));
    } else {
        let message = format!(
            "{}: {}",
            line["code"].as_str().unwrap_or_default(),
            line["message"].as_str().unwrap_or_default()
        );
        crate::support::report::refuse_with(false, &message);
    }
    Ok(code)
}

/// The operations table, the error codes and the hosts' gates as one JSON object.
fn table() -> Value {
    let native: Vec<&str> = ops::host_surfaces()
        .filter(|(_, s)| s.native_tools)
        .map(|(h, _)| h.as_str())
        .collect();
    let operations: Vec<Value> = ops::CURATED
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "tool": c.tool(),
                "summary": c.summary,
                "operation_id": c.operation_id,
                "method": c.call.method.as_str(),
                "path": c.call.path,
                "scope": match c.call.scope {
                    ops::ScopeIn::Body => "body",
                    ops::ScopeIn::Path => "path",
                },
                "mutates": c.call.mutates,
                "body_required": c.body_required,
                "args_required": c.args_required,
                "reads_first": ops::prepare_call(c.prepare).map(|p| json!({"method": p.method.as_str(), "path": p.path})),
                "native_tool_hosts": native,
            })
        })
        .collect();
    let hosts: Vec<Value> = ops::host_surfaces()
        .map(|(h, s)| {
            json!({
                "host": h.as_str(),
                "surface": if s.native_tools { "native tools" } else { "Server MCP" },
                "gate": s.gate,
                "without_ui": s.without_ui,
            })
        })
        .collect();
    json!({
        "ok": true,
        "operations": operations,
        "off_model_surface": ops::OFF_MODEL_SURFACE,
        "codes": Code::ALL,
        "hosts": hosts,
    })
}

/// The values the hosts' shims are rendered with: `cli_command` (this CLI, which the tools run)
/// and `operations` (the curated set the tools are made from, as `op --list` shows it), each escaped for a JavaScript
/// double-quoted string. The shims hold no list of their own.
pub fn shim_values(cli: &std::path::Path) -> anyhow::Result<[(&'static str, String); 2]> {
    use anyhow::Context;
    let cli = cli
        .to_str()
        .with_context(|| format!("{} is not a UTF-8 path", cli.display()))?;
    let tools = table()["operations"].clone();
    let escaped = |text: &str| {
        let quoted = Value::String(text.to_owned()).to_string();
        quoted[1..quoted.len() - 1].to_owned()
    };
    Ok([
        ("cli_command", escaped(cli)),
        ("operations", escaped(&tools.to_string())),
    ])
}

fn curated(name: &str) -> Result<&'static Curated, Failed> {
    ops::curated_named(name).ok_or_else(|| {
        let known: Vec<&str> = ops::CURATED.iter().map(|c| c.name).collect();
        fail(
            Code::InvalidArguments,
            format!("unknown operation; one of: {}", known.join(", ")),
        )
    })
}

/// The argument object from stdin (bounded; empty input is `{}`).
fn read_input() -> Result<Map<String, Value>, Failed> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|_| fail(Code::InvalidArguments, "cannot read the arguments on stdin"))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(fail(
            Code::InvalidArguments,
            "the arguments are larger than 1 MiB",
        ));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(fail(
            Code::InvalidArguments,
            "the arguments on stdin must be one JSON object",
        )),
    }
}

/// The confirmation, the argument checks, the secret gate, then the call.
fn call(op: &Curated, mut input: Map<String, Value>, args: &OpArgs) -> Result<(u16, Value), Failed> {
    let confirmed = match input.remove("confirmed") {
        None | Some(Value::Bool(false)) => args.confirmed,
        Some(Value::Bool(true)) => true,
        Some(_) => return Err(fail(Code::InvalidArguments, "`confirmed` must be true or false")),
    };
    // The scope is the hooks' one, never the caller's.
    input.remove("scope_id");
    for field in op.args_required {
        if input.get(*field).is_none_or(Value::is_null) {
            return Err(fail(
                Code::InvalidArguments,
                format!("`{field}` is required for {}", op.name),
            ));
        }
    }
    if op.call.mutates && !confirmed {
        return Err(fail(
            Code::ConfirmationRequired,
            format!(
                "{} changes durable project context; the host must ask the user and pass --confirmed. Nothing was written",
                op.name
            ),
        ));
    }
    if op.call.mutates
        && let Some(kind) = secret_in(&Value::Object(input.clone()))
    {
        return Err(fail(
            Code::SecretRefused,
            format!("not sent: the arguments look like they hold a secret ({kind}); nothing was written"),
        ));
    }
    let conn = Conn::open(&args.target).map_err(classify)?;
    let id = match op.args_required.contains(&"id") {
        true => Some(take_id(&mut input)?),
        false => None,
    };
    match op.prepare {
        Prepare::None => {
            let body = (op.call.method != ops::Method::Get).then_some(Value::Object(input));
            answer(conn.call(&op.call, id.as_deref(), body, None).map_err(classify)?)
        }
        Prepare::ReadArtifact => {
            let id = id.unwrap_or_default();
            let read = ops::prepare_call(op.prepare).unwrap_or(ops::READ_ARTIFACT);
            let reply = conn.call(&read, Some(&id), None, None).map_err(classify)?;
            let etag = reply.etag.clone();
            let (_, current) = answer(reply)?;
            let etag = etag.ok_or_else(|| {
                fail(
                    Code::InvalidResponse,
                    "the Server sent no entity tag for the memory",
                )
            })?;
            let kind = input
                .get("kind")
                .cloned()
                .unwrap_or_else(|| current["content"]["kind"].clone());
            let body = json!({"content": {
                "schema": "powercontext.atomic-memory.v1",
                "kind": kind,
                "text": input.get("text").cloned().unwrap_or(Value::Null),
            }});
            answer(
                conn.call(&op.call, Some(&id), Some(body), Some(&etag))
                    .map_err(classify)?,
            )
        }
        Prepare::ReadState => {
            let id = id.unwrap_or_default();
            let read = ops::prepare_call(op.prepare).unwrap_or(ops::READ_STATE);
            let (_, state) = answer(conn.call(&read, Some(&id), None, None).map_err(classify)?)?;
            let body = json!({
                "target": {"artifact": state["artifact"], "state_version": state["state_version"]},
                "state": "forgotten",
            });
            answer(conn.call(&op.call, None, Some(body), None).map_err(classify)?)
        }
    }
}

/// The `id` argument: a non-empty string (it becomes one path segment).
fn take_id(input: &mut Map<String, Value>) -> Result<String, Failed> {
    match input.remove("id") {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        _ => Err(fail(
            Code::InvalidArguments,
            "`id` must be a memory's artifact id",
        )),
    }
}

/// The rule a string anywhere in `v` trips, if any (keys and values alike).
fn secret_in(v: &Value) -> Option<&'static str> {
    match v {
        Value::String(s) => powercontext_hooks_core::secrets::find_secret(s).map(|k| k.as_str()),
        Value::Array(a) => a.iter().find_map(secret_in),
        Value::Object(m) => m.iter().find_map(|(k, v)| {
            powercontext_hooks_core::secrets::find_secret(k)
                .map(|k| k.as_str())
                .or_else(|| secret_in(v))
        }),
        _ => None,
    }
}

/// A reply as a result: 2xx is data; anything else a code from the closed set with the Server's
/// error code (never its message, which may quote the input).
fn answer(reply: powercontext_hooks_core::http::Reply) -> Result<(u16, Value), Failed> {
    let status = reply.status;
    if (200..300).contains(&status) {
        if !reply.json {
            return Err(Failed {
                code: Code::InvalidResponse,
                message: "the Server's answer is not JSON".to_owned(),
                status: Some(status),
            });
        }
        // Every operation answers an object with something in it: `null`, `[]` or `{}` would be
        // an empty success, which an explicit operation never reports.
        if reply.body.as_object().is_none_or(|m| m.is_empty()) {
            return Err(Failed {
                code: Code::InvalidResponse,
                message: "the Server's answer holds nothing".to_owned(),
                status: Some(status),
            });
        }
        return Ok((status, reply.body));
    }
    let server_code = reply.body["error"]["code"].as_str().unwrap_or("no error code");
    let code = match status {
        401 | 403 => Code::AuthFailed,
        404 => Code::NotFound,
        409 | 412 => Code::Conflict,
        400 | 422 => Code::InvalidArguments,
        503 => Code::ServerUnavailable,
        _ => Code::ServerError,
    };
    let fix = match code {
        Code::AuthFailed => "; check the token (powercontext-hooks doctor <host>)",
        Code::NotFound => "; check the id, or the scope binding",
        Code::Conflict => "; it changed meanwhile: read it again and retry",
        _ => "",
    };
    Err(Failed {
        code,
        message: format!("the Server refused it: HTTP {status} ({server_code}){fix}"),
        status: Some(status),
    })
}

/// An error from opening the connection or sending: the Server's failure class, or a local
/// configuration problem.
fn classify(e: anyhow::Error) -> Failed {
    match e.downcast_ref::<Unreachable>() {
        Some(u) => {
            let code = match u.outcome.as_str() {
                "timeout" => Code::Timeout,
                "server_unavailable" => Code::ServerUnavailable,
                "authentication_failed" | "forbidden" => Code::AuthFailed,
                "scope_not_found" => Code::NotFound,
                _ => Code::InvalidResponse,
            };
            fail(code, u.message.clone())
        }
        None => fail(Code::ConfigError, format!("{e:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_lists_every_operation_and_code() {
        for op in ops::CURATED {
            let shown = if op.call.mutates {
                format!("{}*", op.name)
            } else {
                op.name.to_owned()
            };
            assert!(OP_AFTER_HELP.contains(&shown), "{shown}");
        }
        for code in Code::ALL {
            assert!(OP_AFTER_HELP.contains(code.as_str()), "{code}");
        }
    }

    #[test]
    fn secrets_are_found_anywhere_in_the_arguments() {
        let v = json!({"outcome": {"notes": ["fine", "api_key=q7Wm2xR9kL4vZt8p"]}});
        assert!(secret_in(&v).is_some());
        assert!(secret_in(&json!({"text": "risk-based prioritization"})).is_none());
    }
}
