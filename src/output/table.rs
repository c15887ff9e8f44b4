//! Tables on stdout: aligned columns, and on a terminal, fitted to its width. Owns display
//! width (East Asian wide characters and emoji take two columns), cutting text with an
//! ellipsis without splitting a character, the order in which columns give way, `~` for the
//! home folder, and the terminal's width.
//!
//! Piped output (stdout not a terminal) is the full-width layout scripts parse, unchanged:
//! every cell whole, padded by character count.

use std::io::{self, Write};

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use anstyle::Style;

use super::escape::clean;
use super::style::{BOLD, paint};

/// A table cell: its text and the style it is drawn in.
pub struct Cell {
    pub text: String,
    pub style: Style,
}

impl Cell {
    pub fn plain(text: impl Into<String>) -> Cell {
        Cell::styled(text, Style::new())
    }

    /// `text` is [`clean`]ed: cells show manifest text, which any repository controls, and
    /// must not move the cursor, restyle the terminal or show a credential.
    pub fn styled(text: impl Into<String>, style: Style) -> Cell {
        Cell {
            text: clean(&text.into()),
            style,
        }
    }
}

/// The width assumed when neither the terminal nor `COLUMNS` tells one.
pub const DEFAULT_WIDTH: usize = 80;

const GAP: usize = 2;
const ELLIPSIS: char = '…';
const DETAIL_INDENT: &str = "    ";

/// How a table is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Stdout is not a terminal: every cell whole, the layout scripts parse.
    Piped,
    /// A terminal, but nothing cut (`--wide`).
    Wide,
    /// A terminal this many columns wide: columns give way until the table fits.
    Fit(usize),
}

/// Where a column's text is cut when the column gives way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Never cut (a name: wrapping is better than losing it).
    Never,
    /// Keep the start: `a long descr…`.
    End,
    /// Keep both ends: `~/.local/…/extensions/clock`.
    Middle,
}

/// One column: its header, where it is cut and how narrow it may get.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub header: &'static str,
    pub cut: Cut,
    /// The narrowest the column gets (display columns).
    pub min: usize,
}

impl Column {
    /// A column that is never cut.
    pub const fn whole(header: &'static str) -> Column {
        Column {
            header,
            cut: Cut::Never,
            min: 0,
        }
    }

    /// A column that gives way down to `min` display columns, cut as `cut` says.
    pub const fn shrinks(header: &'static str, cut: Cut, min: usize) -> Column {
        Column { header, cut, min }
    }
}

/// One row: its cells, and a line of its own printed under it, indented (a broken
/// extension's error), on a terminal.
pub struct Row {
    pub cells: Vec<Cell>,
    pub detail: Option<Cell>,
}

/// The display width of `text`: wide characters (CJK, most emoji) count two columns,
/// combining marks none.
pub fn display_width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

fn char_width(c: char) -> usize {
    UnicodeWidthChar::width(c).unwrap_or(0)
}

/// `text` cut to at most `max` display columns, keeping the start and ending in `…`. A wide
/// character that does not fit whole is left out, so the result may be one column short.
pub fn cut_end(text: &str, max: usize) -> String {
    if display_width(text) <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut kept = take_width(text.chars(), max - 1);
    kept.push(ELLIPSIS);
    kept
}

/// `text` cut to at most `max` display columns, keeping its start and end around a `…` (the
/// end gets the odd column: in a path it is the part that names the thing). A wide
/// character is never split.
pub fn cut_middle(text: &str, max: usize) -> String {
    if display_width(text) <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let budget = max - 1;
    let head = take_width(text.chars(), budget / 2);
    let tail: String = take_width(text.chars().rev(), budget - budget / 2)
        .chars()
        .rev()
        .collect();
    format!("{head}{ELLIPSIS}{tail}")
}

/// The characters of `chars`, in the order given, while they fit in `max` display columns.
fn take_width(chars: impl Iterator<Item = char>, max: usize) -> String {
    let mut used = 0;
    let mut kept = String::new();
    for c in chars {
        let width = char_width(c);
        if used + width > max {
            break;
        }
        used += width;
        kept.push(c);
    }
    kept
}

