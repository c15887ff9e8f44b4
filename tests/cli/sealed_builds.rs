//! Installing runs no stranger's code outside the seal: hostile extensions, each trying one
//! way out, against the real binary. A build runs sealed (no write, read or connection
//! outside, no secret in its environment or in other processes', nothing alive after it,
//! with and without namespaces); fetching runs no code of the extension's (Python's
//! shadowing modules, a shipped `.venv`, an in-tree build backend, package-manager
//! configuration, each tool driven with its own version's flags); links out of the
//! extension are refused before a step runs and after it; unsafe modes and special files a
//! step leaves are not installed; `--offline` cuts the network.

use std::fs;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::prepare::{
    GO_MAIN, assert_no_sleepers, assert_staging_empty, assert_venv_has_tinydep, extension, fake_go,
    go_extension, have, have_go, have_npm, have_venv, sleepers, sleeping_go, wheel_extension,
    write, zot,
};
use crate::support::{Env, write_executable};

/// A listener on 127.0.0.1 that a sealed step must not reach.
struct Bait(TcpListener);

impl Bait {
    fn new() -> Bait {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Bait(listener)
    }

    fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }

    /// Whether anything connected.
    fn reached(&self) -> bool {
        match self.0.accept() {
            Ok(_) => true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(e) => panic!("{e}"),
        }
    }
}

/// A Go build that tries every way out, then "builds" `$out`. It writes a file in the
/// user's home, reads their `.netrc`, connects to `bait`, reads every process's
/// environment for `zz-s3cret`, and leaves a daemon sleeping 3201 (or `sleep`).
fn escaping_go(env: &Env, bait: &Bait, sleep: u32) -> PathBuf {
    let home = env.user_home.display();
    fake_go(
        env,
        "escape-bin",
        &format!(
            "echo x > {home}/planted 2>/dev/null && echo wrote-home\n\
             cat {home}/.netrc 2>/dev/null\n\
             /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' 2>/dev/null && echo connected\n\
             cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c zz-s3cret | sed 's/^/environ-hits=/'\n\
             setsid /bin/sleep {sleep} >/dev/null 2>&1 &\n\
             echo inside > made-inside\n\
             printf '#!/bin/sh\\n' > \"$out\"\nchmod +x \"$out\"\n",
            port = bait.port()
        ),
    )
}

fn assert_held(env: &Env, bait: &Bait, sleep: u32) {
    let log = fs::read_to_string(env.home.join("logs/prepare-hello.log")).unwrap();
    assert!(!env.user_home.join("planted").exists(), "{log}");
    assert!(
        !log.contains("wrote-home") && !log.contains("n3trc"),
        "{log}"
    );
    assert!(!log.contains("connected") && !bait.reached(), "{log}");
    assert!(log.contains("environ-hits=0"), "{log}");
    let dest = env.global_root().join("hello");
    assert!(
        dest.join("hello").is_file(),
        "the build's own output is placed"
    );
    assert!(
        dest.join("made-inside").is_file(),
        "the build writes in its copy"
    );
    assert_no_sleepers(sleep);
}

fn run_escaping_build(env: &Env, bait: &Bait, sleep: u32, namespaces: bool) {
    let src = go_extension(env, "hello", "1.22");
    write(&src.join("main.go"), GO_MAIN);
    write(
        &env.user_home.join(".netrc"),
        "machine x login u password n3trc\n",
    );
    let bin = escaping_go(env, bait, sleep);
    let mut run = zot(env, &["ext", "install", src.to_str().unwrap()])
        .env("PATH", env.path_with(&bin))
        .env("SECRET_FOR_THE_TEST", "zz-s3cret");
    if !namespaces {
        run = run.env("ZOT_EXT_SEAL_NAMESPACES", "0");
    }
    run.ok();
}

#[test]
fn a_sealed_build_writes_reads_and_connects_nowhere_and_leaves_nothing_running() {
    let env = Env::new();
    let bait = Bait::new();
    run_escaping_build(&env, &bait, 3201, true);
    assert_held(&env, &bait, 3201);
}

