//! Real GitHub Copilot CLI (pinned in tests/e2e/copilot-cli/package.json) with our hooks in its
//! settings file, the real Server and a fake model, inside a loopback-only namespace. The shared
//! scenarios live in `e2e_scenarios`; this module names them for Copilot CLI and must never skip
//! one.

use powercontext_hooks_core::host::Integration;

use crate::e2e_scenarios::host_scenarios;

host_scenarios!(Integration::CopilotCli);
