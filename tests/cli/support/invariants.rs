//! The store invariants the torture suites check after every kill, race round or injected
//! failure: every entry in both extension roots is exactly one of the versions it may be (a
//! byte-identical tree: paths, types, modes, link targets, contents), every manifest parses,
//! nothing temporary is visible in a scanned folder, install records match the trees in
//! place, the lock is free and the state folder's scratch areas are empty.
//!
//! A suite describes what may be where with [`Expect`], runs [`Checker`] and gets a list of
//! [`Violation`]s, each tagged with the [`Rule`] it breaks so known failures can be told apart.
//! [`Torture`] holds what the suites share besides: the seed, the CI/long mode switch and a
//! small seeded random generator.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::Env;

/// One node of a tree, compared byte for byte.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Node {
    Dir {
        mode: u32,
    },
    File {
        mode: u32,
        contents: Vec<u8>,
    },
    Link {
        target: PathBuf,
    },
    /// A FIFO, socket or device: never part of a valid extension.
    Special {
        mode: u32,
    },
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Dir { mode } => write!(f, "dir {mode:o}"),
            Node::File { mode, contents } => write!(
                f,
                "file {mode:o} {} bytes {:?}",
                contents.len(),
                String::from_utf8_lossy(&contents[..contents.len().min(60)])
            ),
            Node::Link { target } => write!(f, "link -> {}", target.display()),
            Node::Special { mode } => write!(f, "special {mode:o}"),
        }
    }
}

/// A whole tree by relative path; the root itself is `""`.
pub(crate) type Tree = BTreeMap<PathBuf, Node>;

/// Reads the tree at `root` without following any link (a link at `root` is one node).
pub(crate) fn capture(root: &Path) -> Tree {
    let mut tree = Tree::new();
    for entry in walkdir::WalkDir::new(root).follow_links(false) {
        let Ok(entry) = entry else { continue };
        let rel = entry.path().strip_prefix(root).unwrap().to_path_buf();
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let mode = meta.permissions().mode() & 0o7777;
        let kind = meta.file_type();
        let node = if kind.is_symlink() {
            Node::Link {
                target: fs::read_link(entry.path()).unwrap_or_default(),
            }
        } else if kind.is_dir() {
            Node::Dir { mode }
        } else if kind.is_file() {
            Node::File {
                mode,
                contents: fs::read(entry.path()).unwrap_or_default(),
            }
        } else {
            Node::Special { mode }
        };
        tree.insert(rel, node);
    }
    tree
}

/// Both scope bases (`$ZOT_HOME` and `<project>/.zot`) as one tree, keyed `home/...` and
/// `project/...`, for "the store is byte-identical" assertions (compare with [`diff`]).
pub(crate) fn capture_store(env: &Env) -> Tree {
    let mut all = Tree::new();
    for (key, scope) in [("home", Scope::Global), ("project", Scope::Project)] {
        for (path, node) in capture(&scope.base(env)) {
            all.insert(Path::new(key).join(path), node);
        }
    }
    all
}

/// The first difference between two trees, for messages.
pub(crate) fn diff(want: &Tree, got: &Tree) -> String {
    for (path, node) in want {
        match got.get(path) {
            None => return format!("{} is missing", path.display()),
            Some(other) if other != node => {
                return format!("{} differs: want {node:?}, got {other:?}", path.display());
            }
            _ => {}
        }
    }
    match got.keys().find(|p| !want.contains_key(*p)) {
        Some(extra) => format!("{} is extra", extra.display()),
        None => "identical".into(),
    }
}

/// The two scopes, as the checker names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Scope {
    Project,
    Global,
}

impl Scope {
    pub(crate) const ALL: [Scope; 2] = [Scope::Project, Scope::Global];

    /// `$ZOT_HOME` or `<project>/.zot`.
    pub(crate) fn base(self, env: &Env) -> PathBuf {
        match self {
            Scope::Project => env.project.join(".zot"),
            Scope::Global => env.home.clone(),
        }
    }

    pub(crate) fn root(self, env: &Env) -> PathBuf {
        self.base(env).join("extensions")
    }

    pub(crate) fn state(self, env: &Env) -> PathBuf {
        self.base(env).join(".ext-store")
    }

    /// The flag that picks this scope for remove, enable, disable and update.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            Scope::Project => "--project",
            Scope::Global => "--global",
        }
    }

    pub(crate) fn other(self) -> Scope {
        match self {
            Scope::Project => Scope::Global,
            Scope::Global => Scope::Project,
        }
    }
}

