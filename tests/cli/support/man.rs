//! The generated files: the man pages in `man/` (`clap_mangen` from the clap definitions, with
//! a SYNOPSIS of our own, plus EXIT STATUS, ENVIRONMENT and FILES from
//! [`super::man_sections`], EXAMPLES from `zot_ext::cli::pages`, and SEE ALSO) and the completion scripts in `completions/`,
//! rendered in memory so tests/cli/generated.rs can compare them with the committed copies
//! (and rewrite them with `ZOT_REGENERATE=1`).

use clap::{Arg, ArgAction, Command, ValueEnum};
use clap_complete::{Generator, Shell};
use clap_mangen::Man;
use clap_mangen::roff::{Inline, Roff, bold, italic, roman};

use super::man_sections::{ENVIRONMENT, EXIT_STATUS, FILES, exit_statuses};
use zot_ext::cli::complete;
use zot_ext::cli::pages::examples;

/// The date in each page's `.TH` line. Pages must not change from run to run, so this is a
/// constant rather than today: set it to the release date when the version changes.
pub(crate) const MAN_DATE: &str = "2026-11-29";

/// One manual page: `zot`, `zot ext`, `zot ext list`, ... and `zot completions`.
pub(crate) struct Page {
    /// The command as typed: `zot ext list`.
    pub path: String,
    /// The page name: `zot-ext-list`.
    pub name: String,
    pub command: Command,
}

/// Every generated file as (path relative to the repository root, contents).
pub(crate) fn render() -> Vec<(String, Vec<u8>)> {
    let mut files = completion_scripts();
    files.extend(pages().iter().map(|page| {
        (
            format!("man/{}.1", page.name),
            render_page(page, &pages_of_interest(page)),
        )
    }));
    files
}

/// `completions/<file>` for each shell: the script `zot completions <shell>` prints.
pub(crate) fn completion_scripts() -> Vec<(String, Vec<u8>)> {
    Shell::value_variants()
        .iter()
        .map(|shell| {
            (
                format!("completions/{}", shell.file_name("zot")),
                complete::registration(*shell),
            )
        })
        .collect()
}

