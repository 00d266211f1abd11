//! Layered configuration for the hook executables: flags > environment > file > the files the
//! official `powercontext` CLI saved (server URL and token only, see [`crate::official`]) > defaults.
//! Defaults live only in [`Defaults`]; every resolved value remembers where it came from; every
//! error names the setting that fixes it and never the value (values may be tokens).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use crate::base::{Defaults, default_state_dir, home_dir, vars};
use crate::base::{SecretPolicy, parse_bool, user_dir};
use crate::bounded::{self, Links, Problem};
use crate::deadline::Deadline;
use crate::endpoint::{Authorization, BaseUrl};
use crate::env::{Env, EnvValue};
use crate::host::Integration;
use crate::http::Transport;
use crate::official;

/// Where a resolved value came from (shown by `doctor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A command-line flag.
    Flag(String),
    /// An environment variable.
    Env(String),
    /// A key of the configuration file.
    File {
        /// The file.
        path: PathBuf,
        /// The key, e.g. `server_url` or `hosts.codex.server_url`.
        key: String,
    },
    /// A file the official `powercontext` CLI wrote (`clients.json`, `credentials.json`, …).
    Official {
        /// The file.
        path: PathBuf,
        /// The key, e.g. `hosts.pi.server_url`.
        key: String,
    },
    /// The built-in default.
    Default,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Flag(name) => write!(f, "flag `{name}`"),
            Self::Env(name) => write!(f, "env `{name}`"),
            Self::File { path, key } => write!(f, "file `{}` key `{key}`", path.display()),
            Self::Official { path, key } => write!(f, "official CLI file `{}` key `{key}`", path.display()),
            Self::Default => f.write_str("default"),
        }
    }
}

/// A resolved value and its origin.
#[derive(Debug, Clone)]
pub struct Setting<T> {
    /// The value.
    pub value: T,
    /// Where it came from.
    pub origin: Origin,
}

/// Fully resolved settings for one host.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Server base URL.
    pub server_url: Setting<BaseUrl>,
    /// Authorization header, if any.
    pub authorization: Setting<Option<Authorization>>,
    /// Explicit scope id, if any (otherwise resolved through the Server).
    pub scope_id: Setting<Option<String>>,
    /// Whether prompts are captured.
    pub capture_prompts: Setting<bool>,
    /// What a prompt holding a secret becomes: withheld or redacted.
    pub capture_secrets: Setting<SecretPolicy>,
    /// Whether to flush after each capture.
    pub flush_on_capture: Setting<bool>,
    /// Per-request timeout.
    pub request_timeout: Setting<Duration>,
    /// Whole-process budget.
    pub budget: Setting<Duration>,
    /// Flush calls after one capture (1–16).
    pub flush_max_calls: Setting<u32>,
    /// Requested context size (512–32768 bytes).
    pub max_bytes: Setting<u32>,
    /// Whether sessions are bootstrapped at start and after compaction.
    pub bootstrap: Setting<bool>,
    /// Requested bootstrap size (512–8192 bytes).
    pub bootstrap_max_bytes: Setting<u32>,
}

/// A configuration error. Names the setting (variable, file key or flag), never its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid setting `{setting}`: {problem}")]
pub struct ConfigError {
    /// The variable, file key or flag to fix.
    pub setting: String,
    /// What is wrong, content-free.
    pub problem: String,
}

impl ConfigError {
    fn new(setting: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            setting: setting.into(),
            problem: problem.into(),
        }
    }
}

/// The optional TOML file: every key optional, unknown keys rejected.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileOptions {
    #[serde(flatten)]
    common: HostOptions,
    #[serde(default)]
    hosts: HostTables,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostTables {
    #[serde(rename = "claude-code")]
    claude_code: Option<HostOptions>,
    codex: Option<HostOptions>,
    opencode: Option<HostOptions>,
    pi: Option<HostOptions>,
    dsh: Option<HostOptions>,
    hermes: Option<HostOptions>,
    #[serde(rename = "kimi-code")]
    kimi_code: Option<HostOptions>,
    #[serde(rename = "qwen-code")]
    qwen_code: Option<HostOptions>,
    #[serde(rename = "gemini-cli")]
    gemini_cli: Option<HostOptions>,
    #[serde(rename = "copilot-cli")]
    copilot_cli: Option<HostOptions>,
    workbuddy: Option<HostOptions>,
    openclaw: Option<HostOptions>,
    zcode: Option<HostOptions>,
}

/// One layer of options (file section or flags); `None` means "not set here".
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostOptions {
    /// Server base URL.
    pub server_url: Option<String>,
    /// Full `Authorization` header value (`Bearer …`).
    pub authorization: Option<String>,
    /// Explicit scope id.
    pub scope_id: Option<String>,
    /// Capture prompts.
    #[serde(default, deserialize_with = "file_switch")]
    pub capture_prompts: Option<bool>,
    /// `skip` or `redact` a prompt that holds a secret.
    pub capture_secrets: Option<String>,
    /// Flush after capture.
    #[serde(default, deserialize_with = "file_switch")]
    pub flush_on_capture: Option<bool>,
    /// Per-request timeout in seconds.
    pub request_timeout_seconds: Option<f64>,
    /// Whole-process budget in seconds.
    pub budget_seconds: Option<f64>,
    /// Flush calls after a capture.
    pub flush_max_calls: Option<i64>,
    /// Requested context bytes.
    pub max_bytes: Option<i64>,
    /// Session bootstrap switch.
    #[serde(default, deserialize_with = "file_switch")]
    pub bootstrap: Option<bool>,
    /// Requested bootstrap bytes.
    pub bootstrap_max_bytes: Option<i64>,
}

/// A switch in the file: a TOML boolean, or the words the variables take (`"on"`, `"yes"`, …) and
/// `0`/`1`, so the file accepts what the README lists for every switch.
fn file_switch<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bool(bool),
        Int(i64),
        Text(String),
    }
    let parsed = match Raw::deserialize(d)? {
        Raw::Bool(b) => Some(b),
        Raw::Int(0) => Some(false),
        Raw::Int(1) => Some(true),
        Raw::Int(_) => None,
        Raw::Text(t) => parse_bool(&t),
    };
    // The message never quotes the value; the key is named from the error's position.
    parsed
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom("must be one of 1/0, true/false, yes/no, on/off"))
}

/// The default location of the configuration file.
#[must_use]
pub fn default_config_path(env: &Env) -> Option<PathBuf> {
    if let Some(p) = env.text(vars::CONFIG_FILE).filter(|p| !p.trim().is_empty()) {
        return Some(PathBuf::from(p));
    }
    user_dir(env, "XDG_CONFIG_HOME", ".config").map(|d| d.join("powercontext-hooks").join("config.toml"))
}

/// Largest configuration file read: a real one is a few hundred bytes.
pub const MAX_CONFIG_BYTES: u64 = 256 * 1024;

/// The file (a link's target) belongs to this user or root and no one else may write it: whoever
/// can write it chooses where the token goes.
fn trusted_owner(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    (meta.uid() == crate::state::euid() || meta.uid() == 0) && meta.mode() & 0o022 == 0
}

