//! What several host installers share: the MCP headers helper, argument lists, where a host's
//! answer holds the context, the host's config home from its row, planning our member of a
//! host's JSONC config, and where a package set up by the official installer lives. It picks no
//! host and writes no file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::official;
use serde_json::Value;

use crate::installer::checks::{Report, Tier};
use crate::installer::contract::Activation;
use crate::installer::plan::{Action, FileChange, Plan};
use crate::support::install::{self, Host, OwnedEntry, value_digest};
use crate::support::jsonc;
use crate::support::paths::Paths;

/// The MCP headers helper setup gives `host`'s plugin MCP server: our CLI's `mcp-headers <host>`,
/// with our config file and the location variables this setup saw named on the line (Codex gives
/// a helper only HOME and PATH). It holds no token, only where to find it.
pub(crate) fn headers_helper(host: Host, paths: &Paths) -> Result<String> {
    let cli = std::env::current_exe().context("cannot locate this program")?;
    let env: Vec<(&str, &str)> = crate::support::paths::LOCATION_VARS
        .iter()
        .filter_map(|n| {
            paths
                .env
                .text(n)
                .filter(|v| !v.trim().is_empty())
                .map(|v| (*n, v))
        })
        .collect();
    install::mcp_headers_command(&cli, host, paths.config_path.as_deref(), &env)
}