/// Every command that gets a page, parents before children, without clap's `help`.
pub(crate) fn pages() -> Vec<Page> {
    fn without_help(cmd: Command) -> Command {
        cmd.disable_help_subcommand(true)
            .mut_subcommands(without_help)
    }
    fn collect(cmd: &Command, path: &str, out: &mut Vec<Page>) {
        out.push(Page {
            name: path.replace(' ', "-"),
            path: path.to_owned(),
            command: cmd.clone(),
        });
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            collect(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }
    let mut root = without_help(zot_ext::cli::command());
    root.build();
    let mut out = Vec::new();
    collect(&root, root.get_name(), &mut out);
    out
}

/// The pages SEE ALSO names: the parent, the children, and for the top page every page.
fn pages_of_interest(page: &Page) -> Vec<String> {
    let all = pages();
    let parent = page.path.rsplit_once(' ').map(|(p, _)| p.to_owned());
    all.iter()
        .filter(|other| other.path != page.path)
        .filter(|other| {
            Some(&other.path) == parent.as_ref()
                || other.path.rsplit_once(' ').map(|(p, _)| p) == Some(page.path.as_str())
                || (parent.is_none() && other.path.matches(' ').count() == 1)
        })
        .map(|other| other.name.clone())
        .collect()
}

fn render_page(page: &Page, see_also: &[String]) -> Vec<u8> {
    let version = page.command.get_version().unwrap_or_default();
    let man = Man::new(page.command.clone().display_name(page.name.clone()))
        .title(page.name.to_uppercase())
        .date(MAN_DATE)
        .source(format!("zot {version}"))
        .manual("zot manual");
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = man.render_title(&mut out);
    let _ = man.render_name_section(&mut out);
    out.extend(synopsis(page).into_bytes());
    let _ = man.render_description_section(&mut out);
    if page.command.get_arguments().any(|a| !a.is_hide_set()) {
        let _ = man.render_options_section(&mut out);
    }
    if page.command.get_subcommands().any(|s| !s.is_hide_set()) {
        let _ = man.render_subcommands_section(&mut out);
    }
    let mut roff = Roff::new();
    exit_status(&mut roff, &page.path);
    definitions(&mut roff, "ENVIRONMENT", ENVIRONMENT, false);
    definitions(&mut roff, "FILES", FILES, true);
    if let Some(examples) = examples(&page.path) {
        roff.control("SH", ["EXAMPLES"]);
        for (command, what) in examples {
            roff.control("TP", []);
            roff.text([bold(*command)]);
            roff.text([roman(*what)]);
        }
    }
    if !see_also.is_empty() {
        roff.control("SH", ["SEE ALSO"]);
        let mut refs = Vec::new();
        for (i, name) in see_also.iter().enumerate() {
            if i > 0 {
                refs.push(roman(", "));
            }
            refs.push(bold(name.as_str()));
            refs.push(roman("(1)"));
        }
        roff.text(refs);
    }
    let _ = roff.to_writer(&mut out);
    tidy(&String::from_utf8_lossy(&out)).into_bytes()
}

/// SYNOPSIS, rendered here: `clap_mangen` 0.3's leaves out option values (`[--timeout]`), the
/// `...` of repeatable arguments and which flags exclude each other, and clap's usage line
/// folds every option into `[OPTIONS]`.
fn synopsis(page: &Page) -> String {
    let mut items = vec![vec![bold(page.path.as_str())]];
    items.extend(synopsis_items(&page.command));
    let line: Vec<String> = items
        .iter()
        .map(|item| item.iter().map(inline_roff).collect())
        .collect();
    // Left-aligned, so the spaces between items are not stretched.
    format!(".SH SYNOPSIS\n.ad l\n{}\n.ad\n", line.join(" "))
}

/// One piece of text as roff, its spaces unbreakable: a line never breaks inside
/// `[--timeout SECS]` (the roff crate cannot write `\ `).
fn inline_roff(inline: &Inline) -> String {
    let (font, text) = match inline {
        Inline::Roman(text) => ("", text),
        Inline::Bold(text) => ("B", text),
        Inline::Italic(text) => ("I", text),
        Inline::LineBreak => return String::new(),
    };
    let text = text
        .replace('\\', "\\e")
        .replace('-', "\\-")
        .replace(' ', "\\ ");
    match font {
        "" => text,
        font => format!("\\f{font}{text}\\fR"),
    }
}

/// What follows the command in its synopsis: the options (flags that exclude each other
/// as one `[-p|-g]`), the arguments, then the subcommand.
fn synopsis_items(cmd: &Command) -> Vec<Vec<Inline>> {
    let groups = exclusive_groups(cmd);
    let mut shown = vec![false; groups.len()];
    let mut items = Vec::new();
    for opt in options(cmd) {
        let member = |g: &(bool, Vec<&Arg>)| g.1.iter().any(|a| a.get_id() == opt.get_id());
        match groups.iter().position(member) {
            Some(i) if !shown[i] => {
                shown[i] = true;
                items.push(exclusive_item(&groups[i]));
            }
            Some(_) => {}
            None => items.push(option_item(opt)),
        }
    }
    for arg in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let name = vec![italic(value_name(arg))];
        items.push(bracket(name, !arg.is_required_set(), repeats(arg)));
    }
    if cmd.has_subcommands() {
        let name = cmd.get_subcommand_value_name().unwrap_or("COMMAND");
        let optional = !cmd.is_subcommand_required_set();
        items.push(bracket(vec![italic(name)], optional, false));
    }
    items
}

/// The visible options: the command's own, then the global ones, then help and version.
fn options(cmd: &Command) -> Vec<&Arg> {
    let mut opts: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
        .collect();
    opts.sort_by_key(|a| match a.get_id().as_str() {
        "help" | "version" => 2,
        _ if a.is_global_set() => 1,
        _ => 0,
    });
    opts
}

/// The groups of options of which at most one may be given: (required, members).
fn exclusive_groups(cmd: &Command) -> Vec<(bool, Vec<&Arg>)> {
    let option = |id: &clap::Id| {
        cmd.get_arguments()
            .find(|a| a.get_id() == id && !a.is_positional() && !a.is_hide_set())
    };
    cmd.get_groups()
        .filter(|g| !(*g).clone().is_multiple())
        .map(|g| {
            (
                g.is_required_set(),
                g.get_args().filter_map(option).collect(),
            )
        })
        .filter(|(_, members): &(bool, Vec<&Arg>)| members.len() > 1)
        .collect()
}

