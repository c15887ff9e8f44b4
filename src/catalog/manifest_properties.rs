//! Property tests of the manifest: the `enabled` rewrite keeps every other byte of any valid
//! manifest (random key order, whitespace, unknown and duplicate fields, unicode and escaped
//! strings) and the result says what was asked; `check_name` accepts exactly the documented
//! names and never one that could leave its folder; the quick reading of a manifest gives
//! what the full reading gives whenever that has nothing to note, and nothing otherwise.

use std::fmt::Write as _;
use std::path::{Component, Path};

use proptest::prelude::*;
use serde_json::Value;

use crate::catalog::manifest::{
    FILE, MAX_NAME_LEN, Manifest, check_name, key_matches, parse, parse_fully, parse_quickly,
    with_enabled,
};

/// Whitespace JSON allows between tokens.
fn ws() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[ \t\r\n]{0,3}").unwrap()
}

/// A JSON string literal for `text`: `serde_json`'s escaping, or every non-ASCII character
/// written as `\u` escapes (surrogate pairs above the BMP).
fn string_literal(text: &str) -> impl Strategy<Value = String> + use<> {
    let plain = serde_json::to_string(text).unwrap();
    let mut escaped = String::new();
    for c in text.chars() {
        match c {
            ' '..='~' if c != '"' && c != '\\' => escaped.push(c),
            _ => {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    let _ = write!(escaped, "\\u{unit:04x}");
                }
            }
        }
    }
    prop_oneof![Just(plain), Just(format!("\"{escaped}\""))]
}

fn any_string_literal() -> impl Strategy<Value = String> {
    any::<String>().prop_flat_map(|text| string_literal(&text))
}

/// A valid extension name.
fn name() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[A-Za-z0-9_é-][A-Za-z0-9._ ß-]{0,20}").unwrap()
}

