//! The Codex adapter: which payload fields Codex sends to a `UserPromptSubmit` command hook.
//! No logic of its own.

use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::prompt_hook::PromptHookProfile;

/// This host.
pub const HOST: Integration = Integration::Codex;

/// The Codex payload profile.
pub const PROFILE: PromptHookProfile = PromptHookProfile {
    integration: HOST,
    prompt_fields: &["prompt"],
    session_fields: &["session_id", "conversation_id", "thread_id"],
    turn_fields: &["turn_id", "request_id"],
    turn_metadata_key: "turn_id",
    context_char_limit: None,
    start_echo: None,
};

/// Runs the hook process.
#[must_use]
pub fn main() -> std::process::ExitCode {
    powercontext_hooks_core::prompt_hook::main(&PROFILE)
}
