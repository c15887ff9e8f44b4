//! `zot ext prepare`: an installed extension's step run again in a staged copy and swapped
//! in (the files it wrote at run time kept, its file list unchanged); a failure, and Ctrl-C
//! mid-step, leave the installed copy as it was and staging empty; a linked working copy is
//! refused with the command to run in it.

use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::prepare::{
    GO_MAIN, assert_no_sleepers, assert_staging_empty, fake_go, go_extension, have_go, have_npm,
    npm_extension, output_of, sleepers, sleeping_go, unprepared_npm_with_hand_made_modules, write,
    zot,
};
use crate::support::{Env, write_executable};

/// A Go extension `hello` whose main package is `cmd/hello`, installed without its build.
fn installed_unbuilt(env: &Env) -> PathBuf {
    let src = go_extension(env, "hello", "1.19");
    write(
        &src.join("lib.go"),
        "package hello\n\nconst Greeting = \"hi\"\n",
    );
    write(&src.join("cmd/hello/main.go"), GO_MAIN);
    zot(
        env,
        &["ext", "install", "--no-prepare", src.to_str().unwrap()],
    )
    .ok();
    let dest = env.global_root().join("hello");
    assert!(!dest.join("hello").exists());
    dest
}

/// The store without the logs (a step writes its log whatever happens).
fn store(env: &Env) -> Vec<(String, String)> {
    env.snapshot()
        .into_iter()
        .filter(|(path, _)| !path.contains("/logs") && !path.contains("/build-cache"))
        .collect()
}

#[test]
fn prepare_builds_an_installed_copy_and_keeps_what_it_wrote() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    let dest = installed_unbuilt(&env);
    fs::write(dest.join("state.json"), "{\"runs\": 3}\n").unwrap();
    let done = zot(&env, &["ext", "prepare", "hello", "--json"]).ok();
    let json = done.json();
    let ext = &json["extensions"][0];
    assert_eq!(ext["status"], "prepared", "{json}");
    assert_eq!(
        ext["prepared"]["step"],
        "go build -trimpath -buildvcs=false -o ./hello ./cmd/hello"
    );
    assert!(ext["prepared"]["ran_at"].is_string(), "{json}");
    assert_eq!(output_of(&dest.join("hello")), "hello from go\n");
    assert_eq!(
        fs::read_to_string(dest.join("state.json")).unwrap(),
        "{\"runs\": 3}\n"
    );
    // What the install placed is unchanged: the source files and their list.
    zot(&env, &["ext", "verify", "hello"]).ok();
    let record = fs::read_to_string(env.home.join(".ext-store/sources/hello.json")).unwrap();
    assert!(
        record.contains("\"outputs\": [\n      \"hello\"\n    ]"),
        "{record}"
    );
    assert_staging_empty(&env);
    // Again: the old program goes with the old copy, a new one is built.
    zot(&env, &["ext", "prepare", "hello"]).ok().stdout_has(
        "prepared hello (global): go build -trimpath -buildvcs=false -o ./hello ./cmd/hello",
    );
    assert_eq!(output_of(&dest.join("hello")), "hello from go\n");
    assert_staging_empty(&env);
}

/// A `go` on PATH that says it is 1.22 and fails every build.
fn failing_go(env: &Env) -> PathBuf {
    fake_go(
        env,
        "bad-bin",
        "echo './main.go:3:1: syntax error'\nexit 1\n",
    )
}

#[test]
fn a_failed_step_leaves_the_installed_copy_as_it_was() {
    let env = Env::new();
    let dest = installed_unbuilt(&env);
    fs::write(dest.join("state.json"), "{}\n").unwrap();
    let before = store(&env);
    zot(&env, &["ext", "prepare", "-q", "hello"])
        .env("PATH", env.path_with(&failing_go(&env)))
        .fails(1)
        .stderr_has("failed to prepare hello (global): preparing hello failed: `go build -trimpath -buildvcs=false -o ./hello ./cmd/hello` ended with exit status 1")
        .stderr_has("syntax error")
        .stderr_has("prepare-hello.log")
        .stderr_one_line();
    assert_eq!(store(&env), before, "the installed copy changed");
    assert_staging_empty(&env);
}

#[test]
fn a_linked_working_copy_is_refused_with_the_command_to_run_there() {
    let env = Env::new();
    let src = go_extension(&env, "hello", "1.22");
    write(&src.join("lib.go"), "package hello\n");
    write(&src.join("cmd/hello/main.go"), GO_MAIN);
    env.zot(["ext", "link", src.to_str().unwrap()]).ok();
    zot(&env, &["ext", "prepare", "hello"])
        .fails(1)
        .stderr_has(&format!(
            "cannot prepare hello (global): linked to {0}: zot ext never builds in a working copy; run there: cd {0} && go build -o ./hello ./cmd/hello",
            src.display()
        ));
    assert!(!src.join("hello").exists());
    // --all skips it with a note.
    zot(&env, &["ext", "prepare", "--all"])
        .ok()
        .stderr_has("note: skipped cannot prepare hello (global): linked to");
}

