//! Install machinery shared by `setup`, `uninstall` and `doctor` (each host's own part is in
//! `hosts/`): template rendering, atomic file writes, the ownership manifest, byte-exact snapshots
//! for rollback, and the line-preserving edit of our own config file. It never writes a file it was
//! not asked to, never overwrites bytes it cannot restore, and never keeps a token anywhere but the
//! config file.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use powercontext_hooks_core::state::{self, Opened, StateDir, StateError};
use powercontext_hooks_core::workspace::sha256_hex;
use serde::{Deserialize, Serialize};

use crate::support::textstyle::Style;

/// A host setup knows how to wire: the core library's one host list.
pub use powercontext_hooks_core::host::Integration as Host;

/// The value parser of every `<host>` argument: one of the core library's host names.
pub fn host_arg() -> impl clap::builder::TypedValueParser<Value = Host> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(Host::ALL.map(Host::as_str))
        .map(|name: String| Host::parse(&name).expect("clap only passes a listed host name"))
}

/// The host table's CLI columns as methods: executables, versions, how the hook command is written.
pub trait HostExt: Copy {
    /// Our hook executable's file name.
    fn hook_exe(self) -> &'static str;
    /// The host CLI's executable name.
    fn cli_name(self) -> &'static str;
    /// Variables our calls of the host CLI set: they only list and register, so nothing the
    /// host would do besides (Claude's CLI writes and tries to send telemetry events under
    /// `~/.claude` on every call, so even a dry run would leave files).
    fn cli_env(self) -> &'static [(&'static str, &'static str)];
    /// Host versions our real-host tests cover (the pins in tests/e2e/**/package.json).
    fn tested_versions(self) -> &'static [&'static str];
    /// The `{{hook_command}}` value: Claude Code and Codex hand it to `sh -c` inside a JSON
    /// string; the JavaScript shims spawn it directly from a string literal (no shell quoting).
    ///
    /// # Errors
    /// A path that is not UTF-8.
    fn hook_command_value(self, exe: &Path) -> Result<String>;
}

impl HostExt for Host {
    fn hook_exe(self) -> &'static str {
        self.spec().hook_exe
    }

    fn cli_name(self) -> &'static str {
        self.spec().cli.name
    }

    fn cli_env(self) -> &'static [(&'static str, &'static str)] {
        self.spec().cli.env
    }

    fn tested_versions(self) -> &'static [&'static str] {
        self.spec().cli.tested_versions
    }

    fn hook_command_value(self, exe: &Path) -> Result<String> {
        let command = if self.spec().capabilities.hook_command_in_shell {
            hook_command_shell(exe)?
        } else {
            exe.to_str()
                .with_context(|| format!("{} is not a UTF-8 path", exe.display()))?
                .to_owned()
        };
        let quoted = serde_json::Value::String(command).to_string();
        Ok(quoted[1..quoted.len() - 1].to_owned())
    }
}

/// Plugin and marketplace name in both templates.
pub const PLUGIN_ID: &str = "powercontext@powercontext";
/// The marketplace name in both templates.
pub const MARKETPLACE: &str = "powercontext";

/// The command line the host runs (before JSON escaping).
pub fn hook_command_shell(exe: &Path) -> Result<String> {
    let path = exe
        .to_str()
        .with_context(|| format!("{} is not a UTF-8 path", exe.display()))?;
    let safe = path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(&b));
    Ok(if safe {
        path.to_owned()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    })
}

/// Where setup keeps the header value OpenCode's MCP entry reads through `{file:…}`: owner-only,
/// in our install folder, never in the host's config (which users commit to dotfiles).
pub const MCP_AUTHORIZATION_FILE: &str = "mcp-authorization";

/// The MCP headers helper command line (`<cli> mcp-headers <host> [--config FILE] [--env N=V]…`),
/// shell-quoted where needed; no token, only where to find it.
pub fn mcp_headers_command(
    cli: &Path,
    host: Host,
    config: Option<&Path>,
    env: &[(&str, &str)],
) -> Result<String> {
    let mut line = format!("{} mcp-headers {}", hook_command_shell(cli)?, host.as_str());
    if let Some(c) = config {
        line.push_str(" --config ");
        line.push_str(&hook_command_shell(c)?);
    }
    for (name, value) in env {
        line.push_str(" --env ");
        line.push_str(&hook_command_shell(Path::new(&format!("{name}={value}")))?);
    }
    Ok(line)
}

/// Renders a template in one pass, refusing to leave a placeholder behind. Values are never
/// scanned again: a path holding `{{` is written as it is.
pub fn render(template: &str, values: &[(&str, &str)]) -> Result<String> {
    let mut text = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        text.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let value = after.find("}}").and_then(|close| {
            let (name, tail) = (&after[..close], &after[close + 2..]);
            values.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v, tail))
        });
        let Some((value, tail)) = value else {
            bail!("internal error: an installer template has an unknown placeholder");
        };
        text.push_str(value);
        rest = tail;
    }
    text.push_str(rest);
    Ok(text)
}

/// SHA-256 of bytes as `sha256:<hex>`.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

/// `sha256:` of a JSON value's compact form (how the manifest identifies our MCP entry).
pub fn value_digest(v: &serde_json::Value) -> String {
    digest(v.to_string().as_bytes())
}

/// The largest host or config file read: real ones are kilobytes, and a bound keeps a file
/// turned into `/dev/zero` or a huge one from eating memory.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Reads a file, `None` when it does not exist. A link to a regular file is fine (dotfile
/// managers link host settings); anything else (a FIFO, a device, a directory) is refused
/// without being opened for a blocking read, and so is a file over [`MAX_FILE_BYTES`].
pub fn read_opt(path: &Path) -> Result<Option<Vec<u8>>> {
    read_bounded(path, MAX_FILE_BYTES)
}

