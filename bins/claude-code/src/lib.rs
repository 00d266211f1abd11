//! The Claude Code adapter: which payload fields Claude Code sends to a `UserPromptSubmit` command
//! hook, and the 10,000-character cap it puts on injected context. No logic of its own.

use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::prompt_hook::PromptHookProfile;

/// Claude Code truncates hook context above this many characters to a short preview.
pub const CONTEXT_CHAR_LIMIT: usize = 10_000;

/// This host.
pub const HOST: Integration = Integration::ClaudeCode;

/// The Claude Code payload profile (`prompt`, or `user_prompt` from older versions).
pub const PROFILE: PromptHookProfile = PromptHookProfile {
    integration: HOST,
    prompt_fields: &["prompt", "user_prompt"],
    session_fields: &["session_id"],
    turn_fields: &["prompt_id", "request_id"],
    turn_metadata_key: "prompt_id",
    context_char_limit: Some(CONTEXT_CHAR_LIMIT),
    start_echo: None,
};

/// Runs the hook process.
#[must_use]
pub fn main() -> std::process::ExitCode {
    powercontext_hooks_core::prompt_hook::main(&PROFILE)
}
