//! `zot ext update`: tracking and pinned git installs, re-pinning, folder installs, subfolder
//! installs, and failures (broken upstream, renamed, unreachable, kill -9) that must leave
//! the old version working.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

use crate::support::git_servers::{GitDaemon, HttpGit, Repo};
use crate::support::{Env, manifest};

/// A served root holding `<name>.git` bare repositories.
fn served() -> (TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("srv");
    fs::create_dir(&root).unwrap();
    (tmp, root)
}

/// A repository whose first commit is extension `name` with `rev.txt` = "one".
fn repo(root: &Path, name: &str) -> Repo {
    Repo::with_files(
        root,
        name,
        &[
            ("extension.json", &manifest(name)),
            ("run.sh", "#!/bin/sh\n"),
            ("rev.txt", "one\n"),
        ],
    )
}

fn rev(env: &Env, name: &str) -> String {
    fs::read_to_string(env.global_root().join(name).join("rev.txt")).unwrap()
}

fn record(env: &Env, name: &str) -> Value {
    let path = env
        .home
        .join(".ext-store/sources")
        .join(format!("{name}.json"));
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

fn versioned(name: &str, version: &str) -> String {
    manifest(name).replace("1.0.0", version)
}

fn staging_is_empty(env: &Env) -> bool {
    fs::read_dir(env.home.join(".ext-store/staging"))
        .unwrap()
        .count()
        == 0
}

#[test]
fn update_without_names_or_all_is_a_usage_error() {
    let env = Env::new();
    env.zot(["ext", "update"])
        .fails(2)
        .stderr_is("error: name the extensions to update, or pass --all\n");
}

#[test]
fn ref_with_several_names_is_a_usage_error() {
    let env = Env::new();
    env.installed("a", false);
    env.installed("b", false);
    env.zot(["ext", "update", "a", "b", "--ref", "v1"])
        .fails(2)
        .stderr_is("error: --ref re-pins one extension: name exactly one\n");
}

#[test]
fn names_with_all_is_a_usage_error() {
    let env = Env::new();
    env.installed("a", false);
    env.zot(["ext", "update", "a", "--all"])
        .fails(2)
        .stderr_has("cannot be used with '--all'");
}

#[test]
fn tracking_install_moves_to_the_new_tip_then_is_up_to_date() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = repo(&root, "trk");
    let daemon = GitDaemon::start(&root);
    env.install(daemon.url("trk"));
    let first = repo.head_commit();
    let second = repo.commit(&[
        ("rev.txt", "two\n"),
        ("extension.json", &versioned("trk", "2.0.0")),
    ]);
    env.zot(["ext", "update", "trk"])
        .ok()
        .stdout_has("updated trk (global): 1.0.0")
        .stdout_has("-> 2.0.0");
    assert_eq!(rev(&env, "trk"), "two\n");
    assert_eq!(record(&env, "trk")["commit"], second);
    assert_ne!(first, second);
    let again = env
        .zot(["ext", "update", "trk", "--json"])
        .ok()
        .extensions();
    assert_eq!(again[0]["status"], "up-to-date");
    assert_eq!(again[0]["current"]["commit"], second);
    assert!(staging_is_empty(&env));
}

#[test]
fn updates_fetch_shallowly_over_http() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = repo(&root, "shal");
    let http = HttpGit::start(&root);
    env.install(http.url("shal"));
    repo.commit(&[("rev.txt", "two\n")]);
    let before = http.requests().len();
    env.zot(["ext", "update", "shal"]).ok();
    let fetches: Vec<String> = http.requests()[before..]
        .iter()
        .filter(|r| r.method == "POST")
        .map(super::support::git_servers::Request::body_text)
        .filter(|b| b.contains("want "))
        .collect();
    assert!(!fetches.is_empty());
    assert!(
        fetches.iter().all(|b| b.contains("deepen 1")),
        "{fetches:?}"
    );
    assert_eq!(rev(&env, "shal"), "two\n");
}