/// [`read_opt`] with its own size cap.
pub fn read_bounded(path: &Path, cap: u64) -> Result<Option<Vec<u8>>> {
    use powercontext_hooks_core::bounded::{self, Links, Problem};
    match bounded::read(path, cap, Links::Follow) {
        Ok(found) => Ok(found.map(|(bytes, _)| bytes)),
        Err(Problem::NotRegular) => bail!(
            "{} is not a regular file; powercontext-hooks reads only regular files: replace it with one",
            path.display()
        ),
        Err(Problem::TooLarge) => bail!(
            "{} is larger than {} KiB; powercontext-hooks does not read it: check that it is the right file",
            path.display(),
            cap / 1024
        ),
        Err(Problem::Unreadable(e)) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Creates `dir` and any missing ancestor owner-only (0700) from the start: a folder that may
/// come to hold a token never exists with a wider mode, even for an instant. Folders that already
/// exist keep their mode.
pub fn create_dirs(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}

/// How long `setup` or `uninstall` waits for another run of either to finish.
const USER_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// One per-user lock shared by `setup` and `uninstall`: an exclusive `flock` on the state
/// directory itself (owner-only, 0700, never a link; no lock file that could be left behind or
/// planted), held from before the plan reads anything until the last write, so two runs never
/// edit from the same stale reading (one's config section or rollback silently undoing the
/// other's). Released on drop. When taking it created the state directory,
/// [`UserLock::discard`] takes that back on a run that wrote nothing.
#[derive(Debug)]
pub struct UserLock {
    _dir: fs::File,
    /// The folders taking the lock created, outermost first.
    created: Vec<PathBuf>,
}

impl UserLock {
    /// Takes the lock on `state_root` (created 0700 when missing), waiting for another run.
    ///
    /// # Errors
    /// The state folder is unusable (a link, not a folder, another user's), or another run held
    /// the lock for [`USER_LOCK_WAIT`].
    pub fn take(state_root: &Path) -> Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let until = std::time::Instant::now() + USER_LOCK_WAIT;
        let mut pause = std::time::Duration::from_millis(2);
        let mut created: Vec<PathBuf> = Vec::new();
        loop {
            for d in missing_ancestors(&state_root.join("x")).into_iter().rev() {
                if !created.contains(&d) {
                    created.push(d);
                }
            }
            create_dirs(state_root)?;
            if let Some(problem) = install_folder_problem(state_root)? {
                bail!(
                    "{} {problem}; powercontext-hooks keeps its state only in a directory of its own: remove it \
                     (or point POWERCONTEXT_HOOKS_STATE_DIR elsewhere) and run the command again",
                    state_root.display()
                );
            }
            let dir = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc_flags::DIRECTORY | powercontext_hooks_core::lock::no_follow_flags())
                .open(state_root)
                .with_context(|| format!("cannot open {}", state_root.display()))?;
            let meta = dir.metadata()?;
            if !meta.is_dir() || meta.uid() != state::euid() {
                bail!(
                    "{} is not a directory of this user; remove it and run the command again",
                    state_root.display()
                );
            }
            if powercontext_hooks_core::lock::try_lock_file(&dir)
                .with_context(|| format!("cannot lock {}", state_root.display()))?
            {
                // An uninstall that removed the folder while we waited: lock the one in place now.
                let same = fs::symlink_metadata(state_root)
                    .is_ok_and(|m| m.ino() == meta.ino() && m.dev() == meta.dev());
                if same {
                    return Ok(Self { _dir: dir, created });
                }
                continue;
            }
            if std::time::Instant::now() >= until {
                bail!(
                    "another powercontext-hooks setup or uninstall has been running for {} s (it holds {}); \
                     let it finish, or end it, then run the command again",
                    USER_LOCK_WAIT.as_secs(),
                    state_root.display()
                );
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(50));
        }
    }

    /// The folders taking the lock created, outermost first (setup records them as its own).
    #[must_use]
    pub fn created(&self) -> &[PathBuf] {
        &self.created
    }

    /// For a run that ended without keeping anything: the folders taking the lock created are
    /// removed again while they are empty (a refused or rolled-back run leaves no trace); a folder
    /// another run has written into meanwhile stays.
    pub fn discard(self) {
        for d in self.created.iter().rev() {
            if fs::remove_dir(d).is_err() {
                break;
            }
        }
    }
}

/// `open(2)` flags not in std.
mod libc_flags {
    /// `O_DIRECTORY`: fail unless the path is a directory.
    #[expect(clippy::cast_possible_wrap, reason = "open(2) flags fit an int")]
    pub const DIRECTORY: i32 = rustix::fs::OFlags::DIRECTORY.bits() as i32;
}

/// An unguessable temp-file suffix: another local user cannot aim at the name ahead of time.
fn temp_suffix() -> String {
    let mut raw = [0u8; 12];
    let random = fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut raw));
    if random.is_err() {
        // No urandom (a bare chroot): the clock's nanoseconds and our address space still vary.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mixed = sha256_hex(format!("{nanos}-{}-{:p}", std::process::id(), &raw).as_bytes());
        return mixed[..24].to_owned();
    }
    raw.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `bytes` to `path` atomically: temp file in the same directory, fsync, rename, fsync of
