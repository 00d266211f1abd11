//! The files the official `powercontext` CLI reads that our `setup` also writes, so both tools see
//! one installation: `clients.json` `hosts.<host>`, `<host root>/powercontext/credentials.json`
//! (0600 in a 0700 folder) and Claude Code's `pluginConfigs["powercontext@powercontext"]`. Each
//! edit records what was there before (never a token in the manifest: a replaced credential file
//! waits owner-only beside it) so `uninstall` puts it back while our value is still in place. It
//! never writes a credential through a symbolic link.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use powercontext_hooks_core::endpoint::Authorization;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::official;

use serde_json::{Map, Value, json};

use crate::installer::undo::{Done, Kept, Undoing};
use crate::support::install::value_digest;
use crate::support::install::{self, Host, Journal, OwnedCredential, OwnedMember, OwnedShared, digest};
use crate::support::jsonc;

/// Beside the manifest, mode 0600: the credential file setup replaced, put back by uninstall.
pub const PRIOR_CREDENTIALS_FILE: &str = "prior-credentials.json";
/// Claude Code's key for our plugin's options.
const CLAUDE_PLUGIN_KEY: &str = "powercontext@powercontext";

/// What setup will write to the shared files.
#[derive(Debug, Default)]
pub struct SharedPlan {
    /// `clients.json`: (path, new bytes, member) when it changes.
    clients: Option<(PathBuf, Vec<u8>, OwnedMember)>,
    /// `credentials.json`: (path, bytes, whether a different file is replaced).
    credentials: Option<(PathBuf, Vec<u8>, bool)>,
    /// The host, for the plan's words.
    host: Option<Host>,
    /// A `credentials.json` setup wrote before is there (it is updated, not created).
    credentials_ours: bool,
    /// Claude options: (settings path, wanted value, prior value) when they change.
    claude: Option<(PathBuf, Value, Option<Value>)>,
    /// What stays recorded from an earlier run.
    kept: OwnedShared,
}

impl SharedPlan {
    /// Whether anything is written.
    pub fn changes(&self) -> bool {
        self.clients.is_some() || self.credentials.is_some() || self.claude.is_some()
    }

    /// Plan lines: (action, path, what).
    pub fn lines(&self) -> Vec<(String, PathBuf, String)> {
        let mut out = Vec::new();
        if let Some((p, _, m)) = &self.clients {
            let host = self.host.map_or("<host>", Host::as_str);
            out.push((
                if m.created_file { "create" } else { "update" }.to_owned(),
                p.clone(),
                format!("hosts.{host} (for the official CLI)"),
            ));
        }
        if let Some((p, _, replaces)) = &self.credentials {
            let (action, what) = if *replaces {
                (
                    "replace",
                    "token for this Server URL, 0600 (the old file is kept for uninstall)",
                )
            } else if self.credentials_ours {
                ("update", "token for this Server URL, 0600")
            } else {
                ("create", "token for this Server URL, 0600")
            };
            out.push((action.to_owned(), p.clone(), what.to_owned()));
        }
        if let Some((p, _, _)) = &self.claude {
            out.push((
                "update".to_owned(),
                p.clone(),
                format!("pluginConfigs[\"{CLAUDE_PLUGIN_KEY}\"].options"),
            ));
        }
        out
    }
}

fn read_json_doc(path: &Path, what: &str) -> Result<Option<Value>> {
    let Some(bytes) = install::read_opt(path)? else {
        return Ok(None);
    };
    let text = String::from_utf8(bytes).map_err(|_| anyhow!("{} is not UTF-8", path.display()))?;
    let v = jsonc::parse(&text)
        .with_context(|| format!("cannot read {} ({what}): fix it first", path.display()))?;
    Ok(Some(v))
}