#[test]
fn dry_run_reports_without_touching_the_store() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = repo(&root, "dry");
    let daemon = GitDaemon::start(&root);
    env.install(daemon.url("dry"));
    let old = repo.head_commit();
    let new = repo.commit(&[("extension.json", &versioned("dry", "1.1.0"))]);
    let before = env.snapshot();
    let out = env
        .zot(["ext", "update", "dry", "--dry-run", "--json"])
        .ok()
        .extensions();
    assert_eq!(out[0]["status"], "would-update");
    assert_eq!(out[0]["current"]["version"], "1.0.0");
    assert_eq!(out[0]["current"]["commit"], old);
    assert_eq!(out[0]["available"]["version"], "1.1.0");
    assert_eq!(out[0]["available"]["commit"], new);
    assert_eq!(env.snapshot(), before);
    env.zot(["ext", "update", "dry", "--dry-run"])
        .ok()
        .stdout_has("would update dry (global): 1.0.0");
}

#[test]
fn pinned_installs_are_skipped_until_re_pinned() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = repo(&root, "pin");
    repo.tag("v1");
    let daemon = GitDaemon::start(&root);
    env.install_with(daemon.url("pin"), &["--ref", "v1"]);
    assert_eq!(record(&env, "pin")["ref_kind"], "tag");
    let v2 = repo.commit(&[("rev.txt", "two\n")]);
    repo.annotated_tag("v2", "two");
    env.zot(["ext", "update", "pin"])
        .ok()
        .stdout_has("skipped pin (global): pinned to v1")
        .stdout_has("--ref");
    assert_eq!(rev(&env, "pin"), "one\n");
    env.zot(["ext", "update", "pin", "--ref", "v2"]).ok();
    assert_eq!(rev(&env, "pin"), "two\n");
    let rec = record(&env, "pin");
    assert_eq!(
        (rec["ref"].as_str(), rec["commit"].as_str()),
        (Some("v2"), Some(v2.as_str()))
    );
    let all = env
        .zot(["ext", "update", "--all", "--json"])
        .ok()
        .extensions();
    assert_eq!(all[0]["status"], "skipped");
}

#[test]
fn commit_pins_are_pinned_and_a_branch_ref_keeps_tracking() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = repo(&root, "br");
    let first = repo.head_commit();
    repo.branch("stable");
    let daemon = GitDaemon::start(&root);
    env.install_with(daemon.url("br"), &["--ref", &first]);
    assert_eq!(record(&env, "br")["ref_kind"], "commit");
    let out = env.zot(["ext", "update", "br", "--json"]).ok().extensions();
    assert_eq!(out[0]["status"], "skipped");
    env.zot(["ext", "update", "br", "--ref", "stable"]).ok();
    assert_eq!(record(&env, "br")["ref_kind"], "branch");
    assert_eq!(record(&env, "br")["branch"], "stable");
    let tip = repo.commit(&[("rev.txt", "stable two\n")]);
    repo.switch("main");
    repo.commit(&[("rev.txt", "main two\n")]);
    env.zot(["ext", "update", "br"]).ok();
    assert_eq!(rev(&env, "br"), "stable two\n");
    assert_eq!(record(&env, "br")["commit"], tip);
}

/// Installs `name` from a daemon, pushes a commit made by `change`, and checks that update
/// fails naming `expected` while the old version stays in place, whole and working.
fn failed_update_keeps_the_old_version(name: &str, change: impl FnOnce(&Repo), expected: &str) {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = repo(&root, name);
    let daemon = GitDaemon::start(&root);
    env.install(daemon.url(name));
    let before = env.snapshot();
    change(&repo);
    let done = env.zot(["ext", "update", name]).fails(1);
    assert!(
        done.stderr.contains(expected) || done.stdout.contains(expected),
        "{done:#?}"
    );
    done.stderr_has("old version is still in place");
    assert_eq!(env.snapshot(), before);
    assert_eq!(rev(&env, name), "one\n");
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list[0]["error"], Value::Null);
    assert!(staging_is_empty(&env));
}

#[test]
fn broken_upstream_manifest_leaves_the_old_version_working() {
    failed_update_keeps_the_old_version(
        "brk",
        |repo| {
            repo.commit(&[("extension.json", "{\"name\": \"brk\", \"exec\": 42}")]);
        },
        "\"exec\" must be a string",
    );
}

