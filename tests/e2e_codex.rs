//! Real Codex (pinned in tests/e2e/package.json) with our hook plugin, the real Server and a
//! fake model, inside a loopback-only namespace. The scenarios live in `e2e_scenarios`; this module
//! only names them for Codex and must never skip one.

use powercontext_hooks_core::host::Integration;

use crate::e2e_scenarios::host_scenarios;

host_scenarios!(Integration::Codex);
