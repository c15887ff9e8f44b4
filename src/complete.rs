//! Shell completion: answers `COMPLETE=<shell> zot -- <words>` requests with clap_complete's
//! dynamic engine, offers installed extension names for name arguments, and writes the
//! registration scripts committed in `completions/` and printed by `zot completions`.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;

use clap::CommandFactory;
use clap::ValueEnum;
use clap_complete::engine::ValueCompleter;
use clap_complete::env::{Bash, Elvish, EnvCompleter, Fish, Powershell, Shells, Zsh};
use clap_complete::{ArgValueCompleter, CompleteEnv, CompletionCandidate, PathCompleter, Shell};

use crate::catalog::{self, Installed};
use crate::cli::Cli;
use crate::output::Output;
use crate::paths::{Layout, Scope};

/// The environment variable that turns a run of `zot` into a completion request.
pub const VAR: &str = "COMPLETE";

/// The commands the scripts register: the binary and its `zot-ext` alias (see
/// [`crate::effective_args`]). Each is also the program the script calls for candidates.
const REGISTERED: [&str; 2] = ["zot", "zot-ext"];

/// `--project`/`--global` as typed on the line being completed, so names come from that scope.
static SCOPE_HINT: OnceLock<Option<Scope>> = OnceLock::new();

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
    let args = expand_alias(args, dashes);
    let _ = SCOPE_HINT.set(scope_hint(&args[dashes + 1..]));
    let current_dir = std::env::current_dir().ok();
    let adapters = [
        ValuesFirst(&Bash),
        ValuesFirst(&Elvish),
        ValuesFirst(&Fish),
        ValuesFirst(&Powershell),
        ValuesFirst(&Zsh),
    ];
    let shells: Vec<&dyn EnvCompleter> = adapters.iter().map(|a| a as _).collect();
    let answered = CompleteEnv::with_factory(Cli::command)
        .var(VAR)
        .shells(Shells(&shells))
        .try_complete(args, current_dir.as_deref());
    std::process::exit(if matches!(answered, Ok(true)) { 0 } else { 1 });
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
        let has_values = items.iter().any(|i| !i.is_empty() && !is_flag(i));
        let kept: Vec<String> = items
            .into_iter()
            .filter(|i| !(has_values && is_flag(i)))
            .map(|i| if bash { bash_escape(i) } else { i.to_owned() })
            .collect();
        buf.write_all(kept.join(separator).as_bytes())
    }
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
    let name = Path::new(shell)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let known = Shells::builtins()
        .completer(&name)
        .and_then(|c| Shell::from_str(c.name(), true).ok());
    let out = Output::plain();
    let Some(shell) = known else {
        out.fail(&format!(
            "{VAR}={} names no shell zot can complete for; use bash, elvish, fish, powershell or zsh",
            shell.to_string_lossy()
        ));
        return 2;
    };
    match out.bytes(&registration(shell)) {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(_) => 1,
    }
}

/// Words typed as `zot-ext ...` are completed as `zot ext ...`. The shells that pass the
/// cursor position in `_CLAP_COMPLETE_INDEX` get it moved past the inserted word.
fn expand_alias(mut args: Vec<OsString>, dashes: usize) -> Vec<OsString> {
    let words: Vec<OsString> = args.drain(dashes + 1..).collect();
    let typed = words.len();
    let words = crate::effective_args(words);
    if words.len() > typed {
        let index = std::env::var("_CLAP_COMPLETE_INDEX")
            .ok()
            .and_then(|i| i.parse::<usize>().ok());
        if let Some(index) = index {
            // SAFETY: runs at the start of `main`, before any other thread exists.
            unsafe { std::env::set_var("_CLAP_COMPLETE_INDEX", (index + 1).to_string()) };
        }
    }
    args.extend(words);
    args
}

