//! `powercontext-hooks doctor [host…]`: evidence in four tiers — installed (our files, the hook
//! executable, the host version), activated (the host itself lists and trusts our plugin: plugin
//! lists, Codex hook trust, `pi list`, DSH's dumped config, an OpenCode activation nonce),
//! Server-ready (live, ready, token accepted, scope resolves) and working (our hook executable run
//! end to end with a synthetic payload, capture off). Every line is ✓/!/✗ with a one-line fix;
//! settings are shown with their origin. It never prints a token, a scope id or context text,
//! and it is never a substitute for the real-host tests.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Args;
use powercontext_hooks_core::config::{self, Layers, Settings};
use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::endpoint::BaseUrl;
use powercontext_hooks_core::http::Transport;
use powercontext_hooks_core::journal;
use powercontext_hooks_core::official;
use powercontext_hooks_core::scope::ScopeQuery;
use powercontext_hooks_core::state::StateDir;
use powercontext_hooks_core::{ledger, spool, state};
use serde::Serialize;
use serde_json::Value;

use crate::hosts::installer;
use crate::installer::checks::{Check, Report, Status, Tier};
use crate::installer::contract::Activation;
use crate::support::host_cli::HostCli;
use crate::support::install::{self, Host, HostExt, Manifest, digest, value_digest};
use crate::support::jsonc;
use crate::support::paths::{Locate, Paths, check_hook_exe};
use crate::support::report::{self, SettingRow};

/// `doctor [host…]`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Hosts to check (default: every host set up by powercontext-hooks).
    #[arg(value_parser = install::host_arg())]
    pub hosts: Vec<Host>,
    /// Project directory used for scope resolution and the synthetic prompt (default: here).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub locate: Locate,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What `doctor` says: every host's settings and checks.
#[derive(Serialize)]
struct Doctored {
    ok: bool,
    hosts: Vec<HostResult>,
    /// Why there was nothing to check.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'static str>,
}

#[derive(Serialize)]
struct HostResult {
    host: &'static str,
    ok: bool,
    settings: Vec<SettingRow>,
    checks: Vec<Check>,
}

impl report::Report for Doctored {
    fn exit_code(&self) -> ExitCode {
        if self.ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    }
}

impl std::fmt::Display for Doctored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(e) = self.error {
            return writeln!(f, "✗ {e}");
        }
        for h in &self.hosts {
            writeln!(f, "{}", h.host)?;
            let mut tier = None;
            for c in &h.checks {
                if tier != Some(c.tier) {
                    tier = Some(c.tier);
                    writeln!(f, "  {}", c.tier)?;
                    if c.tier == Tier::ServerReady {
                        for s in &h.settings {
                            writeln!(f, "    · {} = {}  ({})", s.name, s.value, s.origin)?;
                        }
                    }
                }
                let mark = match c.status {
                    Status::Ok => "✓",
                    Status::Warn => "!",
                    Status::Fail => "✗",
                };
                // Details quote host CLI output and paths: never raw control characters.
                let detail = crate::support::textstyle::terminal_safe(&c.detail);
                writeln!(f, "    {mark} {:<18} {detail}", c.name)?;
                if c.status != Status::Ok
                    && let Some(fix) = &c.fix
                {
                    writeln!(f, "      fix: {}", crate::support::textstyle::terminal_safe(fix))?;
                }
            }
        }
        writeln!(f, "{}", if self.ok { "result: ok" } else { "result: FAILED" })
    }
}

/// The project directory doctor checks: `--cwd` made absolute (the hook is run in it and is also
/// told it, so a relative one would be resolved twice), else here. A missing one is a wrong
/// command line, not a broken hook.
fn doctor_cwd(flag: Option<&Path>) -> Result<PathBuf> {
    match flag {
        Some(d) if !d.is_dir() => bail!("--cwd {} is not a directory", d.display()),
        Some(d) => Ok(std::path::absolute(d)?),
        None => Ok(std::env::current_dir()?),
    }
}

/// Runs `doctor`.
pub fn doctor(args: &DoctorArgs) -> Result<ExitCode> {
    let paths = Paths::resolve(&args.locate)?;
    let cwd = doctor_cwd(args.cwd.as_deref())?;
    let mut hosts = args.hosts.clone();
    if hosts.is_empty() {
        hosts = Host::ALL
            .into_iter()
            .filter(|h| {
                install::manifest_path(&paths.state_root, *h).exists()
                    || official::clients_entry(*h, &paths.env).is_some()
            })
            .collect();
    }
    if hosts.is_empty() {
        let nothing = Doctored {
            ok: false,
            hosts: Vec::new(),
            error: Some(
                "no host is set up by powercontext-hooks; run `powercontext-hooks setup <host>` first",
            ),
        };
        return report::emit(&nothing, args.json);
    }
    let hosts: Vec<HostResult> = hosts
        .into_iter()
        .map(|host| {
            let r = check_host(host, &paths, &args.locate, &cwd);
            HostResult {
                host: host.as_str(),
                ok: r.passed(),
                settings: r.settings,
                checks: r.checks,
            }
        })
        .collect();
    let ok = hosts.iter().all(|h| h.ok);
    report::emit(
        &Doctored {
            ok,
            hosts,
            error: None,
        },
        args.json,
    )
}

