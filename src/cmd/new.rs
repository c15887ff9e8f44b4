//! `zot ext new`: write a small working extension from a template, atomically, never over
//! an existing one. An installed Go extension is built in staging as install builds one
//! (its step, recorded); the Rust template and a folder given with `--dir` get the command
//! to build them.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use clap::ValueEnum;
use serde::Serialize;

use super::{Context, Run};
use crate::catalog::manifest;
use crate::catalog::paths::Scope;
use crate::check::build_hint::build_hint;
use crate::cli::{Lang, NewArgs};
use crate::error::usage;
use crate::install;
use crate::install::fetch::Staged;
use crate::output::sh_quote;
use crate::protocol::zot;
use crate::store::Store;
use crate::store::filelist::FileList;
use crate::store::record::{Kind, Record};

/// One file of a scaffold: path inside the extension, contents, whether it is executable.
struct File {
    path: &'static str,
    text: String,
    executable: bool,
}

/// The names a scaffold uses, derived from the extension's name.
#[derive(Debug, PartialEq, Serialize)]
struct Names {
    name: String,
    command: String,
    tool: String,
    /// Binary, Go module and Cargo package name (`--json` shows it for compiled templates).
    #[serde(skip)]
    binary: String,
}

/// `zot ext new --json` output.
#[derive(Serialize)]
struct Created<'a> {
    #[serde(flatten)]
    names: &'a Names,
    /// The binary a build produces; `None` for a script.
    binary: Option<&'a str>,
    language: &'static str,
    scope: Option<Scope>,
    dir: String,
    exec: String,
    files: Vec<&'static str>,
}

/// A name `new` scaffolds: letters, digits, '.', '_' and '-' (and a valid manifest name).
/// Narrower than what zot loads ([`manifest::check_name`]) because the name is written
/// unquoted into generated source, build commands and the README.
fn check_new_name(name: &str) -> Result<(), String> {
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        let why = if manifest::check_name(name).is_ok() {
            " (new writes the name unquoted into the template's source and build files; zot and \
             zot ext install accept this name, so to use it, edit \"name\" in extension.json \
             afterwards)"
        } else {
            ""
        };
        return Err(format!(
            "contains {bad:?}; use only ASCII letters and digits, '.', '_' and '-'{why}"
        ));
    }
    manifest::check_name(name)
}

impl Run for NewArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        check_new_name(&self.name)
            .map_err(|why| usage(format!("the name \"{}\" {why}", self.name)))?;
        let names = Names::from(&self.name);
        let files = scaffold(self.lang, &names, self.place.dir.is_some());
        let (scope, dir) = if let Some(dir) = &self.place.dir {
            (None, write_folder(dir, &files)?)
        } else {
            let scope = self.place.scope.scope().unwrap_or(Scope::Global);
            let record = new_record(self.lang, &names.name);
            let build = self.lang == Lang::Go;
            (
                Some(scope),
                write_installed(ctx, scope, &record, &files, build)?,
            )
        };
        report(ctx, self.lang, &names, scope, &dir, &files)
    }
}

impl Names {
    fn from(name: &str) -> Names {
        let command = name.replace('.', "-");
        let tool: String = name.replace(['.', '-'], "_").chars().take(64).collect();
        Names {
            name: name.to_string(),
            command: avoid(command, taken_command, "-ext"),
            tool: avoid(tool, zot::any_tool, "_ext"),
            binary: binary_name(name),
        }
    }
}

/// Whether some zot version has `/name` as a command of its own, or runs its own command
/// when `/name` is picked from the suggestions (`/settings`, `/tg` in zot 0.1.62).
fn taken_command(name: &str) -> bool {
    zot::any_command(name) || zot::any_picked_command(name)
}

/// `name`, or `name` + `suffix` when some zot version already uses `name` itself.
fn avoid(name: String, taken: fn(&str) -> bool, suffix: &str) -> String {
    if taken(&name) { name + suffix } else { name }
}

/// A name Go and Cargo accept: starting with a letter, not a reserved crate name.
fn binary_name(name: &str) -> String {
    let clean = name.replace('.', "-");
    let reserved = ["test", "core", "std", "alloc", "proc_macro", "proc-macro"];
    if clean.starts_with(|c: char| c.is_ascii_alphabetic()) && !reserved.contains(&clean.as_str()) {
        clean
    } else {
        format!("ext-{clean}")
    }
}