/// Reads the configuration file if it exists.
///
/// # Errors
/// A [`ConfigError`] naming the file (and key, for unknown keys) when it cannot be read or parsed.
pub fn load_file(path: &Path) -> Result<Option<FileOptions>, ConfigError> {
    // A link to a regular file is fine: dotfile managers link configuration files.
    let problem = |p: &str| Err(ConfigError::new(path.display().to_string(), p));
    let text = match bounded::read(path, MAX_CONFIG_BYTES, Links::Follow) {
        Ok(None) => return Ok(None),
        Ok(Some((_, meta))) if !trusted_owner(&meta) => {
            return problem(
                "must be owned by you and not writable by group or others (chown it to you, chmod go-w)",
            );
        }
        Ok(Some((bytes, _))) => bytes,
        Err(Problem::NotRegular) => return problem("is not a regular file"),
        Err(Problem::TooLarge) => {
            return problem(&format!("is larger than {} KiB", MAX_CONFIG_BYTES / 1024));
        }
        Err(Problem::Unreadable(_)) => return problem("cannot be read"),
    };
    let text =
        String::from_utf8(text).map_err(|_| ConfigError::new(path.display().to_string(), "is not UTF-8"))?;
    // Editors on Windows save a byte-order mark; TOML parsers reject it, so it is skipped here.
    let text = match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    };
    toml::from_str::<FileOptions>(&text).map(Some).map_err(|e| {
        // toml messages can quote values (tokens): the key is taken from the error's line (or
        // the unknown field's name), the problem from a fixed list, and the value never shown.
        let message = e.message();
        let at = e.span().map(|s| s.start.min(text.len()));
        let line = at.map(|a| text[..a].matches('\n').count() + 1);
        let unknown = message
            .strip_prefix("unknown field `")
            .and_then(|m| m.split('`').next());
        // Only a name that reads as one of ours, or as a short plain word, is repeated: a line
        // that is not a key (a token wrapped onto its own line, a token used as a key) is not.
        let unknown = unknown.filter(|k| echoable(k));
        let key = at
            .and_then(|a| key_at(&text, a))
            .filter(|k| echoable(k))
            .or_else(|| unknown.map(str::to_owned));
        // The file is the setting (as for every other file problem); the key is in the problem.
        let problem = match (unknown, &key) {
            (Some(k), _) => format!("unknown key `{k}`"),
            (None, Some(k)) if message.starts_with("must be ") => format!("key `{k}` {message}"),
            (None, Some(k)) => format!("key `{k}` is not valid TOML or has the wrong type"),
            (None, None) => "invalid TOML or value type".to_owned(),
        };
        let problem = match line {
            Some(l) => format!("{problem} (line {l})"),
            None => problem,
        };
        let setting = path.display().to_string();
        ConfigError::new(setting, problem)
    })
}

/// Whether a key name from the file may be shown: a lowercase dotted name with few digits that the
/// secret filter does not flag (all of ours, and a typo such as `server_urll`). Anything else may
/// be a value written where a key was expected (a token wrapped onto its own line).
fn echoable(key: &str) -> bool {
    key.len() <= 64
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.'))
        && key.bytes().filter(u8::is_ascii_digit).count() <= 2
        && !crate::secrets::is_secret_like(key)
}

/// The dotted key written on the line holding byte `at` (`hosts.codex.max_bytes`, or the table
/// name of a `[hosts.x]` header line), if that line names one.
fn key_at(text: &str, at: usize) -> Option<String> {
    let start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let line = text[start..].lines().next().unwrap_or_default().trim();
    let clean = |k: &str| -> Option<String> {
        let k: String = k
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
            .collect();
        let ok = !k.is_empty()
            && k.len() <= 64
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        ok.then_some(k)
    };
    if let Some(header) = line.strip_prefix('[') {
        return clean(header.trim_start_matches('[').split(']').next()?);
    }
    let key = clean(line.split('=').next()?)?;
    // The table the line belongs to: the last header above it.
    let table = text[..start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .and_then(|h| clean(h.trim_start_matches('[').split(']').next()?));
    Some(match table {
        Some(t) => format!("{t}.{key}"),
        None => key,
    })
}

/// Environment variable names for one host, in precedence order per setting.
#[derive(Debug, Clone)]
pub struct EnvNames {
    /// Server URL variables.
    pub server_url: Vec<String>,
    /// Full header variables (`Bearer …`).
    pub authorization: Vec<String>,
    /// Bare token variables.
    pub token: Vec<String>,
    /// Scope id variables.
    pub scope_id: Vec<String>,
    /// Capture switch variables.
    pub capture_prompts: Vec<String>,
    /// Secret policy variables.
    pub capture_secrets: Vec<String>,
    /// Flush switch variables.
    pub flush_on_capture: Vec<String>,
    /// Request timeout variables (seconds).
    pub request_timeout: Vec<String>,
    /// Budget variables (seconds).
    pub budget: Vec<String>,
    /// Flush call limit variables.
    pub flush_max_calls: Vec<String>,
    /// Context size variables.
    pub max_bytes: Vec<String>,
    /// Bootstrap switch variables.
    pub bootstrap: Vec<String>,
    /// Bootstrap size variables.
    pub bootstrap_max_bytes: Vec<String>,
}

impl EnvNames {
    /// The variables a host reads, compatible with the official hooks and the 1.4 client names.
    #[must_use]
    pub fn for_host(host: Integration) -> Self {
        use crate::variables::host as v;
        let name = |s: &str| crate::variables::per_host(host.env_part(), s);
        let one = |s: &str| vec![name(s)];
        let mut server_url = vec![name(v::SERVER_URL), name(v::BASE_URL), name(v::ENDPOINT)];
        let mut capture_prompts = one(v::CAPTURE_PROMPTS);
        if host.spec().capabilities.plugin_option_vars {
            server_url.push("CLAUDE_PLUGIN_OPTION_SERVER_URL".to_owned());
            capture_prompts.push("CLAUDE_PLUGIN_OPTION_CAPTURE_PROMPTS".to_owned());
        }
        server_url.push(vars::CLIENT_SERVER_URL.to_owned());
        Self {
            server_url,
            authorization: one(v::AUTHORIZATION),
            // The official integration's own token variable first (Kimi Code's), then the client's.
            token: host
                .spec()
                .token_var
                .into_iter()
                .chain([vars::CLIENT_API_TOKEN])
                .map(str::to_owned)
                .collect(),
            scope_id: one(v::SCOPE_ID),
            capture_prompts,
            capture_secrets: one(v::CAPTURE_SECRETS),
            flush_on_capture: one(v::FLUSH_ON_CAPTURE),
            request_timeout: one(v::REQUEST_TIMEOUT_SECONDS),
            budget: one(v::HTTP_BUDGET_SECONDS),
            flush_max_calls: one(v::FLUSH_MAX_CALLS),
            max_bytes: one(v::MAX_BYTES),
            bootstrap: one(v::BOOTSTRAP),
            bootstrap_max_bytes: one(v::BOOTSTRAP_MAX_BYTES),
        }
    }
}

/// Inputs of a resolution.
pub struct Layers<'a> {
    /// Which host's variables and file table apply.
    pub host: Integration,
    /// The environment snapshot.
    pub env: &'a Env,
    /// Command-line flags (the CLI only; hooks pass `None`).
    pub flags: Option<&'a HostOptions>,
    /// The parsed file and its path, if one exists.
    pub file: Option<(&'a Path, &'a FileOptions)>,
}

/// A raw value found in some layer.
struct Found<T> {
    value: T,
    origin: Origin,
}

