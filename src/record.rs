//! Install records: where each installed extension came from, kept in the store's state
//! folder (`<base>/.ext-store/sources/<name>.json`) where the host's scan never looks.

use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::paths::ScopeDirs;

/// How an extension was installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Copied from a local directory.
    Path,
    /// Cloned from a git repository.
    Git,
    /// A symbolic link to a working copy (`zot ext link`).
    Link,
}

/// What a git ref named when it was installed, which decides what `update` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RefKind {
    /// A branch (the default branch when no `--ref` was given): updates follow it.
    Branch,
    /// A tag: pinned.
    Tag,
    /// A commit: pinned.
    Commit,
}

/// The provenance of one installed extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub name: String,
    /// The local path (absolute) or the git URL without credentials.
    pub source: String,
    pub kind: Kind,
    /// The `--ref` given at install time, if any.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// What the ref named (git installs).
    #[serde(default)]
    pub ref_kind: Option<RefKind>,
    /// The branch that `update` follows (git installs not pinned to a tag or commit).
    #[serde(default)]
    pub branch: Option<String>,
    /// The commit that was checked out (git installs).
    pub commit: Option<String>,
    /// The folder of the repository or source folder that holds the extension, if not its top.
    #[serde(default)]
    pub subdir: Option<String>,
    /// RFC 3339 time of the install.
    pub installed_at: String,
}

impl Record {
    /// A record of `kind` made now, with no ref, commit or subfolder.
    pub fn new(name: &str, source: String, kind: Kind) -> Record {
        Record {
            name: name.to_string(),
            source,
            kind,
            git_ref: None,
            ref_kind: None,
            branch: None,
            commit: None,
            subdir: None,
            installed_at: now_rfc3339(),
        }
    }

    /// Whether `update` leaves this install alone unless given a new `--ref`.
    pub fn pinned(&self) -> bool {
        matches!(self.ref_kind, Some(RefKind::Tag | RefKind::Commit))
    }

    fn path(dirs: &ScopeDirs, name: &str) -> PathBuf {
        dirs.state().join("sources").join(format!("{name}.json"))
    }

    /// The record of `name` in this scope; `None` when it was installed by hand.
    pub fn load(dirs: &ScopeDirs, name: &str) -> Option<Record> {
        let text = fs::read_to_string(Self::path(dirs, name)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes the record to a temporary file beside its place, so that all that is left to
    /// do after the extension is placed is a rename ([`PendingRecord::commit`]). Errors
    /// (a full disk, no permission) surface here, before anything changes.
    pub fn prepare(&self, dirs: &ScopeDirs) -> Result<PendingRecord> {
        let path = Self::path(dirs, &self.name);
        let dir = path.parent().expect("record path has a parent");
        let fail = || format!("cannot write the install record {}", path.display());
        fs::create_dir_all(dir).with_context(fail)?;
        let mut temp = tempfile::NamedTempFile::new_in(dir).with_context(fail)?;
        serde_json::to_writer_pretty(&mut temp, self)?;
        temp.write_all(b"\n").with_context(fail)?;
        temp.as_file().sync_all().with_context(fail)?;
        Ok(PendingRecord { temp, path })
    }

    /// Writes the record atomically (temporary file + rename).
    pub fn save(&self, dirs: &ScopeDirs) -> Result<()> {
        self.prepare(dirs)?.commit()
    }

    pub fn delete(dirs: &ScopeDirs, name: &str) -> Result<()> {
        match fs::remove_file(Self::path(dirs, name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}

/// A record written to a temporary file, waiting to be renamed into place.
pub struct PendingRecord {
    temp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl PendingRecord {
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        self.temp
            .persist(&path)
            .map_err(|e| e.error)
            .with_context(|| format!("cannot write the install record {}", path.display()))?;
        Ok(())
    }
}

/// The current time in RFC 3339, seconds precision, UTC.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
