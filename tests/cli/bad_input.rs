//! Install inputs that must be refused: each case checks the message and that the store
//! is exactly as it was (git-specific cases live in `git_install`).

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::PathBuf;

use crate::support::{Env, manifest};

/// Prepares a bad source in `env` and returns the install argument.
type Setup = fn(&Env) -> String;

fn with_manifest(env: &Env, text: &str) -> String {
    env.source_with_manifest("bad", text).display().to_string()
}

fn named(name: &str) -> String {
    serde_json::json!({"name": name, "exec": "./run.sh"}).to_string()
}

/// Runs `zot ext install` on the prepared source in a store that already holds one
/// extension, and checks exit status, message and that nothing changed.
fn refused(setup: Setup, code: i32, expected: &str) {
    let env = Env::new();
    env.installed("existing", false);
    let arg = setup(&env);
    let before = env.snapshot();
    let done = env.zot(["ext", "install", arg.as_str()]).fails(code);
    assert!(
        done.stderr.contains(expected),
        "expected {expected:?} in:\n{}",
        done.stderr
    );
    assert!(done.stderr.starts_with("error: "), "{}", done.stderr);
    assert_eq!(done.stdout, "");
    assert_eq!(env.snapshot(), before, "the store changed");
    assert_eq!(env.installed_names(), ["existing"]);
}

macro_rules! cases {
    ($($name:ident: $setup:expr, $code:expr, $expected:expr;)*) => {
        $(
            #[test]
            fn $name() {
                refused($setup, $code, $expected);
            }
        )*
    };
}