impl Layers<'_> {
    fn host_table<'f>(&self, file: &'f FileOptions) -> Option<&'f HostOptions> {
        let t = &file.hosts;
        // Host match kept: the file's `[hosts.*]` tables are serde fields, refused by name when unknown.
        match self.host {
            Integration::ClaudeCode => t.claude_code.as_ref(),
            Integration::Codex => t.codex.as_ref(),
            Integration::OpenCode => t.opencode.as_ref(),
            Integration::Pi => t.pi.as_ref(),
            Integration::Dsh => t.dsh.as_ref(),
            Integration::Hermes => t.hermes.as_ref(),
            Integration::KimiCode => t.kimi_code.as_ref(),
            Integration::QwenCode => t.qwen_code.as_ref(),
            Integration::GeminiCli => t.gemini_cli.as_ref(),
            Integration::CopilotCli => t.copilot_cli.as_ref(),
            Integration::WorkBuddy => t.workbuddy.as_ref(),
            Integration::OpenClaw => t.openclaw.as_ref(),
            Integration::Zcode => t.zcode.as_ref(),
        }
    }

    /// Finds the first layer that sets a value: flags, env (in name order), host file table, file.
    fn find<T: Clone>(
        &self,
        key: &str,
        names: &[String],
        pick: impl Fn(&HostOptions) -> Option<T>,
        from_env: impl Fn(&str) -> T,
    ) -> Result<Option<Found<T>>, ConfigError> {
        if let Some(v) = self.flags.and_then(&pick) {
            return Ok(Some(Found {
                value: v,
                origin: Origin::Flag(format!("--{}", key.replace('_', "-"))),
            }));
        }
        for name in names {
            match self.env.get(name) {
                EnvValue::Set(v) if !v.trim().is_empty() => {
                    return Ok(Some(Found {
                        value: from_env(v),
                        origin: Origin::Env(name.clone()),
                    }));
                }
                EnvValue::NotUnicode => return Err(ConfigError::new(name.clone(), "is not valid UTF-8")),
                _ => {}
            }
        }
        if let Some((path, file)) = self.file {
            if let Some(v) = self.host_table(file).and_then(&pick) {
                let key = format!("hosts.{}.{key}", self.host.as_str());
                return Ok(Some(Found {
                    value: v,
                    origin: Origin::File {
                        path: path.to_path_buf(),
                        key,
                    },
                }));
            }
            if let Some(v) = pick(&file.common) {
                let origin = Origin::File {
                    path: path.to_path_buf(),
                    key: key.to_owned(),
                };
                return Ok(Some(Found { value: v, origin }));
            }
        }
        Ok(None)
    }
}

/// A value as written somewhere: env text, or a typed file/flag value.
#[derive(Clone)]
enum Raw<T> {
    Text(String),
    Typed(T),
}

fn setting_name(origin: &Origin) -> String {
    match origin {
        Origin::Flag(n) | Origin::Env(n) => n.clone(),
        Origin::File { path, key } | Origin::Official { path, key } => {
            format!("{} key {key}", path.display())
        }
        Origin::Default => "default".to_owned(),
    }
}

fn seconds(value: f64) -> Option<Duration> {
    (value.is_finite() && value > 0.0 && value <= 600.0).then(|| Duration::from_secs_f64(value))
}

/// How one kind of value is read: from environment text, or from the typed value a file or flag
/// holds. Every setting of a kind shares its parsing, its bounds and its error text.
trait Kind {
    /// The value's type in the file and in flags.
    type File: Clone;
    /// The resolved type.
    type Value;
    fn parse_text(&self, text: &str) -> Option<Self::Value>;
    fn parse_file(&self, value: Self::File) -> Option<Self::Value>;
    /// What a valid value looks like (the error's problem; never the value itself).
    fn expected(&self) -> String;
}

/// A switch: `1/0`, `true/false`, `yes/no`, `on/off`.
struct Switch;

impl Kind for Switch {
    type File = bool;
    type Value = bool;
    fn parse_text(&self, text: &str) -> Option<bool> {
        parse_bool(text)
    }
    fn parse_file(&self, value: bool) -> Option<bool> {
        Some(value)
    }
    fn expected(&self) -> String {
        "must be one of 1/0, true/false, yes/no, on/off".to_owned()
    }
}

/// A duration in seconds, above 0 and at most 600.
struct Seconds;

impl Kind for Seconds {
    type File = f64;
    type Value = Duration;
    fn parse_text(&self, text: &str) -> Option<Duration> {
        text.trim().parse::<f64>().ok().and_then(seconds)
    }
    fn parse_file(&self, value: f64) -> Option<Duration> {
        seconds(value)
    }
    fn expected(&self) -> String {
        "must be a number of seconds above 0 and at most 600".to_owned()
    }
}

/// A whole number within bounds.
struct Whole(std::ops::RangeInclusive<i64>);

impl Kind for Whole {
    type File = i64;
    type Value = u32;
    fn parse_text(&self, text: &str) -> Option<u32> {
        self.parse_file(text.trim().parse::<i64>().ok()?)
    }
    fn parse_file(&self, value: i64) -> Option<u32> {
        self.0
            .contains(&value)
            .then(|| u32::try_from(value).ok())
            .flatten()
    }
    fn expected(&self) -> String {
        format!(
            "must be a whole number from {} to {}",
            self.0.start(),
            self.0.end()
        )
    }
}

/// `skip` or `redact`.
struct Policy;

impl Kind for Policy {
    type File = String;
    type Value = SecretPolicy;
    fn parse_text(&self, text: &str) -> Option<SecretPolicy> {
        SecretPolicy::parse(text)
    }
    fn parse_file(&self, value: String) -> Option<SecretPolicy> {
        SecretPolicy::parse(&value)
    }
    fn expected(&self) -> String {
        "must be `skip` or `redact`".to_owned()
    }
}

/// An explicit scope id: at most 256 characters, no control characters; blank means none.
struct ScopeId {
    /// DSH: an over-long id is sent as `sha256:<hex>`, as upstream's DSH plugin does, instead of
    /// being refused.
    bound_long: bool,
}

impl Kind for ScopeId {
    type File = String;
    type Value = Option<String>;
    fn parse_text(&self, text: &str) -> Option<Option<String>> {
        let v = text.trim();
        if self.bound_long
            && let Some(hashed) = crate::workspace::bounded_utf16_scope(v)
        {
            return Some(Some(hashed));
        }
        if v.chars().count() > 256 || v.chars().any(char::is_control) {
            return None;
        }
        Some((!v.is_empty()).then(|| v.to_owned()))
    }
    fn parse_file(&self, value: String) -> Option<Option<String>> {
        self.parse_text(&value)
    }
    fn expected(&self) -> String {
        "must be a scope id of at most 256 characters".to_owned()
    }
}

impl Layers<'_> {
    /// One setting of kind `kind`: the first layer that sets it, parsed, or the default.
    fn setting<K: Kind>(
        &self,
        key: &str,
        names: &[String],
        pick: fn(&HostOptions) -> Option<K::File>,
        kind: &K,
        default: K::Value,
    ) -> Result<Setting<K::Value>, ConfigError> {
        let found = self.find(
            key,
            names,
            |o| pick(o).map(Raw::Typed),
            |t| Raw::Text(t.to_owned()),
        )?;
        let Some(Found { value, origin }) = found else {
            return Ok(Setting {
                value: default,
                origin: Origin::Default,
            });
        };
        let parsed = match value {
            Raw::Text(t) => kind.parse_text(&t),
            Raw::Typed(v) => kind.parse_file(v),
        };
        match parsed {
            Some(value) => Ok(Setting { value, origin }),
            None => Err(ConfigError::new(setting_name(&origin), kind.expected())),
        }
    }
}

/// The server URL: flags, environment, our file, then the URL the official CLI saved (plain http
/// to a remote host only with the consent it recorded for that endpoint), then the default.
fn resolve_server_url(layers: &Layers<'_>, names: &EnvNames) -> Result<Setting<BaseUrl>, ConfigError> {
    let found = layers.find(
        "server_url",
        &names.server_url,
        |o| o.server_url.clone(),
        str::to_owned,
    )?;
    if let Some(Found { value, origin }) = found {
        let url = match BaseUrl::parse(&value) {
            Err(crate::endpoint::UrlProblem::InsecureRemote)
                if BaseUrl::parse_insecure(&value)
                    .is_ok_and(|u| official::insecure_consent(layers.host, layers.env, &u)) =>
            {
                BaseUrl::parse_insecure(&value)
            }
            other => other,
        }
        .map_err(|p| ConfigError::new(setting_name(&origin), p.to_string()))?;
        return Ok(Setting { value: url, origin });
    }
    let Some(f) = official::server_url(layers.host, layers.env) else {
        return Ok(Setting {
            value: BaseUrl::parse(Defaults::SERVER_URL).expect("the default URL is valid"),
            origin: Origin::Default,
        });
    };
    let origin = Origin::Official {
        path: f.path.clone(),
        key: f.key.clone(),
    };
    let parsed = match BaseUrl::parse(&f.value) {
        Err(crate::endpoint::UrlProblem::InsecureRemote) if f.insecure_consent => {
            BaseUrl::parse_insecure(&f.value)
        }
        other => other,
    };
    let url = parsed.map_err(|p| ConfigError::new(setting_name(&origin), p.to_string()))?;
    Ok(Setting { value: url, origin })
}

