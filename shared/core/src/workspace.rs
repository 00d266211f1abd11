//! Workspace identity for scope resolution: the workspace binding key exactly as the official CLI
//! computes it, the client-derived legacy scope of the 0.0.x hooks, Git remote normalization and a
//! deadline-bounded `git` runner. It never sends, logs or stores a path (only SHA-256 digests leave
//! this module), never writes files and never alters the environment `git` runs with.
//!
//! # What the pinned 1.4.1 package does (read from its installed source)
//!
//! The workspace binding key is computed by `_workspace_binding_external_id` in
//! `powercontext/client/cli.py`; `powercontext scope resolve --integration I --cwd DIR` uses it. The
//! Codex session importer (`_workspace_binding_key` in `powercontext/client/session_import.py`)
//! repeats the Codex rule. `powercontext scope binding set … --kind workspace` computes nothing: it
//! stores the literal `--external-id` it is given. The wheel ships no host hook code (`setup` clones
//! it from GitHub), so the CLI is the reference.
//!
//! * `claude-code`, `codex`: `git rev-parse --show-toplevel` in cwd (git from PATH, 2 s timeout,
//!   any failure ignored); its trimmed output when non-empty, else cwd; then `Path.resolve(strict=False)`
//!   (absolute, symlinks resolved, missing parts kept); SHA-256 hex of the path bytes (`os.fsencode`).
//! * `opencode`, `pi`: no git at all; `os.path.abspath(cwd)` (absolute and lexically normalized,
//!   symlinks **not** resolved); SHA-256 hex of its UTF-8. Python's `abspath` keeps a leading `//`
//!   (exactly two slashes) where Node's `path.resolve` would collapse it; we follow the CLI.
//! * `dsh`: the CLI refuses it ("Unsupported workspace integration"). We use the `opencode`/`pi` rule,
//!   since DSH is a Node host like them; a user binds it with an explicit `--external-id`.
//!
//! So for all four CLI-supported hosts the key is a digest of the workspace path, with one
//! precision: for `opencode` and `pi` the key is the cwd itself, never its Git toplevel.
//!
//! The legacy scope (only for Servers without `/v1/scope-bindings/resolve`) follows the 0.0.x hooks:
//! family A (Claude Code, Codex) resolves symlinks in the project root, family B (Pi, OpenCode, DSH)
//! keeps it lexical; the Git-private workstream binding file is deliberately not read.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub use crate::base::sha256_hex;
use crate::deadline::Deadline;
use crate::host::{Integration, WorkspaceKey};

/// The Server's bound on scope ids, counted in characters as the Python hooks count them.
const MAX_SCOPE_CHARS: usize = 256;
/// Every upstream client gives one `git` call at most two seconds.
const GIT_TIMEOUT: Duration = Duration::from_secs(2);
/// More symlink hops than this means a loop (Linux gives up at 40 too).
const MAX_SYMLINK_HOPS: usize = 40;

/// Python's `str.isspace` (what `strip()` and the regex `\s` use): Unicode `White_Space` plus the
/// four ASCII information separators.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// A configured scope id as the upstream hooks bound it: trimmed, empty means unset, at most 256
/// characters verbatim, longer ones replaced by `sha256:<hex of the UTF-8>`.
#[must_use]
pub fn bounded_explicit_scope(raw: &str) -> Option<String> {
    let value = py_strip(raw);
    if value.is_empty() {
        None
    } else if value.chars().count() <= MAX_SCOPE_CHARS {
        Some(value.to_owned())
    } else {
        Some(format!("sha256:{}", sha256_hex(value.as_bytes())))
    }
}

/// A configured scope id as upstream's Node plugins (DSH) bound it: over 256 UTF-16 code units
/// (JavaScript's `length`) it becomes `sha256:<hex of the UTF-8>`; `None` when it fits.
#[must_use]
pub fn bounded_utf16_scope(value: &str) -> Option<String> {
    (value.encode_utf16().count() > MAX_SCOPE_CHARS)
        .then(|| format!("sha256:{}", sha256_hex(value.as_bytes())))
}

/// `<prefix>:<value>`, or `<prefix>:sha256:<hex of value>` when that is over 256 characters.
fn bounded(prefix: &str, value: &str) -> String {
    let candidate = format!("{prefix}:{value}");
    if candidate.chars().count() <= MAX_SCOPE_CHARS {
        candidate
    } else {
        format!("{prefix}:sha256:{}", sha256_hex(value.as_bytes()))
    }
}