/// What the install record of a version names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RecordId {
    pub source: String,
    pub commit: Option<String>,
}

/// One version an extension may be in: its exact tree and what its record names (`None` for a
/// tree zot did not install, which has no record).
#[derive(Clone, Debug)]
pub(crate) struct Version {
    pub label: String,
    pub tree: Tree,
    pub record: Option<RecordId>,
}

/// What one folder name in one root may hold.
#[derive(Clone, Debug, Default)]
pub(crate) struct Allowed {
    pub versions: Vec<Version>,
    pub absent_ok: bool,
}

/// What may be in both roots; a name not listed must not exist.
#[derive(Clone, Debug, Default)]
pub(crate) struct Expect {
    pub entries: BTreeMap<(Scope, String), Allowed>,
}

impl Expect {
    /// Allows `version` for `name` in `scope` (besides what is allowed already).
    pub(crate) fn allow(&mut self, scope: Scope, name: &str, version: &Version) {
        self.entries
            .entry((scope, name.to_string()))
            .or_default()
            .versions
            .push(version.clone());
    }

    /// Allows `name` to be absent from `scope`.
    pub(crate) fn allow_absent(&mut self, scope: Scope, name: &str) {
        self.entries
            .entry((scope, name.to_string()))
            .or_default()
            .absent_ok = true;
    }
}

/// The invariant a violation breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Rule {
    /// An entry in a root is not one of the versions it may be, is missing, or should not exist.
    TreeIsOldOrNew,
    /// An installed `extension.json` does not parse or names another extension.
    ManifestParses,
    /// A temporary manifest (`.extension.json.*`) is inside an extension folder.
    NoTempManifest,
    /// Something hidden that no extension may be (`.tmp*`, ...) is in an extensions root.
    NoTempInRoot,
    /// A tree zot installed has no install record.
    RecordMissing,
    /// The install record names another source or commit than the tree in place.
    RecordStale,
    /// An install record exists for a name that is not installed.
    RecordOrphan,
    /// The file list (`.ext-store/files/<name>.json`) of a tree zot installed is missing, or
    /// lists an entry the tree does not hold as listed (another version's list).
    FileListMatches,
    /// A temporary record file is left in `.ext-store/sources`.
    NoTempRecord,
    /// The store lock is held with nobody running.
    LockFree,
    /// `.ext-store/staging`, `trash` or `pending` is not empty after a command finished.
    StateEmptied,
    /// The command after a kill failed.
    NextCommandSucceeds,
    /// The command ran past the named crash point it was told to die at.
    PointReached,
}

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Violation {
    pub rule: Rule,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{:?}] {}", self.rule, self.detail)
    }
}

/// What the roots held: for each entry, the label of the version it matched (`None` when it
/// matched none).
pub(crate) type Found = BTreeMap<(Scope, String), Option<String>>;

/// Checks one world against an [`Expect`].
pub(crate) struct Checker<'a> {
    pub env: &'a Env,
    pub expect: &'a Expect,
}

