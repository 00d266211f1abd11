//! `powercontext-hooks uninstall <host>`: removes exactly what the ownership manifest says setup
//! made — host registrations it added (through the host's CLI), files whose bytes are still ours,
//! config lines and host config entries (OpenCode's MCP entry) still as we wrote them. Anything
//! changed by someone else stays, with a note.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;

use crate::hosts::installer;
use crate::installer::contract::Undo;
use crate::installer::undo::{Done, Kept, Undoing};
use crate::support::host_cli::HostCli;
use crate::support::install::{self, Host, Manifest, digest, value_digest};
use crate::support::jsonc;
use crate::support::paths::{Locate, Paths};
use crate::support::report;

/// `uninstall <host>`.
#[derive(Debug, Args)]
#[command(after_help = crate::support::paths::OWNER_ONLY_HELP)]
pub struct UninstallArgs {
    /// The host to remove the hooks from.
    #[arg(value_parser = crate::support::install::host_arg())]
    pub host: crate::support::install::Host,
    #[command(flatten)]
    pub locate: Locate,
    /// Also remove the hooks' state (run journal, pending flushes, spooled captures never
    /// delivered) once no other host is set up.
    #[arg(long)]
    pub purge: bool,
    /// Print what would be removed and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `uninstall`.
pub fn uninstall(args: &UninstallArgs) -> Result<ExitCode> {
    if let Err(message) =
        crate::support::paths::check_home(&powercontext_hooks_core::env::Env::from_process())
    {
        report::refuse_with(args.json, &message);
        return Ok(ExitCode::from(2));
    }
    // Read before anything is removed: the Server this host's hooks send to.
    let spooled = spooled_for_host(args);
    match run(args) {
        Ok((actions, kept, state)) => report::emit(
            &Uninstalled {
                ok: true,
                host: args.host.as_str(),
                dry_run: args.dry_run,
                actions,
                kept,
                state,
                spooled,
            },
            args.json,
        ),
        Err(e) => report::refuse(args.json, &e),
    }
}

/// Captures still waiting in the spool for the Server this host is set up for: uninstall keeps
/// them (a later setup or any host pointing there delivers them) and says so, with the way to
/// send them now.
#[derive(Serialize)]
struct Spooled {
    server: String,
    captures: usize,
}

fn spooled_for_host(args: &UninstallArgs) -> Option<Spooled> {
    let paths = Paths::resolve(&args.locate).ok()?;
    let server = paths
        .settings(args.host, None)
        .ok()?
        .server_url
        .value
        .as_str()
        .to_owned();
    let state = powercontext_hooks_core::state::StateDir::at(&paths.state_root);
    let captures = powercontext_hooks_core::spool::count_for_server(&state, &server);
    (captures > 0).then_some(Spooled { server, captures })
}

/// What `uninstall` says: what it removed (or would remove) and what it kept.
#[derive(Serialize)]
struct Uninstalled {
    ok: bool,
    host: &'static str,
    dry_run: bool,
    actions: Vec<Done>,
    kept: Vec<Kept>,
    /// The hooks' state directory: kept (and what it holds) or purged.
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<StateNote>,
    /// Captures still spooled for this host's Server (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    spooled: Option<Spooled>,
}

impl report::Report for Uninstalled {}

impl std::fmt::Display for Uninstalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for a in &self.actions {
            writeln!(f, "  {a}")?;
        }
        for k in &self.kept {
            writeln!(f, "  kept    {k}")?;
        }
        if let Some(s) = self.state.as_ref().filter(|_| !self.actions.is_empty()) {
            writeln!(f, "  {s}")?;
        }
        if let Some(s) = &self.spooled {
            writeln!(
                f,
                "note: {} capture(s) for {} are still spooled; they stay, and are delivered once a host points there \
                 again: run `powercontext-hooks flush` first to send them now",
                s.captures,
                crate::support::textstyle::terminal_safe(&s.server)
            )?;
        }
        if self.actions.is_empty() {
            writeln!(
                f,
                "nothing to remove: {} was not set up by powercontext-hooks",
                self.host
            )
        } else if self.dry_run {
            writeln!(f, "dry run: nothing was changed")
        } else {
            writeln!(f, "done: powercontext-hooks removed from {}", self.host)
        }
    }
}

