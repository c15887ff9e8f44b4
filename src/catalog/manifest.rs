//! `extension.json`: parsing the way zot decodes it, field validation with line:column
//! positions, and format-preserving atomic edits of `enabled`.
//!
//! zot (0.1.62, `internal/agent/extensions/manager.go`, `loadOne`) reads the manifest with
//! Go's `json.Unmarshal` into a struct whose fields are tagged `name`, `version`, `exec`,
//! `args`, `language`, `enabled` (a `*bool`) and `description`. Go's `encoding/json`
//! (`decode.go`, `object`) walks the object's keys in order and, for each key, picks the field
//! whose name matches exactly, else one that matches case-insensitively (Unicode simple
//! folding: `ſ` is an `s`, the Kelvin sign `K` a `k`); it then stores the value into that
//! field. So every key spelled like a field in any case sets it, and of duplicate or
//! case-variant keys the LAST one in the text wins (exact spelling is preferred only among
//! struct fields, never among keys). `null` leaves a string field as it was and resets a
//! slice or pointer (`args`, `enabled`). Unknown keys are ignored. A value of the wrong type
//! fails the decode (even when a later key would override it). zot then requires a
//! non-empty `name` and `exec` and uses the name as given (its log is `ext-<name>.log`).

mod keys;
mod plain;

pub(crate) use keys::FIELDS;
pub use keys::key_matches;

use std::ffi::OsStr;
use std::fmt;
use std::fs;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};

use jsonc_parser::ast;
use jsonc_parser::common::Ranged;
use rustix::fs::FileType;
use serde::Serialize;
use serde_json::Value;

use crate::fsx::Folder;
use crate::fsx::bounded::{self, ReadError};
use crate::output::printable;

/// The manifest's file name, at the top of every extension folder.
pub const FILE: &str = "extension.json";

/// Longest extension name accepted, in bytes: a folder name may have 255, and zot's log
/// file `ext-<name>.log` adds 8 bytes, which must still fit in 255.
pub(crate) const MAX_NAME_LEN: usize = 255 - "ext-.log".len();

/// A validated manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Manifest {
    pub name: String,
    pub version: Option<String>,
    pub exec: String,
    pub args: Vec<String>,
    pub language: Option<String>,
    pub description: Option<String>,
    pub enabled: bool,
    /// Keys that zot reads but that are not spelled as documented, one note each.
    #[serde(skip)]
    pub notes: Vec<String>,
}

/// Why a manifest was rejected, with the file and, where known, line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    pub path: PathBuf,
    pub position: Option<(usize, usize)>,
    pub message: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some((line, column)) => {
                write!(
                    f,
                    "{}:{line}:{column}: {}",
                    self.path.display(),
                    self.message
                )
            }
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for ManifestError {}

impl ManifestError {
    /// An error about the whole file, at no position.
    pub(crate) fn new(path: impl Into<PathBuf>, message: impl Into<String>) -> ManifestError {
        ManifestError {
            path: path.into(),
            position: None,
            message: message.into(),
        }
    }

    /// Whether the folder has no manifest at all (as opposed to one that cannot be used).
    pub(crate) fn is_missing(&self) -> bool {
        self.message == unreadable(&ReadError::Missing)
    }

    /// What to change, at the position the error carries: `<path>:4:12: "exec" must be a
    /// string`, `add "name" (a non-empty string) to the top-level object of <path>`.
    pub(crate) fn fix(&self) -> String {
        let file = self.path.display();
        let message = self.message.as_str();
        if let Some(field) = message.strip_prefix("missing required field ") {
            return format!("add {field} to the top-level object of {file}");
        }
        if message.starts_with("broken link:") {
            let name = self.path.file_name().unwrap_or_default().to_string_lossy();
            return format!(
                "restore the folder it points to, or remove the link with zot ext remove {}",
                crate::output::sh_quote(&name)
            );
        }
        if self.is_missing() {
            return format!(
                "create {file}: a JSON object with at least \"name\" and \"exec\" (zot ext new writes one)"
            );
        }
        let rule = message.split(", found ").next().unwrap_or(message);
        let Some((line, column)) = self.position else {
            let advice = rule.split_once("; ").map_or(rule, |(_, advice)| advice);
            return format!("{file}: {advice}");
        };
        let rule = if let Some(syntax) = rule.strip_prefix("invalid JSON: ") {
            format!("correct the JSON syntax there ({syntax})")
        } else if rule.starts_with("expected a JSON object") {
            "make the whole file one JSON object, such as {\"name\": \"...\", \"exec\": \"...\"}"
                .to_string()
        } else {
            rule.to_string()
        };
        format!("{file}:{line}:{column}: {rule}")
    }
}

