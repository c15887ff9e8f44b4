//! `zot ext verify`: installed files against their file lists (placed files edited,
//! deleted or replaced are named; the extension's own data never counts) and against a
//! lock file (missing, not in the lock, another tree), text and `--json`, exit statuses.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::git_install::bounded;
use crate::support::hostile::mkfifo;
use crate::support::{Done, Env};

/// Installs `hello` (manifest, `run.sh`, `lib/code.txt`, a link `run` -> `run.sh`) in the
/// global scope, or the project's with `project`; returns the installed folder.
fn install_hello(env: &Env, project: bool) -> PathBuf {
    let src = env.source(&format!("src-hello-{project}"), "hello");
    fs::create_dir_all(src.join("lib")).unwrap();
    fs::write(src.join("lib/code.txt"), "code\n").unwrap();
    symlink("run.sh", src.join("run")).unwrap();
    if project {
        env.install_project(&src);
        env.project_root().join("hello")
    } else {
        env.install(&src);
        env.global_root().join("hello")
    }
}

/// `zot ext verify <args>`, killed (and failed) if it does not finish in time: a run that
/// opened a named pipe would block.
fn verify(env: &Env, args: &[&str]) -> Done {
    let mut all = vec!["ext", "verify"];
    all.extend_from_slice(args);
    bounded(env.zot(&all), &all)
}

/// The tree hash the install recorded for `name` in the scope whose base is `base`.
fn tree_hash(base: &Path, name: &str) -> String {
    let list = fs::read_to_string(base.join(format!(".ext-store/files/{name}.json"))).unwrap();
    let list: Value = serde_json::from_str(&list).unwrap();
    list["tree_hash"].as_str().unwrap().to_string()
}

/// Writes the project's lock file with `entries` (name, tree hash).
fn write_lock(env: &Env, entries: &[(&str, &str)]) {
    let mut extensions = serde_json::Map::new();
    for (name, tree) in entries {
        extensions.insert(
            (*name).to_string(),
            serde_json::json!({
                "source": format!("/src/{name}"), "ref": null, "subdir": null,
                "commit": null, "tree": tree
            }),
        );
    }
    let lock = serde_json::json!({ "version": 1, "extensions": extensions });
    fs::create_dir_all(env.project.join(".zot")).unwrap();
    fs::write(
        env.project.join(".zot/extensions.lock"),
        serde_json::to_string_pretty(&lock).unwrap(),
    )
    .unwrap();
}

#[test]
fn an_installed_extension_verifies_ok() {
    let env = Env::new();
    install_hello(&env, false);
    verify(&env, &[])
        .success()
        .stdout_is("hello (global): ok\n");
}

#[test]
fn an_edited_placed_file_is_modified_and_named() {
    let env = Env::new();
    let dir = install_hello(&env, false);
    fs::write(dir.join("lib/code.txt"), "edit\n").unwrap();
    verify(&env, &[])
        .failure(1)
        .stdout_is("hello (global): modified\n  changed: lib/code.txt\n")
        .stderr_has("1 of 1 extensions do not match");
}

#[test]
fn a_deleted_placed_file_is_named_and_a_deleted_folder_once() {
    let env = Env::new();
    let dir = install_hello(&env, false);
    fs::remove_file(dir.join("run.sh")).unwrap();
    verify(&env, &[])
        .failure(1)
        .stdout_has("  removed: run.sh\n");
    fs::remove_dir_all(dir.join("lib")).unwrap();
    verify(&env, &[])
        .failure(1)
        .stdout_has("  removed: lib/\n")
        .stdout_lacks("lib/code.txt");
}

#[test]
fn files_the_extension_wrote_and_a_toggled_manifest_are_not_modifications() {
    let env = Env::new();
    let dir = install_hello(&env, false);
    fs::write(dir.join("state.json"), "{\"count\": 3}").unwrap();
    fs::create_dir_all(dir.join("cache/deep")).unwrap();
    fs::write(dir.join("cache/deep/blob"), "x").unwrap();
    fs::write(dir.join("lib/new.txt"), "made at run time").unwrap();
    mkfifo(&dir.join("socket-like"));
    env.zot(["ext", "disable", "hello"]).ok();
    verify(&env, &[])
        .success()
        .stdout_is("hello (global): ok\n");
}

#[test]
fn a_link_replaced_by_a_file_and_a_file_by_a_pipe_are_changed() {
    let env = Env::new();
    let dir = install_hello(&env, false);
    fs::remove_file(dir.join("run")).unwrap();
    fs::write(dir.join("run"), "#!/bin/sh\n").unwrap();
    fs::remove_file(dir.join("lib/code.txt")).unwrap();
    mkfifo(&dir.join("lib/code.txt"));
    verify(&env, &[])
        .failure(1)
        .stdout_is("hello (global): modified\n  changed: lib/code.txt\n  changed: run\n");
}

