//! `zot ext remove`: confirm (one question at a terminal for every name given, or a
//! `y`/`yes` line piped on stdin within a short wait), name each extension's data that goes
//! with it (the files the install did not place), save that data with `--keep-data`, then
//! move each extension out and delete it, one at a time (a failure leaves the others going;
//! one summary at the end).

use std::io::{self, BufRead, IsTerminal};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::catalog::paths::Scope;
use crate::catalog::{self, Installed};
use crate::cli::RemoveArgs;
use crate::error::{decline, usage};
use crate::output::{Output, first_few};
use crate::project::lock::Lock;
use crate::project::{ProjectFile, Where};
use crate::store::Store;
use crate::store::carry;
use crate::store::filelist::{self, FileList, Standing};

#[derive(Debug, Serialize)]
struct Removed {
    name: String,
    scope: Scope,
    dir: String,
    /// The working copy a link pointed to (only the link was removed), or null.
    linked: Option<String>,
    /// The entries the install did not place (folders end in `/`); null when zot cannot
    /// tell (no file list), empty for a link.
    data: Option<Vec<String>>,
    /// Where `--keep-data` saved them; null without it or when there was nothing to save.
    backup: Option<String>,
    /// The project file that named it, with whether its entry was dropped; null when no
    /// project file of its scope names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    project_file: Option<InFile>,
    /// What `--keep-data` kept and where, for the text.
    #[serde(skip)]
    kept: Option<String>,
}

/// What became of the removed extension's entry in its scope's project file.
#[derive(Debug, Serialize)]
struct InFile {
    path: String,
    dropped: bool,
}

/// The extension's own data in an installed copy.
enum Data {
    /// A link to a working copy: nothing of it is deleted.
    Linked,
    /// The entries the install did not place, as (raw path, shown name).
    Listed(Vec<(Vec<u8>, String)>),
    /// No file list: zot cannot tell the data from the files.
    Unknown,
}

impl Data {
    fn of(ctx: &Context, target: &Installed) -> Result<Data> {
        if target.link_target.is_some() {
            return Ok(Data::Linked);
        }
        let dirs = ctx.layout.scope(target.scope);
        let Some(list) = FileList::load(dirs, &target.dir_name) else {
            return Ok(Data::Unknown);
        };
        let classified = list.classify(&target.dir)?;
        let shown = filelist::names(&classified, Standing::NotPlaced);
        let raw = classified
            .into_iter()
            .filter(|c| c.standing == Standing::NotPlaced)
            .map(|c| c.path);
        Ok(Data::Listed(raw.zip(shown).collect()))
    }

    fn names(&self) -> Option<Vec<String>> {
        match self {
            Data::Linked => Some(Vec::new()),
            Data::Listed(items) => Some(items.iter().map(|(_, n)| n.clone()).collect()),
            Data::Unknown => None,
        }
    }

    /// What removing deletes besides the extension's files, for a note; None for nothing,
    /// and None with `--keep-data`: what it keeps is said once, after the removal.
    fn warning(&self, name: &str, keep: bool) -> Option<String> {
        match self {
            Data::Linked => None,
            Data::Listed(_) if keep => None,
            Data::Listed(items) if items.is_empty() => None,
            Data::Listed(items) => Some(format!(
                "removes {} created by the extension ({}); --keep-data keeps {} in .ext-store/backup",
                count(items),
                first_few(items.iter().map(|(_, n)| n), LISTED),
                if items.len() == 1 { "it" } else { "them" }
            )),
            Data::Unknown => Some(format!(
                "zot cannot tell {name}'s data from its files (it has no file list: copied in by hand or installed by an older zot); {}",
                if keep {
                    "--keep-data saves the whole folder"
                } else {
                    "--keep-data saves the whole folder in .ext-store/backup"
                }
            )),
        }
    }
}

/// `1 folder and 2 files`: a shown name ending in `/` is a folder.
fn count(items: &[(Vec<u8>, String)]) -> String {
    let folders = items.iter().filter(|(_, n)| n.ends_with('/')).count();
    let files = items.len() - folders;
    let plural = |n: usize, one: &str| match n {
        1 => format!("1 {one}"),
        n => format!("{n} {one}s"),
    };
    match (folders, files) {
        (0, files) => plural(files, "file"),
        (folders, 0) => plural(folders, "folder"),
        (folders, files) => format!(
            "{} and {}",
            plural(folders, "folder"),
            plural(files, "file")
        ),
    }
}

