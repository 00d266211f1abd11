//! The host executables under test: one row per executable, each with the stdin payload (and
//! subcommand) its real host or shim sends — the shapes `tests/negative.rs` drives, from the recorded
//! fixtures where there are some — and the check that a run injected the recalled context. It owns
//! no timing and never edits the recorded fixtures.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// How one host executable is driven.
pub struct Host {
    /// Row name (the integration name).
    pub name: &'static str,
    /// Executable file name in the release directory.
    pub exe: &'static str,
    /// `POWERCONTEXT_<PART>_…` variables configure it.
    pub part: &'static str,
    /// Subcommand, if the host calls the executable with one.
    pub args: &'static [&'static str],
    /// Builds the stdin payload.
    pub payload: PayloadFn,
    /// A second process the host starts for the same prompt: its subcommand and payload (no
    /// shipped host needs one since OpenCode's prompt became one process; kept for a host that does).
    pub then: Option<(&'static [&'static str], PayloadFn)>,
}

/// Builds one stdin payload from the fixtures directory and what varies per run.
pub type PayloadFn = fn(&Path, &Payload<'_>) -> Vec<u8>;

/// What varies between payloads.
pub struct Payload<'a> {
    pub prompt: &'a str,
    pub cwd: &'a Path,
    /// Run number: turn ids are unique per run, as they are per prompt in a real session.
    pub run: usize,
    /// Overrides the fixture's session id (the real-Server rows bind sessions to scopes).
    pub session: Option<&'a str>,
}

/// A recorded fixture with cwd, prompt, turn and session replaced; keys and types stay as recorded.
fn from_fixture(file: &Path, p: &Payload<'_>, turn_key: &str) -> Vec<u8> {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("cannot read the recorded payload {}: {e}", file.display()));
    let mut v: Value = serde_json::from_str(&text).expect("recorded payload is JSON");
    let obj = v.as_object_mut().expect("recorded payload is an object");
    obj.insert("cwd".into(), p.cwd.to_string_lossy().into_owned().into());
    obj.insert("prompt".into(), p.prompt.into());
    obj.insert(
        turn_key.into(),
        format!("00000000-0000-4000-8000-{:012}", p.run).into(),
    );
    if let Some(s) = p.session {
        obj.insert("session_id".into(), s.into());
    }
    serde_json::to_vec(&v).expect("payload serializes")
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn claude_payload(fixtures: &Path, p: &Payload<'_>) -> Vec<u8> {
    from_fixture(
        &fixtures.join("claude-code/user_prompt_submit.json"),
        p,
        "prompt_id",
    )
}

fn codex_payload(fixtures: &Path, p: &Payload<'_>) -> Vec<u8> {
    from_fixture(&fixtures.join("codex/user_prompt_submit.json"), p, "turn_id")
}

fn read_fixture(file: &Path) -> Value {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("cannot read the recorded payload {}: {e}", file.display()));
    serde_json::from_str(&text).expect("recorded payload is JSON")
}

/// Pi's extension sends the roles of the session branch; the turn id is the number of user
/// messages in it, so run `n` is turn `n + 1` of one growing session.
fn pi_payload(fixtures: &Path, p: &Payload<'_>) -> Vec<u8> {
    let mut v = read_fixture(&fixtures.join("pi/before_agent_start.json"));
    v["prompt"] = p.prompt.into();
    v["cwd"] = p.cwd.to_string_lossy().into_owned().into();
    if let Some(s) = p.session {
        v["session_id"] = s.into();
    }
    let roles = v["branch_roles"]
        .as_array_mut()
        .expect("branch_roles is an array");
    roles.extend(std::iter::repeat_n(Value::from("user"), p.run + 1));
    serde_json::to_vec(&v).expect("payload serializes")
}

