//! The committed completions/ and man/ files are exactly what the code renders, and the
//! command reference in docs/commands.md names exactly the commands clap defines.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;

use clap::CommandFactory;
use zot_ext::cli::Cli;

use crate::support::Env;
use crate::support::man;

/// The one command that rewrites every generated file.
const REGENERATE: &str = "ZOT_REGENERATE=1 cargo test --test cli generated";

/// The command reference: a `### ` heading per command under "## Commands", and the
/// "## Exit status" tables.
const COMMANDS_DOC: &str = "docs/commands.md";

/// Folders that hold only generated files.
const GENERATED_DIRS: [&str; 2] = ["completions", "man"];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn committed_completions_and_man_pages_are_up_to_date() {
    let files = man::render();
    let expected: BTreeSet<&str> = files.iter().map(|(path, _)| path.as_str()).collect();
    let mut extra = Vec::new();
    for dir in GENERATED_DIRS {
        for entry in fs::read_dir(repo().join(dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = format!("{dir}/{}", entry.file_name().to_string_lossy());
            if !expected.contains(path.as_str()) {
                extra.push(path);
            }
        }
    }

    if std::env::var_os("ZOT_REGENERATE").is_some_and(|v| !v.is_empty()) {
        for path in &extra {
            fs::remove_file(repo().join(path)).unwrap();
        }
        for (path, bytes) in &files {
            let path = repo().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, bytes).unwrap();
        }
        return;
    }

    let stale: Vec<&str> = files
        .iter()
        .filter(|(path, bytes)| fs::read(repo().join(path)).ok().as_ref() != Some(bytes))
        .map(|(path, _)| path.as_str())
        .collect();
    assert!(
        stale.is_empty() && extra.is_empty(),
        "generated files are out of date (differ or missing: {stale:?}; no longer generated: \
         {extra:?}); regenerate them with:\n\n    {REGENERATE}\n"
    );
}

/// mandoc finds nothing worse than style in the rendered pages (`.ci/run` lints the
/// committed ones too). Skipped with a note when mandoc is missing, outside CI.
#[test]
fn man_pages_pass_mandoc_lint() {
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
    if Command::new("mandoc").arg("-V").output().is_err() {
        assert!(
            !ci,
            "mandoc is not installed, and CI must lint the man pages"
        );
        eprintln!("note: mandoc is not installed; skipping the man page lint");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut pages = Vec::new();
    for (path, bytes) in man::render() {
        if let Some(name) = path.strip_prefix("man/") {
            fs::write(dir.path().join(name), bytes).unwrap();
            pages.push(dir.path().join(name));
        }
    }
    let out = Command::new("mandoc")
        .args(["-Tlint", "-Wwarning"])
        .args(&pages)
        .output()
        .unwrap();
    let report =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && report.trim().is_empty(),
        "mandoc -Tlint -Wwarning:\n{report}"
    );
}

#[test]
fn zot_completions_prints_the_committed_script() {
    let env = Env::new();
    for (shell, file) in [
        ("bash", "zot.bash"),
        ("zsh", "_zot"),
        ("fish", "zot.fish"),
        ("powershell", "_zot.ps1"),
        ("elvish", "zot.elv"),
    ] {
        let path = format!("completions/{file}");
        let rendered = man::completion_scripts()
            .into_iter()
            .find(|(p, _)| *p == path)
            .map_or_else(
                || panic!("{path} is not generated"),
                |(_, bytes)| String::from_utf8(bytes).unwrap(),
            );
        let printed = env.zot(["completions", shell]).ok().stdout;
        assert_eq!(printed, rendered, "zot completions {shell}");
        // `COMPLETE=<shell> zot` (clap_complete's way to ask) prints the same script.
        let asked = env
            .zot(Vec::<&str>::new())
            .env("COMPLETE", shell)
            .ok()
            .stdout;
        assert_eq!(asked, rendered, "COMPLETE={shell} zot");
        // While regenerating, the files are being rewritten by the test above.
        if std::env::var_os("ZOT_REGENERATE").is_none() {
            let committed = fs::read_to_string(repo().join(&path)).unwrap();
            assert_eq!(printed, committed, "zot completions {shell} and {path}");
        }
    }
}

#[test]
fn completions_rejects_an_unknown_shell() {
    let env = Env::new();
    let done = env.zot(["completions", "tcsh"]).fails(2);
    assert!(done.stderr.contains("tcsh"), "{}", done.stderr);
    let done = env.zot(Vec::<&str>::new()).env("COMPLETE", "tcsh").fails(2);
    assert!(done.stderr.contains("COMPLETE=tcsh"), "{}", done.stderr);
}

