//! The shapes real extensions have, as local copies of their layouts (never the network):
//! a repository whose root Go module holds the extension in a subfolder (zot's own
//! examples), installed from the folder and from git with `--subdir`; a module whose `go`
//! line is newer than the Go on PATH, left to Go (zot-loop's `go 1.22` and `go run .`);
//! a `node_modules/` that comes with the source; a `.venv` the manifest bypasses, and one
//! the manifest names with no requirements.

use std::fs;
use std::path::PathBuf;

use crate::prepare::{GO_MAIN, extension, have_go, have_venv, output_of, write, zot};
use crate::support::Env;
use crate::support::git_servers::git;

/// A repository `work/zotlike` whose root module `example.com/zotlike` (`go 1.22`) has a
/// package `pkg/greet` and, in `examples/extensions/hello`, an extension that imports it
/// and has no `go.mod` of its own.
fn root_module_repo(env: &Env) -> PathBuf {
    let repo = env.work.join("zotlike");
    write(
        &repo.join("go.mod"),
        "module example.com/zotlike\n\ngo 1.22\n",
    );
    write(
        &repo.join("pkg/greet/greet.go"),
        "package greet\n\nfunc Hello() string { return \"hello from the root module\" }\n",
    );
    let ext = repo.join("examples/extensions/hello");
    write(
        &ext.join("extension.json"),
        "{\"name\": \"hello\", \"version\": \"1.0.0\", \"exec\": \"./hello\"}\n",
    );
    write(
        &ext.join("main.go"),
        "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/zotlike/pkg/greet\"\n)\n\nfunc main() { fmt.Println(greet.Hello()) }\n",
    );
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "root module"]);
    repo
}

fn assert_built_from_the_root_module(env: &Env) {
    let dest = env.global_root().join("hello");
    assert_eq!(
        output_of(&dest.join("hello")),
        "hello from the root module\n"
    );
    assert!(
        !dest.join("go.mod").exists(),
        "only the extension folder is installed"
    );
    assert!(
        !dest.join("pkg").exists(),
        "only the extension folder is installed"
    );
    let record = fs::read_to_string(env.home.join(".ext-store/sources/hello.json")).unwrap();
    assert!(
        record.contains("\"module\": \"example.com/zotlike\""),
        "{record}"
    );
    assert!(
        record.contains("go build -trimpath -buildvcs=false -o ./examples/extensions/hello/hello ./examples/extensions/hello"),
        "{record}"
    );
    zot(env, &["ext", "verify", "hello"]).ok();
}

#[test]
fn an_extension_of_the_repositorys_root_module_builds_from_its_folder() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    let repo = root_module_repo(&env);
    let folder = repo.join("examples/extensions/hello");
    zot(&env, &["ext", "install", folder.to_str().unwrap()]).ok();
    assert_built_from_the_root_module(&env);
    assert!(
        !folder.join("hello").exists(),
        "the user's folder is never built in"
    );
}

#[test]
fn an_extension_of_the_repositorys_root_module_builds_from_git_with_subdir() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    let repo = root_module_repo(&env);
    let url = format!("file://{}", repo.display());
    zot(
        &env,
        &[
            "ext",
            "install",
            &url,
            "--subdir",
            "examples/extensions/hello",
        ],
    )
    .ok();
    assert_built_from_the_root_module(&env);
}

#[test]
fn a_folder_outside_any_repository_looks_for_no_module_above_it() {
    let env = Env::new();
    // A go.mod above, but no repository: the folder alone is the extension.
    write(
        &env.work.join("go.mod"),
        "module example.com/above\n\ngo 1.19\n",
    );
    let src = extension(&env, "lone", "lone", "./lone");
    write(&src.join("main.go"), GO_MAIN);
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .ok()
        .stderr_has("\"exec\" ./lone does not exist");
}

#[test]
fn a_go_line_newer_than_the_go_on_path_is_left_to_go() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    // zot-loop's shape: `go 1.22`, run with `go run .`, no dependencies.
    let src = extension(&env, "loop", "loop", "go");
    write(
        &src.join("extension.json"),
        "{\"name\": \"loop\", \"version\": \"0.1.0\", \"exec\": \"go\", \"args\": [\"run\", \".\"]}\n",
    );
    write(&src.join("go.mod"), "module loop\n\ngo 1.22\n");
    write(&src.join("main.go"), GO_MAIN);
    zot(&env, &["ext", "install", src.to_str().unwrap()]).ok();
    // A build that fails names Go's own error and what go.mod asks for.
    let broken = crate::prepare::go_extension(&env, "newer", "1.99");
    write(&broken.join("main.go"), "package main\n\nfunc main() {\n");
    zot(&env, &["ext", "install", broken.to_str().unwrap()])
        .fails(1)
        .stderr_has("(go.mod says go 1.99; go on PATH is 1.")
        .stderr_has(": a newer Go may be needed)");
}

#[test]
fn a_node_modules_that_comes_with_the_source_is_used_as_it_is() {
    let env = Env::new();
    let src = extension(&env, "vend", "vend", "node");
    write(
        &src.join("package.json"),
        r#"{"name": "vend", "dependencies": {"x": "1.0.0"}}"#,
    );
    write(
        &src.join("node_modules/x/index.js"),
        "module.exports = 1;\n",
    );
    zot(&env, &["ext", "install", src.to_str().unwrap()]).ok();
    let dest = env.global_root().join("vend");
    assert!(dest.join("node_modules/x/index.js").is_file());
    zot(&env, &["ext", "info", "vend"])
        .ok()
        .stdout_has("  prepared:    not needed: node_modules/ came with the source (vendored)\n");
}