/// Normalizes a Git remote to `<host>/<path>` (host lowercased, credentials dropped, `:port` kept,
/// one trailing `.git` removed), as all five upstream hosts do; `None` for local paths, `file:` URLs,
/// other schemes, an empty path, and malformed hosts or ports (where the Python hooks would abort,
/// the Node hooks fall back to the local scope, and so do we).
#[must_use]
pub fn normalize_remote(raw: &str) -> Option<String> {
    let value = py_strip(raw);
    if value.is_empty() {
        return None;
    }
    if !value.contains("://")
        && let Some((host, path)) = match_scp(value)
    {
        let path = normalize_remote_path(path);
        return (!path.is_empty()).then(|| format!("{}/{path}", host.to_lowercase()));
    }
    let url = split_url(value)?;
    if !matches!(url.scheme.as_str(), "http" | "https" | "ssh" | "git") {
        return None;
    }
    let mut host = url_host(&url.netloc)?;
    let path = normalize_remote_path(&url.path);
    (!path.is_empty()).then(|| {
        host.push('/');
        host.push_str(&path);
        host
    })
}

/// Full match of `^(?:[^@/\s]+@)?(?P<host>[^:/\s]+):(?P<path>.+)$`, with the regex's backtracking:
/// the optional user part is tried first, then the whole string as `host:path`.
fn match_scp(value: &str) -> Option<(&str, &str)> {
    if let Some(at) = value.find('@') {
        let user = &value[..at];
        if !user.is_empty()
            && !user.chars().any(|c| c == '/' || is_py_space(c))
            && let Some(found) = match_host_path(&value[at + 1..])
        {
            return Some(found);
        }
    }
    match_host_path(value)
}

fn match_host_path(s: &str) -> Option<(&str, &str)> {
    let end = s.find(|c: char| c == ':' || c == '/' || is_py_space(c))?;
    if end == 0 || !s[end..].starts_with(':') {
        return None;
    }
    let path = &s[end + 1..];
    // `.` matches anything but a newline.
    (!path.is_empty() && !path.contains('\n')).then_some((&s[..end], path))
}

fn normalize_remote_path(path: &str) -> String {
    let joined = path
        .replace('\\', "/")
        .split('/')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("/");
    let stripped = joined.strip_suffix(".git").unwrap_or(&joined);
    stripped.trim_end_matches('/').to_owned()
}

/// The parts of Python 3.11's `urllib.parse.urlsplit` that remote normalization reads.
struct SplitUrl {
    scheme: String,
    netloc: String,
    path: String,
}

fn split_url(raw: &str) -> Option<SplitUrl> {
    let cleaned: String = raw
        .trim_start_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\r' | '\n'))
        .collect();
    let mut rest = cleaned.as_str();
    let mut scheme = String::new();
    if let Some(i) = rest.find(':')
        && i > 0
        && rest.as_bytes()[0].is_ascii_alphabetic()
        && rest[..i]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        scheme = rest[..i].to_ascii_lowercase();
        rest = &rest[i + 1..];
    }
    let mut netloc = "";
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find(['/', '?', '#']).unwrap_or(after.len());
        netloc = &after[..end];
        rest = &after[end..];
        let (open, close) = (netloc.contains('['), netloc.contains(']'));
        if open != close {
            return None;
        }
        if open && !bracketed_host_valid(netloc) {
            return None;
        }
    }
    let path = rest
        .split('#')
        .next()
        .unwrap_or("")
        .split('?')
        .next()
        .unwrap_or("");
    Some(SplitUrl {
        scheme,
        netloc: netloc.to_owned(),
        path: path.to_owned(),
    })
}

/// Python 3.11.4+ refuses a bracketed host that is neither IPv6 nor an `IPvFuture` literal.
fn bracketed_host_valid(netloc: &str) -> bool {
    let inner = netloc.split_once('[').map_or("", |(_, b)| b);
    let host = inner.split_once(']').map_or(inner, |(h, _)| h);
    if let Some(future) = host.strip_prefix('v') {
        let Some((version, rest)) = future.split_once('.') else {
            return false;
        };
        return !version.is_empty() && version.chars().all(|c| c.is_ascii_hexdigit()) && !rest.is_empty();
    }
    let address = host.split_once('%').map_or(host, |(a, _)| a);
    address.parse::<std::net::Ipv6Addr>().is_ok()
}

/// `hostname` (lowercased, zone kept) plus `:port` when present; `None` when there is no hostname
/// or the port is not an integer in 0..=65535.
fn url_host(netloc: &str) -> Option<String> {
    let hostinfo = netloc.rsplit_once('@').map_or(netloc, |(_, h)| h);
    let (hostname, port) = if let Some((_, bracketed)) = hostinfo.split_once('[') {
        let (host, after) = bracketed.split_once(']').unwrap_or((bracketed, ""));
        (host, after.split_once(':').map_or("", |(_, p)| p))
    } else {
        hostinfo.split_once(':').unwrap_or((hostinfo, ""))
    };
    if hostname.is_empty() {
        return None;
    }
    let mut host = match hostname.split_once('%') {
        Some((name, zone)) => format!("{}%{zone}", name.to_lowercase()),
        None => hostname.to_lowercase(),
    };
    if !port.is_empty() {
        if !port.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let digits = port.trim_start_matches('0');
        let number: u16 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        host.push(':');
        host.push_str(&number.to_string());
    }
    Some(host)
}

