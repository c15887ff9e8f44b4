//! The project file `extensions.json` (`.zot/extensions.json`, or `$ZOT_HOME/extensions.json`
//! for the global scope): which extensions a scope should have, from where, and whether
//! enabled. Parsing is strict (an unknown field or a value of the wrong type is an error
//! with `file:line:column`); saving writes the whole file atomically, keys sorted.
//! The lock file beside it is [`lock`].

pub(crate) mod ignore;
pub(crate) mod lock;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use jsonc_parser::ast;
use jsonc_parser::common::Ranged;
use serde::Serialize;

use crate::catalog::paths::{Layout, Scope};
use crate::fsx::Folder;
use crate::fsx::bounded;

/// The project file's name, in `.zot/` or `$ZOT_HOME`.
pub(crate) const FILE: &str = "extensions.json";

/// Longest project or lock file read.
const MAX_SIZE: u64 = 4 << 20;

/// The fields of the top-level object (`extensions.schema.json` names the same).
pub(crate) const TOP_FIELDS: [&str; 2] = ["$schema", "extensions"];

/// The fields of one entry (`extensions.schema.json` names the same).
pub(crate) const ENTRY_FIELDS: [&str; 6] = [
    "source",
    "ref",
    "subdir",
    "enabled",
    "prepare",
    "allow_scripts",
];

/// One extension the file asks for, under its name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Entry {
    /// A folder or git URL, as `zot ext install` takes it (relative paths: see [`Where::root`]).
    pub source: String,
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subdir: Option<String>,
    #[serde(skip_serializing_if = "is_true")]
    pub enabled: bool,
    /// Whether the build or dependency install its files call for runs (`--no-prepare`).
    #[serde(skip_serializing_if = "is_true")]
    pub prepare: bool,
    /// Whether npm, pnpm, yarn or bun run lifecycle scripts (`--allow-scripts`).
    #[serde(skip_serializing_if = "is_false")]
    pub allow_scripts: bool,
}

// serde's `skip_serializing_if` passes a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_true(b: &bool) -> bool {
    *b
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(b: &bool) -> bool {
    !*b
}

/// A parsed project file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct ProjectFile {
    #[serde(rename = "$schema", skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    pub extensions: BTreeMap<String, Entry>,
}

/// Where a scope's project and lock files are, and what relative sources are relative to.
#[derive(Debug, Clone)]
pub(crate) struct Where {
    pub scope: Scope,
    /// The folder holding the two files (`.zot` or `$ZOT_HOME`).
    pub dir: PathBuf,
    /// The folder a relative path source starts from: the project root (the folder holding
    /// `.zot/`), or `$ZOT_HOME`.
    pub root: PathBuf,
}

/// The nearest folder above the project root of `layout` (the working folder) that is a
/// project of zot's (`.zot/extensions.json` or `.zot/extensions/` in it), when the root
/// itself is none. A `.zot` that is `$ZOT_HOME` (`ZOT_HOME=~/.zot`) makes no project.
pub(crate) fn project_above(layout: &Layout) -> Option<PathBuf> {
    let root = Where::of(layout, Scope::Project).root;
    let is_project = |dir: &Path| {
        let zot = dir.join(".zot");
        zot != layout.global.base && (zot.join(FILE).is_file() || zot.join("extensions").is_dir())
    };
    let root = root.as_path();
    if is_project(root) {
        return None;
    }
    root.ancestors()
        .skip(1)
        .find(|dir| is_project(dir))
        .map(Path::to_path_buf)
}

/// Whether the project at `above` has an extension of one of `names`: its project file
/// lists it or its extensions folder has a folder of that name (an unreadable project file
/// lists nothing).
pub(crate) fn has_any(above: &Path, names: &[&str]) -> bool {
    let zot = above.join(".zot");
    let listed = ProjectFile::load(&zot.join(FILE))
        .ok()
        .flatten()
        .is_some_and(|file| names.iter().any(|n| file.extensions.contains_key(*n)));
    listed
        || names.iter().any(|n| {
            crate::catalog::is_folder_name(n)
                && std::fs::symlink_metadata(zot.join("extensions").join(n)).is_ok()
        })
}