/// The scope picked by `-p/--project` or `-g/--global` among the typed words (not counting
/// the word under the cursor, the last one).
fn scope_hint(words: &[OsString]) -> Option<Scope> {
    let mut scope = None;
    for word in words.iter().take(words.len().saturating_sub(1)) {
        let Some(word) = word.to_str() else { continue };
        match word {
            "--project" => scope = Some(Scope::Project),
            "--global" => scope = Some(Scope::Global),
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
    if shell == Shell::Zsh {
        // `#compdef` must stay the first line for compinit to pick the file up from $fpath.
        let rest: Vec<&str> = scripts
            .iter()
            .map(|s| s.split_once('\n').map_or("", |(_, rest)| rest))
            .collect();
        out.push_str(&format!("#compdef {}\n", REGISTERED.join(" ")));
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

/// Loaded from `$fpath` as `_zot`, the file's body runs on the first TAB: it defines the
/// functions above and must then complete that first TAB too.
const ZSH_AUTOLOAD: &str = r#"if [[ ${funcstack[1]-} == _zot ]]; then
    case $service in
        zot-ext) _clap_dynamic_completer_zot_ext "$@" ;;
        *) _clap_dynamic_completer_zot "$@" ;;
    esac
fi
"#;

/// Which installed extensions a name argument offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// Every installed extension, broken ones included (by folder name).
    Installed,
    /// Every installed extension, and folders once the word looks like a path (it contains
    /// `/` or starts with `.` or `~`): for arguments that also take an extension's folder,
    /// as `doctor` and `call` do.
    InstalledOrFolder,
    /// Every installed extension, and the names of the other logs in `$ZOT_HOME/logs`
    /// (`ext-<name>.log`, such as an extension loaded with `zot --ext`): what `logs` shows.
    InstalledOrLogged,
    /// Extensions whose manifest says `enabled` (what `disable` can act on).
    Enabled,
    /// Extensions whose manifest says `"enabled": false` (what `enable` can act on).
    Disabled,
}

/// The completer for an extension-name argument; attach it in `cli.rs` with
/// `#[arg(add = names(Offer::Installed))]`.
pub fn names(offer: Offer) -> ArgValueCompleter {
    ArgValueCompleter::new(move |current: &OsStr| {
        let mut candidates = installed(offer, current);
        if offer == Offer::InstalledOrFolder && looks_like_folder(current) {
            candidates.extend(folders(current));
        }
        candidates
    })
}

/// The installed extensions `offer` selects whose names start with `current`.
fn installed(offer: Offer, current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    let Ok(layout) = Layout::from_process() else {
        return Vec::new();
    };
    let scope = SCOPE_HINT.get().copied().flatten();
    offered(&layout, offer, scope, prefix)
        .into_iter()
        .map(|o| CompletionCandidate::new(o.name).help(o.help.map(Into::into)))
        .collect()
}

/// Whether the word being completed is (the start of) a path rather than a name: what
/// [`crate::target::looks_like_path`] takes for a folder, plus `~` and a leading `.`.
fn looks_like_folder(word: &OsStr) -> bool {
    let word = word.to_string_lossy();
    word.starts_with(['.', '~']) || word.contains(std::path::is_separator)
}

/// The folders `word` may go on to name, each ending in `/`, as clap completes a
/// directory argument (relative to the current directory; `~` is the home folder).
fn folders(word: &OsStr) -> Vec<CompletionCandidate> {
    // `~` alone names no folder yet; complete what is in the home folder.
    let word = if word == "~" { OsStr::new("~/") } else { word };
    PathCompleter::dir().complete(word)
}

/// One candidate: the name to insert and what the shell may show beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    pub name: String,
    pub help: Option<String>,
}

