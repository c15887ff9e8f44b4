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
    let doctor = env.zot(["ext", "doctor", "dev", "--json"]).fails(1).json();
    assert_eq!(
        doctor["extensions"][0]["errors"][0]["fix"],
        "restore the folder it points to, or remove the link with zot ext remove dev"
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

/// `zot ext link . --project` in the working copy would put a link to the project inside
/// the project: refused, naming the ways that work; an extension in a subfolder of the
/// project may be linked into it.
#[test]
fn a_folder_is_never_linked_into_itself() {
    let env = Env::new();
    fs::write(env.project.join("extension.json"), manifest("self")).unwrap();
    env.zot(["ext", "link", ".", "--project"])
        .fails(1)
        .stderr_one_line()
        .stderr_has(&format!(
            "error: . holds the extensions folder {}, so the link would lead back into the folder that holds it; link it for every project instead (zot ext link {}), or run zot ext link --project {} in the project that uses it (nothing was linked)",
            env.project_root().display(),
            env.project.display(),
            env.project.display()
        ));
    assert!(!env.project_root().join("self").exists());
    assert!(env.installed_names().is_empty());
    // The same folder linked for every project is no loop.
    env.zot(["ext", "link", "."]).ok();
    assert_eq!(
        fs::read_link(env.global_root().join("self")).unwrap(),
        env.project
    );
    // Nor is an extension kept in a subfolder of the project.
    let sub = env.project.join("tools/sub");
    fs::create_dir_all(&sub).unwrap();
    fs::write(sub.join("extension.json"), manifest("sub")).unwrap();
    env.zot(["ext", "link", "tools/sub", "--project"]).ok();
    assert_eq!(fs::read_link(env.project_root().join("sub")).unwrap(), sub);
    let inside = env.installed("inner", false);
    let done = env.zot(["ext", "link", inside.to_str().unwrap()]).fails(1);
    assert!(
        done.stderr.contains("is inside the extensions folder"),
        "{}",
        done.stderr
    );
}

/// A global link from a working copy that holds `ZOT_HOME` would loop as well.
#[test]
fn a_working_copy_holding_zot_home_is_not_linked() {
    let env = Env::new();
    let wc = env.source("wc", "dev");
    env.zot(["ext", "link", wc.to_str().unwrap()])
        .env("ZOT_HOME", wc.join("state"))
        .fails(1)
        .stderr_has("holds the extensions folder")
        .stderr_has("set ZOT_HOME to a folder outside it");
    assert!(!wc.join("state/extensions/dev").exists());
}

/// `link` takes the extension's own folder; `folder#path` (an install source) is pointed there.
#[test]
fn a_folder_fragment_given_to_link_names_the_folder_to_give() {
    let env = Env::new();
    env.source("repo/ext/clock", "clock");
    env.zot(["ext", "link", "../work/repo#ext/clock"])
        .fails(1)
        .stderr_one_line()
        .stderr_has("link takes the extension's own folder, not folder#path: zot ext link ../work/repo/ext/clock");
}