/// For a command that shows what zot started here loads (`list`, `doctor`), run in a
/// subfolder of a project: the note that this folder is no project and where the project
/// is (nothing for the global scope alone, or in a project's own root).
pub(crate) fn subfolder_note(layout: &Layout, scope: Option<Scope>) -> Option<String> {
    if scope == Some(Scope::Global) {
        return None;
    }
    let above = project_above(layout)?;
    let root = Where::of(layout, Scope::Project).root;
    Some(format!(
        "note: no project here; {}",
        run_from_above(&root, &above)
    ))
}

/// For a command run in a subfolder of the project at `above`: the project file there, as
/// a path from `root`, and the folder to run from.
pub(crate) fn run_from_above(root: &Path, above: &Path) -> String {
    let depth = root
        .strip_prefix(above)
        .map_or(0, |rest| rest.components().count());
    format!(
        "the project file is {}.zot/{FILE}, in {}: run zot ext from there (cd {}), since zot loads project extensions from the current folder only",
        "../".repeat(depth),
        above.display(),
        crate::output::sh_quote(&above.display().to_string())
    )
}

/// The note of a command that works on the project at `above` from a subfolder of it:
/// `verb` says what it does there ("adding to").
pub(crate) fn working_above(verb: &str, above: &Path) -> String {
    format!(
        "note: {verb} the project in {} (.zot/{FILE} there), since this folder is inside it; zot loads its extensions when started in that folder",
        crate::output::printable(&above.display().to_string())
    )
}

/// `path` (absolute) as the project file keeps a source under or beside the project root
/// `root` (absolute): relative to it, `./` or `../` first, with `.` and `..` resolved as
/// written (the way the shell typed them).
pub(crate) fn relative_to(root: &Path, path: &Path) -> String {
    let (root, path) = (lexical(root), lexical(path));
    let common = root.iter().zip(&path).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return path.iter().collect::<PathBuf>().display().to_string();
    }
    let mut out = PathBuf::from(if common == root.len() { "." } else { "" });
    for _ in common..root.len() {
        out.push("..");
    }
    out.extend(&path[common..]);
    out.display().to_string()
}

/// The components of `path` with `.` dropped and `name/..` taken away as written.
fn lexical(path: &Path) -> Vec<std::path::Component<'_>> {
    use std::path::Component;
    let mut parts: Vec<Component<'_>> = Vec::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir if matches!(parts.last(), Some(Component::Normal(_))) => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts
}

impl Where {
    pub(crate) fn of(layout: &Layout, scope: Scope) -> Where {
        let dir = layout.scope(scope).base.clone();
        let root = match scope {
            Scope::Project => dir.parent().map_or_else(|| dir.clone(), Path::to_path_buf),
            Scope::Global => dir.clone(),
        };
        Where { scope, dir, root }
    }

    pub(crate) fn project_file(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// The source as `install` should get it: a relative folder or repository path made
    /// absolute from [`Where::root`]; URLs as they are.
    pub(crate) fn resolve(&self, source: &str) -> String {
        // A local repository path (`../repo.git`), as opposed to a URL or `user@host:path`.
        if crate::source::Source::parse(source).is_local_path() && Path::new(source).is_relative() {
            return self.root.join(source).display().to_string();
        }
        source.to_string()
    }
}

/// Why a project or lock file was rejected: `<path>:<line>:<column>: <message>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub path: PathBuf,
    pub position: Option<(usize, usize)>,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = crate::output::printable(&self.path.display().to_string());
        match self.position {
            Some((line, column)) => write!(f, "{path}:{line}:{column}: {}", self.message),
            None => write!(f, "{path}: {}", self.message),
        }
    }
}

impl std::error::Error for ParseError {}

