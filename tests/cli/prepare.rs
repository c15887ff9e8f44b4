//! Preparing a staged copy before it is placed: a Go build (module root and `cmd/<name>`),
//! `npm ci` of a locked local tarball with its scripts off (and on with `--allow-scripts`),
//! a Python venv from a wheel built here, an offline Cargo build; and the failures that
//! leave the installed copy as it was and staging empty. What the step made is listed as
//! prepared output (left out of the tree hash, checked apart by `verify`, never carried over
//! by `--force`), and the lock keeps the step and the dependency lock file's hash, which
//! `sync --frozen` holds a fresh copy to. The toolchains must be installed
//! when `CI` or `ZOT_REQUIRE_SHELLS` is set (`.ci/run` installs them); elsewhere a test
//! whose toolchain is missing is skipped with a note.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{Env, Run, write_executable};

fn required() -> bool {
    let set = |key: &str| std::env::var(key).is_ok_and(|v| !v.is_empty() && v != "false");
    set("CI") || set("ZOT_REQUIRE_SHELLS")
}

/// Whether `check` (a command line) runs; a missing toolchain fails under CI and skips
/// elsewhere.
pub(crate) fn have(check: &[&str], package: &str) -> bool {
    let found = Command::new(check[0])
        .args(&check[1..])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            !required(),
            "`{}` does not run, and CI must test preparing: apt-get install {package}",
            check.join(" ")
        );
        eprintln!("note: `{}` does not run; skipping", check.join(" "));
    }
    found
}

pub(crate) fn have_go() -> bool {
    have(&["go", "version"], "golang-go")
}

/// The tools' caches shared between tests (the Go build cache), kept under the target
/// folder; the rest of the user's home is the test's own.
pub(crate) fn zot(env: &Env, args: &[&str]) -> Run {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-cache");
    let mut run = env.zot(args).env("GOCACHE", cache);
    // cargo is rustup's proxy, which finds its toolchains through the real home.
    for key in ["RUSTUP_HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN"] {
        if let Some(value) = std::env::var_os(key) {
            run = run.env(key, value);
        }
    }
    if std::env::var_os("RUSTUP_HOME").is_none()
        && let Some(home) = std::env::var_os("HOME")
    {
        run = run.env("RUSTUP_HOME", Path::new(&home).join(".rustup"));
    }
    run
}

pub(crate) fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

pub(crate) fn extension(env: &Env, dir: &str, name: &str, exec: &str) -> PathBuf {
    let src = env.work.join(dir);
    write(
        &src.join("extension.json"),
        &format!("{{\"name\": \"{name}\", \"version\": \"1.0.0\", \"exec\": \"{exec}\"}}\n"),
    );
    src
}

pub(crate) const GO_MAIN: &str =
    "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from go\") }\n";

pub(crate) fn go_extension(env: &Env, dir: &str, go: &str) -> PathBuf {
    let src = extension(env, dir, "hello", "./hello");
    write(
        &src.join("go.mod"),
        &format!("module example.com/hello\n\ngo {go}\n"),
    );
    src
}

/// The staging folder holds nothing (every staged copy was deleted).
pub(crate) fn assert_staging_empty(env: &Env) {
    let staging = env.home.join(".ext-store/staging");
    let left: Vec<_> = fs::read_dir(&staging)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left in staging: {left:?}");
}

pub(crate) fn output_of(program: &Path) -> String {
    let out = Command::new(program).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_go_extension_at_the_module_root_is_built_in_staging() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.19");
    write(&src.join("main.go"), GO_MAIN);
    zot(&env, &["ext", "install", src.to_str().unwrap()]).ok();
    let dest = env.global_root().join("hello");
    assert_eq!(output_of(&dest.join("hello")), "hello from go\n");
    assert!(!src.join("hello").exists(), "the source is left alone");
    let log = fs::read_to_string(env.home.join("logs/prepare-hello.log")).unwrap();
    assert!(
        log.starts_with("$ go build -trimpath -buildvcs=false -o ./hello .\n"),
        "{log}"
    );
    assert_staging_empty(&env);
}

#[test]
fn a_go_extension_under_cmd_is_built_from_there() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.19");
    write(
        &src.join("lib.go"),
        "package hello\n\nconst Greeting = \"hi\"\n",
    );
    write(&src.join("cmd/hello/main.go"), GO_MAIN);
    zot(&env, &["ext", "install", src.to_str().unwrap()]).ok();
    let dest = env.global_root().join("hello");
    assert_eq!(output_of(&dest.join("hello")), "hello from go\n");
}

