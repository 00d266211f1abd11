//! Interplay with the official `powercontext` CLI's installs: the MCP headers helper (the saved
//! token for a host's MCP client) and Codex hook trust for hooks that installer put in place. It
//! trusts only hook commands that run our own executable, and prints a token only to the stdout
//! of the host process that asked for it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Value, json};

use crate::installer::plan::SetupArgs;
use crate::support::host_cli::HostCli;
use crate::support::install::{Host, HostExt};
use crate::support::paths::Paths;
use crate::support::report;

/// `mcp-headers <host>`.
#[derive(Debug, Args)]
pub struct McpHeadersArgs {
    /// The host whose MCP client asks.
    #[arg(value_parser = crate::support::install::host_arg())]
    pub host: crate::support::install::Host,
    /// Our config file (as `POWERCONTEXT_HOOKS_CONFIG`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A location variable setup saw (`NAME=VALUE`; only POWERCONTEXT_CLIENT_CONFIG_FILE,
    /// CLAUDE_CONFIG_DIR, CODEX_HOME, OPENCODE_CONFIG_DIR, PI_CODING_AGENT_DIR, DSH_HOME,
    /// XDG_CONFIG_HOME): Codex runs a headers helper with nothing but `HOME` and `PATH`, so setup
    /// names them on the command line.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
}

/// Prints the MCP request headers for a host as one JSON object (an MCP client's headers helper:
/// Claude Code's `headersHelper`, Codex's `http_headers_helper`): `{"Authorization": "Bearer …"}`
/// with the token the hooks would send (environment, our config, then the official CLI's saved
/// credential bound to the same URL), or `{}` without one. The token goes to stdout only, for the
/// host that asked. An invalid setting prints `{}` (and names the setting on stderr): a failing
/// helper would take the host's MCP connection down with it.
pub fn mcp_headers(args: &McpHeadersArgs) -> Result<ExitCode> {
    let host = args.host;
    let mut env = powercontext_hooks_core::env::Env::from_process();
    if let Some(c) = &args.config {
        env.set(
            powercontext_hooks_core::variables::HOOKS_CONFIG,
            c.to_str().context("--config is not UTF-8")?,
        );
    }
    for pair in &args.env {
        let (name, value) = pair
            .split_once('=')
            .filter(|(n, _)| crate::support::paths::LOCATION_VARS.contains(n))
            .with_context(|| {
                format!(
                    "--env takes NAME=VALUE with NAME one of {}",
                    crate::support::paths::LOCATION_VARS.join(", ")
                )
            })?;
        env.set(name, value);
    }
    let headers = match powercontext_hooks_core::config::Settings::for_hook(host, &env) {
        Ok(settings) => match &settings.authorization.value {
            Some(a) => json!({"Authorization": a.header_value()}),
            None => json!({}),
        },
        Err(e) => {
            eprintln!(
                "powercontext-hooks mcp-headers: {} is invalid; sending no token",
                e.setting
            );
            json!({})
        }
    };
    crate::support::report::out(format_args!("{headers}\n"));
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
/// skips untrusted hooks silently), and gives its MCP server our headers helper. Refuses when a
/// hook of that plugin runs anything but our executable: trust is for code we ship.
pub fn trust_only(args: &SetupArgs) -> Result<ExitCode> {
    let host = args.host;
    if host != Host::Codex {
        bail!("--trust-only is for codex only (the one host that asks for hook trust)");
    }
    let paths = Paths::resolve(&args.locate)?;
    let cli = HostCli::locate(host, args.locate.host_cli.as_deref(), &paths.env)?;
    let cwd = paths.neutral_cwd();
    let hooks = crate::hosts::codex::hooks(&cli, &cwd)?;
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
    let helpers = codex_helper_changes(&paths)?;
    let mut said = Trusted {
        ok: true,
        result: TrustResult::Planned,
        untrusted: Some(untrusted),
        trusted: None,
        mcp_helpers: helpers.iter().map(|(p, _)| p.clone()).collect(),
        previewed: false,
        hooks: hooks
            .iter()
            .map(|h| {
                format!(
                    "{:<9} {} {}",
                    h["trustStatus"].as_str().unwrap_or("?"),
                    h["eventName"]
                        .as_str()
                        .or_else(|| h["event"].as_str())
                        .unwrap_or("hook"),
                    h["command"].as_str().unwrap_or("?")
                )
            })
            .collect(),
    };
    if args.dry_run || (untrusted == 0 && helpers.is_empty()) {
        if !args.dry_run {
            said.result = TrustResult::Unchanged;
        }
        return report::emit(&said, args.json);
    }
    said.previewed = report::preview(&TrustPlan(&said), args.json);
    // The helper first: Codex's trust hash covers the plugin, so trust is recorded for the
    // plugin as it will stay.
    for (path, bytes) in &helpers {
        crate::support::install::write_atomic(path, bytes, false)?;
    }
    let untrusted = crate::hosts::codex::hooks(&cli, &cwd)?
        .iter()
        .filter(|h| h["trustStatus"] != "trusted")
        .count();
    let n = if untrusted == 0 {
        0
    } else {
        crate::hosts::codex::trust(&cli, &cwd)?
    };
    let after = crate::hosts::codex::hooks(&cli, &cwd)?;
    if after.iter().any(|h: &Value| h["trustStatus"] != "trusted") {
        bail!("codex still lists an untrusted powercontext hook after recording trust");
    }
    said.result = TrustResult::Trusted;
    said.untrusted = None;
    said.trusted = Some(n);
    report::emit(&said, args.json)
}

words! {
    /// What `setup codex --trust-only` did.
    enum TrustResult {
        Planned => "planned",
        Unchanged => "unchanged",
        Trusted => "trusted",
    }
}

/// What `setup codex --trust-only` says.
#[derive(serde::Serialize)]
struct Trusted {
    ok: bool,
    result: TrustResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    untrusted: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trusted: Option<usize>,
    mcp_helpers: Vec<std::path::PathBuf>,
    /// The plugin's hooks as Codex listed them before any change (text form only).
    #[serde(skip)]
    hooks: Vec<String>,
    /// The listing was shown before trust was recorded.
    #[serde(skip)]
    previewed: bool,
}

/// The listing `--trust-only` shows before it changes anything.
struct TrustPlan<'t>(&'t Trusted);