/// DSH's `agent/pre-step` batch for the first step of a turn (DSH recalls once per session and
/// turn, so every run is a new turn).
fn dsh_payload(_: &Path, p: &Payload<'_>) -> Vec<u8> {
    let v = json!({
        "session": {"id": p.session.unwrap_or("dsh-bench-session"), "cwd": p.cwd.to_string_lossy()},
        "turn": p.run + 1,
        "step": 1,
        "messages": [{"source": {"kind": "user"}, "content": [{"type": "text", "text": p.prompt}]}],
    });
    serde_json::to_vec(&v).expect("payload serializes")
}

const OPENCODE_SESSION: &str = "ses_bench0000000000000000000";

fn opencode_message(run: usize) -> String {
    format!("msg_bench{run:021}")
}

/// OpenCode's `chat.message` (`prepare`): a new message per run, created later than the last one.
fn opencode_prepare(fixtures: &Path, p: &Payload<'_>) -> Vec<u8> {
    let mut v = read_fixture(&fixtures.join("opencode/prepare.json"));
    let created = v["created_ms"].as_u64().expect("created_ms is a number");
    v["session_id"] = p.session.unwrap_or(OPENCODE_SESSION).into();
    v["message_id"] = opencode_message(p.run).into();
    v["created_ms"] = (created + p.run as u64).into();
    v["parts"][0]["text"] = p.prompt.into();
    v["directory"] = p.cwd.to_string_lossy().into_owned().into();
    serde_json::to_vec(&v).expect("payload serializes")
}

/// The run's turn id, unique per run as a host's is per prompt.
fn turn_id(run: usize) -> String {
    format!("00000000-0000-4000-8000-{run:012}")
}

/// A command hook's prompt event (the shape `tests/negative.rs` drives for these rows): the
/// prompt, the session, the turn under both names hosts use, and the row's event name.
fn command_hook(event: &str, p: &Payload<'_>, session: &str) -> Vec<u8> {
    let v = json!({
        "session_id": p.session.unwrap_or(session),
        "prompt_id": turn_id(p.run),
        "turn_id": turn_id(p.run),
        "transcript_path": null,
        "cwd": p.cwd.to_string_lossy(),
        "permission_mode": "default",
        "hook_event_name": event,
        "prompt": p.prompt,
    });
    serde_json::to_vec(&v).expect("payload serializes")
}

fn qwen_payload(_: &Path, p: &Payload<'_>) -> Vec<u8> {
    command_hook("UserPromptSubmit", p, "qwen-bench-session")
}

fn gemini_payload(_: &Path, p: &Payload<'_>) -> Vec<u8> {
    command_hook("BeforeAgent", p, "gemini-bench-session")
}

fn copilot_payload(_: &Path, p: &Payload<'_>) -> Vec<u8> {
    command_hook("UserPromptSubmit", p, "copilot-bench-session")
}

fn workbuddy_payload(_: &Path, p: &Payload<'_>) -> Vec<u8> {
    command_hook("UserPromptSubmit", p, "workbuddy-bench-session")
}

fn zcode_payload(_: &Path, p: &Payload<'_>) -> Vec<u8> {
    command_hook("UserPromptSubmit", p, "zcode-bench-session")
}

/// Hermes' `pre_llm_call` shell hook: the prompt under `extra`, the session at the top.
fn hermes_payload(_: &Path, p: &Payload<'_>) -> Vec<u8> {
    let v = json!({
        "hook_event_name": "pre_llm_call", "tool_name": null, "tool_input": null,
        "session_id": p.session.unwrap_or("hermes-bench-session"), "cwd": p.cwd.to_string_lossy(),
        "extra": {"user_message": p.prompt, "turn_id": turn_id(p.run), "is_first_turn": p.run == 0,
                  "conversation_history": [], "platform": "cli"},
    });
    serde_json::to_vec(&v).expect("payload serializes")
}

