//! The lock file `extensions.lock` beside the project file: for each extension, what was
//! installed (source, ref and subfolder as the project file gave them, the commit, and the
//! tree hash of the installed file list). Written atomically, entries sorted by name, keys
//! in a fixed order, so the file is stable under version control.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use jsonc_parser::ast;
use jsonc_parser::common::Ranged;

use super::{Doc, ParseError, read_text, write_atomically};
use crate::output::printable;

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
    /// The commit installed; `null` for a local folder. 40 hex digits (64 in a SHA-256
    /// repository).
    pub commit: Option<String>,
    /// `sha256:…`, the tree hash of the installed file list (`zot ext info --json`'s `tree_hash`).
    pub tree: String,
}

/// Every `commit` is a full commit id and every `tree` a tree hash; the first that is not
/// is an error at its value's position.
fn check_ids(
    text: &str,
    path: &Path,
    extensions: &BTreeMap<String, Entry>,
) -> Result<(), ParseError> {
    for (name, entry) in extensions {
        if let Some(commit) = entry.commit.as_deref().filter(|c| !is_commit_id(c)) {
            let message = format!(
                "\"commit\" of \"{}\" must be a full commit id (40 hex digits, or 64 in a SHA-256 repository), not \"{}\"; run `zot ext sync` to write the lock again",
                printable(name),
                printable(commit)
            );
            return Err(error_at(text, path, name, "commit", message));
        }
        if !is_tree_hash(&entry.tree) {
            let message = format!(
                "\"tree\" of \"{}\" must be \"sha256:\" and 64 hex digits, not \"{}\"; run `zot ext sync` to write the lock again",
                printable(name),
                printable(&entry.tree)
            );
            return Err(error_at(text, path, name, "tree", message));
        }
    }
    Ok(())
}

/// `message` at the value of `extensions.<name>.<field>` (the last one given, as serde
/// keeps the last of repeated names).
fn error_at(text: &str, path: &Path, name: &str, field: &str, message: String) -> ParseError {
    let no_position = || ParseError {
        path: path.to_path_buf(),
        position: None,
        message: message.clone(),
    };
    let Ok(doc) = Doc::new(text, path) else {
        return no_position();
    };
    let value = doc
        .root()
        .ok()
        .and_then(|root| member(root, "extensions"))
        .and_then(|extensions| member(extensions, name))
        .and_then(|entry| member(entry, field));
    match value {
        Some(value) => doc.error(value.start(), message),
        None => no_position(),
    }
}

/// The value of the last property `key` of an object.
fn member<'b, 'a>(value: &'b ast::Value<'a>, key: &str) -> Option<&'b ast::Value<'a>> {
    let ast::Value::Object(object) = value else {
        return None;
    };
    object
        .properties
        .iter()
        .rev()
        .find(|p| p.name.as_str() == key)
        .map(|p| &p.value)
}

/// A full commit id: 40 hex digits (SHA-1) or 64 (SHA-256).
pub(crate) fn is_commit_id(id: &str) -> bool {
    matches!(id.len(), 40 | 64) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A tree hash as the file list writes it: `sha256:` and 64 hex digits.
pub(crate) fn is_tree_hash(value: &str) -> bool {
    value
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
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
        check_ids(text, path, &stored.extensions)?;
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

    const TREE: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    const COMMIT: &str = "abababababababababababababababababababab";

    fn entry(commit: Option<&str>) -> Entry {
        Entry {
            source: "https://e.com/c.git".into(),
            git_ref: Some("v1".into()),
            subdir: None,
            commit: commit.map(str::to_string),
            tree: TREE.into(),
        }
    }

    #[test]
    fn text_is_stable_and_round_trips() {
        let mut lock = Lock::default();
        lock.extensions.insert("zeta".into(), entry(None));
        lock.extensions.insert("alpha".into(), entry(Some(COMMIT)));
        let text = lock.to_text();
        assert!(text.starts_with(&format!("{{\n  \"version\": 1,\n  \"extensions\": {{\n    \"alpha\": {{\n      \"source\": \"https://e.com/c.git\",\n      \"ref\": \"v1\",\n      \"subdir\": null,\n      \"commit\": \"{COMMIT}\",\n      \"tree\": \"{TREE}\"\n    }},")), "{text}");
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
    fn commits_and_trees_that_are_not_ids_are_refused_at_their_position() {
        let lock = |commit: &str, tree: &str| {
            format!(
                "{{\n  \"version\": 1,\n  \"extensions\": {{\n    \"a\": {{\n      \"source\": \"s\",\n      \"ref\": null,\n      \"subdir\": null,\n      \"commit\": {commit},\n      \"tree\": \"{tree}\"\n    }}\n  }}\n}}\n"
            )
        };
        let err = Lock::parse(&lock("\"ééééé\"", TREE), Path::new("l"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("l:8:17: "), "{err}");
        assert!(
            err.contains("\"commit\" of \"a\" must be a full commit id"),
            "{err}"
        );
        let err = Lock::parse(&lock(&format!("\"{COMMIT}\""), "sha256:ab"), Path::new("l"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("l:9:15: "), "{err}");
        assert!(
            err.contains("\"tree\" of \"a\" must be \"sha256:\" and 64 hex digits"),
            "{err}"
        );
        let sha256 = format!("\"{}\"", "0".repeat(64));
        assert!(Lock::parse(&lock(&sha256, TREE), Path::new("l")).is_ok());
        assert!(Lock::parse(&lock("null", TREE), Path::new("l")).is_ok());
        let err = Lock::parse(&lock("\"\\u001b[31m\"", TREE), Path::new("l"))
            .unwrap_err()
            .to_string();
        assert!(!err.contains('\u{1b}'), "{err}");
    }

    #[test]
    fn save_then_load() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(FILE);
        let mut lock = Lock::default();
        lock.extensions.insert("a".into(), entry(Some(COMMIT)));
        lock.save(&path).unwrap();
        assert_eq!(Lock::load(&path).unwrap(), Some(lock));
        assert_eq!(Lock::load(&tmp.path().join("none")).unwrap(), None);
    }
}
