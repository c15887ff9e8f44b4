//! Where extensions live: `ZOT_HOME`, the two scopes and their roots, log files.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// The operating-system family, which decides the default `ZOT_HOME`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Os {
    MacOs,
    /// Linux and the other Unix systems.
    Other,
}

impl Os {
    pub(crate) fn current() -> Self {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else {
            Os::Other
        }
    }
}

/// The environment values that decide `ZOT_HOME`, captured so rules can be tested.
#[derive(Debug, Clone, Default)]
pub(crate) struct HomeEnv {
    pub zot_home: Option<OsString>,
    pub xdg_state_home: Option<OsString>,
    pub home: Option<PathBuf>,
}

impl HomeEnv {
    /// Reads the process environment; the home directory comes from `directories`.
    pub(crate) fn from_process() -> Self {
        HomeEnv {
            zot_home: std::env::var_os("ZOT_HOME"),
            xdg_state_home: std::env::var_os("XDG_STATE_HOME"),
            home: directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()),
        }
    }
}

fn non_empty(value: Option<&OsStr>) -> Option<PathBuf> {
    value.filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// Resolves `ZOT_HOME`: the variable itself, else the platform's state folder plus `zot`.
pub(crate) fn zot_home(env: &HomeEnv, os: Os) -> Result<PathBuf> {
    if let Some(dir) = non_empty(env.zot_home.as_deref()) {
        return Ok(dir);
    }
    let home = env.home.as_deref();
    let dir = match os {
        Os::MacOs => home.map(|h| h.join("Library/Application Support/zot")),
        Os::Other => non_empty(env.xdg_state_home.as_deref())
            // The XDG spec says relative values are invalid and must be ignored.
            .filter(|d| d.is_absolute())
            .map(|d| d.join("zot"))
            .or_else(|| home.map(|h| h.join(".local/state/zot"))),
    };
    match dir {
        Some(dir) => Ok(dir),
        None => {
            bail!("cannot find a home directory for zot; set ZOT_HOME to the folder zot should use")
        }
    }
}

/// One of the two places extensions are installed.
/// Also the value of `--scope` on the command line (variant docs are its help text).
#[allow(clippy::doc_markdown)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// ./.zot/extensions/, which wins on a name clash
    Project,
    /// $ZOT_HOME/extensions/
    // `--scope`'s help text, where backticks would print as they are.
    #[allow(clippy::doc_markdown)]
    Global,
}

impl Scope {
    /// Both scopes in precedence order.
    pub const ALL: [Scope; 2] = [Scope::Project, Scope::Global];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::Global => "global",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The folders of one scope: the scanned extensions root and the store's own state beside it.
#[derive(Debug, Clone)]
pub struct ScopeDirs {
    pub scope: Scope,
    /// `$ZOT_HOME` or `./.zot`.
    pub base: PathBuf,
}

impl ScopeDirs {
    /// The folder the host scans: every subfolder is an extension.
    pub fn extensions(&self) -> PathBuf {
        self.base.join("extensions")
    }

    /// State the host's scan never sees: lock, staging, trash, install records and the
    /// journal. Read and written only through [`crate::store`], which never follows a link in it.
    pub fn state(&self) -> PathBuf {
        self.base.join(".ext-store")
    }

    pub fn extension(&self, name: &str) -> PathBuf {
        self.extensions().join(name)
    }
}

/// Every location `zot ext` reads or writes, resolved once per run.
#[derive(Debug, Clone)]
pub struct Layout {
    pub zot_home: PathBuf,
    pub project: ScopeDirs,
    pub global: ScopeDirs,
}

impl Layout {
    /// A relative `zot_home` is taken from `cwd`, so every path zot ext prints or records is
    /// absolute.
    pub fn new(zot_home: PathBuf, cwd: &Path) -> Self {
        let zot_home = cwd.join(zot_home);
        Layout {
            project: ScopeDirs {
                scope: Scope::Project,
                base: cwd.join(".zot"),
            },
            global: ScopeDirs {
                scope: Scope::Global,
                base: zot_home.clone(),
            },
            zot_home,
        }
    }