/// `[-n|--lines N]`: both names of an option, and its value.
fn option_item(opt: &Arg) -> Vec<Inline> {
    let short = opt.get_short().map(|c| bold(format!("-{c}")));
    let long = opt.get_long().map(|l| bold(format!("--{l}")));
    let mut words = match (short, long) {
        (Some(short), Some(long)) => vec![short, roman("|"), long],
        (short, long) => short.into_iter().chain(long).collect(),
    };
    words.extend(value_words(opt));
    bracket(words, !opt.is_required_set(), repeats(opt))
}

/// `[-p|-g]`: one name of each option of an exclusive group (the short one if any).
fn exclusive_item((required, members): &(bool, Vec<&Arg>)) -> Vec<Inline> {
    let mut words = Vec::new();
    for (i, opt) in members.iter().enumerate() {
        if i > 0 {
            words.push(roman("|"));
        }
        let name = match (opt.get_short(), opt.get_long()) {
            (Some(c), _) => format!("-{c}"),
            (None, Some(long)) => format!("--{long}"),
            (None, None) => continue,
        };
        words.push(bold(name));
        words.extend(value_words(opt));
    }
    bracket(words, !required, false)
}

/// ` SECS` after an option that takes a value, ` [SECS]` if the value may be left out.
fn value_words(opt: &Arg) -> Vec<Inline> {
    match opt.get_num_args() {
        Some(range) if range.takes_values() && range.min_values() == 0 => {
            vec![roman(" ["), italic(value_name(opt)), roman("]")]
        }
        Some(range) if range.takes_values() => vec![roman(" "), italic(value_name(opt))],
        _ => Vec::new(),
    }
}

/// `NAME`: the value name clap shows in help, or the argument's id in capitals.
pub(crate) fn value_name(arg: &Arg) -> String {
    match arg.get_value_names() {
        Some(names) if !names.is_empty() => names
            .iter()
            .map(clap::builder::Str::as_str)
            .collect::<Vec<_>>()
            .join(" "),
        _ => arg.get_id().as_str().to_uppercase(),
    }
}

/// Whether the argument may be given more than once (or takes several values).
pub(crate) fn repeats(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Append | ArgAction::Count)
        || arg.get_num_args().is_some_and(|r| r.max_values() > 1)
}

/// `[words...]`: `...` when repeatable, brackets when optional.
fn bracket(mut words: Vec<Inline>, optional: bool, repeats: bool) -> Vec<Inline> {
    if repeats {
        words.push(roman("..."));
    }
    if optional {
        words.insert(0, roman("["));
        words.push(roman("]"));
    }
    words
}

/// Every `Roff` written starts with the same apostrophe preamble; keep one, at the top.
/// `clap_mangen` separates an option's help from its possible values with `.br`, an empty
/// line and `.br`, which mandoc warns about; a `.sp` does the same.
fn tidy(page: &str) -> String {
    const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";
    let body = page.replace(PREAMBLE, "").replace(".br\n\n.br\n", ".sp\n");
    let mut out = String::from(PREAMBLE);
    for line in body.lines() {
        // clap_mangen ends the synopsis with a space; an escaped one (`\ `) would matter.
        let trimmed = line.trim_end_matches(' ');
        out.push_str(if trimmed.ends_with('\\') {
            line
        } else {
            trimmed
        });
        out.push('\n');
    }
    out
}

/// EXIT STATUS: the statuses of every command, then those particular to `path`.
fn exit_status(roff: &mut Roff, path: &str) {
    definitions(roff, "EXIT STATUS", EXIT_STATUS, false);
    if let Some(particular) = exit_statuses(path) {
        roff.control("PP", []);
        roff.text([roman("In particular, "), bold(path), roman(" exits with:")]);
        tagged(roff, particular, false);
    }
}

/// A section of tagged paragraphs; `italic_terms` for path patterns.
fn definitions(roff: &mut Roff, title: &str, items: &[(&str, &str)], italic_terms: bool) {
    roff.control("SH", [title]);
    tagged(roff, items, italic_terms);
}

/// Tagged paragraphs: each term on a line of its own, its text indented below.
fn tagged(roff: &mut Roff, items: &[(&str, &str)], italic_terms: bool) {
    for (term, text) in items {
        roff.control("TP", []);
        roff.text([if italic_terms {
            italic(*term)
        } else {
            bold(*term)
        }]);
        roff.text([roman(*text)]);
    }
}