/// the directory. The temp file has an unguessable name and is created exclusively, never through
/// a link, owner-only (0600) from its first byte (the mode is given to `open`, not set after), so
/// no other user can ever hold a descriptor on what it will contain. `private` keeps the file
/// 0600 (it may hold a token); otherwise it gets the mode of the file it replaces (0644 for a new
/// one) just before the rename. Missing folders are created 0700.
pub fn write_atomic(path: &Path, bytes: &[u8], private: bool) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().context("a target path has no parent directory")?;
    create_dirs(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let mut n = 0u32;
    let (tmp, mut file) = loop {
        let tmp = dir.join(format!(".{name}.pc-setup-{}.tmp", temp_suffix()));
        let opened = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(powercontext_hooks_core::lock::no_follow_flags())
            .open(&tmp);
        match opened {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
            Err(e) => {
                return Err(e).with_context(|| format!("cannot create a temp file in {}", dir.display()));
            }
        }
    };
    let result = (|| -> std::io::Result<()> {
        // A umask never widens it, but a planted default ACL could: set it exactly.
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
        file.write_all(bytes)?;
        if !private {
            // Keep the mode of the file being replaced (e.g. a user's 0640 config).
            let mode = fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o777);
            file.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

/// The file a symbolic link finally names (relative links resolved against their directory), or
/// `path` itself when it is not a link. The target need not exist.
pub fn link_target(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    for _ in 0..16 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => match fs::read_link(&p) {
                Ok(t) if t.is_absolute() => p = t,
                Ok(t) => p = p.parent().map_or(t.clone(), |d| d.join(&t)),
                Err(_) => break,
            },
            _ => break,
        }
    }
    p
}

/// [`write_atomic`] for a user's configuration file that may be a dotfile link: the link's target
/// is replaced and the link stays a link.
pub fn write_through(path: &Path, bytes: &[u8], private: bool) -> Result<()> {
    write_atomic(&link_target(path), bytes, private)
}

/// What a path held before this run touched it.
#[derive(Debug, Clone)]
enum Before {
    File(Vec<u8>, u32),
    /// A symbolic link (as written) to `target`, which held these bytes (or nothing).
    Link {
        link: PathBuf,
        target: PathBuf,
        bytes: Option<(Vec<u8>, u32)>,
    },
    Absent,
    /// A directory that did not exist: removed whole on rollback.
    NoDir,
    /// A directory that existed, with its entry names: entries added later are removed.
    Dir(Vec<std::ffi::OsString>),
}

/// The missing ancestors of `path`, its parent first.
fn missing_ancestors(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .skip(1)
        .take_while(|d| !d.as_os_str().is_empty() && fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect()
}

/// Whether `dir` names a folder by itself: absolute, no `.` or `..` (whose meaning depends on
/// what exists when it is read), so removing it later can only ever remove that folder.
fn plain_dir(dir: &Path) -> bool {
    dir.is_absolute()
        && dir
            .components()
            .all(|c| matches!(c, std::path::Component::RootDir | std::path::Component::Normal(_)))
}

/// Byte-exact snapshots of every path a run may change, restored in reverse on failure.
#[derive(Debug, Default)]
pub struct Journal {
    entries: Vec<(PathBuf, Before)>,
    /// Every folder setup creates for a file of its own, deepest last (see [`Journal::made`]).
    made: Vec<PathBuf>,
    /// The files setup itself writes.
    files: Vec<PathBuf>,
    /// What this run wrote to a recorded path: a path holding neither that nor its recorded
    /// bytes was changed by someone else since, and rollback leaves it alone.
    written: Vec<(PathBuf, Vec<u8>)>,
}

impl Journal {
    /// Records a file's current bytes (or absence), once.
    pub fn file(&mut self, path: &Path) -> Result<()> {
        if self.entries.iter().any(|(p, _)| p == path) {
            return Ok(());
        }
        if let Ok(m) = fs::symlink_metadata(path)
            && m.file_type().is_symlink()
        {
            let target = link_target(path);
            let bytes = read_opt(&target)?.map(|b| {
                let mode = fs::metadata(&target).map_or(0o644, |m| m.permissions().mode() & 0o777);
                (b, mode)
            });
            let link =
                fs::read_link(path).with_context(|| format!("cannot read the link {}", path.display()))?;
            self.entries
                .push((path.to_path_buf(), Before::Link { link, target, bytes }));
            return Ok(());
        }
        let before = match read_opt(path)? {
            Some(b) => {
                let mode = fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o777);
                Before::File(b, mode)
            }
            None => Before::Absent,
        };
        self.entries.push((path.to_path_buf(), before));
        Ok(())
    }

    /// Records folders this run created before the journal started (the state directory, made
    /// to hold the setup lock), outermost first: uninstall removes them once they are empty.
    pub fn made_before(&mut self, dirs: &[PathBuf]) {
        for d in dirs.iter().filter(|d| plain_dir(d)) {
            if !self.made.contains(d) {
                self.made.push(d.clone());
            }
        }
    }

    /// Notes what this run wrote to `path` (see [`Journal::restore`]).
    pub fn wrote(&mut self, path: &Path, bytes: &[u8]) {
        self.written.push((path.to_path_buf(), bytes.to_vec()));
    }

    /// Whether `path` holds something neither recorded before nor written by this run: another
    /// program's change, which rollback must never erase.
    fn changed_by_others(&self, path: &Path, before: Option<&[u8]>) -> bool {
        let Some((_, ours)) = self.written.iter().rev().find(|(p, _)| p == path) else {
            return false;
        };
        match read_opt(path) {
            Ok(now) => now.as_deref() != Some(ours.as_slice()) && now.as_deref() != before,
            Err(_) => false,
        }
    }

    /// Records whether a directory exists; one that did not is removed whole on rollback.
    pub fn dir(&mut self, path: &Path) {
        if self.entries.iter().any(|(p, _)| p == path) {
            return;
        }
        let before = match fs::read_dir(path) {
            Ok(entries) => Before::Dir(entries.flatten().map(|e| e.file_name()).collect()),
            Err(_) => Before::NoDir,
        };
        self.entries.push((path.to_path_buf(), before));
    }

    /// Records the outermost missing ancestor of a file setup itself writes (so rollback removes
    /// what we created), and every missing folder on the way to it (so uninstall can remove them
    /// once they are empty again, wherever they are: a host's config folder made only for our
    /// entry goes too).
    pub fn created_dirs_of(&mut self, path: &Path) {
        self.files.push(path.to_path_buf());
        let missing = missing_ancestors(path);
        for d in missing.iter().rev().filter(|d| plain_dir(d)) {
            if !self.made.contains(d) {
                self.made.push(d.clone());
            }
        }
        if let Some(d) = missing.last() {
            self.dir(d);
        }
    }

    /// [`Journal::created_dirs_of`] for a path the host's CLI may create: rolled back on failure,
    /// but the host's, so never removed by uninstall.
    pub fn host_dirs_of(&mut self, path: &Path) {
        if let Some(d) = missing_ancestors(path).last() {
            self.dir(d);
        }
    }

    /// The folders created for files of ours that exist now, outermost first.
    pub fn made(&self) -> Vec<PathBuf> {
        self.made.iter().filter(|d| d.is_dir()).cloned().collect()
    }

    /// Whether `dir` holds a file setup itself writes.
    pub fn holds_ours(&self, dir: &Path) -> bool {
        self.files.iter().any(|f| f.starts_with(dir))
    }

    /// A host CLI that replaced a recorded link with a regular file: its new bytes go to the
    /// link's target and the link is put back (the file stays edited through the link).
    pub fn relink(&self) -> Result<()> {
        for (path, before) in &self.entries {
            let Before::Link { link, target, .. } = before else {
                continue;
            };
            let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            if is_link {
                continue;
            }
            if let Some(bytes) = read_opt(path)? {
                write_atomic(target, &bytes, false)?;
                fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
            }
            std::os::unix::fs::symlink(link, path)
                .with_context(|| format!("cannot put the link {} back", path.display()))?;
        }
        Ok(())
    }

    /// Gives back the byte-order mark and CRLF line ends a host CLI dropped when it rewrote a
    /// recorded file (Claude Code's `claude plugin …` rewrites `settings.json` with neither), so
    /// the file keeps the user's conventions. Content the host wrote is kept as it is.
    pub fn restyle(&self) -> Result<()> {
        for (path, before) in &self.entries {
            let before = match before {
                Before::File(b, _)
                | Before::Link {
                    bytes: Some((b, _)), ..
                } => b,
                _ => continue,
            };
            let Some(now) = read_opt(path)? else { continue };
            if let Some(styled) = restyled(before, &now) {
                write_through(path, &styled, false)?;
            }
        }
        Ok(())
    }

    /// Puts every recorded path back; returns the paths it could not restore.
    pub fn restore(&self) -> Vec<PathBuf> {
        let mut failed = Vec::new();
        for (path, before) in self.entries.iter().rev() {
            let recorded = match before {
                Before::File(b, _) => Some(b.as_slice()),
                _ => None,
            };
            if matches!(before, Before::File(..) | Before::Absent) && self.changed_by_others(path, recorded) {
                failed.push(path.clone());
                continue;
            }
            let ok = match before {
                Before::File(bytes, mode) => {
                    let same = read_opt(path).is_ok_and(|b| b.as_ref() == Some(bytes));
                    same || write_atomic(path, bytes, false)
                        .and_then(|()| {
                            fs::set_permissions(path, fs::Permissions::from_mode(*mode)).context("chmod")
                        })
                        .is_ok()
                }
                Before::Link { link, target, bytes } => {
                    let content_ok = match bytes {
                        Some((b, mode)) => {
                            read_opt(target).is_ok_and(|now| now.as_ref() == Some(b))
                                || write_atomic(target, b, false)
                                    .and_then(|()| {
                                        fs::set_permissions(target, fs::Permissions::from_mode(*mode))
                                            .context("chmod")
                                    })
                                    .is_ok()
                        }
                        None => match fs::remove_file(target) {
                            Ok(()) => true,
                            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
                        },
                    };
                    let link_ok = fs::read_link(path).is_ok_and(|l| &l == link)
                        || ((fs::remove_file(path).is_ok() || fs::symlink_metadata(path).is_err())
                            && std::os::unix::fs::symlink(link, path).is_ok());
                    content_ok && link_ok
                }
                // Asked first: a read-only file system refuses even to remove what is not there.
                Before::Absent => !exists(path) || fs::remove_file(path).is_ok(),
                Before::NoDir => !exists(path) || fs::remove_dir_all(path).is_ok(),
                Before::Dir(names) => fs::read_dir(path).map_or(true, |entries| {
                    entries
                        .flatten()
                        .filter(|e| !names.contains(&e.file_name()))
                        .all(|e| {
                            let p = e.path();
                            if e.file_type().is_ok_and(|t| t.is_dir()) {
                                fs::remove_dir_all(&p).is_ok()
                            } else {
                                fs::remove_file(&p).is_ok()
                            }
                        })
                }),
            };
            if !ok {
                failed.push(path.clone());
            }
        }
        failed
    }
}

/// Whether anything (a link included) is at `path`; `true` when that cannot be told.
fn exists(path: &Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(_) => true,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
        ),
    }
}

