//! The store's own state folder (`<base>/.ext-store`) under attack and under `kill -9`:
//! links planted in it are refused without deleting anything, symlinked manifests are
//! never written through, a kill at any named point leaves records matching trees, and a
//! command that waited for the lock says what happened meanwhile.

use std::fs::{self, File};
use std::os::unix::fs::{MetadataExt, symlink};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::{Done, Env, manifest, write_executable};

/// A folder outside every root with one file in it, which no command may touch.
fn make_victim(env: &Env) -> PathBuf {
    let dir = env.work.parent().unwrap().join("victim");
    fs::create_dir_all(dir.join("sub")).unwrap();
    fs::write(dir.join("precious.txt"), "keep me").unwrap();
    fs::write(dir.join("sub/also.txt"), "keep me too").unwrap();
    dir
}

fn assert_victim_intact(dir: &Path) {
    assert_eq!(
        fs::read_to_string(dir.join("precious.txt")).unwrap(),
        "keep me"
    );
    assert_eq!(
        fs::read_to_string(dir.join("sub/also.txt")).unwrap(),
        "keep me too"
    );
}

/// Replaces `<state>/<sub>` by a symbolic link to `to`.
fn plant_link(state: &Path, sub: &str, to: &Path) {
    let path = state.join(sub);
    let _ = fs::remove_dir_all(&path);
    let _ = fs::remove_file(&path);
    fs::create_dir_all(state).unwrap();
    symlink(to, &path).unwrap();
}

/// One line of error naming `what` and saying how to fix it.
fn one_line_naming(done: &Done, what: &str) {
    done.stderr_one_line()
        .stderr_has(what)
        .stderr_has("remove it");
}

#[test]
fn linked_trash_or_staging_in_zot_home_is_refused_by_every_command() {
    let commands: &[&[&str]] = &[
        &["ext", "list"],
        &["ext", "info", "x"],
        &["ext", "install", "SRC"],
        &["ext", "enable", "x"],
        &["ext", "disable", "x"],
        &["ext", "remove", "x", "--yes"],
    ];
    for sub in ["trash", "staging", "sources"] {
        for command in commands {
            let env = Env::new();
            env.installed("x", false);
            let src = env.source("other", "other");
            let victim = make_victim(&env);
            plant_link(&env.home.join(".ext-store"), sub, &victim);
            let args: Vec<String> = command
                .iter()
                .map(|a| a.replace("SRC", src.to_str().unwrap()))
                .collect();
            let done = env.zot(&args).fails(1);
            one_line_naming(&done, &format!(".ext-store/{sub}"));
            assert_victim_intact(&victim);
            assert!(
                env.global_root().join("x/extension.json").exists(),
                "{sub} {command:?}"
            );
        }
    }
}

#[test]
fn a_cloned_project_with_a_linked_trash_cannot_empty_a_folder_outside() {
    let env = Env::new();
    let victim = make_victim(&env);
    let state = env.project.join(".zot/.ext-store");
    fs::create_dir_all(&state).unwrap();
    fs::write(state.join("lock"), "").unwrap();
    // As committed in a repository: relative, from .zot/.ext-store to beside the project.
    symlink("../../../victim", state.join("trash")).unwrap();
    assert!(state.join("trash/precious.txt").exists());
    let done = env.zot(["ext", "list"]).fails(1);
    one_line_naming(&done, ".ext-store/trash");
    assert_victim_intact(&victim);
}

#[test]
fn a_project_with_a_linked_staging_cannot_empty_a_folder_outside_on_install() {
    let env = Env::new();
    let victim = make_victim(&env);
    let state = env.project.join(".zot/.ext-store");
    fs::create_dir_all(&state).unwrap();
    symlink("../../../victim", state.join("staging")).unwrap();
    let src = env.source("p", "p");
    let done = env
        .zot(["ext", "install", "--project", src.to_str().unwrap()])
        .fails(1);
    one_line_naming(&done, ".ext-store/staging");
    assert_victim_intact(&victim);
    assert!(!env.project_root().join("p").exists());
}

