//! Codex's installer: its plugin templates (with our MCP headers helper), the local marketplace
//! registration through `codex plugin …`, hook trust through `codex app-server`, and doctor's
//! synthetic `UserPromptSubmit`. It never trusts a hook that does not run our executable.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use powercontext_hooks_core::env::Env;
use serde_json::{Value, json};

use super::common::{argv, channel_context, headers_helper, mcp_with_helper, prompt_event, table_home};
use super::marketplace::{Market, enabled_in};
use crate::installer::checks::{Report, Tier};
use crate::installer::contract::{Activation, Calls, Installer, Undo, describe_calls, run_all};
use crate::installer::plan::{Action, Plan, SetupArgs, Step};
use crate::support::host_cli::{HostCli, kill_group};
use crate::support::install::{self, Host, MARKETPLACE, Manifest, PLUGIN_ID, Registrations};
use crate::support::paths::Paths;

pub(super) struct Codex;

/// Codex's name for an MCP server's headers helper.
pub(crate) const HELPER_FIELD: &str = "http_headers_helper";

const MARKET: Market = Market {
    marketplace,
    enabled,
    remove_plugin: &["plugin", "remove", PLUGIN_ID, "--json"],
    remove_marketplace: &["plugin", "marketplace", "remove", MARKETPLACE, "--json"],
    enable_fix: None,
    remove_unlisted: true,
};

impl Installer for Codex {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                ".agents/plugins/marketplace.json",
                include_str!("../../../../installers/codex/.agents/plugins/marketplace.json"),
            ),
            (
                ".codex-plugin/plugin.json",
                include_str!("../../../../installers/codex/.codex-plugin/plugin.json"),
            ),
            (
                ".mcp.json",
                include_str!("../../../../installers/codex/.mcp.json"),
            ),
            (
                "hooks/hooks.json",
                include_str!("../../../../installers/codex/hooks/hooks.json"),
            ),
        ]
    }

    fn home(&self, env: &Env) -> Option<PathBuf> {
        table_home(env, Host::Codex)
    }

    fn file_bytes(&self, rel: &str, text: String, paths: &Paths) -> Result<Vec<u8>> {
        if rel == ".mcp.json" {
            return mcp_with_helper(&text, HELPER_FIELD, &headers_helper(Host::Codex, paths)?);
        }
        Ok(text.into_bytes())
    }

    fn plan(&self, args: &SetupArgs, paths: &Paths, plan: &mut Plan) -> Result<()> {
        // Codex runs a cached copy of the plugin: a changed folder has to be added again.
        let changed = plan.files.iter().any(|f| f.action != Action::Keep);
        MARKET.plan(plan, args.take_over, changed)?;
        let needs_trust = plan.steps.contains(&Step::Install)
            || hooks(&plan.cli, &paths.neutral_cwd())?
                .iter()
                .any(|h| h["trustStatus"] != "trusted");
        if needs_trust {
            plan.steps.push(Step::Trust);
        }
        Ok(())
    }

    fn commands(&self, plan: &Plan, step: Step) -> Vec<Vec<String>> {
        let dir = plan.plugin_dir.display().to_string();
        match step {
            Step::Replace => vec![argv(MARKET.remove_plugin), argv(MARKET.remove_marketplace)],
            Step::Marketplace => vec![argv(&["plugin", "marketplace", "add", &dir, "--json"])],
            Step::Install | Step::Enable => vec![argv(&["plugin", "add", PLUGIN_ID, "--json"])],
            Step::Trust => Vec::new(),
        }
    }

    fn describe(&self, plan: &Plan, step: Step) -> String {
        if step == Step::Trust {
            return format!(
                "{} app-server: hooks/list, then config/batchWrite hooks.state (trust our hook's current hash)",
                plan.cli.path.display()
            );
        }
        describe_calls(&plan.cli, &self.commands(plan, step))
    }

    fn run_step(&self, plan: &Plan, paths: &Paths, step: Step, regs: &mut Registrations) -> Result<()> {
        match step {
            Step::Replace => MARKET.replace(&plan.cli)?,
            Step::Trust => {
                trust(&plan.cli, &paths.neutral_cwd())?;
                regs.trust = true;
            }
            _ => {
                run_all(&plan.cli, &self.commands(plan, step))?;
                regs.marketplace |= step == Step::Marketplace;
                regs.plugin |= step != Step::Marketplace;
            }
        }
        Ok(())
    }

    fn host_files(&self, _plan: &Plan, _paths: &Paths, home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (
            vec![home.join("config.toml")],
            vec![
                home.join("plugins/cache/powercontext"),
                home.join("plugins/data/powercontext-powercontext"),
                // Codex keeps a per-hook trust record here besides `hooks.state`.
                home.join(".hook-trust"),
            ],
        )
    }

    fn verify(&self, plan: &Plan, paths: &Paths) -> Result<()> {
        MARKET.verify(plan)?;
        let hooks = hooks(&plan.cli, &paths.neutral_cwd())?;
        if !trusted_and_current(&hooks, &install::hook_command_shell(&plan.hook_exe)?) {
            bail!("codex does not show our hook as trusted and current after setup");
        }
        Ok(())
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "Codex runs only trusted hooks; setup recorded trust for this exact hook. If you edit the plugin, \
             run setup again (or review it with /hooks in Codex).",
        )
    }

    fn unregister(&self, m: &Manifest, undo: &mut Undo<'_>) -> Result<()> {
        MARKET.unregister(m, undo)
    }

    fn check_activated(&self, a: &Activation<'_>, r: &mut Report) {
        MARKET.check(a, r);
        let want = a
            .manifest
            .and_then(|m| install::hook_command_shell(&m.hook_exe).ok());
        let hooks = hooks(a.cli, &a.paths.neutral_cwd());
        check_hooks(hooks, want.as_deref(), a.manifest.is_some(), a.setup_cmd, r);
    }

    fn synthetic_calls(&self, cwd: &str, _session: &str, prompt: &str) -> Calls {
        let mut event = prompt_event(Host::Codex, cwd, prompt);
        // Codex's payload names the model.
        event["model"] = json!("doctor");
        vec![(Vec::new(), event)]
    }

    fn context<'a>(&self, answer: &'a Value) -> &'a Value {
        channel_context(Host::Codex, answer)
    }

    fn silence_causes(&self) -> (&'static str, &'static str) {
        (
            "Codex skips hooks whose trust is not recorded (or that changed since they were trusted), or the \
             plugin was removed",
            "powercontext-hooks setup codex (records trust for the current hook), or review it with /hooks in Codex",
        )
    }
}