/// The host's CLI and doctor's `host version` (or `host CLI`) line for it.
fn locate_cli(host: Host, locate: &Locate, paths: &Paths, r: &mut Report) -> Option<HostCli> {
    match HostCli::locate(host, locate.host_cli.as_deref(), &paths.env) {
        Ok(cli) => match cli.version() {
            Ok(v) if host.tested_versions().contains(&v.as_str()) => {
                r.ok(
                    Tier::Installed,
                    "host version",
                    format!("{} {v} (tested)", cli.path.display()),
                );
                Some(cli)
            }
            Ok(v) => {
                r.warn(
                    Tier::Installed,
                    "host version",
                    format!("{} {v} is not covered by our tests", cli.path.display()),
                    format!("tested: {}", host.tested_versions().join(", ")),
                );
                Some(cli)
            }
            Err(e) => {
                r.fail(
                    Tier::Installed,
                    "host version",
                    format!("{e:#}"),
                    format!("reinstall {}", host.as_str()),
                );
                None
            }
        },
        Err(e) => {
            r.fail(
                Tier::Installed,
                "host CLI",
                format!("{e:#}"),
                format!("install {} or pass --host-cli", host.as_str()),
            );
            None
        }
    }
}

fn check_host(host: Host, paths: &Paths, locate: &Locate, cwd: &Path) -> Report {
    let mut r = Report::default();
    let setup_cmd = format!("powercontext-hooks setup {}", host.as_str());

    // ---- installed
    let (manifest, hook_exe, exe_ok) = check_installed(host, paths, &setup_cmd, &mut r);
    let cli = if host.cli_name().is_empty() {
        r.warn(
            Tier::Installed,
            "host version",
            format!("{} has no CLI to check", host.spec().title),
            "none: this integration is Not validated in a real host",
        );
        Some(HostCli::none(host))
    } else {
        locate_cli(host, locate, paths, &mut r)
    };
    check_host_entry(manifest.as_ref(), &setup_cmd, &mut r);

    // ---- activated
    if let Some(cli) = &cli {
        let (manifest, setup_cmd) = (manifest.as_ref(), setup_cmd.as_str());
        installer(host).check_activated(
            &Activation {
                cli,
                manifest,
                paths,
                setup_cmd,
            },
            &mut r,
        );
    } else {
        r.fail(
            Tier::Activated,
            "plugin enabled",
            "cannot ask the host (no CLI)",
            format!("install {}", host.as_str()),
        );
    }

    // ---- server-ready
    let settings = match paths.settings(host, None) {
        Ok(s) => Some(s),
        Err(e) => {
            r.fail(
                Tier::ServerReady,
                "configuration",
                format!("{e:#}"),
                "fix that setting (see `powercontext-hooks --help`)",
            );
            None
        }
    };
    let unknown = unknown_variables(&paths.env);
    if !unknown.is_empty() {
        r.warn(
            Tier::ServerReady,
            "variables",
            format!("set, but no hook or installer reads them: {}", unknown.join(", ")),
            "check their spelling against docs/configuration.md, or unset them",
        );
    }
    let server_ok = settings
        .as_ref()
        .is_some_and(|s| check_server(host, s, paths, cwd, &mut r));

    // ---- working
    if exe_ok && settings.is_some() {
        check_working(host, &hook_exe, cwd, server_ok, &mut r);
    } else {
        r.fail(
            Tier::Working,
            "hook round trip",
            "skipped: executable or configuration broken",
            "fix the lines above",
        );
    }
    check_state(paths, &mut r);
    check_firing(host, paths, &mut r);
    r
}

/// The variables set in `env` under our own names (`POWERCONTEXT_HOOKS_*`, `POWERCONTEXT_<HOST>_*`)
/// that are no variable of the registry ([`powercontext_hooks_core::variables`]): a misspelt one
/// is otherwise silently ignored. Other `POWERCONTEXT_*` names belong to the Server and the
/// official tools, which read variables this registry does not list, so they are never flagged.
fn unknown_variables(env: &powercontext_hooks_core::env::Env) -> Vec<String> {
    use powercontext_hooks_core::variables;
    let parts: Vec<&str> = powercontext_hooks_core::host::Integration::ALL
        .iter()
        .map(|h| h.env_part())
        .collect();
    let ours = |name: &str| {
        name.strip_prefix(variables::PREFIX).is_some_and(|rest| {
            std::iter::once("HOOKS")
                .chain(parts.iter().copied())
                .any(|p| rest.strip_prefix(p).is_some_and(|tail| tail.starts_with('_')))
        })
    };
    env.names()
        .filter(|n| ours(n) && variables::find(n, &parts).is_none())
        .map(str::to_owned)
        .collect()
}

