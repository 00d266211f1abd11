//! Paths of the executables under test and small shared helpers.

use std::path::PathBuf;

use powercontext_hooks_core::host::Integration;

pub const CLAUDE: &str = env!("CARGO_BIN_EXE_powercontext-hook-claude-code");
pub const CODEX: &str = env!("CARGO_BIN_EXE_powercontext-hook-codex");
pub const CLI: &str = env!("CARGO_BIN_EXE_powercontext-hooks");
pub const PI: &str = env!("CARGO_BIN_EXE_powercontext-hook-pi");
pub const OPENCODE: &str = env!("CARGO_BIN_EXE_powercontext-hook-opencode");
pub const DSH: &str = env!("CARGO_BIN_EXE_powercontext-hook-dsh");

/// The hook executable of `host`.
pub fn hook_exe(host: Integration) -> &'static str {
    match host {
        Integration::ClaudeCode => CLAUDE,
        Integration::Codex => CODEX,
        Integration::OpenCode => OPENCODE,
        Integration::Pi => PI,
        Integration::Dsh => DSH,
    }
}

/// Both `UserPromptSubmit` hosts: (executable, env-var part, source_id prefix).
pub const PROMPT_HOSTS: [(&str, &str, &str); 2] = [
    (CLAUDE, "CLAUDE", "claude-code-user-prompt:"),
    (CODEX, "CODEX", "codex-user-prompt:"),
];

/// The release build of an executable (`make test` builds it first): panic = "abort" only
/// exists there, so the fail-open panic path is proven on it.
#[track_caller]
pub fn release_exe(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/release")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: run `make test` (it builds the release binaries first)",
        p.display()
    );
    p
}
