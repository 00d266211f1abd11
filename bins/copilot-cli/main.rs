//! `powercontext-hook-copilot-cli`: the GitHub Copilot CLI hook (`UserPromptSubmit`, `SessionStart`, `PreCompact`, `Stop`, `SessionEnd`).
fn main() -> std::process::ExitCode {
    powercontext_hooks_copilot_cli::main()
}