/// Plans the shared-file edits for `host` pointing at `url` (with `token` when one was given).
pub fn plan(
    host: Host,
    env: &Env,
    url: &str,
    token: Option<&Authorization>,
    capture_prompts: Option<bool>,
    previous: Option<&OwnedShared>,
    install_dir: &Path,
) -> Result<SharedPlan> {
    let integration = host;
    let mut out = SharedPlan {
        host: Some(host),
        ..SharedPlan::default()
    };
    let prev = previous.cloned().unwrap_or_default();

    plan_clients(host, env, url, &prev, &mut out)?;
    plan_credentials(host, env, url, token, &prev, install_dir, &mut out)?;

    // Claude Code's plugin options (the status line and the official doctor read them).
    if host.spec().capabilities.plugin_option_vars {
        let root = official::host_root(integration, env).context("cannot find Claude's config: set HOME")?;
        let path = root.join("settings.json");
        let doc = read_json_doc(&path, "Claude Code's settings")?;
        let current = doc
            .as_ref()
            .and_then(|d| d.get("pluginConfigs"))
            .and_then(|p| p.get(CLAUDE_PLUGIN_KEY))
            .cloned();
        let mut want: Map<String, Value> = current
            .as_ref()
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut options = want
            .get("options")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        options.insert("server_url".into(), json!(url));
        options.insert("allow_insecure_http".into(), json!(false));
        if let Some(c) = capture_prompts {
            options.insert("capture_prompts".into(), json!(c));
        }
        want.insert("options".into(), Value::Object(options));
        let want = Value::Object(want);
        if current.as_ref() == Some(&want) {
            out.kept.claude_options = prev.claude_options.clone();
        } else {
            let prior = match &prev.claude_options {
                Some(m) => m.prior.clone(),
                None => current,
            };
            out.claude = Some((path, want, prior));
        }
    }
    Ok(out)
}

/// The official CLI's `clients.json` `hosts.<host>`: our URL, the rest of the member kept.
fn plan_clients(host: Host, env: &Env, url: &str, prev: &OwnedShared, out: &mut SharedPlan) -> Result<()> {
    if let Some(path) = official::clients_path(env) {
        let doc = read_json_doc(&path, "the official CLI's clients.json")?;
        if let Some(d) = &doc
            && (d.get("version").and_then(Value::as_u64) != Some(1) || !d["hosts"].is_object())
        {
            bail!(
                "{} is not a version 1 clients.json; fix or move it, then run setup again",
                path.display()
            );
        }
        let created = doc.is_none();
        let mut doc = doc.unwrap_or_else(|| json!({"version": 1, "hosts": {}}));
        let current = doc["hosts"].get(host.as_str()).cloned();
        let mut want = current
            .as_ref()
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        want.insert("server_url".into(), json!(url));
        want.insert("allow_insecure_http".into(), json!(false));
        let want = Value::Object(want);
        if current.as_ref() == Some(&want) {
            out.kept.clients = prev.clients.clone();
        } else {
            let ours_before = prev.clients.as_ref();
            let member = OwnedMember {
                path: path.clone(),
                sha256: value_digest(&want),
                prior: match ours_before {
                    Some(m) => m.prior.clone(),
                    None => current,
                },
                created_file: ours_before.is_some_and(|m| m.created_file) || created,
                inserted: None,
            };
            doc["hosts"][host.as_str()] = want;
            let mut bytes = serde_json::to_vec_pretty(&doc)?;
            bytes.push(b'\n');
            out.clients = Some((path, bytes, member));
        }
    }

    Ok(())
}

/// The official CLI's `credentials.json` for the host, only with a token given now; one that
/// is not ours is kept aside for uninstall.
fn plan_credentials(
    host: Host,
    env: &Env,
    url: &str,
    token: Option<&Authorization>,
    prev: &OwnedShared,
    install_dir: &Path,
    out: &mut SharedPlan,
) -> Result<()> {
    let integration = host;
    if let (Some(token), Some(path)) = (token, official::credentials_path(integration, env)) {
        if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            bail!(
                "{} is a symbolic link; setup never writes a credential through one. Replace it with a regular file or remove it",
                path.display()
            );
        }
        let line = json!({"version": 1, "server_url": url, "authorization": token.header_value()});
        let mut bytes = serde_json::to_vec(&line)?;
        bytes.push(b'\n');
        let current = install::read_opt(&path)?;
        if current.as_deref() == Some(&bytes[..]) {
            out.kept.credentials = prev.credentials.clone();
        } else {
            let ours = prev
                .credentials
                .as_ref()
                .is_some_and(|c| current.as_deref().is_some_and(|b| digest(b) == c.sha256));
            let replaces = current.is_some() && !ours;
            if replaces && install_dir.join(PRIOR_CREDENTIALS_FILE).exists() {
                bail!(
                    "{} changed since setup replaced it; remove {} or the file, then run setup again",
                    path.display(),
                    install_dir.join(PRIOR_CREDENTIALS_FILE).display()
                );
            }
            out.credentials_ours = ours;
            out.credentials = Some((path, bytes, replaces));
        }
    } else {
        out.kept.credentials = prev.credentials.clone();
    }

    Ok(())
}

