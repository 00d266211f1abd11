//! Every `POWERCONTEXT_*` environment variable, declared once: its name (or, for a variable every
//! host has, the pattern `POWERCONTEXT_<HOST>_…`, `<HOST>` being the host row's `env_part`), what it
//! means, the module that owns it and where it is read. Code names a variable through the
//! constants here; the docs, `doctor` and the installers' shims are checked against [`ALL`] by a
//! test. Imports nothing and never reads the environment.

/// What every variable name starts with.
pub const PREFIX: &str = "POWERCONTEXT_";

/// How a variable is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Name {
    /// One variable of this exact name.
    Exact(&'static str),
    /// One variable per host: `POWERCONTEXT_<HOST>_<suffix>`.
    PerHost(&'static str),
}

impl Name {
    /// The name, or the pattern with `<HOST>` in place of a host's part.
    #[must_use]
    pub fn pattern(self) -> String {
        match self {
            Self::Exact(name) => name.to_owned(),
            Self::PerHost(suffix) => format!("{PREFIX}<HOST>_{suffix}"),
        }
    }

    /// Whether `name` is this variable, for a host whose part is one of `parts`.
    #[must_use]
    pub fn matches(self, name: &str, parts: &[&str]) -> bool {
        match self {
            Self::Exact(exact) => name == exact,
            Self::PerHost(suffix) => parts.iter().any(|p| per_host(p, suffix) == name),
        }
    }
}

/// Who sets a variable, which says where it must be documented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A setting of the hooks or the CLI, listed in the configuration reference.
    Setting,
    /// A variable of the official PowerContext tools that the hooks read too.
    Official,
    /// Passed between our installed shims (plugins, extensions) and the hook executables.
    Shim,
    /// The Server's own, only named in our hints.
    Server,
    /// For self-tests, the test suite and the benchmarks only.
    Test,
}

/// One variable.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    /// Its name or pattern.
    pub name: Name,
    /// What it means.
    pub meaning: &'static str,
    /// The module (or installer) that owns what it controls.
    pub owner: &'static str,
    /// Where it is read.
    pub read_by: &'static str,
    /// Who sets it.
    pub kind: Kind,
}

/// `POWERCONTEXT_<part>_<suffix>`: a per-host variable of the host whose part is `part`.
#[must_use]
pub fn per_host(part: &str, suffix: &str) -> String {
    format!("{PREFIX}{part}_{suffix}")
}

/// The suffixes of the variables every host has (see [`per_host`]).
pub mod host {
    /// Server URL (the official hooks' name).
    pub const SERVER_URL: &str = "SERVER_URL";
    /// Server URL (an older official name).
    pub const BASE_URL: &str = "BASE_URL";
    /// Server URL (an older official name).
    pub const ENDPOINT: &str = "ENDPOINT";
    /// The `Authorization` header value.
    pub const AUTHORIZATION: &str = "AUTHORIZATION";
    /// An explicit scope id.
    pub const SCOPE_ID: &str = "SCOPE_ID";
    /// Capture prompts as Sources.
    pub const CAPTURE_PROMPTS: &str = "CAPTURE_PROMPTS";
    /// What a prompt holding a secret becomes.
    pub const CAPTURE_SECRETS: &str = "CAPTURE_SECRETS";
    /// Flush Memory right after a capture.
    pub const FLUSH_ON_CAPTURE: &str = "FLUSH_ON_CAPTURE";
    /// Per-request timeout, seconds.
    pub const REQUEST_TIMEOUT_SECONDS: &str = "REQUEST_TIMEOUT_SECONDS";
    /// Whole-process budget, seconds.
    pub const HTTP_BUDGET_SECONDS: &str = "HTTP_BUDGET_SECONDS";
    /// Flush calls after one capture.
    pub const FLUSH_MAX_CALLS: &str = "FLUSH_MAX_CALLS";
    /// Requested context size.
    pub const MAX_BYTES: &str = "MAX_BYTES";
    /// Session bootstrap switch.
    pub const BOOTSTRAP: &str = "BOOTSTRAP";
    /// Requested bootstrap package size.
    pub const BOOTSTRAP_MAX_BYTES: &str = "BOOTSTRAP_MAX_BYTES";
}

