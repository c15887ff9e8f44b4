//! The build command doctor and call print for a compiled extension that is not built yet:
//! the same text from both, for a Go extension with its own go.mod, one inside a larger
//! module (as zot's own examples are) and one with none, one whose main package is under
//! `cmd/<name>` (found as install's step finds it), and for Rust with and without a
//! Cargo.toml; when Go is installed, the printed commands are run and build the program.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::Env;
use crate::support::extensions::on_path;

/// A Go program that needs only the standard library.
const MAIN_GO: &str = "package main\n\nfunc main() {}\n";

/// Writes `<parent>/<rel>/` with a manifest for `name` (language `language`, exec `exec`).
fn extension(parent: &Path, rel: &str, name: &str, language: &str, exec: &str) -> PathBuf {
    let dir = parent.join(rel);
    fs::create_dir_all(&dir).unwrap();
    let manifest = serde_json::json!({
        "name": name, "version": "1.0.0", "exec": exec, "language": language,
    });
    fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
    dir
}

fn go_extension(parent: &Path, rel: &str) -> PathBuf {
    let dir = extension(parent, rel, "hello", "go", "./hello");
    fs::write(dir.join("main.go"), MAIN_GO).unwrap();
    dir
}

/// The fix doctor gives for the one extension at `dir` (which must fail), checked to be the
/// one call gives too; returned for the caller to compare.
fn printed_hint(env: &Env, dir: &Path) -> String {
    let target = dir.to_str().unwrap();
    let json = env.zot(["ext", "doctor", "--json", target]).fails(1).json();
    let errors = &json["extensions"][0]["errors"];
    assert_eq!(errors.as_array().unwrap().len(), 1, "{json:#}");
    let fix = errors[0]["fix"].as_str().unwrap().to_string();
    let message = errors[0]["message"].as_str().unwrap();
    let called = env.zot(["ext", "call", target, "/hi"]).fails(1);
    assert_eq!(called.stderr, format!("error: {message}; {fix}\n"));
    fix
}

/// Where the world's temporary folder is; `Env` puts `work` right under it.
fn base(env: &Env) -> &Path {
    env.work.parent().unwrap()
}

#[test]
fn go_with_its_own_go_mod_builds_in_its_folder() {
    let env = Env::new();
    let dir = go_extension(&env.work, "hello");
    fs::write(dir.join("go.mod"), "module hello\n\ngo 1.21\n").unwrap();
    assert_eq!(
        printed_hint(&env, &dir),
        format!("build it: cd {} && go build -o ./hello .", dir.display())
    );
}

#[test]
fn go_with_its_main_package_under_cmd_builds_that_package() {
    let env = Env::new();
    let dir = extension(&env.work, "hello", "hello", "go", "./hello");
    fs::write(dir.join("go.mod"), "module hello\n\ngo 1.21\n").unwrap();
    fs::write(dir.join("lib.go"), "package hello\n").unwrap();
    fs::create_dir_all(dir.join("cmd/hello")).unwrap();
    fs::write(dir.join("cmd/hello/main.go"), MAIN_GO).unwrap();
    assert_eq!(
        printed_hint(&env, &dir),
        format!(
            "build it: cd {} && go build -o ./hello ./cmd/hello",
            dir.display()
        )
    );
}

#[test]
fn go_inside_a_larger_module_builds_from_the_module_root() {
    let env = Env::new();
    let root = env.work.join("zot");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("go.mod"), "module example.com/zot\n\ngo 1.21\n").unwrap();
    let dir = go_extension(&root, "examples/extensions/hello");
    let root = root.display();
    assert_eq!(
        printed_hint(&env, &dir),
        format!(
            "the extension is part of the Go module example.com/zot at {root}; build it: \
             cd {root} && go build -o {root}/examples/extensions/hello/hello ./examples/extensions/hello; \
             an installed copy will not have that module (the copied folder has no go.mod), \
             so give the extension its own: cd {root}/examples/extensions/hello && go mod init hello && go mod tidy"
        )
    );
}

#[test]
fn go_without_any_go_mod_gets_one_first_and_paths_are_quoted() {
    let env = Env::new();
    let dir = go_extension(&env.work, "my exts/hello");
    assert_eq!(
        printed_hint(&env, &dir),
        format!(
            "there is no go.mod in {0} or the folders above it; create one and build: \
             cd '{0}' && go mod init hello && go mod tidy && go build -o ./hello .",
            dir.display()
        )
    );
}