#[test]
fn a_go_build_that_fails_leaves_the_installed_copy_as_it_was() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.19");
    write(&src.join("main.go"), GO_MAIN);
    zot(&env, &["ext", "install", src.to_str().unwrap()]).ok();
    write(&src.join("main.go"), "package main\n\nfunc main() {\n");
    // Everything but the log, which is the failed step's.
    let store = || -> Vec<(String, String)> {
        env.snapshot()
            .into_iter()
            .filter(|(path, _)| !path.contains("/logs/") && !path.contains("/build-cache"))
            .collect()
    };
    let before = store();
    // -q: the error is all that is printed.
    let done = zot(
        &env,
        &["ext", "install", "-q", "--force", src.to_str().unwrap()],
    )
    .fails(1);
    done.stderr_has("`go build -trimpath -buildvcs=false -o ./hello .` ended with exit status")
        .stderr_has("syntax error")
        .stderr_has("prepare-hello.log")
        .stderr_has("nothing was changed")
        .stderr_one_line();
    assert_eq!(store(), before, "the installed copy changed");
    let dest = env.global_root().join("hello");
    assert_eq!(output_of(&dest.join("hello")), "hello from go\n");
    assert_staging_empty(&env);
}

#[test]
fn go_missing_from_path_is_named_with_what_to_install() {
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.22");
    write(&src.join("main.go"), GO_MAIN);
    let empty = env.work.join("empty-bin");
    fs::create_dir_all(&empty).unwrap();
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .env("PATH", &empty)
        .fails(1)
        .stderr_has("go not found on PATH: install Go 1.22 or later; or pass --no-prepare now and run zot ext prepare hello once it is there");
    assert!(env.installed_names().is_empty());
    assert_staging_empty(&env);
}

#[test]
fn no_prepare_places_the_copy_as_fetched() {
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.99");
    write(&src.join("main.go"), GO_MAIN);
    zot(
        &env,
        &["ext", "install", "--no-prepare", src.to_str().unwrap()],
    )
    .ok()
    .stderr_has("warning: hello: \"exec\" ./hello does not exist")
    .stderr_has("its build has not run; run it: zot ext prepare hello\n");
    assert!(!env.global_root().join("hello/hello").exists());
}

/// A `go` on PATH that says it is 1.22, starts a `sleep` in its group (its pid in `pid`)
/// and sleeps.
pub(crate) fn sleeping_go(env: &Env, secs: u32) -> PathBuf {
    fake_go(
        env,
        "slow-bin",
        &format!("echo compiling\n/bin/sleep {secs} >/dev/null 2>&1 &\n/bin/sleep {secs}\n"),
    )
}

/// A `go` in `work/<dir>` that says it is 1.22, answers `go env` with nothing (zot asks it
/// for GOROOT), and runs the shell text `body` for anything else, with `$out` the value of
/// its `-o`.
pub(crate) fn fake_go(env: &Env, dir: &str, body: &str) -> PathBuf {
    let bin = env.work.join(dir);
    fs::create_dir_all(&bin).unwrap();
    write_executable(
        &bin.join("go"),
        &format!(
            "#!/bin/sh\ncase \"$1\" in version) echo go version go1.22.0 linux/amd64; exit 0;; env) exit 1;; esac\nout=; prev=; for a; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n{body}"
        ),
    );
    bin
}

/// The processes running `sleep <secs>` (each test sleeps a duration of its own, so the
/// processes of a test are told apart from the others' by it, wherever their pid
/// namespace).
pub(crate) fn sleepers(secs: u32) -> Vec<i32> {
    let wanted = format!("{secs}");
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let line = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let words: Vec<&[u8]> = line.split(|&b| b == 0).collect();
            let zombie =
                fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z"));
            !zombie
                && words.len() >= 2
                && words[0].ends_with(b"sleep")
                && words[1] == wanted.as_bytes()
        })
        .collect()
}

/// No process sleeps `secs` any more (the kernel may take a moment to end them).
#[track_caller]
pub(crate) fn assert_no_sleepers(secs: u32) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !sleepers(secs).is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(
        sleepers(secs),
        Vec::<i32>::new(),
        "a process of the step outlived it"
    );
}

#[test]
fn a_step_past_its_time_limit_is_ended_with_its_whole_group() {
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.22");
    write(&src.join("main.go"), GO_MAIN);
    let bin = sleeping_go(&env, 3101);
    zot(
        &env,
        &[
            "ext",
            "install",
            "--prepare-timeout",
            "1",
            src.to_str().unwrap(),
        ],
    )
    .env("PATH", env.path_with(&bin))
    .fails(1)
    .stderr_has("was ended after the 1 s time limit (--prepare-timeout)")
    .stderr_has("hello: the step's last lines:\n    | compiling\n")
    .stderr_has("was ended after the 1 s time limit (--prepare-timeout); the whole output is in ");
    assert!(env.installed_names().is_empty());
    assert_staging_empty(&env);
    assert_no_sleepers(3101);
}