/// At most this many names in a message; then "and N more".
const LISTED: usize = 8;

/// Copies the extension's data (with no file list, the whole folder) into a staging folder
/// of `store`, then moves it whole to `.ext-store/backup/<name>/<time>/`; returns where it
/// went, or None when there is nothing to save. Only reads the installed copy.
fn save_data(store: &Store, target: &Installed, data: &Data) -> Result<Option<PathBuf>> {
    let paths: Vec<&[u8]> = match data {
        Data::Linked => return Ok(None),
        Data::Listed(items) if items.is_empty() => return Ok(None),
        Data::Listed(items) => items.iter().map(|(raw, _)| raw.as_slice()).collect(),
        Data::Unknown => vec![&[][..]],
    };
    let staging = store.stage()?;
    let saved = staging.scratch(SAVED);
    std::fs::create_dir(&saved).with_context(|| format!("cannot create {}", saved.display()))?;
    for path in paths {
        carry::copy_into(&target.dir, path, &saved, true)?;
    }
    let folder = target.folder_name().to_string_lossy();
    let backup = store.keep_backup(&staging, SAVED, &folder)?;
    let _ = store.rotate_backups(&folder);
    Ok(Some(backup))
}

/// The folder beside a staged tree where the data is gathered before it is moved to the
/// backups.
const SAVED: &str = "saved";

impl Run for RemoveArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let names = self.unique_names();
        // One name: its lookup error is the run's error, did-you-mean and all.
        if let [name] = names.as_slice() {
            let target = super::named::find_to_change(ctx, name, self.scope.scope(), "remove")?;
            let plan = Planned::of(ctx, target, self.keep_data);
            let at_terminal = self.confirm_all(ctx, std::slice::from_ref(&plan))?;
            let removed = self.remove_one(ctx, &plan, at_terminal)?;
            return if ctx.out.json {
                Ok(ctx.out.json(&removed)?)
            } else {
                say_removed(ctx, &removed)
            };
        }
        let mut failed = Vec::new();
        let mut planned = Vec::new();
        for name in &names {
            match super::named::find_to_change(ctx, name, self.scope.scope(), "remove") {
                Ok(target) => planned.push(Planned::of(ctx, target, self.keep_data)),
                Err(e) => failed.push(Failure::of(name, &e)),
            }
        }
        let at_terminal = if planned.is_empty() {
            false
        } else {
            self.confirm_all(ctx, &planned)?
        };
        let mut removed = Vec::new();
        for plan in &planned {
            match self.remove_one(ctx, plan, at_terminal) {
                Ok(done) if ctx.out.json => removed.push(done),
                Ok(done) => say_removed(ctx, &done)?,
                Err(e) => failed.push(Failure::of(plan.target.name(), &e)),
            }
        }
        for failure in &failed {
            ctx.out
                .fail(&format!("{}: {}", failure.name, failure.error));
        }
        let done = names.len() - failed.len();
        if ctx.out.json {
            ctx.out.json(&Several {
                extensions: &removed,
                failed: &failed,
            })?;
        } else if failed.is_empty() {
            ctx.out.say(&format!("removed {done} extensions"))?;
        }
        if failed.is_empty() {
            return Ok(());
        }
        bail!(
            "{} of {} extensions were not removed (see above); {}",
            failed.len(),
            names.len(),
            match done {
                0 => "nothing was removed".to_string(),
                1 => "the other one was removed".to_string(),
                _ => format!("the other {done} were removed"),
            }
        )
    }
}

/// `zot ext remove --json` with several names: what was removed, and what was not and why.
#[derive(Debug, Serialize)]
struct Several<'a> {
    extensions: &'a [Removed],
    failed: &'a [Failure],
}

/// A name of several that was not removed.
#[derive(Debug, Serialize)]
struct Failure {
    name: String,
    error: String,
}

