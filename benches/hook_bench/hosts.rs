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
];

/// Did the run inject the recalled context? (The instant Server's content ends with this marker.)
pub fn injected(stdout: &str) -> bool {
    stdout.contains("END_POWERCONTEXT_PREPARED_CONTEXT_V1")
}