#[test]
fn upstream_without_a_manifest_leaves_the_old_version_working() {
    failed_update_keeps_the_old_version(
        "gone",
        |repo| {
            repo.commit_with("drop manifest", |work| {
                fs::remove_file(work.join("extension.json")).unwrap();
            });
        },
        "extension.json: not found",
    );
}

#[test]
fn renamed_upstream_is_refused() {
    failed_update_keeps_the_old_version(
        "old-name",
        |repo| {
            repo.commit(&[("extension.json", &manifest("new-name"))]);
        },
        "names it \"new-name\", not \"old-name\"",
    );
}

#[test]
fn unreachable_upstream_fails_and_keeps_the_old_version() {
    let env = Env::new();
    let (_tmp, root) = served();
    repo(&root, "net");
    let daemon = GitDaemon::start(&root);
    env.install(daemon.url("net"));
    drop(daemon);
    let done = env.zot(["ext", "update", "net", "--json"]).fails(1);
    let out = done.extensions();
    assert_eq!(out[0]["status"], "failed");
    assert!(
        out[0]["message"].as_str().unwrap().contains("cannot fetch"),
        "{out}"
    );
    assert_eq!(rev(&env, "net"), "one\n");
}

#[test]
fn folder_installs_are_copied_again() {
    let env = Env::new();
    let src = env.source("local", "local");
    fs::write(src.join("rev.txt"), "one\n").unwrap();
    env.install(&src);
    fs::write(src.join("rev.txt"), "two\n").unwrap();
    let out = env
        .zot(["ext", "update", "local", "--json"])
        .ok()
        .extensions();
    assert_eq!(out[0]["status"], "updated");
    assert_eq!(out[0]["kind"], "path");
    assert_eq!(rev(&env, "local"), "two\n");
    fs::remove_dir_all(&src).unwrap();
    env.zot(["ext", "update", "local"])
        .fails(1)
        .stderr_has("recorded at install is gone");
    assert_eq!(rev(&env, "local"), "two\n");
    env.zot(["ext", "update", "local", "--ref", "v1"])
        .fails(2)
        .stderr_has("--ref applies to git installs");
}

/// A folder whose name ends in `.git` (`hello.git/` with `extension.json` in it) installs as
/// a folder, and its updates copy that folder again rather than cloning it as a repository.
#[test]
fn a_folder_named_like_a_repository_updates_as_a_folder() {
    let env = Env::new();
    let src = env.source("hello.git", "hello");
    fs::write(src.join("rev.txt"), "one\n").unwrap();
    env.install(&src);
    fs::write(src.join("rev.txt"), "two\n").unwrap();
    let out = env
        .zot(["ext", "update", "hello", "--json"])
        .ok()
        .extensions();
    assert_eq!(out[0]["status"], "updated");
    assert_eq!(rev(&env, "hello"), "two\n");
    env.zot(["ext", "update", "hello", "--ref", "v1"])
        .fails(2)
        .stderr_has("hello was installed from the folder");
}

#[test]
fn hand_copied_extensions_are_an_unknown_source() {
    let env = Env::new();
    let dir = env.global_root().join("manual");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("extension.json"), manifest("manual")).unwrap();
    let out = env
        .zot(["ext", "update", "manual", "--json"])
        .fails(1)
        .extensions();
    assert_eq!(out[0]["status"], "unknown-source");
    assert_eq!(out[0]["kind"], Value::Null);
    env.zot(["ext", "update", "--all"])
        .ok()
        .stderr_has("unknown source");
}

#[test]
fn kill_during_update_leaves_the_old_or_the_new_version() {
    let env = Env::new();
    let src = env.source("big", "big");
    for i in 0..2000 {
        let dir = src.join(format!("d{}", i % 10));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(format!("f{i}")), vec![b'o'; 2048]).unwrap();
    }
    env.install(&src);
    fs::write(src.join("marker"), "new").unwrap();
    let dest = env.global_root().join("big");
    let files = |dir: &Path| {
        walkdir::WalkDir::new(dir)
            .into_iter()
            .flatten()
            .filter(|e| e.file_type().is_file())
            .count()
    };
    let old_count = files(&src) - 1;
    for delay in [0u64, 10, 30, 60, 120, 250] {
        let mut child = env
            .zot(["ext", "update", "big"])
            .cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay));
        child.kill().unwrap();
        child.wait().unwrap();
        let count = files(&dest);
        if dest.join("marker").exists() {
            assert_eq!(
                count,
                old_count + 1,
                "half-new tree after a kill at {delay} ms"
            );
        } else {
            assert_eq!(count, old_count, "half-old tree after a kill at {delay} ms");
        }
    }
    env.zot(["ext", "update", "big"]).ok();
    assert!(dest.join("marker").exists());
    assert!(staging_is_empty(&env));
}

