//! The host executables under test: one row per executable, each with the stdin payload (and
//! subcommand) its real host sends and the check that a run injected the recalled context. It owns
//! no timing and never edits the recorded fixtures.

use std::path::{Path, PathBuf};

use serde_json::Value;

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
    pub payload: fn(&Path, &Payload<'_>) -> Vec<u8>,
}

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

/// Every host executable the workspace ships, in report order.
pub const ALL: &[Host] = &[
    Host {
        name: "claude-code",
        exe: "powercontext-hook-claude-code",
        part: "CLAUDE",
        args: &[],
        payload: claude_payload,
    },
    Host {
        name: "codex",
        exe: "powercontext-hook-codex",
        part: "CODEX",
        args: &[],
        payload: codex_payload,
    },
];

/// Executables not driven yet, with why (shown in the report).
pub const PENDING: &[(&str, &str)] = &[
    ("pi", "powercontext-hook-pi"),
    ("opencode", "powercontext-hook-opencode"),
    ("dsh", "powercontext-hook-dsh"),
];

/// Did the run inject the recalled context? (The instant Server's content ends with this marker.)
pub fn injected(stdout: &str) -> bool {
    stdout.contains("END_POWERCONTEXT_PREPARED_CONTEXT_V1")
}
