//! The lock file `extensions.lock` beside the project file: for each extension, what was
//! installed (source, ref and subfolder as the project file gave them, the commit, and the
//! tree hash of the installed file list). Written atomically, entries sorted by name, keys
//! in a fixed order, so the file is stable under version control.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{ParseError, read_text, write_atomically};

/// The lock file's name, beside the project file.
pub(crate) const FILE: &str = "extensions.lock";

/// The only lock format written and read.
const VERSION: u32 = 1;

/// What was installed for one extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Entry {
    /// The source as the project file gives it, credentials redacted.
    pub source: String,
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    pub subdir: Option<String>,
    /// The commit installed; `null` for a local folder.
    pub commit: Option<String>,
    /// `sha256:…`, the tree hash of the installed file list (`zot ext info --json`'s `tree_hash`).
    pub tree: String,
}

/// A parsed lock file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lock {
    pub extensions: BTreeMap<String, Entry>,
}

/// The file's layout: `version` first.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    version: u32,
    extensions: BTreeMap<String, Entry>,
}

impl Lock {
    /// Reads the lock at `path`; `None` when there is none.
    pub(crate) fn load(path: &Path) -> anyhow::Result<Option<Lock>> {
        let Some(text) = read_text(path)? else {
            return Ok(None);
        };
        Ok(Some(Lock::parse(&text, path)?))
    }

    /// Parses a lock file; errors carry `path` and line:column.
    pub(crate) fn parse(text: &str, path: &Path) -> Result<Lock, ParseError> {
        let stored: Stored = serde_json::from_str(text).map_err(|e| {
            let message = e.to_string();
            let message = message.split(" at line ").next().unwrap_or(&message);
            ParseError {
                path: path.to_path_buf(),
                position: (e.line() > 0).then(|| (e.line(), e.column())),
                message: message.to_string(),
            }
        })?;
        if stored.version != VERSION {
            return Err(ParseError {
                path: path.to_path_buf(),
                position: None,
                message: format!(
                    "lock version {} is not {VERSION}; this zot ext reads version {VERSION} only",
                    stored.version
                ),
            });
        }
        Ok(Lock {
            extensions: stored.extensions,
        })
    }

    /// The file's text: 2-space indent, `version` first, entries sorted by name, keys in
    /// the order source, ref, subdir, commit, tree, and a trailing newline.
    pub(crate) fn to_text(&self) -> String {
        let stored = Stored {
            version: VERSION,
            extensions: self.extensions.clone(),
        };
        let mut text = serde_json::to_string_pretty(&stored).expect("a lock serializes");
        text.push('\n');
        text
    }

    /// Writes the lock atomically (temporary file in the same folder, flushed, renamed).
    pub(crate) fn save(&self, path: &Path) -> anyhow::Result<()> {
        write_atomically(path, self.to_text().as_bytes())
    }
}

impl super::Where {
    /// The lock file of this scope, beside its project file.
    pub(crate) fn lock_file(&self) -> std::path::PathBuf {
        self.dir.join(FILE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(commit: Option<&str>) -> Entry {
        Entry {
            source: "https://e.com/c.git".into(),
            git_ref: Some("v1".into()),
            subdir: None,
            commit: commit.map(str::to_string),
            tree: "sha256:00".into(),
        }
    }

    #[test]
    fn text_is_stable_and_round_trips() {
        let mut lock = Lock::default();
        lock.extensions.insert("zeta".into(), entry(None));
        lock.extensions.insert("alpha".into(), entry(Some("ab")));
        let text = lock.to_text();
        assert!(text.starts_with("{\n  \"version\": 1,\n  \"extensions\": {\n    \"alpha\": {\n      \"source\": \"https://e.com/c.git\",\n      \"ref\": \"v1\",\n      \"subdir\": null,\n      \"commit\": \"ab\",\n      \"tree\": \"sha256:00\"\n    },"), "{text}");
        assert!(text.ends_with("}\n"));
        assert_eq!(Lock::parse(&text, Path::new("l")).unwrap(), lock);
    }

    #[test]
    fn unknown_fields_and_other_versions_are_refused() {
        let err = Lock::parse(
            "{\"version\": 1, \"extensions\": {}, \"x\": 1}",
            Path::new("l"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("l:1:"), "{err}");
        assert!(err.contains("unknown field `x`"), "{err}");
        let err = Lock::parse("{\"version\": 2, \"extensions\": {}}", Path::new("l"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("lock version 2"), "{err}");
    }

    #[test]
    fn save_then_load() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(FILE);
        let mut lock = Lock::default();
        lock.extensions.insert("a".into(), entry(Some("c")));
        lock.save(&path).unwrap();
        assert_eq!(Lock::load(&path).unwrap(), Some(lock));
        assert_eq!(Lock::load(&tmp.path().join("none")).unwrap(), None);
    }
}