/// Whether Codex lists our hooks, each trusted and running `want`.
pub(super) fn trusted_and_current(hooks: &[Value], want: &str) -> bool {
    !hooks.is_empty()
        && hooks
            .iter()
            .all(|h| h["trustStatus"] == "trusted" && h["command"] == want)
}

/// Doctor's hook lines from the hooks Codex lists (`want`: the command setup wired in; `ours`:
/// set up by powercontext-hooks rather than the official installer).
pub(super) fn check_hooks(
    hooks: Result<Vec<Value>>,
    want: Option<&str>,
    ours: bool,
    setup_cmd: &str,
    r: &mut Report,
) {
    match hooks {
        Ok(hooks) if hooks.is_empty() => r.fail(
            Tier::Activated,
            "hook loaded",
            "Codex loads no hook from our plugin (plugins or hooks feature off?)",
            "set `[features] plugins = true` and `hooks = true` in Codex's config.toml",
        ),
        Ok(hooks) => {
            if want.is_some_and(|w| hooks.iter().any(|h| h["command"] != w)) {
                r.fail(
                    Tier::Activated,
                    "hook loaded",
                    "Codex runs an older copy of our hook command",
                    setup_cmd,
                );
            } else {
                r.ok(
                    Tier::Activated,
                    "hook loaded",
                    format!("{} UserPromptSubmit hook(s)", hooks.len()),
                );
            }
            if hooks.iter().all(|h| h["trustStatus"] == "trusted") {
                r.ok(Tier::Activated, "hook trusted", "Codex will run it");
            } else {
                r.fail(
                    Tier::Activated,
                    "hook trusted",
                    "untrusted: Codex skips it silently",
                    if ours {
                        format!("{setup_cmd} (records trust), or review it with /hooks in Codex")
                    } else {
                        // Installed by the official `powercontext setup codex`, which records no trust.
                        "powercontext-hooks setup codex --trust-only, or review it with /hooks in Codex"
                            .to_owned()
                    },
                );
            }
        }
        Err(e) => r.fail(
            Tier::Activated,
            "hook trusted",
            format!("{e:#}"),
            "check that `codex app-server` starts",
        ),
    }
}

