//! Preparing a staged extension so that it runs once placed: the build or dependency
//! install its own files call for (a Go or Cargo build of a program not committed, `npm ci`
//! for a locked `package.json`, a Python venv for `requirements.txt`), found from the files
//! in the staged folder only ([`detect`]), never from a command the manifest names, and run
//! in the staged copy before it is published ([`run`]).
//!
//! Each step is fetching or building ([`step`]): fetching runs the user's tools with their
//! network and credentials and no code from the extension or its dependencies; building
//! runs sealed by the kernel ([`crate::seal`], [`sealing`]). Around the steps the
//! extension's package-manager configuration is set aside ([`config`]) and the tree is
//! checked before and after ([`guard`]). A step that fails, times out or is interrupted
//! leaves the staging folder to be deleted and the installed copy as it was.

mod cargo;
mod config;
mod detect;
mod files;
mod go;
mod guard;
mod node;
mod options;
mod python;
mod run;
mod sealing;
mod step;
mod toolchain;
mod workspace;

pub(crate) use go::main_package;
pub(crate) use node::{node_command, node_dependencies, vendored};
pub(crate) use options::{BUILD_CACHE, Options, Watcher};

use std::path::Path;

use anyhow::{Result, anyhow, bail};

use crate::catalog::manifest::Manifest;
use crate::output::Output;
use crate::source::oci::platform::Platform;
use crate::source::staged::Origin;
use crate::store::record::Prepared;
use sealing::Seal;
use step::Plan;

/// Lock files, in the order they are looked for.
const LOCK_FILES: [&str; 10] = [
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lock",
    "bun.lockb",
    "go.sum",
    "uv.lock",
    "requirements.txt",
    "Cargo.lock",
];

/// Refuses to prepare for `target` (`publish --platform`) what would not run there: a
/// step that places nothing in the folder (`go run` builds at each start), a Python venv
/// (it points at this machine's interpreter), or any build but Go's for another platform.
fn check_target(plan: &Plan, target: &Platform, name: &str) -> Result<()> {
    let tool = plan.tool();
    let name = crate::output::printable(name);
    if plan.outputs.is_empty() {
        bail!(
            "{name}: its {tool} step places nothing in its folder (it builds each time zot starts it), so there is nothing to publish for {target}; publish without --platform"
        );
    }
    if tool == "python3" || tool == "uv" {
        bail!(
            "{name}: a Python venv points at the interpreter of the machine that made it, so it is not published for {target}; publish without --platform and each install prepares it"
        );
    }
    let running = Platform::running();
    if tool != "go" && !target.runs_on(&running) {
        bail!(
            "{name}: {tool} builds for the platform it runs on ({running}) only; publish --platform {target} from a {target} machine (it adds its manifest to the index under the same tag)"
        );
    }
    Ok(())
}

/// Bytes of a lock file hashed at most.
const LOCK_MAX: u64 = 256 << 20;