/// Kimi Code's `UserPromptSubmit`: the prompt as content parts.
fn kimi_payload(_: &Path, p: &Payload<'_>) -> Vec<u8> {
    let v = json!({
        "hook_event_name": "UserPromptSubmit", "session_id": p.session.unwrap_or("kimi-bench-session"),
        "cwd": p.cwd.to_string_lossy(), "client_type": "kimi_code_cli", "is_steer": false,
        "prompt": [{"type": "text", "text": p.prompt}],
    });
    serde_json::to_vec(&v).expect("payload serializes")
}

/// OpenClaw's plugin `before_prompt_build`: the turn number comes from the roles of the history,
/// so run `n` is turn `n + 1` of one growing session.
fn openclaw_payload(_: &Path, p: &Payload<'_>) -> Vec<u8> {
    let mut roles = Vec::new();
    for _ in 0..=p.run {
        roles.push("user");
        roles.push("assistant");
    }
    let v = json!({
        "prompt": p.prompt, "cwd": p.cwd.to_string_lossy(),
        "session_id": p.session.unwrap_or("openclaw-bench-session"), "history_roles": roles,
    });
    serde_json::to_vec(&v).expect("payload serializes")
}

/// Every host executable the workspace ships, in report order.
pub const ALL: &[Host] = &[
    Host {
        name: "claude-code",
        exe: "powercontext-hook-claude-code",
        part: "CLAUDE",
        args: &[],
        payload: claude_payload,
        then: None,
    },
    Host {
        name: "codex",
        exe: "powercontext-hook-codex",
        part: "CODEX",
        args: &[],
        payload: codex_payload,
        then: None,
    },
    Host {
        name: "pi",
        exe: "powercontext-hook-pi",
        part: "PI",
        args: &["before-agent-start"],
        payload: pi_payload,
        then: None,
    },
    Host {
        name: "dsh",
        exe: "powercontext-hook-dsh",
        part: "DSH",
        args: &["pre-step"],
        payload: dsh_payload,
        then: None,
    },
    Host {
        name: "opencode",
        exe: "powercontext-hook-opencode",
        part: "OPENCODE",
        args: &["prepare"],
        // One process per prompt: the shim's messages transform starts none.
        payload: opencode_prepare,
        then: None,
    },
    Host {
        name: "qwen-code",
        exe: "powercontext-hook-qwen-code",
        part: "QWEN",
        args: &[],
        payload: qwen_payload,
        then: None,
    },
    Host {
        name: "gemini-cli",
        exe: "powercontext-hook-gemini-cli",
        part: "GEMINI",
        args: &[],
        payload: gemini_payload,
        then: None,
    },
    Host {
        name: "copilot-cli",
        exe: "powercontext-hook-copilot-cli",
        part: "COPILOT",
        args: &[],
        payload: copilot_payload,
        then: None,
    },
    Host {
        name: "workbuddy",
        exe: "powercontext-hook-workbuddy",
        part: "WORKBUDDY",
        args: &[],
        payload: workbuddy_payload,
        then: None,
    },
    Host {
        name: "hermes",
        exe: "powercontext-hook-hermes",
        part: "HERMES",
        args: &[],
        payload: hermes_payload,
        then: None,
    },
    Host {
        name: "kimi-code",
        exe: "powercontext-hook-kimi-code",
        part: "KIMI",
        args: &[],
        payload: kimi_payload,
        then: None,
    },
    Host {
        name: "openclaw",
        exe: "powercontext-hook-openclaw",
        part: "OPENCLAW",
        args: &["before-prompt-build"],
        payload: openclaw_payload,
        then: None,
    },
    Host {
        name: "zcode",
        exe: "powercontext-hook-zcode",
        part: "ZCODE",
        args: &[],
        payload: zcode_payload,
        then: None,
    },
];

/// Did the run inject the recalled context? (The instant Server's content ends with this marker.)
pub fn injected(stdout: &str) -> bool {
    stdout.contains("END_POWERCONTEXT_PREPARED_CONTEXT_V1")
}