/// After the host CLI unregistered: removes the members it adds (`added`) that were not there
/// before setup and that it left empty, puts the members back in their order, and gives back the
/// byte-order mark and CRLF line ends it dropped. Whether anything changed.
fn tidy_settings(
    path: &std::path::Path,
    before: &[u8],
    added: &[&str],
    found: Option<&install::HostSettings>,
    dry: bool,
) -> Result<bool> {
    let members = found.filter(|f| f.path == path).map(|f| &f.members);
    let Some(now) = install::read_opt(path)? else {
        return Ok(false);
    };
    let Ok(mut text) = String::from_utf8(now.clone()) else {
        return Ok(false);
    };
    // Without a record of the file before setup, nothing is known to be the host CLI's.
    let absent = |k: &&&str| members.is_some_and(|m| !m.iter().any(|m| m == **k));
    for key in added.iter().filter(absent) {
        if crate::support::jsonc::get(&text, "", key)? == Some(serde_json::json!({})) {
            let how = crate::support::jsonc::Inserted {
                added_comma: true,
                created_parent: false,
                parent_existed: 0,
                empty_inner: None,
            };
            text = crate::support::jsonc::remove(&text, "", key, &how)?;
        }
    }
    if let Some(members) = members.filter(|m| !m.is_empty()) {
        text = crate::support::jsonc::reorder_root(&text, members)?;
    }
    let bytes = install::restyled(before, text.as_bytes()).unwrap_or_else(|| text.into_bytes());
    if bytes == now {
        return Ok(false);
    }
    if !dry {
        install::write_through(path, &bytes, false)?;
    }
    Ok(true)
}

fn run(args: &UninstallArgs) -> Result<(Vec<Done>, Vec<Kept>, Option<StateNote>)> {
    let host = args.host;
    let paths = Paths::resolve(&args.locate)?;
    if install::load_manifest(&paths.state_root, host)?.is_none() {
        return Ok((Vec::new(), Vec::new(), None));
    }
    // The lock setup holds too, then the manifest read again under it: a setup that finished
    // meanwhile is undone from what it recorded, never from a stale reading.
    let _lock = if args.dry_run {
        None
    } else {
        Some(install::UserLock::take(&paths.state_root)?)
    };
    let Some(manifest) = install::load_manifest(&paths.state_root, host)? else {
        return Ok((Vec::new(), Vec::new(), None));
    };
    let dry = args.dry_run;

    // 1. Host registrations first: if the host CLI fails, nothing else has changed yet.
    let mut u = undo_registrations(args, &paths, &manifest)?;
    // 2. Our files, only while they still hold what we wrote.
    u.our_files(host, &manifest, &paths)?;
    // 2b. Our entry in the host's own config, only while it is still what we wrote.
    u.host_entry(host, &manifest, &paths)?;
    // 2c. Our hook entries in the host's own settings file, each only while it is still what we
    // wrote (foreign hooks and entries the user changed stay byte for byte).
    u.settings_hooks(&manifest)?;
    // 3. Our config lines.
    u.config_lines(host, &manifest, &paths)?;

    // 3b. What we wrote to the official CLI's files, put back as it was.
    let (a, k) = crate::installer::shared_files::uninstall(
        host,
        &manifest.shared,
        &install::install_dir(&paths.state_root, host),
        dry,
    )?;
    u.actions.extend(a);
    u.kept.extend(k);

    // 3c. The host's settings file, when it was not there before setup and holds nothing now
    // (the host CLI and our edits leave `{}`): it goes as it came.
    if let Some(hs) = manifest.host_settings.as_ref().filter(|h| !h.existed)
        && let Some(bytes) = install::read_opt(&hs.path)?
        && String::from_utf8(bytes)
            .ok()
            .and_then(|t| jsonc::parse(&t).ok())
            .is_some_and(|v| v.as_object().is_some_and(serde_json::Map::is_empty))
    {
        u.remove_because(&hs.path, "not there before setup, and empty now")?;
    }

    // 4. The manifest last: an interrupted uninstall can run again.
    u.manifest(host, &paths)?;
    // 5. The hooks' state: kept and said so, or purged.
    let state = state(&paths.state_root, host, args.purge, dry, &mut u.kept)?;
    if !dry {
        // The folders setup created, deepest first, each only if nothing is in it now (another
        // host's files, the hooks' state, anything the user put there keeps it).
        let mut dirs = manifest.created_dirs.clone();
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for d in &dirs {
            if fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()) && fs::remove_dir(d).is_ok() {
                u.actions.push(Done::file(Undoing::Remove, d));
            }
        }
    }
    Ok((u.actions, u.kept, state))
}

