//! `zot ext update` says what happened: `up to date` when no file would change (and the
//! installed tree is left alone), `re-pinned` when only the ref changed, `updated` only when
//! something changed; failures and their reasons on stderr, also under `-q`; a named
//! extension that cannot be updated exits 1, `--all` skips it with a note.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tempfile::TempDir;

use crate::support::git_servers::{GitDaemon, Repo};
use crate::support::{Env, manifest};

fn served() -> (TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("srv");
    fs::create_dir(&root).unwrap();
    (tmp, root)
}

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

fn record(env: &Env, name: &str) -> Value {
    let path = env.home.join(format!(".ext-store/sources/{name}.json"));
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

fn inode(path: &Path) -> u64 {
    fs::symlink_metadata(path).unwrap().ino()
}

#[test]
fn an_unchanged_folder_install_is_up_to_date_and_left_in_place() {
    let env = Env::new();
    let src = env.source("clock-src", "clock");
    fs::create_dir_all(src.join("lib")).unwrap();
    fs::write(src.join("lib/data.txt"), "same\n").unwrap();
    env.install(&src);
    let dest = env.global_root().join("clock");
    let (dir, file) = (inode(&dest), inode(&dest.join("lib/data.txt")));
    let before = env.snapshot();
    env.zot(["ext", "update", "clock"])
        .ok()
        .stdout_is("clock (global) is up to date (1.0.0)\n")
        .stdout_lacks("updated");
    assert_eq!(
        (inode(&dest), inode(&dest.join("lib/data.txt"))),
        (dir, file)
    );
    assert_eq!(env.snapshot(), before);
    let out = env
        .zot(["ext", "update", "clock", "--json"])
        .ok()
        .extensions();
    assert_eq!(out[0]["status"], "up-to-date");
    env.zot(["ext", "update", "clock", "--dry-run"])
        .ok()
        .stdout_has("is up to date");
    assert_eq!(inode(&dest), dir);
}

#[test]
fn a_changed_folder_install_is_updated() {
    let env = Env::new();
    let src = env.source("clock-src", "clock");
    env.install(&src);
    let dest = env.global_root().join("clock");
    let dir = inode(&dest);
    fs::write(
        src.join("extension.json"),
        manifest("clock").replace("1.0.0", "1.1.0"),
    )
    .unwrap();
    env.zot(["ext", "update", "clock"])
        .ok()
        .stdout_is("updated clock (global): 1.0.0 -> 1.1.0\n");
    assert_ne!(inode(&dest), dir);
    // The executable bit counts as a change too.
    fs::set_permissions(
        src.join("run.sh"),
        <fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o644),
    )
    .unwrap();
    let done = env
        .zot(["ext", "update", "clock", "--json"])
        .ok()
        .extensions();
    assert_eq!(done[0]["status"], "updated");
}

#[test]
fn re_pinning_to_a_tag_at_the_installed_commit_changes_only_the_record() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = repo(&root, "pin");
    let daemon = GitDaemon::start(&root);
    env.install(daemon.url("pin"));
    let commit = repo.head_commit();
    repo.tag("v1");
    let dest = env.global_root().join("pin");
    let dir = inode(&dest);
    let before = env.snapshot();
    let dry = env
        .zot(["ext", "update", "pin", "--ref", "v1", "--dry-run"])
        .ok();
    assert!(
        dry.stdout.starts_with("would re-pin pin (global) to v1:"),
        "{}",
        dry.stdout
    );
    assert_eq!(env.snapshot(), before);
    let done = env.zot(["ext", "update", "pin", "--ref", "v1"]).ok();
    assert!(
        done.stdout.starts_with("re-pinned pin (global) to v1:"),
        "{}",
        done.stdout
    );
    done.stdout_has("no file changed");
    assert_eq!(inode(&dest), dir);
    let rec = record(&env, "pin");
    assert_eq!(
        (
            rec["ref"].as_str(),
            rec["ref_kind"].as_str(),
            rec["commit"].as_str()
        ),
        (Some("v1"), Some("tag"), Some(commit.as_str()))
    );
    // Pinned now: a plain update skips it.
    env.zot(["ext", "update", "pin"])
        .ok()
        .stdout_has("pinned to v1");
    // A tag on a new commit that changes no file: re-pinned, the tree stays.
    let empty = repo.commit_with("nothing", |_| {});
    repo.tag("v2");
    let out = env
        .zot(["ext", "update", "pin", "--ref", "v2", "--json"])
        .ok()
        .extensions();
    assert_eq!(out[0]["status"], "re-pinned");
    assert_eq!(out[0]["available"]["commit"], empty.as_str());
    assert_eq!(inode(&dest), dir);
    assert_eq!(record(&env, "pin")["commit"], empty.as_str());
}

