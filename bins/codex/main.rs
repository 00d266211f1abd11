//! `powercontext-hook-codex`: the Codex hook (`UserPromptSubmit`, `SessionStart`, `PreCompact`, `Stop`, `SessionEnd`).
fn main() -> std::process::ExitCode {
    powercontext_hooks_codex::main()
}