#[test]
fn a_state_folder_or_lock_that_is_not_what_it_must_be_is_refused() {
    // The state folder itself a link.
    let env = Env::new();
    let victim = make_victim(&env);
    symlink(&victim, env.home.join(".ext-store")).unwrap();
    let src = env.source("a", "a");
    let done = env.zot(["ext", "install", src.to_str().unwrap()]).fails(1);
    one_line_naming(&done, ".ext-store");
    assert_victim_intact(&victim);
    assert!(!victim.join("staging").exists() && !victim.join("lock").exists());

    // The lock a link, a folder, or a named pipe (which must not hang).
    for kind in ["link", "dir", "fifo"] {
        let env = Env::new();
        let victim = make_victim(&env);
        let state = env.home.join(".ext-store");
        fs::create_dir_all(&state).unwrap();
        let lock = state.join("lock");
        match kind {
            "link" => symlink(victim.join("precious.txt"), &lock).unwrap(),
            "dir" => fs::create_dir(&lock).unwrap(),
            _ => {
                let status = std::process::Command::new("mkfifo")
                    .arg(&lock)
                    .status()
                    .unwrap();
                assert!(status.success());
            }
        }
        let src = env.source("a", "a");
        let started = Instant::now();
        let done = env.zot(["ext", "install", src.to_str().unwrap()]).fails(1);
        assert!(started.elapsed() < Duration::from_secs(5), "{kind}: slow");
        one_line_naming(&done, ".ext-store/lock");
        assert_victim_intact(&victim);
        assert!(!env.global_root().join("a").exists(), "{kind}");
    }
}

/// A file outside the roots that `extensions/x/extension.json` links to.
fn linked_manifest(env: &Env, enabled: bool) -> (PathBuf, PathBuf) {
    let dir = env.installed("x", false);
    let outside = env.work.join("outside.json");
    let text = manifest("x").replace("\"enabled\": true", &format!("\"enabled\": {enabled}"));
    fs::write(&outside, &text).unwrap();
    fs::remove_file(dir.join("extension.json")).unwrap();
    symlink(&outside, dir.join("extension.json")).unwrap();
    (dir, outside)
}

