//! Hints added to clap's own usage errors, each naming a command line that works: a scope
//! flag given to a command without a scope or before the subcommand, `-n` given to
//! `update` (it is `logs`' line count), unknown subcommands suggested closest first, and words
//! other tools use (`uninstall`, `upgrade`, `search`...) answered by meaning.

use std::ffi::OsString;

use clap::builder::StyledStr;
use clap::error::{ContextKind, ContextValue, ErrorKind};

/// `error` from parsing `args` with `cmd`, with a tip that works where clap's has none (or
/// its suggestions in order of closeness).
pub(super) fn improve(
    mut error: clap::Error,
    args: &[OsString],
    cmd: &clap::Command,
) -> clap::Error {
    match error.kind() {
        ErrorKind::UnknownArgument => {
            if let Some(tip) = unknown_argument_tip(&error, args, cmd) {
                let tip = ContextValue::StyledStrs(vec![StyledStr::from(tip)]);
                error.insert(ContextKind::Suggested, tip);
            }
        }
        ErrorKind::InvalidValue => {
            if let Some(ContextValue::String(value)) = error.get(ContextKind::InvalidValue)
                && matches!(value.to_lowercase().as_str(), "ts" | "typescript")
            {
                let tip = "there is no TypeScript template; --lang node (or js) writes JavaScript for Node.js";
                error.insert(
                    ContextKind::Suggested,
                    ContextValue::StyledStrs(vec![StyledStr::from(tip)]),
                );
            }
        }
        ErrorKind::MissingRequiredArgument
            if args.iter().any(|a| a == "install")
                && std::fs::symlink_metadata(".zot/extensions.json").is_ok() =>
        {
            let tip = "this folder's project file (.zot/extensions.json) lists extensions: zot ext sync installs them";
            error.insert(
                ContextKind::Suggested,
                ContextValue::StyledStrs(vec![StyledStr::from(tip)]),
            );
        }
        ErrorKind::InvalidSubcommand => {
            let wanted = match error.get(ContextKind::InvalidSubcommand) {
                Some(ContextValue::String(wanted)) => wanted.clone(),
                _ => String::new(),
            };
            if is_ext_word(args, &wanted) && replace_by_meaning(&mut error, &wanted) {
                return error;
            }
            if let Some(ContextValue::Strings(names)) = error.get(ContextKind::SuggestedSubcommand)
            {
                let ordered = closest_first(&wanted, names);
                error.insert(
                    ContextKind::SuggestedSubcommand,
                    ContextValue::Strings(ordered),
                );
            }
        }
        _ => {}
    }
    error
}

/// Words other tools use for a `zot ext` subcommand, and that subcommand: spelled nothing
/// like it, so closeness would suggest another (`uninstall` is close to `install`).
const SAME_MEANING: &[(&str, &str)] = &[
    ("uninstall", "remove"),
    ("delete", "remove"),
    ("upgrade", "update"),
    ("show", "info"),
    ("create", "new"),
    ("init", "new"),
    ("check", "doctor"),
    ("run", "call"),
];

/// Whether `word` is the word right after `ext` in `args` (a `zot ext` subcommand's place).
fn is_ext_word(args: &[OsString], word: &str) -> bool {
    args.windows(2).any(|w| w[0] == "ext" && w[1] == word)
}

/// Puts the subcommand that means `wanted` (or, for `search`, what to do instead) in place
/// of clap's suggestions; false when `wanted` is no known word.
fn replace_by_meaning(error: &mut clap::Error, wanted: &str) -> bool {
    let lower = wanted.to_lowercase();
    if lower == "search" || lower == "find" {
        error.remove(ContextKind::SuggestedSubcommand);
        let tip = "zot ext has no index of extensions to search; install one from a folder or a git URL (zot ext install <path|git-url>), and zot ext list shows what is installed";
        error.insert(
            ContextKind::Suggested,
            ContextValue::StyledStrs(vec![StyledStr::from(tip)]),
        );
        return true;
    }
    if lower == "version" {
        error.remove(ContextKind::SuggestedSubcommand);
        let tip = "zot ext --version prints zot ext's version";
        error.insert(
            ContextKind::Suggested,
            ContextValue::StyledStrs(vec![StyledStr::from(tip)]),
        );
        return true;
    }
    let Some((_, meant)) = SAME_MEANING.iter().find(|(word, _)| *word == lower) else {
        return false;
    };
    error.insert(
        ContextKind::SuggestedSubcommand,
        ContextValue::Strings(vec![(*meant).to_owned()]),
    );
    true
}

