//! `zot ext remove`: confirmation rules, scopes, symlinks and atomic deletion.

use std::fs;
use std::os::unix::fs::symlink;

use crate::support::Env;

#[test]
fn without_a_terminal_and_without_yes_it_refuses_with_exit_2() {
    let env = Env::new();
    env.installed("keep", false);
    let before = env.snapshot();
    env.zot(["ext", "remove", "keep"])
        .fails(2)
        .stdout_is("")
        .stderr_is(&format!(
            "error: not removing keep (global) at {}: stdin is not a terminal and gave no y or \
             yes line within 1s, so no one confirmed; pass --yes to remove it\n",
            env.global_root().join("keep").display()
        ));
    assert_eq!(env.snapshot(), before);
}

#[test]
fn a_piped_y_or_yes_line_confirms() {
    // Scripts written for the original do `echo y | zot ext remove NAME`.
    let env = Env::new();
    for (answer, name) in [
        ("y\n", "a"),
        ("yes\n", "b"),
        ("YES\r\n", "c"),
        ("y", "d"),
        ("y\nand more\n", "e"),
    ] {
        env.installed(name, false);
        env.zot(["ext", "remove", name])
            .stdin(answer)
            .ok()
            .stdout_is(&format!(
                "removed {name} (global) from {}\n",
                env.global_root().join(name).display()
            ))
            .stderr_lacks("[y/N]");
    }
    assert!(env.installed_names().is_empty());
}

#[test]
fn a_piped_answer_other_than_yes_removes_nothing() {
    let env = Env::new();
    env.installed("keep", false);
    let before = env.snapshot();
    let long = format!("{}y\n", " ".repeat(100));
    for answer in [
        "n\n",
        "no\n",
        "",
        "\n",
        "yess\n",
        "\ny\n",
        "ja\n",
        long.as_str(),
    ] {
        env.zot(["ext", "remove", "keep"])
            .stdin(answer)
            .fails(2)
            .stderr_has("stdin is not a terminal")
            .stderr_has("--yes");
        assert_eq!(env.snapshot(), before, "{answer:?}");
    }
}

#[test]
fn a_pipe_that_stays_silent_is_no_answer_and_no_hang() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let env = Env::new();
    env.installed("keep", false);
    let before = env.snapshot();
    let mut cmd = env.zot(["ext", "remove", "keep"]).cmd;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    // The write end stays open (and silent) until zot has exited.
    let writer = child.stdin.take().unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    drop(writer);
    let status = status.expect("zot ext remove hung on a silent pipe");
    assert_eq!(status.code(), Some(2));
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(stderr.contains("--yes"), "{stderr}");
    assert_eq!(env.snapshot(), before);
}

#[test]
fn yes_removes_the_folder_and_its_record() {
    let env = Env::new();
    env.installed("gone", false);
    env.zot(["ext", "remove", "-y", "gone"])
        .ok()
        .stdout_is(&format!(
            "removed gone (global) from {}\n",
            env.global_root().join("gone").display()
        ))
        .stderr_is("");
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
    env.zot(["ext", "remove", "--yes", "dup"])
        .ok()
        .stdout_is(&format!(
            "removed dup (project) from {}\n",
            env.project_root().join("dup").display()
        ))
        .stderr_is(&format!(
            "note: the global copy in {} is still installed\n",
            env.global_root().join("dup").display()
        ));
    assert!(env.global_root().join("dup").exists());
    env.installed("dup", true);
    env.zot(["ext", "remove", "--yes", "--global", "dup"]).ok();
    assert!(!env.global_root().join("dup").exists());
    assert!(env.project_root().join("dup").exists());
}

#[test]
fn unknown_name_exits_1_naming_where_it_looked() {
    let env = Env::new();
    env.zot(["ext", "remove", "-y", "nope"])
        .fails(1)
        .stderr_is(&env.not_installed_error("nope"));
}

#[test]
fn a_symlinked_extension_loses_only_its_link() {
    let env = Env::new();
    let src = env.source("working-copy", "linked");
    fs::create_dir_all(env.global_root()).unwrap();
    symlink(&src, env.global_root().join("linked")).unwrap();
    env.zot(["ext", "remove", "-y", "linked"])
        .ok()
        .stdout_has("unlinked");
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
    assert_eq!(out["linked"], serde_json::Value::Null);
}

#[test]
fn json_names_the_working_copy_a_removed_link_pointed_to() {
    let env = Env::new();
    let src = env.source("working-copy", "linked");
    fs::create_dir_all(env.global_root()).unwrap();
    symlink(&src, env.global_root().join("linked")).unwrap();
    let out = env
        .zot(["ext", "remove", "-y", "--json", "linked"])
        .ok()
        .schema_first();
    assert_eq!(out["linked"], src.display().to_string());
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
    env.zot_in_terminal(&["ext", "remove", "asked"], "n\n")
        .stdout_has("remove asked (global) at")
        .stdout_has("[y/N]")
        .stdout_has("note: nothing was removed (the answer was not yes)")
        .stdout_lacks("error:")
        .failure(1);
    assert_eq!(env.installed_names(), ["asked"]);
    env.zot_in_terminal(&["ext", "remove", "asked"], "yes\n")
        .success()
        .stdout_has("removed asked (global)");
    assert!(env.installed_names().is_empty());
}