/// Any JSON value, as text with random whitespace, possibly holding `"enabled"` keys
/// deeper down (which the rewrite must leave alone).
fn json_text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| serde_json::to_string(&f).unwrap()),
        any_string_literal(),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (prop::collection::vec((ws(), inner.clone(), ws()), 0..4)).prop_map(|items| {
                let items: Vec<String> = items
                    .into_iter()
                    .map(|(a, v, b)| format!("{a}{v}{b}"))
                    .collect();
                format!("[{}]", items.join(","))
            }),
            (prop::collection::vec(
                (
                    prop_oneof![Just("\"enabled\"".to_string()), any_string_literal()],
                    ws(),
                    inner,
                ),
                0..4
            ))
            .prop_map(|members| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, w, v)| format!("{k}{w}:{w}{v}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

/// One top-level member: its key as written, and its value as written.
#[derive(Debug, Clone)]
struct Member {
    key: String,
    value: String,
    /// Whether it is an `enabled` member (whose value the rewrite replaces).
    enabled: bool,
}

fn member(key: &str, value: String) -> Member {
    Member {
        key: serde_json::to_string(key).unwrap(),
        value,
        enabled: false,
    }
}

/// `"enabled": true|false|null`, its key sometimes written with escapes or in another case
/// (zot's Go decoder matches keys case-insensitively).
fn enabled_member() -> impl Strategy<Value = Member> {
    let key = prop_oneof![
        Just("\"enabled\"".to_string()),
        Just("\"Enabled\"".to_string()),
        Just("\"ENABLED\"".to_string()),
        Just("\"\\u0065nabled\"".to_string()),
        Just("\"enab\\u006Ced\"".to_string()),
    ];
    let value = prop_oneof![Just("true"), Just("false"), Just("null")];
    (key, value).prop_map(|(key, value)| Member {
        key,
        value: value.to_string(),
        enabled: true,
    })
}

/// The fields a manifest defines (other keys are unknown fields, kept as they are).
const KNOWN: [&str; 7] = [
    "name",
    "version",
    "exec",
    "args",
    "language",
    "description",
    "enabled",
];

/// Members of a valid manifest in random order: name and exec (the last copy of each valid),
/// optional known fields, unknown fields (some repeated), and zero to three `enabled`.
fn members() -> impl Strategy<Value = Vec<Member>> {
    let optional_string = prop_oneof![Just("null".to_string()), any_string_literal()];
    (
        name(),
        any::<String>().prop_filter("non-blank", |s| !s.trim().is_empty()),
        prop::option::of(optional_string.clone()),
        prop::option::of(optional_string.clone()),
        prop::option::of(optional_string),
        prop::option::of(prop::collection::vec(any_string_literal(), 0..3)),
        prop::collection::vec(
            (
                proptest::string::string_regex("[a-z_]{1,8}|x-.{0,6}")
                    .unwrap()
                    .prop_filter("unknown", |key| !KNOWN.contains(&key.as_str())),
                json_text(),
            ),
            0..4,
        ),
        prop::collection::vec(enabled_member(), 0..4),
        any::<bool>(),
    )
        .prop_flat_map(
            |(name, exec, version, language, description, args, unknown, enabled, twice)| {
                let mut all = vec![
                    member("name", serde_json::to_string(&name).unwrap()),
                    member("exec", serde_json::to_string(&exec).unwrap()),
                ];
                let known = [
                    ("version", version),
                    ("language", language),
                    ("description", description),
                ];
                for (key, value) in known {
                    all.extend(value.map(|v| member(key, v)));
                }
                if let Some(args) = args {
                    all.push(member("args", format!("[{}]", args.join(", "))));
                }
                for (key, value) in unknown {
                    if twice {
                        all.push(member(&key, value.clone()));
                    }
                    all.push(member(&key, value));
                }
                all.extend(enabled);
                Just(all).prop_shuffle().prop_map(move |mut shuffled| {
                    // The last of duplicate keys counts: keep the valid name and exec last.
                    for key in ["\"name\"", "\"exec\""] {
                        let at = shuffled.iter().rposition(|m| m.key == key).unwrap();
                        let keep = shuffled.remove(at);
                        shuffled.push(keep);
                    }
                    shuffled
                })
            },
        )
}

/// A manifest as text, with where each member's value lies.
#[derive(Debug, Clone)]
struct Written {
    text: String,
    /// Byte ranges of the values of the `enabled` members.
    enabled_values: Vec<(usize, usize)>,
    /// Where the last member's value ends.
    last_value_end: usize,
}

fn written() -> impl Strategy<Value = Written> {
    (
        members(),
        prop::collection::vec((ws(), ws(), ws(), ws()), 16),
        ws(),
        ws(),
    )
        .prop_map(|(members, spaces, head, tail)| {
            let mut text = format!("{head}{{");
            let mut enabled_values = Vec::new();
            let mut last_value_end = 0;
            for (i, m) in members.iter().enumerate() {
                let (a, b, c, d) = &spaces[i % spaces.len()];
                if i > 0 {
                    text.push(',');
                }
                let _ = write!(text, "{a}{}{b}:{c}", m.key);
                let start = text.len();
                text.push_str(&m.value);
                last_value_end = text.len();
                if m.enabled {
                    enabled_values.push((start, text.len()));
                }
                text.push_str(d);
            }
            let _ = write!(text, "}}{tail}");
            Written {
                text,
                enabled_values,
                last_value_end,
            }
        })
}

/// What the rewrite must produce when `written` has `enabled` members: each value replaced.
// The offsets are where this module's generator put the values: character boundaries.
#[allow(clippy::string_slice)]
fn replaced(written: &Written, literal: &str) -> String {
    let mut out = String::new();
    let mut at = 0;
    for &(start, end) in &written.enabled_values {
        out.push_str(&written.text[at..start]);
        out.push_str(literal);
        at = end;
    }
    out.push_str(&written.text[at..]);
    out
}

/// Whether `edited` is `written` with one `, "enabled": <literal>` after the last value.
fn appended(written: &Written, edited: &str, literal: &str) -> bool {
    let (before, after) = written.text.split_at(written.last_value_end);
    let Some(middle) = edited
        .strip_prefix(before)
        .and_then(|rest| rest.strip_suffix(after))
    else {
        return false;
    };
    let rest = middle.strip_prefix(',').map(str::trim_start);
    let rest = rest
        .and_then(|r| r.strip_prefix("\"enabled\""))
        .map(str::trim_start);
    let rest = rest.and_then(|r| r.strip_prefix(':')).map(str::trim_start);
    rest == Some(literal)
}

/// `cases` cases (few enough for `cargo test` to stay fast), or `PROPTEST_CASES` when set.
fn config(cases: u32) -> ProptestConfig {
    let defaults = ProptestConfig::default();
    let from_env = std::env::var_os("PROPTEST_CASES").is_some();
    ProptestConfig {
        cases: if from_env { defaults.cases } else { cases },
        failure_persistence: None,
        ..defaults
    }
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn the_enabled_rewrite_keeps_every_other_byte(written in written(), enabled in any::<bool>()) {
        let path = Path::new(FILE);
        let original = parse(&written.text, path)
            .unwrap_or_else(|e| panic!("generated an invalid manifest ({e}): {}", written.text));
        let literal = if enabled { "true" } else { "false" };
        let edited = with_enabled(&written.text, enabled);
        prop_assert!(edited.is_some(), "could not rewrite {:?}", written.text);
        let edited = edited.unwrap();
        if written.enabled_values.is_empty() {
            prop_assert!(appended(&written, &edited, literal), "{:?}\n{:?}", written.text, edited);
        } else {
            prop_assert_eq!(&edited, &replaced(&written, literal));
        }
        let again = parse(&edited, path).unwrap();
        prop_assert_eq!(again, Manifest { enabled, ..original });
        // And it is still the same JSON, but for the top-level "enabled".
        let mut before: Value = serde_json::from_str(&written.text).unwrap();
        let mut after: Value = serde_json::from_str(&edited).unwrap();
        before.as_object_mut().unwrap().retain(|k, _| !key_matches(k, "enabled"));
        after.as_object_mut().unwrap().retain(|k, _| !key_matches(k, "enabled"));
        prop_assert_eq!(before, after);
    }
}

/// The documented rule: 1 to 247 bytes of anything but '/', '\\' and control characters
/// (NUL and the bidirectional controls among them), and not "." or "..".
fn documented(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|c| c == '/' || c == '\\' || crate::catalog::manifest::is_control(c))
}

