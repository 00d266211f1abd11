//! Reads the connection the official `powercontext` CLI saved (`powercontext setup <host>`): the
//! shared `clients.json`, the per-host `credentials.json`, Claude Code's plugin options, the Codex
//! plugin's `.mcp.json` and the DSH row values the thin plugin passes on. It only reads, every
//! read is bounded, and a credential is used only from an owner-only regular file (never through
//! a symlink) bound to the exact endpoint about to be called — never one Server's token for another.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::bounded::{self, Links, Problem};
use crate::endpoint::{Authorization, BaseUrl};
use crate::env::Env;
use crate::host::Integration;

/// Variables the official CLI defines for these files.
pub mod vars {
    /// Path of `clients.json` (the official CLI's override).
    pub const CLIENT_CONFIG_FILE: &str = crate::variables::CLIENT_CONFIG_FILE;
    /// The DSH row's `config.baseUrl`, passed on by our DSH plugin.
    pub const DSH_ROW_BASE_URL: &str = crate::variables::DSH_ROW_BASE_URL;
    /// The DSH row's `config.authorization`, passed on by our DSH plugin.
    pub const DSH_ROW_AUTHORIZATION: &str = crate::variables::DSH_ROW_AUTHORIZATION;
    /// The DSH row's `config.allowInsecureHttp`, passed on by our DSH plugin.
    pub const DSH_ROW_ALLOW_INSECURE_HTTP: &str = crate::variables::DSH_ROW_ALLOW_INSECURE_HTTP;
    /// OpenClaw's config file path (OpenClaw's own override, read by the official CLI too).
    pub const OPENCLAW_CONFIG_PATH: &str = "OPENCLAW_CONFIG_PATH";
}

/// Largest official file read: real ones are well under a kilobyte (Claude's `settings.json` a
/// few kilobytes).
pub const MAX_OFFICIAL_BYTES: u64 = 256 * 1024;

/// Why a credential file was not used. Content-free: never holds the token or the URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CredentialProblem {
    /// The path is a symbolic link.
    #[error("is a symbolic link")]
    Symlink,
    /// Not a regular file.
    #[error("is not a regular file")]
    NotRegular,
    /// Group or other permission bits are set.
    #[error("is readable by group or others (needs mode 0600)")]
    Permissions,
    /// Owned by another user.
    #[error("is owned by another user")]
    NotOwner,
    /// Too large, unreadable, not JSON, or not `version` 1 with `server_url` and `authorization`.
    #[error("is not a version 1 credential file")]
    Invalid,
    /// The stored authorization is not `Bearer <token>`.
    #[error("holds an authorization that is not `Bearer <token>`")]
    Scheme,
    /// Saved for another Server.
    #[error("was saved for another Server URL")]
    OtherServer,
}

/// What the credential file gave.
#[derive(Debug, Clone)]
pub enum Credential {
    /// No file.
    Missing,
    /// Used.
    Found(Authorization),
    /// Present but not used, and why.
    Refused(CredentialProblem),
}

/// A value one of the official files holds for a setting, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The raw value.
    pub value: String,
    /// The file.
    pub path: PathBuf,
    /// The key inside it, e.g. `hosts.codex.server_url`.
    pub key: String,
    /// The file also records the official CLI's consent to plain `http://` for this value.
    pub insecure_consent: bool,
}

/// `$POWERCONTEXT_CLIENT_CONFIG_FILE`, else `~/.config/powercontext/clients.json` (always under
/// `HOME`, as the official CLI does; `XDG_CONFIG_HOME` is not consulted).
#[must_use]
pub fn clients_path(env: &Env) -> Option<PathBuf> {
    if let Some(p) = env
        .text(vars::CLIENT_CONFIG_FILE)
        .filter(|p| !p.trim().is_empty())
    {
        return Some(PathBuf::from(p));
    }
    home(env).map(|h| h.join(".config/powercontext/clients.json"))
}

fn home(env: &Env) -> Option<PathBuf> {
    env.text("HOME").filter(|h| h.starts_with('/')).map(PathBuf::from)
}

