//! `zot ext enable` / `disable`: only `enabled` changes, atomically, idempotently.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use crate::support::Env;

const ODD_MANIFEST: &str = "{\n    \"zz-unknown\": {\"nested\": [1, 2]},\n    \"name\": \"odd\",\n    \"exec\": \"./run.sh\",\n    \"enabled\": true,\n    \"version\": \"2.0.0\"\n}\n";

fn odd(env: &Env) -> std::path::PathBuf {
    let src = env.source_with_manifest("odd", ODD_MANIFEST);
    env.install(&src);
    env.global_root().join("odd/extension.json")
}

#[test]
fn disable_changes_only_the_enabled_value() {
    let env = Env::new();
    let path = odd(&env);
    env.zot(["ext", "disable", "odd"])
        .ok()
        .stdout_is("disabled odd (global)\n")
        .stderr_is("restart zot for the change to take effect\n");
    let expected = ODD_MANIFEST.replace("\"enabled\": true", "\"enabled\": false");
    assert_eq!(fs::read_to_string(&path).unwrap(), expected);
    env.zot(["ext", "enable", "odd"]).ok();
    assert_eq!(fs::read_to_string(&path).unwrap(), ODD_MANIFEST);
}

#[test]
fn disable_adds_the_field_when_missing() {
    let env = Env::new();
    let text = "{\n\t\"name\": \"tabs\",\n\t\"exec\": \"./run.sh\"\n}";
    let src = env.source_with_manifest("tabs", text);
    env.install(&src);
    env.zot(["ext", "disable", "tabs"]).ok();
    let after = fs::read_to_string(env.global_root().join("tabs/extension.json")).unwrap();
    assert_eq!(
        after,
        "{\n\t\"name\": \"tabs\",\n\t\"exec\": \"./run.sh\",\n\t\"enabled\": false\n}"
    );
}

#[test]
fn idempotent_with_a_message_and_exit_0() {
    let env = Env::new();
    let path = odd(&env);
    let before = fs::read_to_string(&path).unwrap();
    env.zot(["ext", "enable", "odd"])
        .ok()
        .stdout_is("odd (global) is already enabled\n")
        .stderr_is("");
    assert_eq!(fs::read_to_string(&path).unwrap(), before);
    env.zot(["ext", "disable", "odd"]).ok();
    env.zot(["ext", "disable", "odd"])
        .ok()
        .stdout_is("odd (global) is already disabled\n")
        .stderr_is("");
}

#[test]
fn keeps_file_permissions() {
    let env = Env::new();
    let path = odd(&env);
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    env.zot(["ext", "disable", "odd"]).ok();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o640
    );
    let stray: Vec<_> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".extension.json")
        })
        .collect();
    assert!(stray.is_empty(), "no temporary files are left behind");
}

#[test]
fn list_reflects_the_change() {
    let env = Env::new();
    env.installed("flip", false);
    env.zot(["ext", "disable", "flip"]).ok();
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list[0]["enabled"], false);
}

#[test]
fn targets_the_winning_copy_unless_a_scope_is_given() {
    let env = Env::new();
    env.installed("both", false);
    env.installed("both", true);
    env.zot(["ext", "disable", "both"]).ok();
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list[0]["enabled"], false, "project copy");
    assert_eq!(list[1]["enabled"], true, "global copy");
    env.zot(["ext", "disable", "--global", "both"]).ok();
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list[1]["enabled"], false);
}

#[test]
fn json_output_says_whether_it_changed() {
    let env = Env::new();
    env.installed("j", false);
    let dir = env.global_root().join("j");
    env.zot(["ext", "disable", "--json", "j"])
        .ok()
        .json_is(&serde_json::json!({
            "name": "j",
            "scope": "global",
            "dir": dir,
            "enabled": false,
            "changed": true
        }));
    env.zot(["ext", "disable", "--json", "j"])
        .ok()
        .json_is(&serde_json::json!({
            "name": "j",
            "scope": "global",
            "dir": dir,
            "enabled": false,
            "changed": false
        }));
}

#[test]
fn broken_manifest_is_reported_not_rewritten() {
    let env = Env::new();
    let dir = env.global_root().join("broken");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("extension.json"),
        "{\"name\": \"broken\", \"exec\": [] }",
    )
    .unwrap();
    env.zot(["ext", "disable", "broken"])
        .fails(1)
        .stderr_is(&format!(
            "error: {}:1:28: \"exec\" must be a string, found an array; fix the manifest first\n",
            dir.join("extension.json").display()
        ));
    assert_eq!(
        fs::read_to_string(dir.join("extension.json")).unwrap(),
        "{\"name\": \"broken\", \"exec\": [] }"
    );
}

#[test]
fn unknown_extension_exits_1() {
    let env = Env::new();
    env.zot(["ext", "enable", "ghost"])
        .fails(1)
        .stderr_is(&env.not_installed_error("ghost"));
}

#[test]
fn duplicate_enabled_keys_are_all_changed() {
    let env = Env::new();
    let text = "{\"name\":\"d\",\"enabled\":true,\"exec\":\"./run.sh\",\"enabled\":true}";
    let src = env.source_with_manifest("d", text);
    env.install(&src);
    env.zot(["ext", "disable", "d"]).ok();
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list[0]["enabled"], false);
    env.zot(["ext", "disable", "d"])
        .ok()
        .stdout_is("d (global) is already disabled\n");
}