#[test]
fn without_namespaces_landlock_and_the_subreaper_hold_the_same_line() {
    let env = Env::new();
    let bait = Bait::new();
    run_escaping_build(&env, &bait, 3202, false);
    assert_held(&env, &bait, 3202);
}

#[test]
fn a_failed_step_leaves_no_daemon_behind_to_edit_the_installed_copy() {
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.22");
    write(&src.join("main.go"), GO_MAIN);
    zot(
        &env,
        &["ext", "install", "--no-prepare", src.to_str().unwrap()],
    )
    .ok();
    let before = fs::read_to_string(env.global_root().join("hello/main.go")).unwrap();
    let bin = fake_go(
        &env,
        "daemon-bin",
        "setsid /bin/sh -c '/bin/sleep 3203; echo edited >> main.go' >/dev/null 2>&1 &\nexit 1\n",
    );
    zot(&env, &["ext", "prepare", "hello"])
        .env("PATH", env.path_with(&bin))
        .fails(1)
        .stderr_has("nothing was changed");
    assert_no_sleepers(3203);
    assert_eq!(
        fs::read_to_string(env.global_root().join("hello/main.go")).unwrap(),
        before
    );
    zot(&env, &["ext", "verify", "hello"]).ok();
}

#[test]
fn kill_9_of_zot_mid_build_leaves_nothing_of_the_step_running() {
    for namespaces in [true, false] {
        let secs = if namespaces { 3204 } else { 3205 };
        let env = Env::new();
        let src = go_extension(&env, "hello", "1.22");
        write(&src.join("main.go"), GO_MAIN);
        let bin = sleeping_go(&env, secs);
        let mut run =
            zot(&env, &["ext", "install", src.to_str().unwrap()]).env("PATH", env.path_with(&bin));
        if !namespaces {
            run = run.env("ZOT_EXT_SEAL_NAMESPACES", "0");
        }
        let mut child = run.spawn_silent();
        let until = Instant::now() + Duration::from_secs(30);
        while sleepers(secs).len() < 2 {
            assert!(Instant::now() < until, "the step never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert_no_sleepers(secs);
    }
}

#[test]
fn a_link_out_of_the_extension_or_where_a_step_writes_is_refused_before_it_runs() {
    let env = Env::new();
    let outside = env.user_home.join(".local/bin");
    fs::create_dir_all(&outside).unwrap();
    // exec ./bin/git with bin -> ~/.local/bin: go build would plant ~/.local/bin/git.
    let src = extension(&env, "hello", "hello", "./bin/git");
    write(&src.join("go.mod"), "module example.com/hello\n\ngo 1.19\n");
    write(&src.join("main.go"), GO_MAIN);
    symlink(&outside, src.join("bin")).unwrap();
    let bin = fake_go(&env, "plant-bin", "echo planted > \"$out\"\n");
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .env("PATH", env.path_with(&bin))
        .fails(1)
        .stderr_has("bin is a link out of the extension (to ")
        .stderr_has("remove it from the source, or pass --no-prepare");
    assert!(!outside.join("git").exists());
    // A link inside the extension, where the build writes, is refused too.
    fs::remove_file(src.join("bin")).unwrap();
    fs::create_dir_all(src.join("real")).unwrap();
    symlink("real", src.join("bin")).unwrap();
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .env("PATH", env.path_with(&bin))
        .fails(1)
        .stderr_has("bin is a link where preparing writes (to real)");
    assert_staging_empty(&env);
}

#[test]
fn a_node_modules_link_to_another_folder_is_never_emptied() {
    if !have_npm() {
        return;
    }
    let env = Env::new();
    let src = crate::prepare::npm_extension(&env, true);
    let victim = env.user_home.join("victim");
    write(&victim.join("precious.txt"), "keep\n");
    symlink(&victim, src.join("node_modules")).unwrap();
    zot(
        &env,
        &["ext", "install", "--offline", src.to_str().unwrap()],
    )
    .fails(1)
    .stderr_has("node_modules is a link out of the extension");
    assert_eq!(
        fs::read_to_string(victim.join("precious.txt")).unwrap(),
        "keep\n"
    );
}

#[test]
fn a_step_leaves_no_unsafe_mode_and_no_special_file_in_the_copy() {
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.22");
    write(&src.join("main.go"), GO_MAIN);
    let bin = fake_go(
        &env,
        "modes-bin",
        "chmod 6777 main.go\nmkdir open && chmod 777 open\necho x > open/f && chmod 4755 open/f\nprintf '#!/bin/sh\\n' > \"$out\"\nchmod 6777 \"$out\"\n",
    );
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .env("PATH", env.path_with(&bin))
        .ok();
    let dest = env.global_root().join("hello");
    let mode = |rel: &str| fs::metadata(dest.join(rel)).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode("main.go"), 0o644, "a listed file keeps its mode");
    assert_eq!(mode("open"), 0o755);
    assert_eq!(mode("open/f"), 0o755);
    assert_eq!(mode("hello"), 0o755);
    zot(&env, &["ext", "verify", "hello"]).ok();
    // A FIFO the step makes is refused (a reader of the copy would block on it).
    let fifo = fake_go(
        &env,
        "fifo-bin",
        "mkfifo pipe\nprintf '#!/bin/sh\\n' > \"$out\"\n",
    );
    zot(&env, &["ext", "install", "--force", src.to_str().unwrap()])
        .env("PATH", env.path_with(&fifo))
        .fails(1)
        .stderr_has("preparing made pipe a special file");
    assert!(!dest.join("pipe").exists());
}

#[test]
fn python_modules_in_the_extension_do_not_shadow_venv_or_pip() {
    if !have_venv() {
        return;
    }
    let env = Env::new();
    let src = wheel_extension(&env);
    let marker = env.user_home.join("shadowed");
    let evil = format!(
        "open({:?}, 'w').write('ran')\nraise SystemExit(0)\n",
        marker.display().to_string()
    );
    write(&src.join("venv.py"), &evil);
    write(&src.join("pip/__init__.py"), &evil);
    write(&src.join("pip/__main__.py"), &evil);
    zot(
        &env,
        &["ext", "install", "--offline", src.to_str().unwrap()],
    )
    .ok();
    assert!(!marker.exists(), "the extension's venv.py or pip/ ran");
    assert_venv_has_tinydep(&env);
}

#[test]
fn a_venv_shipped_with_the_source_is_refused_with_the_fix() {
    let env = Env::new();
    let src = extension(&env, "py", "py", "./.venv/bin/python");
    write(&src.join("requirements.txt"), "\n");
    write(
        &src.join(".venv/lib/python3.11/site-packages/evil.pth"),
        "import os; os.system('touch /tmp/pwned')\n",
    );
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .fails(1)
        .stderr_has("the extension ships a .venv/, which preparing would run")
        .stderr_has("delete .venv from the source, or pass --no-prepare");
}

#[test]
fn requirements_that_build_from_source_are_refused_naming_the_line() {
    if !have_venv() {
        return;
    }
    let env = Env::new();
    let src = extension(&env, "py", "py", "./.venv/bin/python");
    let marker = env.user_home.join("backend-ran");
    // An in-tree build backend needs nothing from an index: pip would run it offline.
    write(
        &src.join("dep/pyproject.toml"),
        "[build-system]\nrequires = []\nbuild-backend = \"evil\"\nbackend-path = [\".\"]\n",
    );
    write(
        &src.join("dep/evil.py"),
        &format!(
            "open({:?}, 'w').write('ran')\ndef build_wheel(*a, **k): raise SystemExit(1)\n",
            marker.display().to_string()
        ),
    );
    write(&src.join("requirements.txt"), "# deps\n./dep\n");
    zot(&env, &["ext", "install", "--offline", src.to_str().unwrap()])
        .fails(1)
        .stderr_has("requirements.txt:2: \"./dep\": a local folder or source archive is built, which runs its build backend (its code) at install")
        .stderr_has("--allow-scripts --no-sandbox");
    assert!(!marker.exists(), "the build backend ran");
    for (line, said) in [
        ("-e .", "an editable install builds the package"),
        (
            "--find-links https://example.com/w/",
            "an index or link page is fetched from the network, which --offline cannot do",
        ),
    ] {
        write(&src.join("requirements.txt"), &format!("{line}\n"));
        zot(
            &env,
            &["ext", "install", "--offline", src.to_str().unwrap()],
        )
        .fails(1)
        .stderr_has(&format!("requirements.txt:1: \"{line}\": {said}"));
    }
}

/// A `node_modules`-less npm extension whose dependency comes from the local git
/// repository it makes; its `.npmrc` names a `git` of its own.
fn npm_with_git_dependency(env: &Env, marker: &Path) -> PathBuf {
    let repo = env.work.join("y-repo");
    write(
        &repo.join("package.json"),
        r#"{"name": "y", "version": "1.0.0", "main": "index.js"}"#,
    );
    write(&repo.join("index.js"), "module.exports = 7;\n");
    let git = |args: &[&str], dir: &Path| {
        let done = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@x")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@x")
            .output()
            .unwrap();
        assert!(done.status.success(), "{done:?}");
    };
    git(&["init", "-q", "-b", "main"], &repo);
    git(&["add", "."], &repo);
    git(&["commit", "-qm", "y"], &repo);
    let src = extension(env, "npmx", "npmx", "node");
    write(
        &src.join("package.json"),
        &format!(
            r#"{{"name": "npmx", "version": "1.0.0", "dependencies": {{"y": "git+file://{}"}}}}"#,
            repo.display()
        ),
    );
    lock_npm_online(env, &src);
    write_executable(
        &src.join("evilgit"),
        &format!(
            "#!/bin/sh\necho ran > {}\nexec git \"$@\"\n",
            marker.display()
        ),
    );
    write(&src.join(".npmrc"), "git=./evilgit\n");
    src
}