impl std::fmt::Display for TrustPlan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "powercontext-hooks setup codex --trust-only")?;
        for h in &self.0.hooks {
            writeln!(f, "  {h}")?;
        }
        for path in &self.0.mcp_helpers {
            writeln!(
                f,
                "  edit      {} mcpServers.powercontext.http_headers_helper (our mcp-headers)",
                path.display()
            )?;
        }
        Ok(())
    }
}

impl report::Report for Trusted {}

impl std::fmt::Display for Trusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.previewed {
            TrustPlan(self).fmt(f)?;
        }
        match self.result {
            TrustResult::Planned => writeln!(f, "dry run: nothing was changed"),
            TrustResult::Unchanged => writeln!(f, "already trusted: nothing changed"),
            TrustResult::Trusted => {
                writeln!(
                    f,
                    "done: Codex trusts {} powercontext hook(s); it runs them from the next session",
                    self.trusted.unwrap_or(0)
                )?;
                if self.mcp_helpers.is_empty() {
                    Ok(())
                } else {
                    writeln!(
                        f,
                        "done: Codex's MCP client sends the saved token through powercontext-hooks mcp-headers"
                    )
                }
            }
        }
    }
}

/// The official installer points the cached plugin's MCP headers helper at `uv run …
/// mcp_headers.py`, which our plugin does not ship (and uv may be missing): the helper fails and
/// Codex drops the MCP connection. Each cached `.mcp.json` whose helper is that one (or none) gets
/// ours instead, `env_http_headers` and every other key kept. A helper of anyone else is left.
fn codex_helper_changes(paths: &Paths) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let Some(home) = crate::hosts::installer(Host::Codex).home(&paths.env) else {
        return Ok(Vec::new());
    };
    let helper = crate::hosts::common::headers_helper(Host::Codex, paths)?;
    let mut out = Vec::new();
    let Ok(markets) = std::fs::read_dir(home.join("plugins/cache")) else {
        return Ok(out);
    };
    for market in markets.flatten().take(64) {
        let Ok(versions) = std::fs::read_dir(market.path().join("powercontext")) else {
            continue;
        };
        for version in versions.flatten().take(64) {
            let path = version.path().join(".mcp.json");
            let Some(bytes) = crate::support::install::read_opt(&path)? else {
                continue;
            };
            let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) else {
                continue;
            };
            let Some(server) = v["mcpServers"]["powercontext"].as_object_mut() else {
                continue;
            };
            let replace = match server.get("http_headers_helper") {
                None => true,
                Some(Value::String(h)) => h != &helper && h.contains("mcp_headers.py"),
                Some(_) => false,
            };
            if replace {
                server.insert("http_headers_helper".to_owned(), Value::from(helper.clone()));
                let mut new = serde_json::to_vec_pretty(&v)?;
                new.push(b'\n');
                out.push((path, new));
            }
        }
    }
    Ok(out)
}