/// Runs `git <args>` from PATH in `cwd` and returns its trimmed stdout; `None` when git is missing,
/// exits non-zero, prints nothing or non-UTF-8, or outlives min(2 s, the deadline) — then it is
/// killed. The environment is inherited untouched (`GIT_DIR`, `GIT_CEILING_DIRECTORIES`, …).
#[must_use]
pub fn git(cwd: &Path, args: &[&str], deadline: &Deadline) -> Option<String> {
    let limit = deadline.cap(GIT_TIMEOUT);
    if limit.is_zero() {
        return None;
    }
    let end = Instant::now() + limit;
    let mut child = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let Some(mut stdout) = child.stdout.take() else {
        stop(&mut child);
        return None;
    };
    // A reader thread wakes us the moment git closes stdout, instead of polling for exit.
    let (tx, rx) = mpsc::channel();
    // A small stack (it only reads a pipe); a thread that cannot be made (a tight `ulimit -v`)
    // means no answer from git, never a crash.
    let reader = std::thread::Builder::new().stack_size(64 * 1024).spawn(move || {
        let mut buf = Vec::new();
        let read = stdout.read_to_end(&mut buf);
        let _ = tx.send(read.map(|_| buf));
    });
    if reader.is_err() {
        stop(&mut child);
        return None;
    }
    let Ok(Ok(bytes)) = rx.recv_timeout(end.saturating_duration_since(Instant::now())) else {
        stop(&mut child);
        return None;
    };
    if !wait_until(&mut child, end)?.success() {
        return None;
    }
    let text = String::from_utf8(bytes).ok()?;
    let trimmed = py_strip(&text);
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Waits for exit until `end`, killing the process when time runs out.
fn wait_until(child: &mut Child, end: Instant) -> Option<ExitStatus> {
    let mut pause = Duration::from_micros(50);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < end => {
                std::thread::sleep(pause.min(end.saturating_duration_since(Instant::now())));
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            _ => {
                stop(child);
                return None;
            }
        }
    }
}

/// Whether an integration's upstream client resolves symlinks in the project root (the Python
/// family) or keeps it lexical (the Node family).
fn resolves_symlinks(integration: Integration) -> bool {
    integration.spec().workspace_key == WorkspaceKey::Resolved
}

/// The project root the upstream client of `integration` derives from `cwd`: the Git toplevel of
/// cwd, else cwd itself; absolute; symlink-resolved for Claude Code and Codex, lexical for Pi,
/// OpenCode and DSH.
#[must_use]
pub fn workspace_root(integration: Integration, cwd: &Path, deadline: &Deadline) -> PathBuf {
    workspace_root_with(integration, cwd, deadline, Discovery::Git)
}

/// How the Git top level of a directory is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discovery {
    /// Walk up for `.git` in-process (no child process: about a millisecond saved on every prompt)
    /// wherever the answer provably equals git's, and ask git everywhere else.
    Fast,
    /// Always ask `git rev-parse --show-toplevel`.
    Git,
}

/// Variables that change how git discovers a repository: with any of them set, only git knows.
const GIT_DISCOVERY_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
];

impl Discovery {
    /// [`Discovery::Fast`] unless the environment steers git's repository discovery.
    #[must_use]
    pub fn for_env(env: &crate::env::Env) -> Self {
        if GIT_DISCOVERY_VARS
            .iter()
            .any(|v| !matches!(env.get(v), crate::env::EnvValue::Unset))
        {
            Self::Git
        } else {
            Self::Fast
        }
    }
}