/// Checks that `name` can be used as one folder name in an extensions root (and in the log
/// file name `ext-<name>.log`): not empty, not `.` or `..`, no `/`, `\\`, NUL or other
/// control character (see [`is_control`]), at most [`MAX_NAME_LEN`] bytes. Spaces and any other letters are fine.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name == "." || name == ".." {
        return Err(format!("\"{name}\" is not a usable directory name"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "is {} bytes long; at most {MAX_NAME_LEN} are allowed (the log file ext-<name>.log must fit in a file name)",
            name.len()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|&c| matches!(c, '/' | '\\') || is_control(c))
    {
        return Err(format!(
            "contains {bad:?}; a name must be one folder name: no '/', '\\' or control characters"
        ));
    }
    Ok(())
}

/// A control character: C0, DEL and C1, and the invisible bidirectional controls that make a
/// name read differently from what it is (U+061C, U+200E, U+200F, U+202A-U+202E,
/// U+2066-U+2069).
pub(crate) fn is_control(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The largest manifest zot reads; real ones are a few hundred bytes.
pub(crate) const MAX_SIZE: u64 = 1 << 20;

/// Reads and validates `<dir>/extension.json`.
pub(crate) fn read(dir: &Path) -> Result<Manifest, ManifestError> {
    let path = dir.join(FILE);
    let text = load(&path)?;
    parse(&text, &path)
}

/// The text of the manifest at `path`, the one way zot reads a manifest: a symbolic link is
/// followed, but a named pipe, socket or device is refused without waiting on it, a file
/// over [`MAX_SIZE`] is refused without reading it, and the text must be UTF-8 without BOM.
pub(crate) fn load(path: &Path) -> Result<String, ManifestError> {
    let fail = |message: String| ManifestError::new(path, message);
    let bytes = bounded::read(path, MAX_SIZE).map_err(|e| fail(unreadable(&e)))?;
    decode(&bytes, path)?;
    String::from_utf8(bytes).map_err(|_| fail("is not valid UTF-8; save it as UTF-8 JSON".into()))
}

/// [`read`] of the extension folder `dir_name` of the root open as `root` (`dir` is its
/// path, for messages), read through `buf`: one manifest at a time for a whole root.
pub(crate) fn read_in(
    root: BorrowedFd<'_>,
    dir_name: &OsStr,
    dir: &Path,
    buf: &mut Vec<u8>,
) -> Result<Manifest, ManifestError> {
    bounded::read_in(root, &Path::new(dir_name).join(FILE), MAX_SIZE, buf)
        .map_err(|e| ManifestError::new(dir.join(FILE), unreadable(&e)))?;
    let quick = std::str::from_utf8(buf)
        .ok()
        .filter(|text| !text.starts_with('\u{feff}'))
        .and_then(parse_quickly);
    if let Some(manifest) = quick {
        return Ok(manifest);
    }
    let path = dir.join(FILE);
    parse(decode(buf, &path)?, &path)
}

/// Manifest bytes as text: UTF-8 without BOM.
fn decode<'a>(bytes: &'a [u8], path: &Path) -> Result<&'a str, ManifestError> {
    let fail = |message: &str| ManifestError::new(path, message);
    if bytes.starts_with(b"\xef\xbb\xbf") {
        return Err(fail(
            "starts with a byte order mark (BOM), which zot cannot read; save it as UTF-8 without BOM",
        ));
    }
    std::str::from_utf8(bytes).map_err(|_| fail("is not valid UTF-8; save it as UTF-8 JSON"))
}

/// Why a manifest could not be read, said for a manifest.
fn unreadable(e: &ReadError) -> String {
    match e {
        ReadError::Missing => {
            format!("not found; an extension needs {FILE} at the top of its folder")
        }
        ReadError::TooLarge { size, .. } => format!(
            "is {} ({size} bytes); a manifest may be at most {}",
            bounded::human_size(*size),
            bounded::human_size(MAX_SIZE)
        ),
        ReadError::Directory | ReadError::Special(_) => {
            format!("{e}; the manifest must be a regular file (or a link to one)")
        }
        ReadError::Io(io) => format!("cannot be read: {io}"),
    }
}