/// Doctor's installed tier from files alone: the manifest (or the official installer's record),
/// our plugin files, the hook executable. Returns the manifest, the hook executable and whether
/// it runs.
pub(crate) fn check_installed(
    host: Host,
    paths: &Paths,
    setup_cmd: &str,
    r: &mut Report,
) -> (Option<Manifest>, PathBuf, bool) {
    let manifest = match install::load_manifest(&paths.state_root, host) {
        Ok(Some(m)) => {
            r.ok(
                Tier::Installed,
                "ownership manifest",
                install::manifest_path(&paths.state_root, host)
                    .display()
                    .to_string(),
            );
            Some(m)
        }
        Ok(None) if official::clients_entry(host, &paths.env).is_some() => {
            r.warn(
                Tier::Installed,
                "ownership manifest",
                "installed by the official `powercontext setup` (clients.json lists it); checked as found",
                "nothing to do; powercontext-hooks uninstall leaves it alone",
            );
            None
        }
        Ok(None) => {
            r.fail(
                Tier::Installed,
                "ownership manifest",
                "not set up by powercontext-hooks",
                setup_cmd,
            );
            None
        }
        Err(e) => {
            r.fail(
                Tier::Installed,
                "ownership manifest",
                format!("{e:#}"),
                "remove the manifest, then run setup again",
            );
            None
        }
    };
    if let Some(m) = &manifest {
        let bad: Vec<String> = m
            .files
            .iter()
            .filter(|f| {
                install::read_opt(&f.path)
                    .ok()
                    .flatten()
                    .is_none_or(|b| digest(&b) != f.sha256)
            })
            .map(|f| f.path.display().to_string())
            .collect();
        if bad.is_empty() {
            r.ok(
                Tier::Installed,
                "plugin files",
                format!("{} files as setup wrote them", m.files.len()),
            );
        } else {
            r.fail(
                Tier::Installed,
                "plugin files",
                format!("missing or changed: {}", bad.join(", ")),
                setup_cmd,
            );
        }
    }
    let hook_exe = manifest
        .as_ref()
        .map_or_else(|| paths.hook_exe(host), |m| m.hook_exe.clone());
    let exe_ok = match check_hook_exe(&hook_exe) {
        Ok(()) => {
            r.ok(Tier::Installed, "hook executable", hook_exe.display().to_string());
            if let Some(m) = &manifest {
                check_copy(host, m, &paths.hook_exe(host), setup_cmd, r);
            }
            true
        }
        Err(e) => {
            r.fail(
                Tier::Installed,
                "hook executable",
                format!("{e:#}"),
                format!(
                    "{setup_cmd} --bin-dir <dir with powercontext-hook-{}>",
                    host.as_str()
                ),
            );
            false
        }
    };
    (manifest, hook_exe, exe_ok)
}

/// The copy setup made of the hook executable against the one beside this CLI (or in
/// `--bin-dir`): a different build means the host runs something other than what this CLI
/// would install, and setup again brings it up to date.
fn check_copy(host: Host, m: &Manifest, beside: &Path, setup_cmd: &str, r: &mut Report) {
    let Some(copy) = &m.executable else {
        // Set up before setup made its own copy: the host runs the executable where it was.
        if let Some(tree) = crate::support::exe_copy::build_tree(&m.hook_exe) {
            r.warn(
                Tier::Installed,
                "hook copy",
                format!(
                    "{} runs {} inside the build tree {}: `cargo clean` or a moved clone breaks it silently",
                    host.as_str(),
                    m.hook_exe.display(),
                    tree.display()
                ),
                format!("{setup_cmd} (copies it into setup's own folder)"),
            );
        }
        return;
    };
    let now = crate::support::exe_copy::digest_of(&copy.path);
    if now.as_ref() != Some(&copy.sha256) {
        r.fail(
            Tier::Installed,
            "hook copy",
            format!("{} changed since setup copied it", copy.path.display()),
            setup_cmd.to_owned(),
        );
        return;
    }
    let ours = env!("CARGO_PKG_VERSION");
    let beside_digest = crate::support::exe_copy::digest_of(beside);
    if m.version != ours || beside_digest.as_ref().is_some_and(|d| d != &copy.sha256) {
        let why = if m.version == ours {
            format!(
                "a different build of powercontext-hook-{} than {}",
                host.as_str(),
                beside.display()
            )
        } else {
            format!("copied by powercontext-hooks {}; this is {ours}", m.version)
        };
        r.warn(
            Tier::Installed,
            "hook copy",
            format!("{host} runs {}: {why}", copy.path.display(), host = host.as_str()),
            format!("{setup_cmd} (replaces the copy with this build's)"),
        );
    } else {
        r.ok(
            Tier::Installed,
            "hook copy",
            "the same build as this powercontext-hooks",
        );
    }
}