#[test]
fn names_not_installed_get_the_closest_and_nothing_to_prepare_is_said() {
    let env = Env::new();
    env.install(env.source("plain", "plain"));
    zot(&env, &["ext", "prepare", "plian"])
        .fails(1)
        .stderr_has("did you mean plain?");
    zot(&env, &["ext", "prepare", "plain"])
        .ok()
        .stdout_has("plain (global): nothing to prepare");
    zot(&env, &["ext", "prepare"])
        .fails(2)
        .stderr_has("name the extensions to prepare, or pass --all");
}

#[test]
fn ctrl_c_mid_step_leaves_the_installed_copy_staging_empty_and_the_group_gone() {
    use std::os::unix::process::ExitStatusExt;
    let env = Env::new();
    installed_unbuilt(&env);
    let before = store(&env);
    let bin = sleeping_go(&env, 3103);
    let said = env.work.join("stderr");
    let mut child = zot(&env, &["ext", "prepare", "hello"])
        .env("PATH", env.path_with(&bin))
        .spawn_with_stderr(&said);
    let until = Instant::now() + Duration::from_secs(30);
    while sleepers(3103).is_empty() {
        assert!(Instant::now() < until, "the step never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(2), "{status:?}");
    assert_no_sleepers(3103);
    let said = fs::read_to_string(&said).unwrap();
    assert!(
        said.ends_with("hello: preparing was interrupted; nothing was changed\n"),
        "{said:?}"
    );
    assert_staging_empty(&env);
    assert_eq!(store(&env), before, "the installed copy changed");
}

#[test]
fn doctor_and_info_name_prepare_for_an_installed_copy_never_built() {
    let env = Env::new();
    installed_unbuilt(&env);
    let fix = "fix: the program ./hello is not built (the folder has a go.mod): its build has not run; run it: zot ext prepare hello\n";
    zot(&env, &["ext", "doctor", "hello"])
        .fails(1)
        .stdout_has(fix);
    zot(&env, &["ext", "info", "hello"]).ok().stdout_has(
        "  prepared:    needed, not run: the program ./hello is not built (the folder has a go.mod): its build has not run; fix: zot ext prepare hello\n",
    );
    let json = zot(&env, &["ext", "info", "hello", "--json"]).ok().json();
    assert_eq!(
        json["copies"][0]["prepare_needed"]["fix"], "zot ext prepare hello",
        "{json}"
    );
}

#[test]
fn info_shows_the_step_that_ran_its_tool_and_when() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    installed_unbuilt(&env);
    zot(&env, &["ext", "prepare", "hello"]).ok();
    let done = zot(&env, &["ext", "info", "hello"]).ok();
    done.stdout_has(
        "  prepared:    go build -trimpath -buildvcs=false -o ./hello ./cmd/hello (go version go1.",
    )
    .stdout_has(", at 20");
    let json = zot(&env, &["ext", "info", "hello", "--json"]).ok().json();
    let copy = &json["copies"][0];
    assert!(copy["prepare_needed"].is_null(), "{json}");
    assert_eq!(copy["record"]["prepared"]["tool"], "go");
    assert!(copy["record"]["prepared"]["ran_at"].is_string(), "{json}");
}

/// An extension with npm dependencies never installed, whose start fails as Node's does.
fn unprepared_node(env: &Env) {
    let src = env.source("mods", "mods");
    write(
        &src.join("package.json"),
        r#"{"name": "mods", "dependencies": {"left-pad": "1.3.0"}}"#,
    );
    write_executable(
        &src.join("run.sh"),
        "#!/bin/sh\necho \"Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'left-pad'\" >&2\nexit 1\n",
    );
    env.install_with(&src, &["--no-prepare"]);
}

#[test]
fn doctor_and_call_read_a_missing_module_as_a_step_not_run() {
    let env = Env::new();
    unprepared_node(&env);
    zot(&env, &["ext", "doctor", "mods"])
        .fails(1)
        .stdout_has("package.json lists dependencies but there is no node_modules/: they were never installed")
        .stdout_has("its stderr says a dependency is missing (ERR_MODULE_NOT_FOUND): its dependency install or build has not run")
        .stdout_has("fix: zot ext prepare mods\n");
    zot(&env, &["ext", "call", "mods", "/x"])
        .fails(1)
        .stderr_has("note: mods: package.json lists dependencies but there is no node_modules/: they were never installed; fix: zot ext prepare mods\n")
        .stderr_has("error: mods did not start properly: its stderr says a dependency is missing (ERR_MODULE_NOT_FOUND): its dependency install or build has not run; fix: zot ext prepare mods\n");
}

#[test]
fn link_prints_the_command_to_run_in_the_working_copy_and_doctor_too() {
    let env = Env::new();
    let src = env.source("mods", "mods");
    write(
        &src.join("package.json"),
        r#"{"name": "mods", "dependencies": {"left-pad": "1.3.0"}}"#,
    );
    write(&src.join("package-lock.json"), "{}");
    let command = format!("cd {} && npm ci", src.display());
    env.zot(["ext", "link", src.to_str().unwrap()])
        .ok()
        .stderr_has(&format!("note: package.json lists dependencies but there is no node_modules/: they were never installed; zot ext never builds in a working copy: run there: {command}\n"));
    assert!(!src.join("node_modules").exists());
    // run.sh says no hello, so doctor fails; the fix for the dependencies is the command.
    zot(&env, &["ext", "doctor", "mods"])
        .fails(1)
        .stdout_has(&format!("fix: {command}\n"));
}

#[test]
fn edits_to_the_installed_copy_are_built_and_still_count_as_edits() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    let dest = installed_unbuilt(&env);
    write(
        &dest.join("cmd/hello/main.go"),
        &GO_MAIN.replace("hello from go", "edited"),
    );
    zot(&env, &["ext", "prepare", "hello"]).ok();
    assert_eq!(output_of(&dest.join("hello")), "edited\n");
    // The file list is still what the install placed: the edit is an edit.
    zot(&env, &["ext", "verify", "hello"])
        .fails(1)
        .stdout_has("cmd/hello/main.go");
    // Built again after another edit: the program the last step made is replaced, not
    // saved as if the user had edited it, and the new one is a prepared output.
    write(
        &dest.join("cmd/hello/main.go"),
        &GO_MAIN.replace("hello from go", "edited twice"),
    );
    zot(&env, &["ext", "prepare", "hello"])
        .ok()
        .stdout_lacks("saved")
        .stdout_has("kept local edits: cmd/hello/main.go");
    assert_eq!(output_of(&dest.join("hello")), "edited twice\n");
    assert!(!env.home.join(".ext-store/backup/hello").exists());
    zot(&env, &["ext", "verify", "hello"])
        .fails(1)
        .stdout_lacks("prepared output");
}