/// `npm install --package-lock-only`, allowed to run git (the dependency is a local repo).
fn lock_npm_online(env: &Env, src: &Path) {
    let made = Command::new("npm")
        .args(["install", "--package-lock-only", "--ignore-scripts"])
        .current_dir(src)
        .env("HOME", &env.user_home)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
}

#[test]
fn an_npmrc_in_the_extension_names_no_program_npm_runs() {
    if !have_npm() {
        return;
    }
    let env = Env::new();
    let marker = env.user_home.join("evilgit-ran");
    let src = npm_with_git_dependency(&env, &marker);
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .env("HOME", &env.user_home)
        .ok();
    assert!(!marker.exists(), "npm ran the extension's git");
    let dest = env.global_root().join("npmx");
    assert!(dest.join("node_modules/y/index.js").is_file());
    assert_eq!(
        fs::read_to_string(dest.join(".npmrc")).unwrap(),
        "git=./evilgit\n",
        "the file is put back"
    );
    let log = fs::read_to_string(env.home.join("logs/prepare-npmx.log")).unwrap();
    assert!(log.contains("# set aside while preparing"), "{log}");
    // With --offline a git dependency cannot be had; said before npm runs.
    zot(
        &env,
        &[
            "ext",
            "install",
            "--force",
            "--offline",
            src.to_str().unwrap(),
        ],
    )
    .fails(1)
    .stderr_has("is fetched from git (git+file://")
    .stderr_has("which --offline cannot do");
}