impl Failure {
    fn of(name: &str, error: &anyhow::Error) -> Failure {
        Failure {
            name: name.to_string(),
            error: format!("{error:#}"),
        }
    }
}

/// An extension about to be removed: what it is, and the note on its data.
struct Planned {
    target: Installed,
    /// `name (scope) at folder`.
    what: String,
    note: Option<String>,
}

impl Planned {
    fn of(ctx: &Context, target: Installed, keep_data: bool) -> Planned {
        if let Some(note) = target.twin_note() {
            ctx.out.note(&note);
        }
        let what = format!(
            "{} ({}) at {}",
            target.name(),
            target.scope,
            target.dir.display()
        );
        // Only for the note: a copy that cannot be read whole is still removed.
        let data = Data::of(ctx, &target).unwrap_or(Data::Unknown);
        let note = data
            .warning(target.name(), keep_data)
            .map(|warning| format!("note: {warning}"));
        Planned { target, what, note }
    }
}

/// The text lines of one removal.
fn say_removed(ctx: &Context, removed: &Removed) -> Result<()> {
    let what = if removed.linked.is_some() {
        "unlinked"
    } else {
        "removed"
    };
    ctx.out.say(&format!(
        "{what} {} ({}) from {}",
        removed.name, removed.scope, removed.dir
    ))?;
    if let Some(kept) = &removed.kept {
        ctx.out.say(&format!("  kept {kept}"))?;
    }
    if let Some(in_file) = &removed.project_file {
        let said = if in_file.dropped {
            format!("  dropped it from {}", in_file.path)
        } else {
            format!(
                "  kept it in {} (zot ext sync installs it again)",
                in_file.path
            )
        };
        ctx.out.say(&said)?;
    }
    if let Ok(other) = catalog::find(&ctx.layout, &removed.name, None) {
        ctx.out.note(&format!(
            "note: the {} copy in {} is still installed",
            other.scope,
            other.dir.display()
        ));
    }
    Ok(())
}

impl RemoveArgs {
    /// The names given, each once, in the order first given.
    fn unique_names(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        self.names
            .iter()
            .filter(|n| seen.insert(n.as_str()))
            .cloned()
            .collect()
    }

