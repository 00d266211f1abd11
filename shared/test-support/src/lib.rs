//! Test support for powercontext-hooks: hermetic environments, loopback servers (fault injection
//! and a fake model), the real PowerContext Server harness and real-host runners. Never used by
//! shipped code.
#![allow(clippy::print_stdout, clippy::print_stderr, missing_docs)]

pub mod fake_model;
pub mod fake_server;
pub mod fault_server;
pub mod hook;
pub mod host_dsh;
pub mod host_gemini;
pub mod host_hermes;
pub mod host_openclaw;
pub mod host_opencode;
pub mod host_pi;
pub mod hosts;
pub mod http1;
pub mod process;
pub mod real_server;
pub mod sandbox;
