//! `zot ext info`: every installed copy of a name, the winning one first, with its
//! manifest, resolved program, provenance and log.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::{Result, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::catalog::manifest::Manifest;
use crate::catalog::paths::{Layout, Scope};
use crate::catalog::{self, Installed};
use crate::check::build_hint;
use crate::check::prepare_hint::{self, Place};
use crate::cli::InfoArgs;
use crate::output::printable;
use crate::output::redact::redact;
use crate::output::sh_quote;
use crate::source::Source;
use crate::source::copy::{self, LooseLink};
use crate::store::filelist::FileList;
use crate::store::record::{Kind, Record, RefKind};
use crate::store::{self, Store};

/// `info` looks at no more than this many entries of an extension folder for links.
const LINK_SCAN_LIMIT: usize = 100_000;

/// `zot ext info --json`.
#[derive(Debug, Serialize)]
struct Info<'a> {
    name: &'a str,
    copies: Vec<Copy<'a>>,
}

/// One installed copy.
#[derive(Debug, Serialize)]
struct Copy<'a> {
    scope: Scope,
    dir: String,
    wins: bool,
    /// Hidden by the project folder of the same folder name: zot never starts it.
    shadowed: bool,
    /// Other folders whose manifests have the same name (zot starts every enabled one and
    /// keeps whichever says hello last).
    same_name: Vec<String>,
    linked: Option<String>,
    manifest: Option<&'a Manifest>,
    error: Option<String>,
    /// The program zot would start (`program`: `exec` is the manifest's string everywhere).
    #[serde(rename = "program")]
    exec: Option<Exec>,
    /// The install record (`record`: `source` is the record's string everywhere).
    #[serde(rename = "record")]
    source: Option<Record>,
    /// Why the install record in place cannot be used (null `record` then), if it cannot.
    #[serde(rename = "record_error", skip_serializing_if = "Option::is_none")]
    source_error: Option<String>,
    /// "pinned" (tag or commit; an OCI digest), "tracking" (branch; an OCI tag), or null.
    updates: Option<&'static str>,
    log: Log,
    /// Symbolic links in the folder that point outside it or nowhere; null for a linked
    /// working copy (zot did not copy it).
    outside_links: Option<Vec<LooseLink>>,
    /// False when not every entry was checked (a huge or partly unreadable folder).
    outside_links_complete: bool,
    /// The tree hash of what the install placed (its file list); null without a file list.
    tree_hash: Option<String>,
    /// Copies that `update` and `install --force` saved, oldest first.
    backups: Vec<String>,
    /// The build or dependency install its files call for and that has not run (what the
    /// step makes is missing), with the fix; null when none is needed. What ran is the
    /// record's `prepared`.
    prepare_needed: Option<PrepareNeeded>,
}

#[derive(Debug, Serialize)]
struct PrepareNeeded {
    what: String,
    fix: String,
}

#[derive(Debug, Serialize)]
struct Exec {
    /// The program zot would start, or null when it cannot be found.
    resolved: Option<String>,
    error: Option<String>,
}

#[derive(Debug, Serialize)]
struct Log {
    path: String,
    bytes: Option<u64>,
}

impl Run for InfoArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        for scope in Scope::ALL {
            Store::tidy(ctx.layout.scope(scope))?;
        }
        let all = catalog::scan(&ctx.layout, &self.scope.scopes())?;
        let found: Vec<&Installed> = all
            .iter()
            .filter(|e| e.name() == self.name || e.dir_name == self.name)
            .collect();
        if found.is_empty() {
            catalog::find(&ctx.layout, &self.name, self.scope.scope())?;
            bail!("no extension named \"{}\" is installed", self.name);
        }
        let copies: Vec<Copy> = found
            .iter()
            .enumerate()
            .map(|(i, e)| {
                // zot starts every copy it does not skip, but commands act on the first.
                let first = !found[..i]
                    .iter()
                    .any(|earlier| !earlier.shadowed && earlier.name() == e.name());
                Copy {
                    wins: !e.shadowed && first,
                    ..describe(&ctx.layout, e)
                }
            })
            .collect();
        if let Some(above) =
            super::named::project_copy_above(ctx, &self.name, self.scope.scope(), found[0])
        {
            ctx.out.note(&format!(
                "note: this is the global copy; the project in {} (above this folder) has its own {}, which zot loads when started there",
                crate::output::printable(&above.display().to_string()),
                self.name
            ));
        }
        if ctx.out.json {
            return Ok(ctx.out.json(&Info {
                name: &self.name,
                copies,
            })?);
        }
        for (i, copy) in copies.iter().enumerate() {
            if i > 0 {
                ctx.out.say("")?;
            }
            for line in render(&self.name, copy) {
                ctx.out.say(&line)?;
            }
        }
        Ok(())
    }
}