/// The host's configuration root as the official CLI computes it.
#[must_use]
pub fn host_root(host: Integration, env: &Env) -> Option<PathBuf> {
    let config = &host.spec().config_home;
    let home = home(env);
    config.path(env.text(config.var), home.as_deref().and_then(|h| h.to_str()))
}

/// `<host root>/powercontext/credentials.json`.
#[must_use]
pub fn credentials_path(host: Integration, env: &Env) -> Option<PathBuf> {
    host_root(host, env).map(|r| r.join("powercontext").join("credentials.json"))
}

/// Reads a regular file (a link to one is fine: these are not credentials) of bounded size as JSON.
fn read_json(path: &Path) -> Option<Value> {
    read_json_or_why(path).ok().flatten()
}

/// [`read_json`], saying why a file that is there was not read.
fn read_json_or_why(path: &Path) -> Result<Option<Value>, &'static str> {
    match bounded::read(path, MAX_OFFICIAL_BYTES, Links::Follow) {
        Ok(None) => Ok(None),
        Ok(Some((bytes, _))) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|_| "cannot be read as JSON"),
        Err(Problem::NotRegular) => Err("is not a regular file"),
        Err(Problem::TooLarge) => Err("is larger than 256 KiB"),
        Err(Problem::Unreadable(_)) => Err("cannot be read as JSON"),
    }
}

/// A `clients.json` document the official CLI would use: `version` 1 and a `hosts` object.
fn usable_clients(doc: &Value) -> bool {
    doc.get("version").and_then(Value::as_u64) == Some(1)
        && !doc.get("version").is_some_and(Value::is_f64)
        && doc.get("hosts").is_some_and(Value::is_object)
}

/// Why `clients.json` is there but not used (content-free), or `None` when it is absent or usable.
/// The hooks simply do without it; doctor shows this so the fallback is never silent.
#[must_use]
pub fn clients_problem(env: &Env) -> Option<(PathBuf, &'static str)> {
    let path = clients_path(env)?;
    let why = match read_json_or_why(&path) {
        Ok(None) => return None,
        Ok(Some(doc)) if usable_clients(&doc) => return None,
        Ok(Some(_)) => "has no `version` 1 and `hosts` object",
        Err(why) => why,
    };
    Some((path, why))
}

/// `clients.json` `hosts.<host>`: only from a file with `version` 1 and a `hosts` object.
#[must_use]
pub fn clients_entry(host: Integration, env: &Env) -> Option<(PathBuf, Value)> {
    let path = clients_path(env)?;
    let doc = read_json(&path)?;
    if !usable_clients(&doc) {
        return None;
    }
    let entry = doc["hosts"].get(host.as_str())?.clone();
    entry.is_object().then_some((path, entry))
}

/// The server URL `clients.json` holds for the host.
#[must_use]
pub fn clients_server_url(host: Integration, env: &Env) -> Option<Found> {
    let (path, entry) = clients_entry(host, env)?;
    let value = entry.get("server_url")?.as_str()?.to_owned();
    Some(Found {
        value,
        path,
        key: format!("hosts.{}.server_url", host.as_str()),
        insecure_consent: entry.get("allow_insecure_http").and_then(Value::as_bool) == Some(true),
    })
}

/// Claude Code's `settings.json` `pluginConfigs["powercontext@powercontext"].options.<key>`.
#[must_use]
pub fn claude_option(env: &Env, key: &str) -> Option<(PathBuf, Value)> {
    let path = host_root(Integration::ClaudeCode, env)?.join("settings.json");
    let doc = read_json(&path)?;
    let v = doc
        .get("pluginConfigs")?
        .get("powercontext@powercontext")?
        .get("options")?
        .get(key)?
        .clone();
    Some((path, v))
}