/// A `yarn` on PATH that says it is `version`, logs its arguments (and whether the
/// extension's `.yarnrc` is there) into `args.log` in its working folder, and makes a
/// `node_modules/`.
fn fake_yarn(env: &Env, version: &str) -> PathBuf {
    let bin = env.work.join(format!("yarn-{version}"));
    fs::create_dir_all(&bin).unwrap();
    write_executable(
        &bin.join("yarn"),
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo {version}; exit 0; fi\necho \"$@\" > args.log\n[ -e .yarnrc ] && echo saw-yarnrc >> args.log\necho \"linker=$YARN_NODE_LINKER scripts=$YARN_ENABLE_SCRIPTS\" >> args.log\nmkdir -p node_modules\n"
        ),
    );
    bin
}

#[test]
fn yarn_is_driven_with_its_own_majors_flags_and_without_the_extensions_yarnrc() {
    let env = Env::new();
    let src = extension(&env, "y", "y", "node");
    write(
        &src.join("package.json"),
        r#"{"dependencies": {"x": "1.0.0"}}"#,
    );
    write(&src.join("yarn.lock"), "# yarn lockfile v1\n");
    write(&src.join(".yarnrc"), "yarn-path \"./evil.js\"\n");
    write(
        &src.join(".yarnrc.yml"),
        "nodeLinker: node-modules\nyarnPath: ./evil.cjs\n",
    );
    for (version, flags) in [
        (
            "1.22.22",
            "install --frozen-lockfile --production --ignore-scripts --non-interactive\n",
        ),
        ("4.1.0", "install --immutable --mode=skip-build\n"),
    ] {
        zot(&env, &["ext", "install", "--force", src.to_str().unwrap()])
            .env("PATH", env.path_with(&fake_yarn(&env, version)))
            .ok();
        let args = fs::read_to_string(env.global_root().join("y/args.log")).unwrap();
        assert!(args.starts_with(flags), "yarn {version}: {args}");
        assert!(!args.contains("saw-yarnrc"), "yarn {version}: {args}");
        if version.starts_with('4') {
            assert!(args.contains("linker=node-modules scripts=false"), "{args}");
        }
        assert!(env.global_root().join("y/.yarnrc").is_file(), "put back");
    }
}

