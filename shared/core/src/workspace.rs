//! placeholder: being written (temporary stub so the crate compiles)
#![allow(missing_docs, unused_variables)]
use std::path::{Path, PathBuf};
use crate::deadline::Deadline;
use crate::host::Integration;
pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}
pub fn workspace_root(integration: Integration, cwd: &Path, deadline: &Deadline) -> PathBuf { cwd.to_path_buf() }
pub fn workspace_external_id(integration: Integration, cwd: &Path, deadline: &Deadline) -> String { sha256_hex(cwd.to_string_lossy().as_bytes()) }
pub fn legacy_scope(integration: Integration, configured: Option<&str>, cwd: &Path, deadline: &Deadline) -> String { format!("local:{}", workspace_external_id(integration, cwd, deadline)) }
