//! Everything printed: data on stdout (text, JSON, tables, raw bytes), messages, questions
//! and progress on stderr, and colour decisions. Every message goes through [`clean`]: URLs
//! are redacted and control characters escaped, so one call prints one line and no
//! credential.

use std::io::{self, IsTerminal, Write};

use anstyle::Style;
use serde::Serialize;

pub mod escape;
pub mod redact;
pub mod shell;
pub mod style;
pub mod table;

pub use escape::{clean, first_hidden, printable, terminal_text};
use redact::redact_text;
pub use shell::sh_quote;
pub use style::{BAD, BOLD, DIM, GOOD, WARN, paint};
pub use table::Cell;

/// The global output settings of one run.
#[derive(Debug, Clone)]
pub struct Output {
    pub quiet: bool,
    pub json: bool,
    color_stdout: bool,
    color_stderr: bool,
    progress: bool,
    terminal_stdout: bool,
}

/// When to colour output (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Whether to colour `stream`: `--color always` and `never` decide; `auto` leaves it to
/// anstream's rules, read from the environment: `NO_COLOR` (non-empty) never,
/// `CLICOLOR_FORCE` (non-empty, not `0`) always, `CLICOLOR=0` never, else only a terminal
/// whose `TERM` is set and not `dumb` (or with `CLICOLOR` set, or under CI).
pub fn use_color(choice: ColorChoice, stream: &impl anstream::stream::RawStream) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => anstream::AutoStream::choice(stream) != anstream::ColorChoice::Never,
    }
}

/// Whether a progress line may be redrawn in place on stderr: a terminal that understands
/// the erase-line sequence (`TERM` set and not `dumb`), and not `--quiet`.
fn live_progress(quiet: bool) -> bool {
    !quiet && io::stderr().is_terminal() && anstyle_query::term_supports_color()
}

impl Output {
    pub fn new(color: ColorChoice, quiet: bool, json: bool) -> Self {
        Output {
            quiet,
            json,
            color_stdout: use_color(color, &io::stdout()),
            color_stderr: use_color(color, &io::stderr()),
            progress: live_progress(quiet),
            terminal_stdout: io::stdout().is_terminal(),
        }
    }

    /// The settings before the command line is parsed (a shell asking for its completion
    /// script, a command line passed on to the zot agent): no colour, nothing left out.
    pub fn plain() -> Self {
        Output {
            quiet: false,
            json: false,
            color_stdout: false,
            color_stderr: false,
            progress: false,
            terminal_stdout: io::stdout().is_terminal(),
        }
    }

    /// Whether stdout is coloured.
    pub fn color(&self) -> bool {
        self.color_stdout
    }

    /// Text an extension sent, as it may go to stdout: on a terminal its control, bidi and
    /// invisible characters are escaped, newlines and tabs kept ([`terminal_text`]); into a
    /// pipe or a file it stays byte for byte as sent.
    pub fn extension_text(&self, text: &str) -> String {
        if self.terminal_stdout {
            terminal_text(text)
        } else {
            text.to_string()
        }
    }

    /// Colours `text` for stdout.
    pub fn paint(&self, style: Style, text: &str) -> String {
        paint(self.color_stdout, style, text)
    }

    /// Colours `text` for stderr.
    pub fn paint_err(&self, style: Style, text: &str) -> String {
        paint(self.color_stderr, style, text)
    }

    /// One line of human output on stdout, unless `--quiet` or `--json` ([`clean`]ed: a
    /// newline in `message` is printed as `\n`; call once per line).
    pub fn say(&self, message: &str) -> io::Result<()> {
        if self.quiet || self.json {
            return Ok(());
        }
        writeln!(io::stdout().lock(), "{}", clean(message))
    }

    /// [`Output::say`] for a line with styled pieces: each piece is [`clean`]ed first and
    /// then painted with its style (if any), so styling is never escaped as text.
    pub fn say_styled(&self, pieces: &[(&str, Option<Style>)]) -> io::Result<()> {
        if self.quiet || self.json {
            return Ok(());
        }
        let line: String = pieces
            .iter()
            .map(|(text, style)| match style {
                Some(style) => self.paint(*style, &clean(text)),
                None => clean(text),
            })
            .collect();
        writeln!(io::stdout().lock(), "{line}")
    }

    /// A one-line hint or note on stderr, unless `--quiet` ([`clean`]ed).
    pub fn note(&self, message: &str) {
        if !self.quiet {
            let _ = writeln!(io::stderr().lock(), "{}", clean(message));
        }
    }

    /// A one-line warning on stderr, shown even with `--quiet` ([`clean`]ed).
    pub fn warn(&self, message: &str) {
        let label = self.paint_err(WARN, "warning:");
        let _ = writeln!(io::stderr().lock(), "{label} {}", clean(message));
    }

