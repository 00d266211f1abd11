//! OpenCode's installer: its plugin file in OpenCode's own plugins folder, our `mcp.powercontext`
//! entry in its config (the token in an owner-only file the entry names), and doctor's proof of
//! loading through a short-lived `opencode serve`. It never writes a token into OpenCode's config
//! and never replaces a plugin file or MCP entry that is not ours (the official installer's plugin
//! only with `--take-over`).

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::state;
use serde_json::{Value, json};

use super::common::{EntryPlan, entry_holds, home_from, package_source, plan_entry, read_jsonc};
use crate::installer::checks::{Report, Tier};
use crate::installer::contract::{Activation, Calls, Installer};
use crate::installer::plan::{Action, FileChange, Plan, SetupArgs};
use crate::support::host_cli::{HostCli, kill_group, local_http};
use crate::support::install::{self, Manifest};
use crate::support::paths::Paths;

pub(super) struct OpenCode;

/// OpenCode's plugin file name (as the official installer names it).
pub(crate) const PLUGIN_FILE: &str = "powercontext-opencode.js";
/// The member of OpenCode's `mcp` object we own.
const MCP_KEY: &str = "powercontext";
/// The official installer's ownership mark beside the plugin file.
const MARK_FILE: &str = ".powercontext-opencode.json";
/// OpenCode's global config files, in the order OpenCode merges them.
const CONFIG_FILES: [&str; 3] = ["config.json", "opencode.json", "opencode.jsonc"];

impl Installer for OpenCode {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                PLUGIN_FILE,
                include_str!("../../../../installers/opencode/powercontext-opencode.js"),
            ),
            // The official installer's ownership mark: its setup and doctor see this install.
            (
                MARK_FILE,
                "{\"schema\":1,\"owner\":\"powercontext\",\"integration\":\"opencode-plugin\"}\n",
            ),
        ]
    }

    fn home(&self, env: &Env) -> Option<PathBuf> {
        if let Some(x) = env.text("XDG_CONFIG_HOME").filter(|v| v.starts_with('/')) {
            return Some(Path::new(x).join("opencode"));
        }
        home_from(env, "", ".config/opencode")
    }

    /// OpenCode's own plugins folder, in the config directory `opencode debug paths` names.
    fn plugin_dir(&self, cli: &HostCli, _install_dir: &Path) -> Result<PathBuf> {
        let run = cli.run_ok(&["debug", "paths"])?;
        let config = debug_paths(&run.stdout)
            .remove("config")
            .context("`opencode debug paths` printed no config directory")?;
        Ok(config.join("plugins"))
    }

    /// OpenCode's `plugins` folder holds the user's other plugins too (it may be a dotfile link).
    fn owns_plugin_dir(&self) -> bool {
        false
    }

    /// The official installer's plugin file, marked as PowerContext's by its ownership file.
    fn takes_over_files(&self, plugin_dir: &Path, warnings: &mut Vec<String>) -> Result<bool> {
        let official = install::read_opt(&plugin_dir.join(MARK_FILE))?
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|v| v["owner"] == "powercontext");
        if official {
            warnings.push(format!(
                "taking over: the official installer's {} is replaced (not restored by uninstall)",
                plugin_dir.join(PLUGIN_FILE).display()
            ));
        }
        Ok(official)
    }

    fn plan(&self, _args: &SetupArgs, paths: &Paths, plan: &mut Plan) -> Result<()> {
        let config_dir = plan.plugin_dir.parent().context("no OpenCode config dir")?;
        let mut want = json!({"type": "remote", "url": format!("{}/mcp", plan.url), "enabled": true});
        // The token the hooks send, for OpenCode's own MCP client: the entry names an
        // owner-only file (OpenCode substitutes `{file:…}`), never the token itself.
        let header_file =
            install::install_dir(&paths.state_root, plan.host).join(install::MCP_AUTHORIZATION_FILE);
        match &plan.authorization {
            Some(auth) => {
                want["headers"] = json!({"Authorization": file_reference(&header_file)?});
                let bytes = format!("{}\n", auth.header_value()).into_bytes();
                if install::read_opt(&header_file)?.as_deref() != Some(&bytes[..]) {
                    plan.mcp_header_file = Some(FileChange {
                        path: header_file,
                        bytes,
                        action: Action::Private,
                        private: true,
                    });
                }
            }
            None if header_file.exists() => plan.drop_mcp_header_file = Some(header_file),
            None => {}
        }
        (plan.host_entry, plan.kept_entry) = plan_mcp(config_dir, &want, plan.previous.as_ref())?;
        Ok(())
    }

    // Loading is proven by `doctor opencode` (a short `opencode serve`); here the config
    // OpenCode reads must still parse and hold our entry.
    fn verify(&self, plan: &Plan, _paths: &Paths) -> Result<()> {
        if let Some((f, _)) = &plan.host_entry
            && !entry_holds(plan)?
        {
            bail!("{} does not hold our MCP entry after setup", f.path.display());
        }
        Ok(())
    }

    fn check_activated(&self, a: &Activation<'_>, r: &mut Report) {
        if package_source(a, r).is_none() {
            return;
        }
        let (root, host) = (&a.paths.state_root, a.cli.host);
        let work = install::install_dir(root, host).join("doctor-probe");
        // The probe writes under `installs/<host>`: never through a planted link.
        let probe = install::check_install_dirs(root, host).and_then(|()| probe(a.cli, &work));
        match probe {
            Ok(p) => {
                if p.loaded {
                    r.ok(
                        Tier::Activated,
                        "plugin loaded",
                        "`opencode serve` ran our plugin (activation nonce seen)",
                    );
                } else {
                    r.fail(
                        Tier::Activated,
                        "plugin loaded",
                        "`opencode serve` did not run our plugin (removed or disabled?)",
                        a.setup_cmd,
                    );
                }
                match p.mcp.as_deref() {
                    Some("connected") => r.ok(Tier::Activated, "mcp connected", "OpenCode reached the Server's /mcp"),
                    Some(status) => r.warn(
                        Tier::Activated,
                        "mcp connected",
                        format!("OpenCode reports our MCP entry as `{status}`"),
                        "start the Server; after a token change, run `powercontext-hooks setup opencode` again (the entry reads the token setup saved)",
                    ),
                    None => r.warn(
                        Tier::Activated,
                        "mcp connected",
                        "OpenCode does not know our MCP entry",
                        a.setup_cmd,
                    ),
                }
            }
            Err(e) => r.fail(
                Tier::Activated,
                "plugin loaded",
                format!("{e:#}"),
                "check that `opencode serve` starts",
            ),
        }
    }

    fn synthetic_calls(&self, cwd: &str, session: &str, prompt: &str) -> Calls {
        vec![
            (
                vec!["prepare"],
                json!({"session_id": session, "message_id": "msg_powercontext_doctor",
                       "created_ms": state::now_millis(), "directory": cwd,
                       "parts": [{"type": "text", "text": prompt, "synthetic": false}]}),
            ),
            (vec!["forget"], json!({"session_id": session})),
        ]
    }

    fn context<'a>(&self, answer: &'a Value) -> &'a Value {
        &answer["text"]
    }

    fn silence_causes(&self) -> (&'static str, &'static str) {
        (
            "OpenCode did not load the plugin (another config directory, a config error, or the plugin file was \
             removed)",
            "powercontext-hooks setup opencode, then start OpenCode from a shell with the same environment",
        )
    }
}

