//! Shell completion: answers `COMPLETE=<shell> zot -- <words>` requests with `clap_complete`'s
//! dynamic engine (the names it offers come from [`super::candidates`]), and writes the
//! registration scripts committed in `completions/` and printed by `zot completions`.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use clap::CommandFactory;
use clap_complete::env::{Bash, Elvish, EnvCompleter, Fish, Powershell, Shells, Zsh};
use clap_complete::{CompleteEnv, Shell};

use crate::catalog::paths::Scope;
use crate::cli::Cli;
use crate::output::Output;

/// The environment variable that turns a run of `zot` into a completion request.
pub const VAR: &str = "COMPLETE";

/// The commands the scripts register: the binary and its `zot-ext` alias (see
/// [`crate::effective_args`]). Each is also the program the script calls for candidates.
const REGISTERED: [&str; 2] = ["zot", "zot-ext"];

/// If `COMPLETE` is set, answers the completion request on stdout and exits; otherwise
/// returns at once. Call it before anything else in `main`.
///
/// A request for candidates (`COMPLETE=<shell> zot -- <words>`) never prints to stderr,
/// whatever goes wrong: its output lands in the user's prompt. A request for the
/// registration script (`COMPLETE=<shell> zot`) prints the same script as
/// `zot completions <shell>`.
pub fn complete_if_requested() {
    let Some(shell) = std::env::var_os(VAR) else {
        return;
    };
    if shell.is_empty() || shell == "0" {
        return;
    }
    let args: Vec<OsString> = std::env::args_os().collect();
    let dashes = args.iter().position(|a| a == "--");
    let Some(dashes) = dashes.filter(|&i| i + 1 < args.len()) else {
        std::process::exit(print_registration(&shell));
    };
    // A completer that fails or panics must not draw over the prompt.
    std::panic::set_hook(Box::new(|_| {}));
    let alias = typed_as_alias(&args[dashes + 1..]);
    super::candidates::set_scope_hint(scope_hint(&args[dashes + 1..]));
    super::candidates::set_ref_hint(ref_hint(&args[dashes + 1..]));
    let current_dir = std::env::current_dir().ok();
    let adapters = [
        ValuesFirst(&Bash),
        ValuesFirst(&Elvish),
        ValuesFirst(&Fish),
        ValuesFirst(&Powershell),
        ValuesFirst(&Zsh),
    ];
    let shells: Vec<&dyn EnvCompleter> = adapters.iter().map(|a| a as _).collect();
    let answered = CompleteEnv::with_factory(|| completed_command(alias))
        .var(VAR)
        .shells(Shells(&shells))
        .try_complete(args, current_dir.as_deref());
    std::process::exit(i32::from(!matches!(answered, Ok(true))));
}

/// A shell adapter that leaves flags out when the word under the cursor could also be a
/// subcommand or a value: `zot ext disable <TAB>` offers extension names, and flags come
/// once a `-` is typed (clap's engine offers both on an empty word).
struct ValuesFirst<'a>(&'a dyn EnvCompleter);