fn describe<'a>(layout: &Layout, e: &'a Installed) -> Copy<'a> {
    let manifest = e.manifest.as_ref().ok();
    // A record written by hand or by an older zot may hold a credential: never show it.
    let dirs = layout.scope(e.scope);
    let source = Record::load(dirs, &e.dir_name).map(|r| Record {
        source: redact(&r.source),
        ..r
    });
    let updates = source.as_ref().and_then(Record::follows);
    let log_path = layout.log_file(e.name());
    let links = e
        .link_target
        .is_none()
        .then(|| copy::loose_links(&e.dir, LINK_SCAN_LIMIT));
    Copy {
        scope: e.scope,
        dir: e.dir.display().to_string(),
        wins: !e.shadowed,
        shadowed: e.shadowed,
        same_name: e
            .twins
            .iter()
            .map(|t| t.dir.display().to_string())
            .collect(),
        linked: e.link_target.as_ref().map(|t| t.display().to_string()),
        manifest,
        error: e.manifest.as_ref().err().map(ToString::to_string),
        exec: manifest.map(|m| resolve_exec(&e.dir, m, place(e, m))),
        prepare_needed: manifest.and_then(|m| {
            let what = prepare_hint::missing_step(&e.dir, m)?;
            let fix = prepare_hint::fix_or_advice(&e.dir, m, place(e, m));
            Some(PrepareNeeded { what, fix })
        }),
        source_error: source
            .is_none()
            .then(|| Record::problem(layout.scope(e.scope), &e.dir_name))
            .flatten(),
        source,
        updates,
        log: Log {
            bytes: fs::metadata(&log_path).ok().map(|m| m.len()),
            path: log_path.display().to_string(),
        },
        outside_links_complete: links.as_ref().is_none_or(|l| l.complete),
        outside_links: links.map(|l| l.links),
        tree_hash: FileList::load(dirs, &e.dir_name).map(|l| l.tree_hash()),
        backups: store::backups(dirs, &e.dir_name)
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    }
}

/// An installed copy, or a linked working copy.
fn place<'a>(e: &Installed, manifest: &'a Manifest) -> Place<'a> {
    match e.link_target {
        Some(_) => Place::WorkingCopy,
        None => Place::Installed {
            name: &manifest.name,
            shadowed: e.shadowed,
        },
    }
}

fn resolve_exec(dir: &Path, manifest: &Manifest, place: Place) -> Exec {
    match build_hint::resolve(dir, manifest, place) {
        Ok(path) => Exec {
            resolved: Some(path.display().to_string()),
            error: None,
        },
        Err(e) => Exec {
            resolved: None,
            error: Some(format!("{}; {}", e.message, e.fix)),
        },
    }
}

/// The lines that describe one copy (each printed with `say`, which escapes it).
fn render(name: &str, c: &Copy) -> Vec<String> {
    let mut lines = Vec::new();
    let mut field = |label: &str, value: String| {
        lines.push(format!("  {label:<12} {}", printable(&value)));
    };
    let standing = if c.wins {
        "wins"
    } else if c.shadowed {
        "shadowed by the project folder of the same folder name"
    } else {
        "started too; zot ext commands act on the copy above"
    };
    let mut head = format!("{name} ({} copy, {standing})", c.scope);
    if let Some(m) = c.manifest {
        if let Some(v) = &m.version {
            head = format!("{name} {v} ({} copy, {standing})", c.scope);
        }
        field("enabled:", if m.enabled { "yes" } else { "no" }.into());
        if let Some(d) = &m.description {
            field("description:", d.clone());
        }
        if let Some(l) = &m.language {
            field("language:", l.clone());
        }
    }
    field("dir:", c.dir.clone());
    if c.shadowed {
        field(
            "shadowed:",
            "zot skips this folder: the project has a folder of the same folder name".into(),
        );
    }
    for other in &c.same_name {
        field(
            "same name:",
            format!(
                "{other} has the same name; zot starts both and keeps whichever says hello last"
            ),
        );
    }
    if let Some(target) = &c.linked {
        field("linked to:", target.clone());
    }
    if let Some(error) = &c.error {
        field("error:", error.clone());
    }
    if let (Some(m), Some(exec)) = (c.manifest, &c.exec) {
        let resolved = match (&exec.resolved, &exec.error) {
            (Some(path), _) => format!("{} -> {path}", m.exec),
            (None, Some(error)) => format!("{} -> not found: {error}", m.exec),
            (None, None) => m.exec.clone(),
        };
        field("exec:", resolved);
        if !m.args.is_empty() {
            field("args:", m.args.join(" "));
        }
    }
    if let Some(links) = render_links(name, c) {
        field("links:", links);
    }
    render_source(&mut field, c);
    if let Some(line) = render_prepared(c) {
        field("prepared:", line);
    }
    let size = c
        .log
        .bytes
        .map_or("not written yet".to_string(), |b| format!("{b} bytes"));
    field("log:", format!("{} ({size})", c.log.path));
    if let Some(hash) = &c.tree_hash {
        field("tree hash:", hash.clone());
    }
    for (i, backup) in c.backups.iter().enumerate() {
        field(if i == 0 { "backups:" } else { "" }, backup.clone());
    }
    std::iter::once(head).chain(lines).collect()
}