/// The Codex plugin's `.mcp.json` (the cached copy official setup rewrites): found through the
/// plugin root Codex exports to plugin hooks, else (doctor, outside Codex) the newest cached copy.
fn codex_mcp_path(env: &Env) -> Option<PathBuf> {
    for var in ["PLUGIN_ROOT", "CLAUDE_PLUGIN_ROOT"] {
        if let Some(root) = env.text(var).filter(|r| r.starts_with('/')) {
            return Some(Path::new(root).join(".mcp.json"));
        }
    }
    let cache = host_root(Integration::Codex, env)?.join("plugins/cache");
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for market in std::fs::read_dir(&cache).ok()?.flatten().take(64) {
        let Ok(versions) = std::fs::read_dir(market.path().join("powercontext")) else {
            continue;
        };
        for v in versions.flatten().take(64) {
            let p = v.path().join(".mcp.json");
            if let Ok(m) = std::fs::metadata(&p) {
                let t = m.modified().unwrap_or(std::time::UNIX_EPOCH);
                if best.as_ref().is_none_or(|(bt, _)| t > *bt) {
                    best = Some((t, p));
                }
            }
        }
    }
    best.map(|(_, p)| p)
}

/// The URL in the Codex plugin's `.mcp.json` `mcpServers.powercontext.url` (its `/mcp` suffix
/// is removed when parsed).
#[must_use]
pub fn codex_mcp_url(env: &Env) -> Option<Found> {
    let path = codex_mcp_path(env)?;
    let doc = read_json(&path)?;
    let value = doc
        .get("mcpServers")?
        .get("powercontext")?
        .get("url")?
        .as_str()?
        .to_owned();
    // An unrendered template of ours is not a saved connection.
    if value.contains("{{") {
        return None;
    }
    Some(Found {
        value,
        path,
        key: "mcpServers.powercontext.url".to_owned(),
        insecure_consent: false,
    })
}

/// The Hermes memory provider's own settings the official CLI writes
/// (`$POWERCONTEXT_HERMES_CONFIG`, else `<Hermes home>/powercontext/config.json`): `base_url` and
/// `allow_insecure_http`, which the official CLI ranks above `clients.json` for Hermes.
#[must_use]
pub fn hermes_native_url(env: &Env) -> Option<Found> {
    let path = env
        .text(crate::variables::HERMES_CONFIG)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            host_root(Integration::Hermes, env).map(|r| r.join("powercontext").join("config.json"))
        })?;
    let doc = read_json(&path)?;
    let value = doc.get("base_url")?.as_str()?.to_owned();
    Some(Found {
        value,
        insecure_consent: doc.get("allow_insecure_http") == Some(&Value::Bool(true)),
        path,
        key: "base_url".to_owned(),
    })
}

/// Where the official Kimi Code installer keeps its plugin's settings, under Kimi's home.
pub const KIMI_PLUGIN_SETTINGS: &str = "plugins/managed/powercontext/powercontext.json";

/// The official Kimi Code plugin's own settings, `<Kimi home>/plugins/managed/powercontext/
/// powercontext.json`: its `server_url` (the official CLI's first choice for this host).
#[must_use]
pub fn kimi_plugin_url(env: &Env) -> Option<Found> {
    let path = host_root(Integration::KimiCode, env)?.join(KIMI_PLUGIN_SETTINGS);
    let doc = read_json(&path)?;
    let value = doc.get("server_url")?.as_str()?.to_owned();
    Some(Found {
        value,
        insecure_consent: doc.get("allow_insecure_http").and_then(Value::as_bool) == Some(true),
        path,
        key: "server_url".to_owned(),
    })
}

/// The explicit scope id the official installer saved for the host, if it keeps one: Kimi Code's
/// plugin settings `scope_id` (`null` there means the workspace binding decides).
#[must_use]
pub fn scope_id(host: Integration, env: &Env) -> Option<Found> {
    if host != Integration::KimiCode {
        return None;
    }
    let path = host_root(host, env)?.join(KIMI_PLUGIN_SETTINGS);
    let value = read_json(&path)?.get("scope_id")?.as_str()?.to_owned();
    Some(Found {
        value,
        path,
        key: "scope_id".to_owned(),
        insecure_consent: false,
    })
}

