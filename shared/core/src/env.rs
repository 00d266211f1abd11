//! The one door to the process environment: every setting is read through an injected [`Env`]
//! snapshot, never through `std::env::var` directly, so tests never mutate the real environment.

use std::collections::BTreeMap;
use std::ffi::OsString;

/// A snapshot of environment variables, captured once at process start (or built by a test).
///
/// Values that are not valid UTF-8 are kept apart so that a setting can report them as invalid
/// instead of silently treating them as unset.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: BTreeMap<String, String>,
    not_unicode: Vec<String>,
}

/// What [`Env::get`] found for a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvValue<'a> {
    /// The variable is not set.
    Unset,
    /// The variable is set to this (possibly empty) text.
    Set(&'a str),
    /// The variable is set but its value is not valid UTF-8.
    NotUnicode,
}

impl Env {
    /// Captures the environment of the running process.
    #[must_use]
    #[expect(
        clippy::disallowed_methods,
        reason = "this is the one place that reads the process environment"
    )]
    pub fn from_process() -> Self {
        let mut env = Self::default();
        for (name, value) in std::env::vars_os() {
            let Ok(name) = name.into_string() else { continue };
            match value.into_string() {
                Ok(value) => {
                    env.vars.insert(name, value);
                }
                Err(_) => env.not_unicode.push(name),
            }
        }
        env
    }

    /// The names of the variables set (values never), in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let mut all: Vec<&str> = self
            .vars
            .keys()
            .chain(&self.not_unicode)
            .map(String::as_str)
            .collect();
        all.sort_unstable();
        all.into_iter()
    }

    /// Builds an environment from explicit pairs (tests and the CLI's `doctor`).
    #[must_use]
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let mut env = Self::default();
        for (k, v) in pairs {
            env.vars.insert(k.into(), v.into());
        }
        env
    }

    /// Sets one variable in this snapshot (never in the process).
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(name.into(), value.into());
    }

    /// Marks a variable as holding a non-UTF-8 value (tests).
    pub fn set_not_unicode(&mut self, name: impl Into<String>) {
        let name = name.into();
        self.vars.remove(&name);
        self.not_unicode.push(name);
    }

    /// Every variable of the snapshot, in one byte string that is the same for the same
    /// environment (names sorted; non-UTF-8 values by name only), for a digest: whether two
    /// processes would read the same settings. Never written anywhere as is: it holds tokens.
    #[must_use]
    pub fn fingerprint_material(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, value) in &self.vars {
            out.extend_from_slice(name.as_bytes());
            out.push(b'=');
            out.extend_from_slice(value.as_bytes());
            out.push(0);
        }
        let mut odd = self.not_unicode.clone();
        odd.sort();
        for name in odd {
            out.extend_from_slice(name.as_bytes());
            out.push(0);
        }
        out
    }

    /// Looks a variable up.
    #[must_use]
    pub fn get(&self, name: &str) -> EnvValue<'_> {
        if let Some(v) = self.vars.get(name) {
            EnvValue::Set(v)
        } else if self.not_unicode.iter().any(|n| n == name) {
            EnvValue::NotUnicode
        } else {
            EnvValue::Unset
        }
    }

    /// The value of a variable when it is set to valid UTF-8 text.
    #[must_use]
    pub fn text(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// The value as an `OsString`, for handing to child processes.
    #[must_use]
    pub fn os(&self, name: &str) -> Option<OsString> {
        self.vars.get(name).map(OsString::from)
    }
}
