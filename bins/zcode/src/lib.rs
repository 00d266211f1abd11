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
};

/// Runs the hook process.
#[must_use]
pub fn main() -> std::process::ExitCode {
    powercontext_hooks_core::prompt_hook::main(&PROFILE)
}