/// Works out the steps `tree` (the staged extension folder, described by `manifest`) needs
/// and runs them, with `scratch` (beside the tree, deleted with it) for what is not placed;
/// what they ran and made, as the install record keeps it (`step`: the commands joined by
/// ` && `). `None`: nothing to prepare, or preparing is off.
pub(crate) fn prepare(
    tree: &Path,
    scratch: &Path,
    manifest: &Manifest,
    options: &Options,
    origin: Option<&Origin>,
    out: &Output,
) -> Result<Option<Prepared>> {
    if !options.enabled {
        return Ok(None);
    }
    let aside = config::SetAside::of(tree, scratch)?;
    let plan = detect::detect(tree, manifest, options, origin, &aside).map_err(|e| {
        match e.downcast_ref::<toolchain::MissingTool>() {
            Some(missing) if options.offers_no_prepare => anyhow!(
                "{missing}; or pass --no-prepare now and run zot ext prepare {} once it is there",
                crate::output::sh_quote(&manifest.name)
            ),
            _ => e,
        }
    })?;
    let Some(plan) = plan else {
        return Ok(None);
    };
    if let Some(target) = &options.target {
        check_target(&plan, target, &manifest.name)?;
    }
    let seal = seal_for(&plan, &manifest.name, options, out)?;
    if seal == Seal::On && plan.builds() {
        sealing::keep_this_process_to_itself();
    }
    let before = guard::check_before(tree, &plan.outputs)?;
    for step in &plan.steps {
        for folder in step.writes.iter().chain(&step.reads) {
            ensure_cache(options, folder)?;
        }
    }
    let log = options.logs.join(format!("prepare-{}.log", manifest.name));
    let mut runner = run::Runner::start(&log, &manifest.name, options, out)?;
    let set_aside = aside.names();
    if !set_aside.is_empty() {
        runner.write_log(&format!(
            "# set aside while preparing (package-manager configuration can name programs to run): {}\n",
            set_aside.join(", ")
        ));
    }
    let workspace = plan
        .workspace
        .as_ref()
        .map(|w| workspace::Lent::open(w, tree, scratch))
        .transpose()?;
    let root = workspace.as_ref().map(workspace::Lent::root);
    let ran = plan.steps.iter().try_for_each(|step| {
        runner
            .run(tree, scratch, root, step, seal, options.offline)
            .map_err(|e| match step.name {
                "go" => anyhow!("{e:#}{}", go::failure_hint(tree, root, options)),
                _ => e,
            })
    });
    // The dependency lock is the module's, where the steps ran.
    let (lock_file, lock_sha256) = lock_hash(root.unwrap_or(tree)).unzip();
    if let Some(workspace) = workspace {
        workspace.give_back()?;
    }
    ran?;
    plan.finish(tree)?;
    aside.restore()?;
    guard::settle_after(tree, &before)?;
    let tool = plan.tool();
    Ok(Some(Prepared {
        step: plan
            .steps
            .iter()
            .map(step::Step::shown)
            .collect::<Vec<_>>()
            .join(" && "),
        tool: tool.to_string(),
        tool_version: toolchain::version(tool),
        lock_file,
        lock_sha256,
        scripts: plan.scripts,
        outputs: plan.outputs,
        ran_at: Some(crate::store::record::now_rfc3339()),
        module: plan.module,
    }))
}

/// How the plan's build steps run: sealed, unless `--no-sandbox`; where there is no seal,
/// only with the user's word (`--allow-scripts`), never with `--require-sandbox`.
fn seal_for(plan: &Plan, name: &str, options: &Options, out: &Output) -> Result<Seal> {
    if !plan.builds() {
        return Ok(Seal::On);
    }
    let what = plan.builds.as_deref().unwrap_or("a build");
    let (seal, warning) = decide(name, what, options, crate::seal::available())?;
    if let Some(warning) = warning {
        out.note(&warning);
    }
    Ok(seal)
}

/// [`seal_for`]'s choice, given whether the seal can be had here (`available`): the way
/// the build runs and a warning to print, or the refusal.
fn decide(
    name: &str,
    what: &str,
    options: &Options,
    available: Result<(), String>,
) -> Result<(Seal, Option<String>)> {
    if options.no_sandbox {
        if options.require_sandbox {
            bail!(
                "--no-sandbox and --require-sandbox (or ZOT_EXT_REQUIRE_SANDBOX) contradict each other: give one"
            );
        }
        return Ok((Seal::Off, None));
    }
    match available {
        Ok(()) => Ok((Seal::On, None)),
        Err(why) if options.require_sandbox => bail!(
            "preparing {name} runs {what}, and the seal it must run in cannot be had here ({why}); --require-sandbox (or ZOT_EXT_REQUIRE_SANDBOX) forbids running it otherwise"
        ),
        Err(why) if options.allow_scripts => Ok((
            Seal::Off,
            Some(format!(
                "warning: {name}: {what} runs without the seal ({why}), as --allow-scripts allows"
            )),
        )),
        Err(why) => bail!(
            "preparing {name} runs {what}: code from the extension and its dependencies, which zot runs only sealed, and the seal cannot be had here ({why}); pass --allow-scripts to run it anyway, or --no-prepare to place the copy unbuilt"
        ),
    }
}

