//! Interplay with the official `powercontext` CLI's installs: the MCP headers helper (the saved
//! token for a host's MCP client) and Codex hook trust for hooks that installer put in place. It
//! trusts only hook commands that run our own executable, and prints a token only to the stdout
//! of the host process that asked for it.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use serde_json::{Value, json};

use crate::host_cli::HostCli;
use crate::install::Host;
use crate::setup::{Paths, SetupArgs};

/// `mcp-headers <host>`.
#[derive(Debug, Args)]
pub struct McpHeadersArgs {
    /// claude-code, codex, opencode, pi or dsh.
    pub host: String,
}

/// Prints the MCP request headers for a host as one JSON object (an MCP client's headers helper:
/// Claude Code's `headersHelper`): `{"Authorization": "Bearer …"}` with the token the hooks would
/// send (environment, our config, then the official CLI's saved credential bound to the same
/// URL), or `{}` without one. The token goes to stdout only, for the host that asked.
pub fn mcp_headers(args: &McpHeadersArgs) -> Result<ExitCode> {
    let host = Host::parse(&args.host)?;
    let env = powercontext_hooks_core::env::Env::from_process();
    let settings = powercontext_hooks_core::config::Settings::for_hook(host.integration(), &env)?;
    let headers = match &settings.authorization.value {
        Some(a) => json!({"Authorization": a.header_value()}),
        None => json!({}),
    };
    println!("{headers}");
    Ok(ExitCode::SUCCESS)
}

/// Whether a Codex hook command runs our Codex hook executable (an absolute path, maybe quoted).
fn runs_our_hook(command: &str) -> bool {
    let unquoted = command.trim().trim_matches('\'');
    !unquoted.contains(char::is_whitespace)
        && Path::new(unquoted).is_absolute()
        && Path::new(unquoted)
            .file_name()
            .is_some_and(|n| n == Host::Codex.hook_exe())
}

/// `setup codex --trust-only`: records Codex trust for the hooks of an installed
/// `powercontext@powercontext` plugin (the official installer leaves them untrusted, and Codex
/// skips untrusted hooks silently). Refuses when a hook of that plugin runs anything but our
/// executable: trust is for code we ship.
pub fn trust_only(args: &SetupArgs) -> Result<ExitCode> {
    let host = Host::parse(&args.host)?;
    if host != Host::Codex {
        bail!("--trust-only is for codex only (the one host that asks for hook trust)");
    }
    let paths = Paths::resolve(&args.locate)?;
    let cli = HostCli::locate(host, args.locate.host_cli.as_deref(), &paths.env)?;
    let cwd = paths.neutral_cwd();
    let hooks = cli.codex_hooks(&cwd)?;
    if hooks.is_empty() {
        bail!(
            "Codex lists no hook of powercontext@powercontext: install the plugin first (powercontext setup codex --source DIR)"
        );
    }
    let foreign: Vec<String> = hooks
        .iter()
        .filter(|h| !h["command"].as_str().is_some_and(runs_our_hook))
        .map(|h| h["command"].as_str().unwrap_or("?").to_owned())
        .collect();
    if !foreign.is_empty() {
        bail!(
            "refusing to trust hooks that do not run {}: {}",
            Host::Codex.hook_exe(),
            foreign.join(", ")
        );
    }
    let untrusted = hooks.iter().filter(|h| h["trustStatus"] != "trusted").count();
    if !args.json {
        println!("powercontext-hooks setup codex --trust-only");
        for h in &hooks {
            println!(
                "  {:<9} {} {}",
                h["trustStatus"].as_str().unwrap_or("?"),
                h["eventName"]
                    .as_str()
                    .or_else(|| h["event"].as_str())
                    .unwrap_or("hook"),
                h["command"].as_str().unwrap_or("?")
            );
        }
    }
    if args.dry_run || untrusted == 0 {
        if args.json {
            println!(
                "{}",
                json!({"ok": true, "result": if args.dry_run { "planned" } else { "unchanged" }, "untrusted": untrusted})
            );
        } else {
            println!(
                "{}",
                if args.dry_run {
                    "dry run: nothing was changed"
                } else {
                    "already trusted: nothing changed"
                }
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let n = cli.codex_trust(&cwd)?;
    let after = cli.codex_hooks(&cwd)?;
    if after.iter().any(|h: &Value| h["trustStatus"] != "trusted") {
        bail!("codex still lists an untrusted powercontext hook after recording trust");
    }
    if args.json {
        println!("{}", json!({"ok": true, "result": "trusted", "trusted": n}));
    } else {
        println!("done: Codex trusts {n} powercontext hook(s); it runs them from the next session");
    }
    Ok(ExitCode::SUCCESS)
}