/// The links that point outside the folder or nowhere, on one line; None when there are
/// none to mention.
fn render_links(name: &str, c: &Copy) -> Option<String> {
    let links = c.outside_links.as_deref().unwrap_or_default();
    let partial = if c.outside_links_complete {
        String::new()
    } else {
        format!(
            " (not every entry was checked: the folder has over {LINK_SCAN_LIMIT} entries or some cannot be read)"
        )
    };
    if links.is_empty() {
        return (!partial.is_empty()).then(|| format!("none found{partial}"));
    }
    let all = if links.len() > copy::LISTED {
        format!("; zot ext info --json {} lists them all", sh_quote(name))
    } else {
        String::new()
    };
    Some(format!(
        "{}: {}{all}{partial}",
        copy::loose_summary(links),
        copy::list_links(links)
    ))
}

/// The step that ran (its tool's version and when), or the one needed and not run.
fn render_prepared(c: &Copy) -> Option<String> {
    if let Some(needed) = &c.prepare_needed {
        return Some(format!(
            "needed, not run: {}; fix: {}",
            needed.what, needed.fix
        ));
    }
    let Some(p) = c.source.as_ref()?.prepared.as_ref() else {
        let dir = std::path::Path::new(&c.dir);
        let vendored = crate::prepare::vendored(dir)
            && crate::prepare::node_dependencies(dir).unwrap_or(false);
        return vendored
            .then(|| "not needed: node_modules/ came with the source (vendored)".into());
    };
    let mut line = p.step.clone();
    if let Some(version) = &p.tool_version {
        let _ = write!(line, " ({version})");
    }
    if let Some(at) = &p.ran_at {
        let _ = write!(line, ", at {at}");
    }
    if let Some(platform) = &c.source.as_ref()?.platform {
        let _ = write!(line, ", run by the publisher for {platform}");
    }
    if p.scripts {
        line.push_str(", lifecycle scripts allowed");
    }
    Some(line)
}

fn render_source(field: &mut impl FnMut(&str, String), c: &Copy) {
    let Some(r) = &c.source else {
        // A `remove` that finished while this command ran took the record with it.
        let why = if std::fs::symlink_metadata(&c.dir).is_err() {
            "unknown (another zot ext command removed it just now)".to_string()
        } else if let Some(problem) = &c.source_error {
            format!(
                "unknown ({problem}; delete it and reinstall with zot ext install --force <source>)"
            )
        } else {
            "unknown (no install record: copied in by hand?)".to_string()
        };
        field("source:", why);
        return;
    };
    if r.kind == Kind::New {
        let template = r.template.as_deref().unwrap_or("unknown");
        field(
            "source:",
            format!("made by zot ext new from the {template} template (new)"),
        );
        field("installed:", r.installed_at.clone());
        return;
    }
    field("source:", format!("{} ({})", r.source, r.kind.label()));
    if let Some(sub) = &r.subdir {
        field("subfolder:", sub.clone());
    }
    if Source::recorded(r).is_some_and(|s| s.takes_ref()) {
        let what = match (&r.git_ref, r.ref_kind, c.updates) {
            (None, _, _) => format!(
                "default branch{} (tracking)",
                r.branch
                    .as_deref()
                    .map(|b| format!(" {b}"))
                    .unwrap_or_default()
            ),
            (Some(name), Some(kind), Some(updates)) => {
                format!("{name} ({}, {updates})", ref_kind_name(kind))
            }
            (Some(name), _, _) => name.clone(),
        };
        field("ref:", what);
    }
    if let Some(commit) = &r.commit {
        field("commit:", commit.clone());
    }
    if let Some(digest) = &r.digest {
        let follows = match (&r.git_ref, c.updates) {
            (Some(tag), Some(updates)) => format!(" (tag {tag}, {updates})"),
            _ => " (pinned)".to_string(),
        };
        field("digest:", format!("{digest}{follows}"));
        field(
            "platform:",
            match &r.platform {
                Some(platform) => {
                    format!("{platform}: the manifest built for it, placed as published")
                }
                None => "none: the source manifest, prepared here when it needs it".to_string(),
            },
        );
    }
    field("installed:", r.installed_at.clone());
}

fn ref_kind_name(kind: RefKind) -> &'static str {
    match kind {
        RefKind::Branch => "branch",
        RefKind::Tag => "tag",
        RefKind::Commit => "commit",
    }
}