/// The in-process answer to `git rev-parse --show-toplevel`, or `Err(())` wherever it might
/// differ from git's: a `.git` file (worktree, submodule), a symlinked `.git`, a repository owned
/// by another user (`safe.directory`), `core.worktree` or `core.bare` in its config, a
/// filesystem boundary, a `.git` that does not look like a repository, or an unreadable path.
/// `Ok(None)`: no repository up to the root, where git fails too.
fn fast_toplevel(cwd: &Path) -> Result<Option<PathBuf>, ()> {
    use std::os::unix::fs::MetadataExt;
    if !cwd.is_absolute() {
        return Err(());
    }
    // git works from the physical directory, as getcwd reports it.
    let start = std::fs::canonicalize(cwd).map_err(|_| ())?;
    let device = std::fs::metadata(&start).map_err(|_| ())?.dev();
    let euid = crate::state::euid();
    let mut dir = start.as_path();
    loop {
        let dot_git = dir.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(m) if m.is_dir() => {
                let looks_like_repo = dot_git.join("HEAD").is_file()
                    && dot_git.join("objects").is_dir()
                    && dot_git.join("refs").is_dir();
                if !looks_like_repo || m.uid() != euid {
                    return Err(());
                }
                let config = git_config(&dot_git.join("config"))?;
                let config = String::from_utf8_lossy(&config).to_ascii_lowercase();
                let steers = config.lines().any(|line| {
                    let (key, value) = line.split_once('=').unwrap_or((line, ""));
                    let (key, value) = (key.trim(), value.trim());
                    key == "worktree" || (key == "bare" && value != "false") || key.starts_with("[include")
                });
                if steers {
                    return Err(());
                }
                return Ok(Some(dir.to_path_buf()));
            }
            Ok(_) => return Err(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return Err(()),
        }
        let Some(parent) = dir.parent() else {
            return Ok(None);
        };
        if std::fs::metadata(parent).map_err(|_| ())?.dev() != device {
            return Err(());
        }
        dir = parent;
    }
}

/// [`workspace_root`] with a choice of [`Discovery`].
#[must_use]
pub fn workspace_root_with(
    integration: Integration,
    cwd: &Path,
    deadline: &Deadline,
    discovery: Discovery,
) -> PathBuf {
    let fast = match discovery {
        Discovery::Fast => fast_toplevel(cwd).ok(),
        Discovery::Git => None,
    };
    let toplevel = match fast {
        Some(found) => found,
        None => git(cwd, &["rev-parse", "--show-toplevel"], deadline).map(PathBuf::from),
    };
    let base = toplevel.as_deref().unwrap_or(cwd);
    if resolves_symlinks(integration) {
        real_path(base)
    } else {
        lexical_absolute(base, false)
    }
}

/// The `external_id` of this integration's `workspace` binding key: exactly what `powercontext scope
/// resolve --integration <name> --cwd <cwd>` (1.4.1) sends. See the module documentation.
#[must_use]
pub fn workspace_external_id(integration: Integration, cwd: &Path, deadline: &Deadline) -> String {
    workspace_external_id_with(integration, cwd, deadline, Discovery::Git)
}

/// [`workspace_external_id`] with a choice of [`Discovery`].
#[must_use]
pub fn workspace_external_id_with(
    integration: Integration,
    cwd: &Path,
    deadline: &Deadline,
    discovery: Discovery,
) -> String {
    let path = if resolves_symlinks(integration) {
        workspace_root_with(integration, cwd, deadline, discovery)
    } else {
        // The CLI's `os.path.abspath(cwd)`: no Git lookup for these hosts.
        lexical_absolute(cwd, true)
    };
    sha256_hex(path.as_os_str().as_encoded_bytes())
}

/// The client-derived scope of the 0.0.x hooks, used only against Servers without the resolve
/// route: the configured id (bounded), else `git:<normalized origin remote>` (hashed past 256
/// characters), else `local:<SHA-256 hex of the project root>`.
///
/// DSH has no scope without a session cwd; callers handle that before calling this.
#[must_use]
pub fn legacy_scope(
    integration: Integration,
    configured: Option<&str>,
    cwd: &Path,
    deadline: &Deadline,
) -> String {
    if let Some(explicit) = configured.and_then(bounded_explicit_scope) {
        return explicit;
    }
    let root = workspace_root(integration, cwd, deadline);
    if let Some(remote) = git(&root, &["config", "--get", "remote.origin.url"], deadline)
        && let Some(normalized) = normalize_remote(&remote)
    {
        return bounded("git", &normalized);
    }
    format!("local:{}", sha256_hex(root.as_os_str().as_encoded_bytes()))
}

/// `path` made absolute against the process's current directory.
fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::env::current_dir().map_or_else(|_| path.to_path_buf(), |dir| dir.join(path))
}

/// Lexical absolute path: `.` and empty parts dropped, `..` removes the previous part (never
/// above the root). With `keep_double_slash`, a leading `//` (exactly two) survives, as in
/// Python's `os.path.abspath`; without, it collapses as in Node's `path.resolve`.
fn lexical_absolute(path: &Path, keep_double_slash: bool) -> PathBuf {
    let abs = absolute(path);
    let raw = abs.as_os_str().as_encoded_bytes();
    let double = keep_double_slash && raw.starts_with(b"//") && !raw.starts_with(b"///");
    let mut out = PathBuf::new();
    let mut depth = 0usize;
    for component in abs.components() {
        match component {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(if double { "//" } else { "/" }),
            Component::CurDir => {}
            Component::ParentDir => {
                if depth > 0 {
                    out.pop();
                    depth -= 1;
                }
            }
            Component::Normal(name) => {
                out.push(name);
                depth += 1;
            }
        }
    }
    out
}