impl EnvCompleter for ValuesFirst<'_> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn is(&self, name: &str) -> bool {
        self.0.is(name)
    }

    fn write_registration(
        &self,
        var: &str,
        name: &str,
        bin: &str,
        completer: &str,
        buf: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.0.write_registration(var, name, bin, completer, buf)
    }

    fn write_complete(
        &self,
        cmd: &mut clap::Command,
        args: Vec<OsString>,
        current_dir: Option<&Path>,
        buf: &mut dyn Write,
    ) -> std::io::Result<()> {
        let bash = self.0.name() == "bash";
        let mut args = args;
        if bash {
            // bash hands over the word under the cursor as typed (`my\ e`, `'my e`).
            let index = std::env::var("_CLAP_COMPLETE_INDEX")
                .ok()
                .and_then(|i| i.parse::<usize>().ok());
            if let Some(word) = index.and_then(|i| args.get_mut(i))
                && let Some(text) = word.to_str()
            {
                *word = bash_unquote(text).into();
            }
        }
        let mut answer = Vec::new();
        self.0.write_complete(cmd, args, current_dir, &mut answer)?;
        // bash, elvish and zsh separate candidates with `_CLAP_IFS`; fish and PowerShell
        // end each with a newline. Every candidate starts with its value.
        let separator = match self.0.name() {
            "fish" | "powershell" => None,
            _ => std::env::var("_CLAP_IFS").ok(),
        };
        let separator = separator.as_deref().unwrap_or("\n");
        let answer = String::from_utf8_lossy(&answer);
        let items: Vec<&str> = answer.split(separator).collect();
        let is_flag = |item: &&str| item.starts_with('-');
        // Flags wait for a `-` where a name goes, even when no name fits (bash would
        // otherwise insert their common `--`).
        let has_values = items.iter().any(|i| !i.is_empty() && !is_flag(i))
            || super::candidates::name_was_asked();
        // Folders go to bash as they are: the script has bash quote them (see BASH_FOLDERS).
        let escape = bash && !(bash_has_compopt() && items.iter().any(|i| i.contains('/')));
        let kept: Vec<String> = items
            .into_iter()
            .filter(|i| !(has_values && is_flag(i)))
            .map(|i| if escape { bash_escape(i) } else { i.to_owned() })
            .collect();
        buf.write_all(kept.join(separator).as_bytes())
    }
}

/// Whether the bash asking has `compopt` (bash 4 and later): clap's script tells by setting
/// `_CLAP_COMPLETE_SPACE=false`, and only then does it hand folders over to bash (see
/// [`BASH_FOLDERS`]).
fn bash_has_compopt() -> bool {
    std::env::var("_CLAP_COMPLETE_SPACE").is_ok_and(|v| v == "false")
}