impl ProjectFile {
    /// Reads the file at `path`; `None` when there is none. A link, special file or a file
    /// over 4 MiB is an error.
    pub(crate) fn load(path: &Path) -> anyhow::Result<Option<ProjectFile>> {
        let Some(text) = read_text(path)? else {
            return Ok(None);
        };
        Ok(Some(ProjectFile::parse(&text, path)?))
    }

    /// Parses the text of a project file; errors carry `path` and line:column.
    pub(crate) fn parse(text: &str, path: &Path) -> Result<ProjectFile, ParseError> {
        let doc = Doc::new(text, path)?;
        let top = doc.object(doc.root()?, "the project file")?;
        let mut file = ProjectFile::default();
        let mut seen_extensions = false;
        for prop in &top.properties {
            let field = key(prop);
            if !TOP_FIELDS.contains(&field.as_str()) {
                return Err(doc.error(
                    prop.name.start(),
                    format!(
                        "unknown field \"{}\"; the fields are \"$schema\" and \"extensions\"",
                        crate::output::printable(&field)
                    ),
                ));
            }
            if field == "$schema" {
                file.schema = Some(doc.string(&prop.value, "\"$schema\"")?);
            } else {
                seen_extensions = true;
                file.extensions = doc.extensions(&prop.value)?;
            }
        }
        if !seen_extensions {
            return Err(doc.error(
                top.start(),
                "missing field \"extensions\" (an object of extensions by name)".into(),
            ));
        }
        Ok(file)
    }

    /// The file's text: 2-space indent, names sorted, `enabled` only when false, trailing
    /// newline.
    pub(crate) fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a project file serializes");
        text.push('\n');
        text
    }

    /// Writes the file atomically (temporary file beside it, flushed, renamed, folder
    /// flushed), creating its folder.
    pub(crate) fn save(&self, path: &Path) -> anyhow::Result<()> {
        write_atomically(path, self.to_text().as_bytes())
    }
}

/// Reads a project or lock file: `None` when missing; never follows a link or blocks.
pub(crate) fn read_text(path: &Path) -> anyhow::Result<Option<String>> {
    use anyhow::Context as _;
    let shown = crate::output::printable(&path.display().to_string());
    let bytes = match bounded::read(path, MAX_SIZE) {
        Ok(bytes) => bytes,
        Err(bounded::ReadError::Missing) => return Ok(None),
        Err(e) => anyhow::bail!("{shown} {e}"),
    };
    String::from_utf8(bytes)
        .map(Some)
        .with_context(|| format!("{shown} is not UTF-8 text"))
}

/// Replaces the file at `path` with `contents` atomically, creating its folder.
pub(crate) fn write_atomically(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let shown = crate::output::printable(&path.display().to_string());
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        anyhow::bail!("{shown} is not a file path");
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let folder =
        Folder::open_path(dir).with_context(|| format!("cannot open {}", dir.display()))?;
    let prefix = format!(".{}.", name.to_string_lossy());
    folder.clear_leftovers(&prefix);
    let temp = crate::fsx::unique_name(&prefix);
    folder
        .write_new(&temp, contents, 0o644)
        .with_context(|| format!("cannot write {shown}"))?;
    folder
        .rename_to(&temp, &folder, name)
        .inspect_err(|_| {
            let _ = folder.unlink(&temp);
        })
        .with_context(|| format!("cannot write {shown}"))
}

/// A JSON document parsed twice: strictly by `serde_json` (so only JSON is accepted), then
/// into an AST for positions.
pub(crate) struct Doc<'a> {
    text: &'a str,
    path: &'a Path,
    ast: Option<ast::Value<'a>>,
}