/// Our entry in the host's own config (OpenCode's MCP entry, Claude Code's status line).
pub(crate) fn check_host_entry(m: Option<&Manifest>, setup_cmd: &str, r: &mut Report) {
    if let Some(o) = m.and_then(|m| m.settings_hooks.as_ref()) {
        match crate::hosts::settings_hooks::missing_events(o) {
            Ok(missing) if missing.is_empty() => r.ok(
                Tier::Installed,
                "hook entries",
                format!("{} hook(s) in {}", o.entries.len(), o.path.display()),
            ),
            Ok(missing) => r.fail(
                Tier::Installed,
                "hook entries",
                format!(
                    "{} is missing (or changed) our {}",
                    o.path.display(),
                    missing.join(", ")
                ),
                setup_cmd,
            ),
            Err(err) => r.fail(
                Tier::Installed,
                "hook entries",
                format!("{} cannot be read: {err:#}", o.path.display()),
                format!(
                    "fix {} (its host cannot read it either), then {setup_cmd}",
                    o.path.display()
                ),
            ),
        }
    }
    if let Some(e) = m.and_then(|m| m.host_entry.as_ref()) {
        // A file the host cannot parse any more is not "missing our entry": setup would refuse it
        // too, so the fix is the file itself.
        let now = install::read_opt(&e.path).and_then(|b| match b {
            None => Ok(None),
            Some(b) => {
                let text = String::from_utf8(b).map_err(|_| anyhow::anyhow!("it is not UTF-8"))?;
                jsonc::get(&text, &e.parent, &e.key)
            }
        });
        // A root member is Claude Code's status line: optional, so its loss is only a warning.
        let (name, optional) = if e.parent.is_empty() {
            ("status line", true)
        } else {
            ("mcp entry", false)
        };
        let member = e.member();
        let now = match now {
            Ok(now) => now,
            Err(err) => {
                let path = e.path.display();
                return r.fail(
                    Tier::Installed,
                    name,
                    format!("{path} cannot be read: {err:#}"),
                    format!("fix {path} (its host cannot read it either), then {setup_cmd}"),
                );
            }
        };
        match now {
            Some(v) if value_digest(&v) == e.sha256 => {
                r.ok(Tier::Installed, name, format!("{member} in {}", e.path.display()))
            }
            Some(_) => r.warn(
                Tier::Installed,
                name,
                format!("{member} in {} was changed since setup", e.path.display()),
                setup_cmd,
            ),
            None if optional => r.warn(
                Tier::Installed,
                name,
                format!("{member} is missing from {}", e.path.display()),
                format!("{setup_cmd} --statusline"),
            ),
            None => r.fail(
                Tier::Installed,
                name,
                format!("{member} is missing from {}", e.path.display()),
                setup_cmd,
            ),
        }
    }
}

fn check_server(host: Host, s: &Settings, paths: &Paths, cwd: &Path, r: &mut Report) -> bool {
    r.settings = report::setting_rows(s);
    check_sources(host, s, paths, r);
    let deadline = Deadline::after(Duration::from_secs(10));
    let transport = match Transport::new(
        s.server_url.value.clone(),
        s.authorization.value.clone(),
        Duration::from_secs(3),
        deadline,
        &paths.env,
    ) {
        Ok(t) => t,
        Err(var) => {
            r.fail(
                Tier::ServerReady,
                "transport",
                format!("`{var}` is not a usable proxy"),
                format!("fix or unset {var}"),
            );
            return false;
        }
    };
    if !check_health(&transport, r) {
        return false;
    }
    let token_hint = format!(
        "powercontext-hooks setup {} --token-env VAR (the Server's POWERCONTEXT_SERVER_AUTH_TOKEN)",
        host.as_str()
    );
    if !check_auth(s, &transport, &token_hint, r) {
        return false;
    }
    if !host.spec().explicit.native_tools && !check_mcp(host, &transport, &token_hint, r) {
        return false;
    }
    check_scope(host, s, cwd, &transport, r)
}

/// What doctor suggests when the Server does not answer as it should.
const START_HINT: &str = "start the Server (`powercontext server run`) or fix server_url";

/// The Server's liveness and readiness probes, each answering 200.
fn check_health(transport: &Transport, r: &mut Report) -> bool {
    for (name, path) in [("live", "/health/live"), ("ready", "/health/ready")] {
        match transport.get(path) {
            Ok(reply) if reply.status == 200 => r.ok(Tier::ServerReady, name, format!("GET {path} 200")),
            Ok(reply) => {
                r.fail(
                    Tier::ServerReady,
                    name,
                    format!("GET {path} answered {}", reply.status),
                    START_HINT,
                );
                return false;
            }
            Err(e) => {
                r.fail(Tier::ServerReady, name, format!("GET {path}: {e}"), START_HINT);
                return false;
            }
        }
    }
    true
}