/// Parses and validates manifest text; `path` is only used in messages. A manifest with
/// nothing to note or fix is read the quick way ([`plain`]), any other in full.
pub fn parse(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
    match parse_quickly(text) {
        Some(manifest) => Ok(manifest),
        None => parse_fully(text, path),
    }
}

/// The manifest `text` holds when the quick reading ([`plain`]) takes it and its `name` and
/// `exec` are usable: what [`parse_fully`] gives when it has nothing to note or fix.
pub(super) fn parse_quickly(text: &str) -> Option<Manifest> {
    let fields = plain::decode(text)?;
    let name = fields
        .name
        .filter(|n| !n.trim().is_empty() && check_name(n).is_ok())?;
    let exec = fields.exec.filter(|e| !e.trim().is_empty())?;
    Some(Manifest {
        name,
        version: fields.version,
        exec,
        args: fields.args,
        language: fields.language,
        description: fields.description,
        enabled: fields.enabled,
        notes: Vec::new(),
    })
}

/// [`parse`] keeping every top-level value, for the notes and for errors with positions.
pub(super) fn parse_fully(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
    let value: Entries = serde_json::from_str(text).map_err(|e| ManifestError {
        path: path.to_path_buf(),
        position: (e.line() > 0).then(|| (e.line(), e.column().max(1))),
        message: format!("invalid JSON: {}", strip_position(&e.to_string())),
    })?;
    let Entries::Object(entries) = value else {
        let Entries::Other(value) = value else {
            unreachable!()
        };
        return Err(ManifestError {
            path: path.to_path_buf(),
            position: Some(position_of(text, 0)),
            message: format!(
                "expected a JSON object at the top level, found {}",
                kind(&value)
            ),
        });
    };
    Fields {
        entries: &entries,
        offsets: value_offsets(text),
        text,
        path,
    }
    .manifest()
}

/// A top-level JSON value: an object as its keys and values in order, duplicates kept (Go
/// decodes each of them in turn), or any other value.
enum Entries {
    Object(Vec<(String, Value)>),
    Other(Value),
}

impl<'de> serde::Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Entries;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Entries, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, Value>()? {
                    entries.push(entry);
                }
                Ok(Entries::Object(entries))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Entries, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Entries::Other(Value::Array(Vec::new())))
            }
            fn visit_bool<E>(self, b: bool) -> Result<Entries, E> {
                Ok(Entries::Other(Value::Bool(b)))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Entries, E> {
                Ok(Entries::Other(Value::from(n)))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Entries, E> {
                Ok(Entries::Other(Value::from(n)))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Entries, E> {
                Ok(Entries::Other(Value::from(n)))
            }
            fn visit_str<E>(self, _: &str) -> Result<Entries, E> {
                Ok(Entries::Other(Value::String(String::new())))
            }
            fn visit_unit<E>(self) -> Result<Entries, E> {
                Ok(Entries::Other(Value::Null))
            }
        }
        d.deserialize_any(Visit)
    }
}

fn strip_position(message: &str) -> &str {
    message
        .rsplit_once(" at line ")
        .map_or(message, |(message, _)| message)
}

/// Field-by-field validation of a parsed top-level object.
struct Fields<'a> {
    entries: &'a [(String, Value)],
    /// Byte offset of each top-level value, in the same order as `entries`.
    offsets: Vec<usize>,
    text: &'a str,
    path: &'a Path,
}