/// Python's `Path.resolve(strict=False)` on POSIX: absolute, every existing symlink followed, `..`
/// applied to the resolved parent, missing components kept as written; on a symlink loop the rest
/// is appended unresolved.
fn real_path(path: &Path) -> PathBuf {
    let abs = absolute(path);
    let mut pending: VecDeque<OsString> = VecDeque::new();
    let mut out = PathBuf::new();
    for component in abs.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out.push(component.as_os_str()),
            other => pending.push_back(other.as_os_str().to_owned()),
        }
    }
    let mut hops = 0usize;
    while let Some(part) = pending.pop_front() {
        match Path::new(&part).components().next() {
            Some(Component::CurDir) | None => {}
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(_) => {
                let candidate = out.join(&part);
                match std::fs::read_link(&candidate) {
                    Ok(target) if hops < MAX_SYMLINK_HOPS => {
                        hops += 1;
                        let mut parts = Vec::new();
                        for component in target.components() {
                            match component {
                                Component::Prefix(_) | Component::RootDir => {
                                    out = PathBuf::new();
                                    out.push(component.as_os_str());
                                }
                                other => parts.push(other.as_os_str().to_owned()),
                            }
                        }
                        for p in parts.into_iter().rev() {
                            pending.push_front(p);
                        }
                    }
                    Ok(_) => {
                        out = candidate;
                        out.extend(pending.drain(..));
                    }
                    Err(_) => out = candidate,
                }
            }
        }
    }
    out
}