    /// A one-line failure on stderr, shown even with `--quiet` and `--json` ([`clean`]ed),
    /// for a command that goes on after it (the run still exits 1).
    pub fn fail(&self, message: &str) {
        let label = self.paint_err(BAD, "error:");
        let _ = writeln!(io::stderr().lock(), "{label} {}", clean(message));
    }

    /// One JSON document on stdout, pretty-printed: `value` (an object) with
    /// [`SCHEMA_VERSION`] as its first key and the URLs in every string redacted (JSON
    /// escapes control characters itself).
    pub fn json<T: Serialize>(&self, value: &T) -> io::Result<()> {
        let mut out = io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &document(value)?)?;
        writeln!(out)
    }

    /// A document `{"schema_version": 1, "<key>": [...]}` on stdout whose array is written
    /// item by item as [`JsonArray::push`] is given them, through one buffer: the same bytes
    /// as [`Output::json`] of the whole document, without holding it.
    pub fn json_array(&self, key: &str) -> io::Result<JsonArray> {
        let mut out = io::BufWriter::with_capacity(64 * 1024, io::stdout().lock());
        write!(out, "{{\n  \"schema_version\": {SCHEMA_VERSION},\n  ")?;
        serde_json::to_writer(&mut out, &redact_text(key))?;
        out.write_all(b": [")?;
        Ok(JsonArray {
            out,
            items: 0,
            item: Vec::new(),
        })
    }

    /// The error that ends a `--json` run, as one line of JSON on stderr:
    /// `{"schema_version": 1, "error": message, "suggestions": [names]}`, URLs redacted.
    pub fn json_error(&self, message: &str, suggestions: &[String]) {
        json_error(message, suggestions);
    }

    /// One JSON document on one line of stdout, flushed (a stream of them, such as
    /// `logs --json`): [`SCHEMA_VERSION`] first, URLs redacted, as [`Output::json`].
    pub fn json_line<T: Serialize>(&self, out: &mut impl Write, value: &T) -> io::Result<()> {
        serde_json::to_writer(&mut *out, &document(value)?)?;
        writeln!(out)?;
        out.flush()
    }

    /// Text on stdout exactly as given, even with `--quiet`: output the caller has formatted
    /// and [`clean`]ed where it needs to be (a block of several lines, text an extension
    /// sent as its answer).
    pub fn print(&self, text: &str) -> io::Result<()> {
        self.bytes(text.as_bytes())
    }

    /// Bytes on stdout exactly as given, such as a shell's completion script.
    pub fn bytes(&self, bytes: &[u8]) -> io::Result<()> {
        let mut out = io::stdout().lock();
        out.write_all(bytes)?;
        out.flush()
    }

    /// Stdout for copying bytes through unchanged as they come, such as a log.
    pub fn stream(&self) -> io::StdoutLock<'static> {
        io::stdout().lock()
    }

    /// How a table fits stdout: whole when piped, fitted to a terminal's width unless
    /// `wide` ([`table::Layout`]).
    pub fn table_layout(&self, wide: bool) -> table::Layout {
        if !io::stdout().is_terminal() {
            table::Layout::Piped
        } else if wide {
            table::Layout::Wide
        } else {
            table::Layout::Fit(table::terminal_width())
        }
    }

    /// `table` on stdout, coloured if stdout is ([`table::Table::write`]).
    pub fn table(&self, table: &table::Table) -> io::Result<()> {
        let mut out = io::BufWriter::with_capacity(64 * 1024, io::stdout().lock());
        table.write(&mut out, self.color_stdout)?;
        out.flush()
    }

    /// A question on stderr ([`clean`]ed), without a newline, for an answer typed after it;
    /// shown even with `--quiet`.
    pub fn ask(&self, question: &str) -> io::Result<()> {
        let mut err = io::stderr().lock();
        write!(err, "{}", clean(question))?;
        err.flush()
    }

    /// A progress line, redrawn in place on a terminal stderr, cut to one row less than
    /// its width (a line that wrapped would not be erased by the next redraw); nothing
    /// otherwise.
    pub fn progress(&self, line: &str) {
        if self.progress {
            let fitted = table::cut_end(line, table::stderr_width().saturating_sub(1).max(10));
            let _ = write!(io::stderr().lock(), "\r\x1b[2K{fitted}");
        }
    }

    /// Whether progress lines are drawn (a terminal stderr, not `--quiet` or `--json`).
    pub fn draws_progress(&self) -> bool {
        self.progress
    }

    /// Clears the progress line.
    pub fn progress_done(&self) {
        if self.progress {
            let _ = write!(io::stderr().lock(), "\r\x1b[2K");
        }
    }
}