/// Step 1 of uninstall: the host registrations setup made, undone through the host's CLI, and
/// the host's settings file tidied after it. Returns the record the later steps add to.
fn undo_registrations(args: &UninstallArgs, paths: &Paths, manifest: &Manifest) -> Result<Undone> {
    let host = args.host;
    let mut u = Undone {
        actions: Vec::new(),
        kept: Vec::new(),
        dry: args.dry_run,
    };
    if !(manifest.registrations.plugin || manifest.registrations.marketplace) {
        return Ok(u);
    }
    let cli = HostCli::locate(host, args.locate.host_cli.as_deref(), &paths.env)?;
    let mut undo = Undo {
        cli: &cli,
        paths,
        dry: u.dry,
        actions: Vec::new(),
        kept: Vec::new(),
    };
    // The host CLI rewrites its settings file as it unregisters: what it was like just before.
    let settings = installer(host)
        .home(&paths.env)
        .and_then(|h| installer(host).settings_file(&h));
    let before = match &settings {
        Some((p, _)) => install::read_opt(p)?,
        None => None,
    };
    installer(host).unregister(manifest, &mut undo)?;
    (u.actions, u.kept) = (undo.actions, undo.kept);
    if let (Some((path, added)), Some(before)) = (&settings, &before)
        && tidy_settings(path, before, added, manifest.host_settings.as_ref(), u.dry)?
    {
        u.actions.push(
            Done::file(Undoing::Tidy, path)
                .because("members the host CLI left empty; the file's own line ends"),
        );
    }
    Ok(u)
}

/// What uninstall has done (or, in a dry run, would do) and kept so far, step by step.
struct Undone {
    actions: Vec<Done>,
    kept: Vec<Kept>,
    /// Only list what would be done.
    dry: bool,
}

impl Undone {
    /// Removes a whole file (unless dry) and says so.
    fn remove(&mut self, path: &Path) -> Result<()> {
        self.actions.push(Done::file(Undoing::Remove, path));
        if !self.dry {
            fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
        }
        Ok(())
    }

    /// The same, with the reason the file goes.
    fn remove_because(&mut self, path: &Path, why: &'static str) -> Result<()> {
        self.actions.push(Done::file(Undoing::Remove, path).because(why));
        if !self.dry {
            fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
        }
        Ok(())
    }

    /// Writes a member's edit (unless dry) and says so.
    fn edit(&mut self, path: &Path, what: String, new: &str) -> Result<()> {
        self.actions.push(Done::member(path, what));
        if !self.dry {
            install::write_through(path, new.as_bytes(), false)?;
        }
        Ok(())
    }

    /// Our plugin files and the hook executable's copy, each only while it still holds what
    /// setup wrote; then our plugin folder, if empty.
    fn our_files(&mut self, host: Host, manifest: &Manifest, paths: &Paths) -> Result<()> {
        for f in &manifest.files {
            match install::read_opt(&f.path)? {
                None => {}
                Some(b) if digest(&b) == f.sha256 => self.remove(&f.path)?,
                Some(_) => self.kept.push(Kept::changed(&f.path, None)),
            }
        }
        // The hook executable's copy, while it is still the one setup made.
        if let Some(x) = &manifest.executable {
            match crate::support::exe_copy::digest_of(&x.path) {
                None => {}
                Some(d) if d == x.sha256 => {
                    self.remove(&x.path)?;
                    if !self.dry
                        && let Some(bin) = x.path.parent()
                    {
                        let _ = fs::remove_dir(bin);
                    }
                }
                Some(_) => self.kept.push(Kept::changed(&x.path, None)),
            }
        }
        // OpenCode's plugins folder is OpenCode's, not ours (unless setup created it: see the
        // created folders below).
        if !self.dry
            && manifest
                .plugin_dir
                .starts_with(install::install_dir(&paths.state_root, host))
        {
            remove_empty_dirs(&manifest.plugin_dir);
        }
        Ok(())
    }

