//! Install records: where each installed extension came from, kept in the store's state
//! folder (`<base>/.ext-store/sources/<name>.json`) where the host's scan never looks.
//! The store writes and deletes them ([`crate::store::Store::save_record`]), through its
//! journal so that they always match the trees.

use serde::{Deserialize, Serialize};

use super::filelist::FileList;
use super::journal;
use super::state::{read_state_file, try_read_state_file};
use crate::catalog::paths::ScopeDirs;

/// How an extension was installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    /// Copied from a local directory.
    Path,
    /// Cloned from a git repository.
    Git,
    /// Pulled from an OCI registry (`oci://`).
    Oci,
    /// A symbolic link to a working copy (`zot ext link`).
    Link,
    /// Written from a template by `zot ext new`: there is no source to update from.
    New,
}

/// What commands ask of a kind instead of matching it.
impl Kind {
    /// How `info` names it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::Path => "folder",
            Kind::Git => "git",
            Kind::Oci => "oci",
            Kind::Link => "link",
            Kind::New => "new",
        }
    }

    /// Whether there is a source to fetch a new version from.
    pub(crate) fn has_source(self) -> bool {
        self.without_source().is_none()
    }

    /// Why `update` has nothing to fetch for it (a link, `new`); `None` when it has a source.
    pub(crate) fn without_source(self) -> Option<&'static str> {
        match self {
            Kind::Link => Some("linked: the working copy is used as it is"),
            Kind::New => Some(
                "made by zot ext new: there is no source to fetch a new version from; edit it in place",
            ),
            Kind::Path | Kind::Git | Kind::Oci => None,
        }
    }

    /// How an extension of this kind came to be installed from `source`, after its name
    /// (`… was installed from the folder /src/x`).
    pub(crate) fn how_installed(self, source: &str) -> String {
        match self {
            Kind::Path => format!("was installed from the folder {source}"),
            Kind::Git => format!("was cloned from {source}"),
            Kind::Oci => format!("was pulled from the registry {source}"),
            Kind::Link => format!("is a link to the working copy {source}"),
            Kind::New => "was made by zot ext new".to_string(),
        }
    }
}

/// What a git ref named when it was installed, which decides what `update` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RefKind {
    /// A branch (the default branch when no `--ref` was given): updates follow it.
    Branch,
    /// A tag: pinned.
    Tag,
    /// A commit: pinned.
    Commit,
}

/// The provenance of one installed extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
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
    /// The manifest digest (`sha256:…`) of an install pulled from an OCI registry: the
    /// index's when the tag names one (the same on every machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The platform (`linux/amd64`) of the manifest built for it that an OCI install took
    /// from the index: placed as published, nothing prepared here. `None` for a source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// The folder of the repository or source folder that holds the extension, if not its top.
    #[serde(default)]
    pub subdir: Option<String>,
    /// RFC 3339 time of the install.
    pub installed_at: String,
    /// The template `zot ext new` wrote it from (`--lang`: python, node, go, shell, rust).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// The manifest's language, for extensions made by `zot ext new`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// The build or dependency install run in staging before the tree was placed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepared: Option<Prepared>,
}

/// What preparing the staged copy ran, recorded with the install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Prepared {
    /// The last command, as typed in the extension folder (`npm ci --ignore-scripts ...`).
    pub step: String,
    pub tool: String,
    /// What the tool says its version is.
    #[serde(default)]
    pub tool_version: Option<String>,
    /// The dependency lock file (`package-lock.json`, `go.sum`, `requirements.txt`,
    /// `uv.lock`, `Cargo.lock`) and its SHA-256, when there is one.
    #[serde(default)]
    pub lock_file: Option<String>,
    #[serde(default)]
    pub lock_sha256: Option<String>,
    /// Whether lifecycle scripts were allowed to run (`--allow-scripts`).
    #[serde(default)]
    pub scripts: bool,
    /// What the step made, relative to the extension folder (`node_modules`, `.venv`, the
    /// built program): never carried over to a new version as the user's data.
    #[serde(default)]
    pub outputs: Vec<String>,
    /// RFC 3339 time the step finished (`zot ext prepare` runs it again later than the
    /// install).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_at: Option<String>,
    /// The Go module built (its path in `go.mod`): the folder's own, or the one above it in
    /// its source that it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
}

impl Record {
    /// A record of `kind` made now, with no ref, commit or subfolder.
    pub(crate) fn new(name: &str, source: String, kind: Kind) -> Record {
        Record {
            name: name.to_string(),
            source,
            kind,
            git_ref: None,
            ref_kind: None,
            branch: None,
            commit: None,
            digest: None,
            platform: None,
            subdir: None,
            installed_at: now_rfc3339(),
            template: None,
            language: None,
            prepared: None,
        }
    }