/// Installs `name` and lets "the extension" write `state.json` and `cache/` into its folder.
fn with_data(env: &Env, name: &str) -> std::path::PathBuf {
    let dir = env.installed(name, false);
    fs::write(dir.join("state.json"), "{\"tasks\": [\"write README\"]}").unwrap();
    fs::create_dir(dir.join("cache")).unwrap();
    fs::write(dir.join("cache/page"), "cached").unwrap();
    dir
}

/// The saved copies of `name` in the global scope, oldest first.
fn backups(env: &Env, name: &str) -> Vec<std::path::PathBuf> {
    let Ok(entries) = fs::read_dir(env.home.join(".ext-store/backup").join(name)) else {
        return Vec::new();
    };
    let mut all: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    all.sort();
    all
}

#[test]
fn remove_names_the_files_the_install_did_not_place() {
    let env = Env::new();
    with_data(&env, "loop");
    env.zot(["ext", "remove", "-y", "loop"]).ok().stderr_has(
        "removes 1 folder and 1 file created by the extension (cache/, state.json); \
         --keep-data keeps them in .ext-store/backup",
    );
    assert!(env.installed_names().is_empty());
    assert!(backups(&env, "loop").is_empty());
    // Nothing of its own: no note.
    env.installed("plain", false);
    let done = env.zot(["ext", "remove", "-y", "plain", "--json"]).ok();
    done.stderr_is("");
    assert_eq!(done.json()["data"], serde_json::json!([]));
}

#[test]
fn keep_data_says_once_what_it_keeps() {
    let env = Env::new();
    with_data(&env, "loop");
    env.zot(["ext", "remove", "-y", "loop", "--keep-data"])
        .ok()
        .stderr_is("")
        .stdout_has("kept 1 folder and 1 file created by the extension (cache/, state.json) in ");
}

