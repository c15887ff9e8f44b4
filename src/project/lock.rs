//! The lock file `extensions.lock` beside the project file: for each extension, what was
//! installed (source, ref and subfolder as the project file gave them, the commit, the
//! tree hash of the installed file list, and what preparing ran: the step and the SHA-256
//! of the dependency lock file). Written atomically, entries sorted by name, keys in a
//! fixed order, so the file is stable under version control.

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
    /// The manifest digest (`sha256:…`) of an extension from an OCI registry; absent for
    /// other sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// `sha256:…`, the tree hash of the installed file list (`zot ext info --json`'s `tree_hash`).
    pub tree: String,
    /// What preparing ran; absent when nothing was prepared, or in a lock written before
    /// preparing existed (then nothing is claimed, and nothing checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepared: Option<Prepared>,
}

/// What preparing ran for one extension, as the lock keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Prepared {
    /// The step ([`locked_step`]: without the flags that only say where downloads come from).
    pub step: String,
    /// The dependency lock file (`package-lock.json`, `go.sum`, ...), if there is one.
    pub lock_file: Option<String>,
    /// Its SHA-256, 64 hex digits.
    pub lock_sha256: Option<String>,
}

impl Prepared {
    /// What an install record says preparing ran.
    pub(crate) fn of(record: &crate::store::record::Prepared) -> Prepared {
        Prepared {
            step: locked_step(&record.step),
            lock_file: record.lock_file.clone(),
            lock_sha256: record.lock_sha256.clone(),
        }
    }

    /// How preparing now (`now`, `None`: nothing ran) differs from what this records, in
    /// words; `None` when it does not.
    pub(crate) fn differs(&self, now: Option<&Prepared>) -> Option<String> {
        let Some(now) = now else {
            return Some(format!(
                "the lock says it was prepared with `{}`, but nothing was prepared (--no-prepare, \"prepare\": false, or no step found)",
                printable(&self.step)
            ));
        };
        if now.step != self.step {
            return Some(format!(
                "the lock says it was prepared with `{}`, not `{}`",
                printable(&self.step),
                printable(&now.step)
            ));
        }
        let shown = |v: &Option<String>| printable(v.as_deref().unwrap_or("none"));
        if now.lock_file != self.lock_file {
            return Some(format!(
                "the lock names the dependency lock file {}, the fetched copy has {}",
                shown(&self.lock_file),
                shown(&now.lock_file)
            ));
        }
        if now.lock_sha256 != self.lock_sha256 {
            return Some(format!(
                "{} has SHA-256 {}, the lock says {}",
                shown(&now.lock_file),
                shown(&now.lock_sha256),
                shown(&self.lock_sha256)
            ));
        }
        None
    }
}

/// Flags that say only where a tool gets what it installs (its local cache, no index), not
/// what it installs: left out of a locked step, so an `--offline` run matches the lock.
const WHERE_FROM: [&str; 2] = ["--offline", "--no-index"];

/// The step as the lock keeps it: the command without the [`WHERE_FROM`] flags.
pub(crate) fn locked_step(step: &str) -> String {
    step.split(' ')
        .filter(|word| !WHERE_FROM.contains(word))
        .collect::<Vec<_>>()
        .join(" ")
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
        let digest = entry
            .prepared
            .as_ref()
            .and_then(|p| p.lock_sha256.as_deref());
        if let Some(digest) = digest.filter(|d| !is_sha256(d)) {
            let message = format!(
                "\"prepared.lock_sha256\" of \"{}\" must be 64 hex digits, not \"{}\"; run `zot ext sync` to write the lock again",
                printable(name),
                printable(digest)
            );
            return Err(error_at(text, path, name, "prepared", message));
        }
    }
    Ok(())
}

/// A SHA-256 in hex: 64 hex digits.
fn is_sha256(value: &str) -> bool {
    value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit())
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
    value.strip_prefix("sha256:").is_some_and(is_sha256)
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
    /// the order source, ref, subdir, commit, tree, prepared (only when something was;
    /// `step`, `lock_file`, `lock_sha256`), and a trailing newline.
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
            digest: None,
            tree: TREE.into(),
            prepared: None,
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
    fn a_lock_without_prepared_reads_and_one_with_it_round_trips() {
        let old = format!(
            "{{\n  \"version\": 1,\n  \"extensions\": {{\n    \"a\": {{\n      \"source\": \"s\",\n      \"ref\": null,\n      \"subdir\": null,\n      \"commit\": null,\n      \"tree\": \"{TREE}\"\n    }}\n  }}\n}}\n"
        );
        let mut lock = Lock::parse(&old, Path::new("l")).unwrap();
        assert_eq!(lock.extensions["a"].prepared, None);
        assert_eq!(
            lock.to_text(),
            old,
            "unprepared entries are written as before"
        );
        let digest = "ab".repeat(32);
        lock.extensions.get_mut("a").unwrap().prepared = Some(Prepared {
            step: "npm ci --ignore-scripts".into(),
            lock_file: Some("package-lock.json".into()),
            lock_sha256: Some(digest.clone()),
        });
        let text = lock.to_text();
        assert!(
            text.contains(&format!("      \"tree\": \"{TREE}\",\n      \"prepared\": {{\n        \"step\": \"npm ci --ignore-scripts\",\n        \"lock_file\": \"package-lock.json\",\n        \"lock_sha256\": \"{digest}\"\n      }}\n")),
            "{text}"
        );
        assert_eq!(Lock::parse(&text, Path::new("l")).unwrap(), lock);
        let err = Lock::parse(&text.replace(&digest, "abc"), Path::new("l"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"prepared.lock_sha256\" of \"a\" must be 64 hex digits"),
            "{err}"
        );
    }

    #[test]
    fn a_step_run_offline_is_locked_as_one_run_online() {
        assert_eq!(
            locked_step("npm ci --ignore-scripts --omit=dev --no-audit --no-fund --offline"),
            "npm ci --ignore-scripts --omit=dev --no-audit --no-fund"
        );
        assert_eq!(
            locked_step(".venv/bin/python -m pip install --no-index -r requirements.txt"),
            ".venv/bin/python -m pip install -r requirements.txt"
        );
        let locked = Prepared {
            step: "npm ci".into(),
            lock_file: Some("package-lock.json".into()),
            lock_sha256: Some("1".repeat(64)),
        };
        assert_eq!(locked.differs(Some(&locked)), None);
        let other = Prepared {
            lock_sha256: Some("2".repeat(64)),
            ..locked.clone()
        };
        let why = locked.differs(Some(&other)).unwrap();
        assert!(
            why.starts_with("package-lock.json has SHA-256 2222"),
            "{why}"
        );
        assert!(
            locked
                .differs(None)
                .unwrap()
                .contains("nothing was prepared")
        );
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
