//! Manifest parsing and the `enabled` rewrite on arbitrary bytes: parsing never panics,
//! and text that parses can always be rewritten to either value, re-parses with that value
//! and keeps every byte outside the `enabled` values.
#![no_main]

use std::path::Path;

use jsonc_parser::common::Ranged;
use libfuzzer_sys::fuzz_target;
use zot_ext::testing::manifest;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(parsed) = manifest::parse(text, Path::new(manifest::FILE)) else {
        return;
    };
    for enabled in [false, true] {
        let edited = manifest::with_enabled(text, enabled)
            .unwrap_or_else(|| panic!("a valid manifest could not be rewritten: {text:?}"));
        let again = manifest::parse(&edited, Path::new(manifest::FILE))
            .unwrap_or_else(|e| panic!("the rewrite does not parse ({e}): {edited:?}"));
        assert_eq!(again.enabled, enabled, "{edited:?}");
        assert_eq!(
            again,
            manifest::Manifest {
                enabled,
                ..parsed.clone()
            },
            "another field changed: {edited:?}"
        );
        assert!(
            kept_outside_enabled(text, &edited, enabled),
            "bytes outside \"enabled\" changed:\n{text:?}\n{edited:?}"
        );
    }
});

/// Whether `edited` is `text` with each top-level `enabled` value (any case) replaced by `enabled`, or,
/// when there is none, with one `, "enabled": <value>` (any whitespace) after the last
/// value. Found with jsonc-parser's syntax tree, not the concrete tree the rewrite edits.
fn kept_outside_enabled(text: &str, edited: &str, enabled: bool) -> bool {
    let properties = top_level_properties(text);
    let values: Vec<(usize, usize)> = properties
        .iter()
        .filter(|(name, _)| manifest::key_matches(name, "enabled"))
        .map(|(_, range)| *range)
        .collect();
    let literal = if enabled { "true" } else { "false" };
    if values.is_empty() {
        let Some(&(_, (_, end))) = properties.last() else {
            return false;
        };
        let (before, after) = text.split_at(end);
        let Some(middle) = edited
            .strip_prefix(before)
            .and_then(|rest| rest.strip_suffix(after))
        else {
            return false;
        };
        return is_appended(middle, literal);
    }
    let mut expected = String::new();
    let mut at = 0;
    for (start, end) in values {
        expected.push_str(&text[at..start]);
        expected.push_str(literal);
        at = end;
    }
    expected.push_str(&text[at..]);
    expected == edited
}

/// `, "enabled": true` with any whitespace around the parts.
fn is_appended(middle: &str, literal: &str) -> bool {
    let rest = middle.strip_prefix(',').map(str::trim_start);
    let rest = rest
        .and_then(|r| r.strip_prefix("\"enabled\""))
        .map(str::trim_start);
    let rest = rest.and_then(|r| r.strip_prefix(':')).map(str::trim_start);
    rest == Some(literal)
}

/// Each top-level property's name and the byte range of its value.
fn top_level_properties(text: &str) -> Vec<(String, (usize, usize))> {
    let parsed = jsonc_parser::parse_to_ast(
        text,
        &jsonc_parser::CollectOptions::default(),
        &jsonc_parser::ParseOptions::default(),
    )
    .expect("text serde_json accepts is JSON for jsonc-parser too");
    let Some(jsonc_parser::ast::Value::Object(object)) = parsed.value else {
        panic!("a manifest is an object");
    };
    object
        .properties
        .iter()
        .map(|p| {
            let range = p.value.range();
            (p.name.clone().into_string(), (range.start, range.end))
        })
        .collect()
}
