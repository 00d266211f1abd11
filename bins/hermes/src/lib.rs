//! The Hermes Agent adapter: decodes Hermes' shell-hook payload (`pre_llm_call` carries the
//! user's message under `extra`; `on_session_end` fires after every turn and
//! `on_session_finalize` once at the end, both boundaries) and runs the shared prompt pipeline.
//! It never writes stdout itself (the protocol module does) and never fails the turn: exit 0.

use std::path::PathBuf;
use std::process::ExitCode;

use powercontext_hooks_core::hook::{self, Answered, Reply, Run};
use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::journal;
use powercontext_hooks_core::payload::{self, first_text};
use powercontext_hooks_core::prompt_hook::{self, PromptEvent, PromptHookProfile, SkipReason};
use powercontext_hooks_core::protocol::{Answer, Protocol};
use serde_json::Value;

/// This host.
pub const HOST: Integration = Integration::Hermes;

/// The Hermes payload profile: the fields are read from the payload's `extra` object, the
/// session id from its top level.
pub const PROFILE: PromptHookProfile = PromptHookProfile {
    integration: HOST,
    prompt_fields: &["user_message"],
    session_fields: &["session_id"],
    turn_fields: &["turn_id"],
    turn_metadata_key: "turn_id",
    context_char_limit: None,
    start_echo: None,
};

/// Runs the hook process.
#[must_use]
pub fn main() -> ExitCode {
    hook::run_hook(HOST, |hook::Payload, run| {
        Reply::drain(Protocol::HermesPreLlmCall, handle(run))
    })
}

fn handle(run: &Run<'_>) -> Answered {
    let Some(settings) = run.settings() else {
        return Answer::Nothing.into();
    };
    let deadline = run.arm(settings.budget.value);
    let Some(stdin) = run.payload() else {
        return Answer::Nothing.into();
    };
    let decoded = payload::decode(&stdin);
    drop(stdin);
    match decoded.ok_or(SkipReason::NotJson).and_then(|d| parse(&d)) {
        Ok(event) => prompt_hook::respond(&PROFILE, run.env, &settings, &deadline, &event),
        // A boundary answers nothing; the drainer takes pending work after the answer.
        Err(SkipReason::Boundary) => Answer::Nothing.into(),
        Err(reason) => run.skip(reason.as_str()).into(),
    }
}

/// Decodes one Hermes shell-hook payload: `{"hook_event_name", "session_id", "cwd", "extra":
/// {"user_message", "turn_id", …}}`.
///
/// # Errors
/// The [`SkipReason`] when the payload is not a usable `pre_llm_call`.
pub fn parse(decoded: &payload::Decoded) -> Result<PromptEvent, SkipReason> {
    let v = &decoded.value;
    if !v.is_object() {
        return Err(SkipReason::NotJson);
    }
    let event = v.get("hook_event_name").and_then(Value::as_str).unwrap_or("");
    journal::set_event(event_word(event));
    match event {
        "pre_llm_call" => {}
        "on_session_end" | "on_session_finalize" => return Err(SkipReason::Boundary),
        _ => return Err(SkipReason::WrongEvent),
    }
    let extra = v.get("extra").filter(|e| e.is_object()).unwrap_or(&Value::Null);
    // A delegated subagent's turn: its "user message" is the task the model wrote, not the user's
    // text, so it is neither recalled for nor captured.
    if extra.get("platform").and_then(Value::as_str) == Some("subagent") {
        return Err(SkipReason::WrongEvent);
    }
    // The prompt itself is not trimmed: it is captured exactly as typed.
    let prompt = PROFILE
        .prompt_fields
        .iter()
        .find_map(|f| {
            extra
                .get(*f)
                .and_then(Value::as_str)
                .filter(|s| !payload::is_blank(s))
        })
        .ok_or(SkipReason::BlankPrompt)?;
    let cwd = v
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(SkipReason::MissingCwd)?;
    Ok(PromptEvent {
        prompt: prompt.to_owned(),
        cwd: PathBuf::from(cwd),
        session_id: first_text(v, PROFILE.session_fields).map(str::to_owned),
        turn_id: first_text(extra, PROFILE.turn_fields).map(str::to_owned),
        lossy: decoded.lossy,
    })
}

/// The journal's name for a Hermes event: a closed word, never payload text.
fn event_word(event: &str) -> &'static str {
    match event {
        "pre_llm_call" => "pre_llm_call",
        "on_session_start" => "on_session_start",
        "on_session_end" => "on_session_end",
        "on_session_finalize" => "on_session_finalize",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(v: &Value) -> Result<PromptEvent, SkipReason> {
        parse(&payload::decode(v.to_string().as_bytes()).unwrap())
    }

    #[test]
    fn pre_llm_call_reads_the_message_from_extra() {
        let e = parsed(&serde_json::json!({
            "hook_event_name": "pre_llm_call", "tool_name": null, "tool_input": null,
            "session_id": " s1 ", "cwd": "/p",
            "extra": {"user_message": "  hi  ", "turn_id": "t7", "is_first_turn": true,
                      "conversation_history": [{"role": "user", "content": "older"}]}
        }))
        .unwrap();
        assert_eq!(e.prompt, "  hi  ");
        assert_eq!(e.cwd, PathBuf::from("/p"));
        assert_eq!(e.session_id.as_deref(), Some("s1"));
        assert_eq!(e.turn_id.as_deref(), Some("t7"));
        assert!(!e.lossy);
    }

    #[test]
    fn boundaries_and_other_events_are_not_prompts() {
        for (event, want) in [
            ("on_session_end", SkipReason::Boundary),
            ("on_session_finalize", SkipReason::Boundary),
            ("on_session_start", SkipReason::WrongEvent),
            ("pre_tool_call", SkipReason::WrongEvent),
        ] {
            let got = parsed(
                &serde_json::json!({"hook_event_name": event, "session_id": "s", "cwd": "/p",
                                                  "extra": {"user_message": "hi"}}),
            );
            assert_eq!(got.unwrap_err(), want, "{event}");
        }
    }

    #[test]
    fn a_subagent_turn_is_not_a_user_prompt() {
        let sub = parsed(
            &serde_json::json!({"hook_event_name": "pre_llm_call", "session_id": "child", "cwd": "/p",
                                             "extra": {"user_message": "the delegated task", "platform": "subagent"}}),
        );
        assert_eq!(sub.unwrap_err(), SkipReason::WrongEvent);
        let cli = parsed(
            &serde_json::json!({"hook_event_name": "pre_llm_call", "session_id": "s", "cwd": "/p",
                                             "extra": {"user_message": "mine", "platform": "cli"}}),
        );
        assert_eq!(cli.unwrap().prompt, "mine");
    }

    #[test]
    fn a_top_level_prompt_or_a_missing_one_is_no_prompt() {
        let top = parsed(
            &serde_json::json!({"hook_event_name": "pre_llm_call", "cwd": "/p", "user_message": "hi"}),
        );
        assert_eq!(top.unwrap_err(), SkipReason::BlankPrompt);
        let list = parsed(
            &serde_json::json!({"hook_event_name": "pre_llm_call", "cwd": "/p",
                                              "extra": {"user_message": [{"type": "text", "text": "hi"}]}}),
        );
        assert_eq!(list.unwrap_err(), SkipReason::BlankPrompt);
        let no_cwd =
            parsed(&serde_json::json!({"hook_event_name": "pre_llm_call", "extra": {"user_message": "hi"}}));
        assert_eq!(no_cwd.unwrap_err(), SkipReason::MissingCwd);
    }
}
