//! `powercontext-hook-openclaw`: the OpenClaw hook executable, spawned by its thin plugin shim.
fn main() -> std::process::ExitCode {
    powercontext_hooks_openclaw::main()
}