#[test]
fn an_installed_copy_of_a_module_example_has_no_module() {
    let env = Env::new();
    let root = env.work.join("zot");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("go.mod"), "module example.com/zot\n").unwrap();
    let src = go_extension(&root, "examples/hello");
    env.zot(["ext", "install", src.to_str().unwrap()]).ok();
    let done = env
        .zot(["ext", "doctor", "--json", "hello"])
        .fails(1)
        .json();
    let installed = env.global_root().join("hello");
    assert_eq!(
        done["extensions"][0]["errors"][0]["fix"],
        format!(
            "there is no go.mod in {0} or the folders above it; create one and build: \
             cd {0} && go mod init hello && go mod tidy && go build -o ./hello .",
            installed.display()
        )
    );
    // info names the same fix beside the program it cannot find.
    let fix = done["extensions"][0]["errors"][0]["fix"].as_str().unwrap();
    let info = env.zot(["ext", "info", "hello", "--json"]).ok().json();
    let error = info["copies"][0]["program"]["error"].as_str().unwrap();
    assert!(error.ends_with(&format!("; {fix}")), "{info:#}");
}

#[test]
fn rust_builds_with_cargo_only_where_a_cargo_toml_is() {
    let env = Env::new();
    let exec = "./target/release/crab";
    let dir = extension(&env.work, "crab", "crab", "rust", exec);
    assert_eq!(
        printed_hint(&env, &dir),
        format!(
            "there is no Cargo.toml in {}, so zot ext cannot tell how to build it; \
             build the program to {exec} there, or correct \"exec\" in extension.json",
            dir.display()
        )
    );
    fs::write(dir.join("Cargo.toml"), "[package]\nname = \"crab\"\n").unwrap();
    assert_eq!(
        printed_hint(&env, &dir),
        format!("build it: cd {} && cargo build --release", dir.display())
    );
}

#[test]
fn new_prints_the_hint_doctor_gives() {
    let env = Env::new();
    let dir = env.work.join("fresh");
    let done = env
        .zot([
            "ext",
            "new",
            "fresh",
            "--lang",
            "go",
            "--dir",
            dir.to_str().unwrap(),
        ])
        .ok();
    let hint = printed_hint(&env, &dir);
    assert_eq!(
        hint,
        format!("build it: cd {} && go build -o ./fresh .", dir.display())
    );
    assert!(done.stderr.lines().any(|l| l == hint), "{}", done.stderr);
}

/// The commands in a printed hint: each part after a colon that starts with `cd `.
fn commands(hint: &str) -> Vec<String> {
    hint.split("; ")
        .filter_map(|part| {
            part.split_once(": cd ")
                .map(|(_, rest)| format!("cd {rest}"))
        })
        .collect()
}

/// Runs `command` in sh with Go confined to `cache` and offline.
fn run_offline(command: &str, cache: &Path) {
    let out = Command::new("sh")
        .args(["-c", command])
        .env("GOPATH", cache.join("gopath"))
        .env("GOCACHE", cache.join("gocache"))
        .env("GOMODCACHE", cache.join("gomodcache"))
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("GOTOOLCHAIN", "local")
        .env("GOWORK", "off")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_printed_go_commands_build_the_program() {
    if !on_path("go") {
        eprintln!("skipping: go is not on PATH, so the printed go commands cannot be run");
        return;
    }
    let env = Env::new();
    let cache = base(&env).join("go");
    // No go.mod anywhere: the one command makes one and builds.
    let alone = go_extension(&env.work, "alone dir/hello");
    let hint = printed_hint(&env, &alone);
    assert_eq!(commands(&hint).len(), 1, "{hint}");
    run_offline(&commands(&hint)[0], &cache);
    assert!(alone.join("hello").is_file(), "{hint}");
    // Inside a larger module: built from its root; then given its own go.mod, built in place.
    let root = env.work.join("zot");
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("go.mod"), "module example.com/zot\n\ngo 1.21\n").unwrap();
    let inner = go_extension(&root, "examples/hello");
    let hint = printed_hint(&env, &inner);
    let [build, own] = <[String; 2]>::try_from(commands(&hint)).unwrap();
    run_offline(&build, &cache);
    assert!(inner.join("hello").is_file(), "{hint}");
    fs::remove_file(inner.join("hello")).unwrap();
    run_offline(&own, &cache);
    let hint = printed_hint(&env, &inner);
    assert!(hint.starts_with("build it: cd "), "{hint}");
    run_offline(&commands(&hint)[0], &cache);
    assert!(inner.join("hello").is_file(), "{hint}");
}

#[test]
fn a_python_in_a_missing_virtual_environment_gets_the_command_that_creates_it() {
    let env = Env::new();
    let dir = extension(&env.work, "venv", "venv", "python", ".venv/bin/python");
    fs::write(dir.join("main.py"), "print()\n").unwrap();
    assert_eq!(
        printed_hint(&env, &dir),
        format!(
            "create the virtual environment: cd {} && python3 -m venv .venv (then install into it \
             what the extension needs), or correct \"exec\" in extension.json",
            fs::canonicalize(&dir).unwrap().display()
        )
    );
}