impl Checker<'_> {
    /// Everything that must hold at any instant, even right after a kill: trees, manifests,
    /// nothing temporary in a root, a free lock.
    pub(crate) fn at_any_instant(&self) -> (Vec<Violation>, Found) {
        let mut out = Vec::new();
        let found = self.roots(&mut out);
        for scope in Scope::ALL {
            lock_free(self.env, scope, &mut out);
        }
        (out, found)
    }

    /// Everything that must hold once a command has run to completion: the above, records
    /// that match the trees, and empty staging, trash and pending folders.
    pub(crate) fn settled(&self) -> Vec<Violation> {
        let (mut out, found) = self.at_any_instant();
        self.records(&found, &mut out);
        for scope in Scope::ALL {
            state_emptied(self.env, scope, &mut out);
        }
        out
    }

    /// Walks both roots: every entry must be allowed and complete.
    fn roots(&self, out: &mut Vec<Violation>) -> Found {
        let mut found = Found::new();
        for scope in Scope::ALL {
            let root = scope.root(self.env);
            for name in entry_names(&root) {
                let expected = self.expect.entries.contains_key(&(scope, name.clone()));
                if !expected && name.starts_with('.') {
                    out.push(Violation {
                        rule: Rule::NoTempInRoot,
                        detail: format!("{} is in the root", root.join(&name).display()),
                    });
                    continue;
                }
                let matched = self.entry(scope, &root.join(&name), &name, out);
                found.insert((scope, name), matched);
            }
        }
        for ((scope, name), allowed) in &self.expect.entries {
            if !allowed.absent_ok && !found.contains_key(&(*scope, name.clone())) {
                out.push(Violation {
                    rule: Rule::TreeIsOldOrNew,
                    detail: format!("{name} ({scope:?}) is missing"),
                });
            }
        }
        found
    }

    /// Checks one entry of a root; returns the label of the version it is.
    fn entry(
        &self,
        scope: Scope,
        path: &Path,
        name: &str,
        out: &mut Vec<Violation>,
    ) -> Option<String> {
        let mut tree = capture(path);
        let temps: Vec<PathBuf> = tree
            .keys()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(".extension.json."))
            })
            .cloned()
            .collect();
        for temp in &temps {
            tree.remove(temp);
            out.push(Violation {
                rule: Rule::NoTempManifest,
                detail: format!("{} is left", path.join(temp).display()),
            });
        }
        manifest_parses(path, name, out);
        let Some(allowed) = self.expect.entries.get(&(scope, name.to_string())) else {
            out.push(Violation {
                rule: Rule::TreeIsOldOrNew,
                detail: format!("{} should not exist", path.display()),
            });
            return None;
        };
        if let Some(v) = allowed.versions.iter().find(|v| v.tree == tree) {
            return Some(v.label.clone());
        }
        let diffs: Vec<String> = allowed
            .versions
            .iter()
            .map(|v| format!("vs {}: {}", v.label, diff(&v.tree, &tree)))
            .collect();
        out.push(Violation {
            rule: Rule::TreeIsOldOrNew,
            detail: format!(
                "{} is none of the allowed versions ({})",
                path.display(),
                diffs.join("; ")
            ),
        });
        None
    }

    /// Records in both scopes against what the roots hold.
    fn records(&self, found: &Found, out: &mut Vec<Violation>) {
        for scope in Scope::ALL {
            let dir = scope.state(self.env).join("sources");
            for file in entry_names(&dir) {
                let Some(name) = file.strip_suffix(".json").filter(|n| !n.starts_with('.')) else {
                    out.push(Violation {
                        rule: Rule::NoTempRecord,
                        detail: format!("{} is left", dir.join(&file).display()),
                    });
                    continue;
                };
                if !found.contains_key(&(scope, name.to_string())) {
                    out.push(Violation {
                        rule: Rule::RecordOrphan,
                        detail: format!(
                            "{} exists but {name} is not installed",
                            dir.join(&file).display()
                        ),
                    });
                }
            }
            for ((s, name), label) in found {
                if *s == scope {
                    self.record_of(scope, name, label.as_deref(), out);
                }
            }
        }
    }

    /// The record of one installed entry must name the version in place.
    fn record_of(&self, scope: Scope, name: &str, label: Option<&str>, out: &mut Vec<Violation>) {
        let Some(allowed) = self.expect.entries.get(&(scope, name.to_string())) else {
            return;
        };
        let Some(version) = allowed
            .versions
            .iter()
            .find(|v| Some(v.label.as_str()) == label)
        else {
            return; // already reported as a wrong tree
        };
        let path = scope
            .state(self.env)
            .join("sources")
            .join(format!("{name}.json"));
        let Some(want) = &version.record else {
            return;
        };
        let Some(got) = read_record(&path) else {
            out.push(Violation {
                rule: Rule::RecordMissing,
                detail: format!(
                    "{name} ({scope:?}) is {} but {} is missing or unreadable",
                    version.label,
                    path.display()
                ),
            });
            return;
        };
        if &got != want {
            out.push(Violation {
                rule: Rule::RecordStale,
                detail: format!(
                    "{name} ({scope:?}) is {} ({want:?}) but its record names {got:?}",
                    version.label
                ),
            });
        }
        if let Err(detail) = file_list_matches(&scope.state(self.env), &scope.root(self.env), name)
        {
            out.push(Violation {
                rule: Rule::FileListMatches,
                detail: format!("{name} ({scope:?}) is {}: {detail}", version.label),
            });
        }
    }
}

