//! The WorkBuddy adapter: which payload fields WorkBuddy's Claude-compatible `UserPromptSubmit`
//! command hook sends (Claude Code's, by its documented contract; not validated in a real host).
//! No logic of its own.

use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::prompt_hook::PromptHookProfile;

/// This host.
pub const HOST: Integration = Integration::WorkBuddy;

/// The WorkBuddy payload profile (Claude Code's fields).
pub const PROFILE: PromptHookProfile = PromptHookProfile {
    integration: HOST,
    prompt_fields: &["prompt", "user_prompt"],
    session_fields: &["session_id"],
    turn_fields: &["prompt_id", "request_id"],
    turn_metadata_key: "prompt_id",
    context_char_limit: None,
};

/// Runs the hook process.
#[must_use]
pub fn main() -> std::process::ExitCode {
    powercontext_hooks_core::prompt_hook::main(&PROFILE)
}