/// `path` with the home folder written `~` (`~/x` under it, `~` for itself); unchanged when
/// it is elsewhere or there is no usable home (unset, relative, or `/`).
pub fn tilde(path: &str, home: Option<&str>) -> String {
    let Some(home) = home.map(|h| h.trim_end_matches('/')) else {
        return path.to_string();
    };
    if home.is_empty() || !home.starts_with('/') {
        return path.to_string();
    }
    match path.strip_prefix(home) {
        Some("") => "~".to_string(),
        Some(rest) if rest.starts_with('/') => format!("~{rest}"),
        _ => path.to_string(),
    }
}

/// The width of the terminal on stdout: from the terminal itself, else `COLUMNS`, else 80.
pub fn terminal_width() -> usize {
    let from_terminal = rustix::termios::tcgetwinsize(io::stdout())
        .ok()
        .map(|size| usize::from(size.ws_col));
    let from_env = || {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
    };
    from_terminal
        .filter(|&w| w > 0)
        .or_else(|| from_env().filter(|&w| w > 0))
        .unwrap_or(DEFAULT_WIDTH)
}

/// The width of the terminal on stderr, where progress lines are drawn; 80 if it does not
/// say.
pub(crate) fn stderr_width() -> usize {
    rustix::termios::tcgetwinsize(io::stderr())
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|&w| w > 0)
        .unwrap_or(DEFAULT_WIDTH)
}

/// The width of each column so the table fits in `available` display columns: starting from
/// the widest cell of each, the columns in `shrink_order` (indexes into `columns`) give way
/// in that order, each down to its minimum (or its header, if wider), until the rows fit.
/// If they still do not, the lines wrap: no column goes below its minimum, and the columns
/// not in `shrink_order` or that are never cut keep their width.
pub fn fit_widths(
    natural: &[usize],
    columns: &[Column],
    shrink_order: &[usize],
    available: usize,
) -> Vec<usize> {
    let mut widths = natural.to_vec();
    let line = widths.iter().sum::<usize>() + GAP * widths.len().saturating_sub(1);
    let mut excess = line.saturating_sub(available);
    for &i in shrink_order {
        if excess == 0 {
            break;
        }
        let column = &columns[i];
        if column.cut == Cut::Never {
            continue;
        }
        let floor = column.min.max(display_width(column.header));
        let give = widths[i].saturating_sub(floor).min(excess);
        widths[i] -= give;
        excess -= give;
    }
    widths
}

/// Rows kept until the table can be laid out (its widths need every row), compactly: the
/// texts of all cells in one string, each style as an index into the few the rows use, and
/// the widest text of each column measured as rows come. Rows are laid out under the
/// headers of `columns`, left-aligned, two spaces apart (the last column not padded), as
/// `layout` says; to fit a terminal, the columns give way in `shrink_order` (indexes into
/// `columns`, [`fit_widths`]).
pub struct Table<'a> {
    columns: &'a [Column],
    shrink_order: &'a [usize],
    /// Columns left out whole, in this order, before any is cut to fit a terminal.
    drop_order: Vec<usize>,
    layout: Layout,
    /// The widest text of each column so far, headers included.
    natural: Vec<usize>,
    /// Every cell's text, one after another; per row, its cells and then its detail.
    text: String,
    /// Where each of those texts ends in `text`.
    ends: Vec<usize>,
    /// The style of each text, as an index into `palette` ([`NO_DETAIL`] for a row with
    /// no detail).
    styles: Vec<u8>,
    palette: Vec<Style>,
}

/// The style index of a detail a row does not have.
const NO_DETAIL: u8 = u8::MAX;

