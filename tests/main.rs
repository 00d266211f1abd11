//! The one integration-test binary: every host executable and the CLI, driven as processes.
//! Run through `make test`, which provides the pinned Server, the host CLIs and a loopback-only
//! network namespace.

mod cli;
mod dsh;
mod e2e_dsh;
mod doctor;
mod setup;
mod fault;
mod e2e_pi;
mod pi;
mod real_server;
mod state;
mod support;