    /// Our member of the host's own config, while it is still what we wrote, and the MCP header
    /// file that goes with it.
    fn host_entry(&mut self, host: Host, manifest: &Manifest, paths: &Paths) -> Result<()> {
        let mut entry_kept = false;
        if let Some(e) = &manifest.host_entry
            && let Some(bytes) = install::read_opt(&e.path)?
        {
            let text =
                String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{} is not UTF-8", e.path.display()))?;
            match jsonc::get(&text, &e.parent, &e.key) {
                Ok(Some(v)) if value_digest(&v) == e.sha256 => {
                    let new = jsonc::remove(&text, &e.parent, &e.key, &e.inserted)?;
                    let empty = e.created_file
                        && jsonc::parse(&new).is_ok_and(|v| v.as_object().is_some_and(|o| o.is_empty()));
                    if empty {
                        self.remove(&e.path)?;
                    } else {
                        self.edit(&e.path, e.member(), &new)?;
                    }
                }
                Ok(Some(_)) => {
                    entry_kept = true;
                    self.kept.push(Kept::changed(&e.path, Some(e.member())));
                }
                Ok(None) => {}
                Err(_) => {
                    entry_kept = true;
                    self.kept
                        .push(Kept::because(&e.path, None, "no longer parses; left as is"));
                }
            }
        }
        // OpenCode's MCP header file goes with the entry that names it: OpenCode refuses a config
        // whose `{file:…}` is missing, so an entry left in place keeps its file.
        let header_file = install::install_dir(&paths.state_root, host).join(install::MCP_AUTHORIZATION_FILE);
        if header_file.exists() {
            if entry_kept {
                self.kept.push(Kept::because(
                    &header_file,
                    None,
                    "the entry above still reads it",
                ));
            } else {
                self.remove(&header_file)?;
            }
        }
        Ok(())
    }

    /// Our hook entries in the host's own settings file, each while it is still what we wrote.
    fn settings_hooks(&mut self, manifest: &Manifest) -> Result<()> {
        let Some(o) = &manifest.settings_hooks else {
            return Ok(());
        };
        let Some(bytes) = install::read_opt(&o.path)? else {
            return Ok(());
        };
        let text =
            String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{} is not UTF-8", o.path.display()))?;
        match crate::hosts::settings_hooks::unplan_file(&text, o) {
            Ok(None) => self.remove(&o.path)?,
            Ok(Some(new)) => {
                let missing = crate::hosts::settings_hooks::missing_events(o).unwrap_or_default();
                for event in &missing {
                    self.kept
                        .push(Kept::changed(&o.path, Some(format!("hooks.{event}"))));
                }
                if new != text {
                    let events: Vec<&str> = o
                        .entries
                        .iter()
                        .map(|h| h.event.as_str())
                        .filter(|e| !missing.iter().any(|m| m == e))
                        .collect();
                    self.edit(&o.path, format!("hooks: {}", events.join(", ")), &new)?;
                }
            }
            Err(_) => self
                .kept
                .push(Kept::because(&o.path, None, "no longer parses; left as is")),
        }
        Ok(())
    }

    /// Our lines in our config file's host table, the user's earlier lines put back.
    fn config_lines(&mut self, host: Host, manifest: &Manifest, paths: &Paths) -> Result<()> {
        let Some(owned) = &manifest.config else {
            return Ok(());
        };
        let Some(bytes) = install::read_opt(&owned.path)? else {
            return Ok(());
        };
        let text =
            String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{} is not UTF-8", owned.path.display()))?;
        let mut owned = owned.clone();
        let prior_auth =
            install::install_dir(&paths.state_root, host).join(install::PRIOR_AUTHORIZATION_FILE);
        if let Some(line) = install::read_private(&prior_auth)?
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|t| t.lines().next().map(str::to_owned))
        {
            owned.previous.insert("authorization".to_owned(), line);
        }
        let (new, kept_keys) = install::config_remove(&text, host.as_str(), &owned);
        for k in kept_keys {
            self.kept.push(Kept::changed(
                &owned.path,
                Some(format!("[hosts.{}] {k}", host.as_str())),
            ));
        }
        if owned.created_file && new.trim().is_empty() {
            // Setup created the file and nothing else is in it now: it goes as it came.
            self.remove(&owned.path)?;
        } else if new != text {
            self.edit(&owned.path, format!("[hosts.{}]", host.as_str()), &new)?;
        }
        Ok(())
    }

    /// The saved `authorization` line and the manifest, last: an interrupted uninstall can run
    /// again. Then our install folder, if empty.
    fn manifest(&mut self, host: Host, paths: &Paths) -> Result<()> {
        let prior_auth =
            install::install_dir(&paths.state_root, host).join(install::PRIOR_AUTHORIZATION_FILE);
        if !self.dry && prior_auth.exists() {
            fs::remove_file(&prior_auth)
                .with_context(|| format!("cannot remove {}", prior_auth.display()))?;
        }
        let mpath = install::manifest_path(&paths.state_root, host);
        self.remove(&mpath)?;
        if !self.dry {
            let dir = install::install_dir(&paths.state_root, host);
            let _ = fs::remove_dir(&dir);
            if let Some(parent) = dir.parent() {
                let _ = fs::remove_dir(parent);
            }
        }
        Ok(())
    }
}