/// `$OPENCLAW_CONFIG_PATH`, else `<OpenClaw state dir>/openclaw.json` (the official CLI's rule).
#[must_use]
pub fn openclaw_config_path(env: &Env) -> Option<PathBuf> {
    if let Some(p) = env
        .text(vars::OPENCLAW_CONFIG_PATH)
        .map(str::trim)
        .filter(|p| p.starts_with('/'))
    {
        return Some(PathBuf::from(p));
    }
    host_root(Integration::OpenClaw, env).map(|r| r.join("openclaw.json"))
}

/// The endpoint the official OpenClaw installer keeps in OpenClaw's own config
/// (`plugins.entries.memory-powercontext.config.endpoint`, with `allowInsecureHttp` beside it).
/// Read as plain JSON, which is what OpenClaw writes (`openclaw config set`); a hand-edited JSON5
/// file with comments is not read here and the other sources apply.
fn openclaw_endpoint(env: &Env) -> Option<Found> {
    let path = openclaw_config_path(env)?;
    let doc = read_json(&path)?;
    let config = &doc["plugins"]["entries"][OPENCLAW_PLUGIN_ID]["config"];
    let value = config["endpoint"]
        .as_str()
        .filter(|v| !v.trim().is_empty())?
        .to_owned();
    Some(Found {
        value,
        path,
        key: format!("plugins.entries.{OPENCLAW_PLUGIN_ID}.config.endpoint"),
        insecure_consent: config["allowInsecureHttp"] == true,
    })
}

/// The OpenClaw plugin id of the official integration (ours uses the same, so the two never load
/// side by side and the official endpoint setting applies to ours).
pub const OPENCLAW_PLUGIN_ID: &str = "memory-powercontext";

/// Every server URL the official files hold for a host, highest precedence first (the order of
/// the official CLI's own resolution).
#[must_use]
pub fn server_url_sources(host: Integration, env: &Env) -> Vec<Found> {
    let mut out = Vec::new();
    // Host match kept: each official installer keeps its URL in a file format of its own.
    match host {
        Integration::ClaudeCode => {
            if let Some((path, Value::String(value))) = claude_option(env, "server_url") {
                let consent = claude_option(env, "allow_insecure_http").is_some_and(|(_, v)| v == true);
                out.push(Found {
                    value,
                    path,
                    key: "pluginConfigs.powercontext@powercontext.options.server_url".to_owned(),
                    insecure_consent: consent,
                });
            }
        }
        Integration::Codex => out.extend(codex_mcp_url(env)),
        Integration::Dsh => {
            if let Some(v) = env.text(vars::DSH_ROW_BASE_URL).filter(|v| !v.trim().is_empty()) {
                out.push(Found {
                    value: v.to_owned(),
                    path: PathBuf::from("<DSH profile row>"),
                    key: "config.baseUrl".to_owned(),
                    insecure_consent: env
                        .text(vars::DSH_ROW_ALLOW_INSECURE_HTTP)
                        .is_some_and(|v| v.trim() == "true"),
                });
            }
        }
        Integration::Hermes => out.extend(hermes_native_url(env)),
        Integration::OpenCode
        | Integration::Pi
        | Integration::QwenCode
        | Integration::GeminiCli
        | Integration::CopilotCli
        | Integration::WorkBuddy
        | Integration::Zcode => {}
        Integration::KimiCode => out.extend(kimi_plugin_url(env)),
        Integration::OpenClaw => out.extend(openclaw_endpoint(env)),
    }
    out.extend(clients_server_url(host, env));
    out
}

/// The first official server URL (what the official CLI would call).
#[must_use]
pub fn server_url(host: Integration, env: &Env) -> Option<Found> {
    server_url_sources(host, env).into_iter().next()
}

/// Whether the official CLI recorded consent to plain `http://` for exactly this endpoint.
#[must_use]
pub fn insecure_consent(host: Integration, env: &Env, url: &BaseUrl) -> bool {
    server_url_sources(host, env).iter().any(|f| {
        f.insecure_consent && BaseUrl::parse_insecure(&f.value).is_ok_and(|u| same_endpoint(&u, url))
    })
}