/// Whether the Server takes our token (or needs none).
fn check_auth(s: &Settings, transport: &Transport, token_hint: &str, r: &mut Report) -> bool {
    match transport.get("/v1/scopes/default") {
        Ok(reply) if reply.status == 200 => r.ok(
            Tier::ServerReady,
            "auth accepted",
            if s.authorization.value.is_some() {
                "token accepted"
            } else {
                "no token needed"
            },
        ),
        Ok(reply) if reply.status == 401 || reply.status == 403 => {
            let detail = if s.authorization.value.is_some() {
                format!("the Server rejected the token ({})", reply.status)
            } else {
                format!("the Server requires a token ({})", reply.status)
            };
            r.fail(Tier::ServerReady, "auth accepted", detail, token_hint);
            return false;
        }
        Ok(reply) => {
            r.fail(
                Tier::ServerReady,
                "auth accepted",
                format!("GET /v1/scopes/default answered {}", reply.status),
                START_HINT,
            );
            return false;
        }
        Err(e) => {
            r.fail(Tier::ServerReady, "auth accepted", format!("{e}"), START_HINT);
            return false;
        }
    }
    true
}

/// Whether the scope a hook in `cwd` would use resolves (and, when configured, exists).
fn check_scope(host: Host, s: &Settings, cwd: &Path, transport: &Transport, r: &mut Report) -> bool {
    let query = ScopeQuery::for_event(
        host,
        s.scope_id.value.as_deref(),
        None,
        cwd,
        transport.deadline(),
        powercontext_hooks_core::workspace::Discovery::Git,
    );
    match query.resolve(transport) {
        // A configured scope id "resolves" to itself: whether the Server has it is the question.
        Ok(scope)
            if s.scope_id.value.is_some()
                && transport
                    .get(&format!(
                        "/v1/scopes/{}",
                        crate::support::ops::path_segment(&scope)
                    ))
                    .is_ok_and(|reply| reply.status == 404) =>
        {
            r.fail(
                Tier::ServerReady,
                "scope resolves",
                "the configured scope id does not exist on this Server",
                format!(
                    "create it with the official CLI, or fix scope_id ({})",
                    s.scope_id.origin
                ),
            );
            false
        }
        Ok(_) => {
            r.ok(
                Tier::ServerReady,
                "scope resolves",
                format!("for {}", cwd.display()),
            );
            true
        }
        Err(f) => {
            r.fail(
                Tier::ServerReady,
                "scope resolves",
                format!(
                    "{}{}",
                    f.outcome.as_str(),
                    f.http_status.map(|s| format!(" ({s})")).unwrap_or_default()
                ),
                "check scope_id, or the Server's scope bindings",
            );
            false
        }
    }
}

/// For a host whose explicit operations are the Server's MCP tools: an MCP `initialize` on
/// `/mcp/` with the token the host's headers helper sends (the hook's). Accepted is what the
/// host's own MCP client needs; a rejected token fails; anything else is a warning.
fn check_mcp(host: Host, transport: &Transport, token_hint: &str, r: &mut Report) -> bool {
    let init = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                   "clientInfo": {"name": "powercontext-hooks-doctor", "version": env!("CARGO_PKG_VERSION")}},
    });
    match transport.post_json_accepting("/mcp/", &init, "application/json, text/event-stream") {
        Ok(reply) if reply.status == 200 => {
            r.ok(
                Tier::ServerReady,
                "mcp connects",
                "MCP initialize on /mcp/ 200 with the token",
            );
            true
        }
        Ok(reply) if reply.status == 401 || reply.status == 403 => {
            r.fail(
                Tier::ServerReady,
                "mcp connects",
                format!("the Server's MCP endpoint rejected the token ({})", reply.status),
                token_hint,
            );
            false
        }
        Ok(reply) => {
            r.warn(
                Tier::ServerReady,
                "mcp connects",
                format!("MCP initialize on /mcp/ answered {}", reply.status),
                format!(
                    "{}'s explicit operations are the Server's MCP tools: check the Server's MCP endpoint",
                    host.as_str()
                ),
            );
            true
        }
        Err(e) => {
            r.warn(
                Tier::ServerReady,
                "mcp connects",
                format!("MCP initialize on /mcp/: {e}"),
                "check the Server's MCP endpoint",
            );
            true
        }
    }
}