    /// Confirms the removal of everything `planned` at once: `--yes`, one question at a
    /// terminal listing them all (each one's data note before it), or a piped `y` line.
    /// Whether it asked at a terminal.
    fn confirm_all(&self, ctx: &Context, planned: &[Planned]) -> Result<bool> {
        let at_terminal = !self.yes && io::stdin().is_terminal();
        let what = match planned {
            [one] => one.what.clone(),
            several => format!(
                "{} extensions: {}",
                several.len(),
                several
                    .iter()
                    .map(|p| p.what.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        if !self.yes && !at_terminal && !piped_yes(PIPED_WAIT) {
            let it = if planned.len() == 1 { "it" } else { "them" };
            return Err(usage(format!(
                "not removing {what}: stdin is not a terminal and gave no y or yes line within {}s, so no one confirmed; pass --yes to remove {it}",
                PIPED_WAIT.as_secs()
            )));
        }
        if at_terminal {
            // Before the question, so that the answer can take it into account.
            for note in planned.iter().filter_map(|p| p.note.as_ref()) {
                ctx.out.note(note);
            }
            if !confirm(&ctx.out, &format!("remove {what}? [y/N] "))? {
                return Err(decline("nothing was removed (the answer was not yes)"));
            }
        }
        Ok(at_terminal)
    }

    /// Removes one confirmed extension, atomically: its data saved first with
    /// `--keep-data`, then the folder moved out and deleted, then its project file entry.
    fn remove_one(&self, ctx: &Context, plan: &Planned, at_terminal: bool) -> Result<Removed> {
        let target = &plan.target;
        let store = Store::open(ctx.layout.scope(target.scope))?;
        if store.existing(target.folder_name()).is_none() {
            return Err(store.gone_meanwhile(target.name()));
        }
        store.check_same_filesystem()?;
        if let (false, Some(note)) = (at_terminal, &plan.note) {
            ctx.out.note(note);
        }
        let data = Data::of(ctx, target);
        let (data, backup) = if self.keep_data {
            // Under the lock: what is there now is what is saved.
            let data = data?;
            let backup = save_data(&store, target, &data).with_context(|| {
                format!("cannot save {}'s data; nothing was removed", target.name())
            })?;
            (data, backup)
        } else {
            (data.unwrap_or(Data::Unknown), None)
        };
        store.remove(target.folder_name())?;
        drop(store);
        let project_file = self.drop_from_file(ctx, target, at_terminal)?;
        let kept = backup.as_ref().map(|backup| {
            let saved = match &data {
                Data::Listed(items) => format!(
                    "{} created by the extension ({})",
                    count(items),
                    first_few(items.iter().map(|(_, n)| n), LISTED)
                ),
                _ => "the whole folder".into(),
            };
            format!("{saved} in {}", backup.display())
        });
        Ok(Removed {
            name: target.name().to_string(),
            scope: target.scope,
            dir: target.dir.display().to_string(),
            linked: target.link_target.as_ref().map(|t| t.display().to_string()),
            data: data.names(),
            backup: backup.map(|b| b.display().to_string()),
            project_file,
            kept,
        })
    }

    /// When the scope's project file names the removed extension: keeps the entry with
    /// `--keep-in-file`, asks at a terminal, and otherwise drops it (and its lock entry).
    fn drop_from_file(
        &self,
        ctx: &Context,
        target: &Installed,
        at_terminal: bool,
    ) -> Result<Option<InFile>> {
        let at = Where::of(&ctx.layout, target.scope);
        let path = at.project_file();
        let Some(mut file) = ProjectFile::load(&path)? else {
            return Ok(None);
        };
        if !file.extensions.contains_key(&target.dir_name) {
            return Ok(None);
        }
        let shown = path.display().to_string();
        let drop = !self.keep_in_file
            && (!at_terminal
                || confirm(
                    &ctx.out,
                    &format!("also drop {} from {shown}? [y/N] ", target.name()),
                )?);
        if drop {
            file.extensions.remove(&target.dir_name);
            file.save(&path)?;
            crate::project::ignore::keep_managed_out(
                &at,
                file.extensions.keys().map(String::as_str),
            )?;
            if let Some(mut lock) = Lock::load(&at.lock_file())?
                && lock.extensions.remove(&target.dir_name).is_some()
            {
                lock.save(&at.lock_file())?;
            }
        }
        Ok(Some(InFile {
            path: shown,
            dropped: drop,
        }))
    }
}

/// Asks on stderr (escaped, as it names a folder) and reads one line from the terminal;
/// only "y" or "yes" agree.
fn confirm(out: &Output, question: &str) -> Result<bool> {
    out.ask(question)?;
    let mut answer = String::new();
    io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// How long `remove` without a terminal waits for a piped answer (`echo y | zot ext remove`).
const PIPED_WAIT: Duration = Duration::from_secs(1);

/// The longest piped answer read; a longer first line is no yes.
const PIPED_LONGEST: usize = 64;

/// Whether stdin, which is not a terminal, gives a `y` or `yes` line (any case, ended by a
/// newline or the end of input) within `wait`. Never blocks longer: stdin is polled before
/// every read, so a pipe whose writer says nothing, or keeps it open, is no answer.
fn piped_yes(wait: Duration) -> bool {
    let answer = read_piped_line(wait);
    let line = answer.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Reads stdin until a newline, its end, [`PIPED_LONGEST`] bytes or `wait`, whichever
/// comes first; what was read (nothing when stdin cannot be read).
fn read_piped_line(wait: Duration) -> Vec<u8> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdin = io::stdin();
    let deadline = Instant::now() + wait;
    let mut buf = vec![0u8; PIPED_LONGEST];
    let mut len = 0;
    while len < PIPED_LONGEST && !buf[..len].contains(&b'\n') {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let timeout = Timespec {
            tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: left.subsec_nanos().into(),
        };
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => break,
            Ok(_) if fds[0].revents().contains(PollFlags::NVAL) => break,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => break,
        }
        match rustix::io::read(&stdin, &mut buf[len..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => len += n,
        }
    }
    buf.truncate(len);
    buf
}
