//! `zot ext remove`: confirmation rules, scopes, symlinks and atomic deletion.

use std::fs;
use std::os::unix::fs::symlink;

use crate::support::Env;

#[test]
fn without_a_terminal_and_without_yes_it_refuses_with_exit_2() {
    let env = Env::new();
    env.installed("keep", false);
    let before = env.snapshot();
    let done = env.zot(["ext", "remove", "keep"]).fails(2);
    assert!(
        done.stderr.contains("stdin is not a terminal"),
        "{}",
        done.stderr
    );
    assert!(done.stderr.contains("--yes"), "{}", done.stderr);
    assert_eq!(env.snapshot(), before);
}

#[test]
fn piped_yes_is_not_a_confirmation() {
    let env = Env::new();
    env.installed("keep", false);
    env.zot(["ext", "remove", "keep"]).stdin("y\n").fails(2);
    assert_eq!(env.installed_names(), ["keep"]);
}

#[test]
fn yes_removes_the_folder_and_its_record() {
    let env = Env::new();
    env.installed("gone", false);
    let done = env.zot(["ext", "remove", "-y", "gone"]).ok();
    assert!(
        done.stdout.contains("removed gone (global)"),
        "{}",
        done.stdout
    );
    assert!(env.installed_names().is_empty());
    assert!(!env.home.join(".ext-store/sources/gone.json").exists());
    assert_eq!(
        fs::read_dir(env.home.join(".ext-store/trash"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn default_target_is_the_winning_copy_and_scope_flags_pick_one() {
    let env = Env::new();
    env.installed("dup", false);
    env.installed("dup", true);
    let done = env.zot(["ext", "remove", "--yes", "dup"]).ok();
    assert!(done.stdout.contains("(project)"), "{}", done.stdout);
    assert!(done.stderr.contains("global copy"), "{}", done.stderr);
    assert!(env.global_root().join("dup").exists());
    env.installed("dup", true);
    env.zot(["ext", "remove", "--yes", "--global", "dup"]).ok();
    assert!(!env.global_root().join("dup").exists());
    assert!(env.project_root().join("dup").exists());
}

#[test]
fn unknown_name_exits_1_naming_where_it_looked() {
    let env = Env::new();
    let done = env.zot(["ext", "remove", "-y", "nope"]).fails(1);
    assert!(
        done.stderr.contains("no extension named \"nope\""),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr
            .contains(&env.global_root().display().to_string()),
        "{}",
        done.stderr
    );
}

#[test]
fn a_symlinked_extension_loses_only_its_link() {
    let env = Env::new();
    let src = env.source("working-copy", "linked");
    fs::create_dir_all(env.global_root()).unwrap();
    symlink(&src, env.global_root().join("linked")).unwrap();
    let done = env.zot(["ext", "remove", "-y", "linked"]).ok();
    assert!(done.stdout.contains("unlinked"), "{}", done.stdout);
    assert!(
        src.join("extension.json").is_file(),
        "the working copy is untouched"
    );
    assert!(fs::symlink_metadata(env.global_root().join("linked")).is_err());
}

#[test]
fn links_inside_an_extension_are_not_followed() {
    let env = Env::new();
    let outside = env.work.join("precious");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("data"), "keep me").unwrap();
    let dest = env.installed("ext", false);
    symlink(&outside, dest.join("escape")).unwrap();
    env.zot(["ext", "remove", "-y", "ext"]).ok();
    assert_eq!(fs::read_to_string(outside.join("data")).unwrap(), "keep me");
}

#[test]
fn json_output() {
    let env = Env::new();
    env.installed("j", true);
    let out = env.zot(["ext", "remove", "-y", "--json", "j"]).ok().json();
    assert_eq!(out["name"], "j");
    assert_eq!(out["scope"], "project");
    assert_eq!(out["linked"], false);
}

#[test]
fn read_only_folders_are_removed_too() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let src = env.source("ro", "ro");
    fs::create_dir_all(src.join("locked/deeper")).unwrap();
    fs::write(src.join("locked/deeper/file"), "x").unwrap();
    env.open_to_everyone();
    for dir in ["locked/deeper", "locked"] {
        fs::set_permissions(src.join(dir), fs::Permissions::from_mode(0o555)).unwrap();
    }
    env.zot(["ext", "install", src.to_str().unwrap()])
        .unprivileged()
        .ok();
    let installed = env.global_root().join("ro/locked");
    assert_eq!(
        fs::metadata(&installed).unwrap().permissions().mode() & 0o777,
        0o555
    );
    env.zot(["ext", "remove", "--yes", "ro"])
        .unprivileged()
        .ok();
    assert!(env.installed_names().is_empty());
    let trash = env.home.join(".ext-store/trash");
    assert_eq!(fs::read_dir(trash).unwrap().count(), 0);
}

#[test]
fn at_a_terminal_it_asks_and_only_yes_removes() {
    let env = Env::new();
    env.installed("asked", false);
    let declined = env.zot_in_terminal(&["ext", "remove", "asked"], "n\n");
    assert!(
        declined.stdout.contains("remove asked (global) at"),
        "{declined:#?}"
    );
    assert!(declined.stdout.contains("[y/N]"), "{declined:#?}");
    assert!(
        declined.stdout.contains("nothing was removed"),
        "{declined:#?}"
    );
    assert_eq!(declined.code, 1);
    assert_eq!(env.installed_names(), ["asked"]);
    let accepted = env.zot_in_terminal(&["ext", "remove", "asked"], "yes\n");
    assert_eq!(accepted.code, 0, "{accepted:#?}");
    assert!(
        accepted.stdout.contains("removed asked (global)"),
        "{accepted:#?}"
    );
    assert!(env.installed_names().is_empty());
}

/// A folder in the place of the install record cannot be unlinked: remove refuses before
/// it moves anything, naming it, instead of removing the extension and then failing.
#[test]
fn a_folder_in_place_of_the_record_is_refused_before_anything_moves() {
    let env = Env::new();
    env.installed("kept", false);
    let record = env.home.join(".ext-store/sources/kept.json");
    fs::remove_file(&record).unwrap();
    fs::create_dir(&record).unwrap();
    let before = env.snapshot();
    let done = env.zot(["ext", "remove", "-y", "kept"]).fails(1);
    assert!(
        done.stderr
            .contains("sources/kept.json is a folder, not an install record")
            && done.stderr.contains("nothing was changed"),
        "{}",
        done.stderr
    );
    assert_eq!(env.snapshot(), before);
    assert_eq!(env.installed_names(), ["kept"]);
}