/// Where the `powercontext` marketplace points: `codex plugin marketplace list` has no JSON; the
/// installed listing names the marketplace source, and an unused marketplace shows under
/// `available`.
fn marketplace(cli: &HostCli) -> Result<Option<PathBuf>> {
    let list = cli.json(&["plugin", "list", "--json"])?;
    Ok(["installed", "available"]
        .iter()
        .flat_map(|k| list[*k].as_array().into_iter().flatten())
        .find(|p| p["marketplaceName"] == MARKETPLACE)
        .and_then(|p| p["marketplaceSource"]["source"].as_str().map(PathBuf::from)))
}

/// Our plugin in `codex plugin list --json`.
fn enabled(cli: &HostCli) -> Result<Option<bool>> {
    let list = cli.json(&["plugin", "list", "--json"])?;
    Ok(enabled_in(
        list["installed"].as_array().into_iter().flatten(),
        "pluginId",
    ))
}

/// Our plugin's `UserPromptSubmit` hooks as Codex sees them from `cwd`.
pub(crate) fn hooks(cli: &HostCli, cwd: &Path) -> Result<Vec<Value>> {
    listed(&mut AppServer::start(cli, cwd)?, cwd)
}

fn listed(rpc: &mut AppServer, cwd: &Path) -> Result<Vec<Value>> {
    let listed = rpc.call("hooks/list", json!({"cwds": [cwd.display().to_string()]}))?;
    Ok(listed["data"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|e| e["hooks"].as_array().cloned().unwrap_or_default())
        .filter(|h| h["pluginId"] == PLUGIN_ID)
        .collect())
}

/// Records trust for each of our plugin hooks the way `/hooks` review does. Returns how many
/// hooks were newly trusted.
pub(crate) fn trust(cli: &HostCli, cwd: &Path) -> Result<usize> {
    let mut rpc = AppServer::start(cli, cwd)?;
    let mut trusted = serde_json::Map::new();
    for hook in listed(&mut rpc, cwd)?
        .iter()
        .filter(|h| h["trustStatus"] != "trusted")
    {
        let key = hook["key"]
            .as_str()
            .context("codex listed a hook without a key")?;
        trusted.insert(key.to_owned(), json!({ "trusted_hash": hook["currentHash"] }));
    }
    if trusted.is_empty() {
        return Ok(0);
    }
    let n = trusted.len();
    let written = rpc.call(
        "config/batchWrite",
        json!({"edits": [{"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": Value::Object(trusted)}]}),
    )?;
    if written["status"] != "ok" {
        bail!("codex refused to record hook trust");
    }
    Ok(n)
}

/// Minimal line-delimited JSON-RPC client for `codex app-server` on stdio; killed on drop.
struct AppServer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
}

impl AppServer {
    fn start(cli: &HostCli, cwd: &Path) -> Result<Self> {
        let mut child = Command::new(&cli.path)
            .arg("app-server")
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context("cannot start `codex app-server`")?;
        let stdin = child.stdin.take().context("app-server stdin")?;
        let stdout = child.stdout.take().context("app-server stdout")?;
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut rpc = Self {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        rpc.call(
            "initialize",
            json!({"clientInfo": {"name": "powercontext-hooks", "version": env!("CARGO_PKG_VERSION")}}),
        )?;
        rpc.send(&json!({"jsonrpc": "2.0", "method": "initialized"}))?;
        Ok(rpc)
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.flush()?;
        Ok(())
    }

    fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .with_context(|| format!("codex app-server closed before {method}"))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .map_err(|_| anyhow!("codex app-server gave no answer to {method}"))?;
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message["id"] == id {
                if let Some(e) = message.get("error") {
                    bail!(
                        "codex app-server {method} failed: {}",
                        e["message"].as_str().unwrap_or("error")
                    );
                }
                return Ok(message["result"].clone());
            }
        }
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        kill_group(&self.child);
        let _ = self.child.wait();
    }
}