/// Snapshots what [`apply`] may touch, for rollback.
pub fn journal(plan: &SharedPlan, journal: &mut Journal, install_dir: &Path) -> Result<()> {
    if let Some((p, _, _)) = &plan.clients {
        journal.created_dirs_of(p);
        journal.file(p)?;
    }
    if let Some((p, _, _)) = &plan.credentials {
        journal.created_dirs_of(p);
        journal.file(p)?;
        journal.file(&install_dir.join(PRIOR_CREDENTIALS_FILE))?;
    }
    if let Some((p, _, _)) = &plan.claude {
        journal.created_dirs_of(p);
        journal.file(p)?;
    }
    Ok(())
}

/// Writes the planned edits (Claude's after its CLI ran: it rewrites `settings.json` itself) and
/// returns what is now ours.
pub fn apply(plan: &SharedPlan, install_dir: &Path) -> Result<OwnedShared> {
    let mut owned = plan.kept.clone();
    if let Some((path, bytes, member)) = &plan.clients {
        install::write_through(path, bytes, true)?;
        owned.clients = Some(member.clone());
    }
    if let Some((path, bytes, replaces)) = &plan.credentials {
        if *replaces && let Some(old) = install::read_opt(path)? {
            install::write_atomic(&install_dir.join(PRIOR_CREDENTIALS_FILE), &old, true)?;
        }
        let dir = path.parent().context("a credential path has no folder")?;
        install::create_dirs(dir)?;
        install::write_atomic(path, bytes, true)?;
        owned.credentials = Some(OwnedCredential {
            path: path.clone(),
            sha256: digest(bytes),
        });
    }
    if let Some((path, want, prior)) = &plan.claude {
        let (text, created) = match install::read_opt(path)? {
            Some(b) => (
                String::from_utf8(b).map_err(|_| anyhow!("{} is not UTF-8", path.display()))?,
                false,
            ),
            None => ("{}\n".to_owned(), true),
        };
        let (new, inserted) = match jsonc::get(&text, "pluginConfigs", CLAUDE_PLUGIN_KEY)? {
            Some(_) => (
                jsonc::replace(&text, "pluginConfigs", CLAUDE_PLUGIN_KEY, want)?,
                None,
            ),
            None => {
                let (new, how) = jsonc::insert(&text, "pluginConfigs", CLAUDE_PLUGIN_KEY, want)?;
                (new, Some(how))
            }
        };
        install::write_through(path, new.as_bytes(), false)?;
        let earlier = plan.kept.claude_options.as_ref();
        owned.claude_options = Some(OwnedMember {
            path: path.clone(),
            sha256: value_digest(want),
            prior: prior.clone(),
            created_file: created || earlier.is_some_and(|m| m.created_file),
            inserted: inserted.or_else(|| earlier.and_then(|m| m.inserted.clone())),
        });
    }
    Ok(owned)
}

/// Puts back what setup replaced, while our values are still in place. Returns (actions, kept).
pub fn uninstall(
    host: Host,
    owned: &OwnedShared,
    install_dir: &Path,
    dry: bool,
) -> Result<(Vec<Done>, Vec<Kept>)> {
    let mut actions = Vec::new();
    let mut kept = Vec::new();
    if let Some(m) = &owned.clients {
        uninstall_clients(host, m, dry, &mut actions, &mut kept)?;
    }
    if let Some(c) = &owned.credentials {
        uninstall_credentials(c, install_dir, dry, &mut actions, &mut kept)?;
    }
    if let Some(m) = &owned.claude_options {
        uninstall_claude_options(m, dry, &mut actions, &mut kept)?;
    }
    Ok((actions, kept))
}