/// Where the URL and token came from: a warning when two sources name different Servers, when
/// the official CLI's saved token is present but not used, and for consented plain `http://`.
fn check_sources(host: Host, s: &Settings, paths: &Paths, r: &mut Report) {
    let file = paths.load_config().ok().flatten();
    let file_ref = match (&paths.config_path, &file) {
        (Some(p), Some(f)) => Some((p.as_path(), f)),
        _ => None,
    };
    let candidates = config::server_url_candidates(&Layers {
        host,
        env: &paths.env,
        flags: None,
        file: file_ref,
    });
    let chosen = &s.server_url.value;
    let others: Vec<String> = candidates
        .iter()
        .filter(|(o, _)| *o != s.server_url.origin)
        .filter(|(_, v)| BaseUrl::parse_insecure(v).map_or(true, |u| !official::same_endpoint(&u, chosen)))
        .map(|(o, v)| format!("{o} says {}", v.trim()))
        .collect();
    if others.is_empty() {
        r.ok(
            Tier::ServerReady,
            "url sources agree",
            format!("{} source(s) set server_url", candidates.len()),
        );
    } else {
        r.warn(
            Tier::ServerReady,
            "url sources agree",
            format!(
                "{chosen} ({}) wins, but {}",
                s.server_url.origin,
                others.join("; ")
            ),
            "remove or align the source you do not mean (environment > powercontext-hooks config > official CLI files)",
        );
    }
    if let Some((path, why)) = official::clients_problem(&paths.env) {
        r.warn(
            Tier::ServerReady,
            "official clients.json",
            format!("{} {why}: its server URLs are not used", path.display()),
            "fix or remove it, or run the official `powercontext setup` again",
        );
    }
    if !chosen.is_https() && !chosen.is_loopback() {
        r.warn(
            Tier::ServerReady,
            "plain http",
            format!("{chosen} is remote and unencrypted; allowed only by the consent the official CLI recorded for it"),
            "use https://",
        );
    }
    if s.authorization.value.is_none()
        && let (Some(path), official::Credential::Refused(why)) =
            official::credential(host, &paths.env, chosen)
    {
        r.warn(
            Tier::ServerReady,
            "saved token",
            format!("{} is not used: it {why}", path.display()),
            match why {
                official::CredentialProblem::OtherServer => format!(
                    "powercontext setup {} --server-url {chosen} (saves a token for this Server)",
                    host.as_str()
                ),
                _ => format!(
                    "chmod 600 {} (a regular file owned by you), or set the token in the environment",
                    path.display()
                ),
            },
        );
    }
}

/// One synthetic hook run: exit status (None past the deadline), stdout, stderr.
type HookRun = (Option<std::process::ExitStatus>, String, String);

fn run_hook(
    exe: &Path,
    args: &[&str],
    payload: &Value,
    capture_var: &str,
    cwd: &Path,
) -> std::io::Result<HookRun> {
    let started = Instant::now();
    let mut child = Command::new(exe)
        .args(args)
        .env(capture_var, "0")
        // The doctor's own runs are not the host firing.
        .env(journal::JOURNAL_VAR, "off")
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(payload.to_string().as_bytes());
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let mut so = child.stdout.take();
    let mut se = child.stderr.take();
    std::thread::spawn(move || {
        let mut o = String::new();
        let mut e = String::new();
        if let Some(s) = so.as_mut() {
            let _ = s.read_to_string(&mut o);
        }
        if let Some(s) = se.as_mut() {
            let _ = s.read_to_string(&mut e);
        }
        let _ = tx.send((o, e));
    });
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break Some(s);
        }
        if started.elapsed() > Duration::from_secs(15) {
            crate::support::host_cli::kill_group(&child);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let (out, err) = rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
    Ok((status, out, err))
}

/// The synthetic calls for a host: (arguments, stdin payload), run in order.
fn synthetic_calls(host: Host, cwd: &Path) -> Vec<(Vec<&'static str>, Value)> {
    // A fresh session each run: hosts that recall once per turn must not skip the doctor's.
    let session = format!(
        "powercontext-hooks-doctor-{}-{}",
        std::process::id(),
        state::now_millis()
    );
    let prompt = "powercontext-hooks doctor: synthetic prompt";
    installer(host).synthetic_calls(&cwd.display().to_string(), &session, prompt)
}

/// The length of the context a host's answer line carries, if any.
fn context_len(host: Host, stdout: &str) -> Option<usize> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| installer(host).context(&v).as_str().map(str::len))
}