impl<'a> Table<'a> {
    pub fn new(columns: &'a [Column], shrink_order: &'a [usize], layout: Layout) -> Table<'a> {
        let mut table = Table {
            columns,
            shrink_order,
            drop_order: Vec::new(),
            layout,
            natural: Vec::new(),
            text: String::new(),
            ends: Vec::new(),
            styles: Vec::new(),
            palette: Vec::new(),
        };
        table.natural = columns.iter().map(|c| table.measure(c.header)).collect();
        table
    }

    /// How wide `text` is in this layout: piped, in characters; on a terminal, in display
    /// columns.
    fn measure(&self, text: &str) -> usize {
        match self.layout {
            Layout::Piped => text.chars().count(),
            Layout::Wide | Layout::Fit(_) => display_width(text),
        }
    }

    /// Adds a row, which has a cell for each column.
    pub fn push(&mut self, row: &Row) {
        debug_assert_eq!(row.cells.len(), self.columns.len());
        for (i, cell) in row.cells.iter().enumerate() {
            self.natural[i] = self.natural[i].max(self.measure(&cell.text));
            self.keep(&cell.text, cell.style);
        }
        if let Some(detail) = &row.detail {
            self.keep(&detail.text, detail.style);
        } else {
            self.ends.push(self.text.len());
            self.styles.push(NO_DETAIL);
        }
    }

    fn keep(&mut self, text: &str, style: Style) {
        self.text.push_str(text);
        self.ends.push(self.text.len());
        let index = self
            .palette
            .iter()
            .position(|s| *s == style)
            .unwrap_or_else(|| {
                self.palette.push(style);
                self.palette.len() - 1
            });
        // A table uses a few styles, far fewer than NO_DETAIL.
        self.styles.push(u8::try_from(index).unwrap_or(0));
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// To fit a terminal, these columns (indexes into `columns`) are left out whole, in
    /// this order, as long as the rows do not fit, before any column is cut.
    pub fn drop_columns(&mut self, order: &[usize]) {
        self.drop_order = order.to_vec();
    }

    /// The columns shown: on a terminal, without those [`Table::drop_columns`] leaves out
    /// for the rows to fit.
    fn shown_columns(&self) -> Vec<bool> {
        let mut shown = vec![true; self.columns.len()];
        let Layout::Fit(available) = self.layout else {
            return shown;
        };
        let width = |shown: &[bool]| {
            let kept: Vec<usize> = (0..shown.len()).filter(|&i| shown[i]).collect();
            kept.iter().map(|&i| self.natural[i]).sum::<usize>()
                + GAP * kept.len().saturating_sub(1)
        };
        for &i in &self.drop_order {
            if width(&shown) <= available {
                break;
            }
            shown[i] = false;
        }
        shown
    }

    /// The `i`th text kept, and its style (`None`: a detail the row does not have).
    fn kept(&self, i: usize) -> (&str, Option<Style>) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        let style = self.styles[i];
        let style = (style != NO_DETAIL).then(|| self.palette[usize::from(style)]);
        // The ends are those of whole texts pushed, so `get` always answers.
        (
            self.text.get(start..self.ends[i]).unwrap_or_default(),
            style,
        )
    }

    /// Writes the headers and every row, coloured if `color`.
    pub fn write(&self, out: &mut impl Write, color: bool) -> io::Result<()> {
        let shown = self.shown_columns();
        let widths = match self.layout {
            Layout::Fit(available) => {
                // A column left out takes no room: its width is 0 and it is skipped.
                let natural: Vec<usize> = (0..self.columns.len())
                    .map(|i| if shown[i] { self.natural[i] } else { 0 })
                    .collect();
                let gaps = GAP * shown.iter().filter(|s| !**s).count();
                fit_widths(&natural, self.columns, self.shrink_order, available + gaps)
            }
            Layout::Piped | Layout::Wide => self.natural.clone(),
        };
        let header: Vec<(&str, Style)> = self.columns.iter().map(|c| (c.header, BOLD)).collect();
        let write = |out: &mut dyn Write, cells: &[(&str, Style)]| {
            let kept: Vec<(&str, Style)> = (0..cells.len())
                .filter(|&i| shown[i])
                .map(|i| cells[i])
                .collect();
            let kept_columns: Vec<usize> = (0..cells.len()).filter(|&i| shown[i]).collect();
            self.write_line(out, &kept, &kept_columns, &widths, color)
        };
        write(out, &header)?;
        let per_row = self.columns.len() + 1;
        let mut cells = Vec::with_capacity(self.columns.len());
        for row in 0..self.ends.len() / per_row {
            let first = row * per_row;
            cells.clear();
            cells.extend((first..first + self.columns.len()).map(|i| {
                let (text, style) = self.kept(i);
                (text, style.unwrap_or_default())
            }));
            write(out, &cells)?;
            if let ((detail, Some(style)), false) = (
                self.kept(first + self.columns.len()),
                self.layout == Layout::Piped,
            ) {
                write_detail(out, detail, style, color, self.layout)?;
            }
        }
        Ok(())
    }

    /// One line of `cells`, the cells of the columns `columns` (indexes into the table's).
    /// Fitted to a terminal, the last cell is cut to what is left of the line, so a line
    /// never wraps.
    fn write_line(
        &self,
        out: &mut dyn Write,
        cells: &[(&str, Style)],
        columns: &[usize],
        widths: &[usize],
        color: bool,
    ) -> io::Result<()> {
        let mut line = String::new();
        let mut used = 0;
        for (k, ((text, style), &i)) in cells.iter().zip(columns).enumerate() {
            let last = k + 1 == cells.len();
            let mut width = widths[i];
            if let (Layout::Fit(available), true) = (self.layout, last) {
                width = width.min(available.saturating_sub(used));
            }
            let text = match self.columns[i].cut {
                Cut::Never if !last => (*text).to_string(),
                Cut::End | Cut::Never => cut_end(text, width),
                Cut::Middle => cut_middle(text, width),
            };
            line.push_str(&paint(color, *style, &text));
            if !last {
                let pad = widths[i].saturating_sub(self.measure(&text)) + GAP;
                line.extend(std::iter::repeat_n(' ', pad));
                used += self.measure(&text) + pad;
            }
        }
        writeln!(out, "{}", line.trim_end())
    }
}