/// A repository's `config`, read only as a regular file (not a link) of at most 1 MiB: a FIFO or
/// a huge file would stall the prompt, so anything else leaves the answer to git. Missing is empty.
fn git_config(path: &Path) -> Result<Vec<u8>, ()> {
    match crate::bounded::read(path, 1024 * 1024, crate::bounded::Links::Refuse) {
        Ok(found) => Ok(found.map(|(bytes, _)| bytes).unwrap_or_default()),
        Err(_) => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn forever() -> Deadline {
        Deadline::after(Duration::from_secs(30))
    }

    #[test]
    fn a_repository_config_is_read_only_as_a_small_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        assert_eq!(git_config(&config), Ok(Vec::new()));
        std::fs::write(&config, "[core]\n\tbare = false\n").unwrap();
        assert_eq!(git_config(&config).unwrap(), b"[core]\n\tbare = false\n");
        std::fs::remove_file(&config).unwrap();
        assert!(Command::new("mkfifo").arg(&config).status().unwrap().success());
        // A FIFO is never opened: the answer is left to git instead of waiting for a writer.
        assert_eq!(git_config(&config), Err(()));
        std::fs::remove_file(&config).unwrap();
        std::fs::write(&config, vec![b'#'; 1024 * 1024 + 1]).unwrap();
        assert_eq!(git_config(&config), Err(()));
    }

    fn sh(cwd: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args(args)
            .current_dir(cwd)
            .status()
            .expect("git runs");
        assert!(status.success(), "git {args:?} failed");
    }

    fn hex_of(path: &Path) -> String {
        sha256_hex(path.as_os_str().as_encoded_bytes())
    }

    /// A canonical temp base (so lexical and resolved spellings of it agree).
    fn base() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let canonical = std::fs::canonicalize(dir.path()).expect("canonical");
        (dir, canonical)
    }

    /// `repo/` with an origin remote and a `repo/sub/` directory.
    fn repo_with_remote(base: &Path, remote: &str) -> PathBuf {
        let repo = base.join("repo");
        std::fs::create_dir_all(repo.join("sub")).expect("mkdir");
        sh(&repo, &["init", "-q"]);
        sh(&repo, &["remote", "add", "origin", remote]);
        repo
    }

    #[test]
    fn sha256_vectors() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            format!("local:{}", sha256_hex(b"/tmp/no-git-project")),
            "local:e92a72e52d28f71f714766daffd410f274e66b63431aa9a227e88f3e200879de"
        );
    }

    #[test]
    fn explicit_scope_is_trimmed_and_bounded() {
        assert_eq!(bounded_explicit_scope("  scp_abc \n"), Some("scp_abc".to_owned()));
        assert_eq!(bounded_explicit_scope(" \t "), None);
        assert_eq!(bounded_explicit_scope(""), None);
        let at_limit = "x".repeat(256);
        assert_eq!(bounded_explicit_scope(&at_limit), Some(at_limit.clone()));
        assert_eq!(
            bounded_explicit_scope(&"x".repeat(300)).as_deref(),
            Some("sha256:0d4e2ca9e9cbced7a7a5380eb29e1a3783b9b6d0db72de36a1051038e1c1fbc7")
        );
        // Characters, not bytes: 256 two-byte characters stay verbatim.
        let wide = "é".repeat(256);
        assert_eq!(bounded_explicit_scope(&wide), Some(wide.clone()));
        let wider = "é".repeat(257);
        assert_eq!(
            bounded_explicit_scope(&wider),
            Some(format!("sha256:{}", sha256_hex(wider.as_bytes())))
        );
    }

    #[test]
    fn node_plugins_bound_a_configured_scope_in_utf16_units() {
        // Upstream's DSH scope test vector: 300 × `x`.
        assert_eq!(
            bounded_utf16_scope(&"x".repeat(300)).as_deref(),
            Some("sha256:0d4e2ca9e9cbced7a7a5380eb29e1a3783b9b6d0db72de36a1051038e1c1fbc7")
        );
        assert_eq!(bounded_utf16_scope(&"x".repeat(256)), None);
        assert_eq!(bounded_utf16_scope("project:demo"), None);
        // JavaScript counts UTF-16 units: 129 astral characters are 258 units, over the bound.
        let astral = "\u{1F600}".repeat(129);
        assert_eq!(
            bounded_utf16_scope(&astral),
            Some(format!("sha256:{}", sha256_hex(astral.as_bytes())))
        );
        assert_eq!(bounded_utf16_scope(&"é".repeat(256)), None);
    }

    #[test]
    fn remote_normalization_vectors() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "https://user:token@github.com/org/repo.git",
                Some("github.com/org/repo"),
            ),
            ("ssh://git@github.com/org/repo.git", Some("github.com/org/repo")),
            ("git@github.com:org/repo.git", Some("github.com/org/repo")),
            ("  git@GitHub.COM:Org/Repo.git \n", Some("github.com/Org/Repo")),
            ("ssh://git@Example.com:2222/a//b/", Some("example.com:2222/a/b")),
            ("https://host:022/x", Some("host:22/x")),
            ("HTTPS://Host/x?query#frag", Some("host/x")),
            ("git://host/a\\b\\c.git/", Some("host/a/b/c")),
            ("ssh://git@[::1]:22/x.git", Some("::1:22/x")),
            ("host:path/to/repo", Some("host/path/to/repo")),
            ("C:/x/repo", Some("c/x/repo")),
            ("user@:path", Some("user@/path")),
            ("host:repo.git.git", Some("host/repo.git")),
            ("file:///srv/repo.git", None),
            ("/srv/repo.git", None),
            ("../relative/repo", None),
            ("ftp://host/repo", None),
            ("https://github.com", None),
            ("https://github.com/.git", None),
            ("host:.git", None),
            ("https://host:99999/x", None),
            ("https://host:12a/x", None),
            ("https://user@:80/x", None),
            ("https://[1.2.3.4]/x", None),
            ("https://[::1/x", None),
            ("a/b:c", None),
            ("user@host:", None),
            ("", None),
            ("   ", None),
        ];
        for (raw, want) in cases {
            assert_eq!(normalize_remote(raw).as_deref(), *want, "remote {raw:?}");
        }
    }

    #[test]
    fn git_remote_scope_is_bounded_by_characters() {
        let long = format!("host/{}", "p".repeat(300));
        assert_eq!(
            bounded("git", &long),
            format!("git:sha256:{}", sha256_hex(long.as_bytes()))
        );
        assert_eq!(bounded("git", "github.com/o/r"), "git:github.com/o/r");
    }

    #[test]
    fn git_runs_in_cwd_and_reports_failure_as_none() {
        let (_guard, base) = base();
        let repo = repo_with_remote(&base, "git@github.com:Org/Repo.git");
        let d = forever();
        assert_eq!(
            git(&repo.join("sub"), &["rev-parse", "--show-toplevel"], &d),
            Some(repo.display().to_string())
        );
        assert_eq!(
            git(&repo, &["config", "--get", "remote.origin.url"], &d).as_deref(),
            Some("git@github.com:Org/Repo.git")
        );
        // Non-zero exit, a directory outside any repository, a missing cwd.
        assert_eq!(git(&repo, &["config", "--get", "remote.nothing.url"], &d), None);
        let plain = base.join("plain");
        std::fs::create_dir(&plain).expect("mkdir");
        assert_eq!(git(&plain, &["rev-parse", "--show-toplevel"], &d), None);
        assert_eq!(git(&base.join("missing"), &["--version"], &d), None);
        // Empty stdout counts as no value.
        assert_eq!(git(&repo, &["config", "--get", "--default", "", "x.y"], &d), None);
    }

    #[test]
    fn git_respects_the_deadline() {
        let (_guard, base) = base();
        let expired = Deadline::after(Duration::ZERO);
        let started = Instant::now();
        assert_eq!(git(&base, &["--version"], &expired), None);
        assert!(started.elapsed() < Duration::from_millis(50));

        // An alias that runs a shell command which outlives the budget gets killed.
        let short = Deadline::after(Duration::from_millis(300));
        let started = Instant::now();
        assert_eq!(
            git(&base, &["-c", "alias.hang=!sleep 3; echo late", "hang"], &short),
            None
        );
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(250) && took < Duration::from_millis(1500),
            "took {took:?}"
        );
    }

    #[test]
    fn legacy_scope_prefers_configured_then_remote_then_local() {
        let (_guard, base) = base();
        let repo = repo_with_remote(&base, "git@github.com:Org/Repo.git");
        let sub = repo.join("sub");
        let d = forever();
        for integration in Integration::ALL {
            assert_eq!(legacy_scope(integration, Some("  mine "), &sub, &d), "mine");
            assert_eq!(
                legacy_scope(integration, Some("   "), &sub, &d),
                "git:github.com/Org/Repo"
            );
            assert_eq!(
                legacy_scope(integration, None, &sub, &d),
                "git:github.com/Org/Repo"
            );
        }
        let plain = base.join("no-git-project");
        std::fs::create_dir(&plain).expect("mkdir");
        for integration in Integration::ALL {
            assert_eq!(
                legacy_scope(integration, None, &plain, &d),
                format!("local:{}", hex_of(&plain))
            );
        }
        // A remote that does not normalize falls back to the local scope of the toplevel.
        let other = base.join("other");
        std::fs::create_dir(&other).expect("mkdir");
        sh(&other, &["init", "-q"]);
        sh(&other, &["remote", "add", "origin", "file:///srv/x.git"]);
        std::fs::create_dir(other.join("deep")).expect("mkdir");
        assert_eq!(
            legacy_scope(Integration::Codex, None, &other.join("deep"), &d),
            format!("local:{}", hex_of(&other))
        );
    }

    #[test]
    fn no_git_project_vector_when_that_directory_is_usable() {
        let dir = Path::new("/tmp/no-git-project");
        let created = !dir.exists() && std::fs::create_dir(dir).is_ok();
        let canonical_ok = std::fs::canonicalize(dir).is_ok_and(|c| c == dir);
        let in_repo = git(dir, &["rev-parse", "--show-toplevel"], &forever()).is_some();
        if canonical_ok && !in_repo {
            assert_eq!(
                legacy_scope(Integration::ClaudeCode, None, dir, &forever()),
                "local:e92a72e52d28f71f714766daffd410f274e66b63431aa9a227e88f3e200879de"
            );
        }
        if created {
            let _ = std::fs::remove_dir(dir);
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_cwd_is_resolved_only_for_the_python_family() {
        let (_guard, base) = base();
        let real = base.join("real");
        std::fs::create_dir(&real).expect("mkdir");
        let link = base.join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let d = forever();
        for integration in [Integration::ClaudeCode, Integration::Codex] {
            assert_eq!(workspace_root(integration, &link, &d), real);
            assert_eq!(
                legacy_scope(integration, None, &link, &d),
                format!("local:{}", hex_of(&real))
            );
            assert_eq!(workspace_external_id(integration, &link, &d), hex_of(&real));
        }
        for integration in [Integration::Pi, Integration::OpenCode, Integration::Dsh] {
            assert_eq!(workspace_root(integration, &link, &d), link);
            assert_eq!(
                legacy_scope(integration, None, &link, &d),
                format!("local:{}", hex_of(&link))
            );
            assert_eq!(workspace_external_id(integration, &link, &d), hex_of(&link));
        }
        assert_ne!(hex_of(&real), hex_of(&link));
    }

    #[test]
    fn workspace_key_uses_the_toplevel_only_for_claude_code_and_codex() {
        let (_guard, base) = base();
        let repo = repo_with_remote(&base, "https://example.com/o/r.git");
        let sub = repo.join("sub");
        let d = forever();
        assert_eq!(
            workspace_external_id(Integration::ClaudeCode, &sub, &d),
            hex_of(&repo)
        );
        assert_eq!(workspace_external_id(Integration::Codex, &sub, &d), hex_of(&repo));
        assert_eq!(workspace_external_id(Integration::Pi, &sub, &d), hex_of(&sub));
        assert_eq!(
            workspace_external_id(Integration::OpenCode, &sub, &d),
            hex_of(&sub)
        );
        assert_eq!(workspace_external_id(Integration::Dsh, &sub, &d), hex_of(&sub));
        // Lexical spelling differences vanish for every host.
        let messy = PathBuf::from(format!("{}/./sub/../sub/", repo.display()));
        assert_eq!(workspace_external_id(Integration::Pi, &messy, &d), hex_of(&sub));
        assert_eq!(
            workspace_external_id(Integration::Codex, &messy, &d),
            hex_of(&repo)
        );
        // Without Git the Python family hashes the resolved cwd itself.
        let plain = base.join("plain");
        std::fs::create_dir(&plain).expect("mkdir");
        assert_eq!(
            workspace_external_id(Integration::ClaudeCode, &plain, &d),
            hex_of(&plain)
        );
        // A missing directory still gets a key (git cannot run there).
        let missing = base.join("missing/x");
        assert_eq!(
            workspace_external_id(Integration::Codex, &missing, &d),
            hex_of(&missing)
        );
        assert_eq!(
            workspace_external_id(Integration::Pi, &missing, &d),
            hex_of(&missing)
        );
    }

    #[cfg(unix)]
    #[test]
    fn path_normalizers_match_python_and_node() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(lexical_absolute(&p("/a/./b/../c/"), true), p("/a/c"));
        assert_eq!(lexical_absolute(&p("/../.."), true), p("/"));
        assert_eq!(lexical_absolute(&p("//a/b"), true).as_os_str(), "//a/b");
        assert_eq!(lexical_absolute(&p("//a/b"), false).as_os_str(), "/a/b");
        assert_eq!(lexical_absolute(&p("///a"), true).as_os_str(), "/a");
        let cwd = std::env::current_dir().expect("cwd");
        assert_eq!(lexical_absolute(&p("x/../y"), true), cwd.join("y"));

        let (_guard, base) = base();
        std::fs::create_dir(base.join("real")).expect("mkdir");
        std::os::unix::fs::symlink("real", base.join("rel")).expect("symlink");
        std::os::unix::fs::symlink(base.join("rel"), base.join("chain")).expect("symlink");
        std::os::unix::fs::symlink("loop-b", base.join("loop-a")).expect("symlink");
        std::os::unix::fs::symlink("loop-a", base.join("loop-b")).expect("symlink");
        assert_eq!(real_path(&base.join("chain/missing/../x")), base.join("real/x"));
        assert_eq!(real_path(&base.join("rel/..//real/./y")), base.join("real/y"));
        assert_eq!(real_path(&base.join("nope/z")), base.join("nope/z"));
        let looped = real_path(&base.join("loop-a/q"));
        assert!(looped.ends_with("q"), "{looped:?}");
        assert_eq!(real_path(&p("//")), p("/"));
    }

    #[test]
    fn fast_discovery_agrees_with_git_or_defers_to_it() {
        let (_keep, base) = base();
        let repo = base.join("repo");
        std::fs::create_dir_all(repo.join("a/b")).expect("mkdir");
        sh(&repo, &["init", "-q"]);
        let inner = repo.join("a/inner");
        std::fs::create_dir_all(inner.join("x")).expect("mkdir");
        sh(&inner, &["init", "-q"]);
        let link = base.join("link");
        std::os::unix::fs::symlink(repo.join("a"), &link).expect("symlink");
        let outside = base.join("plain");
        std::fs::create_dir_all(&outside).expect("mkdir");
        let d = forever();
        for dir in [
            repo.clone(),
            repo.join("a/b"),
            inner.join("x"),
            link.join("b"),
            outside.clone(),
        ] {
            let by_git = git(&dir, &["rev-parse", "--show-toplevel"], &d).map(PathBuf::from);
            match fast_toplevel(&dir) {
                Ok(found) => assert_eq!(found, by_git, "{}", dir.display()),
                Err(()) => panic!("the plain layout {} must not need git", dir.display()),
            }
            for integration in Integration::ALL {
                assert_eq!(
                    workspace_external_id_with(integration, &dir, &d, Discovery::Fast),
                    workspace_external_id_with(integration, &dir, &d, Discovery::Git),
                    "{integration:?} {}",
                    dir.display()
                );
            }
        }
        // A worktree's `.git` file and a bare-configured checkout are left to git.
        let wt = base.join("wt");
        std::fs::create_dir_all(&wt).expect("mkdir");
        std::fs::write(wt.join(".git"), "gitdir: /nowhere\n").expect("write");
        assert_eq!(fast_toplevel(&wt), Err(()));
        sh(&repo, &["config", "core.bare", "true"]);
        assert_eq!(fast_toplevel(&repo.join("a/b")), Err(()));
        assert_eq!(fast_toplevel(Path::new("relative/dir")), Err(()));
    }

    #[test]
    fn discovery_defers_to_git_when_the_environment_steers_it() {
        use crate::env::Env;
        assert_eq!(Discovery::for_env(&Env::default()), Discovery::Fast);
        for var in GIT_DISCOVERY_VARS {
            assert_eq!(
                Discovery::for_env(&Env::from_pairs([(*var, "x")])),
                Discovery::Git,
                "{var}"
            );
        }
    }
}