#[test]
fn pnpm_runs_without_the_extensions_hooks_file() {
    let env = Env::new();
    let src = extension(&env, "p", "p", "node");
    write(
        &src.join("package.json"),
        r#"{"dependencies": {"x": "1.0.0"}}"#,
    );
    write(&src.join("pnpm-lock.yaml"), "lockfileVersion: '9.0'\n");
    write(
        &src.join(".pnpmfile.cjs"),
        "require('fs').writeFileSync('/tmp/x','')\n",
    );
    let bin = env.work.join("pnpm-bin");
    fs::create_dir_all(&bin).unwrap();
    write_executable(
        &bin.join("pnpm"),
        "#!/bin/sh\necho \"$@\" > args.log\n[ -e .pnpmfile.cjs ] && echo saw-hooks >> args.log\nmkdir -p node_modules\n",
    );
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .env("PATH", env.path_with(&bin))
        .ok();
    let args = fs::read_to_string(env.global_root().join("p/args.log")).unwrap();
    assert!(
        args.starts_with("install --frozen-lockfile --prod --ignore-scripts --ignore-pnpmfile\n"),
        "{args}"
    );
    assert!(!args.contains("saw-hooks"), "{args}");
}

#[test]
fn offline_fetching_runs_with_the_network_cut_and_online_fetching_keeps_it() {
    let env = Env::new();
    let bait = Bait::new();
    let src = extension(&env, "n", "n", "node");
    write(
        &src.join("package.json"),
        r#"{"dependencies": {"x": "1.0.0"}}"#,
    );
    write(&src.join("package-lock.json"), "{}\n");
    let bin = env.work.join("npm-bin");
    fs::create_dir_all(&bin).unwrap();
    write_executable(
        &bin.join("npm"),
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 10.0.0; exit 0; fi\n/bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/{}' 2>/dev/null && echo connected > reached\nmkdir -p node_modules\n",
            bait.port()
        ),
    );
    zot(
        &env,
        &["ext", "install", "--offline", src.to_str().unwrap()],
    )
    .env("PATH", env.path_with(&bin))
    .ok();
    assert!(!bait.reached(), "an --offline fetch reached the network");
    assert!(!env.global_root().join("n/reached").exists());
    zot(&env, &["ext", "install", "--force", src.to_str().unwrap()])
        .env("PATH", env.path_with(&bin))
        .ok();
    assert!(
        env.global_root().join("n/reached").exists(),
        "fetching keeps the network"
    );
}