impl<'a> Doc<'a> {
    pub(crate) fn new(text: &'a str, path: &'a Path) -> Result<Doc<'a>, ParseError> {
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
            let message = e.to_string();
            let message = message.split(" at line ").next().unwrap_or(&message);
            return Err(ParseError {
                path: path.to_path_buf(),
                position: Some((e.line(), e.column())),
                message: format!("invalid JSON: {message}"),
            });
        }
        let parsed = jsonc_parser::parse_to_ast(
            text,
            &jsonc_parser::CollectOptions::default(),
            &jsonc_parser::ParseOptions::default(),
        )
        .map_err(|e| ParseError {
            path: path.to_path_buf(),
            position: None,
            message: format!("invalid JSON: {e}"),
        })?;
        Ok(Doc {
            text,
            path,
            ast: parsed.value,
        })
    }

    pub(crate) fn root(&self) -> Result<&ast::Value<'a>, ParseError> {
        self.ast.as_ref().ok_or_else(|| ParseError {
            path: self.path.to_path_buf(),
            position: Some((1, 1)),
            message: "the file is empty; it must be one JSON object".into(),
        })
    }

    pub(crate) fn error(&self, offset: usize, message: String) -> ParseError {
        ParseError {
            path: self.path.to_path_buf(),
            position: Some(position_of(self.text, offset)),
            message,
        }
    }

    pub(crate) fn object<'b>(
        &self,
        value: &'b ast::Value<'a>,
        what: &str,
    ) -> Result<&'b ast::Object<'a>, ParseError> {
        match value {
            ast::Value::Object(object) => Ok(object),
            other => Err(self.wrong(other, what, "an object")),
        }
    }

    pub(crate) fn string(&self, value: &ast::Value<'a>, what: &str) -> Result<String, ParseError> {
        match value {
            ast::Value::StringLit(s) => Ok(s.value.to_string()),
            other => Err(self.wrong(other, what, "a string")),
        }
    }

    /// A string or `null`.
    pub(crate) fn optional_string(
        &self,
        value: &ast::Value<'a>,
        what: &str,
    ) -> Result<Option<String>, ParseError> {
        match value {
            ast::Value::NullKeyword(_) => Ok(None),
            ast::Value::StringLit(s) => Ok(Some(s.value.to_string())),
            other => Err(self.wrong(other, what, "a string or null")),
        }
    }

    fn boolean(&self, value: &ast::Value<'a>, what: &str) -> Result<bool, ParseError> {
        match value {
            ast::Value::BooleanLit(b) => Ok(b.value),
            other => Err(self.wrong(other, what, "true or false")),
        }
    }

    fn wrong(&self, value: &ast::Value<'a>, what: &str, want: &str) -> ParseError {
        self.error(
            value.start(),
            format!("{what} must be {want}, found {}", kind(value)),
        )
    }

    /// The `extensions` object: entries by name, each name usable as a folder name and
    /// given once.
    fn extensions(&self, value: &ast::Value<'a>) -> Result<BTreeMap<String, Entry>, ParseError> {
        let object = self.object(value, "\"extensions\"")?;
        let mut entries = BTreeMap::new();
        for prop in &object.properties {
            let name = key(prop);
            let shown = crate::output::printable(&name);
            if let Err(why) = crate::catalog::manifest::check_name(&name) {
                return Err(self.error(prop.name.start(), format!("the name \"{shown}\" {why}")));
            }
            let parsed = self.entry(&name, &prop.value)?;
            if entries.insert(name.clone(), parsed).is_some() {
                return Err(self.error(
                    prop.name.start(),
                    format!("\"{shown}\" is listed twice; keep one entry"),
                ));
            }
        }
        Ok(entries)
    }

    fn entry(&self, name: &str, value: &ast::Value<'a>) -> Result<Entry, ParseError> {
        let what = format!("the entry \"{}\"", crate::output::printable(name));
        let object = self.object(value, &what)?;
        let mut source = None;
        let mut entry = Entry {
            source: String::new(),
            git_ref: None,
            subdir: None,
            enabled: true,
            prepare: true,
            allow_scripts: false,
        };
        for prop in &object.properties {
            let key = key(prop);
            if !ENTRY_FIELDS.contains(&key.as_str()) {
                return Err(self.error(
                    prop.name.start(),
                    format!(
                        "unknown field \"{}\" in {what}; the fields are \"source\", \"ref\", \"subdir\", \"enabled\", \"prepare\" and \"allow_scripts\"",
                        crate::output::printable(&key)
                    ),
                ));
            }
            let field = format!("\"{key}\" of \"{}\"", crate::output::printable(name));
            match key.as_str() {
                "source" => source = Some((self.string(&prop.value, &field)?, prop.value.start())),
                "ref" => entry.git_ref = self.optional_string(&prop.value, &field)?,
                "subdir" => entry.subdir = self.optional_string(&prop.value, &field)?,
                "prepare" => entry.prepare = self.boolean(&prop.value, &field)?,
                "allow_scripts" => entry.allow_scripts = self.boolean(&prop.value, &field)?,
                _ => entry.enabled = self.boolean(&prop.value, &field)?,
            }
        }
        match source {
            Some((s, at)) if !s.trim().is_empty() => {
                crate::source::Source::parse(&s)
                    .check_controls()
                    .map_err(|why| {
                        self.error(
                            at,
                            format!(
                                "\"source\" of \"{}\": {why}",
                                crate::output::printable(name)
                            ),
                        )
                    })?;
                entry.source = s;
            }
            Some(_) => {
                return Err(self.error(
                    value.start(),
                    format!("{what} has an empty \"source\"; give a folder or a git URL"),
                ));
            }
            None => {
                return Err(self.error(
                    value.start(),
                    format!("{what} has no \"source\"; give a folder or a git URL"),
                ));
            }
        }
        Ok(entry)
    }
}

