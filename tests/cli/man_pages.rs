//! The man pages' own sections, checked on the rendered pages: the SYNOPSIS shows option
//! values, repeatable arguments and exclusive flags, and EXIT STATUS is particular to each
//! command.

use crate::support::man::{pages, render, repeats, value_name};

#[test]
fn pages_cover_every_subcommand() {
    let names: Vec<String> = pages().into_iter().map(|p| p.name).collect();
    for expected in [
        "zot",
        "zot-ext",
        "zot-ext-list",
        "zot-ext-remove",
        "zot-completions",
    ] {
        assert!(names.iter().any(|n| n == expected), "{names:?}");
    }
    assert!(!names.iter().any(|n| n.ends_with("-help")), "{names:?}");
}

/// The rendered page of `path` (`zot ext doctor`).
fn page(path: &str) -> String {
    let file = format!("man/{}.1", path.replace(' ', "-"));
    let (_, bytes) = render().into_iter().find(|(f, _)| *f == file).unwrap();
    String::from_utf8(bytes).unwrap()
}

/// The text of `section` of the page of `path`, without fonts and escapes.
fn section(path: &str, section: &str) -> String {
    let page = page(path);
    // The roff crate quotes a title with spaces.
    let start = [format!(".SH {section}\n"), format!(".SH \"{section}\"\n")]
        .iter()
        .find_map(|heading| page.find(heading))
        .unwrap_or_else(|| panic!("{path} has no {section}"));
    let body = &page[start..];
    let body = body[4..]
        .find("\n.SH ")
        .map_or(body, |end| &body[..end + 4]);
    body.replace("\\fB", "")
        .replace("\\fI", "")
        .replace("\\fR", "")
        .replace("\\-", "-")
        .replace("\\ ", " ")
}

#[test]
fn synopsis_shows_values_repeats_and_exclusive_flags() {
    let doctor = section("zot ext doctor", "SYNOPSIS");
    assert!(
        doctor.contains("\nzot ext doctor [--timeout SECS] [--strict] "),
        "{doctor}"
    );
    assert!(doctor.contains(" [NAME...]\n"), "{doctor}");
    let call = section("zot ext call", "SYNOPSIS");
    assert!(call.contains("[--tool TOOL] [--timeout SECS]"), "{call}");
    assert!(call.contains(" NAME [INPUT...]\n"), "{call}");
    let update = section("zot ext update", "SYNOPSIS");
    for part in [
        "[--ref REF]",
        "[-p|-g|--scope SCOPE]",
        "[NAME...]",
        "[--color WHEN]",
    ] {
        assert!(update.contains(part), "{part} in {update}");
    }
    assert!(!update.contains("--project"), "{update}");
    let logs = section("zot ext logs", "SYNOPSIS");
    assert!(
        logs.contains("[-n|--lines N]") && logs.contains(" NAME\n"),
        "{logs}"
    );
    let new = section("zot ext new", "SYNOPSIS");
    assert!(
        new.contains("[--lang LANG]") && new.contains("[-p|-g|--scope SCOPE]"),
        "{new}"
    );
    let ext = section("zot ext", "SYNOPSIS");
    assert!(ext.contains(" COMMAND\n"), "{ext}");
}

/// Every option that takes a value shows it, and every repeatable argument its `...`,
/// on every page (arguments added later included).
#[test]
fn every_synopsis_names_values_and_repeats() {
    for page in pages() {
        let synopsis = section(&page.path, "SYNOPSIS");
        for arg in page.command.get_arguments().filter(|a| !a.is_hide_set()) {
            let value = value_name(arg);
            if arg.is_positional() {
                let shown = if repeats(arg) {
                    format!("{value}...")
                } else {
                    value
                };
                assert!(
                    synopsis.contains(&shown),
                    "{}: {shown} in {synopsis}",
                    page.path
                );
                continue;
            }
            if !arg.get_num_args().is_some_and(|r| r.takes_values()) {
                continue;
            }
            let short = arg.get_short().map(|c| format!("-{c} {value}"));
            let long = arg.get_long().map(|l| format!("--{l} {value}"));
            assert!(
                [short, long]
                    .into_iter()
                    .flatten()
                    .any(|s| synopsis.contains(&s)),
                "{}: {} without {value} in {synopsis}",
                page.path,
                arg.get_id()
            );
        }
    }
}

#[test]
fn exit_status_is_particular_to_each_page() {
    let doctor = section("zot ext doctor", "EXIT STATUS");
    assert!(doctor.contains("--strict"), "{doctor}");
    for other in ["--ref", "terminal", "--yes"] {
        assert!(!doctor.contains(other), "{other} in {doctor}");
    }
    let remove = section("zot ext remove", "EXIT STATUS");
    assert!(
        remove.contains("not a terminal") && remove.contains("--yes"),
        "{remove}"
    );
    let call = section("zot ext call", "EXIT STATUS");
    assert!(
        call.contains("JSON object") && call.contains("times out"),
        "{call}"
    );
    // The general statuses are on every page.
    for page in pages() {
        let text = section(&page.path, "EXIT STATUS");
        for general in ["Success", "Failure", "Usage error"] {
            assert!(text.contains(general), "{}: {text}", page.path);
        }
    }
}

#[test]
fn rendering_is_deterministic() {
    assert_eq!(render(), render());
}