/// One file we wrote, with the hash of what we wrote.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct OwnedFile {
    /// Absolute path.
    pub path: PathBuf,
    /// `sha256:<hex>` of the bytes we wrote.
    pub sha256: String,
}

/// Keys we set in our config file (`[hosts.<host>]`), by the hash of the line we wrote (a line
/// may hold a token, so the manifest never keeps the text).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct OwnedConfig {
    /// The config file.
    pub path: PathBuf,
    /// Whether we added the `[hosts.<host>]` header.
    pub created_table: bool,
    /// Whether setup created the file (uninstall removes it once nothing else is left in it).
    #[serde(default)]
    pub created_file: bool,
    /// key → `sha256:` of the line we wrote.
    pub keys: BTreeMap<String, String>,
    /// key → the line the user had before setup replaced it (put back by uninstall). Never the
    /// `authorization` line: that one waits in the owner-only [`PRIOR_AUTHORIZATION_FILE`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub previous: BTreeMap<String, String>,
}

/// Beside the manifest, mode 0600: the `authorization` line the user had in `[hosts.<host>]`
/// before setup replaced it, put back by uninstall (the manifest never holds a token).
pub const PRIOR_AUTHORIZATION_FILE: &str = "prior-authorization.toml";

/// The line setting `key` in `[hosts.<host>]`, if any (plain text: no mark, LF).
pub fn config_line(text: &str, host: &str, key: &str) -> Option<String> {
    let (_, plain) = Style::split(text);
    let lines: Vec<&str> = plain.lines().collect();
    let header = lines.iter().position(|l| header_matches(l, host))?;
    lines[header + 1..]
        .iter()
        .take_while(|l| !is_table_header(l))
        .find(|l| key_of(l).as_deref() == Some(key))
        .map(|l| (*l).to_owned())
}

