//! The extension names a name argument offers on TAB: installed extensions chosen by state
//! and scope, the names of logs, and folders for arguments that also take a path. Read
//! through the catalog, as every command reads the store. The shell prints candidates and
//! their descriptions on the terminal, so their hidden characters are always escaped.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use clap_complete::engine::ValueCompleter;
use clap_complete::{ArgValueCompleter, CompletionCandidate, PathCompleter};

use crate::catalog::paths::{Layout, Scope};
use crate::catalog::{self, Installed};
use crate::output::{first_hidden, printable};
use crate::store::record::Record;

/// `--project`/`--global` as typed on the line being completed, so names come from that scope.
static SCOPE_HINT: OnceLock<Option<Scope>> = OnceLock::new();

/// Remembers the scope typed on the line being completed (once per completion request).
pub fn set_scope_hint(scope: Option<Scope>) {
    let _ = SCOPE_HINT.set(scope);
}

/// Whether `--ref` is typed on the line being completed: `update` then re-pins, so pinned
/// extensions can be updated too.
static REF_HINT: OnceLock<bool> = OnceLock::new();

/// Remembers whether `--ref` is typed on the line being completed (once per request).
pub fn set_ref_hint(typed: bool) {
    let _ = REF_HINT.set(typed);
}

/// Set once a name argument's completer was asked for a word not starting with `-`: the
/// word under the cursor is then a name, so flags are left out even when no name fits (bash would insert their common
/// `--`).
static NAME_ASKED: AtomicBool = AtomicBool::new(false);

/// Whether a name argument's completer was asked during this completion request.
pub fn name_was_asked() -> bool {
    NAME_ASKED.load(Ordering::Relaxed)
}

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
    /// Extensions `update` can act on: installed from a folder or a git repository (an
    /// install record says so; not linked, not made by `new`), and not pinned to a tag or
    /// commit unless `--ref` is typed.
    Updatable,
}

/// The completer for an extension-name argument; attach it in `cli.rs` with
/// `#[arg(add = names(Offer::Installed))]`.
pub fn names(offer: Offer) -> ArgValueCompleter {
    ArgValueCompleter::new(move |current: &OsStr| {
        if !current.to_string_lossy().starts_with('-') {
            NAME_ASKED.store(true, Ordering::Relaxed);
        }
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
        .map(|o| {
            let help = o.help.map(|h| printable(&h).into());
            CompletionCandidate::new(printable(&o.name)).help(help)
        })
        .collect()
}

/// `candidate` as it may reach the shell, which shows it on the terminal: a value that is
/// not UTF-8 or holds hidden characters (controls, bidirectional overrides, zero-width
/// spaces) is given escaped ([`printable`]); such a name is then shown, not completed.
fn escaped(candidate: CompletionCandidate) -> CompletionCandidate {
    let Some(value) = candidate.get_value().to_str() else {
        let value = printable(&candidate.get_value().to_string_lossy());
        return CompletionCandidate::new(value).help(candidate.get_help().cloned());
    };
    if first_hidden(value).is_none() {
        return candidate;
    }
    let value = printable(value);
    CompletionCandidate::new(value).help(candidate.get_help().cloned())
}

/// Whether the word being completed is (the start of) a path rather than a name: what
/// [`crate::catalog::target::looks_like_path`] takes for a folder, plus `~` and a leading `.`.
fn looks_like_folder(word: &OsStr) -> bool {
    let word = word.to_string_lossy();
    word.starts_with(['.', '~']) || word.contains(std::path::is_separator)
}

/// The folders `word` may go on to name, each ending in `/`, as clap completes a
/// directory argument (relative to the current directory; `~` is the home folder).
fn folders(word: &OsStr) -> Vec<CompletionCandidate> {
    // `~` alone names no folder yet; complete what is in the home folder.
    let word = if word == "~" { OsStr::new("~/") } else { word };
    PathCompleter::dir()
        .complete(word)
        .into_iter()
        .map(escaped)
        .collect()
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
        .filter(|e| e.name().starts_with(prefix) && wanted(layout, offer, e))
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

/// Whether `offer` selects this copy: any copy for the installed offers, by its install
/// record for [`Offer::Updatable`], else by `enabled` (a broken copy can be neither enabled
/// nor disabled).
fn wanted(layout: &Layout, offer: Offer, e: &Installed) -> bool {
    match (&e.manifest, offer) {
        (_, Offer::Installed | Offer::InstalledOrFolder | Offer::InstalledOrLogged) => true,
        (_, Offer::Updatable) => updatable(layout, e),
        (Ok(m), Offer::Enabled) => m.enabled,
        (Ok(m), Offer::Disabled) => !m.enabled,
        (Err(_), _) => false,
    }
}

/// Whether `update` can fetch a new version of `e` (see [`Offer::Updatable`]).
fn updatable(layout: &Layout, e: &Installed) -> bool {
    if e.link_target.is_some() {
        return false;
    }
    let Some(record) = Record::load(layout.scope(e.scope), &e.dir_name) else {
        return false;
    };
    record.updatable(REF_HINT.get().copied().unwrap_or(false))
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
    use clap::CommandFactory;
    use std::path::{Path, PathBuf};

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
        let cli = crate::cli::Cli::command();
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
                "zot ext {sub}: use `names(Offer::InstalledOrFolder)` in src/cli/mod.rs"
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
        visit(&crate::cli::Cli::command(), "zot", &mut missing);
        assert!(
            missing.is_empty(),
            "add `#[arg(add = crate::cli::candidates::names(Offer::Installed))]` to: {missing:?}"
        );
    }
}