/// Names near the rule's edges: valid runs, lengths around the limit, dots, and one
/// character from anywhere (separators, controls, NUL, non-ASCII) put in.
fn candidate_name() -> impl Strategy<Value = String> {
    let valid = || proptest::string::string_regex("[A-Za-z0-9._ äöüß天-]{0,130}").unwrap();
    let odd = prop_oneof![
        Just('/'),
        Just('\\'),
        Just('\0'),
        Just('\n'),
        Just(' '),
        Just(':'),
        Just('\u{202e}'),
        any::<char>(),
        proptest::char::range('\u{0}', '\u{1f}'),
    ];
    prop_oneof![
        valid(),
        Just(".".to_string()),
        Just("..".to_string()),
        (valid(), prop::option::of(odd), any::<prop::sample::Index>()).prop_map(
            |(mut name, odd, at)| {
                if let Some(c) = odd {
                    let mut cut = at.index(name.len() + 1);
                    while !name.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    name.insert(cut, c);
                }
                name
            }
        ),
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn check_name_accepts_exactly_the_documented_names(name in candidate_name()) {
        let accepted = check_name(&name).is_ok();
        prop_assert_eq!(accepted, documented(&name), "{:?}", name);
        if accepted {
            // One plain path component: no separator, no "." or "..", no root.
            let parts: Vec<Component> = Path::new(&name).components().collect();
            prop_assert_eq!(parts, vec![Component::Normal(name.as_ref())]);
            prop_assert!(!name.chars().any(char::is_control));
        }
    }
}

/// A key near a field's: a field as documented (sometimes written with escapes), in
/// another case or with a folding character (`ſ`, the Kelvin sign), or another key.
// The known fields are ASCII: any byte index is a character boundary.
#[allow(clippy::string_slice)]
fn near_key() -> impl Strategy<Value = String> {
    let field = prop::sample::select(KNOWN.to_vec());
    prop_oneof![
        3 => field.clone().prop_map(|f| serde_json::to_string(f).unwrap()),
        1 => field.clone().prop_map(|f| format!("\"\\u{:04x}{}\"", u32::from(f.as_bytes()[0]), &f[1..])),
        1 => (field.clone(), any::<prop::sample::Index>()).prop_map(|(f, at)| {
            let mut key = f.to_string();
            let i = at.index(key.len());
            key.replace_range(i..=i, &key[i..=i].to_ascii_uppercase());
            serde_json::to_string(&key).unwrap()
        }),
        1 => field.prop_map(|f| serde_json::to_string(&f.replace('s', "ſ").replace('k', "\u{212a}")).unwrap()),
        1 => any_string_literal(),
    ]
}

/// A value near what a field wants: strings (blank, unusable as a name, with escapes),
/// `null`, booleans, arrays of strings or not, any JSON, and values `serde_json` refuses
/// only when it reads them as they are (a lone surrogate, a number out of range, nesting
/// deeper than it allows).
fn near_value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => any_string_literal(),
        2 => candidate_name().prop_map(|n| serde_json::to_string(&n).unwrap()),
        1 => Just("\"  \"".to_string()),
        1 => Just("null".to_string()),
        1 => any::<bool>().prop_map(|b| b.to_string()),
        1 => prop::collection::vec(any_string_literal(), 0..3).prop_map(|v| format!("[{}]", v.join(","))),
        2 => json_text(),
        1 => Just("\"\\ud800\"".to_string()),
        1 => Just("1e999".to_string()),
        1 => (100usize..140).prop_map(|depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth))),
    ]
}

/// Text near a manifest: an object of keys and values near the fields (often with a valid
/// name and exec first), any other JSON, or text that is not JSON.
fn near_manifest() -> impl Strategy<Value = String> {
    let object = || {
        (
            any::<bool>(),
            prop::collection::vec((near_key(), ws(), near_value()), 0..7),
        )
            .prop_map(|(valid_first, members)| {
                let mut all: Vec<String> = Vec::new();
                if valid_first {
                    all.push(r#""name":"n","exec":"./x""#.to_string());
                }
                all.extend(
                    members
                        .into_iter()
                        .map(|(k, w, v)| format!("{k}{w}:{w}{v}")),
                );
                format!("{{{}}}", all.join(","))
            })
    };
    prop_oneof![
        6 => object(),
        2 => written().prop_map(|w| w.text),
        1 => json_text(),
        1 => (object(), prop_oneof![Just(","), Just("}"), Just(" x"), Just("\u{0}")]).prop_map(|(o, tail)| o + tail),
    ]
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn the_quick_reading_agrees_with_the_full_one(text in near_manifest()) {
        let full = parse_fully(&text, Path::new(FILE)).ok().filter(|m| m.notes.is_empty());
        prop_assert_eq!(parse_quickly(&text), full, "{}", text);
    }
}