/// The `###` headings of the "Commands" section of docs/commands.md (each a command in
/// backticks), as
/// command paths (`ext list`), with the `<placeholders>` each heading shows.
fn readme_commands() -> Vec<(String, String)> {
    let reference = fs::read_to_string(repo().join(COMMANDS_DOC)).unwrap();
    let section = reference
        .split("\n## ")
        .find(|s| s.starts_with("Commands\n"))
        .expect("docs/commands.md has a \"## Commands\" section");
    let mut found = Vec::new();
    for heading in section.lines().filter(|l| l.starts_with("### ")) {
        for (i, span) in heading.split('`').enumerate() {
            // Odd pieces are inside backticks.
            if i % 2 == 1
                && let Some(rest) = span.strip_prefix("zot ")
            {
                let path: Vec<&str> = rest
                    .split_whitespace()
                    .take_while(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
                    .collect();
                found.push((path.join(" "), span.to_owned()));
            }
        }
    }
    found
}

#[test]
fn command_reference_matches_clap() {
    let cli = Cli::command();
    let mut defined = Vec::new();
    for cmd in cli.get_subcommands() {
        if cmd.get_name() == "help" {
            continue;
        }
        let subs: Vec<_> = cmd
            .get_subcommands()
            .filter(|s| s.get_name() != "help")
            .collect();
        if subs.is_empty() {
            defined.push((cmd.get_name().to_owned(), cmd.clone()));
        }
        for sub in subs {
            let path = format!("{} {}", cmd.get_name(), sub.get_name());
            // A command with subcommands of its own (`ext cache`) is documented by them.
            let nested: Vec<_> = sub
                .get_subcommands()
                .filter(|s| s.get_name() != "help")
                .collect();
            if nested.is_empty() {
                defined.push((path.clone(), sub.clone()));
            }
            for inner in nested {
                defined.push((format!("{path} {}", inner.get_name()), inner.clone()));
            }
        }
    }
    let documented = readme_commands();
    let documented_paths: BTreeSet<&str> = documented.iter().map(|(p, _)| p.as_str()).collect();
    let defined_paths: BTreeSet<&str> = defined.iter().map(|(p, _)| p.as_str()).collect();
    let undocumented: Vec<_> = defined_paths.difference(&documented_paths).collect();
    let unknown: Vec<_> = documented_paths.difference(&defined_paths).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "docs/commands.md's Commands section and src/cli/mod.rs disagree: add a `### \\`zot <command> ...\\`` \
         section for {undocumented:?}; no such command: {unknown:?}"
    );
    // Each heading shows the command's required arguments as <placeholders>.
    for (path, cmd) in &defined {
        let heading = &documented.iter().find(|(p, _)| p == path).unwrap().1;
        for arg in cmd.get_positionals().filter(|a| a.is_required_set()) {
            let names = arg
                .get_value_names()
                .map_or_else(|| arg.get_id().to_string(), |v| v.join(" "));
            let placeholder = format!("<{}>", names.to_lowercase());
            assert!(
                heading.contains(&placeholder),
                "docs/commands.md heading `{heading}` lacks {placeholder}"
            );
        }
    }
}

/// The rows of the Markdown table in `section` of a document whose header row is `header`, as
/// cells without the Markdown: backticks dropped, `\|` read as `|`.
fn readme_table(section: &str, header: &str) -> Option<Vec<Vec<String>>> {
    let mut lines = section.lines().skip_while(|l| l.trim() != header);
    lines.next()?;
    let rows = lines
        .skip(1) // |---|---|
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            let row = row.trim().trim_start_matches('|').trim_end_matches('|');
            row.replace("\\|", "\u{0}")
                .split('|')
                .map(|cell| {
                    cell.replace('\u{0}', "|")
                        .replace('`', "")
                        .trim()
                        .to_owned()
                })
                .collect()
        })
        .collect();
    Some(rows)
}