impl Fields<'_> {
    fn manifest(&self) -> Result<Manifest, ManifestError> {
        let name = self.required_string("name")?;
        check_name(&name).map_err(|why| self.error("name", format!("\"name\" {why}")))?;
        Ok(Manifest {
            exec: self.required_string("exec")?,
            name,
            version: self.optional_string("version")?,
            args: self.args()?,
            language: self.optional_string("language")?,
            description: self.optional_string("description")?,
            enabled: self.enabled()?,
            notes: self.notes(),
        })
    }

    /// The values of the keys that set `field`, in order, with their index.
    fn values(&self, field: &str) -> impl Iterator<Item = (usize, &Value)> {
        self.entries
            .iter()
            .enumerate()
            .filter(move |(_, (key, _))| key_matches(key, field))
            .map(|(i, (_, value))| (i, value))
    }

    fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = Vec::new();
        for (key, _) in self.entries {
            if let Some(field) = FIELDS.iter().find(|f| key_matches(key, f) && key != *f) {
                let note = format!(
                    "{FILE}: key {} works, but the documented spelling is \"{field}\"",
                    printable(&serde_json::to_string(key).unwrap_or_default())
                );
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
        }
        notes
    }

    fn error_at(&self, index: usize, message: String) -> ManifestError {
        ManifestError {
            path: self.path.to_path_buf(),
            position: self
                .offsets
                .get(index)
                .map(|&at| position_of(self.text, at)),
            message,
        }
    }

    /// An error about `field`, at the last key that sets it.
    fn error(&self, field: &str, message: String) -> ManifestError {
        match self.values(field).last() {
            Some((i, _)) => self.error_at(i, message),
            None => ManifestError::new(self.path, message),
        }
    }

    /// The string Go would leave in a string field: each string value replaces the one
    /// before, `null` keeps it, anything else is an error.
    fn string(&self, field: &str) -> Result<Option<String>, ManifestError> {
        let mut out = None;
        for (i, value) in self.values(field) {
            match value {
                Value::Null => {}
                Value::String(s) => out = Some(s.clone()),
                other => return Err(self.wrong_type(i, field, "a string", other)),
            }
        }
        Ok(out)
    }

    fn required_string(&self, field: &str) -> Result<String, ManifestError> {
        match self.string(field)? {
            None => Err(ManifestError::new(
                self.path,
                format!("missing required field \"{field}\" (a non-empty string)"),
            )),
            Some(s) if s.trim().is_empty() => {
                Err(self.error(field, format!("\"{field}\" must not be empty")))
            }
            Some(s) => Ok(s),
        }
    }

    fn optional_string(&self, field: &str) -> Result<Option<String>, ManifestError> {
        self.string(field)
    }

    fn args(&self) -> Result<Vec<String>, ManifestError> {
        let mut out = Vec::new();
        for (at, value) in self.values("args") {
            out = match value {
                Value::Null => Vec::new(),
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| match item {
                        Value::String(s) => Ok(s.clone()),
                        other => Err(self.error_at(
                            at,
                            format!("\"args\"[{i}] must be a string, found {}", kind(other)),
                        )),
                    })
                    .collect::<Result<_, _>>()?,
                other => return Err(self.wrong_type(at, "args", "an array of strings", other)),
            };
        }
        Ok(out)
    }

    fn enabled(&self) -> Result<bool, ManifestError> {
        let mut out = true;
        for (i, value) in self.values("enabled") {
            out = match value {
                Value::Null => true,
                Value::Bool(b) => *b,
                other => return Err(self.wrong_type(i, "enabled", "true or false", other)),
            };
        }
        Ok(out)
    }

    fn wrong_type(
        &self,
        index: usize,
        field: &str,
        expected: &str,
        found: &Value,
    ) -> ManifestError {
        self.error_at(
            index,
            format!("\"{field}\" must be {expected}, found {}", kind(found)),
        )
    }
}

