//! `zot ext list`: every extension of both scopes, as a table or JSON.

use std::borrow::Cow;

use anyhow::Result;
use serde::Serialize;

use super::{Context, Run};
use crate::catalog::paths::Scope;
use crate::catalog::{self, Installed};
use crate::cli::ListArgs;
use crate::output::table::{self, Column, Cut, Layout, Row, Table};
use crate::output::{BAD, Cell, DIM, GOOD, WARN};
use crate::project;
use crate::store::Store;

/// One row of `zot ext list --json`.
#[derive(Debug, Serialize)]
pub(super) struct Entry<'a> {
    pub scope: Scope,
    pub name: &'a str,
    pub version: Option<&'a str>,
    pub enabled: Option<bool>,
    pub language: Option<&'a str>,
    pub description: Option<&'a str>,
    pub exec: Option<&'a str>,
    pub dir: Cow<'a, str>,
    pub linked: Option<String>,
    pub shadowed: bool,
    pub error: Option<String>,
}

impl<'a> Entry<'a> {
    pub(super) fn new(e: &'a Installed) -> Self {
        let m = e.manifest.as_ref().ok();
        Entry {
            scope: e.scope,
            name: e.name(),
            version: m.and_then(|m| m.version.as_deref()),
            enabled: m.map(|m| m.enabled),
            language: m.and_then(|m| m.language.as_deref()),
            description: m.and_then(|m| m.description.as_deref()),
            exec: m.map(|m| m.exec.as_str()),
            dir: e.dir.to_string_lossy(),
            linked: e.link_target.as_ref().map(|t| t.display().to_string()),
            shadowed: e.shadowed,
            error: e.manifest.as_ref().err().map(ToString::to_string),
        }
    }
}

impl Run for ListArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let scopes = self.scope.scopes();
        for scope in Scope::ALL {
            Store::tidy(ctx.layout.scope(scope))?;
        }
        // Each extension is printed (or, for the table, kept as the texts of its cells) as
        // its manifest is read; no manifest is kept.
        let count = if ctx.out.json {
            let mut doc = ctx.out.json_array("extensions")?;
            let count = catalog::scan_each(&ctx.layout, &scopes, |e| {
                warn_notes(ctx, &e);
                Ok(doc.push(&Entry::new(&e))?)
            })?;
            doc.finish()?;
            count
        } else {
            let layout = ctx.out.table_layout(self.wide);
            let mut table = Table::new(&COLUMNS, &SHRINK_ORDER, layout);
            let mut seen = Vec::new();
            let count = catalog::scan_each(&ctx.layout, &scopes, |e| {
                warn_notes(ctx, &e);
                if !seen.contains(&e.scope) {
                    seen.push(e.scope);
                }
                table.push(&row(&Entry::new(&e), layout));
                Ok(())
            })?;
            // To fit a terminal, whole columns go before any is cut: the folder (info has
            // it), the language, and the scope when every row has the same.
            table.drop_columns(if seen.len() == 1 {
                &DROP_ONE_SCOPE
            } else {
                &DROP
            });
            if !table.is_empty() {
                ctx.out.table(&table)?;
            }
            count
        };
        if count == 0 {
            let scope = self.scope.scope();
            let (within, flag) = match scope {
                Some(s) => (format!(" in the {s} scope"), format!(" --{s}")),
                None => (String::new(), String::new()),
            };
            let looked: Vec<String> = scopes
                .iter()
                .map(|s| ctx.layout.scope(*s).extensions().display().to_string())
                .collect();
            ctx.out.note(&format!(
                "no extensions installed{within} (looked in {}); add one with `zot ext install{flag} <path|git-url>`",
                looked.join(" and ")
            ));
        }
        if let Some(note) = project::subfolder_note(&ctx.layout, self.scope.scope()) {
            ctx.out.note(&note);
        }
        Ok(())
    }
}