/// `|` escaped for a Markdown table cell.
fn markdown_cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The "Exit status" tables of docs/commands.md say what `EXIT_STATUS` and `EXIT_STATUSES` in
/// [`man_sections`](crate::support::man_sections) say (which the man pages render), row for
/// row and word for word.
#[test]
fn exit_status_tables_match_the_page_data() {
    use crate::support::man_sections::{EXIT_STATUS, EXIT_STATUSES};
    let reference = fs::read_to_string(repo().join(COMMANDS_DOC)).unwrap();
    let section = reference
        .split("\n## ")
        .find(|s| s.starts_with("Exit status\n"))
        .expect("docs/commands.md has a \"## Exit status\" section");
    let general: Vec<Vec<String>> = EXIT_STATUS
        .iter()
        .map(|(status, text)| vec![status.to_string(), text.to_string()])
        .collect();
    let particular: Vec<Vec<String>> = EXIT_STATUSES
        .iter()
        .flat_map(|(path, statuses)| {
            statuses.iter().map(move |(status, text)| {
                vec![path.to_string(), status.to_string(), text.to_string()]
            })
        })
        .collect();
    let mut problems = Vec::new();
    for (header, expected) in [
        ("| status | meaning |", &general),
        ("| command | status | when |", &particular),
    ] {
        let Some(found) = readme_table(section, header) else {
            problems.push(format!("there is no table with the header `{header}`"));
            continue;
        };
        let key = |row: &Vec<String>| match row.as_slice() {
            [status, _] => format!("status {status}"),
            [command, status, _] => format!("`{command}` status {status}"),
            _ => format!("the row {row:?}"),
        };
        for row in expected {
            match found
                .iter()
                .find(|f| f.len() == row.len() && key(f) == key(row))
            {
                None => problems.push(format!("it lacks the row for {}", key(row))),
                Some(f) if f != row => problems.push(format!(
                    "for {} it says {:?} where tests/cli/support/man_sections.rs says {:?}",
                    key(row),
                    f.last().unwrap(),
                    row.last().unwrap()
                )),
                Some(_) => {}
            }
        }
        for row in &found {
            if !expected
                .iter()
                .any(|e| e.len() == row.len() && key(e) == key(row))
            {
                problems.push(format!(
                    "its row for {} is not in tests/cli/support/man_sections.rs",
                    key(row)
                ));
            }
        }
        let order: Vec<String> = found.iter().map(key).collect();
        let expected_order: Vec<String> = expected.iter().map(key).collect();
        if problems.is_empty() && order != expected_order {
            problems.push(format!(
                "its rows are not in the order of tests/cli/support/man_sections.rs: {expected_order:?}"
            ));
        }
    }
    let table = |header: &str, rows: &[Vec<String>]| {
        let mut text = format!("{header}\n|{}\n", "---|".repeat(rows[0].len()));
        for row in rows {
            let cells: Vec<String> = row.iter().map(|c| markdown_cell(c)).collect();
            let _ = writeln!(text, "| {} |", cells.join(" | "));
        }
        text
    };
    assert!(
        problems.is_empty(),
        "docs/commands.md's \"## Exit status\" tables disagree with EXIT_STATUS and EXIT_STATUSES in \
         tests/cli/support/man_sections.rs:\n- {}\nChange docs/commands.md (backticks may be added) or the data in \
         tests/cli/support/man_sections.rs, then regenerate the man pages. The tables the data gives:\n\n{}\n{}",
        problems.join("\n- "),
        table("| status | meaning |", &general),
        table("| command | status | when |", &particular),
    );
}

/// The `bash` code blocks of README's `## <title>` section, each as its lines.
fn readme_bash_blocks(title: &str) -> Vec<Vec<String>> {
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    let start = readme
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("README has a \"## {title}\" section"));
    let section = &readme[start + 4..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    section
        .split("```bash\n")
        .skip(1)
        .map(|block| {
            let code = &block[..block.find("```").expect("a closed code block")];
            code.lines().map(str::to_string).collect()
        })
        .collect()
}

/// README's first commands install the example: they say where it goes, and every line that
/// installs runs with a throwaway `ZOT_HOME`, so trying them leaves the real zot folder
/// alone. Each `zot ext` command there, typed to the installed binary or through cargo,
/// works as written (from the repository's folder).
#[test]
fn readme_try_out_commands_use_a_throwaway_zot_home() {
    let blocks = readme_bash_blocks("The two commands");
    let mut installs = 0;
    for block in &blocks {
        // Each block starts from a fresh `ZOT_HOME`, as `$(mktemp -d)` gives.
        let env = Env::new();
        let mut exported = false;
        for line in block {
            exported |= line.starts_with("export ZOT_HOME=$(mktemp -d)");
            // The installed binary (`zot ext ...`) or the one cargo builds.
            let Some((before, args)) = line
                .split_once("cargo run --release -- ext ")
                .or_else(|| line.strip_prefix("zot ext ").map(|args| ("", args)))
            else {
                continue;
            };
            let args: Vec<&str> = args.split('#').next().unwrap().split_whitespace().collect();
            if args[0] == "install" {
                installs += 1;
                assert!(
                    exported || before == "ZOT_HOME=$(mktemp -d) ",
                    "README's \"The two commands\" installs into the real ZOT_HOME: {line}"
                );
            }
            if args[0] == "doctor" && Command::new("python3").arg("-V").output().is_err() {
                continue;
            }
            let args: Vec<String> = args
                .iter()
                .map(|a| {
                    let a = a.strip_prefix("./").unwrap_or(*a);
                    match a.strip_prefix("examples/") {
                        Some(_) => repo().join(a).display().to_string(),
                        None => a.to_string(),
                    }
                })
                .collect();
            let mut words = vec!["ext".to_string()];
            words.extend(args);
            env.zot(&words).ok();
            if words[1] == "install" {
                assert!(env.global_root().join("hello-py/extension.json").is_file());
            }
        }
    }
    assert!(installs >= 2, "{blocks:?}");
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    for says in ["`$ZOT_HOME/extensions/hello-py/`", "your real zot folder"] {
        assert!(readme.contains(says), "README no longer says {says}");
    }
}
