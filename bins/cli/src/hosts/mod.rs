//! One installer per host and [`installer`], the dispatch to it, which setup, uninstall and
//! doctor ask for everything that differs between hosts (templates, plan, host CLI calls,
//! unregistering, activation checks, synthetic doctor calls). It owns no shared mechanics (the
//! contract is `installer::contract`, plans and records are in `installer`, file machinery in
//! `support`) and never writes a file itself.

use crate::installer::contract::Installer;
use crate::support::install::Host;

mod claude_code;
pub(crate) mod codex;
pub(crate) mod common;
mod dsh;
pub(crate) mod hermes;
mod kimi_code;
pub(crate) use kimi_code::package_files as kimi_package;
mod marketplace;
mod openclaw;
pub(crate) mod opencode;
mod pi;
pub(crate) mod settings_hooks;
mod zcode;

/// The installer of one host.
pub(crate) fn installer(host: Host) -> &'static dyn Installer {
    // Host match kept: the dispatch to each host's installer, the one place that picks it.
    match host {
        Host::ClaudeCode => &claude_code::ClaudeCode,
        Host::Codex => &codex::Codex,
        Host::OpenCode => &opencode::OpenCode,
        Host::Pi => &pi::Pi,
        Host::Dsh => &dsh::Dsh,
        Host::Hermes => &hermes::Hermes,
        Host::KimiCode => &kimi_code::KimiCode,
        Host::QwenCode => &settings_hooks::SettingsHooks(
            Host::QwenCode,
            "powercontext-hooks setup qwen-code (puts our entries back into Qwen Code's settings.json)",
        ),
        Host::GeminiCli => &settings_hooks::SettingsHooks(
            Host::GeminiCli,
            "powercontext-hooks setup gemini-cli (puts our entries back into Gemini CLI's settings.json)",
        ),
        Host::CopilotCli => &settings_hooks::SettingsHooks(
            Host::CopilotCli,
            "powercontext-hooks setup copilot-cli (puts our entries back into Copilot CLI's settings.json)",
        ),
        Host::WorkBuddy => &settings_hooks::SettingsHooks(
            Host::WorkBuddy,
            "powercontext-hooks setup workbuddy (puts our entry back into WorkBuddy's settings.json), then restart WorkBuddy",
        ),
        Host::OpenClaw => &openclaw::OpenClaw,
        Host::Zcode => &zcode::Zcode,
    }
}

#[cfg(test)]
mod tests;