/// `word` as bash inserts it: bash puts a candidate in the line as it is, so a name with a
/// space or a quote is escaped with backslashes (fish and zsh quote candidates themselves);
/// `~` is left alone, so that `~/` folders stay expandable.
fn bash_escape(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    for c in word.chars() {
        let plain = !c.is_ascii() || c.is_ascii_alphanumeric() || "-_./:=,+@%^~".contains(c);
        if !plain {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The text of a word bash hands over as typed: backslash escapes and quotes removed (an
/// unfinished quote runs to the end).
fn bash_unquote(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut chars = word.chars();
    let mut quote = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\\') => out.extend(chars.next()),
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => match chars.next() {
                Some(n @ ('$' | '`' | '"' | '\\')) => out.push(n),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            },
            _ => out.push(c),
        }
    }
    out
}

/// `COMPLETE=<shell> zot`: the registration script, or a usage error for an unknown shell.
fn print_registration(shell: &OsStr) -> i32 {
    // Like clap_complete, accept a path such as `$SHELL` (`/usr/bin/zsh`).
    let out = Output::plain();
    let Some(shell) = super::ShellName::parse(&shell.to_string_lossy()) else {
        out.fail(&format!(
            "{VAR}={} names no shell zot can complete for; use {}",
            shell.to_string_lossy(),
            super::ShellName::names()
        ));
        return 2;
    };
    match out.bytes(&registration(shell)) {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(_) => 1,
    }
}

/// The command the words are completed against: `zot`'s, or its `ext` subcommand for words
/// typed as `zot-ext ...` (with the global flags, as `zot ext` has them). The words and the
/// cursor position the shell passed in `_CLAP_COMPLETE_INDEX` then stay as typed.
fn completed_command(alias: bool) -> clap::Command {
    let mut cli = Cli::command();
    if !alias {
        return cli;
    }
    // Builds the subcommands too, giving them the global flags.
    cli.build();
    cli.find_subcommand("ext")
        .cloned()
        .expect("zot has an ext subcommand")
}

/// Whether the words were typed as `zot-ext ...`.
fn typed_as_alias(words: &[OsString]) -> bool {
    words
        .first()
        .is_some_and(|first| crate::effective_args([first.clone()]).len() > 1)
}

/// The scope picked by `-p/--project`, `-g/--global` or `--scope project|global` among the
/// typed words (not counting the word under the cursor, the last one).
fn scope_hint(words: &[OsString]) -> Option<Scope> {
    let mut scope = None;
    let typed = &words[..words.len().saturating_sub(1)];
    for (i, word) in typed.iter().enumerate() {
        let Some(word) = word.to_str() else { continue };
        let named = |value: Option<&str>| match value {
            Some("project") => Some(Scope::Project),
            Some("global") => Some(Scope::Global),
            _ => None,
        };
        match word {
            "--project" => scope = Some(Scope::Project),
            "--global" => scope = Some(Scope::Global),
            "--scope" => scope = named(typed.get(i + 1).and_then(|w| w.to_str())).or(scope),
            _ if word.starts_with("--scope=") => scope = named(word.get(8..)).or(scope),
            _ => {
                // A cluster of short flags such as `-yp`.
                let Some(flags) = word.strip_prefix('-') else {
                    continue;
                };
                if flags.is_empty() || !flags.bytes().all(|b| b.is_ascii_alphabetic()) {
                    continue;
                }
                if flags.contains('p') {
                    scope = Some(Scope::Project);
                } else if flags.contains('g') {
                    scope = Some(Scope::Global);
                }
            }
        }
    }
    scope
}

/// Whether `--ref` is among the typed words (not counting the word under the cursor).
fn ref_hint(words: &[OsString]) -> bool {
    words[..words.len().saturating_sub(1)]
        .iter()
        .filter_map(|w| w.to_str())
        .any(|w| w == "--ref" || w.starts_with("--ref="))
}

/// The script that hooks `zot` (and `zot-ext`) into `shell`'s completion; it calls
/// `COMPLETE=<shell> zot -- <words>` for candidates. Deterministic: it is committed.
pub fn registration(shell: Shell) -> Vec<u8> {
    let adapter: &dyn EnvCompleter = match shell {
        Shell::Bash => &Bash,
        Shell::Elvish => &Elvish,
        Shell::Fish => &Fish,
        Shell::PowerShell => &Powershell,
        Shell::Zsh => &Zsh,
        // `Shell` is non-exhaustive; every variant clap_complete 4.6.12 has is above.
        _ => unreachable!("clap_complete {shell} is not supported"),
    };
    let mut scripts = Vec::new();
    for bin in REGISTERED {
        let mut script = Vec::new();
        adapter
            .write_registration(VAR, bin, bin, bin, &mut script)
            .expect("writing to memory cannot fail");
        scripts.push(String::from_utf8(script).expect("clap_complete writes UTF-8"));
    }
    let mut out = String::new();
    let header = format!(
        "# Completion for zot and zot-ext in {shell}; generated by `zot completions {shell}`.\n\
         # Candidates (installed extensions too) come from running `{VAR}={shell} zot -- <words>`.\n"
    );
    if shell == Shell::Bash {
        for script in &mut scripts {
            *script = with_bash_folders(script);
        }
    }
    if shell == Shell::Zsh {
        // `#compdef` must stay the first line for compinit to pick the file up from $fpath.
        let rest: Vec<&str> = scripts
            .iter()
            .map(|s| s.split_once('\n').map_or("", |(_, rest)| rest))
            .collect();
        let _ = writeln!(out, "#compdef {}", REGISTERED.join(" "));
        out.push_str(&header);
        for body in rest {
            out.push_str(body.trim_end());
            out.push_str("\n\n");
        }
        out.push_str(ZSH_AUTOLOAD);
    } else {
        out.push_str(&header);
        for script in &scripts {
            out.push('\n');
            out.push_str(script.trim());
            out.push('\n');
        }
    }
    out.into_bytes()
}

/// The end of clap's bash completion function, after which [`BASH_FOLDERS`] goes.
const BASH_REPLY_END: &str = "        compopt -o nospace\n    fi\n";

/// Candidates that are paths (one has a `/`) are completed as bash completes file names:
/// `-o filenames` makes bash list each by its last part (`alpha/`, not `~/src/alpha/`),
/// quote what it inserts and add the `/` after a folder itself (so the one the binary sent
/// is taken off, or bash would list `alpha//`). Without `compopt` (bash 3) the candidates
/// stay as the binary escaped them.
const BASH_FOLDERS: &str = r#"    if [[ $_CLAP_COMPLETE_SPACE == false && "${COMPREPLY[*]-}" == */* ]]; then
        compopt -o filenames
        local i
        for i in "${!COMPREPLY[@]}"; do
            if [[ ${COMPREPLY[i]} == ?*/ ]]; then
                COMPREPLY[i]=${COMPREPLY[i]%/}
            fi
        done
    fi
"#;

/// clap's bash function with [`BASH_FOLDERS`] at its end.
fn with_bash_folders(script: &str) -> String {
    assert!(
        script.contains(BASH_REPLY_END),
        "clap_complete's bash script changed; find where BASH_FOLDERS goes:\n{script}"
    );
    script.replacen(
        BASH_REPLY_END,
        &format!("{BASH_REPLY_END}{BASH_FOLDERS}"),
        1,
    )
}

/// Loaded from `$fpath` as `_zot`, the file's body runs on the first TAB: it defines the
/// functions above and must then complete that first TAB too.
const ZSH_AUTOLOAD: &str = r#"if [[ ${funcstack[1]-} == _zot ]]; then
    case $service in
        zot-ext) _clap_dynamic_completer_zot_ext "$@" ;;
        *) _clap_dynamic_completer_zot "$@" ;;
    esac