fn language(lang: Lang) -> &'static str {
    match lang {
        Lang::Python => "python",
        Lang::Node => "javascript",
        Lang::Go => "go",
        Lang::Shell => "shell",
        Lang::Rust => "rust",
    }
}

/// The program file(s) of `lang`, as (path, template, executable).
fn program(lang: Lang) -> Vec<(&'static str, &'static str, bool)> {
    match lang {
        Lang::Python => vec![(
            "main.py",
            include_str!("../../templates/python/main.py"),
            true,
        )],
        Lang::Node => vec![(
            "main.js",
            include_str!("../../templates/node/main.js"),
            true,
        )],
        Lang::Shell => vec![(
            "main.sh",
            include_str!("../../templates/shell/main.sh"),
            true,
        )],
        Lang::Go => vec![
            ("main.go", include_str!("../../templates/go/main.go"), false),
            ("go.mod", include_str!("../../templates/go/go.mod"), false),
            (".gitignore", "/__BINARY__\n", false),
        ],
        Lang::Rust => vec![
            (
                "src/main.rs",
                include_str!("../../templates/rust/main.rs"),
                false,
            ),
            (
                "Cargo.toml",
                include_str!("../../templates/rust/Cargo.toml.tmpl"),
                false,
            ),
            (".gitignore", "/target\n", false),
        ],
    }
}

/// The `exec` of the manifest: the script, or the binary a build produces.
fn exec(lang: Lang, names: &Names) -> String {
    match lang {
        Lang::Python => "./main.py".into(),
        Lang::Node => "./main.js".into(),
        Lang::Shell => "./main.sh".into(),
        Lang::Go => format!("./{}", names.binary),
        Lang::Rust => format!("./target/release/{}", names.binary),
    }
}

/// The build command in the scaffold's README, run in its folder (which has a go.mod or
/// Cargo.toml); what `new` prints comes from [`build_hint`], which also says where.
fn build_step(lang: Lang, names: &Names) -> Option<String> {
    match lang {
        Lang::Go => Some(format!("go build -o {} .", names.binary)),
        Lang::Rust => Some("cargo build --release".into()),
        _ => None,
    }
}

fn fill(template: &str, names: &Names) -> String {
    template
        .replace("__NAME__", &names.name)
        .replace("__COMMAND__", &names.command)
        .replace("__TOOL__", &names.tool)
        .replace("__BINARY__", &names.binary)
}

/// Every file of the scaffold, filled in.
fn scaffold(lang: Lang, names: &Names, standalone: bool) -> Vec<File> {
    let mut files: Vec<File> = program(lang)
        .into_iter()
        .map(|(path, template, executable)| File {
            path,
            text: fill(template, names),
            executable,
        })
        .collect();
    let manifest = serde_json::json!({
        "name": names.name,
        "version": "0.1.0",
        "exec": exec(lang, names),
        "language": language(lang),
        "description": format!("/{} and the {} tool (made by zot ext new)", names.command, names.tool),
        "enabled": true,
    });
    let manifest = serde_json::to_string_pretty(&manifest).expect("a JSON value serialises") + "\n";
    files.insert(
        0,
        File {
            path: manifest::FILE,
            text: manifest,
            executable: false,
        },
    );
    let readme = readme(lang, names, &files, standalone);
    files.push(File {
        path: "README.md",
        text: readme,
        executable: false,
    });
    files
}

fn readme(lang: Lang, names: &Names, files: &[File], standalone: bool) -> String {
    let list: String = files
        .iter()
        .map(|f| format!("- `{}`\n", f.path))
        .chain(std::iter::once("- `README.md`\n".to_string()))
        .collect();
    // An installed Go extension was built in staging (when go is on PATH); the rest are not.
    let when = if lang == Lang::Go && !standalone {
        "Rebuild it after every edit (zot ext new built it once when go was on PATH):"
    } else {
        "Build it first:"
    };
    let build = build_step(lang, names)
        .map(|step| format!("{when}\n\n```sh\n{step}\n```\n\nThen:\n\n"))
        .unwrap_or_default();
    let tool_does = match lang {
        Lang::Shell => {
            "answers with a greeting (POSIX sh cannot parse JSON, so it ignores its arguments; see the comment in `main.sh`)"
        }
        _ => "answers with its `text` argument",
    };
    let (target, usage) = if standalone {
        (
            ".",
            "Run these in this folder. To use it in zot, link it with `zot ext link .` (zot then runs this folder as you edit it), install a copy with `zot ext install .`, or load it for one zot session with `zot --ext .`.",
        )
    } else {
        (
            names.name.as_str(),
            "Restart zot (or run `/reload-ext`) to use it there.",
        )
    };
    fill(include_str!("../../templates/README.md"), names)
        .replace("__LANGUAGE__", lang_title(lang))
        .replace("__TOOL_DOES__", tool_does)
        .replace("__FILES__", &list)
        .replace("__BUILD__", &build)
        .replace("__TARGET__", target)
        .replace("__USE__", usage)
}

