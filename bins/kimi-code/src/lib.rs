//! The Kimi Code adapter: which payload fields Kimi Code sends to a `UserPromptSubmit` command
//! hook (its `prompt` is a list of content parts; the shared pipeline reads their text). No logic
//! of its own: the answer's shape (`{"message": …}`) and the first-prompt bootstrap come from the
//! host's row.

use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::prompt_hook::PromptHookProfile;

/// This host.
pub const HOST: Integration = Integration::KimiCode;

/// The Kimi Code payload profile.
pub const PROFILE: PromptHookProfile = PromptHookProfile {
    integration: HOST,
    prompt_fields: &["prompt"],
    session_fields: &["session_id"],
    // Kimi Code 2.1 names no turn; these are read should a later version send one.
    turn_fields: &["turn_id", "prompt_id"],
    turn_metadata_key: "turn_id",
    context_char_limit: None,
    start_echo: None,
};

/// Runs the hook process.
#[must_use]
pub fn main() -> std::process::ExitCode {
    powercontext_hooks_core::prompt_hook::main(&PROFILE)
}