#[test]
fn keep_data_saves_the_files_the_install_did_not_place() {
    let env = Env::new();
    let dir = with_data(&env, "loop");
    fs::write(dir.join("run.sh"), "#!/bin/sh\n# edited\n").unwrap();
    let done = env
        .zot(["ext", "remove", "-y", "loop", "--keep-data", "--json"])
        .ok();
    let out = done.json();
    assert_eq!(out["data"], serde_json::json!(["cache/", "state.json"]));
    let saved = backups(&env, "loop");
    assert_eq!(saved.len(), 1);
    assert_eq!(out["backup"], saved[0].display().to_string());
    assert_eq!(
        fs::read_to_string(saved[0].join("state.json")).unwrap(),
        "{\"tasks\": [\"write README\"]}"
    );
    assert_eq!(
        fs::read_to_string(saved[0].join("cache/page")).unwrap(),
        "cached"
    );
    // Only the data: the files the install placed are not saved.
    assert!(!saved[0].join("run.sh").exists());
    assert!(!saved[0].join("extension.json").exists());
    assert!(env.installed_names().is_empty());
    // The name of the backup folder is an RFC 3339 time.
    let when = saved[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(humantime::parse_rfc3339(&when).is_ok(), "{when}");
}

#[test]
fn keep_data_keeps_the_last_three_backups() {
    let env = Env::new();
    for round in 0..4 {
        let dir = with_data(&env, "loop");
        fs::write(dir.join("round"), round.to_string()).unwrap();
        env.zot(["ext", "remove", "-y", "loop", "--keep-data"])
            .ok()
            .stdout_has("kept 1 folder and 2 files created by the extension");
        // A different second for each backup folder.
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    let saved = backups(&env, "loop");
    assert_eq!(saved.len(), 3);
    assert_eq!(fs::read_to_string(saved[0].join("round")).unwrap(), "1");
    assert_eq!(fs::read_to_string(saved[2].join("round")).unwrap(), "3");
}

/// Removes made faster than one a second: after the first three, the seconds name is free
/// again (rotated away) but older than the others; the newest copy must still be kept.
#[test]
fn keep_data_in_quick_succession_keeps_the_newest_three_and_info_lists_them() {
    let env = Env::new();
    for round in 0..6 {
        let dir = with_data(&env, "loop");
        fs::write(dir.join("round"), round.to_string()).unwrap();
        env.zot(["ext", "remove", "-y", "loop", "--keep-data"]).ok();
    }
    let saved = backups(&env, "loop");
    let rounds: Vec<String> = saved
        .iter()
        .map(|b| fs::read_to_string(b.join("round")).unwrap())
        .collect();
    let mut sorted = rounds.clone();
    sorted.sort();
    assert_eq!(sorted, ["3", "4", "5"], "{saved:?}");
    with_data(&env, "loop");
    let info = env.zot(["ext", "info", "loop", "--json"]).ok().json();
    let listed: Vec<&str> = info["copies"][0]["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert_eq!(listed.len(), 3, "{info}");
    let last = std::path::Path::new(listed[2]);
    assert_eq!(fs::read_to_string(last.join("round")).unwrap(), "5");
}

#[test]
fn without_a_file_list_remove_says_so_and_keep_data_saves_the_whole_folder() {
    let env = Env::new();
    let dir = env.global_root().join("manual");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("extension.json"),
        crate::support::manifest("manual"),
    )
    .unwrap();
    fs::write(dir.join("state.json"), "{}").unwrap();
    env.zot(["ext", "remove", "-y", "manual", "--keep-data"])
        .ok()
        .stderr_has("zot cannot tell manual's data from its files")
        .stdout_has("kept the whole folder in");
    let saved = backups(&env, "manual");
    assert_eq!(saved.len(), 1);
    assert!(saved[0].join("extension.json").is_file());
    assert_eq!(
        fs::read_to_string(saved[0].join("state.json")).unwrap(),
        "{}"
    );
    assert!(env.installed_names().is_empty());
}

#[test]
fn keep_data_of_a_link_saves_nothing_and_keeps_the_working_copy() {
    let env = Env::new();
    let wc = env.source("wc", "dev");
    fs::write(wc.join("state.json"), "{}").unwrap();
    env.zot(["ext", "link", wc.to_str().unwrap()]).ok();
    env.zot(["ext", "remove", "-y", "dev", "--keep-data"])
        .ok()
        .stderr_is("");
    assert!(backups(&env, "dev").is_empty());
    assert!(wc.join("state.json").is_file());
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
    env.zot(["ext", "remove", "-y", "kept"])
        .fails(1)
        .stderr_has("sources/kept.json is a folder, not an install record")
        .stderr_has("nothing was changed");
    assert_eq!(env.snapshot(), before);
    assert_eq!(env.installed_names(), ["kept"]);
}

#[test]
fn several_names_are_each_removed_with_one_summary() {
    let env = Env::new();
    for name in ["a", "b", "c"] {
        env.installed(name, false);
    }
    env.installed("stays", false);
    let root = env.global_root();
    env.zot(["ext", "remove", "a", "b", "c", "a", "-y"])
        .ok()
        .stdout_is(&format!(
            "removed a (global) from {}\nremoved b (global) from {}\nremoved c (global) from {}\nremoved 3 extensions\n",
            root.join("a").display(),
            root.join("b").display(),
            root.join("c").display()
        ));
    assert_eq!(env.installed_names(), ["stays"]);
}

#[test]
fn a_name_that_fails_leaves_the_others_removed_and_exits_1() {
    let env = Env::new();
    env.installed("a", false);
    env.installed("c", false);
    let out = env
        .zot(["ext", "remove", "a", "missing", "c", "-y"])
        .fails(1);
    out.stdout_has("removed a (global)")
        .stdout_has("removed c (global)")
        .stderr_has("error: missing: no extension named \"missing\" is installed")
        .stderr_has(
            "error: 1 of 3 extensions were not removed (see above); the other 2 were removed\n",
        );
    assert!(env.installed_names().is_empty());
}

#[test]
fn several_names_without_a_terminal_need_one_yes() {
    let env = Env::new();
    env.installed("a", false);
    env.installed("b", false);
    let before = env.snapshot();
    env.zot(["ext", "remove", "a", "b"])
        .fails(2)
        .stderr_has("not removing 2 extensions: a (global) at ")
        .stderr_has(", b (global) at ")
        .stderr_has("pass --yes to remove them")
        .stderr_one_line();
    assert_eq!(env.snapshot(), before);
    env.zot(["ext", "remove", "a", "b"]).stdin("y\n").ok();
    assert!(env.installed_names().is_empty());
}

#[test]
fn at_a_terminal_one_question_names_them_all() {
    let env = Env::new();
    env.installed("a", false);
    env.installed("b", true);
    env.zot_in_terminal(&["ext", "remove", "a", "b"], "n\n")
        .failure(1)
        .stdout_has("remove 2 extensions: a (global) at ")
        .stdout_has(", b (project) at ")
        .stdout_has("note: nothing was removed");
    assert_eq!(env.installed_names(), ["b", "a"]);
    let done = env.zot_in_terminal(&["ext", "remove", "a", "b"], "y\n");
    done.success().stdout_has("removed 2 extensions");
    assert_eq!(done.stdout.matches("[y/N]").count(), 1, "{done:?}");
    assert!(env.installed_names().is_empty());
}

#[test]
fn json_with_several_names_lists_the_removed_and_the_failed() {
    let env = Env::new();
    env.installed("a", false);
    env.installed("b", false);
    let out = env
        .zot(["ext", "remove", "a", "nope", "b", "-y", "--json"])
        .fails(1);
    let json = out.schema_first();
    let names: Vec<&str> = json["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"], "{out:?}");
    assert_eq!(json["extensions"][0]["scope"], "global");
    assert_eq!(json["failed"][0]["name"], "nope");
    assert!(
        json["failed"][0]["error"]
            .as_str()
            .unwrap()
            .contains("no extension named \"nope\""),
        "{out:?}"
    );
    assert!(env.installed_names().is_empty());
}