    /// This layout with the project scope of the project whose root is `root` (a folder
    /// above the working one), for the commands that work on the project above.
    #[must_use]
    pub fn with_project_root(&self, root: &Path) -> Self {
        Layout {
            project: ScopeDirs {
                scope: Scope::Project,
                base: root.join(".zot"),
            },
            ..self.clone()
        }
    }

    pub fn from_process() -> Result<Self> {
        let home = zot_home(&HomeEnv::from_process(), Os::current())?;
        let cwd = std::env::current_dir()
            .map_err(|e| anyhow::anyhow!("cannot read the current directory: {e}"))?;
        Ok(Layout::new(home, &cwd))
    }

    pub fn scope(&self, scope: Scope) -> &ScopeDirs {
        match scope {
            Scope::Project => &self.project,
            Scope::Global => &self.global,
        }
    }

    /// The folder of the host's logs.
    pub fn logs(&self) -> PathBuf {
        self.zot_home.join("logs")
    }

    /// Where the host appends an extension's stderr.
    pub fn log_file(&self, name: &str) -> PathBuf {
        self.logs().join(format!("ext-{name}.log"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HomeEnv {
        let get = |key: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| OsString::from(v))
        };
        HomeEnv {
            zot_home: get("ZOT_HOME"),
            xdg_state_home: get("XDG_STATE_HOME"),
            home: get("HOME").map(PathBuf::from),
        }
    }

    #[test]
    fn zot_home_variable_wins_everywhere() {
        let e = env(&[("ZOT_HOME", "/z"), ("HOME", "/h"), ("XDG_STATE_HOME", "/s")]);
        for os in [Os::MacOs, Os::Other] {
            assert_eq!(zot_home(&e, os).unwrap(), PathBuf::from("/z"));
        }
    }

    #[test]
    fn empty_zot_home_is_ignored() {
        let e = env(&[("ZOT_HOME", ""), ("HOME", "/h")]);
        assert_eq!(
            zot_home(&e, Os::Other).unwrap(),
            PathBuf::from("/h/.local/state/zot")
        );
    }

    #[test]
    fn macos_uses_application_support() {
        let e = env(&[("HOME", "/Users/pat"), ("XDG_STATE_HOME", "/s")]);
        assert_eq!(
            zot_home(&e, Os::MacOs).unwrap(),
            PathBuf::from("/Users/pat/Library/Application Support/zot")
        );
    }

    #[test]
    fn linux_prefers_xdg_state_home() {
        let e = env(&[("XDG_STATE_HOME", "/state"), ("HOME", "/h")]);
        assert_eq!(
            zot_home(&e, Os::Other).unwrap(),
            PathBuf::from("/state/zot")
        );
    }

    #[test]
    fn linux_ignores_relative_xdg_state_home() {
        let e = env(&[("XDG_STATE_HOME", "rel"), ("HOME", "/h")]);
        assert_eq!(
            zot_home(&e, Os::Other).unwrap(),
            PathBuf::from("/h/.local/state/zot")
        );
    }

    #[test]
    fn linux_falls_back_to_local_state() {
        let e = env(&[("HOME", "/h")]);
        assert_eq!(
            zot_home(&e, Os::Other).unwrap(),
            PathBuf::from("/h/.local/state/zot")
        );
    }

    #[test]
    fn no_home_at_all_is_an_error() {
        let err = zot_home(&env(&[]), Os::Other).unwrap_err().to_string();
        assert!(err.contains("set ZOT_HOME"), "{err}");
        assert!(zot_home(&env(&[]), Os::MacOs).is_err());
    }

    #[test]
    fn relative_zot_home_is_made_absolute() {
        let l = Layout::new(PathBuf::from("rel/home"), Path::new("/p"));
        assert_eq!(
            l.global.extension("a"),
            PathBuf::from("/p/rel/home/extensions/a")
        );
    }

    #[test]
    fn layout_places_scopes_and_logs() {
        let l = Layout::new(PathBuf::from("/z"), Path::new("/p"));
        assert_eq!(
            l.project.extension("a"),
            PathBuf::from("/p/.zot/extensions/a")
        );
        assert_eq!(l.global.extension("a"), PathBuf::from("/z/extensions/a"));
        assert_eq!(l.global.state(), PathBuf::from("/z/.ext-store"));
        assert_eq!(l.log_file("a"), PathBuf::from("/z/logs/ext-a.log"));
    }
}
