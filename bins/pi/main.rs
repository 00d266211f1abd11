//! `powercontext-hook-pi`: the pi hook executable, spawned by its thin host shim.
fn main() -> std::process::ExitCode {
    powercontext_hooks_pi::main()
}