#[test]
fn json_has_one_entry_per_extension() {
    let env = Env::new();
    let dir = install_hello(&env, false);
    install_hello(&env, true);
    fs::write(dir.join("run.sh"), "edited").unwrap();
    let done = verify(&env, &["--json"]);
    done.failure(1);
    let list = done.extensions();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2, "{done:?}");
    let keys: Vec<&str> = list[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "name",
            "scope",
            "dir",
            "status",
            "changed",
            "removed",
            "prepared_changed",
            "prepared_removed",
            "tree_hash",
            "lock_tree_hash",
            "reason"
        ]
    );
    assert_eq!(list[0]["scope"], "project");
    assert_eq!(list[0]["status"], "ok");
    assert_eq!(list[1]["scope"], "global");
    assert_eq!(list[1]["status"], "modified");
    assert_eq!(list[1]["changed"], serde_json::json!(["run.sh"]));
    assert_eq!(list[1]["removed"], serde_json::json!([]));
    assert_eq!(
        list[1]["tree_hash"].as_str().unwrap(),
        tree_hash(&env.home, "hello")
    );
    // Only the named ones, in the scope given.
    let done = verify(&env, &["hello", "-p", "--json"]);
    done.success();
    assert_eq!(done.extensions().as_array().unwrap().len(), 1, "{done:?}");
}

/// A well-formed tree hash of no tree here.
fn other_tree() -> String {
    format!("sha256:{}", "12".repeat(32))
}

#[test]
fn a_lock_file_names_missing_and_unlocked_extensions() {
    let env = Env::new();
    install_hello(&env, true);
    let other = env.source("src-other", "other");
    env.install_project(&other);
    let base = env.project.join(".zot");
    write_lock(
        &env,
        &[
            ("hello", &tree_hash(&base, "hello")),
            ("gone", &other_tree()),
        ],
    );
    verify(&env, &["-p"])
        .failure(1)
        .stdout_is(
            "hello (project): ok\nother (project): not in the lock\ngone (project): missing: in the lock file, not installed\n",
        );
    // Not in the lock is a note, not a mismatch.
    write_lock(&env, &[("hello", &tree_hash(&base, "hello"))]);
    verify(&env, &["-p"]).success();
    // Another tree than the lock's.
    write_lock(
        &env,
        &[
            ("hello", &other_tree()),
            ("other", &tree_hash(&base, "other")),
        ],
    );
    let done = verify(&env, &["-p", "--json"]);
    done.failure(1);
    let list = done.extensions();
    assert_eq!(list[0]["status"], "differs-from-lock", "{done:?}");
    assert_eq!(list[0]["lock_tree_hash"], other_tree());
    assert_eq!(list[1]["status"], "ok");
}

#[test]
fn an_invalid_lock_file_is_an_error_naming_it() {
    let env = Env::new();
    install_hello(&env, true);
    let lock = env.project.join(".zot/extensions.lock");
    fs::write(&lock, "{ nope").unwrap();
    verify(&env, &["-p"])
        .failure(1)
        .stderr_has("extensions.lock:1:3: key must be a string")
        .stderr_one_line();
    fs::write(&lock, r#"{"version": 2, "extensions": {}}"#).unwrap();
    verify(&env, &["-p"])
        .failure(1)
        .stderr_has("extensions.lock: lock version 2 is not 1")
        .stderr_one_line();
    // A named pipe is refused, never read.
    fs::remove_file(&lock).unwrap();
    mkfifo(&lock);
    verify(&env, &["-p"])
        .failure(1)
        .stderr_has("extensions.lock is a named pipe")
        .stderr_one_line();
}

#[test]
fn an_extension_without_a_file_list_cannot_be_verified() {
    let env = Env::new();
    let src = env.source("src-byhand", "byhand");
    fs::create_dir_all(env.global_root()).unwrap();
    fs::rename(&src, env.global_root().join("byhand")).unwrap();
    verify(&env, &[])
        .success()
        .stdout_is("byhand (global): no file list: cannot verify\n  copied in by hand or installed by an older zot ext\n");
}

#[test]
fn a_name_that_is_not_installed_is_an_error() {
    let env = Env::new();
    install_hello(&env, false);
    verify(&env, &["helo"])
        .failure(1)
        .stderr_has("no extension named \"helo\"")
        .stderr_has("did you mean hello?");
}

/// `zot ext verify <args>` on a pseudo-terminal with colour (util-linux `script`): what the
/// terminal was sent; None (and a message) where `script` is missing.
fn verify_on_terminal(env: &Env, args: &[&str]) -> Option<String> {
    let mut line = format!("exec '{}' ext verify", env!("CARGO_BIN_EXE_zot"));
    for arg in args {
        line.push_str(" '");
        line.push_str(arg);
        line.push('\'');
    }
    let out = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(&env.project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.home.parent().unwrap())
        .env("ZOT_HOME", &env.home)
        .env("LANG", "C.UTF-8")
        .env("TERM", "xterm-256color")
        .stdin(std::process::Stdio::null())
        .output();
    let Ok(out) = out else {
        eprintln!("skipping: script (util-linux) is not on PATH");
        return None;
    };
    Some(String::from_utf8(out.stdout).unwrap().replace("\r\n", "\n"))
}

/// On a colour terminal the status is painted, not painted and then escaped as text.
#[test]
fn a_colour_terminal_shows_the_status_styled_not_escaped() {
    let env = Env::new();
    let dir = install_hello(&env, true);
    fs::write(dir.join("lib/code.txt"), "edit\n").unwrap();
    let Some(shown) = verify_on_terminal(&env, &["-p"]) else {
        return;
    };
    assert!(!shown.contains("\\u{1b}"), "{shown:?}");
    assert!(
        shown.contains("hello (project): \u{1b}[") && shown.contains("modified\u{1b}[0m\n"),
        "{shown:?}"
    );
}