#[test]
fn a_sealed_build_sees_only_its_own_environment_and_a_private_home() {
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.22");
    write(&src.join("main.go"), GO_MAIN);
    let bin = fake_go(&env, "env-bin", "/usr/bin/env\nexit 3\n");
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .env("PATH", env.path_with(&bin))
        .env("GITHUB_TOKEN", "t0ken")
        .env("ANTHROPIC_API_KEY", "sk-ant-k3y")
        .env("AWS_SECRET_ACCESS_KEY", "aws-s3cret")
        .env("NPM_CONFIG__AUTH", "npm-auth")
        .env("DATABASE_URL", "postgres://u:pw@db/x")
        .env(
            "GIT_CONFIG_PARAMETERS",
            "'http.extraHeader'='Authorization: Bearer b3arer'",
        )
        .env("SSH_AUTH_SOCK", "/tmp/agent")
        .env("KEEP_ME", "yes")
        .fails(1)
        .stderr_has("exit status 3");
    let log = fs::read_to_string(env.home.join("logs/prepare-hello.log")).unwrap();
    for secret in [
        "t0ken",
        "sk-ant-k3y",
        "aws-s3cret",
        "npm-auth",
        "u:pw@db",
        "b3arer",
        "SSH_AUTH_SOCK",
        "KEEP_ME",
    ] {
        assert!(!log.contains(secret), "{secret} reached the build: {log}");
    }
    assert!(log.contains("GOFLAGS=-mod=readonly"), "{log}");
    assert!(log.contains("GOTOOLCHAIN=local"), "{log}");
    assert!(log.contains("GOWORK=off"), "{log}");
    assert!(log.contains("CGO_ENABLED=0"), "{log}");
    assert!(log.contains("LANG=C.UTF-8"), "{log}");
    let home = log
        .lines()
        .find_map(|l| l.strip_prefix("HOME="))
        .unwrap_or_else(|| panic!("no HOME: {log}"));
    assert!(
        Path::new(home).starts_with(env.home.join(".ext-store/staging")),
        "HOME is not a private folder in staging: {home}"
    );
    assert!(
        !log.contains(env.user_home.to_str().unwrap()),
        "the user's home reached the build: {log}"
    );
}

pub(crate) fn have_npm() -> bool {
    have(&["npm", "--version"], "npm")
}

/// An npm extension whose one dependency is `vendor/x.tgz`; both it and the extension have
/// a `postinstall` script that leaves a file behind.
pub(crate) fn npm_extension(env: &Env, lock: bool) -> PathBuf {
    let src = extension(env, "npmx", "npmx", "node");
    let pkg = env.work.join("x-package/package");
    write(
        &pkg.join("package.json"),
        r#"{"name": "x", "version": "1.0.0", "main": "index.js", "scripts": {"postinstall": "echo ran > dep-ran"}}"#,
    );
    write(&pkg.join("index.js"), "module.exports = 42;\n");
    fs::create_dir_all(src.join("vendor")).unwrap();
    pack_dependency(&pkg, &src);
    write(
        &src.join("package.json"),
        r#"{"name": "npmx", "version": "1.0.0", "dependencies": {"x": "file:vendor/x.tgz"}, "scripts": {"postinstall": "echo ran > root-ran"}}"#,
    );
    if lock {
        lock_npm(env, &src);
    }
    src
}

/// Packs the dependency folder `pkg` into `src`'s `vendor/x.tgz`.
fn pack_dependency(pkg: &Path, src: &Path) {
    let tar = Command::new("tar")
        .arg("-czf")
        .arg(src.join("vendor/x.tgz"))
        .arg("-C")
        .arg(pkg.parent().unwrap())
        .arg("package")
        .status()
        .unwrap();
    assert!(tar.success());
}

/// Writes `src`'s `package-lock.json` offline, with no script run.
fn lock_npm(env: &Env, src: &Path) {
    let made = Command::new("npm")
        .args([
            "install",
            "--package-lock-only",
            "--offline",
            "--ignore-scripts",
        ])
        .current_dir(src)
        .env("HOME", &env.user_home)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
}

/// [`npm_extension`] installed without preparing, then given a `node_modules/stale/` by hand
/// and a `state.json` of the extension's own: its source and installed folder.
pub(crate) fn unprepared_npm_with_hand_made_modules(env: &Env) -> (PathBuf, PathBuf) {
    let src = npm_extension(env, true);
    zot(
        env,
        &["ext", "install", "--no-prepare", src.to_str().unwrap()],
    )
    .ok();
    let dest = env.global_root().join("npmx");
    write(&dest.join("node_modules/stale/index.js"), "stale\n");
    write(&dest.join("state.json"), "{}\n");
    (src, dest)
}

/// [`npm_extension`] with its lock, installed offline: its source and installed folder.
fn installed_npm(env: &Env) -> (PathBuf, PathBuf) {
    let src = npm_extension(env, true);
    zot(env, &["ext", "install", "--offline", src.to_str().unwrap()]).ok();
    (src, env.global_root().join("npmx"))
}

#[test]
fn npm_ci_installs_a_locked_dependency_without_running_scripts() {
    if !have_npm() {
        return;
    }
    let env = Env::new();
    let (src, dest) = installed_npm(&env);
    assert!(dest.join("node_modules/x/index.js").is_file());
    assert!(
        !dest.join("node_modules/x/dep-ran").exists(),
        "a dependency's script ran"
    );
    assert!(
        !dest.join("root-ran").exists(),
        "the extension's own script ran"
    );
    assert!(
        !src.join("node_modules").exists(),
        "the source is left alone"
    );
}