/// `names` sorted by edit distance to `wanted` (ignoring case), then by name, keeping only
/// the closest (`instal` gets `install`, not `list` and `disable` after it).
fn closest_first(wanted: &str, names: &[String]) -> Vec<String> {
    let wanted = wanted.to_lowercase();
    let distance = |n: &String| strsim::damerau_levenshtein(&wanted, &n.to_lowercase());
    let mut ordered = names.to_vec();
    ordered.sort_by_cached_key(|n| (distance(n), n.clone()));
    ordered.dedup();
    if let Some(best) = ordered.first().map(distance) {
        ordered.retain(|n| distance(n) == best);
    }
    ordered
}

/// Whether `flag` is one of the scope flags (`-p`, `--project`, `-g`, `--global`, `--scope`).
fn is_scope_flag(flag: &str) -> bool {
    let long = flag.split('=').next().unwrap_or(flag);
    matches!(long, "-p" | "-g" | "--project" | "--global" | "--scope")
}

/// The `zot ext` subcommand named in `args` (by name or alias) and its position.
fn ext_subcommand<'a>(
    args: &[OsString],
    ext: &'a clap::Command,
) -> Option<(usize, &'a clap::Command)> {
    let ext_at = args.iter().position(|a| a == "ext").unwrap_or(0);
    args.iter()
        .enumerate()
        .skip(ext_at + 1)
        .find_map(|(i, arg)| {
            let word = arg.to_str()?;
            let sub = ext
                .get_subcommands()
                .find(|s| s.get_name() == word || s.get_all_aliases().any(|a| a == word))?;
            Some((i, sub))
        })
}

fn has_scope(sub: &clap::Command) -> bool {
    sub.get_arguments().any(|a| a.get_long() == Some("scope"))
}

fn unknown_argument_tip(
    error: &clap::Error,
    args: &[OsString],
    cmd: &clap::Command,
) -> Option<String> {
    let Some(ContextValue::String(flag)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    let ext = cmd.find_subcommand("ext")?;
    let flag_at = args.iter().position(|a| {
        a.to_str()
            .is_some_and(|a| a == flag || a.split('=').next() == Some(flag.as_str()))
    });
    let sub = ext_subcommand(args, ext);
    let sub_name = sub.map(|(_, s)| s.get_name());
    if flag == "-n" && sub_name == Some("update") {
        return Some(
            "use --dry-run to see what update would change (-n is the line count of zot ext logs)"
                .into(),
        );
    }
    if !is_scope_flag(flag) {
        return None;
    }
    if args.get(1).is_some_and(|a| a == "completions") {
        return Some(format!(
            "completions has no scope: leave out {flag}; the script offers the names of both scopes"
        ));
    }
    // As typed (`--scope=global` whole), so the tip can be run as it is.
    let typed = flag_at
        .and_then(|i| args[i].to_str())
        .unwrap_or(flag.as_str());
    match sub {
        Some((at, sub)) if flag_at.is_some_and(|f| f < at) && has_scope(sub) => Some(format!(
            "scope flags go after the subcommand: zot ext {} {typed} ...",
            sub.get_name()
        )),
        None => Some(format!(
            "scope flags go after the subcommand, e.g. zot ext list {flag}"
        )),
        Some((_, sub)) => no_scope_tip(sub.get_name(), flag),
    }
}

/// What works instead of a scope flag on a command that has no scope.
fn no_scope_tip(sub: &str, flag: &str) -> Option<String> {
    let folder = if matches!(flag, "-g" | "--global") || flag.ends_with("global") {
        "$ZOT_HOME/extensions/<name>"
    } else {
        "./.zot/extensions/<name>"
    };
    match sub {
        "logs" => Some(format!(
            "a log belongs to a name, not to a scope (both copies write $ZOT_HOME/logs/ext-<name>.log): leave out {flag}"
        )),
        "call" => Some(format!(
            "call runs the copy that wins; to run another copy, name its folder: zot ext call {folder} /<command>"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_closest_subcommands_are_kept() {
        let names = ["disable", "list", "install"].map(String::from);
        assert_eq!(closest_first("instal", &names), ["install"]);
        let names = ["enable", "disable"].map(String::from);
        assert_eq!(closest_first("xable", &names), ["enable"]);
    }

    #[test]
    fn scope_flags_are_recognised() {
        for flag in [
            "-p",
            "-g",
            "--project",
            "--global",
            "--scope",
            "--scope=global",
        ] {
            assert!(is_scope_flag(flag), "{flag}");
        }
        assert!(!is_scope_flag("--pro"));
    }
}
