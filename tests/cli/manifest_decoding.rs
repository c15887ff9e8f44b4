//! Manifests are decoded the way zot decodes them (Go's `encoding/json` into a struct): keys
//! in any case, with a warning naming the documented spelling; names that are any safe single
//! folder name (spaces, non-ASCII letters) through install, list, disable, enable, logs,
//! remove and completion; unsafe names still refused.

use std::fs;

use crate::support::Env;

const CASED: &str = "{\n  \"Name\": \"cased\",\n  \"EXEC\": \"./run.sh\",\n  \"Enabled\": true,\n  \"extra\": [1]\n}\n";

#[test]
fn case_variant_keys_install_list_and_toggle_with_a_warning() {
    let env = Env::new();
    let src = env.source_with_manifest("cased", CASED);
    let dir = env.global_root().join("cased");
    env.install(&src)
        .stdout_is(&format!(
            "installed cased (global) in {}\n",
            dir.display()
        ))
        .stderr_is(
            "warning: extension.json: key \"Name\" works, but the documented spelling is \"name\"\n\
             warning: extension.json: key \"EXEC\" works, but the documented spelling is \"exec\"\n\
             warning: extension.json: key \"Enabled\" works, but the documented spelling is \"enabled\"\n",
        );
    let path = dir.join("extension.json");
    env.zot(["ext", "list"])
        .ok()
        .stdout_has("cased")
        .stderr_is(&format!(
            "warning: {path}: key \"Name\" works, but the documented spelling is \"name\"\n\
             warning: {path}: key \"EXEC\" works, but the documented spelling is \"exec\"\n\
             warning: {path}: key \"Enabled\" works, but the documented spelling is \"enabled\"\n",
            path = path.display()
        ));
    env.zot(["ext", "disable", "cased"]).ok();
    // The key zot reads is rewritten in its own spelling; nothing else changes.
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        CASED.replace("\"Enabled\": true", "\"Enabled\": false")
    );
    let json = env.zot(["--json", "ext", "list"]).ok().extensions();
    assert_eq!(json[0]["enabled"], false, "{json}");
    env.zot(["ext", "enable", "cased"]).ok();
    assert_eq!(fs::read_to_string(&path).unwrap(), CASED);
}

#[test]
fn doctor_notes_the_documented_spelling() {
    let env = Env::new();
    let src = env.source_with_manifest("cased", CASED);
    env.install(&src);
    let done = env.zot(["ext", "doctor", "--json", "cased"]).output();
    let json = done.json();
    let notes: Vec<String> = json["extensions"][0]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        notes.contains(
            &"extension.json: key \"Name\" works, but the documented spelling is \"name\""
                .to_string()
        ),
        "{json:#}"
    );
}

#[test]
fn a_wrong_type_under_any_spelling_is_refused_with_its_position() {
    let env = Env::new();
    let src = env.source_with_manifest(
        "bad",
        "{\"name\":\"bad\",\n\"Exec\": 5,\"exec\":\"./run.sh\"}",
    );
    env.zot(["ext", "install", src.to_str().unwrap()])
        .fails(1)
        .stderr_is(&format!(
            "error: {}:2:9: \"exec\" must be a string, found the number 5 (nothing was changed)\n",
            src.join("extension.json").display()
        ));
}

fn lifecycle(name: &str) {
    let env = Env::new();
    let text = serde_json::json!({"name": name, "exec": "./run.sh"}).to_string();
    let src = env.source_with_manifest("src", &text);
    env.install(&src).stdout_has(&format!("installed {name}"));
    assert!(
        env.global_root()
            .join(name)
            .join("extension.json")
            .is_file()
    );
    let json = env.zot(["--json", "ext", "list"]).ok().extensions();
    assert_eq!(json[0]["name"], name, "{json}");
    env.zot(["ext", "list"]).ok().stdout_has(name);
    env.zot(["ext", "disable", name]).ok();
    assert_eq!(
        env.zot(["--json", "ext", "list"]).ok().extensions()[0]["enabled"],
        false
    );
    // Completion offers the name whole, as one candidate, in fish and in bash.
    let fish = env
        .zot(["--", "zot", "ext", "enable", ""])
        .env("COMPLETE", "fish")
        .ok();
    assert_eq!(
        fish.stdout
            .lines()
            .next()
            .map(|l| l.split('\t').next().unwrap()),
        Some(name)
    );
    let bash = env
        .zot(["--", "zot", "ext", "enable", ""])
        .env("COMPLETE", "bash")
        .env("_CLAP_COMPLETE_INDEX", "3")
        .env("_CLAP_IFS", "\n")
        .ok();
    // bash inserts a candidate as it is: a space comes escaped, and a typed `my\ e` or
    // `'my e` is read as the text it stands for.
    let escaped = name.replace(' ', "\\ ");
    assert_eq!(bash.stdout, escaped);
    let typed = escaped[..escaped.len() - 1].to_string();
    for word in [typed, format!("'{}", &name[..2])] {
        let bash = env
            .zot(["--", "zot", "ext", "enable", &word])
            .env("COMPLETE", "bash")
            .env("_CLAP_COMPLETE_INDEX", "3")
            .env("_CLAP_IFS", "\n")
            .ok();
        assert_eq!(bash.stdout, escaped, "{word}");
    }
    env.zot(["ext", "enable", name]).ok();
    assert_eq!(
        env.zot(["--json", "ext", "list"]).ok().extensions()[0]["enabled"],
        true
    );
    let logs = env.home.join("logs");
    fs::create_dir_all(&logs).unwrap();
    fs::write(logs.join(format!("ext-{name}.log")), "hello from the log\n").unwrap();
    env.zot(["ext", "logs", name])
        .ok()
        .stdout_is("hello from the log\n");
    env.zot(["ext", "remove", "--yes", name]).ok();
    assert!(!env.global_root().join(name).exists());
    assert!(env.installed_names().is_empty());
}

#[test]
fn a_name_with_a_space_goes_through_every_command() {
    lifecycle("my ext");
}

#[test]
fn a_name_with_non_ascii_letters_goes_through_every_command() {
    lifecycle("wetter-größe");
}

#[test]
fn unsafe_names_are_still_refused() {
    let env = Env::new();
    for (i, name) in ["a/b", "..", "a\nb", "a\\b", &"x".repeat(256)]
        .iter()
        .enumerate()
    {
        let text = serde_json::json!({"name": name, "exec": "./run.sh"}).to_string();
        let src = env.source_with_manifest(&format!("src{i}"), &text);
        env.zot(["ext", "install", src.to_str().unwrap()])
            .fails(1)
            .stderr_has("\"name\"");
    }
    assert!(env.installed_names().is_empty());
}