/// The manifest's own warnings (fields zot ignores), each after the folder.
fn warn_notes(ctx: &Context, e: &Installed) {
    for note in e.manifest.iter().flat_map(|m| &m.notes) {
        let dir = crate::output::printable(&e.dir.display().to_string());
        ctx.out.warn(&format!("{dir}/{note}"));
    }
}

/// The columns of the table; on a terminal the description gives way first, then the
/// folder (cut in the middle, so its end stays), then version and language, and last a
/// name longer than 15 columns (cut in the middle: names often share a start; `--wide`
/// shows it whole). With every column at its narrowest the table is 80 columns wide.
/// Scope and state are never cut.
const COLUMNS: [Column; 7] = [
    Column::whole("SCOPE"),
    Column::shrinks("NAME", Cut::Middle, 15),
    Column::shrinks("VERSION", Cut::End, 7),
    Column::whole("ENABLED"),
    Column::shrinks("LANGUAGE", Cut::End, 8),
    Column::shrinks("DESCRIPTION", Cut::End, 11),
    Column::shrinks("DIR", Cut::Middle, 12),
];
const SHRINK_ORDER: [usize; 5] = [5, 6, 2, 4, 1];
/// The columns left out whole, in this order, when the rows do not fit a terminal: DIR,
/// LANGUAGE, and SCOPE when there is one scope.
const DROP: [usize; 2] = [6, 4];
const DROP_ONE_SCOPE: [usize; 3] = [6, 4, 0];

/// One row. Piped, a broken manifest's error is its description (the layout scripts
/// parse); on a terminal it is a line of its own under the row, and the folder is written
/// from `~` unless `--wide`.
fn row(e: &Entry, layout: Layout) -> Row {
    let dash = || "-".to_string();
    let piped = layout == Layout::Piped;
    // On a terminal "shadowed" alone (only a global copy is ever shadowed): the column stays
    // as narrow as "project", so the table fits 80 columns.
    let scope = match (e.shadowed, piped) {
        (true, true) => Cell::styled(format!("{} (shadowed)", e.scope), DIM),
        (true, false) => Cell::styled("shadowed", DIM),
        (false, _) => Cell::plain(e.scope.as_str()),
    };
    let enabled = match (e.enabled, &e.error) {
        (_, Some(_)) => Cell::styled("broken", BAD),
        (Some(true), _) => Cell::styled("yes", GOOD),
        _ => Cell::styled("no", WARN),
    };
    let description = match &e.error {
        Some(error) if piped => Cell::styled(error.clone(), BAD),
        _ => Cell::plain(e.description.map_or_else(dash, str::to_string)),
    };
    let shown = |path: &str| match layout {
        Layout::Fit(_) => table::home_as_tilde(path),
        Layout::Piped | Layout::Wide => path.to_string(),
    };
    // A link is marked by its arrow: fitted to a terminal, after the name (the folder
    // column may be left out to fit), and the folder column shows where it leads.
    let dir = match (&e.linked, layout) {
        (Some(target), Layout::Fit(_)) => shown(target),
        (Some(target), _) => format!("{} -> {}", shown(&e.dir), shown(target)),
        (None, _) => shown(&e.dir),
    };
    let name = match (&e.linked, layout) {
        (Some(_), Layout::Fit(_)) => format!("{} ->", e.name),
        _ => e.name.to_string(),
    };
    let detail = match (&e.error, layout) {
        (Some(error), Layout::Fit(_)) => Some(Cell::styled(table::home_as_tilde_in(error), BAD)),
        (Some(error), Layout::Wide) => Some(Cell::styled(error.clone(), BAD)),
        (_, Layout::Piped) | (None, _) => None,
    };
    Row {
        cells: vec![
            scope,
            Cell::plain(name),
            Cell::plain(e.version.map_or_else(dash, str::to_string)),
            enabled,
            Cell::plain(e.language.map_or_else(dash, str::to_string)),
            description,
            Cell::plain(dir),
        ],
        detail,
    }
}