#[test]
fn the_bundled_venv_example_gets_its_venv_made() {
    if !have_venv() {
        return;
    }
    let env = Env::new();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/extensions/hello-venv");
    zot(&env, &["ext", "install", src.to_str().unwrap()]).ok();
    let dest = env.global_root().join("hello-venv");
    assert!(dest.join(".venv/bin/python").exists());
    zot(&env, &["ext", "doctor", "hello-venv"]).ok();
}

/// A Python extension with requirements (a local wheel) whose `exec` is `./main.py`, run by
/// the Python its `#!` line names, not the venv's.
fn bypassing_python(env: &Env) -> PathBuf {
    let src = crate::prepare::wheel_extension(env);
    write(
        &src.join("extension.json"),
        "{\"name\": \"py\", \"version\": \"1.0.0\", \"exec\": \"./main.py\"}\n",
    );
    crate::support::write_executable(
        &src.join("main.py"),
        "#!/usr/bin/env python3\nimport tinydep\n",
    );
    src
}

#[test]
fn a_venv_the_manifest_bypasses_is_a_warning_with_the_manifest_that_works() {
    if !have_venv() {
        return;
    }
    let env = Env::new();
    let src = bypassing_python(&env);
    let fix = "set \"exec\" to \".venv/bin/python\" and \"args\" to [\"main.py\"] in the source's extension.json";
    zot(&env, &["ext", "install", "--offline", src.to_str().unwrap()])
        .ok()
        .stderr_has("py: its dependencies are in .venv/, but \"exec\" ./main.py runs another Python (its #! line, /usr/bin/env python3)")
        .stderr_has(fix);
    zot(&env, &["ext", "doctor", "py"])
        .output()
        .stdout_has("its dependencies are in .venv/, but \"exec\" ./main.py runs another Python")
        .stdout_lacks("zot ext prepare");
}

#[test]
fn an_exec_that_cannot_run_is_a_warning_at_install_pointing_at_the_source() {
    let env = Env::new();
    let src = extension(&env, "sh", "sh", "./run.sh");
    write(&src.join("run.sh"), "#!/bin/sh\nexit 0\n");
    zot(&env, &["ext", "install", src.to_str().unwrap()])
        .ok()
        .stderr_has("sh: \"exec\" ./run.sh is not executable")
        .stderr_has("set its executable bit in the source (chmod +x, or git update-index --chmod=+x and a commit), then zot ext update sh");
    let bare = extension(&env, "bare", "bare", "main.py");
    write(&bare.join("main.py"), "print(1)\n");
    zot(&env, &["ext", "install", bare.to_str().unwrap()])
        .ok()
        .stderr_has("bare: \"exec\" is \"main.py\", which is not on PATH");
    // doctor's fix asks for no edit inside the store.
    let done = zot(&env, &["ext", "doctor", "sh"]).fails(1);
    done.stdout_has("then zot ext update sh");
}

#[test]
fn update_keeps_an_edit_the_new_version_did_not_touch_and_saves_one_it_did() {
    let env = Env::new();
    // zot-loop's case: its tasks live in a shipped state.json.
    let src = extension(&env, "loop", "loop", "./run.sh");
    crate::support::write_executable(&src.join("run.sh"), "#!/bin/sh\nexit 0\n");
    write(&src.join("state.json"), "{\"tasks\": []}\n");
    write(&src.join("README.md"), "one\n");
    write(&src.join("notes.txt"), "shipped\n");
    zot(&env, &["ext", "install", src.to_str().unwrap()]).ok();
    let dest = env.global_root().join("loop");
    write(&dest.join("state.json"), "{\"tasks\": [\"mine\"]}\n");
    write(&dest.join("notes.txt"), "edited\n");
    // The new version changes the README and notes.txt, not state.json.
    write(&src.join("README.md"), "two\n");
    write(&src.join("notes.txt"), "new upstream\n");
    zot(&env, &["ext", "update", "loop"])
        .ok()
        .stdout_has("kept as edited (edited since install; the new version did not change them): state.json")
        .stdout_has("overwritten and saved (edited since install): notes.txt");
    assert_eq!(
        fs::read_to_string(dest.join("state.json")).unwrap(),
        "{\"tasks\": [\"mine\"]}\n"
    );
    assert_eq!(
        fs::read_to_string(dest.join("notes.txt")).unwrap(),
        "new upstream\n"
    );
    assert_eq!(fs::read_to_string(dest.join("README.md")).unwrap(), "two\n");
    // sync still makes the copy what the lock says; install --force installs afresh.
    zot(&env, &["ext", "install", "--force", src.to_str().unwrap()]).ok();
    assert_eq!(
        fs::read_to_string(dest.join("state.json")).unwrap(),
        "{\"tasks\": []}\n"
    );
}

#[test]
fn a_go_extension_is_added_to_a_project_with_no_commit_yet() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    git(&env.project, &["init", "-q"]);
    let src = crate::prepare::go_extension(&env, "hello", "1.19");
    write(&src.join("main.go"), GO_MAIN);
    zot(&env, &["ext", "add", src.to_str().unwrap()]).ok();
    assert_eq!(
        output_of(&env.project_root().join("hello/hello")),
        "hello from go\n"
    );
}