/// Whether two base URLs name the same endpoint: scheme, host, port (default ports dropped) and
/// path, case-insensitive in scheme and host (both already normalized by [`BaseUrl`]).
#[must_use]
pub fn same_endpoint(a: &BaseUrl, b: &BaseUrl) -> bool {
    endpoint_key(a) == endpoint_key(b)
}

fn endpoint_key(u: &BaseUrl) -> String {
    let s = u.as_str();
    let (scheme, rest) = s.split_once("://").unwrap_or(("", s));
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let default = if scheme == "https" { ":443" } else { ":80" };
    let authority = authority.strip_suffix(default).unwrap_or(authority);
    format!("{scheme}://{authority}{path}")
}

/// DSH's row `config.authorization`, passed on by our DSH plugin (ranks above the credential file),
/// for a call to `effective`. The row holds its Server next to its token: when the row names a
/// `config.baseUrl`, the token is used only for that same endpoint (another setting that points
/// the hook elsewhere never takes the row's token with it).
#[must_use]
pub fn dsh_row_authorization(env: &Env, effective: &BaseUrl) -> Option<String> {
    let token = env
        .text(vars::DSH_ROW_AUTHORIZATION)
        .filter(|v| !v.trim().is_empty())?;
    if let Some(row_url) = env.text(vars::DSH_ROW_BASE_URL).filter(|v| !v.trim().is_empty())
        && !BaseUrl::parse_insecure(row_url).is_ok_and(|u| same_endpoint(&u, effective))
    {
        return None;
    }
    Some(token.to_owned())
}

/// Reads `<host root>/powercontext/credentials.json` for a call to `effective`: used only when
/// it is a regular, non-symlink file owned by this user without group/other bits, `version` 1,
/// and its `server_url` names the same endpoint.
#[must_use]
pub fn credential(host: Integration, env: &Env, effective: &BaseUrl) -> (Option<PathBuf>, Credential) {
    let Some(path) = credentials_path(host, env) else {
        return (None, Credential::Missing);
    };
    let c = read_credential(&path, effective);
    (Some(path), c)
}

/// [`credential`] for an explicit path.
#[must_use]
pub fn read_credential(path: &Path, effective: &BaseUrl) -> Credential {
    let lmeta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if crate::bounded::is_absent(&e) => return Credential::Missing,
        Err(_) => return Credential::Refused(CredentialProblem::Invalid),
    };
    if lmeta.file_type().is_symlink() {
        return Credential::Refused(CredentialProblem::Symlink);
    }
    if let Err(p) = owner_only(&lmeta) {
        return Credential::Refused(p);
    }
    if lmeta.len() > MAX_OFFICIAL_BYTES {
        return Credential::Refused(CredentialProblem::Invalid);
    }
    let Ok(file) = std::fs::File::open(path) else {
        return Credential::Refused(CredentialProblem::Invalid);
    };
    // The path may have been swapped for a link between the two looks: what was opened must be
    // the file that was checked.
    match file.metadata() {
        Ok(m) if m.dev() == lmeta.dev() && m.ino() == lmeta.ino() => {}
        _ => return Credential::Refused(CredentialProblem::Symlink),
    }
    let mut bytes = Vec::new();
    if file.take(MAX_OFFICIAL_BYTES + 1).read_to_end(&mut bytes).is_err()
        || bytes.len() as u64 > MAX_OFFICIAL_BYTES
    {
        return Credential::Refused(CredentialProblem::Invalid);
    }
    let Ok(doc) = serde_json::from_slice::<Value>(&bytes) else {
        return Credential::Refused(CredentialProblem::Invalid);
    };
    let (Some(1), Some(false), Some(url), Some(auth)) = (
        doc.get("version").and_then(Value::as_u64),
        doc.get("version").map(Value::is_f64),
        doc.get("server_url").and_then(Value::as_str),
        doc.get("authorization").and_then(Value::as_str),
    ) else {
        return Credential::Refused(CredentialProblem::Invalid);
    };
    match BaseUrl::parse_insecure(url) {
        Ok(u) if same_endpoint(&u, effective) => {}
        _ => return Credential::Refused(CredentialProblem::OtherServer),
    }
    match Authorization::parse_header(auth) {
        Ok(a) => Credential::Found(a),
        Err(_) => Credential::Refused(CredentialProblem::Scheme),
    }
}