/// A repository holding two extensions under `extensions/`, plus unrelated files.
fn monorepo(root: &Path) -> Repo {
    Repo::with_files(
        root,
        "mono",
        &[
            ("README.md", "the whole project\n"),
            ("src/main.go", "package main\n"),
            ("extensions/clock/extension.json", &manifest("clock")),
            ("extensions/clock/run.sh", "#!/bin/sh\n"),
            ("extensions/clock/rev.txt", "one\n"),
            ("extensions/other/extension.json", &manifest("other")),
        ],
    )
}

#[test]
fn subfolder_installs_take_only_that_folder_and_updates_follow_it() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = monorepo(&root);
    let daemon = GitDaemon::start(&root);
    let url = format!("{}#extensions/clock", daemon.url("mono"));
    let out = env.install_with(&url, &["--json"]).json();
    assert_eq!(out["name"], "clock");
    assert_eq!(out["subdir"], "extensions/clock");
    assert_eq!(out["source"], daemon.url("mono"));
    let dest = env.global_root().join("clock");
    let mut names: Vec<String> = fs::read_dir(&dest)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["extension.json", "rev.txt", "run.sh"]);
    repo.commit(&[
        ("extensions/clock/rev.txt", "two\n"),
        ("README.md", "changed\n"),
    ]);
    env.zot(["ext", "update", "clock"]).ok();
    assert_eq!(rev(&env, "clock"), "two\n");
    assert!(!dest.join("README.md").exists());
    let flag = env
        .install_with(
            daemon.url("mono"),
            &["--subdir", "extensions/other", "--json"],
        )
        .json();
    assert_eq!(flag["name"], "other");
}

/// A git daemon serving [`monorepo`] as `mono`; keep the folder while the daemon runs.
fn served_monorepo() -> (TempDir, GitDaemon) {
    let (tmp, root) = served();
    monorepo(&root);
    (tmp, GitDaemon::start(&root))
}

#[test]
fn a_subfolder_in_both_the_url_and_the_flag_is_a_usage_error() {
    let env = Env::new();
    let (_tmp, daemon) = served_monorepo();
    let both = format!("{}#extensions/clock", daemon.url("mono"));
    env.zot(["ext", "install", &both, "--subdir", "extensions/clock"])
        .fails(2);
    assert!(env.installed_names().is_empty());
}

#[test]
fn a_subfolder_climbing_out_of_the_repository_is_a_usage_error() {
    let env = Env::new();
    let (_tmp, daemon) = served_monorepo();
    env.zot(["ext", "install", &daemon.url("mono"), "--subdir", "../etc"])
        .fails(2)
        .stderr_has("without \"..\"");
    assert!(env.installed_names().is_empty());
}

#[test]
fn a_missing_subfolder_is_refused() {
    let env = Env::new();
    let (_tmp, daemon) = served_monorepo();
    env.zot(["ext", "install", &daemon.url("mono"), "--subdir", "nope"])
        .fails(1)
        .stderr_has("has no folder nope");
    assert!(env.installed_names().is_empty());
}

#[test]
fn a_repository_without_a_top_manifest_is_refused_naming_the_subdir_flag() {
    let env = Env::new();
    let (_tmp, daemon) = served_monorepo();
    env.zot(["ext", "install", &daemon.url("mono")])
        .fails(1)
        .stderr_has("--subdir");
    assert!(env.installed_names().is_empty());
}

