//! `zot ext install <path>`: copying, scopes, replacement, records, atomicity and locking.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::support::{Env, manifest, write_executable};

#[test]
fn copies_into_the_global_root_named_after_the_manifest() {
    let env = Env::new();
    let src = env.source("folder-name", "manifest-name");
    let dest = env.global_root().join("manifest-name");
    env.install(&src).stdout_is(&format!(
        "installed manifest-name 1.0.0 (global) in {}\n",
        dest.display()
    ));
    assert_eq!(
        fs::read_to_string(dest.join("extension.json")).unwrap(),
        manifest("manifest-name")
    );
    assert!(src.exists(), "the source is left alone");
}

#[test]
fn keeps_modes_and_relative_links_and_skips_git() {
    let env = Env::new();
    let src = env.source("modes", "modes");
    fs::create_dir_all(src.join("node_modules/.bin")).unwrap();
    fs::create_dir_all(src.join("node_modules/tool")).unwrap();
    write_executable(
        &src.join("node_modules/tool/cli.js"),
        "#!/usr/bin/env node\n",
    );
    symlink("../tool/cli.js", src.join("node_modules/.bin/tool")).unwrap();
    fs::set_permissions(src.join("run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
    fs::create_dir_all(src.join(".git/objects")).unwrap();
    fs::write(src.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    env.install(&src);
    let dest = env.global_root().join("modes");
    let mode = fs::metadata(dest.join("run.sh"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o750);
    let link = dest.join("node_modules/.bin/tool");
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_link(&link).unwrap(), Path::new("../tool/cli.js"));
    assert!(link.exists(), "the link resolves inside the installed copy");
    assert!(!dest.join(".git").exists());
}

#[test]
fn absolute_links_inside_the_tree_are_made_relative() {
    let env = Env::new();
    let src = env.source("abs", "abs");
    symlink(src.join("run.sh"), src.join("start")).unwrap();
    env.install(&src);
    let link = env.global_root().join("abs/start");
    assert_eq!(fs::read_link(&link).unwrap(), Path::new("run.sh"));
}

#[test]
fn project_flag_installs_into_dot_zot() {
    let env = Env::new();
    let src = env.source("p", "p");
    env.install_project(&src).stdout_is(&format!(
        "installed p 1.0.0 (project) in {}\n",
        env.project_root().join("p").display()
    ));
    assert!(env.project_root().join("p/extension.json").is_file());
    assert!(!env.global_root().join("p").exists());
}

#[test]
fn relative_source_paths_resolve_from_the_current_directory() {
    let env = Env::new();
    env.source("rel", "rel");
    env.install("../work/rel");
    assert!(env.global_root().join("rel/run.sh").is_file());
}

#[test]
fn existing_name_is_refused_naming_the_flag() {
    let env = Env::new();
    let src = env.source("e", "e");
    env.install(&src);
    // Another version of it (the same one again is nothing to do).
    fs::write(src.join("run.sh"), "#!/bin/sh\necho two\n").unwrap();
    let before = env.snapshot();
    env.zot(["ext", "install", src.to_str().unwrap()])
        .fails(1)
        .stderr_is(&format!(
            "error: extension \"e\" is already installed at {}; \
             pass --force to replace it (nothing was changed)\n",
            env.global_root().join("e").display()
        ));
    assert_eq!(env.snapshot(), before);
}

#[test]
fn force_replaces_the_old_copy_entirely() {
    let env = Env::new();
    let src = env.source("f", "f");
    fs::write(src.join("old-only"), "x").unwrap();
    env.install(&src);
    fs::remove_file(src.join("old-only")).unwrap();
    fs::write(src.join("new-only"), "y").unwrap();
    let dest = env.global_root().join("f");
    env.install_with(&src, &["--force"]).stdout_is(&format!(
        "replaced f 1.0.0 (global) in {}\n",
        dest.display()
    ));
    assert!(dest.join("new-only").exists());
    assert!(!dest.join("old-only").exists());
    let leftovers = fs::read_dir(env.home.join(".ext-store/staging"))
        .unwrap()
        .count();
    assert_eq!(leftovers, 0);
}

#[test]
fn records_where_the_install_came_from() {
    let env = Env::new();
    let src = env.source("rec", "rec");
    env.install(&src);
    let record: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(env.home.join(".ext-store/sources/rec.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["name"], "rec");
    assert_eq!(record["kind"], "path");
    assert_eq!(record["source"], src.display().to_string());
    assert_eq!(record["ref"], serde_json::Value::Null);
    assert!(record["installed_at"].as_str().unwrap().ends_with('Z'));
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(
        list.as_array().unwrap().len(),
        1,
        "the record is not an extension"
    );
}

#[test]
fn json_output_describes_the_install() {
    let env = Env::new();
    let src = env.source("j", "j");
    let out = env.install_with(&src, &["--json"]).json();
    assert_eq!(out["name"], "j");
    assert_eq!(out["version"], "1.0.0");
    assert_eq!(out["scope"], "global");
    assert_eq!(out["replaced"], false);
    assert_eq!(out["kind"], "path");
    assert_eq!(
        out["dir"],
        env.global_root().join("j").display().to_string()
    );
}

#[test]
fn notes_precedence_between_scopes() {
    let env = Env::new();
    env.installed("both", true);
    let src = env.source("both-g", "both");
    env.install(&src).stderr_is(&format!(
        "note: the project copy in {} takes precedence here\n",
        env.project_root().join("both").display()
    ));
}

#[test]
fn staging_left_by_a_killed_run_is_cleaned_by_the_next() {
    let env = Env::new();
    let stale = env.home.join(".ext-store/staging/stage-killed/tree");
    fs::create_dir_all(&stale).unwrap();
    fs::write(stale.join("half"), "x").unwrap();
    let src = env.source("next", "next");
    env.install(&src);
    let left: Vec<_> = fs::read_dir(env.home.join(".ext-store/staging"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A source tree big enough that a copy takes a while.
fn big_source(env: &Env, name: &str, files: usize) -> std::path::PathBuf {
    let src = env.source(name, name);
    for i in 0..files {
        let dir = src.join(format!("d{}", i % 20));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(format!("f{i}")), vec![b'x'; 4096]).unwrap();
    }
    src
}

fn count_files(dir: &Path) -> usize {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .count()
}

#[test]
fn kill_at_any_moment_leaves_nothing_or_a_complete_copy() {
    let env = Env::new();
    let src = big_source(&env, "big", 3000);
    let total = count_files(&src);
    let dest = env.global_root().join("big");
    for delay_ms in [0u64, 5, 15, 30, 60, 120, 250] {
        let mut child = env
            .zot(["ext", "install", "--force", src.to_str().unwrap()])
            .cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap();
        child.wait().unwrap();
        if dest.exists() {
            assert_eq!(
                count_files(&dest),
                total,
                "half copy after kill at {delay_ms} ms"
            );
        }
        let names = env.installed_names();
        assert!(names.is_empty() || names == ["big"], "{names:?}");
    }
    env.install_with(&src, &["--force"]);
    assert_eq!(count_files(&dest), total);
    assert_eq!(
        fs::read_dir(env.home.join(".ext-store/staging"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn concurrent_installs_are_serialised() {
    let env = Env::new();
    let a = big_source(&env, "ca", 500);
    let children: Vec<_> = (0..4)
        .map(|_| {
            env.zot(["ext", "install", "--force", a.to_str().unwrap()])
                .cmd
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() || stderr.contains("another zot ext command"),
            "{stderr}"
        );
    }
    assert_eq!(count_files(&env.global_root().join("ca")), count_files(&a));
    assert_eq!(env.installed_names(), ["ca"]);
}

#[test]
fn a_held_lock_makes_a_second_run_fail_clearly() {
    let env = Env::new();
    let state = env.home.join(".ext-store");
    fs::create_dir_all(&state).unwrap();
    let lock = fs::File::create(state.join("lock")).unwrap();
    lock.lock().unwrap();
    let src = env.source("locked", "locked");
    let started = std::time::Instant::now();
    env.zot(["ext", "install", src.to_str().unwrap()])
        .fails(1)
        .stderr_has("another zot ext command is changing");
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "it waits before giving up"
    );
    assert!(env.installed_names().is_empty());
}

#[test]
fn progress_is_shown_only_when_stderr_is_a_terminal() {
    let env = Env::new();
    let src = big_source(&env, "prog", 300);
    // No terminal, no progress.
    env.install(&src).stderr_is("");
    env.zot(["ext", "remove", "-y", "prog"]).ok();
    let install = ["ext", "install", src.to_str().unwrap()];
    env.zot_in_terminal_with(&install, "", &[("TERM", "xterm")])
        .success()
        .stdout_has("copying: ")
        .stdout_has("installed prog 1.0.0");
    // A dumb terminal cannot erase a line: no progress there either.
    env.zot(["ext", "remove", "-y", "prog"]).ok();
    env.zot_in_terminal(&install, "")
        .success()
        .stdout_lacks("copying: ")
        .stdout_has("installed prog 1.0.0");
}

#[test]
fn an_empty_source_is_a_usage_error() {
    let env = Env::new();
    env.zot(["ext", "install", ""]).fails(2).stderr_is(
        "error: the source is empty; give a folder that holds extension.json or a git URL\n",
    );
}

#[test]
fn a_missing_local_path_ending_in_dot_git_is_refused() {
    let env = Env::new();
    env.zot(["ext", "install", "../work/missing.git"])
        .fails(1)
        .stderr_is(
            "error: ../work/missing.git does not exist; \
             give a git repository or a folder that holds extension.json\n",
        );
}

#[test]
fn an_empty_folder_ending_in_dot_git_is_refused() {
    let env = Env::new();
    let plain = env.work.join("plain.git");
    fs::create_dir_all(&plain).unwrap();
    env.zot(["ext", "install", plain.to_str().unwrap()])
        .fails(1)
        .stderr_is(&format!(
            "error: {} is not a git repository, nor a folder with extension.json to copy\n",
            plain.display()
        ));
}

#[test]
fn an_extension_folder_ending_in_dot_git_is_copied() {
    let env = Env::new();
    let folder = env.source("folder.git", "dotgit");
    let out = env.install_with(&folder, &["--json"]).json();
    assert_eq!(
        (out["name"].as_str(), out["kind"].as_str()),
        (Some("dotgit"), Some("path"))
    );
}

#[test]
fn list_clears_what_a_killed_run_left_in_staging() {
    let env = Env::new();
    env.installed("present", false);
    let stale = env.home.join(".ext-store/staging/stage-killed/tree");
    fs::create_dir_all(&stale).unwrap();
    fs::write(stale.join("half"), "x").unwrap();
    env.zot(["ext", "list"]).ok();
    assert_eq!(
        fs::read_dir(env.home.join(".ext-store/staging"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn a_clash_with_a_local_source_is_refused_before_copying() {
    let env = Env::new();
    env.installed("early", false);
    let src = env.source("early-again", "early");
    // A named pipe would fail the copy; the clash is found first.
    let ok = std::process::Command::new("mkfifo")
        .arg(src.join("pipe"))
        .status()
        .unwrap();
    assert!(ok.success());
    env.zot(["ext", "install", src.to_str().unwrap()])
        .fails(1)
        .stderr_has("already installed")
        .stderr_lacks("special file");
}

/// `folder#path` names a subfolder of a local folder, as `URL#path` does for a repository
/// and `--subdir` for both; the install is recorded with that subfolder, so `update` follows it.
#[test]
fn a_local_folder_takes_a_subfolder_after_a_hash() {
    let env = Env::new();
    let clock = env.source("repo/extensions/clock", "clock");
    let arg = format!("{}#extensions/clock", env.work.join("repo").display());
    let out = env.install_with(&arg, &["--json"]).json();
    assert_eq!(out["name"], "clock");
    assert_eq!(out["subdir"], "extensions/clock");
    assert_eq!(out["source"], env.work.join("repo").display().to_string());
    fs::write(clock.join("new.txt"), "x").unwrap();
    env.zot(["ext", "update", "clock"]).ok();
    assert!(env.global_root().join("clock/new.txt").exists());
    // Relative to the current folder, as a path is.
    env.zot([
        "ext",
        "install",
        "../work/repo#extensions/clock",
        "--project",
    ])
    .ok();
    assert!(env.project_root().join("clock/extension.json").is_file());
    // A missing subfolder is named; the fragment and --subdir together are a usage error.
    env.zot(["ext", "install", "../work/repo#extensions/nope"])
        .fails(1)
        .stderr_has("has no folder extensions/nope");
    env.zot([
        "ext",
        "install",
        "../work/repo#extensions/clock",
        "--subdir",
        "extensions/clock",
    ])
    .fails(2)
    .stderr_has("either --subdir or SOURCE#path");
    env.zot(["ext", "install", "../work/repo#../repo"])
        .fails(2)
        .stderr_has("without \"..\"");
}

/// A folder literally named `folder#path` wins over the subfolder reading, and a note says
/// how to get the other one.
#[test]
fn a_folder_named_with_a_hash_is_taken_literally() {
    let env = Env::new();
    env.source("repo/ext", "inner");
    env.source("repo#ext", "literal");
    let done = env.install("../work/repo#ext");
    done.stdout_has("installed literal 1.0.0 (global)")
        .stderr_has("note: ../work/repo#ext exists under that name and is used as it is; for the folder ext inside ../work/repo, give: zot ext install ../work/repo --subdir ext");
    // No note when only the literal reading exists.
    env.source("solo#x", "solo");
    env.install("../work/solo#x").stderr_lacks("note:");
}

/// A working copy that is also a zot project has a `.zot/` folder (its extensions, the
/// store's state): the copy leaves it out, says so, and the extension works without it.
#[test]
fn a_source_folder_s_own_zot_state_is_never_copied() {
    let env = Env::new();
    let src = env.source("wc", "wc");
    fs::create_dir_all(src.join(".zot/.ext-store/staging")).unwrap();
    fs::create_dir_all(src.join(".zot/extensions")).unwrap();
    symlink(&src, src.join(".zot/extensions/wc")).unwrap();
    // A named pipe would make the audit refuse the source; it is not looked at.
    let ok = std::process::Command::new("mkfifo")
        .arg(src.join(".zot/.ext-store/lock-pipe"))
        .status()
        .unwrap();
    assert!(ok.success());
    // `.zot` below the top is the extension's own data.
    fs::create_dir_all(src.join("data/.zot")).unwrap();
    fs::write(src.join("data/.zot/keep"), "x").unwrap();
    let done = env.install(&src);
    done.stderr_has("note: left out the source's .zot/ folder");
    let dest = env.global_root().join("wc");
    assert!(!dest.join(".zot").exists());
    assert!(dest.join("data/.zot/keep").is_file());
    env.zot(["ext", "info", "wc", "--json"]).ok();
    let list = env.zot(["ext", "list", "--json"]).ok().json();
    let entry = &list["extensions"][0];
    assert_eq!(entry["name"], "wc");
    assert!(entry.get("error").is_none_or(Value::is_null), "{list}");
    // Without a `.zot/` there is no note.
    env.install(env.source("plain", "plain"))
        .stderr_lacks("note:");
}

/// A project that is itself an extension installs into its own `.zot/extensions`: the copy
/// leaves the store out, so it cannot copy the store into itself.
#[test]
fn a_project_installs_its_own_folder_without_its_store() {
    let env = Env::new();
    fs::write(env.project.join("extension.json"), manifest("self")).unwrap();
    env.install_project(".");
    let dest = env.project_root().join("self");
    assert!(dest.join("extension.json").is_file());
    assert!(!dest.join(".zot").exists());
    env.zot(["ext", "install", ".", "--project", "--force"])
        .ok();
    assert!(!dest.join(".zot").exists());
}

#[test]
fn json_keeps_warnings_and_notes_on_stderr() {
    let env = Env::new();
    let src = env.work.join("cased");
    fs::create_dir_all(src.join(".zot")).unwrap();
    fs::write(
        src.join("extension.json"),
        r#"{"Name": "cased", "exec": "./run"}"#,
    )
    .unwrap();
    write_executable(&src.join("run"), "#!/bin/sh\n");
    let done = env
        .zot(["ext", "--json", "install", src.to_str().unwrap()])
        .ok();
    assert_eq!(done.schema_first()["name"], "cased");
    done.stderr_has("warning: ")
        .stderr_has("\"Name\"")
        .stderr_has("note: left out the source's .zot/ folder");
}

#[test]
fn a_bad_subfolder_after_a_hash_is_named_as_written() {
    let env = Env::new();
    let src = env.source("we", "we");
    let arg = format!("{}#../..", src.display());
    env.zot(["ext", "install", &arg])
        .fails(2)
        .stderr_is(&format!(
            "error: the subfolder \"../..\" after # in {arg} must be a relative folder inside \
             the source, without \"..\"\n"
        ));
}

#[test]
fn keep_local_with_nothing_installed_says_it_had_no_effect() {
    let env = Env::new();
    let src = env.source("we", "we");
    env.zot(["ext", "install", src.to_str().unwrap(), "--keep-local"])
        .ok()
        .stderr_has("note: --keep-local had no effect: no copy of we was installed before");
}

/// The mode of `path` (permission bits and set-ID and sticky bits).
fn mode_of(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A source with a set-user-ID program, a set-group-ID file, a 0777 file and a 0777 folder
/// (owned by `nobody` when the tests run as root): the installed copy keeps none of those
/// bits, only the executable ones, and belongs to the user who installed it.
#[test]
fn installed_modes_drop_set_id_sticky_and_group_and_other_write() {
    use std::os::unix::fs::MetadataExt;
    let env = Env::new();
    let src = env.source("set-id", "set-id");
    fs::copy("/usr/bin/id", src.join("whoami")).unwrap();
    fs::write(src.join("group-file"), "g\n").unwrap();
    fs::write(src.join("open-file"), "o\n").unwrap();
    fs::create_dir(src.join("open-folder")).unwrap();
    fs::write(src.join("open-folder/inside"), "i\n").unwrap();
    let root = crate::support::is_root();
    if root {
        let chown = std::process::Command::new("chown")
            .args(["-R", "nobody"])
            .arg(&src)
            .status()
            .unwrap();
        assert!(chown.success());
    }
    for (path, mode) in [
        ("whoami", 0o4755),
        ("group-file", 0o2755),
        ("open-file", 0o777),
        ("open-folder", 0o1777),
        ("", 0o777),
    ] {
        fs::set_permissions(src.join(path), fs::Permissions::from_mode(mode)).unwrap();
        assert_eq!(mode_of(&src.join(path)), mode, "{path}: set as asked");
    }

    env.install(&src);
    let dest = env.global_root().join("set-id");
    for path in ["whoami", "group-file", "open-file", "open-folder", ""] {
        assert_eq!(mode_of(&dest.join(path)), 0o755, "{path:?}");
    }
    assert_eq!(
        mode_of(&dest.join("run.sh")) & 0o111,
        0o111,
        "executable bits stay"
    );
    let me = fs::metadata(&env.home).unwrap().uid();
    assert_eq!(fs::metadata(dest.join("whoami")).unwrap().uid(), me);
    env.zot(["ext", "verify", "set-id"]).ok();

    if !root {
        eprintln!("skipped running the installed program as nobody: the tests do not run as root");
        return;
    }
    // Let nobody reach the installed copy, then run it as nobody: no root privileges.
    for dir in [env.home.parent().unwrap(), &env.home, &env.global_root()] {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=65534", "--clear-groups", "--"])
        .arg(dest.join("whoami"))
        .arg("-u")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_ne!(String::from_utf8_lossy(&out.stdout).trim(), "0", "euid");
}

/// Given the manifest instead of its folder, the command suggested is quoted for sh, so
/// pasting it works for a folder with a space or a quote in its name.
#[test]
fn the_folder_suggested_for_a_manifest_is_quoted_for_sh() {
    let env = Env::new();
    let src = env.source("my ext's", "spaced");
    let manifest = src.join("extension.json");
    let out = env
        .zot([
            OsStr::new("ext"),
            OsStr::new("install"),
            manifest.as_os_str(),
        ])
        .fails(1);
    let quoted = format!("'{}/my ext'\\''s'", env.work.display());
    out.stderr_has(&format!(
        "install its folder instead: zot ext install {quoted}"
    ))
    .stderr_one_line();
}

/// A source whose manifest runs `./.venv/bin/python hello.py` and ships no virtual
/// environment (nothing for the prepare step to make one from).
fn venv_source(env: &Env) -> std::path::PathBuf {
    env.source_with_manifest(
        "hello-venv",
        r#"{"name": "hello-venv", "version": "1.0.0", "exec": "./.venv/bin/python",
            "args": ["hello.py"], "language": "python"}"#,
    )
}

/// An `exec` that is not in the placed copy is a warning, not a refusal: the copy is
/// installed (list shows it enabled), and the warning names the file and how to make it.
#[test]
fn an_exec_missing_after_install_is_a_warning_that_names_the_fix() {
    let env = Env::new();
    let src = venv_source(&env);
    let dest = env.global_root().join("hello-venv");
    let out = env.install_with(&src, &["--no-prepare"]);
    out.stderr_has(&format!(
        "warning: hello-venv: \"exec\" ./.venv/bin/python does not exist ({}/.venv/bin/python), so zot cannot start it; the virtual environment ./.venv/bin/python is in was not made: its step has not run; run it: zot ext prepare hello-venv",
        dest.display(),
    ));
    assert!(dest.join("extension.json").is_file());
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list[0]["name"], "hello-venv");
    assert_eq!(list[0]["enabled"], true);
}

#[test]
fn install_json_lists_the_missing_exec_under_warnings() {
    let env = Env::new();
    let src = venv_source(&env);
    let out = env.install_with(&src, &["--json", "--no-prepare"]);
    let warnings = out.schema_first()["warnings"].clone();
    assert_eq!(warnings.as_array().map(Vec::len), Some(1), "{out:?}");
    assert!(
        warnings[0]["message"]
            .as_str()
            .unwrap()
            .contains("\"exec\" ./.venv/bin/python does not exist"),
        "{out:?}"
    );
    assert!(
        warnings[0]["fix"]
            .as_str()
            .unwrap()
            .contains("run it: zot ext prepare hello-venv"),
        "{out:?}"
    );
    let fine = env.source("fine", "fine");
    let out = env.install_with(&fine, &["--json"]);
    assert_eq!(out.schema_first()["warnings"], serde_json::json!([]));
    out.stderr_lacks("warning:");
}

/// `add` and `sync` place through the same pipeline and say the same.
#[test]
fn add_and_sync_warn_about_a_missing_exec_too() {
    let env = Env::new();
    let src = venv_source(&env);
    let src = src.to_str().unwrap();
    let out = env.zot(["ext", "add", src, "--json", "--no-prepare"]).ok();
    out.stderr_has("warning: hello-venv: \"exec\" ./.venv/bin/python does not exist");
    assert_eq!(
        out.schema_first()["warnings"].as_array().map(Vec::len),
        Some(1)
    );
    fs::remove_dir_all(env.project_root().join("hello-venv")).unwrap();
    let out = env.zot(["ext", "sync"]).ok();
    out.stderr_has("warning: hello-venv: \"exec\" ./.venv/bin/python does not exist");
    out.stdout_has("hello-venv");
}

/// `--dry-run` fetches into a temporary store to read the manifest, says where the copy
/// would go, and changes nothing: not the store (no staging left, no lock, no folder made),
/// not the project.
#[test]
fn dry_run_says_where_it_would_install_and_changes_nothing() {
    let env = Env::new();
    let src = env.source("dry", "dry");
    let before = env.snapshot();
    let out = env.install_with(&src, &["--dry-run"]);
    out.stdout_is(&format!(
        "would install dry 1.0.0 (global) in {}\n",
        env.global_root().join("dry").display()
    ))
    .stderr_is("note: nothing was changed (dry run)\n");
    assert_eq!(env.snapshot(), before);
    assert!(!env.home.join(".ext-store").exists(), "no store was made");
    assert!(!env.project.join(".zot").exists());
}

/// Over an installed copy: its version and source, and what `--force` would carry over
/// (the files the extension wrote); without `--force` the dry run fails as the install
/// would, after saying so.
#[test]
fn dry_run_over_an_installed_copy_names_it_and_what_force_would_carry_over() {
    let env = Env::new();
    let src = env.source("dry", "dry");
    env.install(&src);
    let dest = env.global_root().join("dry");
    fs::write(dest.join("state.json"), "{}").unwrap();
    let before = env.snapshot();
    let expected = format!(
        "would replace dry 1.0.0 (global) in {}\n  installed now: 1.0.0 from {}\n  would carry over: state.json\n",
        dest.display(),
        src.display()
    );
    env.install_with(&src, &["--dry-run", "--force"])
        .stdout_is(&expected);
    env.zot([
        OsStr::new("ext"),
        OsStr::new("install"),
        src.as_os_str(),
        OsStr::new("--dry-run"),
    ])
    .fails(1)
    .stdout_is(&expected)
    .stderr_has("pass --force to replace it (nothing was changed: dry run)");
    assert_eq!(env.snapshot(), before);
    let staging = env.home.join(".ext-store/staging");
    let left: Vec<_> = fs::read_dir(&staging)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn dry_run_json_has_the_plan() {
    let env = Env::new();
    let src = env.source("dry", "dry");
    env.install(&src);
    fs::write(env.global_root().join("dry/state.json"), "{}").unwrap();
    let out = env.install_with(&src, &["--dry-run", "--force", "--json"]);
    let json = out.schema_first();
    assert_eq!(json["dry_run"], true);
    assert_eq!(json["name"], "dry");
    assert_eq!(json["kind"], "path");
    assert_eq!(
        json["dir"],
        env.global_root().join("dry").display().to_string()
    );
    assert_eq!(json["replaces"]["version"], "1.0.0");
    assert_eq!(json["replaces"]["source"], src.display().to_string());
    assert_eq!(
        json["carry_over"]["items"],
        serde_json::json!([{"path": "state.json", "action": "carry"}])
    );
}

/// `add --dry-run` writes no project file (nor lock) and installs nothing.
#[test]
fn add_dry_run_writes_no_project_file() {
    let env = Env::new();
    let src = env.source("dry", "dry");
    let before = env.snapshot();
    env.zot(["ext", "add", src.to_str().unwrap(), "--dry-run"])
        .ok()
        .stdout_is(&format!(
            "would install dry 1.0.0 (project) in {}\n  and record it in {}\n",
            env.project_root().join("dry").display(),
            env.project.join(".zot/extensions.json").display()
        ));
    assert_eq!(env.snapshot(), before);
    assert!(!env.project.join(".zot").exists());
}

/// `update` places a new version through its own path and warns the same way.
#[test]
fn update_warns_about_a_missing_exec_too() {
    let env = Env::new();
    let src = venv_source(&env);
    env.install_with(&src, &["--no-prepare"]);
    fs::write(src.join("hello.py"), "print('two')\n").unwrap();
    let out = env
        .zot(["ext", "update", "hello-venv", "--json", "--no-prepare"])
        .ok();
    out.stderr_has("warning: hello-venv: \"exec\" ./.venv/bin/python does not exist");
    let element = &out.extensions()[0];
    assert_eq!(element["status"], "updated", "{out:?}");
    assert_eq!(
        element["warnings"].as_array().map(Vec::len),
        Some(1),
        "{out:?}"
    );
}

/// Setup scripts and CI run an install again: the same source at the same tree is no error.
#[test]
fn installing_again_what_is_installed_is_nothing_to_do() {
    let env = Env::new();
    let src = env.source("clock-src", "clock");
    env.install(&src);
    let before = env.snapshot();
    env.install(&src).stdout_is(&format!(
        "already installed clock 1.0.0 (global) in {} (same source, same version); nothing to do\n",
        env.global_root().join("clock").display()
    ));
    assert_eq!(env.snapshot(), before, "nothing changed");
    let json = env.install_with(&src, &["--json"]).json();
    assert_eq!(json["already_installed"], true, "{json}");
    // Another version of it is still a clash.
    fs::write(src.join("run.sh"), "#!/bin/sh\necho two\n").unwrap();
    env.zot(["ext", "install", src.to_str().unwrap()])
        .fails(1)
        .stderr_has("is already installed at")
        .stderr_has("pass --force to replace it");
    // So is another source of the same name.
    let other = env.source("elsewhere", "clock");
    env.zot(["ext", "install", other.to_str().unwrap()])
        .fails(1)
        .stderr_has("pass --force to replace it");
}

#[test]
fn adding_again_what_the_project_file_has_is_nothing_to_do() {
    let env = Env::new();
    let src = env.source("clock-src", "clock");
    let src = src.to_str().unwrap();
    env.zot(["ext", "add", src]).ok();
    let file = fs::read_to_string(env.project.join(".zot/extensions.json")).unwrap();
    env.zot(["ext", "add", src])
        .ok()
        .stdout_has("clock is already in ")
        .stdout_has("(same source, same version); nothing to do");
    assert_eq!(
        fs::read_to_string(env.project.join(".zot/extensions.json")).unwrap(),
        file
    );
}
