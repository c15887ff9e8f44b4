//! `--json` across every command that prints data: each document is an object whose first key
//! is `"schema_version": 1`, and a key has one type wherever it appears (`null` aside).

use std::collections::BTreeMap;
use std::fs;

use serde_json::Value;

use crate::support::{Done, Env};

/// The JSON type of a value other than null.
fn type_name(value: &Value) -> Option<&'static str> {
    match value {
        Value::Null => None,
        Value::Bool(_) => Some("boolean"),
        Value::Number(_) => Some("number"),
        Value::String(_) => Some("string"),
        Value::Array(_) => Some("array"),
        Value::Object(_) => Some("object"),
    }
}

/// Records, for every key anywhere in `value`, the types it has and where.
fn collect(
    value: &Value,
    command: &str,
    types: &mut BTreeMap<String, BTreeMap<&'static str, String>>,
) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                if let Some(kind) = type_name(item) {
                    types
                        .entry(key.clone())
                        .or_default()
                        .entry(kind)
                        .or_insert_with(|| command.to_string());
                }
                collect(item, command, types);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect(i, command, types)),
        _ => {}
    }
}

/// Every `linked` key in `value`.
fn linked_values(value: &Value, found: &mut Vec<Value>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                if key == "linked" {
                    found.push(item.clone());
                }
                linked_values(item, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| linked_values(i, found)),
        _ => {}
    }
}

/// Each JSON document on stdout: one pretty document, or one per line (`logs --json`).
fn documents(done: &Done, lines: bool) -> Vec<Value> {
    if lines {
        done.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{done:?}")))
            .collect()
    } else {
        vec![done.json()]
    }
}

#[test]
fn every_command_prints_versioned_documents_with_one_type_per_key() {
    let env = Env::new();
    let mut runs: Vec<(String, Done, bool)> = Vec::new();
    let mut run = |args: &[&str], code: i32, lines: bool| {
        let done = env.zot(args).output();
        done.failure(code);
        runs.push((args.join(" "), done, lines));
    };
    let src = env.source("inst", "inst");
    let working = env.work.join("working");
    run(
        &["ext", "new", "made", "--lang", "shell", "--json"],
        0,
        false,
    );
    run(
        &[
            "ext",
            "new",
            "wc",
            "--lang",
            "shell",
            "--json",
            "--dir",
            working.to_str().unwrap(),
        ],
        0,
        false,
    );
    run(
        &["ext", "link", "--json", working.to_str().unwrap()],
        0,
        false,
    );
    run(
        &["ext", "install", "--json", src.to_str().unwrap()],
        0,
        false,
    );
    run(&["ext", "list", "--json"], 0, false);
    run(&["ext", "info", "--json", "inst"], 0, false);
    run(&["ext", "info", "--json", "wc"], 0, false);
    run(&["ext", "disable", "--json", "inst"], 0, false);
    run(&["ext", "enable", "--json", "inst"], 0, false);
    run(&["ext", "update", "--json", "inst"], 0, false);
    // inst's program does not exist: doctor fails, with an error and its fix.
    run(&["ext", "doctor", "--json", "made", "inst"], 1, false);
    run(&["ext", "call", "--json", "made", "/made"], 0, false);
    let logs = env.home.join("logs");
    fs::create_dir_all(&logs).unwrap();
    fs::write(logs.join("ext-made.log"), "first\nsecond\n").unwrap();
    run(&["ext", "logs", "--json", "made"], 0, true);
    run(&["ext", "logs", "--json", "-n", "1", "made"], 0, true);
    run(&["ext", "remove", "-y", "--json", "wc"], 0, false);
    run(&["ext", "remove", "-y", "--json", "inst"], 0, false);

    let mut types = BTreeMap::new();
    for (command, done, lines) in &runs {
        let docs = documents(done, *lines);
        assert!(!docs.is_empty(), "{command}: no JSON\n{done:?}");
        for doc in &docs {
            let first = doc.as_object().and_then(|o| o.iter().next());
            assert!(
                matches!(first, Some((k, v)) if k == "schema_version" && *v == 1),
                "{command}: schema_version is not first: {doc}"
            );
            let mut linked = Vec::new();
            linked_values(doc, &mut linked);
            for value in linked {
                assert!(
                    value.is_null() || value.is_string(),
                    "{command}: linked is {value}"
                );
            }
            collect(doc, command, &mut types);
        }
    }
    let mixed: Vec<String> = types
        .iter()
        .filter(|(_, kinds)| kinds.len() > 1)
        .map(|(key, kinds)| format!("{key}: {kinds:?}"))
        .collect();
    assert!(
        mixed.is_empty(),
        "keys with more than one type:\n{}",
        mixed.join("\n")
    );
    // The lines of a log, in order, one document each.
    let lines: Vec<Value> = documents(&runs[12].1, true)
        .iter()
        .map(|d| d["line"].clone())
        .collect();
    assert_eq!(lines, ["first", "second"]);
    let last: Vec<Value> = documents(&runs[13].1, true)
        .iter()
        .map(|d| d["line"].clone())
        .collect();
    assert_eq!(last, ["second"]);
}
