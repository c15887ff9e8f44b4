//! What the command line or a project-file entry asks of preparing: on or off, scripts,
//! offline, the time limit, where the log goes, and who is told when a step starts and ends.

use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How long a step may run by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// What the command line (or a project-file entry) asked for.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// `--no-prepare` turns this off: the tree is placed as fetched.
    pub enabled: bool,
    /// `--allow-scripts`: npm/pnpm/yarn/bun lifecycle scripts run.
    pub allow_scripts: bool,
    /// `--offline`: every tool is told to use its local cache only.
    pub offline: bool,
    /// How long one step may run before its whole process group is ended.
    pub timeout: Duration,
    /// Where `prepare-<name>.log` is written (`$ZOT_HOME/logs`).
    pub logs: PathBuf,
    /// Told when each step starts and ends (sync's progress line of parallel installs).
    pub watcher: Option<Arc<dyn Watcher>>,
}

/// Follows the steps of one or more extensions being prepared at once.
pub(crate) trait Watcher: Debug + Send + Sync {
    /// `name`'s step `step` (`go build`, `npm ci`) started.
    fn started(&self, name: &str, step: &str);
    /// `name`'s step ended, however it did.
    fn ended(&self, name: &str);
}

impl Options {
    /// Preparing on, scripts off, online, the default time limit.
    pub(crate) fn new(logs: PathBuf) -> Options {
        Options {
            enabled: true,
            allow_scripts: false,
            offline: false,
            timeout: DEFAULT_TIMEOUT,
            logs,
            watcher: None,
        }
    }
}
