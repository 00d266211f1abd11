//! `powercontext-hook-opencode`: the opencode hook executable, spawned by its thin host shim.
fn main() -> std::process::ExitCode {
    powercontext_hooks_opencode::main()
}