/// A member we added to a host's JSONC config (OpenCode's `mcp.powercontext`): where, how, and
/// the hash of the value we wrote (compact JSON), so uninstall removes it only while unchanged.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct OwnedEntry {
    /// The config file.
    pub path: PathBuf,
    /// The parent object's key (`mcp`); empty for a member of the root (Claude Code's
    /// `statusLine`).
    pub parent: String,
    /// Our key (`powercontext`).
    pub key: String,
    /// `sha256:` of the compact JSON of the value we wrote.
    pub sha256: String,
    /// We created the file.
    pub created_file: bool,
    /// How the member was inserted (to undo it byte for byte).
    pub inserted: crate::support::jsonc::Inserted,
}

impl OwnedEntry {
    /// `parent.key`, or `key` for a root member.
    #[must_use]
    pub fn member(&self) -> String {
        if self.parent.is_empty() {
            self.key.clone()
        } else {
            format!("{}.{}", self.parent, self.key)
        }
    }
}

/// Claude Code's settings member for a status-line command.
pub const STATUSLINE_KEY: &str = "statusLine";

/// Host registrations this tool made (and so may undo).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Registrations {
    /// We added the `powercontext` marketplace.
    pub marketplace: bool,
    /// We installed `powercontext@powercontext`.
    pub plugin: bool,
    /// We recorded Codex hook trust.
    #[serde(default)]
    pub trust: bool,
}

/// One JSON member we set in a shared file, with the value it replaced.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct OwnedMember {
    /// The file.
    pub path: PathBuf,
    /// `sha256:` of the compact JSON we wrote.
    pub sha256: String,
    /// The value before setup (non-secret), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior: Option<serde_json::Value>,
    /// Setup created the file.
    #[serde(default)]
    pub created_file: bool,
    /// How the member was inserted (when there was none before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inserted: Option<crate::support::jsonc::Inserted>,
}

/// The credential file we wrote.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct OwnedCredential {
    /// The file.
    pub path: PathBuf,
    /// `sha256:` of the bytes we wrote.
    pub sha256: String,
}

/// Everything setup wrote for one host to the files the official CLI also reads
/// (`installer::shared_files`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct OwnedShared {
    /// `clients.json` `hosts.<host>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<OwnedMember>,
    /// `credentials.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<OwnedCredential>,
    /// Claude Code's `pluginConfigs["powercontext@powercontext"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claude_options: Option<OwnedMember>,
}

impl OwnedShared {
    /// Nothing recorded.
    pub fn is_empty(&self) -> bool {
        self.clients.is_none() && self.credentials.is_none() && self.claude_options.is_none()
    }
}

/// What setup added to a host's settings file, so uninstall (and the next setup) removes exactly
/// that and nothing the user or another tool wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedHooks {
    /// The settings file.
    pub path: PathBuf,
    /// We created the file.
    pub created_file: bool,
    /// Our entries, in the order they were added.
    pub entries: Vec<OwnedHook>,
}

/// One matcher group we added to `hooks.<event>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedHook {
    /// The host event (`UserPromptSubmit`).
    pub event: String,
    /// `sha256:` of the compact JSON of the group we added.
    pub sha256: String,
    /// The `hooks.<event>` list did not exist: we added the member (and maybe `hooks` itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<crate::support::jsonc::Inserted>,
    /// The list was empty, with this text between its brackets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty_inner: Option<String>,
    /// The object holding the list when it is not `hooks` (ZCode's plugin list: `plugins.dirs`,
    /// where `event` is `dirs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// The ownership manifest: what `setup` wrote for one host, so `uninstall` removes only that and
/// a re-run can tell our files from a user's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    /// Format version.
    pub schema: u32,
    /// Always `powercontext-hooks`.
    pub owner: String,
    /// Host name.
    pub host: String,
    /// powercontext-hooks version that wrote it.
    pub version: String,
    /// The plugin folder.
    pub plugin_dir: PathBuf,
    /// The hook executable wired in.
    pub hook_exe: PathBuf,
    /// The copy of the hook executable setup made (`hook_exe`) and its digest: uninstall removes
    /// it while it is still that copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<OwnedFile>,
    /// Files we own.
    pub files: Vec<OwnedFile>,
    /// Config keys we own.
    pub config: Option<OwnedConfig>,
    /// Host registrations we made.
    pub registrations: Registrations,
    /// Members we added to the host's own config (OpenCode's MCP entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_entry: Option<OwnedEntry>,
    /// The DSH profile we installed into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The host's settings file as setup found it (member names only): uninstall removes what
    /// the host CLI added there and left empty, and puts the members back in this order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_settings: Option<HostSettings>,
    /// What we wrote to the files the official CLI reads.
    #[serde(default, skip_serializing_if = "OwnedShared::is_empty")]
    pub shared: OwnedShared,
    /// Folders setup created for its files (outermost first): uninstall removes each one that is
    /// empty again, so a home is left as setup found it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<PathBuf>,
    /// The hook entries we added to the host's own settings file (settings-hooks hosts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings_hooks: Option<OwnedHooks>,
}

/// A host settings file's root members before the first setup, in their order (names only,
/// never values): the host CLI adds members and reorders them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct HostSettings {
    /// The host's settings file.
    pub path: PathBuf,
    /// Its root members, in order (empty when there was no file).
    pub members: Vec<String>,
    /// Whether the file was there at all (a manifest from before this was recorded says yes, so
    /// uninstall never removes a file it cannot prove setup's host CLI created).
    #[serde(default = "existed_before")]
    pub existed: bool,
}

fn existed_before() -> bool {
    true
}

/// Where setup keeps one host's plugin folder and manifest: `<state>/installs/<host>/`.
pub fn install_dir(state_root: &Path, host: Host) -> PathBuf {
    state_root.join("installs").join(host.as_str())
}