/// What the hooks keep at the top of their state directory: only these are removed by `--purge`
/// (anything else there is not theirs and stays).
const STATE_DIRS: [&str; 5] = ["spool", "scopes", "sessions", "opencode-turns", "installs"];
const STATE_FILES: [&str; 6] = [
    "ledger.json",
    "drain.json",
    "state.lock",
    "drain.lock",
    "sessions.lock",
    "dsh-turns.json",
];

fn is_state_entry(name: &str, dir: bool) -> bool {
    if dir {
        STATE_DIRS.contains(&name)
    } else {
        STATE_FILES.contains(&name)
            || (name.starts_with("journal-") && name.ends_with(".jsonl"))
            || (name.starts_with('.') && name.contains(".tmp"))
    }
}

/// The spooled captures not yet delivered.
fn spooled(state_root: &Path) -> usize {
    fs::read_dir(state_root.join("spool")).map_or(0, |d| {
        d.flatten()
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".json")))
            .count()
    })
}

/// What became of the state directory: kept (what it holds, how to remove it) or purged.
#[derive(Debug, Serialize)]
pub(crate) struct StateNote {
    path: PathBuf,
    /// `kept` or `removed`.
    action: &'static str,
    spooled_captures: usize,
    why: &'static str,
}

impl std::fmt::Display for StateNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let action = if self.action == "kept" { "kept" } else { "remove" };
        write!(
            f,
            "{action:<8}{} (the hooks' state: run journal, {} spooled captures not yet delivered; {})",
            self.path.display(),
            self.spooled_captures,
            self.why
        )
    }
}

/// The state directory once `host` is gone: kept, or with `purge` removed once no other host is
/// set up. Only the hooks' own entries go (anything else in it stays, listed), never through a
/// link; a dry run removes nothing.
fn state(
    state_root: &Path,
    host: Host,
    purge: bool,
    dry: bool,
    kept: &mut Vec<Kept>,
) -> Result<Option<StateNote>> {
    let Ok(meta) = fs::symlink_metadata(state_root) else {
        return Ok(None);
    };
    // Nothing in it: the folders setup created go below, and there is nothing to keep.
    if !meta.is_dir() || fs::read_dir(state_root).map_or(true, |mut d| d.next().is_none()) {
        return Ok(None);
    }
    let spooled_captures = spooled(state_root);
    let others = Host::ALL
        .into_iter()
        .any(|h| h != host && install::manifest_path(state_root, h).exists());
    let note = |action, why| {
        Ok(Some(StateNote {
            path: state_root.to_path_buf(),
            action,
            spooled_captures,
            why,
        }))
    };
    if !purge {
        return note("kept", "`uninstall --purge` removes it");
    }
    if others {
        return note(
            "kept",
            "other hosts are still set up; `uninstall --purge` of the last one removes it",
        );
    }
    if !dry {
        for e in fs::read_dir(state_root)
            .with_context(|| format!("cannot read {}", state_root.display()))?
            .flatten()
        {
            let Some(name) = e.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let dir = e.file_type().is_ok_and(|t| t.is_dir());
            if !is_state_entry(&name, dir) {
                kept.push(Kept::because(&e.path(), None, "not the hooks': left in place"));
                continue;
            }
            let removed = if dir {
                fs::remove_dir_all(e.path())
            } else {
                fs::remove_file(e.path())
            };
            removed.with_context(|| format!("cannot remove {}", e.path().display()))?;
        }
        let _ = fs::remove_dir(state_root);
    }
    note("removed", "--purge")
}

/// Removes `dir` and its subdirectories bottom-up when they are empty (never a file).
fn remove_empty_dirs(dir: &Path) {
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_empty_dirs(&e.path());
            }
        }
    }
    let _ = fs::remove_dir(dir);
}