/// The names starting with `prefix` that `offer` selects, sorted. Each name is judged by the
/// copy a command given that name acts on ([`catalog::find`]'s rule, over `scope` if given);
/// copies a project folder hides are offered only when `scope` is given.
///
/// This runs on every TAB and never reports anything: a folder whose manifest cannot be
/// used is offered by its folder name as broken.
pub fn offered(layout: &Layout, offer: Offer, scope: Option<Scope>, prefix: &str) -> Vec<Offered> {
    let scopes: &[Scope] = match &scope {
        Some(s) => std::slice::from_ref(s),
        None => &Scope::ALL,
    };
    let found = catalog::scan(layout, scopes).unwrap_or_default();
    // Hidden copies only when a scope is named: without one they are noise beside the
    // copy that hides them.
    let hidden = found.iter().filter(|e| e.shadowed && scope.is_some());
    let mut seen = HashSet::new();
    let mut out: Vec<Offered> = found
        .iter()
        .filter(|e| !e.shadowed)
        .chain(hidden)
        .filter(|e| seen.insert(e.name()))
        .filter(|e| e.name().starts_with(prefix) && wanted(offer, e))
        .map(|e| Offered {
            name: e.name().to_owned(),
            help: match &e.manifest {
                Ok(m) => m.description.clone().filter(|d| !d.trim().is_empty()),
                Err(_) => Some("broken: extension.json cannot be used".into()),
            },
        })
        .collect();
    if offer == Offer::InstalledOrLogged {
        let known: HashSet<String> = out.iter().map(|o| o.name.clone()).collect();
        out.extend(
            logged(layout, prefix)
                .into_iter()
                .filter(|name| !known.contains(name))
                .map(|name| Offered {
                    name,
                    help: Some("not installed; has a log".into()),
                }),
        );
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Whether `offer` selects this copy: any copy for the installed offers, else by `enabled`
/// (a broken copy can be neither enabled nor disabled).
fn wanted(offer: Offer, e: &Installed) -> bool {
    match (&e.manifest, offer) {
        (_, Offer::Installed | Offer::InstalledOrFolder | Offer::InstalledOrLogged) => true,
        (Ok(m), Offer::Enabled) => m.enabled,
        (Ok(m), Offer::Disabled) => !m.enabled,
        (Err(_), _) => false,
    }
}

/// At most this many entries of the logs folder are looked at on a TAB.
const LOGS_LOOKED_AT: usize = 1000;

/// The names of the logs (`ext-<name>.log`) in `$ZOT_HOME/logs` that start with `prefix`.
fn logged(layout: &Layout, prefix: &str) -> Vec<String> {
    let Ok(entries) = fs::read_dir(layout.logs()) else {
        return Vec::new();
    };
    entries
        .flatten()
        .take(LOGS_LOOKED_AT)
        .filter_map(|e| {
            let file = e.file_name().into_string().ok()?;
            let name = file.strip_prefix("ext-")?.strip_suffix(".log")?;
            let plain = !matches!(name, "" | "." | "..")
                && !name.contains('\\')
                && !name.chars().any(char::is_control);
            (plain && name.starts_with(prefix)).then(|| name.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

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

    fn write(root: &Path, dir: &str, text: &str) {
        fs::create_dir_all(root.join(dir)).unwrap();
        fs::write(root.join(dir).join("extension.json"), text).unwrap();
    }

    fn manifest(name: &str, enabled: bool) -> String {
        format!(
            r#"{{"name": "{name}", "exec": "./run", "description": "about {name}", "enabled": {enabled}}}"#
        )
    }

    fn names_of(layout: &Layout, offer: Offer, scope: Option<Scope>, prefix: &str) -> Vec<String> {
        offered(layout, offer, scope, prefix)
            .into_iter()
            .map(|o| o.name)
            .collect()
    }

    #[test]
    fn offers_follow_state_scope_and_precedence() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = Layout::new(tmp.path().join("home"), &tmp.path().join("proj"));
        let global = layout.global.extensions();
        let project = layout.project.extensions();
        write(&global, "alpha", &manifest("alpha", true));
        write(&global, "beta", &manifest("beta", false));
        write(&global, "broken", "{ not json");
        write(&global, "noexec", r#"{"name": "noexec"}"#);
        write(&global, "shared", &manifest("shared", true));
        write(&project, "shared", &manifest("shared", false));
        write(&project, "gamma", &manifest("gamma", true));
        fs::write(global.join("stray-file"), "x").unwrap();

        assert_eq!(
            names_of(&layout, Offer::Installed, None, ""),
            ["alpha", "beta", "broken", "gamma", "noexec", "shared"]
        );
        assert_eq!(
            names_of(&layout, Offer::Enabled, None, ""),
            ["alpha", "gamma"]
        );
        // The project copy of `shared` wins, and it is disabled.
        assert_eq!(
            names_of(&layout, Offer::Disabled, None, ""),
            ["beta", "shared"]
        );
        assert_eq!(
            names_of(&layout, Offer::Enabled, Some(Scope::Global), ""),
            ["alpha", "shared"]
        );
        assert_eq!(
            names_of(&layout, Offer::Installed, Some(Scope::Project), ""),
            ["gamma", "shared"]
        );
        assert_eq!(
            names_of(&layout, Offer::Installed, None, "b"),
            ["beta", "broken"]
        );

        let all = offered(&layout, Offer::Installed, None, "");
        assert_eq!(all[0].help.as_deref(), Some("about alpha"));
        let broken = all.iter().find(|o| o.name == "broken").unwrap();
        assert!(broken.help.as_deref().unwrap().starts_with("broken"));
    }

    #[test]
    fn offers_come_from_the_catalog_as_zot_reads_it() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = Layout::new(tmp.path().join("home"), &tmp.path().join("proj"));
        // Keys in another case are read as zot reads them (Go's decoder ignores case).
        write(
            &layout.global.extensions(),
            "cased",
            r#"{"NAME": "cased-name", "Exec": "./run", "Enabled": false}"#,
        );
        // A project folder hides the global folder of the same folder name, whatever the
        // manifests say, so the global manifest's name is not offered.
        write(
            &layout.project.extensions(),
            "same",
            &manifest("in-project", true),
        );
        write(
            &layout.global.extensions(),
            "same",
            &manifest("hidden", true),
        );
        assert_eq!(
            names_of(&layout, Offer::Installed, None, ""),
            ["cased-name", "in-project"]
        );
        assert_eq!(names_of(&layout, Offer::Disabled, None, ""), ["cased-name"]);
        // Asked for the global scope, the hidden copy is what a command would act on.
        assert_eq!(
            names_of(&layout, Offer::Installed, Some(Scope::Global), ""),
            ["cased-name", "hidden"]
        );
    }

    #[test]
    fn nothing_installed_offers_nothing() {
        let layout = Layout::new(PathBuf::from("/nonexistent/zot"), Path::new("/nonexistent"));
        assert!(offered(&layout, Offer::Installed, None, "").is_empty());
    }

    #[test]
    fn path_like_words_are_folders() {
        for word in [
            ".", "..", "./", "../x", ".hidden", "~", "~/src", "/abs", "a/b",
        ] {
            assert!(looks_like_folder(OsStr::new(word)), "{word}");
        }
        for word in ["", "hello-py", "clock", "a.b", "a~"] {
            assert!(!looks_like_folder(OsStr::new(word)), "{word}");
        }
    }

    fn completed(completer: &ArgValueCompleter, word: &str) -> Vec<String> {
        completer
            .complete(OsStr::new(word))
            .iter()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_value().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn installed_or_folder_offers_folders_for_paths_only() {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(base.join("my-ext/sub")).unwrap();
        fs::create_dir_all(base.join("other")).unwrap();
        fs::write(base.join("my-file"), "x").unwrap();
        let base = base.display();
        let completer = names(Offer::InstalledOrFolder);
        assert_eq!(
            completed(&completer, &format!("{base}/")),
            [format!("{base}/my-ext/"), format!("{base}/other/")]
        );
        assert_eq!(
            completed(&completer, &format!("{base}/my")),
            [format!("{base}/my-ext/")]
        );
        assert_eq!(
            completed(&completer, &format!("{base}/my-ext/")),
            [format!("{base}/my-ext/sub/")]
        );
        // The other offers never list folders.
        for offer in [Offer::Installed, Offer::Enabled, Offer::Disabled] {
            assert!(completed(&names(offer), &format!("{base}/")).is_empty());
        }
    }

    /// `doctor` and `call` take a folder as well as a name, so they complete folders.
    #[test]
    fn doctor_and_call_complete_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(base.join("my-ext")).unwrap();
        let word = format!("{}/m", base.display());
        let cli = Cli::command();
        let ext = cli.find_subcommand("ext").unwrap();
        for (sub, arg) in [("doctor", "names"), ("call", "name")] {
            let arg = ext
                .find_subcommand(sub)
                .and_then(|c| c.get_arguments().find(|a| a.get_id() == arg))
                .unwrap_or_else(|| panic!("zot ext {sub} has no argument {arg}"));
            let completer = arg.get::<ArgValueCompleter>().expect("a completer");
            assert_eq!(
                completed(completer, &word),
                [format!("{}/my-ext/", base.display())],
                "zot ext {sub}: use `names(Offer::InstalledOrFolder)` in src/cli.rs"
            );
        }
    }

    /// Every extension-name argument, including those of subcommands added later, completes.
    #[test]
    fn every_name_argument_has_a_completer() {
        fn visit(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_positionals() {
                let names_extensions = matches!(arg.get_id().as_str(), "name" | "names");
                if names_extensions && arg.get::<ArgValueCompleter>().is_none() {
                    missing.push(format!("{path} <{}>", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                visit(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        visit(&Cli::command(), "zot", &mut missing);
        assert!(
            missing.is_empty(),
            "add `#[arg(add = crate::complete::names(Offer::Installed))]` to: {missing:?}"
        );
    }
}