/// The manifest path.
pub fn manifest_path(state_root: &Path, host: Host) -> PathBuf {
    install_dir(state_root, host).join("manifest.json")
}

/// What is wrong with one folder on the way to `installs/<host>`, if anything: it must be a real
/// directory (never a symlink) owned by this user. A loose mode is not a problem here (setup
/// tightens it); `None` also when the folder does not exist yet.
fn install_folder_problem(path: &Path) -> Result<Option<&'static str>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot inspect {}", path.display())),
    };
    Ok(if meta.file_type().is_symlink() {
        Some("is a symlink")
    } else if !meta.is_dir() {
        Some("is not a directory")
    } else if meta.uid() != state::euid() {
        Some("is owned by another user")
    } else {
        None
    })
}

/// Refuses an `installs/` or `installs/<host>` folder that is a symlink, not a directory or not
/// ours: setup would otherwise write the plugin, the manifest and a kept token wherever it points.
/// Read-only (a dry run and `doctor` change nothing).
///
/// # Errors
/// The folder, what is wrong with it and the fix.
pub fn check_install_dirs(state_root: &Path, host: Host) -> Result<()> {
    let installs = state_root.join("installs");
    for dir in [installs.clone(), installs.join(host.as_str())] {
        if let Some(problem) = install_folder_problem(&dir)? {
            bail!(
                "{} {problem}; powercontext-hooks keeps its plugin folders and manifests only in a directory of its own: \
                 remove {} (setup recreates it) and run the command again",
                dir.display(),
                dir.display()
            );
        }
    }
    Ok(())
}

/// Refuses a plugin folder of ours that is a symlink, not a directory or another user's: setup
/// would otherwise write the plugin through it into wherever it points, and uninstall would empty
/// that place and leave the link. Read-only.
///
/// # Errors
/// The folder, what is wrong with it and the fix.
pub fn check_plugin_dir(dir: &Path) -> Result<()> {
    if let Some(problem) = install_folder_problem(dir)? {
        bail!(
            "the plugin folder {} {problem}; powercontext-hooks writes its plugin only into a real folder of its \
             own: remove {} (setup creates it) and run setup again",
            dir.display(),
            dir.display()
        );
    }
    Ok(())
}

/// Creates (0700) or checks the state directory, `installs/` and `installs/<host>/` before setup
/// writes under them: each a real directory owned by this user (never a symlink), a loose mode
/// tightened to 0700. Returns the `installs/<host>` folder.
///
/// # Errors
/// A folder that is another user's, a symlink or not a directory (named, with the fix), or the
/// I/O error.
pub fn ensure_install_dirs(state_root: &Path, host: Host) -> Result<PathBuf> {
    check_install_dirs(state_root, host)?;
    let state = StateDir::at(state_root);
    state.ensure(Some("installs")).map_err(|e| match e {
        StateError::Unsafe => anyhow::anyhow!(
            "{} is owned by another user (or is not a directory): it is never used; remove it, or set \
             POWERCONTEXT_HOOKS_STATE_DIR to a directory you own",
            state_root.display()
        ),
        e => anyhow::Error::new(e).context(format!("cannot prepare {}", state_root.display())),
    })?;
    let installs = StateDir::at(state_root.join("installs"));
    installs
        .ensure(Some(host.as_str()))
        .with_context(|| format!("cannot prepare {}", installs.path().display()))?;
    // Checked again now that the folders exist and only this user can change them.
    check_install_dirs(state_root, host)?;
    Ok(install_dir(state_root, host))
}

/// Reads a file setup keeps under `installs/<host>` (the manifest, a kept token): owner-only,
/// never through a symlink, at most [`state::MAX_FILE_BYTES`]; `None` when it does not exist.
///
/// # Errors
/// A symlink, non-regular, foreign or oversized file (named, with the fix), or the I/O error.
pub fn read_private(path: &Path) -> Result<Option<Vec<u8>>> {
    let opened = state::open_state_file(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut file = match opened {
        Opened::File(f, _) => f,
        Opened::Missing => return Ok(None),
        Opened::NotRegular => bail!(
            "{} is a symlink or not a regular file; powercontext-hooks never reads it: remove it",
            path.display()
        ),
        Opened::Unsafe => bail!(
            "{} is owned by another user or writable by others; powercontext-hooks never reads it: remove it",
            path.display()
        ),
    };
    match state::read_bounded(&mut file).with_context(|| format!("cannot read {}", path.display()))? {
        Some(bytes) => Ok(Some(bytes)),
        None => bail!("{} is too large to be ours: remove it", path.display()),
    }
}

/// `now` in the conventions of `before` (a UTF-8 byte-order mark, CRLF line ends), or `None`
/// when it already follows them or `before` had neither.
#[must_use]
pub fn restyled(before: &[u8], now: &[u8]) -> Option<Vec<u8>> {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    let crlf = |b: &[u8]| {
        let lfs = b.iter().filter(|&&c| c == b'\n').count();
        lfs > 0 && b.windows(2).filter(|w| w == b"\r\n").count() == lfs
    };
    let want_bom = before.starts_with(BOM);
    let want_crlf = crlf(before);
    let body = now.strip_prefix(BOM).unwrap_or(now);
    let bom_ok = !want_bom || now.starts_with(BOM);
    let crlf_ok = !want_crlf || crlf(body) || !body.contains(&b'\n');
    if bom_ok && crlf_ok {
        return None;
    }
    let mut out = Vec::with_capacity(now.len() + now.len() / 16 + 3);
    if want_bom {
        out.extend_from_slice(BOM);
    }
    for (i, &c) in body.iter().enumerate() {
        if want_crlf && c == b'\n' && (i == 0 || body[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(c);
    }
    Some(out)
}

/// Loads the manifest, `None` when setup never ran.
pub fn load_manifest(state_root: &Path, host: Host) -> Result<Option<Manifest>> {
    check_install_dirs(state_root, host)?;
    let path = manifest_path(state_root, host);
    let Some(bytes) = read_private(&path)? else {
        return Ok(None);
    };
    let m: Manifest = serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "the ownership manifest {} is not valid; remove it by hand",
            path.display()
        )
    })?;
    if m.owner != "powercontext-hooks" || m.host != host.as_str() {
        bail!(
            "{} is not a powercontext-hooks manifest for {}",
            path.display(),
            host.as_str()
        );
    }
    Ok(Some(m))
}

