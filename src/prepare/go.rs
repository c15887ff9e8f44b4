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
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::files::{is_file, missing_exec};
use super::options::Options;
use super::step::{Plan, Step};
use super::toolchain::{self, find};
use crate::catalog::manifest::Manifest;
use crate::fsx::bounded;
use crate::output::printable;

/// The plan for a Go module at `tree`, or `None` when its `exec` needs no build.
pub(super) fn plan(tree: &Path, manifest: &Manifest, options: &Options) -> Result<Option<Plan>> {
    let go_run = manifest.exec == "go" && manifest.args.first().is_some_and(|a| a == "run");
    let exec = missing_exec(tree, &manifest.exec);
    if !go_run && exec.is_none() {
        return Ok(None);
    }
    let want = toolchain::go_mod_version(&tree.join("go.mod"));
    let install = format!("install Go {} or later", want.as_deref().unwrap_or("1.22"));
    let go = find("go", &install)?;
    if let Some(want) = &want {
        toolchain::check_go(want, &toolchain::go_version(&go)?)?;
    }
    let vendored = is_file(&tree.join("vendor/modules.txt"));
    let fetch = is_file(&tree.join("go.sum")) && !vendored;
    let Some(exec) = exec else {
        // `go run` builds with the user's caches each time zot starts it: what can be done
        // now is to fetch its modules into the user's module cache.
        return Ok(fetch.then(|| Plan::one(download(&go, None, options), None)));
    };
    let caches = Caches::of(options);
    let mut steps = Vec::new();
    if fetch {
        steps.push(download(&go, Some(&caches.modules), options));
    }
    let out = format!("./{}", exec.display());
    let package = main_package(tree, &exec)?;
    steps.push(
        build(&go, &caches, vendored, options)
            .arg("-o")
            .arg(&out)
            .arg(&package),
    );
    let output = exec.to_string_lossy().into_owned();
    Ok(Some(Plan {
        scripts: options.allow_scripts,
        builds: Some(format!("go build of {package}")),
        ..Plan::of(steps, Some(&output))
    }))
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

/// `go mod download` into `modules` (zot's cache; the user's when `None`).
fn download(go: &Path, modules: Option<&Path>, options: &Options) -> Step {
    let mut step = Step::tool("go", go.to_path_buf(), &["mod", "download"])
        .env("GOFLAGS", "-mod=readonly")
        .env("GOTOOLCHAIN", "local")
        .env("GOWORK", "off");
    if let Some(modules) = modules {
        step = step.env("GOMODCACHE", modules);
    }
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

/// `go build -trimpath -buildvcs=false`, sealed, with zot's caches; `-o` and the package
/// are added by the caller.
fn build(go: &Path, caches: &Caches, vendored: bool, options: &Options) -> Step {
    // The installation the binary is in: what a go started with no GOROOT uses (asking
    // `go env GOROOT` would start go once more, about a tenth of a small build).
    let root = toolchain::prefix_of(go);
    let mode = if vendored {
        "-mod=vendor"
    } else {
        "-mod=readonly"
    };
    let mut step = Step::tool(
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
    step.reads.extend(root);
    step.reads.push(caches.modules.clone());
    step.writes.push(caches.build.clone());
    step.writes.push(options.caches.join("go-path"));
    step
}

/// A build that cannot run with cgo off: the hint to give with its failure.
pub(super) fn cgo_hint(tree: &Path, options: &Options) -> Option<&'static str> {
    if options.allow_scripts {
        return None;
    }
    uses_cgo(tree).then_some(
        " (the module imports \"C\": cgo runs the C compiler and linker with flags from the source, so it is off unless --allow-scripts)",
    )
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