#[test]
fn allow_scripts_runs_the_lifecycle_scripts() {
    if !have_npm() {
        return;
    }
    let env = Env::new();
    let src = npm_extension(&env, true);
    zot(
        &env,
        &[
            "ext",
            "install",
            "--offline",
            "--allow-scripts",
            src.to_str().unwrap(),
        ],
    )
    .ok();
    let dest = env.global_root().join("npmx");
    assert!(dest.join("node_modules/x/dep-ran").is_file());
    assert!(dest.join("root-ran").is_file());
}

#[test]
fn npm_dependencies_without_a_lock_are_refused() {
    let env = Env::new();
    let src = extension(&env, "npmx", "npmx", "node");
    write(
        &src.join("package.json"),
        r#"{"name": "npmx", "dependencies": {"left-pad": "^1.0.0"}}"#,
    );
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .fails(1)
        .stderr_has("installs would not be reproducible; commit a lock file or pass --no-prepare");
    assert!(env.installed_names().is_empty());
    zot(
        &env,
        &["ext", "install", "--no-prepare", src.to_str().unwrap()],
    )
    .ok();
}

#[test]
fn a_yarn_lock_without_yarn_names_both() {
    let env = Env::new();
    let src = extension(&env, "y", "y", "node");
    write(
        &src.join("package.json"),
        r#"{"dependencies": {"x": "1.0.0"}}"#,
    );
    write(&src.join("yarn.lock"), "");
    let empty = env.work.join("empty-bin");
    fs::create_dir_all(&empty).unwrap();
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .env("PATH", &empty)
        .fails(1)
        .stderr_has("yarn.lock needs yarn, which is not on PATH");
}

pub(crate) fn have_venv() -> bool {
    have(&["python3", "-c", "import venv, ensurepip"], "python3-venv")
}