fn lang_title(lang: Lang) -> &'static str {
    match lang {
        Lang::Python => "Python (standard library only)",
        Lang::Node => "Node (no dependencies)",
        Lang::Go => "Go (standard library only)",
        Lang::Shell => "POSIX sh",
        Lang::Rust => "Rust",
    }
}

/// Writes the files under `root`, which must not exist yet.
fn write_tree(root: &Path, files: &[File]) -> Result<()> {
    for file in files {
        let path = root.join(file.path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        fs::write(&path, &file.text).with_context(|| format!("cannot write {}", path.display()))?;
        if file.executable {
            set_executable(&path)?;
        }
    }
    Ok(())
}

fn set_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))
}

/// The install record of an extension written from the `lang` template: `info` shows where
/// it came from and `update` knows it has no source to fetch from.
fn new_record(lang: Lang, name: &str) -> Record {
    let template = lang
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default();
    Record {
        template: Some(template),
        language: Some(language(lang).to_string()),
        ..Record::new(name, "zot ext new".into(), Kind::New)
    }
}

/// Into an extensions root, through the store's staging folder and an atomic rename, with
/// its install record (through the store's journal).
fn write_installed(
    ctx: &Context,
    scope: Scope,
    record: &Record,
    files: &[File],
    build: bool,
) -> Result<PathBuf> {
    let name = record.name.as_str();
    let store = Store::open(ctx.layout.scope(scope))?;
    if let Some(existing) = store.existing(name) {
        bail!(
            "an extension named \"{name}\" already exists at {}; pick another name (nothing was written)",
            existing.display()
        );
    }
    let staging = store.stage()?;
    let tree = staging.tree();
    write_tree(&tree, files)?;
    // What `new` wrote is listed; what the build makes is the step's output, as for install.
    let listed = FileList::scan(&tree)?;
    let manifest = manifest::read(&tree)?;
    let mut ready = install::Ready::written(staging, manifest, record.clone(), listed, false);
    if build {
        build_in_staging(ctx, &mut ready.staged);
    }
    let placed = ready.place(&store)?;
    if let Some(e) = placed.record_error {
        return Err(e.context(
            "the extension was written, but its install record was not saved; the next zot ext command saves it",
        ));
    }
    Ok(placed.dest)
}

/// Runs the install's step (the Go build) in the staged tree, as an install does; a missing
/// or too old toolchain, or a failed build, is a note with the fix, and the extension is
/// written unbuilt.
fn build_in_staging(ctx: &Context, staged: &mut Staged) {
    let options = crate::prepare::Options {
        offers_no_prepare: false,
        ..crate::prepare::Options::new(&ctx.layout.global)
    };
    if let Err(e) = install::prepare(staged, &options, &ctx.out) {
        let name = &staged.manifest.name;
        ctx.out.note(&format!(
            "note: {name} was not built: {e:#}; once that is fixed: zot ext prepare {}",
            sh_quote(name)
        ));
    }
}

/// Into `dir`, which may exist only as an empty folder: built beside it, then renamed.
fn write_folder(dir: &Path, files: &[File]) -> Result<PathBuf> {
    if let Ok(mut entries) = fs::read_dir(dir) {
        if entries.next().is_some() {
            bail!(
                "{} already exists and is not empty; nothing was written",
                dir.display()
            );
        }
    } else if fs::symlink_metadata(dir).is_ok() {
        bail!(
            "{} already exists and is not a folder; nothing was written",
            dir.display()
        );
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).with_context(|| format!("cannot create {}", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".zot-new-")
        .tempdir_in(&parent)
        .with_context(|| format!("cannot create a staging folder in {}", parent.display()))?;
    let tree = staging.path().join("tree");
    write_tree(&tree, files)?;
    // rename(2) replaces an empty folder and fails on a non-empty one.
    fs::rename(&tree, dir)
        .with_context(|| format!("cannot move the new extension to {}", dir.display()))?;
    Ok(fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()))
}

