//! A host whose installer is not built yet: setup refuses it by name and doctor says why. It
//! never writes anything.

use std::path::PathBuf;

use anyhow::{Result, bail};
use powercontext_hooks_core::env::Env;
use serde_json::Value;

use super::{Activation, Calls, Installer, channel_context, prompt_event, table_home};
use crate::doctor::{Report, Tier};
use crate::install::Host;
use crate::setup::{Paths, Plan, SetupArgs};

pub(super) struct Pending(pub Host);

impl Installer for Pending {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    fn home(&self, env: &Env) -> Option<PathBuf> {
        table_home(env, self.0)
    }

    fn plan(&self, _args: &SetupArgs, _paths: &Paths, _plan: &mut Plan) -> Result<()> {
        bail!("setup {} is not available in this build", self.0.as_str())
    }

    fn verify(&self, _plan: &Plan, _paths: &Paths) -> Result<()> {
        Ok(())
    }

    fn check_activated(&self, a: &Activation<'_>, r: &mut Report) {
        r.fail(
            Tier::Activated,
            "hooks installed",
            "setup is not available in this build",
            a.setup_cmd,
        );
    }

    fn synthetic_calls(&self, cwd: &str, _session: &str, prompt: &str) -> Calls {
        vec![(Vec::new(), prompt_event(self.0, cwd, prompt))]
    }

    fn context<'a>(&self, answer: &'a Value) -> &'a Value {
        channel_context(self.0, answer)
    }

    fn silence_causes(&self) -> (&'static str, &'static str) {
        ("setup is not available in this build", "")
    }
}
