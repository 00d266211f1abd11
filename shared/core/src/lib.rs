//! Shared contract logic for the PowerContext hook executables: configuration, the HTTP transport,
//! scope resolution, PreparedContext validation, capture with the secret filter, and the fail-open
//! process policy. Host crates only describe their payloads; everything else lives here.
//!
//! Exit codes: every hook executable exits 0, whatever happens (see [`protocol`]).
//!
//! # Layers
//!
//! A module imports only from its own layer or the layers listed before it, and the modules'
//! imports form no cycle (both held by a test that reads these sources):
//!
//! 1. Base values and pure parsing: `variables`, `host`, `env`, `base`, `deadline`, `endpoint`,
//!    `wire`, `payload`, `plain`, `secrets`, `outcome`, `start_echo`, `spare`, `sha256`.
//! 2. I/O primitives and diagnostics: `bounded`, `lock`, `state`, `http`, `workspace`,
//!    `journal`, `emit`, `process`.
//! 3. Server calls: `recall`, `scope`, `capture`.
//! 4. Local stores: `ledger`, `spool`, `scope_cache`.
//! 5. Configuration: `official`, `config`.
//! 6. The hook pipeline: `session`, `bootstrap`, `flush`, `drain`, `after`, `turn`, `protocol`,
//!    `hook`, `prompt_hook`.
#![deny(missing_docs)]

pub mod after;
pub mod base;
pub mod bootstrap;
pub mod bounded;
pub mod capture;
pub mod config;
pub mod deadline;
pub mod drain;
pub mod emit;
pub mod endpoint;
pub mod env;
pub mod flush;
pub mod hook;
pub mod host;
pub mod http;
pub mod journal;
pub mod ledger;
pub mod lock;
pub mod official;
pub mod outcome;
pub mod payload;
pub mod plain;
pub mod process;
pub mod prompt_hook;
pub mod protocol;
pub mod recall;
pub mod scope;
pub mod scope_cache;
/// The secret filter, its own crate (no I/O), re-exported where callers always found it.
pub use powercontext_hooks_secrets as secrets;
pub mod session;
mod sha256;
pub mod spare;
pub mod spool;
pub mod start_echo;
pub mod state;
pub mod turn;
pub mod variables;
pub mod wire;
pub mod workspace;