/// Makes the folder `path` of zot's build caches when it is one of them, through no link:
/// a link or a file in the way is an error.
fn ensure_cache(options: &Options, path: &Path) -> Result<()> {
    let Ok(rel) = path.strip_prefix(&options.caches) else {
        return Ok(());
    };
    let state = options.caches.parent().unwrap_or(Path::new("/"));
    let home = state.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(home).map_err(|e| anyhow!("cannot create {}: {e}", home.display()))?;
    let wrong = |at: &Path| {
        anyhow!(
            "{} must be a folder zot made (not a link): remove it",
            at.display()
        )
    };
    let mut folder = crate::fsx::Folder::open_path(home)
        .map_err(|e| anyhow!("cannot open {}: {e}", home.display()))?;
    let names = [
        std::ffi::OsStr::new(".ext-store"),
        std::ffi::OsStr::new(BUILD_CACHE),
    ]
    .into_iter()
    .chain(rel.iter());
    for name in names {
        let name = name.to_string_lossy();
        let at = folder.path().join(name.as_ref());
        folder = match folder.sub(&name, true) {
            Ok(Some(sub)) => sub,
            _ => return Err(wrong(&at)),
        };
    }
    Ok(())
}

/// The first lock file in `tree` and its SHA-256.
fn lock_hash(tree: &Path) -> Option<(String, String)> {
    use sha2::{Digest, Sha256};
    LOCK_FILES.iter().find_map(|name| {
        let bytes = crate::fsx::bounded::read(&tree.join(name), LOCK_MAX).ok()?;
        let hex = crate::store::filelist::hex(&Sha256::digest(&bytes));
        Some(((*name).to_string(), hex))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Options {
        let global = crate::catalog::paths::ScopeDirs {
            scope: crate::catalog::paths::Scope::Global,
            base: "/nowhere".into(),
        };
        Options::new(&global)
    }

    const NONE: &str = "macos has no Landlock";

    #[test]
    fn without_a_seal_a_build_needs_the_users_word() {
        let e = decide("hello", "go build of .", &options(), Err(NONE.into()))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("preparing hello runs go build of .: code from the extension and its dependencies, which zot runs only sealed, and the seal cannot be had here (macos has no Landlock); pass --allow-scripts"),
            "{e}"
        );
        let allowed = Options {
            allow_scripts: true,
            ..options()
        };
        let (seal, warning) = decide("hello", "go build of .", &allowed, Err(NONE.into())).unwrap();
        assert_eq!(seal, Seal::Off);
        assert_eq!(
            warning.as_deref(),
            Some(
                "warning: hello: go build of . runs without the seal (macos has no Landlock), as --allow-scripts allows"
            )
        );
    }

    #[test]
    fn require_sandbox_refuses_whatever_else_is_given() {
        let strict = Options {
            allow_scripts: true,
            require_sandbox: true,
            ..options()
        };
        let e = decide("hello", "go build", &strict, Err(NONE.into()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--require-sandbox (or ZOT_EXT_REQUIRE_SANDBOX) forbids"),
            "{e}"
        );
        assert_eq!(
            decide("hello", "go build", &strict, Ok(())).unwrap().0,
            Seal::On
        );
        let both = Options {
            no_sandbox: true,
            ..strict
        };
        assert!(decide("hello", "go build", &both, Ok(())).is_err());
    }

    #[test]
    fn no_sandbox_runs_unsealed_even_where_the_seal_is() {
        let off = Options {
            no_sandbox: true,
            ..options()
        };
        assert_eq!(
            decide("hello", "go build", &off, Ok(())).unwrap(),
            (Seal::Off, None)
        );
    }
}