fn owner_only(meta: &std::fs::Metadata) -> Result<(), CredentialProblem> {
    if !meta.is_file() {
        return Err(CredentialProblem::NotRegular);
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(CredentialProblem::Permissions);
    }
    if crate::state::euid() != meta.uid() {
        return Err(CredentialProblem::NotOwner);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn url(s: &str) -> BaseUrl {
        BaseUrl::parse_insecure(s).unwrap()
    }

    fn write_cred(path: &Path, server: &str, mode: u32) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            path,
            format!(r#"{{"version":1,"server_url":"{server}","authorization":"Bearer tok-123"}}"#),
        )
        .unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn endpoints_compare_without_default_ports_case_or_mcp() {
        assert!(same_endpoint(
            &url("HTTPS://Memory.Example:443/mcp/"),
            &url("https://memory.example")
        ));
        assert!(same_endpoint(
            &url("http://127.0.0.1:80"),
            &url("http://127.0.0.1")
        ));
        assert!(!same_endpoint(
            &url("http://127.0.0.1:8000"),
            &url("http://127.0.0.1:8001")
        ));
        assert!(!same_endpoint(
            &url("https://a.example"),
            &url("http://a.example")
        ));
        assert!(!same_endpoint(
            &url("https://a.example/x"),
            &url("https://a.example")
        ));
    }

    #[test]
    fn credential_rules() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("powercontext/credentials.json");
        let server = url("http://127.0.0.1:18431");
        assert!(matches!(read_credential(&p, &server), Credential::Missing));
        write_cred(&p, "http://127.0.0.1:18431/mcp/", 0o600);
        match read_credential(&p, &server) {
            Credential::Found(a) => assert_eq!(a.header_value(), "Bearer tok-123"),
            other => panic!("{other:?}"),
        }
        // Another Server never gets this token.
        assert!(matches!(
            read_credential(&p, &url("http://127.0.0.1:18432")),
            Credential::Refused(CredentialProblem::OtherServer)
        ));
        for mode in [0o640, 0o604, 0o660] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            assert!(matches!(
                read_credential(&p, &server),
                Credential::Refused(CredentialProblem::Permissions)
            ));
        }
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.json");
        symlink(&p, &link).unwrap();
        assert!(matches!(
            read_credential(&link, &server),
            Credential::Refused(CredentialProblem::Symlink)
        ));
        assert!(matches!(
            read_credential(dir.path(), &server),
            Credential::Refused(CredentialProblem::NotRegular)
        ));
        for bad in [
            r#"{"version":2,"server_url":"http://127.0.0.1:18431","authorization":"Bearer t"}"#,
            r#"{"version":1.0,"server_url":"http://127.0.0.1:18431","authorization":"Bearer t"}"#,
            r#"{"version":1,"authorization":"Bearer t"}"#,
            "not json",
        ] {
            std::fs::write(&p, bad).unwrap();
            assert!(matches!(
                read_credential(&p, &server),
                Credential::Refused(CredentialProblem::Invalid)
            ));
        }
        std::fs::write(
            &p,
            r#"{"version":1,"server_url":"http://127.0.0.1:18431","authorization":"Basic dXNlcg=="}"#,
        )
        .unwrap();
        assert!(matches!(
            read_credential(&p, &server),
            Credential::Refused(CredentialProblem::Scheme)
        ));
        // Problems never echo the token.
        let text = format!("{:?}", read_credential(&p, &server));
        assert!(!text.contains("dXNlcg"), "{text}");
    }

    #[test]
    fn an_unusable_clients_json_is_named_with_why() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("clients.json");
        let env = Env::from_pairs([(vars::CLIENT_CONFIG_FILE, p.to_str().unwrap())]);
        assert_eq!(clients_problem(&env), None);
        std::fs::write(&p, r#"{"version": 1, "hosts": {}}"#).unwrap();
        assert_eq!(clients_problem(&env), None);
        std::fs::write(&p, "{not json").unwrap();
        assert_eq!(clients_problem(&env).unwrap().1, "cannot be read as JSON");
        std::fs::write(&p, r#"{"version": 2, "hosts": {}}"#).unwrap();
        assert!(clients_problem(&env).unwrap().1.contains("version"));
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        assert_eq!(clients_problem(&env).unwrap().1, "is not a regular file");
    }

    #[test]
    fn clients_json_needs_version_one_and_a_hosts_object() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("clients.json");
        let env = Env::from_pairs([(vars::CLIENT_CONFIG_FILE, p.to_str().unwrap())]);
        std::fs::write(
            &p,
            r#"{"version":1,"hosts":{"pi":{"server_url":"http://127.0.0.1:9","allow_insecure_http":false}}}"#,
        )
        .unwrap();
        let f = clients_server_url(Integration::Pi, &env).unwrap();
        assert_eq!(f.value, "http://127.0.0.1:9");
        assert_eq!(f.key, "hosts.pi.server_url");
        assert!(clients_server_url(Integration::Codex, &env).is_none());
        for bad in [
            r#"{"version":2,"hosts":{"pi":{"server_url":"http://127.0.0.1:9"}}}"#,
            r#"{"version":"1","hosts":{"pi":{"server_url":"http://127.0.0.1:9"}}}"#,
            r#"{"version":1,"hosts":[]}"#,
        ] {
            std::fs::write(&p, bad).unwrap();
            assert!(clients_server_url(Integration::Pi, &env).is_none(), "{bad}");
        }
        // Default location: always ~/.config, never XDG_CONFIG_HOME.
        let env = Env::from_pairs([("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")]);
        assert_eq!(
            clients_path(&env).unwrap(),
            PathBuf::from("/h/.config/powercontext/clients.json")
        );
    }

    #[test]
    fn hermes_url_comes_from_its_provider_config_first() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap();
        let env = Env::from_pairs([("HOME", home), ("HERMES_HOME", &format!("{home}/hh"))]);
        assert!(server_url(Integration::Hermes, &env).is_none());
        std::fs::create_dir_all(dir.path().join("hh/powercontext")).unwrap();
        std::fs::write(
            dir.path().join("hh/powercontext/config.json"),
            r#"{"base_url": "http://127.0.0.1:7", "allow_insecure_http": true, "other": 1}"#,
        )
        .unwrap();
        let f = server_url(Integration::Hermes, &env).unwrap();
        assert_eq!(
            (f.value.as_str(), f.key.as_str(), f.insecure_consent),
            ("http://127.0.0.1:7", "base_url", true)
        );
        let moved = dir.path().join("moved.json");
        std::fs::write(&moved, r#"{"base_url": "http://127.0.0.1:8"}"#).unwrap();
        let env = Env::from_pairs([
            ("HOME", home),
            ("HERMES_HOME", &format!("{home}/hh")),
            ("POWERCONTEXT_HERMES_CONFIG", moved.to_str().unwrap()),
        ]);
        let f = server_url(Integration::Hermes, &env).unwrap();
        assert_eq!(
            (f.value.as_str(), f.insecure_consent),
            ("http://127.0.0.1:8", false)
        );
        assert!(server_url(Integration::Pi, &env).is_none());
    }

    #[test]
    fn host_roots_follow_the_official_cli() {
        let env = Env::from_pairs([("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")]);
        let roots: Vec<PathBuf> = Integration::ALL
            .iter()
            .map(|h| credentials_path(*h, &env).unwrap())
            .collect();
        assert_eq!(
            roots,
            [
                "/h/.claude/powercontext/credentials.json",
                "/h/.codex/powercontext/credentials.json",
                "/h/.config/opencode/powercontext/credentials.json",
                "/h/.pi/agent/powercontext/credentials.json",
                "/h/.dsh/powercontext/credentials.json",
                "/h/.qwen/powercontext/credentials.json",
                "/h/.gemini/powercontext/credentials.json",
                "/h/.copilot/powercontext/credentials.json",
                "/h/.workbuddy/powercontext/credentials.json",
                "/h/.hermes/powercontext/credentials.json",
                // The official CLI keeps no credential file for Kimi Code (its plugin reads
                // `POWERCONTEXT_KIMI_TOKEN`, as our hook does): this one is never written by it.
                "/h/.kimi-code/powercontext/credentials.json",
                "/h/.openclaw/powercontext/credentials.json",
                "/h/.zcode/cli/powercontext/credentials.json",
            ]
            .map(PathBuf::from)
        );
        let env = Env::from_pairs([("HOME", "/h"), ("DSH_HOME", " "), ("CODEX_HOME", "/c")]);
        assert_eq!(
            credentials_path(Integration::Dsh, &env).unwrap(),
            PathBuf::from("/h/.dsh/powercontext/credentials.json")
        );
        assert_eq!(
            credentials_path(Integration::Codex, &env).unwrap(),
            PathBuf::from("/c/powercontext/credentials.json")
        );
    }

    #[test]
    fn codex_reads_its_plugin_mcp_url_and_dsh_its_row() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers":{"powercontext":{"type":"http","url":"http://127.0.0.1:18431/mcp/"}}}"#,
        )
        .unwrap();
        let env = Env::from_pairs([
            ("PLUGIN_ROOT", dir.path().to_str().unwrap()),
            ("HOME", "/nowhere"),
        ]);
        let f = server_url(Integration::Codex, &env).unwrap();
        assert_eq!(f.value, "http://127.0.0.1:18431/mcp/");
        assert_eq!(f.key, "mcpServers.powercontext.url");
        // An unrendered template is not a saved connection.
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers":{"powercontext":{"type":"http","url":"{{server_url}}/mcp"}}}"#,
        )
        .unwrap();
        assert!(server_url(Integration::Codex, &env).is_none());
        let env = Env::from_pairs([(vars::DSH_ROW_BASE_URL, "https://row.example")]);
        assert_eq!(
            server_url(Integration::Dsh, &env).unwrap().value,
            "https://row.example"
        );
        assert!(server_url(Integration::Pi, &env).is_none());
    }

    #[test]
    fn openclaw_reads_the_endpoint_official_setup_keeps_in_its_config() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap();
        std::fs::create_dir_all(dir.path().join(".openclaw")).unwrap();
        let write = |text: &str| std::fs::write(dir.path().join(".openclaw/openclaw.json"), text).unwrap();
        write(
            r#"{"plugins":{"entries":{"memory-powercontext":{"config":{"endpoint":"http://127.0.0.1:8000","allowInsecureHttp":true}}}}}"#,
        );
        let env = Env::from_pairs([("HOME", home)]);
        let f = server_url(Integration::OpenClaw, &env).unwrap();
        assert_eq!(f.value, "http://127.0.0.1:8000");
        assert_eq!(f.key, "plugins.entries.memory-powercontext.config.endpoint");
        assert!(f.insecure_consent);
        // Another plugin's endpoint is not ours; a file OpenClaw's variable moves elsewhere is read there.
        write(r#"{"plugins":{"entries":{"other":{"config":{"endpoint":"http://127.0.0.1:1"}}}}}"#);
        assert!(server_url(Integration::OpenClaw, &env).is_none());
        let moved = dir.path().join("moved.json");
        std::fs::write(
            &moved,
            r#"{"plugins":{"entries":{"memory-powercontext":{"config":{"endpoint":"https://m.example"}}}}}"#,
        )
        .unwrap();
        let env = Env::from_pairs([
            ("HOME", home),
            (vars::OPENCLAW_CONFIG_PATH, moved.to_str().unwrap()),
        ]);
        let f = server_url(Integration::OpenClaw, &env).unwrap();
        assert_eq!(
            (f.value.as_str(), f.insecure_consent),
            ("https://m.example", false)
        );
    }
}
