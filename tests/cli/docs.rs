//! README.md stays a short front door, and every relative link in README.md, ARCHITECTURE.md
//! and docs/*.md leads to a file that exists and, when it names one, to a heading in it.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The most lines README.md may have; the reference lives in docs/.
const README_MAX_LINES: usize = 300;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, ARCHITECTURE.md and every Markdown file in docs/.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md"), repo().join("ARCHITECTURE.md")];
    for entry in fs::read_dir(repo().join("docs")).expect("a docs/ folder") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// `text` without its fenced code blocks and inline code spans, where `](` is not a link.
fn prose(text: &str) -> String {
    let mut kept = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    // Code spans may run over a line break; the odd pieces are inside backticks.
    kept.split('`').step_by(2).collect()
}

/// The targets of the inline links `[text](target)` in `text`.
fn link_targets(text: &str) -> Vec<String> {
    let text = prose(text);
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            rest.find(')').map(|end| rest[..end].to_owned())
        })
        .collect()
}

/// The anchor GitHub gives a heading: lowercase, punctuation but `-` and `_` dropped, spaces
/// turned into `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of the headings of the Markdown file at `path`.
fn anchors(path: &Path) -> BTreeSet<String> {
    let text = fs::read_to_string(path).unwrap();
    let mut fenced = false;
    let mut found = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            found.insert(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

#[test]
fn readme_is_a_short_front_door() {
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move reference text to docs/"
    );
    for door in [
        "zot ext install ./examples/extensions/hello-py",
        "zot ext doctor hello-py",
        "cargo test --all-targets",
        "zot-ext-git",
    ] {
        assert!(readme.contains(door), "README.md no longer shows {door}");
    }
}

#[test]
fn relative_links_in_the_docs_lead_to_files_and_headings_that_exist() {
    let mut broken = Vec::new();
    for document in documents() {
        let text = fs::read_to_string(&document).unwrap();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let file = if file.is_empty() {
                document.clone()
            } else {
                document.parent().unwrap().join(file)
            };
            let name = document.strip_prefix(repo()).unwrap().display();
            if !file.exists() {
                broken.push(format!("{name}: ({target}): no such file"));
            } else if !fragment.is_empty()
                && file.extension().is_some_and(|e| e == "md")
                && !anchors(&file).contains(fragment)
            {
                broken.push(format!("{name}: ({target}): no such heading"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_follow_github() {
    assert_eq!(anchor(" `zot ext cache clean`"), "zot-ext-cache-clean");
    assert_eq!(
        anchor(" What `--force` and `update` keep"),
        "what---force-and-update-keep"
    );
    assert_eq!(
        anchor(" `zot ext install <path|git-url>`"),
        "zot-ext-install-pathgit-url"
    );
}
