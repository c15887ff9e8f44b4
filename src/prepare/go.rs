//! Go: a module whose `exec` names a program not committed is built, one whose `exec` is
//! `go run` has its modules fetched (zot builds it at each start, in the user's caches).
//!
//! Fetching is `go mod download` into zot's module cache (the user's `GOPROXY`, `GOPRIVATE`
//! and `~/.netrc` apply; with `--offline`, from the user's own module cache through a
//! `file://` proxy, with the network cut). Building is `go build -trimpath -buildvcs=false`
//! sealed: `GOWORK=off`, `GOTOOLCHAIN=local`, `GOPROXY=off`, `GOENV=off`, zot's build and
//! module caches, and `CGO_ENABLED=0` unless `--allow-scripts` (cgo runs the C compiler
//! and linker with flags from the source: a linker once ran a program from the module).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::files::{is_file, missing_exec};
use super::options::Options;
use super::step::{Dir, Plan, Step, Workspace};
use super::toolchain::{self, find};
use crate::catalog::manifest::Manifest;
use crate::fsx::bounded;
use crate::output::printable;
use crate::source::staged::Origin;

/// The plan for a Go extension at `tree`, or `None` when its `exec` needs no build. The
/// module is the folder's own `go.mod`, else the first one above it in its `origin` (up to
/// the top of the checkout or repository): then the build runs at that module's root. The
/// `go` line is left to Go: a failed build says what `go.mod` asks for ([`failure_hint`]).
pub(super) fn plan(
    tree: &Path,
    manifest: &Manifest,
    options: &Options,
    origin: Option<&Origin>,
) -> Result<Option<Plan>> {
    let go_run = manifest.exec == "go" && manifest.args.first().is_some_and(|a| a == "run");
    let exec = missing_exec(tree, &manifest.exec);
    if !go_run && exec.is_none() {
        return Ok(None);
    }
    let workspace = if is_file(&tree.join("go.mod")) {
        None
    } else if go_run || !has_go_files(tree) {
        // zot starts `go run` in the installed folder, which needs a go.mod of its own.
        return Ok(None);
    } else {
        let Some(workspace) = origin.and_then(module_above) else {
            return Ok(None);
        };
        Some(workspace)
    };
    let root_mod = match &workspace {
        Some(w) => w.from.join("go.mod"),
        None => tree.join("go.mod"),
    };
    let want = toolchain::go_mod_version(&root_mod);
    let go = find(
        "go",
        &format!("install Go {} or later", want.as_deref().unwrap_or("1.22")),
    )?;
    let root = root_mod.parent().unwrap_or(tree);
    let vendored = is_file(&root.join("vendor/modules.txt"));
    let fetch = is_file(&root.join("go.sum")) && !vendored;
    let Some(exec) = exec else {
        // `go run` builds with the user's caches each time zot starts it: what can be done
        // now is to fetch the modules its package needs into the user's module cache.
        let package = manifest
            .args
            .get(1)
            .filter(|a| a.starts_with('.'))
            .map_or(".", String::as_str);
        return Ok(fetch.then(|| Plan::one(list_deps(&go, package, None, options), None)));
    };
    let caches = Caches::of(options);
    let within = |package: &str| match &workspace {
        Some(w) => {
            let inner = package.trim_start_matches("./").trim_start_matches('.');
            format!("./{}", w.rel.join(inner).display())
                .trim_end_matches('/')
                .to_string()
        }
        None => package.to_string(),
    };
    let package = within(&main_package(tree, &exec)?);
    let out = within(&format!("./{}", exec.display()));
    let mut steps = Vec::new();
    if fetch {
        steps.push(list_deps(&go, &package, Some(&caches.modules), options));
    }
    steps.push(
        build(&go, &caches, vendored, options)
            .arg("-o")
            .arg(&out)
            .arg(&package),
    );
    let dir = if workspace.is_some() {
        Dir::Workspace
    } else {
        Dir::Tree
    };
    for step in &mut steps {
        step.dir = dir;
    }
    let output = exec.to_string_lossy().into_owned();
    Ok(Some(Plan {
        scripts: options.allow_scripts,
        builds: Some(format!("go build of {package}")),
        module: toolchain::go_mod_line(&root_mod, |line| {
            let path = line.strip_prefix("module")?.trim().trim_matches('"');
            (!path.is_empty()).then(|| printable(path))
        }),
        workspace,
        ..Plan::of(steps, Some(&output))
    }))
}

/// Whether the folder holds a Go file of its own (not only below it).
fn has_go_files(tree: &Path) -> bool {
    fs::read_dir(tree).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name().to_string_lossy().ends_with(".go")
                && e.file_type().is_ok_and(|t| t.is_file())
        })
    })
}