/// Serializes a manifest.
pub fn manifest_bytes(m: &Manifest) -> Result<Vec<u8>> {
    let mut v = serde_json::to_vec_pretty(m)?;
    v.push(b'\n');
    Ok(v)
}

// ----- our config file: `[hosts.<host>]` keys, edited line by line so comments survive -----

/// A TOML basic string.
pub fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn is_table_header(line: &str) -> bool {
    line.trim_start().starts_with('[')
}

fn header_matches(line: &str, host: &str) -> bool {
    let t = line.trim();
    let Some(inner) = t.strip_prefix('[').and_then(|r| r.split('#').next()) else {
        return false;
    };
    let inner = inner.trim().trim_end_matches(']').trim();
    if inner.starts_with('[') {
        return false;
    }
    let parts: Vec<String> = inner
        .split('.')
        .map(|p| p.trim().trim_matches('"').trim_matches('\'').to_owned())
        .collect();
    parts == ["hosts", host]
}

fn key_of(line: &str) -> Option<String> {
    let t = line.trim_start();
    if t.starts_with('#') || t.starts_with('[') {
        return None;
    }
    let (k, _) = t.split_once('=')?;
    Some(k.trim().trim_matches('"').to_owned())
}

/// Sets `key = value` lines (values already TOML-encoded) in `[hosts.<host>]`, keeping every other
/// byte. Returns the new text and whether the table header was added.
pub fn config_set(text: &str, host: &str, lines: &[(String, String)]) -> (String, bool) {
    let (style, plain) = Style::split(text);
    let (out, created) = config_set_plain(&plain, host, lines);
    (style.join(&out), created)
}

fn config_set_plain(text: &str, host: &str, lines: &[(String, String)]) -> (String, bool) {
    let mut out: Vec<String> = text.lines().map(str::to_owned).collect();
    let header = out.iter().position(|l| header_matches(l, host));
    let created = header.is_none();
    let header = match header {
        Some(h) => h,
        None => {
            if out.last().is_some_and(|l| !l.trim().is_empty()) {
                out.push(String::new());
            }
            out.push(format!("[hosts.{host}]"));
            out.len() - 1
        }
    };
    for (key, value) in lines {
        let end = out[header + 1..]
            .iter()
            .position(|l| is_table_header(l))
            .map_or(out.len(), |p| header + 1 + p);
        let new_line = format!("{key} = {value}");
        if let Some(i) = (header + 1..end).find(|&i| key_of(&out[i]).as_deref() == Some(key)) {
            out[i] = new_line;
        } else {
            // After the table's last non-blank line.
            let mut at = end;
            while at > header + 1 && out[at - 1].trim().is_empty() {
                at -= 1;
            }
            out.insert(at, new_line);
        }
    }
    let mut s = out.join("\n");
    s.push('\n');
    (s, created)
}

/// Removes the lines we own from `[hosts.<host>]` (only when the line still hashes to what we
/// wrote), and the header when we created it and the table is now empty. Returns the new text
/// and the keys left in place because someone changed them.
pub fn config_remove(text: &str, host: &str, owned: &OwnedConfig) -> (String, Vec<String>) {
    let (style, plain) = Style::split(text);
    let (out, kept) = config_remove_plain(&plain, host, owned);
    (style.join(&out), kept)
}

