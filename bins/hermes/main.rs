//! `powercontext-hook-hermes`: the Hermes Agent shell hook (`pre_llm_call`, `on_session_end`, `on_session_finalize`).
fn main() -> std::process::ExitCode {
    powercontext_hooks_hermes::main()
}
