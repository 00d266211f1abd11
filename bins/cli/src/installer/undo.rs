//! What a host installer tells uninstall: each thing undone (a host CLI call run, a file removed,
//! restored or tidied, a member edited) and each thing kept with its reason. The `uninstall`
//! command prints them; nothing here touches a file.

use std::path::{Path, PathBuf};

use serde::Serialize;

words! {
    /// What uninstall does to one thing.
    pub(crate) enum Undoing {
        Run => "run",
        Remove => "remove",
        Edit => "edit",
        Tidy => "tidy",
        Restore => "restore",
    }
}

/// One thing uninstall did (or, in a dry run, would do): a host CLI call, or a file and, for an
/// edit, the member of it. The same fields as setup's file actions, so a script reads both alike.
#[derive(Debug, Serialize)]
pub(crate) struct Done {
    action: Undoing,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<PathBuf>,
    /// The member edited (`hosts.codex`, `mcp.powercontext`).
    #[serde(skip_serializing_if = "Option::is_none")]
    what: Option<String>,
    /// Why a file the host CLI rewrote was tidied.
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<&'static str>,
    /// The host CLI call, as the user would type it.
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<String>,
}

impl Done {
    /// A whole file removed or restored.
    pub(crate) fn file(action: Undoing, path: &Path) -> Self {
        Self {
            action,
            path: Some(path.to_owned()),
            what: None,
            why: None,
            command: None,
        }
    }

    /// One member of a file edited.
    pub(crate) fn member(path: &Path, what: impl Into<String>) -> Self {
        Self {
            what: Some(what.into()),
            ..Self::file(Undoing::Edit, path)
        }
    }

    /// The same, with the reason it was done (a tidied or emptied file).
    pub(crate) fn because(self, why: &'static str) -> Self {
        Self {
            why: Some(why),
            ..self
        }
    }

    /// A host CLI call.
    pub(crate) fn command(command: String) -> Self {
        Self {
            action: Undoing::Run,
            path: None,
            what: None,
            why: None,
            command: Some(command),
        }
    }
}

impl std::fmt::Display for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:<8}", self.action)?;
        if let Some(c) = &self.command {
            write!(f, "{c}")?;
        }
        if let Some(p) = &self.path {
            write!(f, "{}", p.display())?;
        }
        if let Some(w) = &self.what {
            write!(f, " {w}")?;
        }
        if let Some(w) = self.why {
            write!(f, " ({w})")?;
        }
        Ok(())
    }
}

/// Something uninstall left where it was, and why (it is not as setup made it any more).
#[derive(Debug, Serialize)]
pub(crate) struct Kept {
    path: PathBuf,
    /// The member of the file, or what the path is to the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    what: Option<String>,
    why: &'static str,
}

impl Kept {
    /// A file or a member of one changed since setup wrote it.
    pub(crate) fn changed(path: &Path, what: Option<String>) -> Self {
        Self::because(path, what, CHANGED)
    }

    /// `path` (and `what` of it) kept for the reason `why`.
    pub(crate) fn because(path: &Path, what: Option<String>, why: &'static str) -> Self {
        Self {
            path: path.to_owned(),
            what,
            why,
        }
    }
}

/// The usual reason something is kept.
const CHANGED: &str = "changed since setup";

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.what {
            Some(w) => write!(f, "{} {w} ({})", self.path.display(), self.why),
            None => write!(f, "{} ({})", self.path.display(), self.why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_reads_as_before_and_aligns() {
        let p = Path::new("/h/.config/powercontext/clients.json");
        assert_eq!(
            Done::file(Undoing::Remove, p).to_string(),
            "remove  /h/.config/powercontext/clients.json"
        );
        assert_eq!(
            Done::file(Undoing::Restore, p).to_string(),
            "restore /h/.config/powercontext/clients.json"
        );
        assert_eq!(
            Done::member(p, "hosts.codex").to_string(),
            "edit    /h/.config/powercontext/clients.json hosts.codex"
        );
        assert_eq!(
            Done::command("codex plugin remove powercontext".into()).to_string(),
            "run     codex plugin remove powercontext"
        );
        let tidy = Done::file(Undoing::Tidy, p).because("members the host CLI left empty");
        assert_eq!(
            tidy.to_string(),
            "tidy    /h/.config/powercontext/clients.json (members the host CLI left empty)"
        );
        assert_eq!(
            Kept::changed(p, Some("hosts.codex".into())).to_string(),
            "/h/.config/powercontext/clients.json hosts.codex (changed since setup)"
        );
        assert_eq!(
            serde_json::to_value(Done::command("x y".into())).unwrap(),
            serde_json::json!({"action": "run", "command": "x y"})
        );
        assert_eq!(
            serde_json::to_value(Kept::changed(p, None)).unwrap(),
            serde_json::json!({"path": p, "why": "changed since setup"})
        );
    }
}