#[test]
fn node_modules_are_installed_afresh_with_scripts_only_when_allowed_again() {
    if !have_npm() {
        return;
    }
    let env = Env::new();
    let src = npm_extension(&env, true);
    zot(
        &env,
        &[
            "ext",
            "install",
            "--no-prepare",
            "-p",
            src.to_str().unwrap(),
        ],
    )
    .ok();
    let dest = env.project_root().join("npmx");
    assert!(!dest.join("node_modules").exists());
    zot(
        &env,
        &[
            "ext",
            "prepare",
            "-p",
            "npmx",
            "--offline",
            "--allow-scripts",
        ],
    )
    .ok()
    .stdout_has("prepared npmx (project): npm ci --ignore-scripts --omit=dev --no-audit --no-fund --offline && npm rebuild --no-audit --no-fund");
    assert!(dest.join("node_modules/x/dep-ran").is_file());
    assert!(dest.join("root-ran").is_file());
    fs::remove_file(dest.join("node_modules/x/index.js")).unwrap();
    // Scripts are not implied by the last run; its node_modules/ goes with the old copy.
    zot(&env, &["ext", "prepare", "--all", "-p", "--offline"])
        .ok()
        .stderr_has("note: npmx's lifecycle scripts ran when it was installed; they do not now (pass --allow-scripts to run them)");
    assert!(dest.join("node_modules/x/index.js").is_file());
    assert!(!dest.join("node_modules/x/dep-ran").exists());
    let record = fs::read_to_string(env.project.join(".zot/.ext-store/sources/npmx.json")).unwrap();
    assert!(record.contains("\"scripts\": false"), "{record}");
}

#[test]
fn a_node_modules_made_by_hand_is_replaced_not_carried_into_the_fresh_one() {
    if !have_npm() {
        return;
    }
    let env = Env::new();
    let (_, dest) = unprepared_npm_with_hand_made_modules(&env);
    let done = zot(&env, &["ext", "prepare", "npmx", "--offline", "--json"]).ok();
    assert!(dest.join("node_modules/x/index.js").is_file());
    assert!(
        !dest.join("node_modules/stale").exists(),
        "the old node_modules/ was mixed into the new one"
    );
    assert_eq!(fs::read_to_string(dest.join("state.json")).unwrap(), "{}\n");
    let carried = &done.json()["extensions"][0]["carry_over"];
    assert_eq!(
        carried["items"],
        serde_json::json!([{"path": "state.json", "action": "carry"}])
    );
    assert!(carried["backup"].is_null(), "{carried}");
}