#[test]
fn a_cargo_build_runs_neither_the_extensions_cargo_config_nor_its_toolchain_file_and_its_build_script_is_sealed()
 {
    if !have(&["cargo", "--version"], "cargo") {
        return;
    }
    let env = Env::new();
    let bait = Bait::new();
    let src = extension(&env, "rs", "rs", "./bin/rs");
    let marker = env.user_home.join("wrapper-ran");
    write(
        &src.join("Cargo.toml"),
        "[package]\nname = \"rs\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(
        &src.join("Cargo.lock"),
        "version = 3\n\n[[package]]\nname = \"rs\"\nversion = \"0.1.0\"\n",
    );
    write(
        &src.join(".cargo/config.toml"),
        "[build]\nrustc-wrapper = \"./wrap.sh\"\n[env]\nEVIL = \"1\"\n",
    );
    write_executable(
        &src.join("wrap.sh"),
        &format!("#!/bin/sh\necho ran > {}\nexec \"$@\"\n", marker.display()),
    );
    write(
        &src.join("rust-toolchain.toml"),
        "[toolchain]\npath = \"./tc\"\n",
    );
    let home = env.user_home.display();
    write(
        &src.join("build.rs"),
        &format!(
            "fn main() {{\n    let wrote = std::fs::write(\"{home}/from-build-rs\", \"x\").is_ok();\n    let connected = std::net::TcpStream::connect(\"127.0.0.1:{port}\").is_ok();\n    let out = std::env::var(\"OUT_DIR\").unwrap();\n    std::fs::write(format!(\"{{out}}/said.rs\"), format!(\"const SAID: &str = \\\"wrote={{wrote}} connected={{connected}} evil={{}}\\\";\", std::env::var(\"EVIL\").is_ok())).unwrap();\n}}\n",
            port = bait.port()
        ),
    );
    write(
        &src.join("src/main.rs"),
        "include!(concat!(env!(\"OUT_DIR\"), \"/said.rs\"));\nfn main() { println!(\"{SAID}\"); }\n",
    );
    zot(
        &env,
        &["ext", "install", "--offline", src.to_str().unwrap()],
    )
    .ok();
    let said = crate::prepare::output_of(&env.global_root().join("rs/bin/rs"));
    assert_eq!(said, "wrote=false connected=false evil=false\n");
    assert!(!marker.exists(), "the extension's rustc-wrapper ran");
    assert!(!env.user_home.join("from-build-rs").exists());
    assert!(!bait.reached());
}

#[test]
fn cgo_is_off_unless_scripts_are_allowed_and_its_failure_says_so() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.19");
    write(
        &src.join("main.go"),
        "package main\n\n// int answer(void) { return 42; }\nimport \"C\"\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(C.answer()) }\n",
    );
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .fails(1)
        .stderr_has("the module imports \"C\": cgo runs the C compiler and linker with flags from the source, so it is off unless --allow-scripts");
}

#[test]
fn scripts_need_the_seal_or_the_users_word_and_require_sandbox_refuses_no_sandbox() {
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.22");
    write(&src.join("main.go"), GO_MAIN);
    zot(
        &env,
        &[
            "ext",
            "install",
            "--no-sandbox",
            "--require-sandbox",
            src.to_str().unwrap(),
        ],
    )
    .fails(2)
    .stderr_has("--require-sandbox");
    zot(
        &env,
        &["ext", "install", "--no-sandbox", src.to_str().unwrap()],
    )
    .env("ZOT_EXT_REQUIRE_SANDBOX", "1")
    .fails(2);
}