/// A row's own line under it, indented; on a narrow terminal wrapped at spaces to its width
/// with the same indent, so a long error stays readable and whole.
fn write_detail(
    out: &mut impl Write,
    detail: &str,
    style: Style,
    color: bool,
    layout: Layout,
) -> io::Result<()> {
    let lines = match layout {
        Layout::Fit(available) => wrap(detail, available.saturating_sub(DETAIL_INDENT.len())),
        Layout::Piped | Layout::Wide => vec![detail.to_string()],
    };
    for line in lines {
        writeln!(out, "{DETAIL_INDENT}{}", paint(color, style, &line))?;
    }
    Ok(())
}

/// `text` in lines of at most `max` display columns, broken at spaces only. A word longer
/// than a line starts a line of its own and breaks only after a `/` (a path), never inside
/// a folder or file name: `extension.json:2:19` stays whole, longer than the line if need be.
pub fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let needed = display_width(word) + usize::from(!line.is_empty());
        if display_width(&line) + needed <= max {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        for piece in word.split_inclusive('/') {
            if !line.is_empty() && display_width(&line) + display_width(piece) > max {
                lines.push(std::mem::take(&mut line));
            }
            line.push_str(piece);
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// `path` with the user's home folder (`HOME`) written `~` ([`tilde`]).
pub fn home_as_tilde(path: &str) -> String {
    let home = std::env::var("HOME").ok();
    tilde(path, home.as_deref())
}

/// `text` (a message) with each path that starts at the home folder, at the start of the
/// text or after a space, written from `~` ([`tilde`]).
pub fn home_as_tilde_in(text: &str) -> String {
    let home = std::env::var("HOME").ok();
    text.split(' ')
        .map(|word| tilde(word, home.as_deref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(columns: &[Column], rows: &[Row], layout: Layout) -> String {
        render_coloured(columns, rows, layout, false)
    }

    fn render_coloured(columns: &[Column], rows: &[Row], layout: Layout, color: bool) -> String {
        let order: Vec<usize> = (0..columns.len()).collect();
        let mut table = Table::new(columns, &order, layout);
        for row in rows {
            table.push(row);
        }
        let mut out = Vec::new();
        table.write(&mut out, color).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn row(cells: &[&str]) -> Row {
        Row {
            cells: cells.iter().map(|c| Cell::plain(*c)).collect(),
            detail: None,
        }
    }

    #[test]
    fn wide_characters_and_emoji_count_two_columns() {
        assert_eq!(display_width("abc"), 3);
        assert_eq!(display_width("天気予報"), 8);
        assert_eq!(display_width("🌧"), 1, "text-presentation emoji: one column");
        assert_eq!(display_width("😀"), 2);
        assert_eq!(display_width("e\u{301}"), 1, "combining mark: no column");
    }

    #[test]
    fn cut_end_keeps_the_start() {
        assert_eq!(cut_end("short", 5), "short");
        assert_eq!(cut_end("a long description", 8), "a long …");
        assert_eq!(cut_end("abc", 1), "…");
        assert_eq!(cut_end("abc", 0), "");
    }

    #[test]
    fn cut_end_never_splits_a_wide_character() {
        // 天気 is 4 columns; at 4 the ellipsis leaves room for one, so 気 is dropped whole.
        assert_eq!(cut_end("天気予報", 4), "天…");
        assert_eq!(display_width(&cut_end("天気予報", 4)), 3);
        assert_eq!(cut_end("天気予報", 5), "天気…");
    }

    #[test]
    fn cut_middle_keeps_both_ends() {
        let path = "/home/pat/.local/state/zot/extensions/clock";
        let cut = cut_middle(path, 20);
        assert_eq!(cut, "/home/pat…ions/clock");
        assert_eq!(display_width(&cut), 20);
        assert_eq!(cut_middle(path, path.len()), path);
        assert_eq!(cut_middle("abcdef", 1), "…");
        assert_eq!(cut_middle("abcdef", 2), "…f");
    }

    #[test]
    fn cut_middle_never_splits_a_wide_character() {
        // 10 columns; at 7 the head and the tail get 3 each: 天 fits, 気 and 報 do not.
        assert_eq!(cut_middle("天気予報ab", 7), "天…ab");
        assert_eq!(cut_middle("天気予報ab", 8), "天…報ab");
    }

    #[test]
    fn home_becomes_tilde_only_as_a_whole_folder() {
        let home = Some("/home/pat");
        assert_eq!(tilde("/home/pat/x/y", home), "~/x/y");
        assert_eq!(tilde("/home/pat", home), "~");
        assert_eq!(tilde("/home/patrice/x", home), "/home/patrice/x");
        assert_eq!(tilde("/srv/x", home), "/srv/x");
        assert_eq!(tilde("/home/pat/x", Some("/home/pat/")), "~/x");
        assert_eq!(tilde("/x", Some("/")), "/x");
        assert_eq!(tilde("/x", Some("")), "/x");
        assert_eq!(tilde("/x", None), "/x");
        assert_eq!(tilde("/home/pat/x: bad", home), "~/x: bad");
    }

    #[test]
    fn columns_give_way_in_order_down_to_their_minimum() {
        let columns = [
            Column::whole("NAME"),
            Column::shrinks("DIR", Cut::Middle, 20),
            Column::shrinks("DESCRIPTION", Cut::End, 16),
        ];
        let order = [2, 1];
        // 10 + 2 + 40 + 2 + 40 = 94 columns.
        let natural = [10, 40, 40];
        assert_eq!(fit_widths(&natural, &columns, &order, 94), [10, 40, 40]);
        assert_eq!(fit_widths(&natural, &columns, &order, 80), [10, 40, 26]);
        assert_eq!(fit_widths(&natural, &columns, &order, 60), [10, 30, 16]);
        // Below every minimum: nothing goes lower, and the name is never narrowed.
        assert_eq!(fit_widths(&natural, &columns, &order, 20), [10, 20, 16]);
    }

    #[test]
    fn a_minimum_never_goes_below_the_header() {
        let columns = [Column::shrinks("DESCRIPTION", Cut::End, 4)];
        assert_eq!(fit_widths(&[30], &columns, &[0], 5), [11]);
    }

    #[test]
    fn piped_tables_align_by_characters_and_keep_everything() {
        let rows = vec![row(&["a", "long value", "x"])];
        let columns = [
            Column::whole("H1"),
            Column::shrinks("H2", Cut::End, 2),
            Column::whole("H3"),
        ];
        assert_eq!(
            render(&columns, &rows, Layout::Piped),
            "H1  H2          H3\na   long value  x\n"
        );
    }

    #[test]
    fn fitted_tables_cut_and_align_by_display_width() {
        let rows = vec![row(&["天気予報 🌦 rain", "/a/b"]), row(&["plain", "/c"])];
        let columns = [
            Column::shrinks("DESCRIPTION", Cut::End, 8),
            Column::whole("DIR"),
        ];
        assert_eq!(
            render(&columns, &rows, Layout::Fit(17)),
            "DESCRIPTION  DIR\n天気予報 🌦…  /a/b\nplain        /c\n"
        );
        assert_eq!(
            render(&columns, &rows, Layout::Wide),
            "DESCRIPTION      DIR\n天気予報 🌦 rain  /a/b\nplain            /c\n"
        );
    }

    #[test]
    fn colour_does_not_count_towards_widths() {
        let rows = vec![Row {
            cells: vec![Cell::styled("yes", crate::output::GOOD), Cell::plain("x")],
            detail: Some(Cell::styled("reason", crate::output::BAD)),
        }];
        let columns = [Column::whole("ENABLED"), Column::whole("B")];
        let coloured = render_coloured(&columns, &rows, Layout::Fit(40), true);
        assert!(coloured.contains('\u{1b}'), "{coloured:?}");
        let mut plain = String::new();
        let mut in_escape = false;
        for c in coloured.chars() {
            match c {
                '\u{1b}' => in_escape = true,
                'm' if in_escape => in_escape = false,
                _ if !in_escape => plain.push(c),
                _ => {}
            }
        }
        assert_eq!(plain, render(&columns, &rows, Layout::Fit(40)));
    }

    #[test]
    fn details_go_under_their_row_and_wrap_on_a_terminal() {
        let mut broken = row(&["x", "y"]);
        broken.detail = Some(Cell::plain("one two three four"));
        let columns = [Column::whole("A"), Column::whole("B")];
        assert_eq!(
            render(&columns, &[broken], Layout::Fit(14)),
            "A  B\nx  y\n    one two\n    three four\n"
        );
    }

    #[test]
    fn piped_tables_leave_details_to_the_caller() {
        let mut broken = row(&["x", "y"]);
        broken.detail = Some(Cell::plain("reason"));
        let columns = [Column::whole("A"), Column::whole("B")];
        assert_eq!(render(&columns, &[broken], Layout::Piped), "A  B\nx  y\n");
    }

    #[test]
    fn wrap_breaks_at_spaces_and_splits_only_overlong_words() {
        assert_eq!(wrap("a bb ccc", 4), ["a bb", "ccc"]);
        assert_eq!(wrap("abcdefgh", 3), ["abcdefgh"]);
        assert_eq!(wrap("天気予報 x", 3), ["天気予報", "x"]);
        assert_eq!(wrap("", 5), [""]);
    }

    #[test]
    fn wrap_never_splits_a_word_or_a_file_line_column_token() {
        let reason = "/home/u/.zot/extensions/bad/extension.json:2:19: invalid JSON";
        assert_eq!(
            wrap(reason, 40),
            [
                "/home/u/.zot/extensions/bad/",
                "extension.json:2:19: invalid JSON"
            ]
        );
        assert_eq!(
            wrap(&format!("cannot read {reason}"), 30),
            [
                "cannot read",
                "/home/u/.zot/extensions/bad/",
                "extension.json:2:19: invalid",
                "JSON"
            ]
        );
        assert_eq!(
            wrap("unknown field `descripton`", 10),
            ["unknown", "field", "`descripton`"]
        );
    }
}
