//! What the command line or a project-file entry asks of preparing: on or off, scripts,
//! offline, the seal, the time limit, where the log and zot's build caches go, and who is
//! told when a step starts and ends.

use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::catalog::paths::ScopeDirs;
use crate::source::oci::platform::Platform;

/// How long a step may run by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// The folder of zot's build caches in the global state folder.
pub(crate) const BUILD_CACHE: &str = "build-cache";

/// What the command line (or a project-file entry) asked for.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// `--no-prepare` turns this off: the tree is placed as fetched.
    pub enabled: bool,
    /// `--allow-scripts`: lifecycle scripts, cgo and build backends run (sealed).
    pub allow_scripts: bool,
    /// `--offline`: every tool is told to use its local cache only, and fetching runs
    /// with the network cut.
    pub offline: bool,
    /// `--no-sandbox`: build steps run without the seal.
    pub no_sandbox: bool,
    /// `--require-sandbox`: a build step that cannot be sealed is an error, whatever else
    /// was said.
    pub require_sandbox: bool,
    /// How long one step may run before its whole process group is ended.
    pub timeout: Duration,
    /// Where `prepare-<name>.log` is written (`$ZOT_HOME/logs`).
    pub logs: PathBuf,
    /// zot's own build caches (`$ZOT_HOME/.ext-store/build-cache`): Go's build and module
    /// caches, a `CARGO_HOME` and Cargo target folders. Never the user's.
    pub caches: PathBuf,
    /// Told when each step starts and ends (sync's progress line of parallel installs).
    pub watcher: Option<Arc<dyn Watcher>>,
    /// Whether the command has `--no-prepare` to name in a fix (`new` has not).
    pub offers_no_prepare: bool,
    /// The platform to build for (`publish --platform`); `None`: the running one. Only Go
    /// builds for another.
    pub target: Option<Platform>,
}

/// Follows the steps of one or more extensions being prepared at once.
pub(crate) trait Watcher: Debug + Send + Sync {
    /// `name`'s step `step` (`go build`, `npm ci`) started.
    fn started(&self, name: &str, step: &str);
    /// `name`'s step ended, however it did.
    fn ended(&self, name: &str);
}

impl Options {
    /// Preparing on, scripts off, online, sealed, the default time limit; logs and caches
    /// in `$ZOT_HOME`, the base of the `global` scope.
    pub(crate) fn new(global: &ScopeDirs) -> Options {
        Options {
            enabled: true,
            allow_scripts: false,
            offline: false,
            no_sandbox: false,
            require_sandbox: false,
            timeout: DEFAULT_TIMEOUT,
            logs: global.base.join("logs"),
            caches: global.state().join(BUILD_CACHE),
            watcher: None,
            offers_no_prepare: true,
            target: None,
        }
    }
}