#[test]
fn folder_sources_take_a_subdir_too() {
    let env = Env::new();
    let top = env.work.join("project");
    fs::create_dir_all(top.join("ext/inner")).unwrap();
    fs::write(top.join("ext/inner/extension.json"), manifest("inner")).unwrap();
    let out = env
        .install_with(&top, &["--subdir", "ext/inner", "--json"])
        .json();
    assert_eq!(out["subdir"], "ext/inner");
    fs::write(top.join("ext/inner/new.txt"), "x").unwrap();
    env.zot(["ext", "update", "inner"]).ok();
    assert!(env.global_root().join("inner/new.txt").exists());
}

#[test]
fn private_http_updates_use_the_credential_helper() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = repo(&root, "priv");
    let http = HttpGit::with_auth(&root, "alice", "s3cret-pass");
    let store = env.user_home.join(".git-credentials");
    fs::write(
        &store,
        format!("http://alice:s3cret-pass@127.0.0.1:{}\n", http.port()),
    )
    .unwrap();
    fs::write(
        env.user_home.join(".gitconfig"),
        format!(
            "[credential]\n\thelper = store --file {}\n",
            store.display()
        ),
    )
    .unwrap();
    env.install(http.url("priv"));
    repo.commit(&[("rev.txt", "two\n")]);
    env.zot(["ext", "update", "priv"]).ok();
    assert_eq!(rev(&env, "priv"), "two\n");
    fs::remove_file(&store).unwrap();
    repo.commit(&[("rev.txt", "three\n")]);
    env.zot(["ext", "update", "priv"])
        .fails(1)
        .stderr_has("cannot authenticate")
        .stderr_has("credential helper");
    assert_eq!(rev(&env, "priv"), "two\n");
}

#[test]
fn updates_follow_the_recorded_branch_when_the_remote_default_changes() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = repo(&root, "head");
    let daemon = GitDaemon::start(&root);
    env.install(daemon.url("head"));
    repo.branch("other");
    repo.commit(&[("extension.json", &manifest("someone-else"))]);
    crate::support::git_servers::git(&repo.bare, &["symbolic-ref", "HEAD", "refs/heads/other"]);
    repo.switch("main");
    repo.commit(&[("rev.txt", "two\n")]);
    env.zot(["ext", "update", "head"]).ok();
    assert_eq!(rev(&env, "head"), "two\n");
    assert_eq!(record(&env, "head")["branch"], "main");
    assert_eq!(record(&env, "head")["ref"], Value::Null);
}

/// A repository whose `lnk` is a symbolic link to a folder outside it.
fn repo_linking_to(root: &Path, outside: &Path) -> Repo {
    let repo = Repo::empty(root, "evil");
    repo.commit_with("link out", |work| {
        fs::write(work.join("README"), "x").unwrap();
        std::os::unix::fs::symlink(outside, work.join("lnk")).unwrap();
    });
    repo
}

#[test]
fn subfolders_behind_symbolic_links_are_refused_and_nothing_outside_moves() {
    let env = Env::new();
    let victim = env.work.join("victim");
    fs::create_dir_all(victim.join("docs")).unwrap();
    fs::write(victim.join("docs/thesis.txt"), "important").unwrap();
    fs::create_dir_all(victim.join("precious")).unwrap();
    fs::write(victim.join("precious/extension.json"), manifest("precious")).unwrap();
    let (_tmp, root) = served();
    repo_linking_to(&root, &victim);
    let daemon = GitDaemon::start(&root);
    for sub in ["lnk/docs", "lnk/precious"] {
        let url = format!("{}#{sub}", daemon.url("evil"));
        env.zot(["ext", "install", &url])
            .fails(1)
            .stderr_has("lnk is a symbolic link");
    }
    assert_eq!(
        fs::read_to_string(victim.join("docs/thesis.txt")).unwrap(),
        "important"
    );
    assert!(victim.join("precious/extension.json").is_file());
    assert!(env.installed_names().is_empty());
    let local = env.work.join("local-src");
    fs::create_dir_all(&local).unwrap();
    std::os::unix::fs::symlink(&victim, local.join("escape")).unwrap();
    env.zot([
        "ext",
        "install",
        local.to_str().unwrap(),
        "--subdir",
        "escape/precious",
    ])
    .fails(1)
    .stderr_has("escape is a symbolic link");
    assert!(env.installed_names().is_empty());
}