/// The module `origin`'s folder belongs to: the first `go.mod` above it, up to its top.
fn module_above(origin: &Origin) -> Option<Workspace> {
    origin
        .folder
        .ancestors()
        .skip(1)
        .take_while(|dir| dir.starts_with(&origin.top))
        .find(|dir| is_file(&dir.join("go.mod")))
        .map(|dir| Workspace {
            from: dir.to_path_buf(),
            copy: origin.users,
            rel: origin
                .folder
                .strip_prefix(dir)
                .unwrap_or(Path::new(""))
                .to_path_buf(),
        })
}

/// What to add to a failed Go build's error: that cgo is off, or that `go.mod` asks for a
/// newer Go than the one on PATH (Go decides whether that matters; before Go 1.21 the line
/// is advisory).
pub(super) fn failure_hint(tree: &Path, workspace: Option<&Path>, options: &Options) -> String {
    let mut hint = String::new();
    if !options.allow_scripts && uses_cgo(tree) {
        hint.push_str(" (the module imports \"C\": cgo runs the C compiler and linker with flags from the source, so it is off unless --allow-scripts)");
    }
    let go_mod = workspace.unwrap_or(tree).join("go.mod");
    if let (Some(want), Some(go)) = (toolchain::go_mod_version(&go_mod), toolchain::on_path("go"))
        && let Ok(have) = toolchain::go_version(&go)
        && toolchain::older(&have, &want)
    {
        let _ = write!(
            hint,
            " (go.mod says go {want}; go on PATH is {have}: a newer Go may be needed)"
        );
    }
    hint
}

/// zot's own Go caches.
struct Caches {
    build: PathBuf,
    modules: PathBuf,
}

impl Caches {
    fn of(options: &Options) -> Caches {
        Caches {
            build: options.caches.join("go-build"),
            modules: options.caches.join("go-mod"),
        }
    }
}

/// `go list -deps <package>`, which fetches the modules the package needs (and no other:
/// `go mod download` would fetch every module the go.mod names) into `modules` (zot's cache;
/// the user's when `None`). It compiles nothing and runs no cgo.
fn list_deps(go: &Path, package: &str, modules: Option<&Path>, options: &Options) -> Step {
    let mut step = Step::tool(
        "go",
        go.to_path_buf(),
        &[
            "list",
            "-deps",
            "-f",
            "{{with .Module}}{{.Path}} {{.Version}}{{end}}",
            package,
        ],
    )
    .env("GOFLAGS", "-mod=readonly")
    .env("GOTOOLCHAIN", "local")
    .env("GOWORK", "off")
    .env("CGO_ENABLED", "0");
    if let Some(modules) = modules {
        step = step.env("GOMODCACHE", modules);
    }
    step = for_target(step, options);
    if options.offline {
        step = match user_module_cache(go) {
            Some(cache) => step.env("GOPROXY", proxy_url(&cache)).env("GOSUMDB", "off"),
            None => step.env("GOPROXY", "off"),
        };
    }
    step
}

/// The user's module cache (`go env GOMODCACHE`), to fetch from offline.
fn user_module_cache(go: &Path) -> Option<PathBuf> {
    toolchain::go_env(go, &["env", "GOMODCACHE"]).filter(|p| p.is_dir())
}

/// A module cache's downloads as a `GOPROXY` (Go reads a `file://` proxy in that layout).
fn proxy_url(cache: &Path) -> OsString {
    let mut url = OsString::from("file://");
    url.push(cache.join("cache/download"));
    url
}

/// `go build -trimpath -buildvcs=false`, sealed, with zot's caches (and go's installation,
/// as every sealed tool, [`super::sealing`]); `-o` and the package are added by the caller.
fn build(go: &Path, caches: &Caches, vendored: bool, options: &Options) -> Step {
    let mode = if vendored {
        "-mod=vendor"
    } else {
        "-mod=readonly"
    };
    let step = Step::tool(
        "go",
        go.to_path_buf(),
        &["build", "-trimpath", "-buildvcs=false"],
    )
    .building()
    .env("GOFLAGS", mode)
    .env("GOTOOLCHAIN", "local")
    .env("GOWORK", "off")
    .env("GOPROXY", "off")
    .env("GOSUMDB", "off")
    .env("GOENV", "off")
    .env("GOTELEMETRY", "off")
    .env("GOCACHE", &caches.build)
    .env("GOMODCACHE", &caches.modules)
    .env("GOPATH", options.caches.join("go-path"))
    .env("CGO_ENABLED", if options.allow_scripts { "1" } else { "0" });
    let mut step = for_target(step, options);
    step.reads.push(caches.modules.clone());
    step.writes.push(caches.build.clone());
    step.writes.push(options.caches.join("go-path"));
    step
}