/// The authorization header, in this order: a full header from flags or the environment; a bare
/// token variable (it beats a header that only the file sets, so a token exported for one run
/// wins over a stale file); the file's header; the token the official CLI saved for this very
/// endpoint; none.
fn resolve_authorization(
    layers: &Layers<'_>,
    names: &EnvNames,
    url: &BaseUrl,
) -> Result<Setting<Option<Authorization>>, ConfigError> {
    let header = |Found { value, origin }: Found<String>| {
        let a = Authorization::parse_header(&value)
            .map_err(|p| ConfigError::new(setting_name(&origin), p.to_string()))?;
        Ok(Setting {
            value: Some(a),
            origin,
        })
    };
    let found = layers.find(
        "authorization",
        &names.authorization,
        |o| o.authorization.clone(),
        str::to_owned,
    )?;
    match found {
        Some(f) if !matches!(f.origin, Origin::File { .. }) || !has_env(layers, &names.token) => header(f),
        found => match first_env(layers.env, &names.token)? {
            Some((name, token)) => {
                let a = Authorization::parse_token(token)
                    .map_err(|p| ConfigError::new(name.clone(), p.to_string()))?;
                Ok(Setting {
                    value: Some(a),
                    origin: Origin::Env(name),
                })
            }
            None => match found {
                Some(f) => header(f),
                None => official_authorization(layers, url),
            },
        },
    }
}

/// The explicit scope id: our layers, then the one the official installer saved, then none.
fn resolve_scope_id(layers: &Layers<'_>, n: &EnvNames) -> Result<Setting<Option<String>>, ConfigError> {
    let scope = ScopeId {
        bound_long: layers.host.spec().capabilities.profile_rows,
    };
    let mut scope_id = layers.setting("scope_id", &n.scope_id, |o| o.scope_id.clone(), &scope, None)?;
    // The explicit scope the official installer saved for the host (Kimi Code's plugin
    // settings) applies where no layer of ours names one.
    if scope_id.origin == Origin::Default
        && let Some(f) = official::scope_id(layers.host, layers.env)
    {
        scope_id = Setting {
            value: scope.parse_text(&f.value).ok_or_else(|| {
                ConfigError::new(format!("{} scope_id", f.path.display()), scope.expected())
            })?,
            origin: Origin::Official {
                path: f.path,
                key: f.key,
            },
        };
    }
    Ok(scope_id)
}

/// The per-request timeout and the whole-process budget, with OpenCode's millisecond variables.
fn resolve_timeouts(
    layers: &Layers<'_>,
    n: &EnvNames,
) -> Result<(Setting<Duration>, Setting<Duration>), ConfigError> {
    let request_timeout = layers.setting(
        "request_timeout_seconds",
        &n.request_timeout,
        |o| o.request_timeout_seconds,
        &Seconds,
        Defaults::REQUEST_TIMEOUT,
    )?;
    let budget = layers.setting(
        "budget_seconds",
        &n.budget,
        |o| o.budget_seconds,
        &Seconds,
        Defaults::BUDGET,
    )?;
    opencode_millis(layers, request_timeout, budget)
}

impl Settings {
    /// The Server connection these settings describe, every request bounded by `deadline`.
    ///
    /// # Errors
    /// The name of a proxy variable that cannot be used (reported as `config_invalid`).
    pub fn transport(&self, deadline: &Deadline, env: &Env) -> Result<Transport, &'static str> {
        Transport::new(
            self.server_url.value.clone(),
            self.authorization.value.clone(),
            self.request_timeout.value,
            *deadline,
            env,
        )
    }

    /// Resolves every setting through the layers.
    ///
    /// # Errors
    /// The first [`ConfigError`] found, naming the setting.
    pub fn resolve(layers: &Layers<'_>) -> Result<Self, ConfigError> {
        check_process_vars(layers.env)?;
        let n = EnvNames::for_host(layers.host);
        // In the order errors are reported: the first invalid setting is the one named.
        let server_url = resolve_server_url(layers, &n)?;
        let authorization = resolve_authorization(layers, &n, &server_url.value)?;
        let scope_id = resolve_scope_id(layers, &n)?;
        let capture_prompts = layers.setting(
            "capture_prompts",
            &n.capture_prompts,
            |o| o.capture_prompts,
            &Switch,
            Defaults::CAPTURE_PROMPTS,
        )?;
        let capture_secrets = layers.setting(
            "capture_secrets",
            &n.capture_secrets,
            |o| o.capture_secrets.clone(),
            &Policy,
            Defaults::CAPTURE_SECRETS,
        )?;
        let flush_on_capture = layers.setting(
            "flush_on_capture",
            &n.flush_on_capture,
            |o| o.flush_on_capture,
            &Switch,
            Defaults::FLUSH_ON_CAPTURE,
        )?;
        let (request_timeout, budget) = resolve_timeouts(layers, &n)?;
        let flush_max_calls = layers.setting(
            "flush_max_calls",
            &n.flush_max_calls,
            |o| o.flush_max_calls,
            &Whole(1..=16),
            Defaults::FLUSH_MAX_CALLS,
        )?;
        let max_bytes = layers.setting(
            "max_bytes",
            &n.max_bytes,
            |o| o.max_bytes,
            &Whole(512..=32768),
            Defaults::MAX_BYTES,
        )?;
        let bootstrap = layers.setting(
            "bootstrap",
            &n.bootstrap,
            |o| o.bootstrap,
            &Switch,
            Defaults::BOOTSTRAP,
        )?;
        let bootstrap_max_bytes = layers.setting(
            "bootstrap_max_bytes",
            &n.bootstrap_max_bytes,
            |o| o.bootstrap_max_bytes,
            &Whole(512..=8192),
            Defaults::BOOTSTRAP_MAX_BYTES,
        )?;
        Ok(Self {
            server_url,
            authorization,
            scope_id,
            capture_prompts,
            capture_secrets,
            flush_on_capture,
            request_timeout,
            budget,
            flush_max_calls,
            max_bytes,
            bootstrap,
            bootstrap_max_bytes,
        })
    }

    /// Loads the file (if any) and resolves settings for a hook process (no flags).
    ///
    /// # Errors
    /// The first [`ConfigError`].
    // Once per process: kept out of line, so a host's speed-optimized code calls this size-optimized copy.
    #[inline(never)]
    pub fn for_hook(host: Integration, env: &Env) -> Result<Self, ConfigError> {
        let _stage = crate::process::enter(crate::outcome::Stage::Config);
        let path = default_config_path(env);
        let file = match &path {
            Some(p) => load_file(p)?,
            None => None,
        };
        let file_ref = match (&path, &file) {
            (Some(p), Some(f)) => Some((p.as_path(), f)),
            _ => None,
        };
        Self::resolve(&Layers {
            host,
            env,
            flags: None,
            file: file_ref,
        })
    }
}

