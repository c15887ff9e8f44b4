//! A step and a plan of steps. Each step is in one of two phases: *fetching* (downloading
//! what the lock names: `npm ci --ignore-scripts`, `go mod download`, pip installing
//! wheels, `cargo fetch`), which runs the user's own tools with their network and
//! credentials and no code from the extension or its dependencies; and *building* (a
//! compiler fed the extension's files, build scripts, proc-macros, cgo, lifecycle scripts
//! when allowed), which runs sealed ([`crate::seal`]).

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};

use crate::output::printable;

/// Which of the two phases a step belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Runs no code from the extension or its dependencies; may use the network (unless
    /// `--offline`) and the user's credentials.
    Fetch,
    /// Runs code from the extension or its dependencies: sealed.
    Build,
}

/// How one step's program is found.
#[derive(Debug, Clone)]
pub(crate) enum Program {
    /// A tool outside the extension, by its absolute path.
    Tool(PathBuf),
    /// A program inside the staged folder that zot made there (the venv's python).
    InTree(&'static str),
}

/// One word of a step's command line.
#[derive(Debug, Clone)]
pub(crate) enum Word {
    Text(String),
    /// A path in the staged folder (relative to it): passed absolute, shown as written.
    InTree(String),
}

/// The folder a step runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    /// The staged extension folder.
    Tree,
    /// The scratch folder beside it: for a tool that reads configuration from its working
    /// folder and every folder above (cargo's `.cargo/config.toml`), which the extension's
    /// own must not be.
    Outside,
    /// The root of the plan's [`Workspace`], the staged folder in its place in it.
    Workspace,
}

/// The module a staged Go folder belongs to, above it in its source: the build runs at the
/// module's root with the staged folder put back in its place for the time of the steps.
#[derive(Debug, Clone)]
pub(crate) struct Workspace {
    /// The module's root in the source (a checkout in staging, or the user's folder).
    pub from: PathBuf,
    /// Whether `from` is the user's, so it is copied into the scratch folder first.
    pub copy: bool,
    /// The extension folder's path in the module.
    pub rel: PathBuf,
}

/// One command run for the staged folder.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    /// The tool as the user knows it (`go`, `npm`, `.venv/bin/python`).
    pub name: &'static str,
    pub program: Program,
    pub args: Vec<Word>,
    pub env: Vec<(&'static str, OsString)>,
    pub phase: Phase,
    pub dir: Dir,
    /// Folders outside the system a sealed step reads (the toolchain, zot's caches).
    pub reads: Vec<PathBuf>,
    /// Folders outside the staged copy a sealed step writes (zot's build caches).
    pub writes: Vec<PathBuf>,
    /// Folders put first on a sealed step's PATH (the Rust toolchain's `bin`).
    pub path_first: Vec<PathBuf>,
}

impl Step {
    /// A fetch step of the tool `program`, run in the staged folder.
    pub(crate) fn tool(name: &'static str, program: PathBuf, args: &[&str]) -> Step {
        Step {
            name,
            program: Program::Tool(program),
            args: args.iter().map(|a| Word::Text((*a).to_string())).collect(),
            env: Vec::new(),
            phase: Phase::Fetch,
            dir: Dir::Tree,
            reads: Vec::new(),
            writes: Vec::new(),
            path_first: Vec::new(),
        }
    }

    /// This step in the build phase.
    pub(crate) fn building(self) -> Step {
        Step {
            phase: Phase::Build,
            ..self
        }
    }

    pub(crate) fn arg(mut self, word: &str) -> Step {
        self.args.push(Word::Text(word.to_string()));
        self
    }

    pub(crate) fn arg_in_tree(mut self, path: &str) -> Step {
        self.args.push(Word::InTree(path.to_string()));
        self
    }

    pub(crate) fn env(mut self, key: &'static str, value: impl Into<OsString>) -> Step {
        self.env.retain(|(k, _)| *k != key);
        self.env.push((key, value.into()));
        self
    }

    /// The command as a user would type it in the extension folder.
    pub(crate) fn shown(&self) -> String {
        std::iter::once(self.name.to_string())
            .chain(self.args.iter().map(|word| match word {
                Word::Text(text) | Word::InTree(text) => printable(text),
            }))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The arguments as passed, with paths in the staged folder `tree` made absolute.
    pub(crate) fn args_for(&self, tree: &Path) -> Vec<OsString> {
        self.args
            .iter()
            .map(|word| match word {
                Word::Text(text) => OsString::from(text),
                Word::InTree(path) => tree.join(path).into_os_string(),
            })
            .collect()
    }
}

/// The steps a staged folder needs, and a file to copy into it once they ran.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub steps: Vec<Step>,
    /// A built program: from this absolute path to this path in the tree.
    pub place: Option<(PathBuf, PathBuf)>,
    /// What the steps make, relative to the folder.
    pub outputs: Vec<String>,
    /// Whether lifecycle scripts (or cgo, or build backends) run.
    pub scripts: bool,
    /// What would run unsealed where there is no seal, for the refusal that says so.
    pub builds: Option<String>,
    /// The module above the folder the steps run in, when the folder has none of its own.
    pub workspace: Option<Workspace>,
    /// The module built (Go's module path), for the install record.
    pub module: Option<String>,
}

impl Plan {
    pub(crate) fn one(step: Step, output: Option<&str>) -> Plan {
        Plan::of(vec![step], output)
    }

    pub(crate) fn of(steps: Vec<Step>, output: Option<&str>) -> Plan {
        Plan {
            steps,
            place: None,
            outputs: output.into_iter().map(str::to_string).collect(),
            scripts: false,
            builds: None,
            workspace: None,
            module: None,
        }
    }

    /// The tool the last step runs (`go`, `npm`, `uv`, `cargo`; `python3` for a venv).
    pub(crate) fn tool(&self) -> &'static str {
        match self.steps.first().map(|s| s.name) {
            Some("python3") => "python3",
            _ => self.steps.last().map_or("", |s| s.name),
        }
    }

    /// Whether a step runs code from the extension or its dependencies.
    pub(crate) fn builds(&self) -> bool {
        self.steps.iter().any(|s| s.phase == Phase::Build)
    }

    /// Copies the built program into place, beneath the tree only: a folder on its way
    /// that is not a folder (a link the step made) is refused, and whatever is at the place
    /// itself is replaced, not written through.
    pub(crate) fn finish(&self, tree: &Path) -> Result<()> {
        let Some((built, to)) = &self.place else {
            return Ok(());
        };
        let mut folder = tree.to_path_buf();
        for part in to.parent().into_iter().flat_map(Path::components) {
            folder.push(part);
            match fs::symlink_metadata(&folder) {
                Ok(meta) if meta.is_dir() => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => fs::create_dir(&folder)?,
                _ => {
                    return Err(anyhow!(
                        "cannot place the built program at {}: {} is not a folder",
                        printable(&to.display().to_string()),
                        printable(
                            &folder
                                .strip_prefix(tree)
                                .unwrap_or(&folder)
                                .display()
                                .to_string()
                        )
                    ));
                }
            }
        }
        let dest = tree.join(to);
        let _ = fs::remove_file(&dest);
        fs::copy(built, &dest).map(|_| ()).map_err(|e| {
            anyhow!(
                "cargo build made no program {} to place at {}: {e}; name the binary target after \"exec\"",
                printable(&built.file_name().unwrap_or_default().to_string_lossy()),
                printable(&to.display().to_string())
            )
        })
    }
}