fn config_remove_plain(text: &str, host: &str, owned: &OwnedConfig) -> (String, Vec<String>) {
    let mut out: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut kept = Vec::new();
    let Some(header) = out.iter().position(|l| header_matches(l, host)) else {
        return (text.to_owned(), owned.keys.keys().cloned().collect());
    };
    for (key, hash) in &owned.keys {
        let end = out[header + 1..]
            .iter()
            .position(|l| is_table_header(l))
            .map_or(out.len(), |p| header + 1 + p);
        match (header + 1..end).find(|&i| key_of(&out[i]).as_deref() == Some(key.as_str())) {
            Some(i) if digest(out[i].as_bytes()) == *hash => match owned.previous.get(key) {
                // The user's own line before setup: put back as it was.
                Some(line) => out[i].clone_from(line),
                None => {
                    out.remove(i);
                }
            },
            Some(_) => kept.push(key.clone()),
            None => {}
        }
    }
    if owned.created_table {
        let end = out[header + 1..]
            .iter()
            .position(|l| is_table_header(l))
            .map_or(out.len(), |p| header + 1 + p);
        if out[header + 1..end].iter().all(|l| l.trim().is_empty()) {
            out.drain(header..end);
            if header > 0 && header == out.len() && out[header - 1].trim().is_empty() {
                out.remove(header - 1);
            }
        }
    }
    if out.is_empty() {
        return (String::new(), kept);
    }
    let mut s = out.join("\n");
    s.push('\n');
    (s, kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_holding_braces_is_written_as_it_is() {
        let t = "exec {{hook_command}} --x {{server_url}}";
        let v = [
            ("hook_command", "/opt/{{weird}}/hook"),
            ("server_url", "http://x"),
        ];
        assert_eq!(render(t, &v).unwrap(), "exec /opt/{{weird}}/hook --x http://x");
        assert!(render("{{nope}}", &v).is_err());
        assert!(render("open {{hook_command", &v).is_err());
    }

    #[test]
    fn a_path_that_was_never_created_counts_as_restored_even_where_removing_fails() {
        // Removing under a regular file fails (ENOTDIR), as it does on a read-only file system
        // (EROFS): what was absent and still is must not be reported as "could not be restored".
        let root = std::env::temp_dir().join(format!("pc-journal-absent-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        let file = root.join("plain");
        fs::write(&file, b"x").unwrap();
        let mut journal = Journal::default();
        journal.entries.push((file.join("never.json"), Before::Absent));
        journal.entries.push((file.join("sub"), Before::NoDir));
        journal.dir(&root.join("made"));
        fs::create_dir(root.join("made")).unwrap();
        assert_eq!(journal.restore(), Vec::<PathBuf>::new());
        assert!(!root.join("made").exists(), "a directory we made is removed");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_rewritten_file_gets_back_its_byte_order_mark_and_crlf() {
        let before = b"\xEF\xBB\xBF{\r\n  \"theme\": \"dark\"\r\n}\r\n";
        let now = b"{\n  \"theme\": \"dark\",\n  \"enabledPlugins\": {}\n}\n";
        assert_eq!(
            restyled(before, now).unwrap(),
            b"\xEF\xBB\xBF{\r\n  \"theme\": \"dark\",\r\n  \"enabledPlugins\": {}\r\n}\r\n"
        );
        // Already in style, or nothing to keep: left alone.
        assert_eq!(restyled(before, &restyled(before, now).unwrap()), None);
        assert_eq!(restyled(b"{\n}\n", now), None);
        // Only the mark, only the line ends.
        assert_eq!(
            restyled(b"\xEF\xBB\xBF{}\n", b"{}\n").unwrap(),
            b"\xEF\xBB\xBF{}\n"
        );
        assert_eq!(restyled(b"{\r\n}\r\n", b"{\n}").unwrap(), b"{\r\n}");
    }

    #[test]
    fn mcp_headers_command_quotes_paths_and_names_only_locations() {
        let line = mcp_headers_command(
            Path::new("/opt/pc hooks/powercontext-hooks"),
            Host::Codex,
            Some(Path::new("/home/u/.config/powercontext-hooks/config.toml")),
            &[("CODEX_HOME", "/home/u/my codex")],
        )
        .unwrap();
        assert_eq!(
            line,
            "'/opt/pc hooks/powercontext-hooks' mcp-headers codex --config /home/u/.config/powercontext-hooks/config.toml \
             --env 'CODEX_HOME=/home/u/my codex'"
        );
        let mcp = crate::hosts::common::mcp_with_helper(
            r#"{"mcpServers":{"powercontext":{"type":"http","url":"u"}}}"#,
            crate::hosts::codex::HELPER_FIELD,
            &line,
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&mcp).unwrap();
        assert_eq!(
            v["mcpServers"]["powercontext"]["http_headers_helper"],
            line.as_str()
        );
        assert_eq!(v["mcpServers"]["powercontext"]["url"], "u");
    }

    #[test]
    fn config_set_keeps_comments_and_foreign_keys_and_remove_undoes_it() {
        let text = "# mine\nmax_bytes = 600 # keep\n\n[hosts.codex]\n# note\nscope_id = \"x\"\n\n[hosts.pi]\nserver_url = \"http://127.0.0.1:1\"\n";
        let lines = vec![
            ("server_url".to_owned(), toml_string("http://127.0.0.1:9")),
            ("scope_id".to_owned(), toml_string("y")),
        ];
        let (new, created) = config_set(text, "codex", &lines);
        assert!(!created);
        assert_eq!(
            new,
            "# mine\nmax_bytes = 600 # keep\n\n[hosts.codex]\n# note\nscope_id = \"y\"\nserver_url = \"http://127.0.0.1:9\"\n\n[hosts.pi]\nserver_url = \"http://127.0.0.1:1\"\n"
        );
        let (new, created) = config_set("a = 1\n", "claude-code", &lines[..1]);
        assert!(created);
        assert_eq!(
            new,
            "a = 1\n\n[hosts.claude-code]\nserver_url = \"http://127.0.0.1:9\"\n"
        );
        let owned = OwnedConfig {
            created_file: false,
            path: PathBuf::new(),
            created_table: true,
            keys: [(
                "server_url".to_owned(),
                digest(b"server_url = \"http://127.0.0.1:9\""),
            )]
            .into(),
            previous: BTreeMap::new(),
        };
        assert_eq!(
            config_remove(&new, "claude-code", &owned),
            ("a = 1\n".to_owned(), vec![])
        );
        // A line the user changed stays.
        let changed = new.replace("127.0.0.1:9", "127.0.0.1:7");
        let (after, kept) = config_remove(&changed, "claude-code", &owned);
        assert_eq!(after, changed);
        assert_eq!(kept, vec!["server_url".to_owned()]);
    }

    #[test]
    fn quoted_headers_match() {
        assert!(header_matches("[hosts.\"claude-code\"]  # x", "claude-code"));
        assert!(header_matches(" [ hosts . codex ]", "codex"));
        assert!(!header_matches("[[hosts.codex]]", "codex"));
        assert!(!header_matches("[hosts.codex.x]", "codex"));
    }

    #[test]
    fn uninstall_puts_back_the_users_own_lines_in_their_style() {
        let text =
            "\u{feff}[hosts.pi]\r\nserver_url = \"http://127.0.0.1:1\" # mine\r\ncapture_prompts = true\r\n";
        let lines = vec![
            ("server_url".to_owned(), toml_string("http://127.0.0.1:9")),
            ("capture_prompts".to_owned(), "false".to_owned()),
        ];
        let (new, created) = config_set(text, "pi", &lines);
        assert!(!created);
        assert_eq!(
            new,
            "\u{feff}[hosts.pi]\r\nserver_url = \"http://127.0.0.1:9\"\r\ncapture_prompts = false\r\n"
        );
        let owned = OwnedConfig {
            created_file: false,
            path: PathBuf::new(),
            created_table: false,
            keys: lines
                .iter()
                .map(|(k, v)| (k.clone(), digest(format!("{k} = {v}").as_bytes())))
                .collect(),
            previous: ["server_url".to_owned(), "capture_prompts".to_owned()]
                .into_iter()
                .map(|k| (k.clone(), config_line(text, "pi", &k).unwrap()))
                .collect(),
        };
        assert_eq!(config_remove(&new, "pi", &owned), (text.to_owned(), vec![]));
    }
}