    /// Whether `update` leaves this install alone unless given a new `--ref`.
    /// (An install from a registry follows its tag; one asked for by digest alone is pinned.)
    pub(crate) fn pinned(&self) -> bool {
        match self.kind {
            Kind::Oci => self.git_ref.is_none(),
            _ => matches!(self.ref_kind, Some(RefKind::Tag | RefKind::Commit)),
        }
    }

    /// What the install is pinned to at its source: the commit, or the manifest digest.
    pub(crate) fn pin(&self) -> Option<&str> {
        self.commit.as_deref().or(self.digest.as_deref())
    }

    /// What `update` does with it when a ref decides: `tracking` a branch, `pinned` to a tag
    /// or commit; `None` where no ref does (a folder, a link, `new`).
    pub(crate) fn follows(&self) -> Option<&'static str> {
        match (self.kind, self.ref_kind) {
            (Kind::Git, Some(RefKind::Branch)) => Some("tracking"),
            (Kind::Oci, _) if self.git_ref.is_some() => Some("tracking"),
            (Kind::Git, Some(_)) | (Kind::Oci, _) => Some("pinned"),
            _ => None,
        }
    }

    /// Whether `update` can fetch a new version of it: it has a source, and is not pinned
    /// unless a new `--ref` is given (`with_ref`).
    pub(crate) fn updatable(&self, with_ref: bool) -> bool {
        self.kind.has_source() && (!self.pinned() || with_ref)
    }

    /// The record's file name in `.ext-store/sources`.
    pub(crate) fn file_name(name: &str) -> String {
        format!("{name}.json")
    }

    /// The record of `name` in this scope; `None` when it was installed by hand. The file
    /// is read without following links and at most 1 MiB of it.
    /// While a change is being made, the journal's record counts as soon as its tree is in
    /// place, so a command reading without the lock never sees a tree without its record.
    /// (An entry counts only whole, an inline file list of an earlier version read too, as
    /// when the store settles it; a list beside the entry is not read.)
    pub(crate) fn load(dirs: &ScopeDirs, name: &str) -> Option<Record> {
        if let Some(intent) = journal::journalled::<Record, FileList>(dirs, name) {
            return Some(intent.record);
        }
        let bytes = read_state_file(dirs, "sources", &Self::file_name(name))?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Why the record file of `name` cannot be used although something is in its place
    /// (a link, a named pipe, a folder, a huge file, text that is not a record); `None` when
    /// it is missing or valid. Says what is wrong instead of "copied in by hand?".
    pub(crate) fn problem(dirs: &ScopeDirs, name: &str) -> Option<String> {
        let file = Self::file_name(name);
        let path = dirs.state().join("sources").join(&file);
        let why = match try_read_state_file(dirs, "sources", &file) {
            Ok(None) => return None,
            Ok(Some(bytes)) => match serde_json::from_slice::<Record>(&bytes) {
                Ok(_) => return None,
                Err(e) => format!("is not a valid install record ({e})"),
            },
            Err(e) => e.to_string(),
        };
        Some(format!(
            "the install record {} {why}",
            crate::output::printable(&path.display().to_string())
        ))
    }

    /// The record as its file holds it (written by [`crate::store::Store::save_record`]).
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("a record serializes");
        bytes.push(b'\n');
        bytes
    }
}

/// The current time in RFC 3339, seconds precision, UTC.
pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::paths::Scope;

    #[test]
    fn a_record_that_is_a_link_or_huge_is_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = ScopeDirs {
            scope: Scope::Global,
            base: tmp.path().to_path_buf(),
        };
        let sources = dirs.state().join("sources");
        std::fs::create_dir_all(&sources).unwrap();
        let record = Record::new("a", "/src".into(), Kind::Path);
        let outside = tmp.path().join("outside.json");
        std::fs::write(&outside, record.to_bytes()).unwrap();
        std::fs::write(sources.join("a.json"), record.to_bytes()).unwrap();
        assert_eq!(Record::load(&dirs, "a"), Some(record));
        std::os::unix::fs::symlink(&outside, sources.join("b.json")).unwrap();
        assert_eq!(Record::load(&dirs, "b"), None);
        std::os::unix::fs::symlink("/dev/zero", sources.join("c.json")).unwrap();
        assert_eq!(Record::load(&dirs, "c"), None);
    }
}