/// The version of the JSON every command prints, the first key of every document: it
/// changes only when a key is removed or changes its meaning or type.
pub const SCHEMA_VERSION: u32 = 1;

/// `value` (which serialises to an object) as a document: `schema_version` first, then its
/// keys, every string redacted.
/// A JSON document being written (see [`Output::json_array`]).
pub struct JsonArray {
    out: io::BufWriter<io::StdoutLock<'static>>,
    items: usize,
    /// One item as text, reused.
    item: Vec<u8>,
}

impl JsonArray {
    /// Writes one item of the array, URLs redacted, indented as in the whole document.
    pub fn push<T: Serialize>(&mut self, item: &T) -> io::Result<()> {
        pretty_redacted(item, &mut self.item)?;
        let separator: &[u8] = if self.items == 0 {
            b"\n    "
        } else {
            b",\n    "
        };
        self.out.write_all(separator)?;
        self.out.write_all(&self.item)?;
        self.items += 1;
        Ok(())
    }

    /// Closes the array and the document.
    pub fn finish(mut self) -> io::Result<()> {
        let end: &[u8] = if self.items == 0 {
            b"]\n}\n"
        } else {
            b"\n  ]\n}\n"
        };
        self.out.write_all(end)?;
        self.out.flush()
    }
}

/// `item` as pretty JSON in `out` (cleared first), indented as an item of the array of a
/// document (its lines after the first by four spaces), URLs in every string redacted:
/// written as it is when no string can need it, else through a [`serde_json::Value`].
fn pretty_redacted<T: Serialize>(item: &T, out: &mut Vec<u8>) -> io::Result<()> {
    out.clear();
    item.serialize(&mut serde_json::Serializer::with_formatter(
        &mut *out,
        item_formatter()?,
    ))?;
    if may_need_redaction(out) {
        let mut value = serde_json::to_value(item)?;
        redact_strings(&mut value);
        out.clear();
        value.serialize(&mut serde_json::Serializer::with_formatter(
            &mut *out,
            item_formatter()?,
        ))?;
    }
    Ok(())
}

/// The pretty printer two levels deep, as inside the document's object and its array.
fn item_formatter() -> io::Result<serde_json::ser::PrettyFormatter<'static>> {
    use serde_json::ser::Formatter;
    let mut formatter = serde_json::ser::PrettyFormatter::new();
    formatter.begin_object(&mut io::sink())?;
    formatter.begin_array(&mut io::sink())?;
    Ok(formatter)
}

/// Whether any string in this JSON text could be changed by [`redact_text`]: only a string
/// holding `@`, `=` or `://` can be, and JSON writes those characters as they are (it
/// escapes only quotes, backslashes and control characters), so a text without `@`, `=` and
/// `//` holds no such string, key or value. (Passes that look at many bytes at a time: the
/// bitwise operators leave no branch in the loop, so it runs many bytes a step.)
#[allow(clippy::needless_bitwise_bool)]
fn may_need_redaction(json: &[u8]) -> bool {
    let marks = json.contains(&b'@') || json.contains(&b'=');
    let slashes = json
        .iter()
        .zip(json.iter().skip(1))
        .fold(false, |seen, (&a, &b)| seen | ((a == b'/') & (b == b'/')));
    marks || slashes
}

fn document<T: Serialize>(value: &T) -> io::Result<serde_json::Value> {
    let serde_json::Value::Object(fields) = serde_json::to_value(value)? else {
        return Err(io::Error::other("a JSON document must be an object"));
    };
    let mut doc = serde_json::Map::new();
    doc.insert("schema_version".into(), SCHEMA_VERSION.into());
    doc.extend(fields);
    let mut doc = serde_json::Value::Object(doc);
    redact_strings(&mut doc);
    Ok(doc)
}

