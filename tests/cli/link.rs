//! `zot ext link`: a working copy registered by symbolic link.

use std::fs;

use crate::support::{Env, manifest};

#[test]
fn links_a_working_copy_and_lists_it_as_linked() {
    let env = Env::new();
    let src = env.source("wc", "dev");
    let done = env.zot(["ext", "link", src.to_str().unwrap()]).ok();
    assert!(
        done.stdout.contains("linked dev (global)"),
        "{}",
        done.stdout
    );
    let link = env.global_root().join("dev");
    assert_eq!(fs::read_link(&link).unwrap(), src);
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list[0]["linked"], src.display().to_string());
    let record = fs::read_to_string(env.home.join(".ext-store/sources/dev.json")).unwrap();
    assert!(record.contains("\"kind\": \"link\""), "{record}");
    // Edits to the working copy are live.
    fs::write(
        src.join("extension.json"),
        manifest("dev").replace("1.0.0", "9.9.9"),
    )
    .unwrap();
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list[0]["version"], "9.9.9");
}

#[test]
fn update_skips_and_remove_unlinks() {
    let env = Env::new();
    let src = env.source("wc", "dev");
    env.zot(["ext", "link", "--project", src.to_str().unwrap()])
        .ok();
    let out = env
        .zot(["ext", "update", "dev", "--json"])
        .fails(1)
        .extensions();
    assert_eq!(out[0]["status"], "skipped");
    env.zot(["ext", "remove", "-y", "dev"]).ok();
    assert!(src.join("extension.json").is_file());
    assert!(env.installed_names().is_empty());
}

#[test]
fn a_vanished_target_is_listed_as_broken() {
    let env = Env::new();
    let src = env.source("wc", "dev");
    env.zot(["ext", "link", src.to_str().unwrap()]).ok();
    fs::remove_dir_all(&src).unwrap();
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert!(
        list[0]["error"].as_str().unwrap().contains("broken link"),
        "{list}"
    );
    env.zot(["ext", "remove", "-y", "dev"]).ok();
}

#[test]
fn refuses_existing_names_unless_forced_and_folders_without_a_manifest() {
    let env = Env::new();
    env.installed("dev", false);
    let src = env.source("wc", "dev");
    let done = env.zot(["ext", "link", src.to_str().unwrap()]).fails(1);
    assert!(done.stderr.contains("--force"), "{}", done.stderr);
    env.zot(["ext", "link", "--force", src.to_str().unwrap()])
        .ok();
    assert_eq!(fs::read_link(env.global_root().join("dev")).unwrap(), src);
    let empty = env.work.join("empty");
    fs::create_dir_all(&empty).unwrap();
    let done = env.zot(["ext", "link", empty.to_str().unwrap()]).fails(1);
    assert!(
        done.stderr.contains("extension.json: not found"),
        "{}",
        done.stderr
    );
}

#[test]
fn a_project_can_link_its_own_working_copy() {
    let env = Env::new();
    fs::write(env.project.join("extension.json"), manifest("self")).unwrap();
    let done = env.zot(["ext", "link", ".", "--project"]).ok();
    assert!(
        done.stdout.contains("linked self (project)"),
        "{}",
        done.stdout
    );
    assert_eq!(
        fs::read_link(env.project_root().join("self")).unwrap(),
        env.project
    );
    let inside = env.installed("inner", false);
    let done = env.zot(["ext", "link", inside.to_str().unwrap()]).fails(1);
    assert!(
        done.stderr.contains("is inside the extensions folder"),
        "{}",
        done.stderr
    );
}
