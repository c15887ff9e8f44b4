//! `zot ext list`: every extension of both scopes, as a table or JSON.

use anyhow::Result;
use serde::Serialize;

use super::{Context, Run};
use crate::catalog::paths::Scope;
use crate::catalog::{self, Installed};
use crate::cli::ListArgs;
use crate::output::{BAD, Cell, DIM, GOOD, WARN};
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
    pub dir: String,
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
            dir: e.dir.display().to_string(),
            linked: e.link_target.as_ref().map(|t| t.display().to_string()),
            shadowed: e.shadowed,
            error: e.manifest.as_ref().err().map(ToString::to_string),
        }
    }
}

impl Run for ListArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let scopes = match self.scope {
            Some(scope) => vec![scope],
            None => Scope::ALL.to_vec(),
        };
        for scope in Scope::ALL {
            Store::tidy(ctx.layout.scope(scope))?;
        }
        let found = catalog::scan(&ctx.layout, &scopes)?;
        if found.is_empty() {
            let scope = self
                .scope
                .map(|s| format!(" in the {s} scope"))
                .unwrap_or_default();
            ctx.out.note(&format!(
                "no extensions installed{scope}; add one with `zot ext install <path|git-url>`"
            ));
        }
        let entries: Vec<Entry> = found.iter().map(Entry::new).collect();
        for e in &found {
            for note in e.manifest.iter().flat_map(|m| &m.notes) {
                let dir = crate::output::printable(&e.dir.display().to_string());
                ctx.out.warn(&format!("{dir}/{note}"));
            }
        }
        if ctx.out.json {
            return Ok(ctx
                .out
                .json(&serde_json::json!({ "extensions": entries }))?);
        }
        if entries.is_empty() {
            return Ok(());
        }
        let rows: Vec<Vec<Cell>> = entries.iter().map(row).collect();
        let header = [
            "SCOPE",
            "NAME",
            "VERSION",
            "ENABLED",
            "LANGUAGE",
            "DESCRIPTION",
            "DIR",
        ];
        Ok(ctx.out.table(&header, &rows)?)
    }
}

fn row(e: &Entry) -> Vec<Cell> {
    let dash = || "-".to_string();
    let scope = if e.shadowed {
        Cell::styled(format!("{} (shadowed)", e.scope), DIM)
    } else {
        Cell::plain(e.scope.as_str())
    };
    let enabled = match (e.enabled, &e.error) {
        (_, Some(_)) => Cell::styled("broken", BAD),
        (Some(true), _) => Cell::styled("yes", GOOD),
        _ => Cell::styled("no", WARN),
    };
    let description = match &e.error {
        Some(error) => Cell::styled(error.clone(), BAD),
        None => Cell::plain(e.description.map_or_else(dash, str::to_string)),
    };
    let dir = match &e.linked {
        Some(target) => format!("{} -> {target}", e.dir),
        None => e.dir.clone(),
    };
    vec![
        scope,
        Cell::plain(e.name),
        Cell::plain(e.version.map_or_else(dash, str::to_string)),
        enabled,
        Cell::plain(e.language.map_or_else(dash, str::to_string)),
        description,
        Cell::plain(dir),
    ]
}