fn check_working(host: Host, exe: &Path, cwd: &Path, server_ok: bool, r: &mut Report) {
    let capture_var = powercontext_hooks_core::variables::per_host(
        host.env_part(),
        powercontext_hooks_core::variables::host::CAPTURE_PROMPTS,
    );
    let started = Instant::now();
    let mut outcomes: Vec<String> = Vec::new();
    let mut context = None;
    for (args, payload) in synthetic_calls(host, cwd) {
        let (status, out, err) = match run_hook(exe, &args, &payload, &capture_var, cwd) {
            Ok(run) => run,
            Err(e) => {
                r.fail(
                    Tier::Working,
                    "hook round trip",
                    format!("cannot run {}: {e}", exe.display()),
                    "reinstall powercontext-hooks",
                );
                return;
            }
        };
        let Some(status) = status else {
            r.fail(
                Tier::Working,
                "hook round trip",
                "the hook did not finish within 15 s",
                "report a bug: hooks must stay within their budget",
            );
            return;
        };
        if !status.success() {
            r.fail(
                Tier::Working,
                "hook round trip",
                format!("exit status {status} (hooks must exit 0)"),
                "reinstall powercontext-hooks",
            );
            return;
        }
        outcomes.extend(
            err.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter_map(|d| {
                    let o = d["outcome"].as_str()?.to_owned();
                    Some(match d["http_status"].as_u64() {
                        Some(s) => format!("{o} ({s})"),
                        None => o,
                    })
                }),
        );
        context = context.or_else(|| context_len(host, &out));
    }
    let elapsed = started.elapsed().as_millis();
    let empty = outcomes.iter().any(|o| o.starts_with("empty"));
    let others: Vec<&String> = outcomes.iter().filter(|o| !o.starts_with("empty")).collect();
    if others.is_empty() && (context.is_some() || empty) {
        let what = match context {
            Some(n) => format!("context ready ({n} bytes)"),
            None => "empty context".to_owned(),
        };
        r.ok(
            Tier::Working,
            "hook round trip",
            format!("prepare answered, {what}, in {elapsed} ms (capture off)"),
        );
    } else {
        let detail = if others.is_empty() {
            "the hook answered nothing and reported nothing".to_owned()
        } else {
            format!(
                "the hook reported: {}",
                others.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            )
        };
        let fix = if server_ok {
            "see the diagnostics above; run the hook by hand with the same environment"
        } else {
            "fix the server-ready lines first"
        };
        r.fail(Tier::Working, "hook round trip", detail, fix);
    }
}

/// A host whose last run is older than this, while another host ran since, is reported.
const QUIET_DAYS: u64 = 7;

/// A setup younger than this that never fired is waiting for its first prompt, not broken.
const FRESH_SETUP_MS: u64 = 24 * 3_600_000;

/// Whether the host's hook is really running on the user's prompts: its last journal record
/// against the time of setup (the manifest's mtime) and the other hosts' activity.
fn check_firing(host: Host, paths: &Paths, r: &mut Report) {
    if journal::disabled(&paths.env) {
        r.warn(
            Tier::Working,
            "firing",
            format!(
                "the run journal is off ({}), so firing cannot be shown",
                journal::JOURNAL_VAR
            ),
            format!("unset {}", journal::JOURNAL_VAR),
        );
        return;
    }
    let now = state::now_millis();
    let setup_at = std::fs::metadata(install::manifest_path(&paths.state_root, host))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let records = journal::read(&paths.state_root, host);
    let (causes, fix) = installer(host).silence_causes();
    let name = host.as_str();
    let Some(last) = records.last().filter(|l| setup_at.is_none_or(|s| l.at >= s)) else {
        let since = setup_at.map_or_else(String::new, |s| {
            format!(" (set up {})", crate::commands::activity::ago(now, s))
        });
        // A fresh setup that has never fired is the normal first state, not a fault: the user
        // has likely not sent a prompt yet. Only a quiet day after setup is worth a warning.
        let fresh = setup_at.is_some_and(|s| now.saturating_sub(s) < FRESH_SETUP_MS);
        if records.is_empty() && fresh {
            r.ok(
                Tier::Working,
                "firing",
                format!(
                    "waiting for the first prompt{since}: send one in {name}, then run doctor again; if it still says this after a prompt, likely: {causes} (fix: {fix})"
                ),
            );
            return;
        }
        r.warn(
            Tier::Working,
            "firing",
            format!(
                "{name} has not run our hook since setup{since}; if you have used {name} since, likely: {causes}"
            ),
            fix,
        );
        return;
    };
    let quiet_ms = QUIET_DAYS * 86_400_000;
    let others_recent = journal::read_all(&paths.state_root)
        .iter()
        .rev()
        .find(|o| o.host != name)
        .filter(|o| o.at > last.at && now.saturating_sub(o.at) < quiet_ms)
        .map(|o| (o.host.clone(), o.at));
    if now.saturating_sub(last.at) >= quiet_ms
        && let Some((other, at)) = others_recent
    {
        r.warn(
            Tier::Working,
            "firing",
            format!(
                "{name} last ran our hook {} while {other} ran {}; likely: {causes}",
                crate::commands::activity::ago(now, last.at),
                crate::commands::activity::ago(now, at)
            ),
            fix,
        );
        return;
    }
    let since = now.saturating_sub(u64::try_from(journal::WINDOW.as_millis()).unwrap_or(u64::MAX));
    let day: Vec<_> = records.iter().filter(|x| x.at >= since).collect();
    r.ok(
        Tier::Working,
        "firing",
        format!(
            "last ran {} ({} {}); {} run(s) in 24 h, {} failed",
            crate::commands::activity::ago(now, last.at),
            // Words read from a file on disk: escaped as `status` shows them.
            crate::support::textstyle::terminal_safe(&last.event),
            crate::support::textstyle::terminal_safe(&last.outcome),
            day.len(),
            day.iter().filter(|x| x.failed()).count()
        ),
    );
}