fn kind(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// Byte offset of each top-level value, in order (empty when `text` is no object).
fn value_offsets(text: &str) -> Vec<usize> {
    let Ok(parsed) = jsonc_parser::parse_to_ast(
        text,
        &jsonc_parser::CollectOptions::default(),
        &jsonc_parser::ParseOptions::default(),
    ) else {
        return Vec::new();
    };
    let Some(ast::Value::Object(object)) = parsed.value else {
        return Vec::new();
    };
    object.properties.iter().map(|p| p.value.start()).collect()
}

/// 1-based line and column (in characters) of a byte offset.
fn position_of(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let last_line = before.rsplit('\n').next().unwrap_or(before);
    (line, last_line.chars().count() + 1)
}

/// Longest manifest that `enable`/`disable` rewrite.
const MAX_REWRITE: u64 = 1 << 20;

/// The prefix of the temporary file a rewrite renames over the manifest.
const TEMP_PREFIX: &str = ".extension.json.";

/// Sets `enabled` in `<dir>/extension.json`, keeping everything else byte for byte.
/// Returns whether the file changed. The manifest must be a regular file: a symbolic link
/// is refused, so nothing is ever written through one. `scratch` is the store's staging
/// folder, where the temporary file goes when it can (see [`write_atomically`]).
pub(crate) fn set_enabled(dir: &Path, enabled: bool, scratch: &Folder) -> anyhow::Result<bool> {
    // A linked extension's manifest is its working copy's.
    let dir = fs::canonicalize(dir).map_err(|e| {
        anyhow::anyhow!("cannot open {}: {e}", printable(&dir.display().to_string()))
    })?;
    let folder = Folder::open_path(&dir).map_err(|e| {
        anyhow::anyhow!("cannot open {}: {e}", printable(&dir.display().to_string()))
    })?;
    folder.clear_leftovers(TEMP_PREFIX);
    let path = dir.join(FILE);
    let (text, mode) = read_for_rewrite(&folder, &path)?;
    let manifest = parse(&text, &path)?;
    if manifest.enabled == enabled {
        return Ok(false);
    }
    let shown = printable(&path.display().to_string());
    let edited = with_enabled(&text, enabled)
        .ok_or_else(|| anyhow::anyhow!("{shown}: cannot edit \"enabled\""))?;
    write_atomically(&folder, FILE, edited.as_bytes(), mode, scratch)
        .map_err(|e| anyhow::anyhow!("cannot write {shown}: {e}"))?;
    Ok(true)
}

/// The manifest's text and permission bits, read only if it is a regular file of at most
/// [`MAX_REWRITE`] bytes (never through a link, never blocking on a special file).
fn read_for_rewrite(folder: &Folder, path: &Path) -> anyhow::Result<(String, u32)> {
    let shown = printable(&path.display().to_string());
    let Some(stat) = folder.stat(FILE)? else {
        anyhow::bail!("{shown}: not found; an extension needs {FILE} at the top of its folder")
    };
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        FileType::Symlink => anyhow::bail!(
            "{shown} is a symbolic link; zot ext never writes through links: replace it with a copy of the file it points to"
        ),
        _ => anyhow::bail!(
            "{shown} is {}, not a regular file; replace it with a regular file",
            crate::fsx::kind_of(&stat)
        ),
    }
    let bytes = folder
        .read_file(FILE, MAX_REWRITE)
        .map_err(|e| anyhow::anyhow!("{shown} cannot be read: {e}"))?
        .ok_or_else(|| anyhow::anyhow!("{shown}: not found"))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{shown} is not valid UTF-8; save it as UTF-8 JSON"))?;
    // `st_mode` is narrower than u32 on macOS.
    #[allow(clippy::unnecessary_cast)]
    let mode = stat.st_mode as u32 & 0o7777;
    Ok((text, mode))
}

/// `text` with every top-level `enabled` set to `enabled` (appended when there is none),
/// every other byte kept; `None` when `text` is not a manifest object that can be edited so.
pub fn with_enabled(text: &str, enabled: bool) -> Option<String> {
    use jsonc_parser::cst::CstRootNode;
    let root = CstRootNode::parse(text, &jsonc_parser::ParseOptions::default()).ok()?;
    let object = root.object_value()?;
    // Every key zot reads as "enabled" ("Enabled", "ENABLED" too): Go keeps the last of
    // them, so all change, each keeping its spelling.
    let existing: Vec<_> = object
        .properties()
        .into_iter()
        .filter(|p| {
            p.name()
                .and_then(|n| n.decoded_value().ok())
                .is_some_and(|key| key_matches(&key, "enabled"))
        })
        .collect();
    let edited = if existing.is_empty() {
        append_enabled(text, enabled)?
    } else {
        for prop in existing {
            prop.set_value(jsonc_parser::json!(enabled));
        }
        root.to_string()
    };
    // Never write a file that would not say what was asked.
    let check = parse(&edited, Path::new(FILE)).ok()?;
    (check.enabled == enabled).then_some(edited)
}