/// Path of our configuration file.
pub const HOOKS_CONFIG: &str = "POWERCONTEXT_HOOKS_CONFIG";
/// Our state directory.
pub const HOOKS_STATE_DIR: &str = "POWERCONTEXT_HOOKS_STATE_DIR";
/// The resolved-scope cache's validity.
pub const HOOKS_SCOPE_CACHE_SECONDS: &str = "POWERCONTEXT_HOOKS_SCOPE_CACHE_SECONDS";
/// The run journal switch.
pub const HOOKS_JOURNAL: &str = "POWERCONTEXT_HOOKS_JOURNAL";
/// Background draining off.
pub const HOOKS_NO_BACKGROUND_DRAIN: &str = "POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN";
/// Spool limit: entries.
pub const HOOKS_SPOOL_MAX_ENTRIES: &str = "POWERCONTEXT_HOOKS_SPOOL_MAX_ENTRIES";
/// Spool limit: bytes.
pub const HOOKS_SPOOL_MAX_BYTES: &str = "POWERCONTEXT_HOOKS_SPOOL_MAX_BYTES";
/// Spool limit: age.
pub const HOOKS_SPOOL_MAX_AGE_SECONDS: &str = "POWERCONTEXT_HOOKS_SPOOL_MAX_AGE_SECONDS";
/// A hook's fault injection.
pub const HOOKS_FAULT: &str = "POWERCONTEXT_HOOKS_FAULT";
/// `setup`'s fault injection.
pub const HOOKS_SETUP_FAULT: &str = "POWERCONTEXT_HOOKS_SETUP_FAULT";
/// The CLI a shim runs.
pub const HOOKS_CLI: &str = "POWERCONTEXT_HOOKS_CLI";
/// The 1.4 client's shared Server URL.
pub const CLIENT_SERVER_URL: &str = "POWERCONTEXT_CLIENT_SERVER_URL";
/// The 1.4 client's shared bare token.
pub const CLIENT_API_TOKEN: &str = "POWERCONTEXT_CLIENT_API_TOKEN";
/// The official CLI's `clients.json` path.
pub const CLIENT_CONFIG_FILE: &str = "POWERCONTEXT_CLIENT_CONFIG_FILE";
/// The official CLI's home (where it copies packages).
pub const HOME: &str = "POWERCONTEXT_HOME";
/// The official Kimi Code plugin's token.
pub const KIMI_TOKEN: &str = "POWERCONTEXT_KIMI_TOKEN";
/// The official Hermes memory provider's config file.
pub const HERMES_CONFIG: &str = "POWERCONTEXT_HERMES_CONFIG";
/// OpenCode upstream's request timeout, milliseconds.
pub const OPENCODE_REQUEST_TIMEOUT_MS: &str = "POWERCONTEXT_OPENCODE_REQUEST_TIMEOUT_MS";
/// OpenCode upstream's budget, milliseconds.
pub const OPENCODE_HTTP_BUDGET_MS: &str = "POWERCONTEXT_OPENCODE_HTTP_BUDGET_MS";
/// The OpenCode plugin's hook command.
pub const OPENCODE_HOOK_COMMAND: &str = "POWERCONTEXT_OPENCODE_HOOK_COMMAND";
/// The DSH row's base URL, passed on by our DSH plugin.
pub const DSH_ROW_BASE_URL: &str = "POWERCONTEXT_DSH_ROW_BASE_URL";
/// The DSH row's authorization, passed on by our DSH plugin.
pub const DSH_ROW_AUTHORIZATION: &str = "POWERCONTEXT_DSH_ROW_AUTHORIZATION";
/// The DSH row's `allowInsecureHttp`, passed on by our DSH plugin.
pub const DSH_ROW_ALLOW_INSECURE_HTTP: &str = "POWERCONTEXT_DSH_ROW_ALLOW_INSECURE_HTTP";
/// The Server's own token variable.
pub const SERVER_AUTH_TOKEN: &str = "POWERCONTEXT_SERVER_AUTH_TOKEN";

