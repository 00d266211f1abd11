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
};

/// Runs the hook process.
#[must_use]
pub fn main() -> std::process::ExitCode {
    powercontext_hooks_core::prompt_hook::main(&PROFILE)
}
