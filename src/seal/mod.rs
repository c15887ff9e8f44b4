//! The seal a prepare step runs in. Building runs code from the extension and its
//! dependencies (compilers fed its files, build scripts, proc-macros, cgo, lifecycle
//! scripts when allowed), so it runs where the kernel, not zot, holds it:
//!
//! - **files** (Landlock): reads of the system folders, the toolchain, the staged copy and
//!   zot's own build caches; writes into the staged copy, a private home and temporary
//!   folder, and those caches, nowhere else;
//! - **network**: none, by a network namespace of its own where one can be had (root, or
//!   an unprivileged user namespace), else Landlock's TCP rules;
//! - **signals and abstract sockets** scoped to the step (Landlock ABI 6);
//! - **lifetime**: nothing of it alive once it returns, by a PID namespace where one can be
//!   had, else a subreaper that ends whatever is left; also when zot is killed with
//!   `kill -9` (each stage dies with its parent).
//!
//! Every step, sealed or not, runs through the same two stages of this binary, started
//! under other names (`argv[0]`): [`SUPERVISOR`] (namespaces, subreaper, waiting and
//! cleaning up; [`supervise`]) starts [`CONFINED`], which restricts itself and becomes the
//! step's program ([`confine`]). The step's environment is set on the first and inherited;
//! the command line carries only paths and flags ([`Spec`]). A fetch step (no stranger's
//! code: `npm ci --ignore-scripts`, `go mod download`) runs with no file rules and keeps the
//! network unless `--offline` asked to cut it.
//!
//! Elsewhere than Linux there is no seal: [`available`] says why, and a step that would
//! need one is refused unless the user gives their word (`--allow-scripts`).

mod confine;
mod probe;
mod spec;
mod supervise;

pub(crate) use probe::available;
pub(crate) use spec::{Rules, SETUP_FAILED, SUPERVISOR, Spec};

use std::ffi::OsString;
use std::process::Command;

use spec::{CONFINED, this_program};

/// Runs this process as a stage of the seal when `argv[0]` names one; its exit status.
/// `None`: this is an ordinary run of zot.
pub fn run_if_stage() -> Option<u8> {
    let mut args = std::env::args_os();
    let first = args.next()?;
    let rest: Vec<OsString> = args.collect();
    let name = std::path::Path::new(&first).file_name()?.to_owned();
    if name == SUPERVISOR {
        return Some(stage(&rest, supervise::run));
    }
    if name == CONFINED {
        return Some(stage(&rest, confine::run));
    }
    None
}

/// Parses the command line and runs `body`; a setup failure is one line on stderr and
/// [`SETUP_FAILED`].
fn stage(args: &[OsString], body: fn(&Spec) -> Result<u8, String>) -> u8 {
    let outcome = Spec::parse(args).and_then(|spec| body(&spec));
    outcome.unwrap_or_else(|reason| {
        eprintln!("{SUPERVISOR}: {reason}");
        SETUP_FAILED
    })
}

/// The command that runs `spec` (its program, arguments, folder and seal) through the two
/// stages: this binary, started as [`SUPERVISOR`]. The caller sets the environment,
/// standard streams and process group, and starts it with [`crate::host::die_with_parent`].
pub(crate) fn command(spec: &Spec) -> std::io::Result<Command> {
    let exe = this_program()?;
    let mut command = Command::new(exe);
    std::os::unix::process::CommandExt::arg0(&mut command, SUPERVISOR);
    command.args(spec.to_args(std::process::id()));
    Ok(command)
}