const fn var(
    name: Name,
    kind: Kind,
    owner: &'static str,
    read_by: &'static str,
    meaning: &'static str,
) -> Var {
    Var {
        name,
        meaning,
        owner,
        read_by,
        kind,
    }
}

const HOOK_SETTING: &str = "every hook and the CLI (config::EnvNames)";

/// Every variable.
#[rustfmt::skip]
pub static ALL: &[Var] = &[
    var(Name::PerHost(host::SERVER_URL), Kind::Setting, "config", HOOK_SETTING, "the Server URL"),
    var(Name::PerHost(host::BASE_URL), Kind::Setting, "config", HOOK_SETTING, "the Server URL (older name)"),
    var(Name::PerHost(host::ENDPOINT), Kind::Setting, "config", HOOK_SETTING, "the Server URL (older name)"),
    var(Name::PerHost(host::AUTHORIZATION), Kind::Setting, "config", HOOK_SETTING, "the Authorization header (`Bearer <token>`)"),
    var(Name::PerHost(host::SCOPE_ID), Kind::Setting, "config", HOOK_SETTING, "an explicit scope id"),
    var(Name::PerHost(host::CAPTURE_PROMPTS), Kind::Setting, "config", HOOK_SETTING, "capture prompts"),
    var(Name::PerHost(host::CAPTURE_SECRETS), Kind::Setting, "config", HOOK_SETTING, "a prompt holding a secret: `skip` or `redact`"),
    var(Name::PerHost(host::FLUSH_ON_CAPTURE), Kind::Setting, "config", HOOK_SETTING, "flush after a capture"),
    var(Name::PerHost(host::REQUEST_TIMEOUT_SECONDS), Kind::Setting, "config", HOOK_SETTING, "per-request timeout (s)"),
    var(Name::PerHost(host::HTTP_BUDGET_SECONDS), Kind::Setting, "config", "every hook and the CLI (config::EnvNames); the OpenCode and Pi shims size their own wait from it", "budget from process start (s)"),
    var(Name::PerHost(host::FLUSH_MAX_CALLS), Kind::Setting, "config", HOOK_SETTING, "flush calls after one capture"),
    var(Name::PerHost(host::MAX_BYTES), Kind::Setting, "config", HOOK_SETTING, "requested context bytes"),
    var(Name::PerHost(host::BOOTSTRAP), Kind::Setting, "config", HOOK_SETTING, "session bootstrap"),
    var(Name::PerHost(host::BOOTSTRAP_MAX_BYTES), Kind::Setting, "config", HOOK_SETTING, "requested bootstrap bytes"),
    var(Name::Exact(CLIENT_SERVER_URL), Kind::Setting, "config", HOOK_SETTING, "the Server URL for every host (the 1.4 client's name)"),
    var(Name::Exact(CLIENT_API_TOKEN), Kind::Setting, "config", HOOK_SETTING, "a bare token for every host (the 1.4 client's name)"),
    var(Name::Exact(HOOKS_CONFIG), Kind::Setting, "config", "every hook and the CLI (config::config_path)", "our config file (absolute path)"),
    var(Name::Exact(HOOKS_STATE_DIR), Kind::Setting, "state", "every hook and the CLI (state::StateDir::locate); the OpenCode shim", "our state directory (absolute path)"),
    var(Name::Exact(HOOKS_SCOPE_CACHE_SECONDS), Kind::Setting, "scope_cache", "hooks (scope_cache::ScopeCache::locate); checked by config", "resolved-scope cache validity (s, 0 = off)"),
    var(Name::Exact(HOOKS_JOURNAL), Kind::Setting, "journal", "hooks (journal::start); checked by config", "run journal on or off"),
    var(Name::Exact(HOOKS_NO_BACKGROUND_DRAIN), Kind::Setting, "drain", "hooks (drain::background_disabled)", "no detached drainer: a hook delivers its own capture after its answer"),
    var(Name::Exact(HOOKS_SPOOL_MAX_ENTRIES), Kind::Setting, "spool", "hooks, drainer, flush (spool::SpoolLimits::from_env); checked by config", "spool limit: entries"),
    var(Name::Exact(HOOKS_SPOOL_MAX_BYTES), Kind::Setting, "spool", "hooks, drainer, flush (spool::SpoolLimits::from_env); checked by config", "spool limit: bytes"),
    var(Name::Exact(HOOKS_SPOOL_MAX_AGE_SECONDS), Kind::Setting, "spool", "hooks, drainer, flush (spool::SpoolLimits::from_env); checked by config", "spool limit: oldest entry (s)"),
    var(Name::Exact(OPENCODE_REQUEST_TIMEOUT_MS), Kind::Setting, "config", "the OpenCode hook (config, hosts with millisecond timeout variables)", "OpenCode upstream's request timeout (ms)"),
    var(Name::Exact(OPENCODE_HTTP_BUDGET_MS), Kind::Setting, "config", "the OpenCode hook (config, hosts with millisecond timeout variables)", "OpenCode upstream's budget (ms)"),
    var(Name::Exact(KIMI_TOKEN), Kind::Official, "host", "the Kimi Code hook (the row's token variable); Kimi's doctor script", "the official Kimi Code plugin's bare token"),
    var(Name::Exact(CLIENT_CONFIG_FILE), Kind::Official, "official", "hooks and the CLI (official::clients_json); setup's interop notes", "the official CLI's `clients.json` path"),
    var(Name::Exact(HERMES_CONFIG), Kind::Official, "official", "the Hermes hook and the CLI (official::hermes_native_url)", "the official Hermes memory provider's config file"),
    var(Name::Exact(HOME), Kind::Official, "cli hosts", "`setup pi`/`doctor pi` (where the official CLI copied its Pi package)", "the official CLI's home"),
    var(Name::Exact(DSH_ROW_BASE_URL), Kind::Shim, "official", "the DSH hook (official), set by installers/dsh", "the DSH row's base URL"),
    var(Name::Exact(DSH_ROW_AUTHORIZATION), Kind::Shim, "official", "the DSH hook (official, config), set by installers/dsh", "the DSH row's Authorization"),
    var(Name::Exact(DSH_ROW_ALLOW_INSECURE_HTTP), Kind::Shim, "official", "the DSH hook (official), set by installers/dsh", "the DSH row's `allowInsecureHttp`"),
    var(Name::Exact(HOOKS_CLI), Kind::Shim, "installers", "the OpenCode, Pi and DSH shims (installers/)", "the `powercontext-hooks` CLI a shim runs"),
    var(Name::Exact(OPENCODE_HOOK_COMMAND), Kind::Shim, "installers/opencode", "the OpenCode plugin; `doctor opencode`'s activation probe", "the hook command the OpenCode plugin runs"),
    var(Name::Exact("POWERCONTEXT_OPENCODE_PREPARE_TIMEOUT_MS"), Kind::Shim, "installers/opencode", "the OpenCode plugin", "how long the plugin waits for `prepare` (ms)"),
    var(Name::Exact("POWERCONTEXT_OPENCODE_ACTIVATION_PROBE_PATH"), Kind::Shim, "installers/opencode", "the OpenCode plugin, set by `doctor opencode`", "where the plugin proves it was loaded"),
    var(Name::Exact("POWERCONTEXT_OPENCODE_ACTIVATION_PROBE_NONCE"), Kind::Shim, "installers/opencode", "the OpenCode plugin, set by `doctor opencode`", "the nonce of that proof"),
    var(Name::Exact("POWERCONTEXT_PI_HOOK_COMMAND"), Kind::Shim, "installers/pi", "the Pi extension", "the hook command the Pi extension runs"),
    var(Name::Exact("POWERCONTEXT_PI_HOOK_TIMEOUT_MS"), Kind::Shim, "installers/pi", "the Pi extension", "how long the Pi extension waits for the hook (ms)"),
    var(Name::Exact("POWERCONTEXT_OPENCLAW_HOOK_COMMAND"), Kind::Shim, "installers/openclaw", "the OpenClaw plugin", "the hook command the OpenClaw plugin runs"),
    var(Name::Exact("POWERCONTEXT_OPENCLAW_HOOK_TIMEOUT_MS"), Kind::Shim, "installers/openclaw", "the OpenClaw plugin", "how long the OpenClaw plugin waits for the hook (ms)"),
    var(Name::Exact("POWERCONTEXT_OPENCLAW_ACTIVATION_PROBE_PATH"), Kind::Shim, "installers/openclaw", "the OpenClaw plugin, set by its doctor", "where the plugin proves it was loaded"),
    var(Name::Exact("POWERCONTEXT_OPENCLAW_ACTIVATION_PROBE_NONCE"), Kind::Shim, "installers/openclaw", "the OpenClaw plugin, set by its doctor", "the nonce of that proof"),
    var(Name::Exact("POWERCONTEXT_DSH_HOOK_EXECUTABLE"), Kind::Shim, "installers/dsh", "the DSH plugin", "the hook executable the DSH plugin runs"),
    var(Name::Exact(SERVER_AUTH_TOKEN), Kind::Server, "the Server", "named in `doctor`'s hint for a missing token", "the Server's own API token"),
    var(Name::Exact("POWERCONTEXT_SERVER_AUTH_ENABLED"), Kind::Server, "the Server", "the test Server's start-up", "the Server's own authentication switch"),
    var(Name::Exact(HOOKS_FAULT), Kind::Test, "hook", "every hook (hook::run_hook)", "`panic`: proves a release binary fails open"),
    var(Name::Exact(HOOKS_SETUP_FAULT), Kind::Test, "cli setup", "`setup` (its write steps)", "makes a setup step fail, to prove the rollback"),
    var(Name::Exact("POWERCONTEXT_HOOKS_TEST_VENV"), Kind::Test, "test support", "the test suite (the pinned Server's virtualenv)", "where the pinned Server is installed"),
    var(Name::Exact("POWERCONTEXT_OFFICIAL_HOOKS"), Kind::Test, "benchmarks", "`make bench` (the official hooks to compare against)", "the official hooks' checkout"),
    var(Name::Exact("POWERCONTEXT_BENCH_ONLY"), Kind::Test, "benchmarks", "`make bench`", "runs one part of the benchmarks"),
    var(Name::Exact("POWERCONTEXT_BENCH_SETTLE"), Kind::Test, "benchmarks", "`make bench`", "`0`: times the main comparison without waiting for each run's capture to be delivered"),
    var(Name::Exact("POWERCONTEXT_BENCH_SEED"), Kind::Test, "benchmarks", "`make bench`", "seeds the shuffled order of each table's rows (a number; the report names the seed it used)"),
];

