//! No two files of `src/` use each other, directly or through others, and no two of its
//! folders (top-level modules) do: the rule ARCHITECTURE.md states. A file uses another when
//! its code (tests left out) names an item of that file's module: a `use` of it, or a path
//! such as `crate::store::Store`, `super::wire::HELPER` or `child::f` (a module it declares),
//! also through a module it imported (`use crate::store; store::Store`). A path is taken to
//! the deepest module with a file of its own, so a name `mod.rs` re-exports counts as a use
//! of `mod.rs` (which itself uses the file that defines it). Declaring a child (`mod x;`)
//! alone is no use of it. And each folder uses only folders below it in the picture under
//! "## Layers" in ARCHITECTURE.md, which names every one. Also here: the budget of `unsafe`
//! outside tests (at most 12, each with a `SAFETY:` comment).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The binaries' roots: they use the library through `zot_ext::`, not `crate::`.
const BINARIES: [&str; 2] = ["main.rs", "git_helper.rs"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, as paths relative to `src/` with `/` between parts.
fn rust_files(dir: &Path, found: &mut Vec<String>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(src()).unwrap();
            found.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The module path of a file: `store/mod.rs` and `store.rs` are `store`, `lib.rs` the root.
fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// `code` without comments, and with string and character literals emptied, so that only
/// code is left to read paths from.
fn code_only(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    let at = |i: usize, s: &str| {
        s.chars()
            .enumerate()
            .all(|(k, c)| chars.get(i + k) == Some(&c))
    };
    while i < chars.len() {
        let c = chars[i];
        let word_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if at(i, "//") {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if at(i, "/*") {
            let mut depth = 0;
            loop {
                if at(i, "/*") {
                    depth += 1;
                    i += 2;
                } else if at(i, "*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else if i >= chars.len() {
                    break;
                } else {
                    i += 1;
                }
            }
        } else if c == 'r' && !word_before && matches!(chars.get(i + 1), Some('"' | '#')) {
            let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            i += 2 + hashes;
            while i < chars.len() && !at(i, &close) {
                i += 1;
            }
            i += close.len();
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && chars.get(i + 1) == Some(&'\\') {
            // An escape: the character after the backslash may itself be a quote.
            i += 3;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `code` without the items marked `#[cfg(test)]` or `#[cfg(all(test, ...))]` (test modules
/// and test-only functions).
fn without_tests(code: &str) -> String {
    let mut code = code.to_owned();
    while let Some(start) = ["#[cfg(test)]", "#[cfg(all(test,"]
        .iter()
        .filter_map(|attribute| code.find(attribute))
        .min()
    {
        let mut depth = 0;
        let mut end = code.len();
        for (i, c) in code[start..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = start + i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = start + i + 1;
                    break;
                }
                _ => {}
            }
        }
        code.replace_range(start..end, "");
    }
    code
}

/// The words and `::`, `{`, `}`, `,`, `;`, `*` of `code`, in order.
fn tokens(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if !(d.is_alphanumeric() || d == '_') {
                    break;
                }
                end = j + d.len_utf8();
                chars.next();
            }
            found.push(code[i..end].to_owned());
        } else if c == ':' && chars.peek().is_some_and(|&(_, d)| d == ':') {
            chars.next();
            found.push("::".to_owned());
        } else if "{},;*".contains(c) {
            found.push(c.to_string());
        } else if !c.is_whitespace() {
            found.push(" ".to_owned());
        }
    }
    found
}

/// The paths a `use` tree names (`a::{b, c::d as e}` gives `a::b` and `a::c::d`), each with
/// the name it brings into scope.
fn use_paths(tree: &[String], prefix: &[String], found: &mut Vec<(Vec<String>, String)>) {
    let mut path = prefix.to_vec();
    let mut i = 0;
    while i < tree.len() {
        match tree[i].as_str() {
            "::" => {}
            "{" => {
                let mut depth = 0;
                let mut start = i + 1;
                for j in i..tree.len() {
                    match tree[j].as_str() {
                        "{" => depth += 1,
                        "}" | "," if depth == 1 => {
                            use_paths(&tree[start..j], &path, found);
                            start = j + 1;
                            if tree[j] == "}" {
                                return;
                            }
                        }
                        "}" => depth -= 1,
                        _ => {}
                    }
                }
                return;
            }
            "as" => {
                if let Some(alias) = tree.get(i + 1) {
                    found.push((path, alias.clone()));
                }
                return;
            }
            word => path.push(word.to_owned()),
        }
        i += 1;
    }
    if let Some(last) = path.last() {
        let name = if last == "self" {
            path.iter().rev().nth(1).cloned().unwrap_or_default()
        } else {
            last.clone()
        };
        found.push((path, name));
    }
}

/// The files each file of `src/` uses.
fn uses() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.retain(|f| !BINARIES.contains(&f.as_str()));
    let modules: BTreeMap<Vec<String>, String> =
        files.iter().map(|f| (module_of(f), f.clone())).collect();
    // The file of the deepest module `path` goes through.
    let file_of = |path: &[String]| {
        (0..=path.len())
            .rev()
            .find_map(|k| modules.get(&path[..k]).cloned())
    };
    let mut graph = BTreeMap::new();
    for file in &files {
        let code = without_tests(&code_only(&fs::read_to_string(src().join(file)).unwrap()));
        let words = tokens(&code);
        let module = module_of(file);
        let children: BTreeSet<&str> = words
            .windows(3)
            .filter(|w| w[0] == "mod" && (w[2] == ";" || w[2] == "{"))
            .map(|w| w[1].as_str())
            .collect();
        let absolute = |path: &[String]| -> Option<Vec<String>> {
            let (first, rest) = path.split_first()?;
            match first.as_str() {
                "crate" => Some(rest.to_vec()),
                "self" => Some([module.clone(), rest.to_vec()].concat()),
                "super" => {
                    let ups = path.iter().take_while(|w| *w == "super").count();
                    let base = &module[..module.len().saturating_sub(ups)];
                    Some([base, &path[ups..]].concat())
                }
                child if children.contains(child) => Some([module.clone(), path.to_vec()].concat()),
                _ => None,
            }
        };
        let mut named = Vec::new();
        let mut imported: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut i = 0;
        while i < words.len() {
            if words[i] == "use" {
                let end = words[i..]
                    .iter()
                    .position(|w| w == ";")
                    .map_or(words.len(), |e| i + e);
                let mut found = Vec::new();
                use_paths(&words[i + 1..end], &[], &mut found);
                for (path, name) in found {
                    let path: Vec<String> = path.into_iter().filter(|w| w != "self").collect();
                    if let Some(target) = absolute(&path) {
                        if modules.contains_key(&target) {
                            imported.insert(name, target.clone());
                        }
                        named.push(target);
                    }
                }
                i = end;
                continue;
            }
            // A path starts at a word that does not follow `::`.
            let starts = i == 0 || words[i - 1] != "::";
            if starts && words.get(i + 1).is_some_and(|w| w == "::") {
                let mut path = vec![words[i].clone()];
                let mut j = i + 1;
                while words.get(j).is_some_and(|w| w == "::")
                    && words
                        .get(j + 1)
                        .is_some_and(|w| w.chars().all(|c| c.is_alphanumeric() || c == '_'))
                {
                    path.push(words[j + 1].clone());
                    j += 2;
                }
                let target = absolute(&path).or_else(|| {
                    let module = imported.get(&path[0])?;
                    Some([module.as_slice(), &path[1..]].concat())
                });
                named.extend(target);
                i = j;
                continue;
            }
            i += 1;
        }
        let used: BTreeSet<String> = named
            .iter()
            .filter_map(|path| file_of(path))
            .filter(|f| f != file)
            .collect();
        graph.insert(file.clone(), used);
    }
    graph
}

/// The groups of nodes of `graph` that reach each other (strongly connected components of
/// more than one node), each sorted.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(node) = todo.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|node| (node, reach(node))).collect();
    let mut groups: BTreeSet<Vec<String>> = BTreeSet::new();
    for (node, from_it) in &reached {
        let group: Vec<String> = from_it
            .iter()
            .filter(|other| reached.get(other).is_some_and(|r| r.contains(*node)))
            .cloned()
            .collect();
        if group.len() > 1 {
            groups.insert(group);
        }
    }
    groups.into_iter().collect()
}

/// How the files of `group` use each other, one line per file.
fn describe(group: &[String], graph: &BTreeMap<String, BTreeSet<String>>) -> String {
    group
        .iter()
        .map(|file| {
            let inside: Vec<&str> = graph[file]
                .iter()
                .filter(|f| group.contains(f))
                .map(String::as_str)
                .collect();
            format!("  {file} uses {}", inside.join(", "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_two_files_of_src_use_each_other() {
    let graph = uses();
    let problems: Vec<String> = cycles(&graph)
        .iter()
        .map(|group| describe(group, &graph))
        .collect();
    assert!(
        problems.is_empty(),
        "files in src/ use each other (move the piece both need into a file below them):\n{}",
        problems.join("\n\n")
    );
}

/// The top-level modules of `src/` (folders, and files beside them such as `logs.rs`), each
/// with the ones it uses.
fn folder_uses() -> BTreeMap<String, BTreeSet<String>> {
    let top = |file: &str| {
        file.split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_owned()
    };
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, used) in uses() {
        // lib.rs declares every module and re-exports the public surface.
        if file == "lib.rs" {
            continue;
        }
        let from = top(&file);
        let to: Vec<String> = used
            .iter()
            .map(|f| top(f))
            .filter(|t| *t != from && t != "lib")
            .collect();
        graph.entry(from).or_default().extend(to);
    }
    graph
}

/// The modules of the picture under "## Layers" in ARCHITECTURE.md, top to bottom
/// (`cmd/` and `logs.rs` as `cmd` and `logs`).
fn architecture_layers() -> Vec<String> {
    let text = fs::read_to_string(src().join("../ARCHITECTURE.md")).unwrap();
    let section = &text[text.find("\n## Layers\n").expect("a \"## Layers\" section")..];
    let picture = section
        .split("```")
        .nth(1)
        .expect("a picture in a code block");
    picture
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(|word| {
            word.trim_end_matches('/')
                .trim_end_matches(".rs")
                .to_owned()
        })
        .collect()
}

#[test]
fn no_two_folders_of_src_use_each_other() {
    let graph = folder_uses();
    let groups = cycles(&graph);
    assert!(
        groups.is_empty(),
        "folders of src/ use each other:\n{}",
        groups
            .iter()
            .map(|g| describe(g, &graph))
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

#[test]
fn the_reader_finds_uses_in_every_form() {
    let code = code_only(
        "use super::wire::{FETCH, HELPER as H};\n// crate::gone::x\nlet s = \"crate::nor::this\";\n\
         let c = '\"'; let l: &'a str = crate::output::shell::quote(x);",
    );
    let words = tokens(&code);
    assert!(!words.contains(&"gone".to_owned()) && !words.contains(&"nor".to_owned()));
    assert!(words.contains(&"shell".to_owned()), "{words:?}");
    let mut found = Vec::new();
    let tree: Vec<String> = tokens("super::wire::{FETCH, HELPER as H}");
    use_paths(&tree, &[], &mut found);
    let paths: Vec<String> = found
        .iter()
        .map(|(p, n)| format!("{}={n}", p.join("::")))
        .collect();
    assert_eq!(paths, ["super::wire::FETCH=FETCH", "super::wire::HELPER=H"]);
    assert_eq!(
        without_tests("a();\n#[cfg(test)]\nmod tests { fn b() { c(); } }\nd();"),
        "a();\n\nd();"
    );
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(cycles(&graph), [["a", "b", "c"]]);
}

#[test]
fn each_folder_uses_only_folders_below_it_in_architecture_md() {
    let layers = architecture_layers();
    let graph = folder_uses();
    let place = |module: &str| layers.iter().position(|l| l == module);
    let mut problems = Vec::new();
    for (module, used) in &graph {
        let Some(at) = place(module) else {
            problems.push(format!("src/{module} is not in the picture"));
            continue;
        };
        for other in used {
            match place(other) {
                None => problems.push(format!("src/{other} is not in the picture")),
                Some(below) if below < at => {
                    problems.push(format!("{module} uses {other}, which is above it"));
                }
                Some(_) => {}
            }
        }
    }
    problems.sort();
    problems.dedup();
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md's \"## Layers\" picture and the code disagree:\n- {}",
        problems.join("\n- ")
    );
}

/// The `unsafe` blocks, impls, functions and extern blocks of `code` (comments and strings
/// already left out).
fn unsafe_uses(code: &str) -> usize {
    tokens(code)
        .windows(2)
        .filter(|w| w[0] == "unsafe" && ["{", "impl", "fn", "extern"].contains(&w[1].as_str()))
        .count()
}

/// Outside tests, `src/` holds at most 8 `unsafe` uses, and each file has a `SAFETY:`
/// comment for each of its own: plain Rust first, `unsafe` only for a gain a user can feel.
#[test]
fn unsafe_outside_tests_stays_within_its_budget_each_with_a_safety_comment() {
    const BUDGET: usize = 8;
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut total = 0;
    let mut unexplained = Vec::new();
    for file in &files {
        let source = fs::read_to_string(src().join(file)).unwrap();
        let uses = unsafe_uses(&without_tests(&code_only(&source)));
        let reasons = without_tests(&source).matches("SAFETY:").count();
        if reasons < uses {
            unexplained.push(format!("{file}: {uses} unsafe, {reasons} SAFETY comments"));
        }
        total += uses;
    }
    assert!(unexplained.is_empty(), "{}", unexplained.join("\n"));
    assert!(
        total <= BUDGET,
        "{total} unsafe uses outside tests in src/, more than {BUDGET}: find a plain way"
    );
}

#[test]
fn unsafe_uses_are_counted_in_code_only() {
    let code = code_only(
        "// unsafe { x }\nlet s = \"unsafe {\";\nunsafe { f() }\nunsafe impl Send for X {}\n",
    );
    assert_eq!(unsafe_uses(&code), 2);
}