fn report(
    ctx: &Context,
    lang: Lang,
    names: &Names,
    scope: Option<Scope>,
    dir: &Path,
    files: &[File],
) -> Result<()> {
    if ctx.out.json {
        return Ok(ctx.out.json(&Created {
            names,
            binary: matches!(lang, Lang::Go | Lang::Rust).then_some(names.binary.as_str()),
            language: language(lang),
            scope,
            dir: dir.display().to_string(),
            exec: exec(lang, names),
            files: files.iter().map(|f| f.path).collect(),
        })?);
    }
    ctx.out.say(&format!(
        "created {} ({}) in {}",
        names.name,
        language(lang),
        dir.display()
    ))?;
    ctx.out.say(&format!(
        "  command /{}, tool {}",
        names.command, names.tool
    ))?;
    let target = match scope {
        Some(_) => sh_quote(&names.name),
        None => sh_quote(&dir.display().to_string()),
    };
    let program = exec(lang, names);
    let built = std::fs::symlink_metadata(dir.join(&program)).is_ok();
    let hint = match scope {
        _ if built => None,
        // An installed Go extension's build is its step: `new` ran it and said why it failed.
        Some(_) if lang == Lang::Go => None,
        _ => build_hint(dir, Some(language(lang)), &program, &names.name),
    };
    if let Some(hint) = hint {
        ctx.out.note(&hint);
    }
    ctx.out.note(&format!(
        "check it: zot ext doctor {target} && zot ext call {target} /{} hi",
        names.command
    ));
    if scope.is_none() {
        ctx.out.note(&if super::link::agent_loads_links() {
            format!(
                "use it in zot: zot ext link {target} (zot runs this folder as you edit it; zot ext install {target} makes a copy instead)"
            )
        } else {
            format!(
                "use it in zot: zot ext install {target} (the zot agent here does not load linked folders, so zot ext link would not start it; install again after each edit)"
            )
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_scaffolds_only_names_that_go_unquoted_into_source() {
        for name in ["my ext", "a\"b", "größe", "a\\b", "$x"] {
            assert!(check_new_name(name).is_err(), "{name}");
        }
        assert!(check_new_name("my-ext_1.2").is_ok());
        assert!(check_new_name("..").is_err());
    }

    #[test]
    fn names_are_derived_safely() {
        let n = Names::from("my.ext-1");
        assert_eq!(
            (n.command.as_str(), n.tool.as_str(), n.binary.as_str()),
            ("my-ext-1", "my_ext_1", "my-ext-1")
        );
        let n = Names::from("help");
        assert_eq!((n.command.as_str(), n.tool.as_str()), ("help-ext", "help"));
        assert_eq!(Names::from("bash").tool, "bash_ext");
        assert_eq!(Names::from("9lives").binary, "ext-9lives");
        assert_eq!(Names::from("test").binary, "ext-test");
        assert_eq!(Names::from(&"a".repeat(100)).tool.len(), 64);
    }

    /// `__WORD__` in capitals (Python's `__main__` is not one).
    fn has_placeholder(text: &str) -> bool {
        text.split("__").skip(1).step_by(2).any(|word| {
            !word.is_empty() && word.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        })
    }

    #[test]
    fn every_placeholder_is_filled() {
        assert!(has_placeholder("a __NAME__ b") && !has_placeholder("if __name__ == '__main__'"));
        for lang in [Lang::Python, Lang::Node, Lang::Go, Lang::Shell, Lang::Rust] {
            for standalone in [false, true] {
                for file in scaffold(lang, &Names::from("demo"), standalone) {
                    assert!(
                        !has_placeholder(&file.text),
                        "{lang:?} {}: {}",
                        file.path,
                        file.text
                    );
                }
            }
        }
    }

    #[test]
    fn the_manifest_is_valid_and_runs_the_program() {
        for lang in [Lang::Python, Lang::Node, Lang::Go, Lang::Shell, Lang::Rust] {
            let files = scaffold(lang, &Names::from("demo"), false);
            let m = manifest::parse(&files[0].text, Path::new("extension.json")).unwrap();
            assert_eq!(m.name, "demo");
            let program = m.exec.trim_start_matches("./");
            let shipped = files.iter().any(|f| f.path == program && f.executable);
            assert!(
                shipped || build_step(lang, &Names::from("demo")).is_some(),
                "{lang:?}"
            );
        }
    }
}