/// Redacts the URLs in every string of a JSON value, keys included.
fn redact_strings(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => *s = redact_text(s),
        Value::Array(items) => items.iter_mut().for_each(redact_strings),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut item) in entries {
                redact_strings(&mut item);
                map.insert(redact_text(&key), item);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The first `most` of `names` joined by `, `, then `, and N more` for the rest.
pub(crate) fn first_few<T: AsRef<str>>(
    names: impl ExactSizeIterator<Item = T>,
    most: usize,
) -> String {
    let more = names.len().saturating_sub(most);
    let shown: Vec<T> = names.take(most).collect();
    let shown: Vec<&str> = shown.iter().map(AsRef::as_ref).collect();
    match more {
        0 => shown.join(", "),
        n => format!("{}, and {n} more", shown.join(", ")),
    }
}

/// An error as the JSON document `--json` prints on stderr: `{"schema_version", "error",
/// "suggestions"}`, URLs redacted (also for a usage error, found before there is an
/// [`Output`]).
pub fn json_error(message: &str, suggestions: &[String]) {
    let mut value = serde_json::json!({ "schema_version": SCHEMA_VERSION, "error": message, "suggestions": suggestions });
    redact_strings(&mut value);
    let _ = writeln!(io::stderr().lock(), "{value}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_few_names_at_most_so_many_then_how_many_more() {
        let names = ["a", "b", "c"];
        assert_eq!(first_few(names[..0].iter(), 2), "");
        assert_eq!(first_few(names[..2].iter(), 2), "a, b");
        assert_eq!(first_few(names.iter(), 2), "a, b, and 1 more");
        assert_eq!(
            first_few(names.iter().map(|n| n.repeat(2)), 1),
            "aa, and 2 more"
        );
    }

    #[test]
    fn color_option_overrides_the_environment() {
        // A Vec is no terminal: only `always` colours it.
        assert!(use_color(ColorChoice::Always, &Vec::<u8>::new()));
        assert!(!use_color(ColorChoice::Never, &Vec::<u8>::new()));
    }

    #[test]
    fn documents_start_with_the_schema_version() {
        let doc = document(&serde_json::json!({"a": "https://u:pw@h/"})).unwrap();
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"schema_version":1,"a":"https://***@h/"}"#
        );
        assert!(document(&[1]).is_err());
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("a\nb\u{1b}[31m"), "a\\nb\\u{1b}[31m");
        assert_eq!(printable("plain é"), "plain é");
        assert_eq!(
            printable("a\u{202e}b\u{2028}c\u{85}"),
            "a\\u{202e}b\\u{2028}c\\u{85}"
        );
    }

    #[test]
    fn messages_are_redacted_then_escaped() {
        assert_eq!(
            clean("cannot fetch http://u:pw@h/r?token=t:\nerror: fine"),
            "cannot fetch http://***@h/r?token=***\\nerror: fine"
        );
    }

    /// What [`pretty_redacted`] must write: the item as a redacted `Value`, pretty, each
    /// line after the first indented by four spaces.
    fn through_value<T: Serialize>(item: &T) -> Vec<u8> {
        let mut value = serde_json::to_value(item).unwrap();
        redact_strings(&mut value);
        let text = serde_json::to_string_pretty(&value).unwrap();
        text.replace('\n', "\n    ").into_bytes()
    }

    #[test]
    fn items_are_written_as_their_redacted_values() {
        #[derive(Serialize)]
        struct Item<'a> {
            name: &'a str,
            none: Option<&'a str>,
            list: Vec<Option<bool>>,
            nested: std::collections::BTreeMap<u32, (f64, i64)>,
        }
        let texts = [
            "plain é 天気 🌦 \"q\" \\ \n\t\u{1b}[31m \u{7f}",
            "https://u:pw@h/r?token=t",
            "git@host:r",
            "a=b",
            "not exported: /r?token=abc",
            "https://h/r?access_token=t",
            "x://y",
            "",
        ];
        let mut out = Vec::new();
        for text in texts {
            let item = Item {
                name: text,
                none: None,
                list: vec![Some(true), None],
                nested: [(7, (1.5, -3)), (1, (0.1, 0))].into(),
            };
            pretty_redacted(&item, &mut out).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&through_value(&item))
            );
        }
        assert!(!String::from_utf8_lossy(&out).contains("pw"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]

        #[test]
        fn a_string_redaction_changes_is_always_noticed(
            text in "(.|@|=|://|[a-z]{1,5}:[a-z]{1,5}@|[?&;](token|key|sig|x)=[a-z]*)*",
        ) {
            let json = serde_json::to_vec(&text).unwrap();
            if redact_text(&text) != text {
                proptest::prop_assert!(may_need_redaction(&json), "{:?}", text);
            }
            let mut out = Vec::new();
            pretty_redacted(&[&text], &mut out).unwrap();
            proptest::prop_assert_eq!(out, through_value(&[&text]));
        }
    }

    #[test]
    fn json_strings_are_redacted() {
        let mut value = serde_json::json!({
            "source": "https://h/r?access_token=abc123",
            "list": ["ssh://git:pw@h/r", 1, null],
            "https://u:pw@h/": true
        });
        redact_strings(&mut value);
        assert_eq!(
            value,
            serde_json::json!({
                "source": "https://h/r?access_token=***",
                "list": ["ssh://git:***@h/r", 1, null],
                "https://***@h/": true
            })
        );
    }
}
