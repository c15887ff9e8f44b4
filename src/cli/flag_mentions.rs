//! A check over the source: every `zot ext <command> ... --flag` that a message, tip or fix
//! prints names a flag that command has, and every "pass --flag" names a flag of each command
//! whose run can print it.

use std::fs;
use std::path::Path;

use clap::Command;

/// Files whose "pass --flag" messages reach the user from several commands: the commands.
const SHARED: &[(&str, &[&str])] = &[
    ("src/install/mod.rs", &["install", "add"]),
    ("src/cmd/named.rs", &["update", "prepare"]),
];

/// The commands a file's "pass --flag" speaks for: its own under `src/cmd/`, or [`SHARED`].
fn speakers(file: &str) -> Vec<&str> {
    if let Some((_, commands)) = SHARED.iter().find(|(f, _)| *f == file) {
        return commands.to_vec();
    }
    let Some(name) = file.strip_prefix("src/cmd/") else {
        return Vec::new();
    };
    let name = name.trim_end_matches(".rs");
    vec![name.split('/').next().unwrap_or(name)]
}

/// Every `.rs` file under `dir`, as (path from the crate root, text).
fn sources(root: &Path, dir: &Path, found: &mut Vec<(String, String)>) {
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(root, &path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let shown = path.strip_prefix(root).unwrap().display().to_string();
            found.push((shown, fs::read_to_string(&path).unwrap()));
        }
    }
}

/// A `--flag` word as a command line takes it: up to its first character that is not part of
/// a flag name (`--force{project}` is `--force`).
fn flag_name(word: &str) -> Option<&str> {
    let rest = word.strip_prefix("--")?;
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &word[..end + 2])
}

fn has_flag(command: &Command, flag: &str) -> bool {
    let long = &flag[2..];
    matches!(long, "help" | "version")
        || command.get_arguments().any(|a| {
            a.get_long() == Some(long) || a.get_all_aliases().is_some_and(|all| all.contains(&long))
        })
}

/// The code lines of a file before its unit tests.
fn code(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| !l.starts_with("#[cfg(test)]"))
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
}

#[test]
fn every_flag_a_message_names_exists_on_its_command() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (file, _) in SHARED {
        assert!(root.join(file).is_file(), "{file} (in SHARED) has moved");
    }
    let mut files = Vec::new();
    sources(root, &root.join("src"), &mut files);
    let mut cli = super::command();
    cli.build();
    let ext = cli.find_subcommand("ext").unwrap().clone();
    let mut wrong = Vec::new();
    for (file, text) in &files {
        for (n, line) in code(text) {
            for (at, _) in line.match_indices("zot ext ") {
                let mut words = line[at + 8..].split_whitespace();
                let Some(sub) = words.next().and_then(|w| ext.find_subcommand(w)) else {
                    continue;
                };
                for word in words {
                    if let Some(flag) = flag_name(word)
                        && !has_flag(sub, flag)
                    {
                        wrong.push(format!(
                            "{file}:{}: zot ext {} {flag}",
                            n + 1,
                            sub.get_name()
                        ));
                    }
                    if word.ends_with([';', ',', ')', '"', '`']) {
                        break;
                    }
                }
            }
            for (at, _) in line.match_indices("pass --") {
                let Some(flag) = flag_name(&line[at + 5..]) else {
                    continue;
                };
                for name in speakers(file) {
                    match ext.find_subcommand(name) {
                        Some(sub) if has_flag(sub, flag) => {}
                        _ => wrong.push(format!("{file}:{}: {name} has no {flag}", n + 1)),
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "flags named that do not exist:\n{}",
        wrong.join("\n")
    );
}