fn check_state(paths: &Paths, r: &mut Report) {
    let dir = StateDir::at(paths.state_root.clone());
    for problem in dir.inspect(spool::DIR) {
        match problem {
            state::DirProblem::LooseMode => r.warn(
                Tier::Working,
                "state directory permissions",
                problem.word().to_owned(),
                problem.fix(),
            ),
            _ => r.fail(
                Tier::Working,
                "state directory permissions",
                format!("{}: hooks run without local state", problem.word()),
                problem.fix(),
            ),
        }
    }
    let (corrupt, unsafe_files) = spool::set_aside_counts(&dir);
    if corrupt + unsafe_files > 0 {
        r.warn(
            Tier::Working,
            "spool entries set aside",
            format!("{corrupt} unreadable, {unsafe_files} owned by another user or writable by others"),
            "never replayed: delete spool/*.corrupt and spool/*.unsafe in the state directory",
        );
    }
    let pending = ledger::load(&dir);
    let spooled = spool::list(&dir);
    match (pending, spooled) {
        (Ok(p), Ok(s)) => {
            let sum = spool::summarize(&s, state::now_millis());
            let detail = format!(
                "{} pending flush(es), {} spooled capture(s){}",
                p.len(),
                sum.entries,
                sum.oldest_age_secs
                    .map(|a| format!(", oldest {a} s"))
                    .unwrap_or_default()
            );
            if sum.entries > 0 || !p.is_empty() {
                r.warn(
                    Tier::Working,
                    "ledger and spool",
                    detail,
                    "powercontext-hooks flush (delivers them now)",
                );
            } else {
                r.ok(Tier::Working, "ledger and spool", detail);
            }
        }
        (Err(e), _) => r.fail(
            Tier::Working,
            "ledger and spool",
            format!("ledger unreadable: {}", e.detail()),
            "powercontext-hooks status",
        ),
        (_, Err(e)) => r.fail(
            Tier::Working,
            "ledger and spool",
            format!("spool unreadable: {e}"),
            "powercontext-hooks status",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_variable_is_named_and_every_real_one_is_known() {
        use powercontext_hooks_core::env::Env;
        let env = Env::from_pairs([
            ("POWERCONTEXT_CLAUDE_SERVERURL", "http://127.0.0.1:1"),
            ("POWERCONTEXT_GEMINI_SCOPE_ID", "s"),
            ("POWERCONTEXT_KIMI_TOKEN", "t"),
            ("POWERCONTEXT_HOOKS_SPOOL_MAX_BYTES", "9"),
            ("POWERCONTEXT_HOOKS_JOURNL", "off"),
            ("XPOWERCONTEXT_FOO", "1"),
            // The Server's and the official tools' own names are theirs to check.
            ("POWERCONTEXT_SERVER_DATABASE_URL", "x"),
            ("POWERCONTEXT_CLIENT_PROFILE", "x"),
        ]);
        assert_eq!(
            unknown_variables(&env),
            ["POWERCONTEXT_CLAUDE_SERVERURL", "POWERCONTEXT_HOOKS_JOURNL"]
        );
        // Every variable a host's settings row can name (doctor's listing) is a known one.
        for host in powercontext_hooks_core::host::Integration::ALL {
            let names = powercontext_hooks_core::config::EnvNames::for_host(host);
            let all: Vec<(String, String)> = [
                names.server_url,
                names.authorization,
                names.token,
                names.scope_id,
                names.capture_prompts,
                names.capture_secrets,
                names.flush_on_capture,
                names.request_timeout,
                names.budget,
                names.flush_max_calls,
                names.max_bytes,
                names.bootstrap,
                names.bootstrap_max_bytes,
            ]
            .concat()
            .into_iter()
            .filter(|n| n.starts_with("POWERCONTEXT"))
            .map(|n| (n, "v".to_owned()))
            .collect();
            assert!(all.len() >= 15, "{host}: {all:?}");
            assert_eq!(
                unknown_variables(&Env::from_pairs(all)),
                Vec::<String>::new(),
                "{host}"
            );
        }
    }

    #[test]
    fn doctor_cwd_is_absolute_and_must_exist() {
        let here = std::env::current_dir().unwrap();
        assert_eq!(doctor_cwd(None).unwrap(), here);
        assert_eq!(doctor_cwd(Some(Path::new("."))).unwrap(), here.join("."));
        assert!(doctor_cwd(Some(Path::new("src"))).unwrap().is_absolute());
        let err = doctor_cwd(Some(Path::new("/no/such/project"))).unwrap_err();
        assert!(
            err.to_string()
                .contains("--cwd /no/such/project is not a directory"),
            "{err}"
        );
    }
}