/// The variables every host shares (journal, scope cache, spool limits) are read where they are
/// used; they are checked here so that an invalid one is reported like any setting, not ignored.
fn check_process_vars(env: &Env) -> Result<(), ConfigError> {
    let set = |name: &str| env.text(name).map(str::trim).filter(|v| !v.is_empty());
    // A relative path would land under whatever directory the host runs the hook from.
    for name in [vars::STATE_DIR, vars::CONFIG_FILE] {
        if env
            .text(name)
            .is_some_and(|p| !p.trim().is_empty() && !Path::new(p).is_absolute())
        {
            return Err(ConfigError::new(name, "must be an absolute path"));
        }
    }
    if set(crate::journal::JOURNAL_VAR).is_some_and(|v| parse_bool(v).is_none()) {
        return Err(ConfigError::new(crate::journal::JOURNAL_VAR, Switch.expected()));
    }
    if set(crate::scope_cache::VALIDITY_VAR).is_some_and(|v| crate::scope_cache::parse_validity(v).is_none())
    {
        return Err(ConfigError::new(
            crate::scope_cache::VALIDITY_VAR,
            "must be a whole number of seconds from 0 (off) to 86400",
        ));
    }
    for name in [
        crate::spool::vars::MAX_ENTRIES,
        crate::spool::vars::MAX_BYTES,
        crate::spool::vars::MAX_AGE_SECONDS,
    ] {
        if set(name).is_some_and(|v| crate::spool::parse_limit(v).is_none()) {
            return Err(ConfigError::new(name, "must be a whole number above 0"));
        }
    }
    Ok(())
}

/// OpenCode's upstream plugin reads `POWERCONTEXT_OPENCODE_REQUEST_TIMEOUT_MS` (an integer from
/// 50 to 30000) and `…_HTTP_BUDGET_MS` (100 to 60000), the timeout never above the budget. They
/// apply, validated the same way, where nothing else set the value (the `_SECONDS` variables and
/// the file win).
fn opencode_millis(
    layers: &Layers<'_>,
    request: Setting<Duration>,
    budget: Setting<Duration>,
) -> Result<(Setting<Duration>, Setting<Duration>), ConfigError> {
    const REQUEST: &str = crate::variables::OPENCODE_REQUEST_TIMEOUT_MS;
    const BUDGET: &str = crate::variables::OPENCODE_HTTP_BUDGET_MS;
    if !layers.host.spec().capabilities.millisecond_timeout_vars {
        return Ok((request, budget));
    }
    let millis = |name: &str, min: u64, max: u64| -> Result<Option<Duration>, ConfigError> {
        let Some((_, raw)) = first_env(layers.env, &[name.to_owned()])? else {
            return Ok(None);
        };
        raw.trim()
            .parse::<u64>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .map(|n| Some(Duration::from_millis(n)))
            .ok_or_else(|| ConfigError::new(name, format!("must be an integer between {min} and {max}")))
    };
    let from_ms = |current: Setting<Duration>, name: &str, value: Option<Duration>| match value {
        Some(v) if current.origin == Origin::Default => Setting {
            value: v,
            origin: Origin::Env(name.to_owned()),
        },
        _ => current,
    };
    let request_ms = millis(REQUEST, 50, 30_000)?;
    let budget_ms = millis(BUDGET, 100, 60_000)?;
    if let (Some(r), Some(b)) = (request_ms, budget_ms)
        && r > b
    {
        return Err(ConfigError::new(REQUEST, format!("must not exceed {BUDGET}")));
    }
    Ok((
        from_ms(request, REQUEST, request_ms),
        from_ms(budget, BUDGET, budget_ms),
    ))
}

/// Every layer that sets the server URL, highest precedence first, with its raw value (for
/// `doctor`, which warns when two of them name different Servers). Never holds a token.
#[must_use]
pub fn server_url_candidates(layers: &Layers<'_>) -> Vec<(Origin, String)> {
    let names = EnvNames::for_host(layers.host);
    let mut out = Vec::new();
    if let Some(v) = layers.flags.and_then(|f| f.server_url.clone()) {
        out.push((Origin::Flag("--server-url".to_owned()), v));
    }
    for name in &names.server_url {
        if let Some(v) = layers.env.text(name).filter(|v| !v.trim().is_empty()) {
            out.push((Origin::Env(name.clone()), v.to_owned()));
        }
    }
    if let Some((path, file)) = layers.file {
        if let Some(v) = layers.host_table(file).and_then(|t| t.server_url.clone()) {
            let key = format!("hosts.{}.server_url", layers.host.as_str());
            out.push((
                Origin::File {
                    path: path.to_path_buf(),
                    key,
                },
                v,
            ));
        }
        if let Some(v) = file.common.server_url.clone() {
            out.push((
                Origin::File {
                    path: path.to_path_buf(),
                    key: "server_url".to_owned(),
                },
                v,
            ));
        }
    }
    for f in official::server_url_sources(layers.host, layers.env) {
        out.push((
            Origin::Official {
                path: f.path,
                key: f.key,
            },
            f.value,
        ));
    }
    out
}

/// The token the official CLI saved: DSH's row value (passed on by our DSH plugin), then the
/// host's `credentials.json` when it is owner-only and bound to this very endpoint.
fn official_authorization(
    layers: &Layers<'_>,
    url: &BaseUrl,
) -> Result<Setting<Option<Authorization>>, ConfigError> {
    if layers.host.spec().capabilities.profile_rows
        && let Some(raw) = official::dsh_row_authorization(layers.env, url)
    {
        let a = Authorization::parse_token(&raw)
            .map_err(|p| ConfigError::new(official::vars::DSH_ROW_AUTHORIZATION, p.to_string()))?;
        return Ok(Setting {
            value: Some(a),
            origin: Origin::Env(official::vars::DSH_ROW_AUTHORIZATION.to_owned()),
        });
    }
    match official::credential(layers.host, layers.env, url) {
        (Some(path), official::Credential::Found(a)) => Ok(Setting {
            value: Some(a),
            origin: Origin::Official {
                path,
                key: "authorization".to_owned(),
            },
        }),
        _ => Ok(Setting {
            value: None,
            origin: Origin::Default,
        }),
    }
}

fn has_env(layers: &Layers<'_>, names: &[String]) -> bool {
    names
        .iter()
        .any(|n| matches!(layers.env.get(n), EnvValue::Set(v) if !v.trim().is_empty()))
}