#[test]
fn a_new_commit_that_changes_no_file_is_up_to_date() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = repo(&root, "trk");
    let daemon = GitDaemon::start(&root);
    env.install(daemon.url("trk"));
    let dest = env.global_root().join("trk");
    let dir = inode(&dest);
    let empty = repo.commit_with("nothing", |_| {});
    env.zot(["ext", "update", "trk"])
        .ok()
        .stdout_has("trk (global) is up to date")
        .stdout_has("changes no file");
    assert_eq!(inode(&dest), dir);
    assert_eq!(record(&env, "trk")["commit"], empty.as_str());
    let changed = repo.commit(&[("rev.txt", "two\n")]);
    let done = env.zot(["ext", "update", "trk"]).ok();
    assert!(
        done.stdout.starts_with("updated trk (global)"),
        "{}",
        done.stdout
    );
    assert_eq!(record(&env, "trk")["commit"], changed.as_str());
}

#[test]
fn a_failure_and_its_reason_go_to_stderr_even_when_quiet() {
    let env = Env::new();
    let src = env.source("gone-src", "gone");
    env.install(&src);
    env.installed("fine", false);
    fs::remove_dir_all(&src).unwrap();
    let gone = format!(
        "failed to update gone (global): the source folder {} recorded at install is gone; \
         if it moved, install it from there with zot ext install --force <new place>, \
         else remove it with zot ext remove gone; the old version is still in place",
        fs::canonicalize(src.parent().unwrap())
            .unwrap()
            .join("gone-src")
            .display()
    );
    let done = env.zot(["ext", "update", "gone", "gone", "-q"]).fails(1);
    done.stdout_is("").stderr_is(&format!("error: {gone}\n"));
    env.zot(["ext", "update", "gone", "--dry-run"])
        .fails(1)
        .stderr_has("error: would fail to update gone (global): the source folder ")
        .stderr_lacks("still in place");
    env.zot(["ext", "update", "--all", "-q"])
        .fails(1)
        .stdout_is("")
        .stderr_is(&format!("error: {gone} (1 of 2 extensions tried)\n"));
    env.zot(["ext", "update", "--all"])
        .fails(1)
        .stdout_is("fine (global) is up to date (1.0.0)\n")
        .stderr_has("failed to update gone");
    let json = env.zot(["ext", "update", "gone", "--json"]).fails(1);
    assert_eq!(json.extensions()[0]["status"], "failed");
    json.stderr_has("recorded at install is gone");
}

#[test]
fn a_source_whose_manifest_renamed_it_gets_the_install_command() {
    let env = Env::new();
    let src = env.source("ren-src", "ren");
    env.install(&src);
    fs::write(src.join("extension.json"), manifest("renamed")).unwrap();
    env.zot(["ext", "update", "ren"]).fails(1).stderr_has(&format!(
        "names it \"renamed\", not \"ren\"; install it under its new name with: zot ext install {}",
        fs::canonicalize(&src).unwrap().display()
    ));
}

/// A linked extension, one copied in by hand and one made by `zot ext new`.
fn cannot_be_updated(env: &Env) {
    let wc = env.source("wc", "dev");
    env.zot(["ext", "link", wc.to_str().unwrap()]).ok();
    let manual = env.global_root().join("manual");
    fs::create_dir_all(&manual).unwrap();
    fs::write(manual.join("extension.json"), manifest("manual")).unwrap();
    env.zot(["ext", "new", "fresh", "--lang", "shell"]).ok();
}

#[test]
fn naming_an_extension_that_cannot_be_updated_fails_with_the_reason() {
    let env = Env::new();
    cannot_be_updated(&env);
    for (name, reason) in [
        ("dev", "the working copy is used as it is"),
        ("manual", "no install record"),
        ("fresh", "made by zot ext new"),
    ] {
        env.zot(["ext", "update", name, "-q"])
            .fails(1)
            .stdout_is("")
            .stderr_has(&format!("cannot update {name} (global)"))
            .stderr_has(reason);
    }
    let out = env
        .zot(["ext", "update", "fresh", "--json"])
        .fails(1)
        .extensions();
    assert_eq!(
        (out[0]["status"].as_str(), out[0]["kind"].as_str()),
        (Some("skipped"), Some("new"))
    );
}

