//! Subcommand arguments built only for the subcommands a command line names. Building every
//! `zot ext` subcommand's arguments and help texts costs more than the rest of a short run,
//! and a parse only looks inside the subcommands it is given: [`only_named`] builds a
//! command for one parse that way, the others' arguments deferred (`Command::defer`) until
//! clap looks inside them. Any other build (help, man pages, completion) is whole.
//!
//! A subcommand that is named is built exactly as the derive builds it, arguments first. A
//! deferred one gets its arguments after the global flags its parent hands down, so its
//! arguments are in another order; clap only looks inside it while searching every
//! subcommand for a flag it does not know, and only suggests from those the command line
//! names, which are built whole.

use std::cell::RefCell;
use std::ffi::OsString;
use std::fmt;
use std::ops::Deref;

use clap::{ArgMatches, Args, FromArgMatches};

/// The visible aliases of `zot ext` subcommands, alias first: the derive gives a subcommand
/// its aliases after its arguments, so they are not known yet when the arguments are built.
/// A test keeps this table equal to the definitions.
const ALIASES: [(&str, &str); 2] = [("ls", "list"), ("rm", "remove")];

thread_local! {
    /// The words of the command line [`only_named`] builds for; `None` builds every
    /// subcommand whole.
    static WORDS: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// Runs `build` (which builds the command) with the arguments of only those subcommands
/// whose name or alias is a word of `args`; the others get theirs when clap needs them.
pub(super) fn only_named<T>(args: &[OsString], build: impl FnOnce() -> T) -> T {
    let words = args
        .iter()
        .filter_map(|a| a.to_str())
        .map(|word| {
            ALIASES
                .iter()
                .find(|(alias, _)| *alias == word)
                .map_or(word, |(_, name)| name)
                .to_owned()
        })
        .collect();
    WORDS.with(|w| *w.borrow_mut() = Some(words));
    let command = build();
    WORDS.with(|w| *w.borrow_mut() = None);
    command
}

/// Whether the subcommand `cmd` (so far only its name) is built whole now.
fn built_now(cmd: &clap::Command) -> bool {
    WORDS.with(|w| {
        w.borrow()
            .as_ref()
            .is_none_or(|words| words.iter().any(|word| word == cmd.get_name()))
    })
}

/// A subcommand's arguments `T`, built with the subcommand when [`only_named`] says so, else
/// when clap first looks inside it. Reads as `T`.
pub struct Lazy<T>(T);

impl<T> Deref for Lazy<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: fmt::Debug> fmt::Debug for Lazy<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<T: FromArgMatches> FromArgMatches for Lazy<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Lazy)
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(matches).map(Lazy)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }

    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

impl<T: Args> Args for Lazy<T> {
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }

    fn augment_args(cmd: clap::Command) -> clap::Command {
        if built_now(&cmd) {
            T::augment_args(cmd)
        } else {
            cmd.defer(T::augment_args)
        }
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        if built_now(&cmd) {
            T::augment_args_for_update(cmd)
        } else {
            cmd.defer(T::augment_args_for_update)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Examples, command, decorated, parse_with};

    #[test]
    fn the_alias_table_is_the_definitions() {
        let cmd = command();
        let ext = cmd.find_subcommand("ext").unwrap();
        let mut defined: Vec<(String, String)> = ext
            .get_subcommands()
            .flat_map(|s| {
                s.get_all_aliases()
                    .map(|a| (a.to_owned(), s.get_name().to_owned()))
            })
            .collect();
        defined.sort();
        let mut table: Vec<(String, String)> = ALIASES
            .iter()
            .map(|(a, n)| ((*a).to_owned(), (*n).to_owned()))
            .collect();
        table.sort();
        assert_eq!(defined, table);
    }

    /// A parse's outcome in full: the parsed command line, or the error's kind, exit code
    /// and text with its styles.
    fn outcome(parsed: Result<Cli, clap::Error>) -> String {
        match parsed {
            Ok(cli) => format!("{cli:?}"),
            Err(e) => format!("{:?} {} {}", e.kind(), e.exit_code(), e.render().ansi()),
        }
    }

    fn lean_and_whole(line: &[&str]) -> (String, String) {
        let args: Vec<OsString> = line.iter().map(OsString::from).collect();
        let lean = only_named(&args, || decorated(Examples::Left));
        let lean = outcome(parse_with(lean, &args));
        let whole = outcome(parse_with(decorated(Examples::Left), &args));
        (lean, whole)
    }

    #[test]
    fn a_lean_parse_ends_as_the_whole_one() {
        let cmd = command();
        let ext = cmd.find_subcommand("ext").unwrap();
        let names: Vec<&str> = ext.get_subcommands().map(clap::Command::get_name).collect();
        let mut lines: Vec<Vec<&str>> = Vec::new();
        for name in names.iter().copied().chain(["ls", "rm", "help"]) {
            for tail in [
                &[][..],
                &["x"],
                &["x", "y"],
                &["--help"],
                &["-h"],
                &["-V"],
                &["--nope"],
                &["--jso"],
                &["--wid"],
                &["--global", "x"],
                &["-p", "-g", "x"],
                &["--scope", "nowhere", "x"],
                &["-n", "3", "x"],
                &["x", "--json", "-q", "--color", "never"],
                &["clean"],
                &["clean", "--bogus"],
                &["list"],
            ] {
                let mut line = vec!["zot", "ext", name];
                line.extend_from_slice(tail);
                lines.push(line);
            }
        }
        for line in [
            &["zot"][..],
            &["zot", "ext"],
            &["zot", "ext", "--wide"],
            &["zot", "ext", "--project", "list"],
            &["zot", "ext", "--scope=global", "logs", "x"],
            &["zot", "ext", "frobnicate"],
            &["zot", "ext", "instal"],
            &["zot", "ext", "-V", "list"],
            &["zot", "--json", "ext", "list", "--wide"],
            &["zot", "-q", "ext", "help", "install"],
            &["zot", "completions", "bash"],
            &["zot", "completions", "-p"],
            &["zot", "ext", "update", "-n"],
            &["zot", "ext", "logs", "x", "--sinc"],
            &["zot", "ext", "--follow"],
            &["zot", "ext", "--keep-data", "remove", "x"],
        ] {
            lines.push(line.to_vec());
        }
        for line in lines {
            let (lean, whole) = lean_and_whole(&line);
            assert_eq!(lean, whole, "{line:?}");
        }
    }

    #[test]
    fn only_the_named_subcommands_are_built_whole() {
        let args: Vec<OsString> = ["zot", "ext", "ls"].map(OsString::from).to_vec();
        let lean = only_named(&args, || decorated(Examples::Left));
        let ext = lean.find_subcommand("ext").unwrap();
        let list = ext.find_subcommand("list").unwrap();
        let install = ext.find_subcommand("install").unwrap();
        assert!(list.get_arguments().any(|a| a.get_id() == "wide"));
        assert_eq!(install.get_arguments().count(), 0);
        // Outside a lean parse, every subcommand is whole.
        let whole = decorated(Examples::Left);
        let install = whole
            .find_subcommand("ext")
            .unwrap()
            .find_subcommand("install");
        assert!(install.unwrap().get_arguments().count() > 0);
    }
}