/// `text` with `"enabled": <value>` inserted right after the last top-level value, laid
/// out like the last member (the same whitespace before the key and around the colon), so
/// that nothing already there moves or changes.
fn append_enabled(text: &str, enabled: bool) -> Option<String> {
    let parsed = jsonc_parser::parse_to_ast(
        text,
        &jsonc_parser::CollectOptions::default(),
        &jsonc_parser::ParseOptions::default(),
    )
    .ok()?;
    let Some(ast::Value::Object(object)) = parsed.value else {
        return None;
    };
    let last = object.properties.last()?;
    let key_start = ast::Node::from(&last.name).start();
    let key_end = ast::Node::from(&last.name).end();
    let (value_start, value_end) = (last.value.start(), last.value.end());
    // Offsets of the parsed text: on character boundaries, so `get` always answers.
    let indent_start = text
        .get(..key_start)?
        .trim_end_matches([' ', '\t', '\n', '\r'])
        .len();
    let indent = text.get(indent_start..key_start)?;
    let colon = text.get(key_end..value_start)?;
    let (head, tail) = text.split_at_checked(value_end)?;
    Some(format!("{head},{indent}\"enabled\"{colon}{enabled}{tail}"))
}

/// Replaces `name` in `folder` with `contents` (permission bits `mode`): a flushed
/// temporary file, renamed over it, then the folder is flushed. The temporary file is
/// written in `scratch` (the store's staging folder, which the next command empties after
/// a kill) when it is on the same file system; otherwise beside the file, where the next
/// rewrite deletes it after a kill.
pub(crate) fn write_atomically(
    folder: &Folder,
    name: &str,
    contents: &[u8],
    mode: u32,
    scratch: &Folder,
) -> std::io::Result<()> {
    let same_fs = rustix::fs::fstat(folder)?.st_dev == rustix::fs::fstat(scratch)?.st_dev;
    if same_fs {
        match write_via(scratch, folder, name, contents, mode) {
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error()) => {}
            done => return done,
        }
    }
    write_via(folder, folder, name, contents, mode)
}

