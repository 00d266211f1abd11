//! `powercontext-hook-gemini-cli`: the Gemini CLI hook (`BeforeAgent`, `SessionStart`, `AfterAgent`, `SessionEnd`).
fn main() -> std::process::ExitCode {
    powercontext_hooks_gemini_cli::main()
}