/// A wheel of the module `tinydep`, written by hand (a wheel is a zip).
fn write_wheel(path: &Path) {
    let script = r#"
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("tinydep/__init__.py", "ANSWER = 42\n")
    z.writestr("tinydep-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinydep\nVersion: 1.0\n")
    z.writestr("tinydep-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("tinydep-1.0.dist-info/RECORD", "tinydep/__init__.py,,\ntinydep-1.0.dist-info/METADATA,,\ntinydep-1.0.dist-info/WHEEL,,\ntinydep-1.0.dist-info/RECORD,,\n")
"#;
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let ok = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .status()
        .unwrap();
    assert!(ok.success());
}

/// A Python extension whose one requirement is the wheel `vendor/tinydep-1.0-py3-none-any.whl`.
pub(crate) fn wheel_extension(env: &Env) -> PathBuf {
    let src = extension(env, "py", "py", "./.venv/bin/python");
    write_wheel(&src.join("vendor/tinydep-1.0-py3-none-any.whl"));
    write(
        &src.join("requirements.txt"),
        "./vendor/tinydep-1.0-py3-none-any.whl\n",
    );
    src
}

/// The venv of the installed `py` imports `tinydep`.
#[track_caller]
pub(crate) fn assert_venv_has_tinydep(env: &Env) {
    let dest = env.global_root().join("py");
    let out = Command::new(dest.join(".venv/bin/python"))
        .args(["-c", "import tinydep; print(tinydep.ANSWER)"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n", "{out:?}");
}

#[test]
fn requirements_make_a_venv_from_a_local_wheel() {
    if !have_venv() {
        return;
    }
    let env = Env::new();
    let src = wheel_extension(&env);
    zot(
        &env,
        &["ext", "install", "--offline", src.to_str().unwrap()],
    )
    .ok();
    assert_venv_has_tinydep(&env);
}

#[test]
fn a_venv_script_as_exec_is_refused_with_the_fix() {
    let env = Env::new();
    let src = extension(&env, "py", "py", ".venv/bin/tool");
    write(&src.join("requirements.txt"), "\n");
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .fails(1)
        .stderr_has(r#"set "exec" to ".venv/bin/python""#);
}

#[test]
fn a_cargo_extension_is_built_offline_and_its_binary_placed() {
    if !have(&["cargo", "--version"], "cargo") {
        return;
    }
    let env = Env::new();
    let src = extension(&env, "rs", "rs", "./bin/rs");
    write(
        &src.join("Cargo.toml"),
        "[package]\nname = \"rs\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(
        &src.join("Cargo.lock"),
        "version = 3\n\n[[package]]\nname = \"rs\"\nversion = \"0.1.0\"\n",
    );
    write(
        &src.join("src/main.rs"),
        "fn main() { println!(\"hello from rust\"); }\n",
    );
    zot(
        &env,
        &["ext", "install", "--offline", src.to_str().unwrap()],
    )
    .ok();
    let dest = env.global_root().join("rs");
    assert_eq!(output_of(&dest.join("bin/rs")), "hello from rust\n");
    assert!(!dest.join("target").exists(), "build output is not placed");
}

fn write_project_file(env: &Env, entries: &str) {
    write(
        &env.project.join(".zot/extensions.json"),
        &format!("{{\"extensions\": {{{entries}}}}}\n"),
    );
}

#[test]
fn a_project_file_asking_for_scripts_runs_them_only_with_the_users_word() {
    if !have_npm() {
        return;
    }
    let env = Env::new();
    let src = npm_extension(&env, true);
    write_project_file(
        &env,
        &format!(
            "\"npmx\": {{\"source\": \"{}\", \"allow_scripts\": true}}",
            src.display()
        ),
    );
    // A cloned project's file is someone else's word: no script runs on it alone.
    zot(&env, &["ext", "sync", "--offline"]).ok().stderr_has(
        "note: the project file asks for the lifecycle scripts of npmx (\"allow_scripts\": true); they run only with your word: zot ext sync --allow-scripts (or ZOT_EXT_ALLOW_SCRIPTS=1)",
    );
    let dest = env.project_root().join("npmx");
    assert!(dest.join("node_modules/x/index.js").is_file());
    assert!(
        !dest.join("node_modules/x/dep-ran").exists(),
        "a script ran"
    );
    assert!(!dest.join("root-ran").exists(), "a script ran");
    // The user's word, in CI's form.
    fs::remove_dir_all(&dest).unwrap();
    zot(&env, &["ext", "sync", "--offline"])
        .env("ZOT_EXT_ALLOW_SCRIPTS", "1")
        .ok()
        .stderr_has("npmx: lifecycle scripts run (sealed), as --allow-scripts allows and the project file asks");
    assert!(dest.join("node_modules/x/dep-ran").is_file());
    assert!(dest.join("root-ran").is_file());
}

#[test]
fn sync_leaves_an_entry_with_prepare_false_as_fetched() {
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.99");
    write(&src.join("main.go"), GO_MAIN);
    write_project_file(
        &env,
        &format!(
            "\"hello\": {{\"source\": \"{}\", \"prepare\": false}}",
            src.display()
        ),
    );
    zot(&env, &["ext", "sync"]).ok();
    assert!(env.project_root().join("hello/go.mod").is_file());
    assert!(!env.project_root().join("hello/hello").exists());
}

#[test]
fn add_records_no_prepare_and_allow_scripts_in_the_project_file() {
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.99");
    write(&src.join("main.go"), GO_MAIN);
    zot(
        &env,
        &[
            "ext",
            "add",
            "--no-prepare",
            "--allow-scripts",
            src.to_str().unwrap(),
        ],
    )
    .ok();
    let text = fs::read_to_string(env.project.join(".zot/extensions.json")).unwrap();
    assert!(text.contains("\"prepare\": false"), "{text}");
    assert!(text.contains("\"allow_scripts\": true"), "{text}");
}

#[test]
fn update_with_a_changed_lock_gets_fresh_node_modules_and_a_record_of_it() {
    if !have_npm() {
        return;
    }
    let env = Env::new();
    let src = npm_extension(&env, true);
    // The first version of the dependency has a file the second one drops.
    let pkg = env.work.join("x-package/package");
    write(&pkg.join("stale.js"), "old\n");
    let pack = |version: &str| {
        write(
            &pkg.join("package.json"),
            &format!(r#"{{"name": "x", "version": "{version}", "main": "index.js"}}"#),
        );
        pack_dependency(&pkg, &src);
        fs::remove_file(src.join("package-lock.json")).unwrap();
        lock_npm(&env, &src);
    };
    pack("1.0.0");
    zot(
        &env,
        &["ext", "install", "--offline", src.to_str().unwrap()],
    )
    .ok();
    let dest = env.global_root().join("npmx");
    assert!(dest.join("node_modules/x/stale.js").is_file());
    let record = || -> serde_json::Value {
        let text = fs::read_to_string(env.home.join(".ext-store/sources/npmx.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let first = record();
    assert_eq!(first["prepared"]["tool"], "npm", "{first}");
    assert_eq!(
        first["prepared"]["lock_file"], "package-lock.json",
        "{first}"
    );
    assert_eq!(first["prepared"]["scripts"], false, "{first}");
    assert_eq!(first["prepared"]["outputs"][0], "node_modules", "{first}");

    fs::remove_file(pkg.join("stale.js")).unwrap();
    pack("2.0.0");
    zot(&env, &["ext", "update", "--offline", "npmx"]).ok();
    assert!(dest.join("node_modules/x/index.js").is_file());
    assert!(
        !dest.join("node_modules/x/stale.js").exists(),
        "the old node_modules was carried over"
    );
    let second = record();
    assert_ne!(
        first["prepared"]["lock_sha256"], second["prepared"]["lock_sha256"],
        "{second}"
    );
}

/// The file list of `name` in the global scope, as JSON.
fn file_list(env: &Env, name: &str) -> serde_json::Value {
    let text = fs::read_to_string(env.home.join(format!(".ext-store/files/{name}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_prepared_install_lists_its_outputs_apart_and_hashes_as_the_source() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.19");
    write(&src.join("main.go"), GO_MAIN);
    zot(&env, &["ext", "install", src.to_str().unwrap()]).ok();
    let list = file_list(&env, "hello");
    assert_eq!(list["prepared"], serde_json::json!(["hello"]), "{list}");
    let listed: Vec<&str> = list["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(listed.contains(&"hello"), "{listed:?}");
    let prepared = list["tree_hash"].clone();
    // The same source placed as fetched hashes the same: the lock holds on any machine.
    zot(
        &env,
        &[
            "ext",
            "install",
            "--force",
            "--no-prepare",
            src.to_str().unwrap(),
        ],
    )
    .ok();
    let bare = file_list(&env, "hello");
    assert!(bare.get("prepared").is_none(), "{bare}");
    assert_eq!(bare["tree_hash"], prepared);
}

#[test]
fn install_force_prepares_afresh_and_carries_only_what_the_extension_wrote() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.19");
    write(&src.join("main.go"), GO_MAIN);
    zot(&env, &["ext", "install", src.to_str().unwrap()]).ok();
    let dest = env.global_root().join("hello");
    write(&dest.join("state.json"), "{}\n");
    write(
        &src.join("main.go"),
        &GO_MAIN.replace("hello from go", "hello again"),
    );
    zot(&env, &["ext", "install", "--force", src.to_str().unwrap()]).ok();
    assert_eq!(output_of(&dest.join("hello")), "hello again\n");
    assert_eq!(fs::read_to_string(dest.join("state.json")).unwrap(), "{}\n");
    // Placed as fetched, the new version has no program: the old one is not carried over.
    zot(
        &env,
        &[
            "ext",
            "install",
            "--force",
            "--no-prepare",
            src.to_str().unwrap(),
        ],
    )
    .ok();
    assert!(
        !dest.join("hello").exists(),
        "the old program was carried over"
    );
    assert!(dest.join("state.json").is_file());
    assert_staging_empty(&env);
}

#[test]
fn verify_names_a_deleted_or_edited_file_in_node_modules_as_a_prepared_output() {
    if !have_npm() {
        return;
    }
    let env = Env::new();
    let (_, dest) = installed_npm(&env);
    zot(&env, &["ext", "verify"])
        .ok()
        .stdout_is("npmx (global): ok\n");
    // What the extension writes inside node_modules at run time is its own.
    write(&dest.join("node_modules/.cache/x"), "cached\n");
    fs::remove_file(dest.join("node_modules/x/index.js")).unwrap();
    write(&dest.join("node_modules/x/package.json"), "{}\n");
    zot(&env, &["ext", "verify"])
        .fails(1)
        .stdout_is(
            "npmx (global): prepared outputs modified\n  prepared output changed: node_modules/x/package.json\n  prepared output removed: node_modules/x/index.js\n",
        );
    let done = zot(&env, &["ext", "verify", "--json"]).fails(1);
    let report = &done.extensions()[0];
    assert_eq!(report["status"], "prepared-modified", "{report}");
    assert_eq!(report["changed"], serde_json::json!([]), "{report}");
    assert_eq!(
        report["prepared_removed"],
        serde_json::json!(["node_modules/x/index.js"]),
        "{report}"
    );
    // A placed file edited as well: modified, each list naming its own.
    write(&dest.join("package.json"), "{}\n");
    zot(&env, &["ext", "verify"])
        .fails(1)
        .stdout_has("npmx (global): modified\n  changed: package.json\n  prepared output changed: node_modules/x/package.json\n");
    fs::remove_dir_all(dest.join("node_modules")).unwrap();
    zot(&env, &["ext", "verify"])
        .fails(1)
        .stdout_has("  prepared output removed: node_modules/\n");
}

/// The project's lock file, as JSON.
fn project_lock(env: &Env) -> serde_json::Value {
    let text = fs::read_to_string(env.project.join(".zot/extensions.lock")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn write_project_lock(env: &Env, lock: &serde_json::Value) {
    let text = serde_json::to_string_pretty(lock).unwrap() + "\n";
    fs::write(env.project.join(".zot/extensions.lock"), text).unwrap();
}

/// A synced npm extension in the project scope: its lock entry's `prepared`.
fn synced_npm(env: &Env) -> serde_json::Value {
    let src = npm_extension(env, true);
    write_project_file(
        env,
        &format!("\"npmx\": {{\"source\": \"{}\"}}", src.display()),
    );
    zot(env, &["ext", "sync", "--offline"]).ok();
    let lock = project_lock(env);
    lock["extensions"]["npmx"]["prepared"].clone()
}

#[test]
fn sync_locks_the_step_and_the_dependency_lock_files_hash() {
    if !have_npm() {
        return;
    }
    let env = Env::new();
    let prepared = synced_npm(&env);
    // Run with --offline, locked as the step any machine runs.
    assert_eq!(
        prepared["step"], "npm ci --ignore-scripts --omit=dev --no-audit --no-fund",
        "{prepared}"
    );
    assert_eq!(prepared["lock_file"], "package-lock.json", "{prepared}");
    let record = fs::read_to_string(env.project.join(".zot/.ext-store/sources/npmx.json"))
        .map(|t| serde_json::from_str::<serde_json::Value>(&t).unwrap())
        .unwrap();
    assert_eq!(prepared["lock_sha256"], record["prepared"]["lock_sha256"]);
    zot(&env, &["ext", "sync", "--frozen", "--offline"])
        .ok()
        .stdout_has("= npmx up to date");
    // A lock written before it kept the step is still valid, and gains it on the next sync.
    let mut lock = project_lock(&env);
    lock["extensions"]["npmx"]
        .as_object_mut()
        .unwrap()
        .remove("prepared");
    write_project_lock(&env, &lock);
    zot(&env, &["ext", "sync", "--frozen", "--offline"])
        .ok()
        .stdout_has("= npmx up to date");
    zot(&env, &["ext", "sync", "--offline"]).ok();
    assert_eq!(
        project_lock(&env)["extensions"]["npmx"]["prepared"],
        prepared
    );
}

#[test]
fn sync_frozen_refuses_a_dependency_lock_file_hash_other_than_locked() {
    if !have_npm() {
        return;
    }
    let env = Env::new();
    let prepared = synced_npm(&env);
    let real = prepared["lock_sha256"].as_str().unwrap().to_string();
    let mut lock = project_lock(&env);
    let other = "0".repeat(64);
    lock["extensions"]["npmx"]["prepared"]["lock_sha256"] = other.clone().into();
    write_project_lock(&env, &lock);
    let record = env.project.join(".zot/.ext-store/sources/npmx.json");
    let before = fs::read_to_string(&record).unwrap();
    let lock_path = env.project.join(".zot/extensions.lock");
    zot(&env, &["ext", "sync", "--frozen", "--offline"])
        .fails(1)
        .stderr_has(&format!(
            "npmx: preparing differs from {}: package-lock.json has SHA-256 {real}, the lock says {other}; nothing was changed",
            lock_path.display()
        ))
        .stderr_has("1 of 1 extensions did not match the lock (see above); nothing was changed");
    assert_eq!(fs::read_to_string(&record).unwrap(), before);
    assert!(
        env.project_root()
            .join("npmx/node_modules/x/index.js")
            .is_file()
    );
    let staging = env.project.join(".zot/.ext-store/staging");
    let left: Vec<_> = fs::read_dir(&staging)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left in staging: {left:?}");
    // Without --frozen, sync installs it again and locks what it ran.
    zot(&env, &["ext", "sync", "--offline"])
        .ok()
        .stdout_has("~ npmx updated");
    assert_eq!(
        project_lock(&env)["extensions"]["npmx"]["prepared"],
        prepared
    );
}

#[test]
fn an_edited_prepared_output_is_saved_never_kept_over_the_new_build() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.19");
    write(&src.join("main.go"), GO_MAIN);
    zot(&env, &["ext", "install", src.to_str().unwrap()]).ok();
    let dest = env.global_root().join("hello");
    write(&dest.join("hello"), "#!/bin/sh\necho patched\n");
    zot(
        &env,
        &[
            "ext",
            "install",
            "--force",
            "--keep-local",
            src.to_str().unwrap(),
        ],
    )
    .ok();
    assert_eq!(output_of(&dest.join("hello")), "hello from go\n");
    let backups = env.home.join(".ext-store/backup/hello");
    let saved: Vec<_> = fs::read_dir(&backups)
        .unwrap()
        .flatten()
        .map(|e| fs::read_to_string(e.path().join("hello")).unwrap())
        .collect();
    assert_eq!(saved, ["#!/bin/sh\necho patched\n"]);
}

/// A `node_modules/` installed by hand in a copy placed without preparing is not merged into
/// the fresh one `install --force` prepares (nor saved file by file); the extension's own
/// files are still carried.
#[test]
fn install_force_does_not_mix_a_hand_made_node_modules_into_the_fresh_one() {
    if !have_npm() {
        return;
    }
    let env = Env::new();
    let (src, dest) = unprepared_npm_with_hand_made_modules(&env);
    let src = src.to_str().unwrap();
    zot(&env, &["ext", "install", "--force", "--offline", src])
        .ok()
        .stdout_lacks("node_modules");
    assert!(dest.join("node_modules/x/index.js").is_file());
    assert!(
        !dest.join("node_modules/stale").exists(),
        "the old node_modules/ was mixed into the new one"
    );
    assert_eq!(fs::read_to_string(dest.join("state.json")).unwrap(), "{}\n");
    zot(&env, &["ext", "verify", "npmx"]).ok();
}

/// The same for `update`: the new version's step makes `node_modules/` afresh, and the one
/// installed by hand goes with the old copy.
#[test]
fn update_does_not_mix_a_hand_made_node_modules_into_the_fresh_one() {
    if !have_npm() {
        return;
    }
    let env = Env::new();
    let (src, dest) = unprepared_npm_with_hand_made_modules(&env);
    write(&src.join("new.txt"), "new\n");
    zot(&env, &["ext", "update", "npmx", "--offline"])
        .ok()
        .stdout_lacks("node_modules");
    assert!(dest.join("new.txt").is_file());
    assert!(dest.join("node_modules/x/index.js").is_file());
    assert!(!dest.join("node_modules/stale").exists());
    assert_eq!(fs::read_to_string(dest.join("state.json")).unwrap(), "{}\n");
}

#[test]
fn a_daemon_a_build_starts_does_not_outlive_it_nor_hang_the_install() {
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.22");
    write(&src.join("main.go"), GO_MAIN);
    // The build "succeeds" and leaves a process in a session of its own (out of the step's
    // group, so a group kill misses it) that keeps the output pipe open.
    let bin = fake_go(
        &env,
        "daemon-bin",
        "echo building\nsetsid /bin/sleep 3102 &\nwhile [ -z \"$(pgrep -f 'sleep 3102')\" ]; do /bin/sleep 0.01; done\nprintf '#!/bin/sh\\n' > \"$out\"\nchmod +x \"$out\"\n",
    );
    let mut child = zot(&env, &["ext", "install", "-q", src.to_str().unwrap()])
        .env("PATH", env.path_with(&bin))
        .spawn_silent();
    // Far longer than the grace zot gives the pipe: a hang, not a slow machine.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let status = status.expect("zot ext install hung on the step's output pipe");
    assert!(status.success(), "{status:?}");
    assert!(env.global_root().join("hello/hello").is_file());
    assert_no_sleepers(3102);
}

/// A `go` on PATH that says it is 1.22 and "builds" by writing a script at `-o`.
fn quick_go(env: &Env) -> PathBuf {
    fake_go(
        env,
        "quick-bin",
        "echo building\nprintf '#!/bin/sh\\n' > \"$out\"\nchmod +x \"$out\"\n",
    )
}

/// A project whose file names a Go extension, and a quick `go` for it; returns PATH.
fn go_project(env: &Env) -> String {
    let src = go_extension(env, "hello", "1.22");
    write(&src.join("main.go"), GO_MAIN);
    write_project_file(
        env,
        &format!("\"hello\": {{\"source\": \"{}\"}}", src.display()),
    );
    let path = env.path_with(&quick_go(env));
    path.to_str().unwrap().to_string()
}

#[test]
fn sync_shows_on_a_terminal_which_extensions_are_being_prepared() {
    let env = Env::new();
    let path = go_project(&env);
    let shown =
        env.zot_in_terminal_with(&["ext", "sync"], "", &[("TERM", "xterm"), ("PATH", &path)]);
    shown.success();
    // Drawn when the step starts, erased when it ends.
    shown.stdout_has("\r\x1b[2Kpreparing hello (go build)…\r\x1b[2K");
    assert!(env.project_root().join("hello/hello").is_file());
}

#[test]
fn sync_shows_no_preparing_line_on_a_pipe_or_with_quiet_or_json() {
    let env = Env::new();
    let path = go_project(&env);
    zot(&env, &["ext", "sync"])
        .env("PATH", &path)
        .ok()
        .stderr_lacks("preparing hello");
    for flag in ["-q", "--json"] {
        let env = Env::new();
        let path = go_project(&env);
        env.zot_in_terminal_with(
            &["ext", "sync", flag],
            "",
            &[("TERM", "xterm"), ("PATH", &path)],
        )
        .success()
        .stdout_lacks("preparing");
        assert!(env.project_root().join("hello/hello").is_file());
    }
}

#[test]
fn the_live_line_of_a_step_fits_the_terminal() {
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.22");
    write(&src.join("main.go"), GO_MAIN);
    let long = "x".repeat(200);
    let bin = fake_go(
        &env,
        "long-bin",
        &format!("echo {long}\n/bin/sleep 0.7\nprintf '#!/bin/sh\\n' > \"$out\"\n"),
    );
    let path = env.path_with(&bin);
    let done = env.zot_in_terminal_with(
        &["ext", "install", src.to_str().unwrap()],
        "",
        &[("TERM", "xterm"), ("PATH", path.to_str().unwrap())],
    );
    assert_eq!(done.code, 0, "{done:?}");
    let drawn: Vec<&str> = done.stdout.split("\r\x1b[2K").skip(1).collect();
    assert!(
        drawn.iter().any(|d| d.starts_with("hello: go build: ")),
        "no live line: {:?}",
        done.stdout
    );
    for line in drawn.iter().filter(|d| d.starts_with("hello: go build")) {
        let first = line.split(['\r', '\n']).next().unwrap_or("");
        assert!(
            first.chars().count() < 80,
            "{} columns: {first:?}",
            first.chars().count()
        );
    }
}
