//! `powercontext-hook-codex`: the Codex `UserPromptSubmit` hook.
fn main() -> std::process::ExitCode {
    powercontext_hooks_codex::main()
}