/// Every entry of `name`'s file list is in its tree as listed (files the extension or the
/// user added are not listed; `extension.json` may differ by `enable`/`disable`).
pub(crate) fn file_list_matches(state: &Path, root: &Path, name: &str) -> Result<(), String> {
    use zot_ext::testing::{FileList, Standing};
    let path = state.join("files").join(format!("{name}.json"));
    let bytes = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let list = FileList::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let classified = list.classify(&root.join(name)).map_err(|e| e.to_string())?;
    let wrong: Vec<String> = classified
        .iter()
        .filter(|c| matches!(c.standing, Standing::Edited | Standing::Missing))
        .filter(|c| c.path != b"extension.json")
        .map(|c| format!("{} {:?}", String::from_utf8_lossy(&c.path), c.standing))
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "its file list does not match: {}",
            wrong.join(", ")
        ))
    }
}

/// The source and commit an install record names.
pub(crate) fn read_record(path: &Path) -> Option<RecordId> {
    let value: serde_json::Value = serde_json::from_str(&fs::read_to_string(path).ok()?).ok()?;
    Some(RecordId {
        source: value.get("source")?.as_str()?.to_string(),
        commit: value
            .get("commit")
            .and_then(|c| c.as_str())
            .map(str::to_string),
    })
}

/// The manifest of an installed entry parses as a JSON object naming the folder.
fn manifest_parses(path: &Path, name: &str, out: &mut Vec<Violation>) {
    let file = path.join("extension.json");
    let text = match fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) => {
            out.push(Violation {
                rule: Rule::ManifestParses,
                detail: format!("cannot read {}: {e}", file.display()),
            });
            return;
        }
    };
    let named = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_string));
    if named.as_deref() != Some(name) {
        out.push(Violation {
            rule: Rule::ManifestParses,
            detail: format!(
                "{} does not parse or does not name {name}: {text:?}",
                file.display()
            ),
        });
    }
}

/// The names in a folder, sorted; none when it does not exist.
pub(crate) fn entry_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The scope's lock can be taken at once.
pub(crate) fn lock_free(env: &Env, scope: Scope, out: &mut Vec<Violation>) {
    let path = scope.state(env).join("lock");
    let Ok(file) = File::options().write(true).open(&path) else {
        return; // no lock file: nothing holds it
    };
    if file.try_lock().is_err() {
        out.push(Violation {
            rule: Rule::LockFree,
            detail: format!("{} is held", path.display()),
        });
    }
}

/// The scope's staging, trash and pending folders are empty.
pub(crate) fn state_emptied(env: &Env, scope: Scope, out: &mut Vec<Violation>) {
    for sub in ["staging", "trash", "pending"] {
        let dir = scope.state(env).join(sub);
        let left = entry_names(&dir);
        if !left.is_empty() {
            out.push(Violation {
                rule: Rule::StateEmptied,
                detail: format!("{} still holds {left:?}", dir.display()),
            });
        }
    }
}

/// Splits violations into those of rules listed in `known` and the rest.
pub(crate) fn split_known(
    violations: Vec<Violation>,
    known: &[Rule],
) -> (Vec<Violation>, Vec<Violation>) {
    violations
        .into_iter()
        .partition(|v| !known.contains(&v.rule))
}

/// The torture suites' run settings: `ZOT_TORTURE=long` for the long mode, and
/// `ZOT_TORTURE_SEED=<n>` to replay a run (the seed is printed on every failure).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Torture {
    pub long: bool,
    pub seed: u64,
}

impl Torture {
    pub(crate) fn from_env() -> Torture {
        let long = std::env::var("ZOT_TORTURE").is_ok_and(|v| v == "long");
        let seed = std::env::var("ZOT_TORTURE_SEED")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
        Torture { long, seed }
    }

    /// How to replay this run of `test`.
    pub(crate) fn replay(&self, test: &str) -> String {
        let long = if self.long { "ZOT_TORTURE=long " } else { "" };
        format!(
            "seed {}; replay with: {long}ZOT_TORTURE_SEED={} cargo test --test cli {test} -- --exact",
            self.seed, self.seed
        )
    }

    /// A generator for one test, derived from the seed and the test's name.
    pub(crate) fn rng(&self, test: &str) -> Rng {
        let salt = test.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        Rng(self.seed ^ salt)
    }
}

/// `SplitMix64`: small, seeded and good enough to pick commands and delays.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A number in `[0, 1)`.
    pub(crate) fn fraction(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}