fi
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    fn os(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn scope_hint_reads_flags_before_the_cursor() {
        assert_eq!(scope_hint(&os(&["zot", "ext", "enable", ""])), None);
        assert_eq!(
            scope_hint(&os(&["zot", "ext", "enable", "--global", ""])),
            Some(Scope::Global)
        );
        assert_eq!(
            scope_hint(&os(&["zot", "ext", "rm", "-yp", "a"])),
            Some(Scope::Project)
        );
        assert_eq!(
            scope_hint(&os(&["zot", "ext", "enable", "--project"])),
            None
        );
        assert_eq!(
            scope_hint(&os(&["zot", "ext", "logs", "-n", "5", ""])),
            None
        );
        assert_eq!(
            scope_hint(&os(&["zot", "ext", "enable", "--scope", "global", ""])),
            Some(Scope::Global)
        );
        assert_eq!(
            scope_hint(&os(&["zot", "ext", "rm", "--scope=project", "a"])),
            Some(Scope::Project)
        );
        assert_eq!(
            scope_hint(&os(&["zot", "ext", "rm", "--scope", "global"])),
            None,
            "the value under the cursor is not typed yet"
        );
    }

    #[test]
    fn bash_candidates_are_escaped_and_typed_words_unquoted() {
        assert_eq!(bash_escape("my ext"), "my\\ ext");
        assert_eq!(bash_escape("wetter-größe"), "wetter-größe");
        assert_eq!(bash_escape("it's $x"), "it\\'s\\ \\$x");
        assert_eq!(bash_escape("./dir/"), "./dir/");
        for (typed, text) in [
            ("my\\ e", "my e"),
            ("'my e", "my e"),
            ("\"my\\\"x\"", "my\"x"),
            ("plain", "plain"),
        ] {
            assert_eq!(bash_unquote(typed), text, "{typed}");
            assert_eq!(bash_unquote(&bash_escape(text)), text, "{text}");
        }
    }

    #[test]
    fn every_registration_names_both_commands() {
        for shell in Shell::value_variants() {
            let script = String::from_utf8(registration(*shell)).unwrap();
            for bin in REGISTERED {
                assert!(script.contains(bin), "{shell} script lacks {bin}");
            }
            assert!(script.contains("COMPLETE"), "{shell}");
        }
        let zsh = String::from_utf8(registration(Shell::Zsh)).unwrap();
        assert!(zsh.starts_with("#compdef zot zot-ext\n"), "{zsh}");
    }
}