/// A property's key.
fn key(prop: &ast::ObjectProp) -> String {
    prop.name.as_str().to_string()
}

/// What a JSON value is, for messages.
fn kind(value: &ast::Value) -> &'static str {
    match value {
        ast::Value::StringLit(_) => "a string",
        ast::Value::NumberLit(_) => "a number",
        ast::Value::BooleanLit(_) => "a boolean",
        ast::Value::Object(_) => "an object",
        ast::Value::Array(_) => "an array",
        ast::Value::NullKeyword(_) => "null",
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn position_of(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let last_line = before.rsplit('\n').next().unwrap_or(before);
    (line, last_line.chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ProjectFile, String> {
        ProjectFile::parse(text, Path::new(".zot/extensions.json")).map_err(|e| e.to_string())
    }

    #[test]
    fn entries_parse_with_defaults() {
        let file = parse(
            r#"{"$schema": "x", "extensions": {
                "clock": {"source": "https://e.com/c.git", "ref": "v1"},
                "hello": {"source": "./h", "enabled": false, "subdir": null}
            }}"#,
        )
        .unwrap();
        assert_eq!(file.schema.as_deref(), Some("x"));
        let clock = &file.extensions["clock"];
        assert_eq!(clock.git_ref.as_deref(), Some("v1"));
        assert!(clock.enabled);
        assert!(!file.extensions["hello"].enabled);
        assert_eq!(file.extensions["hello"].subdir, None);
    }

    #[test]
    fn unknown_fields_and_wrong_types_name_line_and_column() {
        let err =
            parse("{\n  \"extensions\": {\n    \"a\": {\"source\": \"./a\", \"sorce\": 1}\n  }\n}")
                .unwrap_err();
        assert!(
            err.starts_with(".zot/extensions.json:3:28: unknown field \"sorce\""),
            "{err}"
        );
        let err = parse("{\"extensions\": {\"a\": {\"source\": \"./a\", \"enabled\": \"no\"}}}")
            .unwrap_err();
        assert!(
            err.contains(":1:51: \"enabled\" of \"a\" must be true or false, found a string"),
            "{err}"
        );
        let err = parse("{\"extensions\": [], \"x\": 1}").unwrap_err();
        assert!(
            err.contains(":1:16: \"extensions\" must be an object"),
            "{err}"
        );
        let err = parse("{\"extensions\": {}, \"x\": 1}").unwrap_err();
        assert!(err.contains(":1:20: unknown field \"x\""), "{err}");
    }

    #[test]
    fn syntax_errors_missing_source_and_bad_names_are_refused() {
        assert!(
            parse("{\"extensions\": {},}")
                .unwrap_err()
                .contains("invalid JSON")
        );
        assert!(
            parse("{}")
                .unwrap_err()
                .contains("missing field \"extensions\"")
        );
        assert!(
            parse("{\"extensions\": {\"a\": {}}}")
                .unwrap_err()
                .contains("has no \"source\"")
        );
        assert!(
            parse("{\"extensions\": {\"../x\": {\"source\": \"./a\"}}}")
                .unwrap_err()
                .contains(":1:17:")
        );
    }

    #[test]
    fn text_round_trips_sorted_with_enabled_only_when_false() {
        let file = parse(
            r#"{"extensions": {"b": {"source": "./b", "enabled": false}, "a": {"source": "./a", "enabled": true}}}"#,
        )
        .unwrap();
        let text = file.to_text();
        assert_eq!(
            text,
            "{\n  \"extensions\": {\n    \"a\": {\n      \"source\": \"./a\"\n    },\n    \"b\": {\n      \"source\": \"./b\",\n      \"enabled\": false\n    }\n  }\n}\n"
        );
        assert_eq!(parse(&text).unwrap(), file);
    }

    /// Every field the schema names is one the parser reads, and the other way round.
    #[test]
    fn the_schema_names_the_parsers_fields() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../schema/extensions.schema.json")).unwrap();
        let names = |v: &serde_json::Value| {
            let mut keys: Vec<String> = v["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            keys.sort();
            keys
        };
        let sorted = |fields: &[&str]| {
            let mut v: Vec<String> = fields.iter().map(|f| (*f).to_string()).collect();
            v.sort();
            v
        };
        assert_eq!(names(&schema), sorted(&TOP_FIELDS));
        let entry = &schema["properties"]["extensions"]["additionalProperties"];
        assert_eq!(names(entry), sorted(&ENTRY_FIELDS));
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(entry["additionalProperties"], false);
        // Each field with a value of its schema type parses.
        let all = r#"{"$schema": "s", "extensions": {"a": {"source": "./a", "ref": "r", "subdir": "d", "enabled": false}}}"#;
        let file = parse(all).unwrap();
        assert_eq!(file.extensions["a"].subdir.as_deref(), Some("d"));
    }

    #[test]
    fn save_is_atomic_and_creates_the_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(".zot").join(FILE);
        let file = ProjectFile::default();
        file.save(&path).unwrap();
        file.save(&path).unwrap();
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file is left");
        assert_eq!(ProjectFile::load(&path).unwrap(), Some(file));
    }

    #[test]
    fn a_write_deletes_what_a_killed_write_left() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(FILE);
        std::fs::write(tmp.path().join(".extensions.json.tmp-1"), "half").unwrap();
        std::fs::create_dir(tmp.path().join(".extensions.json.dir")).unwrap();
        ProjectFile::default().save(&path).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [".extensions.json.dir", FILE]);
    }

    #[test]
    fn a_source_from_a_subfolder_is_kept_relative_to_the_root() {
        let root = Path::new("/p");
        assert_eq!(
            relative_to(root, Path::new("/p/tools/../tools/x")),
            "./tools/x"
        );
        assert_eq!(relative_to(root, Path::new("/p/sub/./x")), "./sub/x");
        assert_eq!(relative_to(root, Path::new("/q/x")), "../q/x");
        assert_eq!(relative_to(root, Path::new("/p")), ".");
    }

    #[test]
    fn relative_sources_start_at_the_project_root() {
        let layout = Layout::new("/home/z".into(), Path::new("/p"));
        let at = Where::of(&layout, Scope::Project);
        assert_eq!(at.resolve("./tools/h"), "/p/./tools/h");
        assert_eq!(at.resolve("../r.git"), "/p/../r.git");
        assert_eq!(at.resolve("https://e.com/r.git"), "https://e.com/r.git");
        assert_eq!(at.resolve("/abs"), "/abs");
        let global = Where::of(&layout, Scope::Global);
        assert_eq!(global.resolve("h"), "/home/z/h");
    }
}