#[test]
fn all_skips_what_cannot_be_updated_with_a_note() {
    let env = Env::new();
    cannot_be_updated(&env);
    env.installed("fine", false);
    let before = env.snapshot();
    let done = env.zot(["ext", "update", "--all"]).ok();
    done.stdout_is("fine (global) is up to date (1.0.0)\n");
    for name in ["dev", "manual", "fresh"] {
        done.stderr_has(&format!("note: skipped {name} (global)"));
    }
    done.stderr_lacks("error");
    let quiet = env.zot(["ext", "update", "--all", "-q"]).ok();
    assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("", ""));
    assert_eq!(env.snapshot(), before);
}

#[test]
fn data_the_extension_wrote_does_not_make_an_unchanged_install_change() {
    let env = Env::new();
    let src = env.source("clock-src", "clock");
    env.install(&src);
    let dest = env.global_root().join("clock");
    fs::write(dest.join("state.json"), "{\"tasks\": [1]}").unwrap();
    let (dir, state) = (inode(&dest), inode(&dest.join("state.json")));
    env.zot(["ext", "update", "clock"])
        .ok()
        .stdout_is("clock (global) is up to date (1.0.0)\n");
    assert_eq!(
        (inode(&dest), inode(&dest.join("state.json"))),
        (dir, state)
    );
}

#[test]
fn an_install_without_a_file_list_is_compared_whole_and_gets_one() {
    let env = Env::new();
    let src = env.source("clock-src", "clock");
    env.install(&src);
    let list = env.home.join(".ext-store/files/clock.json");
    let listed = fs::read_to_string(&list).unwrap();
    fs::remove_file(&list).unwrap();
    let dest = env.global_root().join("clock");
    let dir = inode(&dest);
    env.zot(["ext", "update", "clock"])
        .ok()
        .stdout_is("clock (global) is up to date (1.0.0)\n");
    assert_eq!(inode(&dest), dir);
    assert_eq!(fs::read_to_string(&list).unwrap(), listed);
    // Without a list, a file the install did not place is a difference.
    fs::remove_file(&list).unwrap();
    fs::write(dest.join("state.json"), "{}").unwrap();
    let out = env
        .zot(["ext", "update", "clock", "--dry-run", "--json"])
        .ok()
        .extensions();
    assert_eq!(out[0]["status"], "would-update");
}

/// `disable` then `update` of an unchanged folder: the issue's `updated clock (global):
/// 1.0.0 -> 1.0.0`. `enabled` is carried on its own, so it is no change of content; and
/// `--enable` on a disabled copy whose content did not change does turn it on.
#[test]
fn a_disabled_unchanged_install_is_up_to_date_and_enable_turns_it_on() {
    let env = Env::new();
    let src = env.source("clock-src", "clock");
    env.install(&src);
    env.zot(["ext", "disable", "clock"]).ok();
    let dest = env.global_root().join("clock");
    let dir = inode(&dest);
    env.zot(["ext", "update", "clock"])
        .ok()
        .stdout_is("clock (global) is up to date (1.0.0)\n");
    assert_eq!(inode(&dest), dir);
    let enabled = || {
        let text = fs::read_to_string(dest.join("extension.json")).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["enabled"] != false
    };
    assert!(!enabled());
    let done = env.zot(["ext", "update", "clock", "--enable"]).ok();
    assert!(done.stdout.starts_with("updated clock"), "{}", done.stdout);
    assert!(enabled());
    env.zot(["ext", "update", "clock", "--enable"])
        .ok()
        .stdout_is("clock (global) is up to date (1.0.0)\n");
    env.zot(["ext", "update", "clock", "--disable"]).ok();
    assert!(!enabled());
    env.zot(["ext", "update", "clock"])
        .ok()
        .stdout_is("clock (global) is up to date (1.0.0)\n");
    assert!(!enabled());
}

/// Files changed, the version did not: both sides name their tree.
#[test]
fn an_update_that_keeps_the_version_names_both_trees() {
    let env = Env::new();
    let src = env.source("clock-src", "clock");
    env.install(&src);
    fs::write(src.join("run.sh"), "#!/bin/sh\necho changed\n").unwrap();
    let done = env.zot(["ext", "update", "clock"]).ok();
    let line = done.stdout.lines().next().unwrap_or("");
    assert!(
        line.starts_with("updated clock (global): 1.0.0 (tree ")
            && line.contains(" -> 1.0.0 (tree "),
        "{line}"
    );
    let trees: Vec<&str> = line.split("(tree ").skip(1).collect();
    assert_eq!(trees.len(), 2, "{line}");
    assert_ne!(trees[0], trees[1], "{line}");
}