fn write_via(
    temp_home: &Folder,
    folder: &Folder,
    name: &str,
    contents: &[u8],
    mode: u32,
) -> std::io::Result<()> {
    let temp = crate::fsx::unique_name(TEMP_PREFIX);
    temp_home.write_new(&temp, contents, mode)?;
    crate::fsx::crashpoint::hit("toggle.temp");
    temp_home.rename_to(&temp, folder, name).inspect_err(|_| {
        let _ = temp_home.unlink(&temp);
    })?;
    crate::fsx::crashpoint::hit("toggle.after");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<Manifest, String> {
        parse(text, Path::new("extension.json")).map_err(|e| e.to_string())
    }

    #[test]
    fn minimal_manifest_gets_defaults() {
        let m = parse_str(r#"{"name":"a","exec":"./a"}"#).unwrap();
        assert_eq!(m.name, "a");
        assert!(m.enabled);
        assert!(m.args.is_empty());
        assert_eq!(m.version, None);
    }

    #[test]
    fn full_manifest_parses() {
        let m = parse_str(
            r#"{"name":"weather","version":"1.0.0","exec":"./weather","args":["--mode","daemon"],
                "language":"go","description":"d","enabled":false,"extra":{"x":1}}"#,
        )
        .unwrap();
        assert_eq!(m.args, ["--mode", "daemon"]);
        assert!(!m.enabled);
        assert_eq!(m.language.as_deref(), Some("go"));
    }

    #[test]
    fn wrong_type_names_line_column_and_field() {
        let err = parse_str("{\n  \"name\": \"a\",\n  \"exec\": 5\n}").unwrap_err();
        assert_eq!(
            err,
            "extension.json:3:11: \"exec\" must be a string, found the number 5"
        );
    }

    fn fix_of(text: &str) -> String {
        parse(text, Path::new("extension.json")).unwrap_err().fix()
    }

    #[test]
    fn fixes_name_the_place_and_what_to_change() {
        assert_eq!(
            fix_of("{\n  \"name\": \"a\",\n  \"exec\": 5\n}"),
            "extension.json:3:11: \"exec\" must be a string"
        );
        assert_eq!(
            fix_of(r#"{"name":"a"}"#),
            "add \"exec\" (a non-empty string) to the top-level object of extension.json"
        );
        assert!(
            fix_of("{\n \"name\": \"a\",,\n}").starts_with("extension.json:2:"),
            "{}",
            fix_of("{\n \"name\": \"a\",,\n}")
        );
        assert!(
            fix_of("[1]").starts_with("extension.json:1:1: make the whole file one JSON object")
        );
        let missing = ManifestError {
            path: "x/extension.json".into(),
            position: None,
            message: unreadable(&ReadError::Missing),
        };
        assert!(
            missing.fix().starts_with("create x/extension.json: "),
            "{}",
            missing.fix()
        );
    }

    #[test]
    fn args_element_error_names_index() {
        let err = parse_str(r#"{"name":"a","exec":"x","args":["ok",1]}"#).unwrap_err();
        assert!(err.contains("\"args\"[1] must be a string"), "{err}");
    }

    #[test]
    fn syntax_error_has_position() {
        let err = parse_str("{\n \"name\": \"a\",,\n}").unwrap_err();
        assert!(err.starts_with("extension.json:2:"), "{err}");
        assert!(err.contains("invalid JSON"), "{err}");
        assert!(!err.contains(" at line "), "{err}");
    }

    #[test]
    fn top_level_must_be_object() {
        let err = parse_str("[1]").unwrap_err();
        assert!(err.contains("expected a JSON object"), "{err}");
    }

    #[test]
    fn missing_and_empty_required_fields() {
        assert!(
            parse_str(r#"{"exec":"x"}"#)
                .unwrap_err()
                .contains("missing required field \"name\"")
        );
        assert!(
            parse_str(r#"{"name":"a"}"#)
                .unwrap_err()
                .contains("missing required field \"exec\"")
        );
        assert!(
            parse_str(r#"{"name":"","exec":"x"}"#)
                .unwrap_err()
                .contains("\"name\" must not be empty")
        );
        assert!(
            parse_str(r#"{"name":"a","exec":" "}"#)
                .unwrap_err()
                .contains("\"exec\" must not be empty")
        );
    }

    #[test]
    fn unsafe_names_are_rejected() {
        for name in ["../x", "a/b", ".", "..", "a\nb", "a\\b", "a\u{7f}b"] {
            let text = serde_json::json!({"name": name, "exec": "x"}).to_string();
            assert!(parse_str(&text).is_err(), "{name} accepted");
        }
        assert!(
            check_name(&"a".repeat(256))
                .unwrap_err()
                .contains("256 bytes")
        );
        assert!(check_name(&"a".repeat(248)).is_err());
        assert!(check_name(&"a".repeat(247)).is_ok());
        assert!(check_name("a\0b").is_err());
        for name in ["my-ext_1.2", "my ext", "wetter-größe", "天気", " a"] {
            assert_eq!(check_name(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn keys_match_like_go_case_insensitively_and_the_last_one_wins() {
        let m = parse_str(
            r#"{"Name":"a","EXEC":"./x","name":"b","ENABLED":false,"Args":["1"],"other":1}"#,
        )
        .unwrap();
        assert_eq!((m.name.as_str(), m.exec.as_str()), ("b", "./x"));
        assert!(!m.enabled);
        assert_eq!(m.args, ["1"]);
        assert_eq!(
            m.notes,
            [
                "extension.json: key \"Name\" works, but the documented spelling is \"name\"",
                "extension.json: key \"EXEC\" works, but the documented spelling is \"exec\"",
                "extension.json: key \"ENABLED\" works, but the documented spelling is \"enabled\"",
                "extension.json: key \"Args\" works, but the documented spelling is \"args\"",
            ]
        );
        // Go folds ſ with s and the Kelvin sign with k; null keeps a string as it was.
        let m = parse_str("{\"name\":\"a\",\"exec\":\"x\",\"deſcription\":\"d\",\"Name\":null}")
            .unwrap();
        assert_eq!(
            (m.name.as_str(), m.description.as_deref()),
            ("a", Some("d"))
        );
        assert!(
            parse_str(r#"{"name":"a","exec":"x","ENABLED":false,"enabled":null}"#)
                .unwrap()
                .enabled
        );
        // A wrong type fails even when a later key would override it.
        let err = parse_str("{\"name\":\"a\",\"Exec\":1,\n\"exec\":\"x\"}").unwrap_err();
        assert_eq!(
            err,
            "extension.json:1:20: \"exec\" must be a string, found the number 1"
        );
        assert!(
            parse_str(r#"{"nam":"a","exec":"x"}"#)
                .unwrap_err()
                .contains("missing required field \"name\"")
        );
    }

    #[test]
    fn duplicate_key_position_points_at_the_last() {
        let err = parse_str("{\"name\":\"a\",\"exec\":\"x\",\n\"exec\":true}").unwrap_err();
        assert!(err.starts_with("extension.json:2:8:"), "{err}");
    }

    #[test]
    fn enabled_edit_keeps_formatting_and_order() {
        let text = "{\n    \"zeta\": 1,\n    \"name\": \"a\",\n    \"enabled\": true,\n    \"exec\": \"x\"\n}\n";
        let out = with_enabled(text, false).unwrap();
        assert_eq!(out, text.replace("\"enabled\": true", "\"enabled\": false"));
    }

    #[test]
    fn enabled_edit_changes_the_key_go_reads_in_its_spelling() {
        let text = "{\"name\":\"d\",\"Enabled\":true,\"exec\":\"./x\",\"ENABLED\":true}";
        let out = with_enabled(text, false).unwrap();
        assert_eq!(out, text.replace("true", "false"));
        assert!(!parse(&out, Path::new(FILE)).unwrap().enabled);
    }

    #[test]
    fn enabled_edit_changes_every_duplicate_key() {
        let text = "{\"name\":\"d\",\"enabled\":true,\"exec\":\"./x\",\"enabled\":true}";
        let out = with_enabled(text, false).unwrap();
        assert_eq!(out, text.replace("true", "false"));
        assert!(!parse(&out, Path::new(FILE)).unwrap().enabled);
    }

    #[test]
    fn byte_order_mark_is_named() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(FILE),
            b"\xef\xbb\xbf{\"name\":\"b\",\"exec\":\"x\"}",
        )
        .unwrap();
        let err = read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("byte order mark"), "{err}");
    }

    fn extension_with_leftover() -> (tempfile::TempDir, std::path::PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("x");
        fs::create_dir_all(tmp.path().join("scratch")).unwrap();
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join(FILE), "{\"name\":\"x\",\"exec\":\"./x\"}").unwrap();
        fs::write(dir.join(".extension.json.1234-killed"), "{}").unwrap();
        (tmp, dir)
    }

    #[test]
    fn a_rewrite_deletes_what_a_killed_rewrite_left_beside_the_manifest() {
        let (tmp, dir) = extension_with_leftover();
        let scratch = Folder::open_path(&tmp.path().join("scratch")).unwrap();
        assert!(set_enabled(&dir, false, &scratch).unwrap());
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, [FILE]);
        assert!(scratch.is_empty().unwrap());
        assert!(!read(&dir).unwrap().enabled);
    }

    #[test]
    fn the_fallback_beside_the_manifest_leaves_no_temporary_file() {
        let (_tmp, dir) = extension_with_leftover();
        let folder = Folder::open_path(&dir).unwrap();
        write_via(&folder, &folder, FILE, b"{}", 0o600).unwrap();
        assert_eq!(fs::read_to_string(dir.join(FILE)).unwrap(), "{}");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 2); // and the old leftover
    }

    #[test]
    fn enabled_edit_appends_without_touching_what_follows() {
        // Found by the property test: the closing "\n\n}" used to become "\n}".
        let text = "{\"name\":\"a\",\"exec\":\"x\"\n\n}";
        let out = with_enabled(text, false).unwrap();
        assert_eq!(out, "{\"name\":\"a\",\"exec\":\"x\",\"enabled\":false\n\n}");
        let text = "{ \"name\" : \"a\",\n\t\"exec\" : \"x\" }\n";
        let out = with_enabled(text, true).unwrap();
        assert_eq!(
            out,
            "{ \"name\" : \"a\",\n\t\"exec\" : \"x\",\n\t\"enabled\" : true }\n"
        );
    }

    #[test]
    fn enabled_edit_appends_when_missing() {
        let text = "{\n  \"name\": \"a\",\n  \"exec\": \"x\"\n}\n";
        let out = with_enabled(text, false).unwrap();
        assert_eq!(
            out,
            "{\n  \"name\": \"a\",\n  \"exec\": \"x\",\n  \"enabled\": false\n}\n"
        );
    }
}