/// Puts back or removes the host's member of `clients.json` while it still holds our value.
fn uninstall_clients(
    host: Host,
    m: &OwnedMember,
    dry: bool,
    actions: &mut Vec<Done>,
    kept: &mut Vec<Kept>,
) -> Result<()> {
    let Some(mut doc) = read_json_doc(&m.path, "clients.json").ok().flatten() else {
        return Ok(());
    };
    match doc["hosts"].get(host.as_str()) {
        Some(v) if value_digest(v) == m.sha256 => {
            let hosts = doc["hosts"]
                .as_object_mut()
                .context("clients.json lost its hosts")?;
            match &m.prior {
                Some(p) => {
                    hosts.insert(host.as_str().to_owned(), p.clone());
                }
                None => {
                    hosts.remove(host.as_str());
                }
            }
            let empty = hosts.is_empty();
            if m.created_file && empty {
                actions.push(Done::file(Undoing::Remove, &m.path));
                if !dry {
                    fs::remove_file(&m.path)?;
                }
            } else {
                actions.push(Done::member(&m.path, format!("hosts.{}", host.as_str())));
                if !dry {
                    let mut bytes = serde_json::to_vec_pretty(&doc)?;
                    bytes.push(b'\n');
                    install::write_through(&m.path, &bytes, true)?;
                }
            }
        }
        Some(_) => kept.push(Kept::changed(&m.path, Some(format!("hosts.{}", host.as_str())))),
        None => {}
    }
    Ok(())
}

/// Restores or removes the credentials file while it still holds what setup wrote.
fn uninstall_credentials(
    c: &OwnedCredential,
    install_dir: &Path,
    dry: bool,
    actions: &mut Vec<Done>,
    kept: &mut Vec<Kept>,
) -> Result<()> {
    let prior = install_dir.join(PRIOR_CREDENTIALS_FILE);
    match install::read_opt(&c.path)? {
        Some(b) if digest(&b) == c.sha256 => match install::read_private(&prior)? {
            Some(old) => {
                actions.push(Done::file(Undoing::Restore, &c.path));
                if !dry {
                    install::write_atomic(&c.path, &old, true)?;
                    fs::remove_file(&prior)?;
                }
            }
            None => {
                actions.push(Done::file(Undoing::Remove, &c.path));
                if !dry {
                    fs::remove_file(&c.path)?;
                    if let Some(dir) = c.path.parent() {
                        let _ = fs::remove_dir(dir);
                    }
                }
            }
        },
        Some(_) => kept.push(Kept::changed(&c.path, None)),
        None => {}
    }
    if !dry && prior.exists() {
        let _ = fs::remove_file(&prior);
    }
    Ok(())
}

/// Puts back or removes Claude Code's plugin options while they still hold our value.
fn uninstall_claude_options(
    m: &OwnedMember,
    dry: bool,
    actions: &mut Vec<Done>,
    kept: &mut Vec<Kept>,
) -> Result<()> {
    let Some(bytes) = install::read_opt(&m.path)? else {
        return Ok(());
    };
    let text = String::from_utf8(bytes).map_err(|_| anyhow!("{} is not UTF-8", m.path.display()))?;
    match jsonc::get(&text, "pluginConfigs", CLAUDE_PLUGIN_KEY) {
        Ok(Some(v)) if value_digest(&v) == m.sha256 => {
            let new = match (&m.prior, &m.inserted) {
                (Some(p), _) => jsonc::replace(&text, "pluginConfigs", CLAUDE_PLUGIN_KEY, p)?,
                (None, Some(how)) => jsonc::remove(&text, "pluginConfigs", CLAUDE_PLUGIN_KEY, how)?,
                (None, None) => jsonc::remove(
                    &text,
                    "pluginConfigs",
                    CLAUDE_PLUGIN_KEY,
                    &jsonc::Inserted::default(),
                )?,
            };
            actions.push(Done::member(
                &m.path,
                format!("pluginConfigs[\"{CLAUDE_PLUGIN_KEY}\"]"),
            ));
            if !dry {
                install::write_through(&m.path, new.as_bytes(), false)?;
            }
        }
        Ok(Some(_)) => kept.push(Kept::changed(
            &m.path,
            Some(format!("pluginConfigs[\"{CLAUDE_PLUGIN_KEY}\"]")),
        )),
        _ => {}
    }
    Ok(())
}
