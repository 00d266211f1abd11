//! The Qwen Code adapter: which payload fields Qwen Code sends to its Claude-style command hooks
//! (Claude Code's fields plus `prompt_id`). No logic of its own.

use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::prompt_hook::PromptHookProfile;

/// This host.
pub const HOST: Integration = Integration::QwenCode;

/// The Qwen Code payload profile.
pub const PROFILE: PromptHookProfile = PromptHookProfile {
    integration: HOST,
    prompt_fields: &["prompt", "submitted_prompt"],
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