fn first_env<'e>(env: &'e Env, names: &[String]) -> Result<Option<(String, &'e str)>, ConfigError> {
    for name in names {
        match env.get(name) {
            EnvValue::Set(v) if !v.trim().is_empty() => return Ok(Some((name.clone(), v))),
            EnvValue::NotUnicode => return Err(ConfigError::new(name.clone(), "is not valid UTF-8")),
            _ => {}
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(host: Integration, env: &[(&str, &str)], file: Option<&str>) -> Result<Settings, ConfigError> {
        let env = Env::from_pairs(env.iter().copied());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let parsed = match file {
            Some(text) => {
                std::fs::write(&path, text).unwrap();
                load_file(&path)?
            }
            None => None,
        };
        Settings::resolve(&Layers {
            host,
            env: &env,
            flags: None,
            file: parsed.as_ref().map(|f| (path.as_path(), f)),
        })
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let s = resolve(Integration::ClaudeCode, &[], None).unwrap();
        assert_eq!(s.server_url.value.as_str(), "http://127.0.0.1:8000");
        assert_eq!(s.server_url.origin, Origin::Default);
        assert!(s.authorization.value.is_none());
        assert!(s.capture_prompts.value);
        assert!(!s.flush_on_capture.value);
        assert_eq!(s.request_timeout.value, Duration::from_secs(1));
        assert_eq!(s.budget.value, Duration::from_secs(4));
        assert_eq!(s.flush_max_calls.value, 4);
        assert_eq!(s.max_bytes.value, 8000);
    }

    #[test]
    fn dsh_bounds_an_over_long_configured_scope_as_upstream_does() {
        let long = "x".repeat(300);
        let hashed = "sha256:0d4e2ca9e9cbced7a7a5380eb29e1a3783b9b6d0db72de36a1051038e1c1fbc7";
        let s = resolve(
            Integration::Dsh,
            &[("POWERCONTEXT_DSH_SCOPE_ID", &format!(" {long} "))],
            None,
        )
        .unwrap();
        assert_eq!(s.scope_id.value.as_deref(), Some(hashed));
        let file = format!("[hosts.dsh]\nscope_id = \"{long}\"\n");
        let s = resolve(Integration::Dsh, &[], Some(&file)).unwrap();
        assert_eq!(s.scope_id.value.as_deref(), Some(hashed));
        let s = resolve(
            Integration::Dsh,
            &[("POWERCONTEXT_DSH_SCOPE_ID", "project:demo")],
            None,
        )
        .unwrap();
        assert_eq!(s.scope_id.value.as_deref(), Some("project:demo"));
        // The other hosts keep refusing it by name.
        let e = resolve(
            Integration::Codex,
            &[("POWERCONTEXT_CODEX_SCOPE_ID", &long)],
            None,
        )
        .unwrap_err();
        assert_eq!(e.setting, "POWERCONTEXT_CODEX_SCOPE_ID");
    }

    #[test]
    fn capture_secrets_is_layered_per_host_and_validated() {
        let s = resolve(Integration::Pi, &[], None).unwrap();
        assert_eq!(s.capture_secrets.value, SecretPolicy::Skip);
        assert_eq!(s.capture_secrets.origin, Origin::Default);
        let file = "capture_secrets = \"redact\"\n[hosts.dsh]\ncapture_secrets = \"skip\"\n";
        let s = resolve(Integration::Codex, &[], Some(file)).unwrap();
        assert_eq!(s.capture_secrets.value, SecretPolicy::Redact);
        assert!(matches!(&s.capture_secrets.origin, Origin::File { key, .. } if key == "capture_secrets"));
        let s = resolve(Integration::Dsh, &[], Some(file)).unwrap();
        assert_eq!(s.capture_secrets.value, SecretPolicy::Skip);
        assert!(
            matches!(&s.capture_secrets.origin, Origin::File { key, .. } if key == "hosts.dsh.capture_secrets")
        );
        let s = resolve(
            Integration::Dsh,
            &[("POWERCONTEXT_DSH_CAPTURE_SECRETS", "REDACT")],
            Some(file),
        )
        .unwrap();
        assert_eq!(s.capture_secrets.value, SecretPolicy::Redact);
        assert_eq!(
            s.capture_secrets.origin,
            Origin::Env("POWERCONTEXT_DSH_CAPTURE_SECRETS".into())
        );
        let err = resolve(Integration::Codex, &[], Some("capture_secrets = \"drop\"\n")).unwrap_err();
        assert!(err.setting.ends_with("key capture_secrets"), "{}", err.setting);
        assert!(!err.to_string().contains("drop"), "{err}");
    }

    #[test]
    fn env_beats_file_and_host_table_beats_file_common() {
        let file = "server_url = \"https://common.example\"\nmax_bytes = 600\n[hosts.codex]\nserver_url = \"https://codex.example\"\n";
        let s = resolve(Integration::Codex, &[], Some(file)).unwrap();
        assert_eq!(s.server_url.value.as_str(), "https://codex.example");
        assert!(matches!(&s.server_url.origin, Origin::File { key, .. } if key == "hosts.codex.server_url"));
        assert_eq!(s.max_bytes.value, 600);
        let s = resolve(Integration::ClaudeCode, &[], Some(file)).unwrap();
        assert_eq!(s.server_url.value.as_str(), "https://common.example");
        let s = resolve(
            Integration::Codex,
            &[("POWERCONTEXT_CODEX_SERVER_URL", "http://127.0.0.1:9")],
            Some(file),
        )
        .unwrap();
        assert_eq!(s.server_url.value.as_str(), "http://127.0.0.1:9");
        assert_eq!(
            s.server_url.origin,
            Origin::Env("POWERCONTEXT_CODEX_SERVER_URL".into())
        );
    }

    #[test]
    fn env_name_precedence_for_the_server_url() {
        let all = [
            ("POWERCONTEXT_CLIENT_SERVER_URL", "http://127.0.0.1:5"),
            ("CLAUDE_PLUGIN_OPTION_SERVER_URL", "http://127.0.0.1:4"),
            ("POWERCONTEXT_CLAUDE_ENDPOINT", "http://127.0.0.1:3"),
            ("POWERCONTEXT_CLAUDE_BASE_URL", "http://127.0.0.1:2"),
            ("POWERCONTEXT_CLAUDE_SERVER_URL", "http://127.0.0.1:1"),
        ];
        for i in 0..all.len() {
            let s = resolve(Integration::ClaudeCode, &all[..=i], None).unwrap();
            assert_eq!(s.server_url.value.as_str(), all[i].1);
        }
        // Blank values fall through to the next layer.
        let s = resolve(
            Integration::ClaudeCode,
            &[("POWERCONTEXT_CLAUDE_SERVER_URL", "  "), all[0]],
            None,
        )
        .unwrap();
        assert_eq!(s.server_url.value.as_str(), all[0].1);
    }

    #[test]
    fn errors_name_the_setting_and_never_the_value() {
        let cases: &[(&str, &str)] = &[
            ("POWERCONTEXT_CLAUDE_SERVER_URL", "http://secret-host.example"),
            ("POWERCONTEXT_CLAUDE_AUTHORIZATION", "Basic secret-token"),
            ("POWERCONTEXT_CLIENT_API_TOKEN", "secret token"),
            ("POWERCONTEXT_CLAUDE_CAPTURE_PROMPTS", "secret"),
            ("POWERCONTEXT_CLAUDE_CAPTURE_SECRETS", "secret"),
            ("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "-1"),
            ("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "secret"),
            ("POWERCONTEXT_CLAUDE_FLUSH_MAX_CALLS", "17"),
            ("POWERCONTEXT_CLAUDE_MAX_BYTES", "511"),
        ];
        for (name, value) in cases {
            let err = resolve(Integration::ClaudeCode, &[(name, value)], None).unwrap_err();
            assert_eq!(&err.setting, name);
            let text = err.to_string();
            assert!(text.contains(name) && !text.contains("secret"), "{text}");
        }
    }

    #[test]
    fn token_variables() {
        let s = resolve(
            Integration::Codex,
            &[("POWERCONTEXT_CLIENT_API_TOKEN", "tok")],
            None,
        )
        .unwrap();
        assert_eq!(s.authorization.value.unwrap().header_value(), "Bearer tok");
        let s = resolve(
            Integration::Codex,
            &[
                ("POWERCONTEXT_CLIENT_API_TOKEN", "tok"),
                ("POWERCONTEXT_CODEX_AUTHORIZATION", "Bearer host"),
            ],
            None,
        )
        .unwrap();
        assert_eq!(s.authorization.value.unwrap().header_value(), "Bearer host");
        // A token in the environment beats an authorization written in the file.
        let s = resolve(
            Integration::Codex,
            &[("POWERCONTEXT_CLIENT_API_TOKEN", "tok")],
            Some("authorization = \"Bearer file\"\n"),
        )
        .unwrap();
        assert_eq!(s.authorization.value.unwrap().header_value(), "Bearer tok");
    }

    #[test]
    fn file_errors_are_content_free() {
        let err = resolve(Integration::Codex, &[], Some("sever_url = \"x\"\n")).unwrap_err();
        assert!(err.problem.contains("unknown key `sever_url`"), "{err}");
        let err = resolve(Integration::Codex, &[], Some("[hosts.codex]\nbogus = 1\n")).unwrap_err();
        assert!(err.problem.contains("unknown key `bogus`"), "{err}");
        let err = resolve(
            Integration::Codex,
            &[],
            Some("capture_prompts = \"secret-value\"\n"),
        )
        .unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
        assert!(err.problem.contains("key `capture_prompts`"), "{err}");
        let err = resolve(Integration::Codex, &[], Some("[hosts.claude]\nmax_bytes = 600\n")).unwrap_err();
        assert!(err.problem.contains("unknown key `claude`"), "{err}");
        assert!(err.setting.ends_with("config.toml"), "{err}");
        let err = resolve(
            Integration::Codex,
            &[],
            Some("authorization = \"Basic secret\"\n"),
        )
        .unwrap_err();
        assert!(
            err.setting.ends_with("key authorization") && !err.to_string().contains("secret"),
            "{err}"
        );
    }

    #[test]
    fn a_token_where_a_key_belongs_is_never_repeated() {
        let token = "ghp_R8x2Kq9LmN4vB7tY1wZ3cH6jD0fG5sA8pE2u";
        for text in [
            format!("[hosts.claude-code]\nauthorization = \"Bearer \"\n{token}\n"),
            format!("[hosts.{token}]\n"),
            format!("\"{token}\" = 1\n"),
            "4975e1ef76c80becbe610c1e0f537284 = 1\n".to_owned(),
        ] {
            let err = resolve(Integration::ClaudeCode, &[], Some(&text)).unwrap_err();
            assert!(!err.to_string().contains(&token[4..20]), "{err}");
            assert!(!err.to_string().contains("4975e1ef76c80"), "{err}");
        }
        let err = resolve(Integration::Codex, &[], Some("server_urll = \"x\"\n")).unwrap_err();
        assert!(err.problem.contains("`server_urll`"), "{err}");
        let text = "[hosts.claude-code]\nbootstrap_max_bytes = \"x\"\n";
        let err = resolve(Integration::Codex, &[], Some(text)).unwrap_err();
        assert!(
            err.problem.contains("`hosts.claude-code.bootstrap_max_bytes`"),
            "{err}"
        );
    }

    #[test]
    fn file_switches_take_the_words_the_variables_take() {
        for (text, want) in [
            ("\"on\"", false),
            ("\"off\"", true),
            ("1", false),
            ("false", true),
        ] {
            let s = resolve(Integration::Pi, &[], Some(&format!("capture_prompts = {text}\n"))).unwrap();
            assert_eq!(s.capture_prompts.value, !want, "{text}");
        }
        let err = resolve(Integration::Pi, &[], Some("bootstrap = \"maybe-x\"\n")).unwrap_err();
        assert!(
            err.problem.contains("key `bootstrap`") && !err.to_string().contains("maybe-x"),
            "{err}"
        );
    }

    #[test]
    fn shared_variables_are_checked_like_settings() {
        for (name, value) in [
            (crate::journal::JOURNAL_VAR, "maybe"),
            (crate::scope_cache::VALIDITY_VAR, "-1"),
            (crate::spool::vars::MAX_ENTRIES, "abc"),
            (crate::spool::vars::MAX_BYTES, "-7"),
            (vars::STATE_DIR, "relative/state"),
        ] {
            let err = resolve(Integration::Codex, &[(name, value)], None).unwrap_err();
            assert_eq!(err.setting, name);
            assert!(!err.to_string().contains(value), "{err}");
        }
        for (name, value) in [
            (crate::journal::JOURNAL_VAR, "off"),
            (crate::scope_cache::VALIDITY_VAR, "0"),
            (crate::spool::vars::MAX_ENTRIES, "5"),
        ] {
            assert!(
                resolve(Integration::Codex, &[(name, value)], None).is_ok(),
                "{name}"
            );
        }
    }

    #[test]
    fn a_config_file_others_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "server_url = \"http://127.0.0.1:1\"\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let err = load_file(&path).unwrap_err();
        assert!(err.problem.contains("chmod go-w"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(load_file(&path).unwrap().is_some());
    }

    #[test]
    fn only_bounded_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load_file(&dir.path().join("absent.toml")).unwrap().is_none());
        let err = load_file(dir.path()).unwrap_err();
        assert_eq!(err.problem, "is not a regular file");
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; usize::try_from(MAX_CONFIG_BYTES).unwrap() + 1]).unwrap();
        assert!(load_file(&big).unwrap_err().problem.starts_with("is larger than"));
        let link = dir.path().join("linked.toml");
        let target = dir.path().join("real.toml");
        std::fs::write(&target, "capture_prompts = false\n").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(
            load_file(&link).unwrap().is_some(),
            "a dotfile link to a regular file is read"
        );
        let bom = dir.path().join("bom.toml");
        std::fs::write(&bom, "\u{feff}capture_prompts = false\r\nmax_bytes = 600\r\n").unwrap();
        assert_eq!(load_file(&bom).unwrap().unwrap().common.max_bytes, Some(600));
    }

    #[test]
    fn non_unicode_values_are_reported() {
        let mut env = Env::default();
        env.set_not_unicode("POWERCONTEXT_PI_SCOPE_ID");
        let err = Settings::resolve(&Layers {
            host: Integration::Pi,
            env: &env,
            flags: None,
            file: None,
        })
        .unwrap_err();
        assert_eq!(err.setting, "POWERCONTEXT_PI_SCOPE_ID");
    }

    /// A HOME holding what `powercontext setup pi --server-url URL` writes.
    fn official_home(url: &str, cred_url: &str, consent: bool) -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let clients = home.path().join(".config/powercontext/clients.json");
        std::fs::create_dir_all(clients.parent().unwrap()).unwrap();
        std::fs::write(
            &clients,
            format!(
                r#"{{"version":1,"hosts":{{"pi":{{"server_url":"{url}","allow_insecure_http":{consent}}}}}}}"#
            ),
        )
        .unwrap();
        let cred = home.path().join(".pi/agent/powercontext/credentials.json");
        std::fs::create_dir_all(cred.parent().unwrap()).unwrap();
        std::fs::write(
            &cred,
            format!(r#"{{"version":1,"server_url":"{cred_url}","authorization":"Bearer saved-token"}}"#),
        )
        .unwrap();
        std::fs::set_permissions(&cred, std::fs::Permissions::from_mode(0o600)).unwrap();
        home
    }

    #[test]
    fn official_files_rank_below_env_and_file_and_above_defaults() {
        let home = official_home("http://127.0.0.1:18431/", "http://127.0.0.1:18431", false);
        let h = home.path().to_str().unwrap();
        let s = resolve(Integration::Pi, &[("HOME", h)], None).unwrap();
        assert_eq!(s.server_url.value.as_str(), "http://127.0.0.1:18431");
        assert!(
            matches!(&s.server_url.origin, Origin::Official { key, .. } if key == "hosts.pi.server_url"),
            "{:?}",
            s.server_url.origin
        );
        assert_eq!(
            s.authorization.value.as_ref().unwrap().header_value(),
            "Bearer saved-token"
        );
        assert!(matches!(&s.authorization.origin, Origin::Official { .. }));
        // Our file beats the official files; the saved token is bound to its URL and not sent
        // to the other Server.
        let s = resolve(
            Integration::Pi,
            &[("HOME", h)],
            Some("server_url = \"http://127.0.0.1:9\"\n"),
        )
        .unwrap();
        assert_eq!(s.server_url.value.as_str(), "http://127.0.0.1:9");
        assert!(s.authorization.value.is_none());
        // The environment beats both, for the token too.
        let s = resolve(
            Integration::Pi,
            &[("HOME", h), ("POWERCONTEXT_PI_AUTHORIZATION", "Bearer env-token")],
            None,
        )
        .unwrap();
        assert_eq!(s.authorization.value.unwrap().header_value(), "Bearer env-token");
        // Another host reads nothing from the pi entry.
        let s = resolve(Integration::Codex, &[("HOME", h)], None).unwrap();
        assert_eq!(s.server_url.origin, Origin::Default);
        assert!(s.authorization.value.is_none());
    }

    #[test]
    fn kimi_code_reads_what_the_official_installer_saved_and_its_token_variable() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path().to_str().unwrap();
        let settings = home
            .path()
            .join(".kimi-code")
            .join(official::KIMI_PLUGIN_SETTINGS);
        std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
        std::fs::write(
            &settings,
            r#"{"server_url": "http://127.0.0.1:18555", "scope_id": "scp_official", "capture_prompts": true}"#,
        )
        .unwrap();
        let env = [("HOME", h), ("POWERCONTEXT_KIMI_TOKEN", "kimi-tok")];
        let s = resolve(Integration::KimiCode, &env, None).unwrap();
        assert_eq!(s.server_url.value.as_str(), "http://127.0.0.1:18555");
        assert_eq!(s.scope_id.value.as_deref(), Some("scp_official"));
        assert!(matches!(s.scope_id.origin, Origin::Official { .. }));
        assert_eq!(s.authorization.value.unwrap().header_value(), "Bearer kimi-tok");
        // Ours wins over the official file; another host never reads Kimi's variable or file.
        let ours = [env[0], env[1], ("POWERCONTEXT_KIMI_SCOPE_ID", "scp_mine")];
        let s = resolve(Integration::KimiCode, &ours, None).unwrap();
        assert_eq!(s.scope_id.value.as_deref(), Some("scp_mine"));
        let s = resolve(Integration::Codex, &env, None).unwrap();
        assert!(s.authorization.value.is_none() && s.scope_id.value.is_none());
        // `null` there: the workspace binding decides.
        std::fs::write(
            &settings,
            r#"{"server_url": "http://127.0.0.1:18555", "scope_id": null}"#,
        )
        .unwrap();
        let s = resolve(Integration::KimiCode, &env, None).unwrap();
        assert_eq!(s.scope_id.value, None);
    }

    #[test]
    fn the_dsh_row_token_goes_only_to_the_row_server() {
        let row = [
            (official::vars::DSH_ROW_BASE_URL, "http://127.0.0.1:18431/mcp"),
            (official::vars::DSH_ROW_AUTHORIZATION, "Bearer row-token"),
        ];
        let s = resolve(Integration::Dsh, &row, None).unwrap();
        assert_eq!(s.server_url.value.as_str(), "http://127.0.0.1:18431");
        assert_eq!(s.authorization.value.unwrap().header_value(), "Bearer row-token");
        // The same endpoint named elsewhere (default port, case, `/mcp`) still gets it...
        let same = [
            row[0],
            row[1],
            ("POWERCONTEXT_DSH_SERVER_URL", "HTTP://127.0.0.1:18431/"),
        ];
        let s = resolve(Integration::Dsh, &same, None).unwrap();
        assert_eq!(s.authorization.value.unwrap().header_value(), "Bearer row-token");
        // ...another Server, from the environment or our file, does not.
        let other = [
            row[0],
            row[1],
            ("POWERCONTEXT_DSH_SERVER_URL", "http://127.0.0.1:9"),
        ];
        let s = resolve(Integration::Dsh, &other, None).unwrap();
        assert_eq!(s.server_url.value.as_str(), "http://127.0.0.1:9");
        assert!(s.authorization.value.is_none());
        let s = resolve(
            Integration::Dsh,
            &row,
            Some("server_url = \"http://localhost:18431\"\n"),
        )
        .unwrap();
        assert!(s.authorization.value.is_none());
        // A row without a URL keeps the official plugin's rule: its token goes with the hook.
        let s = resolve(
            Integration::Dsh,
            &[row[1], ("POWERCONTEXT_DSH_SERVER_URL", "http://127.0.0.1:9")],
            None,
        )
        .unwrap();
        assert_eq!(s.authorization.value.unwrap().header_value(), "Bearer row-token");
    }

    #[test]
    fn remote_plain_http_needs_the_consent_recorded_for_that_endpoint() {
        let home = official_home("http://10.1.2.3:8000", "http://10.1.2.3:8000", true);
        let h = home.path().to_str().unwrap();
        let s = resolve(Integration::Pi, &[("HOME", h)], None).unwrap();
        assert_eq!(s.server_url.value.as_str(), "http://10.1.2.3:8000");
        // The same endpoint from the environment is covered by that consent...
        let s = resolve(
            Integration::Pi,
            &[
                ("HOME", h),
                ("POWERCONTEXT_PI_SERVER_URL", "http://10.1.2.3:8000/mcp"),
            ],
            None,
        )
        .unwrap();
        assert_eq!(s.server_url.value.as_str(), "http://10.1.2.3:8000");
        // ...another endpoint is not.
        let err = resolve(
            Integration::Pi,
            &[
                ("HOME", h),
                ("POWERCONTEXT_PI_SERVER_URL", "http://10.1.2.3:8001"),
            ],
            None,
        )
        .unwrap_err();
        assert_eq!(err.setting, "POWERCONTEXT_PI_SERVER_URL");
        let home = official_home("http://10.1.2.3:8000", "http://10.1.2.3:8000", false);
        let err = resolve(Integration::Pi, &[("HOME", home.path().to_str().unwrap())], None).unwrap_err();
        assert!(err.setting.ends_with("key hosts.pi.server_url"), "{err}");
        assert!(err.problem.contains("plain `http://`"), "{err}");
    }

    #[test]
    fn opencode_millisecond_variables_are_read_and_validated_as_upstream() {
        let s = resolve(
            Integration::OpenCode,
            &[
                ("POWERCONTEXT_OPENCODE_REQUEST_TIMEOUT_MS", "750"),
                ("POWERCONTEXT_OPENCODE_HTTP_BUDGET_MS", "2500"),
            ],
            None,
        )
        .unwrap();
        assert_eq!(s.request_timeout.value, Duration::from_millis(750));
        assert_eq!(s.budget.value, Duration::from_millis(2500));
        assert_eq!(
            s.budget.origin,
            Origin::Env("POWERCONTEXT_OPENCODE_HTTP_BUDGET_MS".into())
        );
        for (name, value) in [
            ("POWERCONTEXT_OPENCODE_REQUEST_TIMEOUT_MS", "49"),
            ("POWERCONTEXT_OPENCODE_REQUEST_TIMEOUT_MS", "30001"),
            ("POWERCONTEXT_OPENCODE_REQUEST_TIMEOUT_MS", "1.5"),
            ("POWERCONTEXT_OPENCODE_HTTP_BUDGET_MS", "99"),
            ("POWERCONTEXT_OPENCODE_HTTP_BUDGET_MS", "soon"),
        ] {
            let err = resolve(Integration::OpenCode, &[(name, value)], None).unwrap_err();
            assert_eq!(err.setting, name, "{value}");
        }
        let err = resolve(
            Integration::OpenCode,
            &[
                ("POWERCONTEXT_OPENCODE_REQUEST_TIMEOUT_MS", "2000"),
                ("POWERCONTEXT_OPENCODE_HTTP_BUDGET_MS", "1000"),
            ],
            None,
        )
        .unwrap_err();
        assert!(err.problem.contains("must not exceed"), "{err}");
        // The seconds variables win; other hosts ignore OpenCode's names.
        let s = resolve(
            Integration::OpenCode,
            &[
                ("POWERCONTEXT_OPENCODE_REQUEST_TIMEOUT_SECONDS", "2"),
                ("POWERCONTEXT_OPENCODE_REQUEST_TIMEOUT_MS", "750"),
            ],
            None,
        )
        .unwrap();
        assert_eq!(s.request_timeout.value, Duration::from_secs(2));
        let s = resolve(
            Integration::Pi,
            &[("POWERCONTEXT_OPENCODE_REQUEST_TIMEOUT_MS", "750")],
            None,
        )
        .unwrap();
        assert_eq!(s.request_timeout.value, Duration::from_secs(1));
    }
}