#[test]
fn a_sealed_build_cannot_reach_a_daemons_socket_under_run() {
    let python = Path::new("/usr/bin/python3");
    if !crate::support::is_root() || !python.is_file() {
        eprintln!("note: needs root (to make a socket in /run) and /usr/bin/python3; skipping");
        return;
    }
    let env = Env::new();
    let dir = PathBuf::from(format!("/run/zot-ext-test-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("daemon.sock");
    let _ = fs::remove_file(&socket);
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let src = go_extension(&env, "hello", "1.22");
    write(&src.join("main.go"), GO_MAIN);
    let bin = fake_go(
        &env,
        "socket-bin",
        &format!(
            "/usr/bin/python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('unix-connected')\" 2>&1\nprintf '#!/bin/sh\\n' > \"$out\"\n",
            socket.display()
        ),
    );
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .env("PATH", env.path_with(&bin))
        .ok();
    let reached = listener.accept().is_ok();
    let _ = fs::remove_dir_all(&dir);
    let log = fs::read_to_string(env.home.join("logs/prepare-hello.log")).unwrap();
    assert!(!reached && !log.contains("unix-connected"), "{log}");
}

#[test]
fn uv_syncs_without_building_installing_the_project_or_reading_its_configuration() {
    let env = Env::new();
    let src = extension(&env, "u", "u", "./.venv/bin/python");
    write(
        &src.join("pyproject.toml"),
        "[project]\nname = \"u\"\nversion = \"1\"\n[build-system]\nrequires = []\nbuild-backend = \"evil\"\nbackend-path = [\".\"]\n",
    );
    write(&src.join("uv.lock"), "version = 1\n");
    write(&src.join("uv.toml"), "no-build-isolation = true\n");
    let bin = env.work.join("uv-bin");
    fs::create_dir_all(&bin).unwrap();
    write_executable(
        &bin.join("uv"),
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo uv 0.5.0; exit 0; fi\necho \"$@\" > args.log\nmkdir -p .venv/bin\n",
    );
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .env("PATH", env.path_with(&bin))
        .ok();
    let args = fs::read_to_string(env.global_root().join("u/args.log")).unwrap();
    assert!(
        args.starts_with(
            "sync --locked --no-dev --no-install-project --no-editable --no-build --no-config"
        ),
        "{args}"
    );
}

pub(crate) fn have_yarn_1() -> bool {
    let yarn = Command::new("yarn").arg("--version").output();
    let major = yarn
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let found = major.as_deref().is_some_and(|v| v.starts_with("1."));
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "yarn 1 does not run, and CI must test it: npm install -g yarn@1"
        );
        eprintln!("note: yarn 1 is not on PATH; skipping");
    }
    found
}

#[test]
fn yarn_1_runs_no_lifecycle_script_and_holds_to_its_lock() {
    if !have_npm() || !have_yarn_1() {
        return;
    }
    let env = Env::new();
    let src = crate::prepare::npm_extension(&env, false);
    let yarn = |args: &[&str], dir: &Path| {
        let done = Command::new("yarn")
            .args(args)
            .current_dir(dir)
            .env("HOME", &env.user_home)
            .env("YARN_CACHE_FOLDER", env.work.join("yarn-cache"))
            .output()
            .unwrap();
        assert!(done.status.success(), "{done:?}");
    };
    yarn(&["install", "--ignore-scripts", "--non-interactive"], &src);
    fs::remove_dir_all(src.join("node_modules")).unwrap();
    let run = |args: &[&str]| {
        zot(&env, args)
            .env("HOME", &env.user_home)
            .env("YARN_CACHE_FOLDER", env.work.join("yarn-cache"))
    };
    run(&["ext", "install", src.to_str().unwrap()]).ok();
    let dest = env.global_root().join("npmx");
    assert!(dest.join("node_modules/x/index.js").is_file());
    assert!(
        !dest.join("node_modules/x/dep-ran").exists(),
        "a dependency's script ran"
    );
    assert!(
        !dest.join("root-ran").exists(),
        "the extension's own script ran"
    );
    // A package.json the lock does not cover is an error, not a lock rewritten.
    write(
        &src.join("package.json"),
        r#"{"name": "npmx", "version": "1.0.0", "dependencies": {"x": "file:vendor/x.tgz", "left-pad": "1.3.0"}}"#,
    );
    run(&["ext", "install", "--force", "--offline", src.to_str().unwrap()])
        .fails(1)
        .stderr_has("`yarn install --frozen-lockfile --production --ignore-scripts --non-interactive --offline` ended with exit status 1");
}

#[test]
fn a_toolchain_in_the_home_opens_its_own_folder_not_the_home() {
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.22");
    write(&src.join("main.go"), GO_MAIN);
    write(
        &env.user_home.join(".netrc"),
        "machine x login u password n3trc\n",
    );
    // ~/bin/go: the installation it belongs to is the home itself.
    let bin = env.user_home.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let fake = fake_go(
        &env,
        "unused",
        &format!(
            "cat {}/.netrc 2>&1\nprintf '#!/bin/sh\\n' > \"$out\"\n",
            env.user_home.display()
        ),
    );
    fs::copy(fake.join("go"), bin.join("go")).unwrap();
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .env("PATH", env.path_with(&bin))
        .ok();
    let log = fs::read_to_string(env.home.join("logs/prepare-hello.log")).unwrap();
    assert!(!log.contains("n3trc"), "{log}");
    assert!(log.contains("Permission denied"), "{log}");
}