/// `{file:<path>}` for OpenCode's config substitution, which takes everything up to the first
/// `}` and reads the JSON text before parsing it: a path it would cut or mangle is refused.
pub(super) fn file_reference(path: &Path) -> Result<String> {
    let text = path
        .to_str()
        .filter(|t| !t.chars().any(|c| c.is_control() || "{}\"\\".contains(c)))
        .with_context(|| {
            format!(
                "OpenCode cannot read a file reference to {} (it holds `{{`, `}}`, a quote, a backslash or a control \
                 character): set POWERCONTEXT_HOOKS_STATE_DIR to a plain path",
                path.display()
            )
        })?;
    Ok(format!("{{file:{text}}}"))
}

/// Plans OpenCode's `mcp.powercontext`: added to the config file OpenCode reads last (created
/// when there is none), updated only while it is still what we wrote, refused when it is not ours.
pub(super) fn plan_mcp(config_dir: &Path, want: &Value, previous: Option<&Manifest>) -> Result<EntryPlan> {
    let mut existing = Vec::new();
    for name in CONFIG_FILES {
        let path = config_dir.join(name);
        if let Some(text) = read_jsonc(&path, "OpenCode's config")? {
            existing.push((path, text));
        }
    }
    // The file that already has the member, else the last one, else a new `opencode.json`.
    let mut at = existing.len().checked_sub(1);
    for (i, (_, text)) in existing.iter().enumerate() {
        if crate::support::jsonc::get(text, "mcp", MCP_KEY)?.is_some() {
            at = Some(i);
            break;
        }
    }
    let (path, text) = match at {
        Some(i) => (existing[i].0.clone(), Some(existing[i].1.as_str())),
        None => (config_dir.join("opencode.json"), None),
    };
    let owned = previous.and_then(|m| m.host_entry.as_ref());
    plan_entry(&path, text, ("mcp", MCP_KEY), want, owned)?.ok_or_else(|| {
        anyhow!(
            "refusing to overwrite `mcp.{MCP_KEY}` in {}: powercontext-hooks did not write it (or it changed since). \
             Remove that entry, then run setup again",
            path.display()
        )
    })
}

