//! The GitHub Copilot CLI adapter: which payload fields Copilot CLI sends to its Claude-style
//! (`UserPromptSubmit`) command hooks. No logic of its own; the row in the host table says where
//! the answer goes (a top-level `additionalContext`, the only one Copilot CLI reads).

use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::prompt_hook::PromptHookProfile;

/// This host.
pub const HOST: Integration = Integration::CopilotCli;

/// The Copilot CLI payload profile. It sends no turn id; the prompt's own `timestamp` (ISO 8601,
/// milliseconds) tells two identical prompts of one session apart.
pub const PROFILE: PromptHookProfile = PromptHookProfile {
    integration: HOST,
    prompt_fields: &["prompt"],
    session_fields: &["session_id"],
    turn_fields: &["timestamp"],
    turn_metadata_key: "timestamp",
    context_char_limit: None,
    start_echo: None,
};

/// Runs the hook process.
#[must_use]
pub fn main() -> std::process::ExitCode {
    powercontext_hooks_core::prompt_hook::main(&PROFILE)
}

#[cfg(test)]
mod tests {
    use powercontext_hooks_core::prompt_hook::{capture_of, parse_event};

    use super::PROFILE;

    /// Copilot CLI's payload (recorded from 1.0.102) without a turn id: the prompt's timestamp
    /// keys the capture, so the same words typed twice in one session are two Sources.
    #[test]
    fn the_same_prompt_twice_in_a_session_is_two_captures() {
        let payload = |at: &str| {
            format!(
                r#"{{"hook_event_name":"UserPromptSubmit","session_id":"s-1","timestamp":"{at}","cwd":"/w","prompt":"run the tests"}}"#
            )
        };
        let first = parse_event(&PROFILE, payload("2026-12-06T03:08:36.485Z").as_bytes()).unwrap();
        let again = parse_event(&PROFILE, payload("2026-12-06T03:09:01.002Z").as_bytes()).unwrap();
        let (a, b) = (capture_of(&PROFILE, &first), capture_of(&PROFILE, &again));
        assert_eq!(a.session, "s-1");
        assert_ne!(a.turn, b.turn);
        assert_eq!(a.metadata["timestamp"], "2026-12-06T03:08:36.485Z");
        assert_eq!(a.metadata["origin"], "copilot-cli");
    }

    /// The camelCase dialect's payload has no `hook_event_name`: our hook skips it.
    #[test]
    fn a_camel_case_payload_is_not_a_prompt_event() {
        let camel = r#"{"sessionId":"s-1","timestamp":1796526485743,"cwd":"/w","prompt":"run the tests"}"#;
        assert!(parse_event(&PROFILE, camel.as_bytes()).is_err());
    }
}