/// `step` for the platform `publish --platform` builds for, when one is given: Go's own
/// cross-compilation (`GOOS`, `GOARCH`, and `GOARM` for an `arm` variant).
fn for_target(step: Step, options: &Options) -> Step {
    let Some(target) = &options.target else {
        return step;
    };
    let step = step
        .env("GOOS", &target.os)
        .env("GOARCH", &target.architecture);
    match target.variant.as_deref().and_then(|v| v.strip_prefix('v')) {
        Some(arm) if target.architecture == "arm" => step.env("GOARM", arm),
        _ => step,
    }
}

/// Whether a Go file of the module (outside vendor/ and testdata/) says `import "C"`.
fn uses_cgo(tree: &Path) -> bool {
    walkdir::WalkDir::new(tree)
        .max_depth(8)
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            e.depth() == 0 || !(name.starts_with('.') || name == "vendor" || name == "testdata")
        })
        .flatten()
        .filter(|e| e.file_type().is_file() && e.file_name().to_string_lossy().ends_with(".go"))
        .take(2000)
        .any(|e| {
            let mut head = vec![0; 16 * 1024];
            let len = crate::fsx::bounded::read_head(e.path(), &mut head).unwrap_or(0);
            String::from_utf8_lossy(&head[..len])
                .lines()
                .any(|l| l.trim() == "import \"C\"")
        })
}

/// How deep the module is searched for main packages.
const GO_DEPTH: usize = 6;

/// The main package to build: the folder itself, else `cmd/<exec's base name>`, else the
/// one main package in the module.
pub(crate) fn main_package(tree: &Path, exec: &Path) -> Result<String> {
    if is_main(tree) {
        return Ok(".".into());
    }
    if let Some(base) = exec.file_name() {
        let cmd = Path::new("cmd").join(base);
        if is_main(&tree.join(&cmd)) {
            return Ok(format!("./{}", cmd.display()));
        }
    }
    let mut found = Vec::new();
    main_packages(tree, Path::new(""), GO_DEPTH, &mut found);
    match found.len() {
        1 => Ok(format!("./{}", found[0].display())),
        0 => bail!(
            "go.mod is there, but no main package was found to build \"exec\" {} from; put package main in the extension folder or in cmd/<name>",
            printable(&exec.display().to_string())
        ),
        _ => bail!(
            "the module has more than one main package ({}); put the extension's in the folder itself or in cmd/{}",
            found
                .iter()
                .map(|p| format!("./{}", printable(&p.display().to_string())))
                .collect::<Vec<_>>()
                .join(", "),
            printable(&exec.file_name().unwrap_or_default().to_string_lossy())
        ),
    }
}

fn main_packages(root: &Path, rel: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(root.join(rel)) else {
        return;
    };
    let mut subs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name())
        .filter(|n| {
            let n = n.to_string_lossy();
            !(n.starts_with('.') || n.starts_with('_') || n == "vendor" || n == "testdata")
        })
        .map(|n| rel.join(n))
        .collect();
    subs.sort();
    for sub in subs {
        if is_main(&root.join(&sub)) {
            found.push(sub.clone());
        }
        if depth > 0 {
            main_packages(root, &sub, depth - 1, found);
        }
    }
}

/// Whether `dir` holds a Go file (not a test) of `package main`.
fn is_main(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name.ends_with(".go")
            && !name.ends_with("_test.go")
            && e.file_type().is_ok_and(|t| t.is_file())
            && package_clause(&e.path()).as_deref() == Some("main")
    })
}

/// The package a Go file declares, from its head.
fn package_clause(file: &Path) -> Option<String> {
    let mut head = vec![0; 16 * 1024];
    let len = bounded::read_head(file, &mut head).ok()?;
    let text = String::from_utf8_lossy(&head[..len]);
    let mut in_block = false;
    for line in text.lines() {
        let mut line = line.trim();
        if in_block {
            let Some(end) = line.find("*/") else { continue };
            line = line[end + 2..].trim();
            in_block = false;
        }
        if line.starts_with("/*") && !line.contains("*/") {
            in_block = true;
            continue;
        }
        if let Some(name) = line.strip_prefix("package ") {
            return name.split_whitespace().next().map(str::to_string);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn the_package_clause_skips_comments() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.go");
        fs::write(
            &file,
            "// Copyright\n/*\npackage nope\n*/\n\npackage main // x\n",
        )
        .unwrap();
        assert_eq!(package_clause(&file).as_deref(), Some("main"));
    }
}