/// `opencode debug paths` output as name → directory (`config`, `data`, …).
fn debug_paths(stdout: &str) -> BTreeMap<String, PathBuf> {
    stdout
        .lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(char::is_whitespace)?;
            Some((k.to_owned(), PathBuf::from(v.trim())))
        })
        .collect()
}

/// Starts `opencode serve` on a free loopback port with our plugin's hook command
/// replaced by a probe, creates and deletes a session (the plugin answers `session.deleted`
/// by running its hook's `forget`), and waits for the probe to write a nonce. Also reads the
/// status OpenCode reports for our MCP entry. The server is always killed.
fn probe(cli: &HostCli, work: &Path) -> Result<Probe> {
    let _ = std::fs::remove_dir_all(work);
    let cwd = work.join("project");
    std::fs::create_dir_all(&cwd).with_context(|| format!("cannot create {}", work.display()))?;
    let probe = work.join("probe.sh");
    let marker = work.join("activated");
    std::fs::write(
        &probe,
        "#!/bin/sh\n# powercontext-hooks doctor: proves OpenCode loaded the plugin\ncat >/dev/null\n\
         [ \"$1\" = forget ] && printf '%s' \"$PC_DOCTOR_NONCE\" >\"$PC_DOCTOR_PROBE\"\nexit 0\n",
    )?;
    std::fs::set_permissions(&probe, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let nonce = format!(
        "{:x}{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
        std::process::id()
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let port_s = port.to_string();
    let child = Command::new(&cli.path)
        .args(["serve", "--hostname", "127.0.0.1", "--port", &port_s])
        .current_dir(&cwd)
        .env(powercontext_hooks_core::variables::OPENCODE_HOOK_COMMAND, &probe)
        .env("PC_DOCTOR_PROBE", &marker)
        .env("PC_DOCTOR_NONCE", &nonce)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .context("cannot start `opencode serve`")?;
    let mut server = Killed(child);
    let result = (|| -> Result<Probe> {
        let started = Instant::now();
        loop {
            if let Ok((200, _)) = local_http(port, "GET", "/session", None) {
                break;
            }
            // A server that exited will never answer: say so now, not after the whole wait.
            if let Ok(Some(status)) = server.0.try_wait() {
                bail!("`opencode serve` exited before answering ({status})");
            }
            if started.elapsed() > Duration::from_secs(30) {
                bail!("`opencode serve` did not answer within 30 s");
            }
            thread::sleep(Duration::from_millis(100));
        }
        let mcp = local_http(port, "GET", "/mcp", None)
            .ok()
            .and_then(|(_, b)| serde_json::from_str::<Value>(&b).ok())
            .and_then(|v| v[MCP_KEY]["status"].as_str().map(str::to_owned));
        let (status, body) = local_http(port, "POST", "/session", Some("{}"))?;
        let id = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v["id"].as_str().map(str::to_owned))
            .filter(|_| status == 200)
            .ok_or_else(|| anyhow!("`opencode serve` did not create a session ({status})"))?;
        local_http(port, "DELETE", &format!("/session/{id}"), None)?;
        let waited = Instant::now();
        let loaded = loop {
            if std::fs::read_to_string(&marker).is_ok_and(|t| t == nonce) {
                break true;
            }
            if waited.elapsed() > Duration::from_secs(10) {
                break false;
            }
            thread::sleep(Duration::from_millis(50));
        };
        Ok(Probe { loaded, mcp })
    })();
    drop(server);
    let _ = std::fs::remove_dir_all(work);
    result
}

/// What the OpenCode activation probe saw.
#[derive(Debug)]
struct Probe {
    /// Our plugin ran its hook command with the nonce.
    loaded: bool,
    /// OpenCode's status for our MCP entry (`connected`, `failed`, …).
    mcp: Option<String>,
}

/// A child whose process group is killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        kill_group(&self.0);
        let _ = self.0.wait();
    }
}
