//! The one integration-test binary: every host executable and the CLI, driven as processes.
//! Run through `make test`, which provides the pinned Server, the host CLIs and a loopback-only
//! network namespace.

mod cli;
mod fault;
mod real_server;
mod support;
