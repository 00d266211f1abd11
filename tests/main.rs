//! The one integration-test binary: every host executable and the CLI, driven as processes.
//! Run through `make test`, which provides the pinned Server, the host CLIs and a loopback-only
//! network namespace.

mod bootstrap;
mod cli;
mod cli_docs;
mod deps_home;
mod docs_sync;
mod doctor;
mod dsh;
mod e2e_claude;
mod e2e_codex;
mod e2e_copilot_cli;
mod e2e_dsh;
mod e2e_gemini_cli;
mod e2e_hermes;
mod e2e_kimi_code;
mod e2e_official;
mod e2e_openclaw;
mod e2e_opencode;
mod e2e_ops;
mod e2e_pi;
mod e2e_qwen_code;
mod e2e_scenarios;
mod fault;
mod install_copy;
mod journal;
mod kept_captures;
mod mcp_auth;
mod memory_cli;
mod negative;
mod official;
mod openclaw;
mod opencode;
mod ops;
mod pi;
mod real_server;
mod replay_parity;
mod secrets;
mod setup;
mod setup_safety;
mod state;
mod structure;
mod support;
mod trust;
mod workbuddy;
mod zcode;
