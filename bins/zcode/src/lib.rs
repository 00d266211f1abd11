//! The ZCode adapter: which payload fields ZCode sends to its `UserPromptSubmit` process hooks
//! (camelCase or snake_case, as its own plugins read them). No logic of its own. Not validated in
//! a real host: ZCode cannot be installed here.

use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::prompt_hook::PromptHookProfile;

/// This host.
pub const HOST: Integration = Integration::Zcode;

/// The ZCode payload profile.
pub const PROFILE: PromptHookProfile = PromptHookProfile {
    integration: HOST,
    prompt_fields: &["prompt"],
    session_fields: &["sessionId", "session_id"],
    turn_fields: &["turnId", "turn_id"],
    turn_metadata_key: "turn_id",
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

    /// ZCode's plugins read either spelling; so does our hook.
    #[test]
    fn camel_and_snake_case_payloads_are_the_same_prompt() {
        let camel = r#"{"hookEventName":"UserPromptSubmit","sessionId":"z-1","turnId":"t-9","cwd":"/w","prompt":"p"}"#;
        let snake = r#"{"hook_event_name":"UserPromptSubmit","session_id":"z-1","turn_id":"t-9","cwd":"/w","prompt":"p"}"#;
        for payload in [camel, snake] {
            let event = parse_event(&PROFILE, payload.as_bytes()).unwrap();
            let capture = capture_of(&PROFILE, &event);
            assert_eq!((capture.session.as_str(), capture.turn.as_str()), ("z-1", "t-9"));
            assert_eq!(capture.metadata["origin"], "zcode");
        }
    }
}