#[test]
fn a_symlinked_manifest_is_never_written_through() {
    for (command, enabled) in [("disable", true), ("enable", false)] {
        let env = Env::new();
        let (dir, outside) = linked_manifest(&env, enabled);
        let before = fs::read(&outside).unwrap();
        let inode = fs::metadata(&outside).unwrap().ino();
        let done = env.zot(["ext", command, "x"]).fails(1);
        done.stderr_one_line();
        done.stderr_has("extension.json")
            .stderr_has("symbolic link");
        assert_eq!(fs::read(&outside).unwrap(), before, "{command}");
        assert_eq!(fs::metadata(&outside).unwrap().ino(), inode, "{command}");
        assert!(
            fs::symlink_metadata(dir.join("extension.json"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}

// --- kill -9 at the named points ---------------------------------------------------------

/// Runs `zot args` with `ZOT_EXT_CRASH_AT=point` and asserts it died by SIGKILL.
fn killed_at(env: &Env, point: &str, args: &[&str]) {
    let mut run = env.zot(args).env("ZOT_EXT_CRASH_AT", point);
    let out = run.cmd.stdin(Stdio::null()).output().expect("spawn zot");
    assert_eq!(
        out.status.signal(),
        Some(9),
        "{point}: expected SIGKILL, got {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A source folder `work/<dir>` for version `version` of `x`, with a marker file naming it.
fn versioned_source(env: &Env, dir: &str, version: &str) -> PathBuf {
    let path = env.work.join(dir);
    fs::create_dir_all(&path).unwrap();
    fs::write(
        path.join("extension.json"),
        manifest("x").replace("1.0.0", version),
    )
    .unwrap();
    write_executable(&path.join("run.sh"), "#!/bin/sh\nexit 0\n");
    fs::write(path.join("marker"), version).unwrap();
    path
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The version the installed `x` is, checked whole; `None` when it is not installed.
fn installed_version(env: &Env) -> Option<String> {
    let dir = env.global_root().join("x");
    if fs::symlink_metadata(&dir).is_err() {
        return None;
    }
    assert_eq!(
        names_in(&dir),
        ["extension.json", "marker", "run.sh"],
        "the tree is not whole, or something temporary is visible in it"
    );
    let version = fs::read_to_string(dir.join("marker")).unwrap();
    let manifest = fs::read_to_string(dir.join("extension.json")).unwrap();
    assert!(manifest.contains(&format!("\"version\": \"{version}\"")));
    Some(version)
}

/// The source folder the record of `x` names, if there is a record.
fn recorded_source(env: &Env) -> Option<String> {
    let text = fs::read_to_string(env.home.join(".ext-store/sources/x.json")).ok()?;
    let record: serde_json::Value = serde_json::from_str(&text).unwrap();
    Some(record["source"].as_str().unwrap().to_string())
}

/// After a kill: the next read-only command succeeds and resolves the journal; the tree
/// is `expected` (old or new, whole) and the record names its source; the state folder
/// holds no leftovers; `info` knows where it came from.
fn check_invariants(env: &Env, allowed: &[(Option<&str>, Option<&Path>)], context: &str) {
    env.zot(["ext", "list"]).ok();
    let version = installed_version(env);
    let source = recorded_source(env);
    let found = allowed
        .iter()
        .find(|(v, _)| v.as_deref() == version.as_deref());
    let Some((_, expected_source)) = found else {
        panic!("{context}: unexpected version {version:?}");
    };
    assert_eq!(
        source.as_deref(),
        expected_source.map(|p| p.to_str().unwrap()),
        "{context}: the record does not match the tree ({version:?})"
    );
    for sub in ["staging", "trash", "pending"] {
        assert_eq!(
            names_in(&env.home.join(".ext-store").join(sub)),
            Vec::<String>::new(),
            "{context}: {sub} not emptied"
        );
    }
    if version.is_some() {
        env.zot(["ext", "info", "x"]).ok().stdout_lacks("by hand");
    }
}

const INSTALL_POINTS: [&str; 5] = [
    "stage.done",
    "place.before",
    "place.after",
    "place.all",
    "record.after",
];

#[test]
fn a_kill_during_a_first_install_leaves_nothing_or_the_whole_install() {
    for point in INSTALL_POINTS {
        let env = Env::new();
        let v1 = versioned_source(&env, "v1", "1.0.0");
        killed_at(&env, point, &["ext", "install", v1.to_str().unwrap()]);
        check_invariants(&env, &[(None, None), (Some("1.0.0"), Some(&v1))], point);
        // The next install (or a repeat with --force) succeeds.
        env.install_with(&v1, &["--force"]);
        check_invariants(&env, &[(Some("1.0.0"), Some(&v1))], point);
    }
}

#[test]
fn a_kill_during_install_force_or_update_leaves_the_old_or_the_new_version() {
    for point in INSTALL_POINTS {
        for how in ["install --force", "update"] {
            let env = Env::new();
            let v1 = versioned_source(&env, "v1", "1.0.0");
            env.install(&v1);
            let context = format!("{how} at {point}");
            let new_source = if how == "update" {
                // update re-reads the recorded folder, which now holds version 2.
                versioned_source(&env, "v1", "2.0.0");
                killed_at(&env, point, &["ext", "update", "x"]);
                v1.clone()
            } else {
                let v2 = versioned_source(&env, "v2", "2.0.0");
                killed_at(
                    &env,
                    point,
                    &["ext", "install", "--force", v2.to_str().unwrap()],
                );
                v2
            };
            check_invariants(
                &env,
                &[
                    (Some("1.0.0"), Some(&v1)),
                    (Some("2.0.0"), Some(&new_source)),
                ],
                &context,
            );
        }
    }
}

#[test]
fn a_kill_during_remove_leaves_the_extension_or_nothing() {
    for point in ["remove.moved", "remove.unrecorded"] {
        let env = Env::new();
        let v1 = versioned_source(&env, "v1", "1.0.0");
        env.install(&v1);
        killed_at(&env, point, &["ext", "remove", "x", "--yes"]);
        check_invariants(&env, &[(None, None)], point);
        env.install(&v1);
    }
}

#[test]
fn a_kill_during_disable_leaves_no_temporary_file_in_the_extension() {
    for point in ["toggle.temp", "toggle.after"] {
        let env = Env::new();
        let v1 = versioned_source(&env, "v1", "1.0.0");
        env.install(&v1);
        killed_at(&env, point, &["ext", "disable", "x"]);
        check_invariants(&env, &[(Some("1.0.0"), Some(&v1))], point);
        let text = fs::read_to_string(env.global_root().join("x/extension.json")).unwrap();
        let whole = [true, false]
            .iter()
            .any(|on| text == manifest("x").replace("true", &on.to_string()));
        assert!(whole, "{point}: manifest is neither old nor new:\n{text}");
        env.zot(["ext", "enable", "x"]).ok();
        assert_eq!(names_in(&env.home.join(".ext-store/staging")).len(), 0);
    }
}

#[test]
fn a_kill_while_toggling_a_linked_extension_is_cleaned_by_the_next_toggle() {
    let env = Env::new();
    let work = versioned_source(&env, "working-copy", "1.0.0");
    env.zot(["ext", "link", work.to_str().unwrap()]).ok();
    killed_at(&env, "toggle.temp", &["ext", "disable", "x"]);
    env.zot(["ext", "disable", "x"]).ok();
    assert_eq!(names_in(&work), ["extension.json", "marker", "run.sh"]);
}

/// A working copy on another file system than the store (tmpfs): the temporary manifest
/// cannot go to staging, so it goes beside the manifest and the next toggle deletes it.
#[test]
fn a_kill_while_toggling_a_working_copy_on_another_file_system_is_cleaned_too() {
    let shm = Path::new("/dev/shm");
    let same_fs =
        |a: &Path, b: &Path| fs::metadata(a).unwrap().dev() == fs::metadata(b).unwrap().dev();
    let env = Env::new();
    if !shm.is_dir() || same_fs(shm, &env.home) {
        eprintln!("skipped: no tmpfs at /dev/shm apart from the test's file system");
        return;
    }
    let other = tempfile::tempdir_in(shm).unwrap();
    let work = other.path().join("working-copy");
    fs::create_dir(&work).unwrap();
    for file in ["extension.json", "marker", "run.sh"] {
        let from = versioned_source(&env, "wc", "1.0.0").join(file);
        fs::copy(from, work.join(file)).unwrap();
    }
    env.zot(["ext", "link", work.to_str().unwrap()]).ok();
    killed_at(&env, "toggle.temp", &["ext", "disable", "x"]);
    let left: Vec<String> = names_in(&work)
        .into_iter()
        .filter(|n| n.starts_with(".extension.json."))
        .collect();
    assert_eq!(
        left.len(),
        1,
        "the killed run's temporary file is beside the manifest"
    );
    env.zot(["ext", "disable", "x"]).ok();
    assert_eq!(names_in(&work), ["extension.json", "marker", "run.sh"]);
    assert!(
        fs::read_to_string(work.join("extension.json"))
            .unwrap()
            .contains("\"enabled\": false")
    );
}

// --- waiting for the lock ----------------------------------------------------------------

/// Holds the global store's lock, as another zot ext command would.
fn hold_lock(env: &Env) -> File {
    let file = File::options()
        .write(true)
        .open(env.home.join(".ext-store/lock"))
        .unwrap();
    file.lock().unwrap();
    file
}

/// Starts `zot args`, lets it reach the lock, runs `meanwhile` while it waits, then
/// releases the lock and returns what the command said.
fn waiting(env: &Env, args: &[&str], meanwhile: impl FnOnce()) -> (i32, String) {
    // What the command printed on both streams (update reports per extension on stdout).
    let lock = hold_lock(env);
    let mut run = env.zot(args);
    let child = run
        .cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    thread::sleep(Duration::from_millis(700));
    meanwhile();
    drop(lock);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// What `zot ext remove x` does, done by hand while the test holds the lock.
fn remove_by_hand(env: &Env) {
    fs::remove_dir_all(env.global_root().join("x")).unwrap();
    let _ = fs::remove_file(env.home.join(".ext-store/sources/x.json"));
}

#[test]
fn a_command_that_waited_while_its_extension_was_removed_says_so() {
    for args in [
        &["ext", "disable", "x"][..],
        &["ext", "enable", "x"],
        &["ext", "remove", "x", "--yes"],
        &["ext", "update", "x"],
        &["ext", "prepare", "x"],
    ] {
        let env = Env::new();
        env.installed("x", false);
        let (code, stderr) = waiting(&env, args, || remove_by_hand(&env));
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains(
                "\"x\" was removed by another zot ext command while this one waited for the lock"
            ),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("not found"), "{args:?}: {stderr}");
    }
}

/// `enable`, `disable` and `prepare` judge the manifest under the lock only: a folder read
/// before it, while another command moved it, looks like one without its manifest.
#[test]
fn a_command_judges_the_manifest_it_finds_after_the_lock() {
    for (verb, meanwhile) in [
        ("disable", "restored"),
        ("enable", "removed"),
        ("prepare", "restored"),
        ("prepare", "removed"),
    ] {
        let env = Env::new();
        let dir = env.installed("x", false);
        let manifest = fs::read(dir.join("extension.json")).unwrap();
        fs::remove_file(dir.join("extension.json")).unwrap();
        let (code, out) = waiting(&env, &["ext", verb, "x"], || {
            if meanwhile == "restored" {
                fs::write(dir.join("extension.json"), &manifest).unwrap();
            } else {
                remove_by_hand(&env);
            }
        });
        assert!(!out.contains("fix the manifest"), "{verb}: {out}");
        assert!(!out.contains("not found"), "{verb}: {out}");
        if meanwhile == "restored" {
            assert_eq!(code, 0, "{verb}: {out}");
            let done = if verb == "disable" { "disabled x" } else { "x" };
            assert!(out.contains(done), "{out}");
        } else {
            assert_eq!(code, 1, "{verb}: {out}");
            assert!(out.contains("\"x\" was removed by another zot ext command while this one waited for the lock"), "{out}");
        }
    }
}

#[test]
fn an_install_that_waited_while_the_name_was_taken_says_it_is_installed() {
    let env = Env::new();
    fs::create_dir_all(env.home.join(".ext-store")).unwrap();
    fs::write(env.home.join(".ext-store/lock"), "").unwrap();
    let src = env.source("x-src", "x");
    let other = env.source("x-other", "x");
    let (code, stderr) = waiting(&env, &["ext", "install", src.to_str().unwrap()], || {
        let dest = env.global_root().join("x");
        fs::create_dir_all(&dest).unwrap();
        for file in ["extension.json", "run.sh"] {
            fs::copy(other.join(file), dest.join(file)).unwrap();
        }
    });
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("already installed"), "{stderr}");
}

#[test]
fn an_update_right_after_a_kill_reads_the_record_the_journal_finished() {
    let env = Env::new();
    let v1 = versioned_source(&env, "v1", "1.0.0");
    env.install(&v1);
    let v2 = versioned_source(&env, "v2", "2.0.0");
    killed_at(
        &env,
        "place.after",
        &["ext", "install", "--force", v2.to_str().unwrap()],
    );
    // No read-only command in between: update itself must finish the journal first.
    env.zot(["ext", "update", "x"])
        .ok()
        .stdout_has("x (global) is up to date");
    check_invariants(&env, &[(Some("2.0.0"), Some(&v2))], "update after a kill");
}

/// A journal entry as earlier versions wrote it, the file list inline (now it is written
/// beside the entry), left by a run killed after the rename: the next command commits the
/// entry's record and list, byte for byte the list a fresh install writes.
#[test]
fn an_entry_with_its_file_list_inline_is_settled_by_the_next_command() {
    let env = Env::new();
    env.install(env.source("inline", "inline"));
    let state = env.home.join(".ext-store");
    let written = fs::read(state.join("files/inline.json")).unwrap();
    let list: serde_json::Value = serde_json::from_slice(&written).unwrap();
    let record = fs::read(state.join("sources/inline.json")).unwrap();
    let mut record: serde_json::Value = serde_json::from_slice(&record).unwrap();
    record["source"] = "/from/the/journal".into();
    let tree = fs::symlink_metadata(env.global_root().join("inline")).unwrap();
    let entry = serde_json::json!({
        "record": record,
        "tree": {"dev": tree.dev(), "ino": tree.ino()},
        "files": list,
    });
    fs::write(
        state.join("pending/inline.json"),
        serde_json::to_vec(&entry).unwrap(),
    )
    .unwrap();
    fs::remove_file(state.join("files/inline.json")).unwrap();
    env.zot(["ext", "list"]).ok();
    assert_eq!(fs::read_dir(state.join("pending")).unwrap().count(), 0);
    assert_eq!(fs::read(state.join("files/inline.json")).unwrap(), written);
    let committed = fs::read(state.join("sources/inline.json")).unwrap();
    let committed: serde_json::Value = serde_json::from_slice(&committed).unwrap();
    assert_eq!(committed["source"], "/from/the/journal");
}