/// A plugin's rendered `.mcp.json` with `field` (the host's name for a headers helper) set to
/// `helper` on the `powercontext` server.
pub(crate) fn mcp_with_helper(rendered: &str, field: &str, helper: &str) -> Result<Vec<u8>> {
    let mut v: Value =
        serde_json::from_str(rendered).context("internal error: an .mcp.json template is not JSON")?;
    let server = v["mcpServers"]["powercontext"]
        .as_object_mut()
        .context("internal error: an .mcp.json template has no powercontext server")?;
    server.insert(field.to_owned(), Value::from(helper));
    let mut bytes = serde_json::to_vec_pretty(&v)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// An argument list as owned strings.
pub(super) fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

/// Where the context sits in one line of a command hook's answer, by the host's output channel.
pub(super) fn channel_context(host: Host, answer: &Value) -> &Value {
    use powercontext_hooks_core::host::OutputChannel;
    match host.spec().output {
        OutputChannel::HookSpecificOutput => &answer["hookSpecificOutput"]["additionalContext"],
        OutputChannel::TopLevelAdditionalContext => &answer["additionalContext"],
        OutputChannel::Message => &answer["message"],
        OutputChannel::Context => &answer["context"],
        // A shim host's installer reads its own protocol's answer.
        OutputChannel::Shim => &Value::Null,
    }
}

/// Doctor's synthetic prompt event for a command-hook host: its prompt event's name, the
/// working directory and the prompt (Claude-style snake_case payload).
pub(super) fn prompt_event(host: Host, cwd: &str, prompt: &str) -> Value {
    serde_json::json!({"hook_event_name": host.spec().events.prompt, "cwd": cwd, "prompt": prompt})
}

/// The host's config home from its row in the host table (`$var`, else `$HOME/<rel>`).
pub(super) fn table_home(env: &Env, host: Host) -> Option<PathBuf> {
    let home = &host.spec().config_home;
    home_from(env, home.var, home.rel)
}

/// A host's config home: `$var` when set, else `~/<rel>`.
pub(super) fn home_from(env: &Env, var: &str, rel: &str) -> Option<PathBuf> {
    if let Some(v) = env.text(var).filter(|v| !v.is_empty() && !var.is_empty()) {
        return Some(PathBuf::from(v));
    }
    env.text("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| Path::new(h).join(rel))
}

/// A planned member of a host's JSONC config, and the owned entry kept when it is unchanged.
pub(crate) type EntryPlan = (Option<(FileChange, OwnedEntry)>, Option<OwnedEntry>);

/// Plans our member `parent.key` = `want` in a host's JSONC config (`text`: its contents, `None`
/// when there is no file): inserted when absent, updated only while it is still what we wrote.
/// `None` when the member is there and not ours (the caller refuses or warns).
pub(super) fn plan_entry(
    path: &Path,
    text: Option<&str>,
    (parent, key): (&str, &str),
    want: &Value,
    owned: Option<&OwnedEntry>,
) -> Result<Option<EntryPlan>> {
    let change = |bytes: String, action| FileChange {
        path: path.to_path_buf(),
        bytes: bytes.into_bytes(),
        action,
        private: false,
    };
    if let Some(text) = text
        && let Some(current) = jsonc::get(text, parent, key)?
    {
        let Some(o) = owned.filter(|o| o.path == path && o.sha256 == value_digest(&current)) else {
            return Ok(None);
        };
        if &current == want {
            return Ok(Some((None, Some(o.clone()))));
        }
        let entry = OwnedEntry {
            sha256: value_digest(want),
            ..o.clone()
        };
        let new = jsonc::replace(text, parent, key, want)?;
        return Ok(Some((Some((change(new, Action::Update), entry)), None)));
    }
    let (new, inserted) = jsonc::insert(text.unwrap_or("{}\n"), parent, key, want).with_context(|| {
        let at = if parent.is_empty() {
            key.to_owned()
        } else {
            format!("{parent}.{key}")
        };
        format!("cannot add `{at}` to {}: fix that file first", path.display())
    })?;
    let entry = OwnedEntry {
        path: path.to_path_buf(),
        parent: parent.to_owned(),
        key: key.to_owned(),
        sha256: value_digest(want),
        created_file: text.is_none(),
        inserted,
    };
    let action = if text.is_none() {
        Action::Create
    } else {
        Action::Update
    };
    Ok(Some((Some((change(new, action), entry)), None)))
}

/// Whether the planned host entry still holds what setup wrote.
pub(super) fn entry_holds(plan: &Plan) -> Result<bool> {
    let Some((f, o)) = &plan.host_entry else {
        return Ok(true);
    };
    let bytes = install::read_opt(&f.path)?.unwrap_or_default();
    let text = String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8", f.path.display()))?;
    Ok(jsonc::get(&text, &o.parent, &o.key)?.as_ref().map(value_digest) == Some(o.sha256.clone()))
}

/// Pi, DSH and OpenCode in doctor: our plugin folder and profile, or what the official
/// `powercontext setup` installed (listed in clients.json); `None` (reported) when neither.
pub(super) fn package_source(a: &Activation<'_>, r: &mut Report) -> Option<(PathBuf, Option<String>)> {
    match (a.manifest, official::clients_entry(a.cli.host, &a.paths.env)) {
        (Some(m), _) => Some((m.plugin_dir.clone(), m.profile.clone())),
        (None, Some((_, entry))) => Some((
            official_package_dir(a.cli.host, a.paths),
            entry["profile"].as_str().map(str::to_owned),
        )),
        (None, None) => {
            r.fail(
                Tier::Activated,
                "plugin loaded",
                "not set up by powercontext-hooks",
                a.setup_cmd,
            );
            None
        }
    }
}

/// Where the official `powercontext setup pi` copies its package: `$POWERCONTEXT_HOME` (else
/// `~/.local/share/powercontext`) `/plugins/pi`. Other hosts are found through their own CLI.
pub(super) fn official_package_dir(host: Host, paths: &Paths) -> PathBuf {
    let data = paths
        .env
        .text(powercontext_hooks_core::variables::HOME)
        .filter(|v| !v.trim().is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            paths
                .env
                .text("HOME")
                .map(|h| Path::new(h).join(".local/share/powercontext"))
        })
        .unwrap_or_default();
    data.join("plugins").join(host.as_str())
}

/// Reads a host config file we are about to edit: UTF-8 and parsing as JSONC, or the error
/// naming it (`what`: whose config it is).
pub(super) fn read_jsonc(path: &Path, what: &str) -> Result<Option<String>> {
    use anyhow::Context as _;
    let Some(bytes) = install::read_opt(path)? else {
        return Ok(None);
    };
    let text = String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{} is not UTF-8", path.display()))?;
    jsonc::parse(&text).with_context(|| format!("cannot read {} ({what}): fix it first", path.display()))?;
    Ok(Some(text))
}