cases! {
    invalid_json: |e| with_manifest(e, "{\n  \"name\": \"x\"\n  \"exec\": \"y\"\n}"), 1,
        "bad/extension.json:3:3: invalid JSON: expected `,` or `}`";
    trailing_comma: |e| with_manifest(e, "{\"name\": \"x\", \"exec\": \"y\",}"), 1,
        "extension.json:1:27: invalid JSON: trailing comma";
    empty_manifest: |e| with_manifest(e, ""), 1, "extension.json:1:1: invalid JSON: EOF while parsing";
    top_level_array: |e| with_manifest(e, "[{\"name\": \"x\"}]"), 1,
        "extension.json:1:1: expected a JSON object at the top level, found an array";
    name_is_a_number: |e| with_manifest(e, "{\"name\": 5, \"exec\": \"y\"}"), 1,
        "extension.json:1:10: \"name\" must be a string, found the number 5";
    exec_is_an_array: |e| with_manifest(e, "{\"name\": \"x\",\n \"exec\": [\"y\"]}"), 1,
        "extension.json:2:10: \"exec\" must be a string, found an array";
    args_is_a_string: |e| with_manifest(e, "{\"name\": \"x\", \"exec\": \"y\", \"args\": \"-v\"}"), 1,
        "\"args\" must be an array of strings, found a string";
    args_element_is_a_number: |e| with_manifest(e, "{\"name\": \"x\", \"exec\": \"y\", \"args\": [\"a\", 2]}"), 1,
        "\"args\"[1] must be a string, found the number 2";
    version_is_a_number: |e| with_manifest(e, "{\"name\": \"x\", \"exec\": \"y\", \"version\": 1.0}"), 1,
        "\"version\" must be a string, found the number 1.0";
    language_is_an_object: |e| with_manifest(e, "{\"name\": \"x\", \"exec\": \"y\", \"language\": {}}"), 1,
        "\"language\" must be a string, found an object";
    description_is_true: |e| with_manifest(e, "{\"name\": \"x\", \"exec\": \"y\", \"description\": true}"), 1,
        "\"description\" must be a string, found true";
    enabled_is_a_string: |e| with_manifest(e, "{\"name\": \"x\", \"exec\": \"y\", \"enabled\": \"yes\"}"), 1,
        "\"enabled\" must be true or false, found a string";
    missing_name: |e| with_manifest(e, "{\"exec\": \"y\"}"), 1, "missing required field \"name\"";
    missing_exec: |e| with_manifest(e, "{\"name\": \"x\"}"), 1, "missing required field \"exec\"";
    empty_name: |e| with_manifest(e, &named("")), 1, "\"name\" must not be empty";
    empty_exec: |e| with_manifest(e, "{\"name\": \"x\", \"exec\": \"\"}"), 1, "\"exec\" must not be empty";
    name_with_parent_dir: |e| with_manifest(e, &named("../x")), 1, "\"name\" contains '/'";
    name_with_separator: |e| with_manifest(e, &named("a/b")), 1, "\"name\" contains '/'";
    name_dot: |e| with_manifest(e, &named(".")), 1, "\"name\" \".\" is not a usable directory name";
    name_dot_dot: |e| with_manifest(e, &named("..")), 1, "\"name\" \"..\" is not a usable directory name";
    name_with_nul: |e| with_manifest(e, &named("a\u{0}b")), 1, "\"name\" contains '\\0'";
    name_too_long: |e| with_manifest(e, &named(&"n".repeat(300))), 1, "\"name\" is 300 characters long";
    name_with_space: |e| with_manifest(e, &named("my ext")), 1, "\"name\" contains ' '";
    manifest_is_not_utf8: |e| {
        let dir = e.source("bad", "x");
        fs::write(dir.join("extension.json"), b"{\"name\": \"\xff\"}").unwrap();
        dir.display().to_string()
    }, 1, "extension.json: is not valid UTF-8";
    manifest_has_a_byte_order_mark: |e| {
        let dir = e.source("bad", "x");
        fs::write(dir.join("extension.json"), b"\xef\xbb\xbf{\"name\": \"x\", \"exec\": \"y\"}").unwrap();
        dir.display().to_string()
    }, 1, "extension.json: starts with a byte order mark";
    manifest_is_a_directory: |e| {
        let dir = e.work.join("bad");
        fs::create_dir_all(dir.join("extension.json")).unwrap();
        dir.display().to_string()
    }, 1, "extension.json: is a directory";
    no_manifest: |e| {
        let dir = e.work.join("bad");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("main.py"), "").unwrap();
        dir.display().to_string()
    }, 1, "extension.json: not found; an extension needs extension.json at the top of its folder";
    manifest_only_in_a_subfolder: |e| {
        let dir = e.work.join("repo");
        fs::create_dir_all(dir.join("extensions/inner")).unwrap();
        fs::write(dir.join("extensions/inner/extension.json"), manifest("inner")).unwrap();
        dir.display().to_string()
    }, 1, "there is one in extensions/inner/: install that folder instead";
    source_is_a_file: |e| {
        let file = e.work.join("plain.txt");
        fs::write(&file, "x").unwrap();
        file.display().to_string()
    }, 1, "plain.txt is a file, not a folder";
    source_is_the_manifest_itself: |e| {
        e.source("m", "m").join("extension.json").display().to_string()
    }, 1, "install its folder instead: zot ext install";
    source_does_not_exist: |e| e.work.join("missing").display().to_string(), 1,
        "missing does not exist; give a folder that holds extension.json or a git URL";
    source_inside_the_destination: |e| e.global_root().join("existing").display().to_string(), 1,
        "is inside the extensions folder";
    source_contains_the_store: |e| e.home.parent().unwrap().display().to_string(), 1,
        "contains the extensions folder";
    destination_exists: |e| e.source("again", "existing").display().to_string(), 1,
        "extension \"existing\" is already installed";
    manifest_is_a_link_outside: |e| {
        let dir = e.work.join("bad");
        fs::create_dir_all(&dir).unwrap();
        fs::write(e.work.join("elsewhere.json"), manifest("x")).unwrap();
        symlink("../elsewhere.json", dir.join("extension.json")).unwrap();
        dir.display().to_string()
    }, 1, "points outside the extension folder";
    manifest_is_a_dangling_link: |e| {
        let dir = e.work.join("bad");
        fs::create_dir_all(&dir).unwrap();
        symlink("gone.json", dir.join("extension.json")).unwrap();
        dir.display().to_string()
    }, 1, "extension.json -> gone.json is a dangling symbolic link";
    manifest_is_a_link_loop: |e| {
        let dir = e.work.join("bad");
        fs::create_dir_all(&dir).unwrap();
        symlink("extension.json", dir.join("extension.json")).unwrap();
        dir.display().to_string()
    }, 1, "extension.json -> extension.json is a symbolic link loop";
    named_pipe: |e| {
        let dir = e.source("bad", "x");
        let ok = std::process::Command::new("mkfifo").arg(dir.join("pipe")).status().unwrap();
        assert!(ok.success());
        dir.display().to_string()
    }, 1, "pipe is a special file (a named pipe)";
}

/// Permission cases run as an unprivileged user when the tests run as root.
fn refused_unreadable(make_unreadable: fn(&PathBuf), expected: &str) {
    let env = Env::new();
    env.installed("existing", false);
    let dir = env.source("bad", "x");
    env.open_to_everyone();
    make_unreadable(&dir);
    let before = env.snapshot();
    let done = env
        .zot(["ext", "install", dir.to_str().unwrap()])
        .unprivileged()
        .fails(1);
    assert!(
        done.stderr.contains(expected),
        "expected {expected:?} in:\n{}",
        done.stderr
    );
    assert_eq!(env.snapshot(), before);
}

#[test]
fn unreadable_file() {
    refused_unreadable(
        |dir| {
            fs::write(dir.join("secret.key"), "k").unwrap();
            fs::set_permissions(dir.join("secret.key"), fs::Permissions::from_mode(0o000)).unwrap();
        },
        "secret.key: permission denied",
    );
}

#[test]
fn unreadable_folder() {
    refused_unreadable(
        |dir| {
            fs::create_dir_all(dir.join("private")).unwrap();
            fs::set_permissions(dir.join("private"), fs::Permissions::from_mode(0o000)).unwrap();
        },
        "cannot read",
    );
}
