//! What a host installer tells doctor: one verdict line per check (its tier of evidence, its
//! name, ok/warn/fail, the detail and the fix), gathered into one host's report. The `doctor`
//! command runs the checks and prints the report; nothing here checks anything itself.

use serde::Serialize;

use crate::support::report::SettingRow;

words! {
    /// Doctor's four tiers of evidence, in the order they are checked.
    pub(crate) enum Tier {
        Installed => "installed",
        Activated => "activated",
        ServerReady => "server-ready",
        Working => "working",
    }
}

words! {
    /// A doctor line's verdict.
    pub(crate) enum Status {
        Ok => "ok",
        Warn => "warn",
        Fail => "fail",
    }
}

/// One doctor line.
#[derive(Serialize)]
pub(crate) struct Check {
    pub tier: Tier,
    #[serde(rename = "check")]
    pub name: &'static str,
    pub status: Status,
    pub detail: String,
    pub fix: Option<String>,
}

/// Everything doctor found for one host.
#[derive(Default)]
pub(crate) struct Report {
    pub checks: Vec<Check>,
    pub settings: Vec<SettingRow>,
}

impl Report {
    pub fn ok(&mut self, tier: Tier, name: &'static str, detail: impl Into<String>) {
        self.push(tier, name, Status::Ok, detail.into(), None);
    }
    pub fn warn(
        &mut self,
        tier: Tier,
        name: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.push(tier, name, Status::Warn, detail.into(), Some(fix.into()));
    }
    pub fn fail(
        &mut self,
        tier: Tier,
        name: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.push(tier, name, Status::Fail, detail.into(), Some(fix.into()));
    }
    fn push(&mut self, tier: Tier, name: &'static str, status: Status, detail: String, fix: Option<String>) {
        self.checks.push(Check {
            tier,
            name,
            status,
            detail,
            fix,
        });
    }
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.status != Status::Fail)
    }
}