/// The variable `name` is, for hosts whose parts are `parts`.
#[must_use]
pub fn find(name: &str, parts: &[&str]) -> Option<&'static Var> {
    ALL.iter().find(|v| v.name.matches(name, parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_is_declared_once_and_well_formed() {
        let mut seen = std::collections::BTreeSet::new();
        for v in ALL {
            let pattern = v.name.pattern();
            assert!(seen.insert(pattern.clone()), "{pattern} is declared twice");
            assert!(pattern.starts_with(PREFIX), "{pattern}");
            assert!(
                pattern[PREFIX.len()..].bytes().all(|b| b.is_ascii_uppercase()
                    || b.is_ascii_digit()
                    || b == b'_'
                    || b == b'<'
                    || b == b'>'),
                "{pattern}"
            );
            assert!(!v.meaning.is_empty() && !v.owner.is_empty() && !v.read_by.is_empty());
        }
        assert!(find("POWERCONTEXT_CLAUDE_SERVER_URL", &["CLAUDE"]).is_some());
        assert!(find("POWERCONTEXT_CLAUDE_SERVER_URL", &["CODEX"]).is_none());
        assert!(find(HOOKS_CONFIG, &[]).is_some());
        assert!(find("POWERCONTEXT_HOOKS_CONFIGG", &[]).is_none());
    }
}
