//! The one pipeline every tree takes into the store: stage (the source's kind fetches it,
//! [`fetch`]; the tree is validated and prepared), then place (carry the replaced copy's
//! files over, publish tree, record and file list through the journal, rotate the backups).
//! `install`, `add` and `sync` run all of it; `update` compares first ([`replace`]),
//! `prepare` stages the installed files again ([`again`]), a dry run stages into
//! [`trial_store`], and `new` and `link` place what they wrote ([`Ready::written`]). Staging
//! changes nothing in the extensions root, so a caller may stage several extensions, check
//! them all, and place them only then.

pub(crate) mod again;
pub(crate) mod fetch;
pub(crate) mod replace;

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::catalog::manifest::Manifest;
use crate::check::Problem;
use crate::output::Output;
use crate::source::copy::LooseLink;
use crate::store::carry::{self, Options, Plan, Prepared};
use crate::store::filelist::FileList;
use crate::store::record::Record;
use crate::store::{Placement, Published, Store};
use fetch::Staged;

/// What to install, and how.
pub(crate) struct Request<'a> {
    pub fetch: crate::source::Fetch<'a>,
    /// Replace an installed copy of the same name (carrying its files over); without it, an
    /// installed copy is an error.
    pub replace: bool,
    pub carry: Options,
    /// Place the tree exactly as fetched: `enabled` is not written into the staged manifest
    /// (the caller sets it afterwards), so the file list's tree hash is the fetched tree's.
    pub as_fetched: bool,
    /// The tree hash the fetched tree must have (`sync --frozen`); a different one fails
    /// before anything is placed.
    pub expect_tree: Option<&'a str>,
    /// The build or dependency install the staged folder needs ([`crate::prepare`]).
    pub prepare: &'a crate::prepare::Options,
}

/// A validated tree in staging, not placed yet.
pub(crate) struct Ready {
    pub staged: Staged,
    /// Its folder in the extensions root: the manifest's name, or the installed copy's
    /// folder a new version of it replaces.
    folder: String,
    carry: Carry,
    replace: bool,
}

/// How the files of the copy a tree replaces come into it.
enum Carry {
    /// Worked out while placing, with these options (`install`, `add`, `sync`).
    Options(Options),
    /// Worked out already: `update` compared the new version first, `prepare` judged the
    /// installed copy against its source files only.
    Planned(Plan),
    /// Nothing is carried: a link to a working copy replaces the copy (`link --force`), or
    /// nothing is installed (`new`).
    Nothing,
}

/// What [`Ready::place`] did.
pub(crate) struct Outcome {
    pub manifest: Manifest,
    pub record: Record,
    pub outside_links: Vec<LooseLink>,
    /// Whether the local source's own `.zot/` folder was left out of the copy.
    pub left_out_project_state: bool,
    pub dest: PathBuf,
    /// An installed copy was replaced; then what was carried over, saved or overwritten.
    pub carried: Option<Plan>,
    /// The tree hash of the placed file list (what `zot ext info` shows as `tree_hash`).
    pub tree: String,
    /// The tree is in place but its record was not saved (the journal saves it next run).
    pub record_error: Option<anyhow::Error>,
    /// What is wrong with the placed copy but did not stop the install: its `exec` not
    /// there ([`exec_warnings`]).
    pub warnings: Vec<Problem>,
}

/// A store of `scope` in a temporary folder, for dry runs (`install --dry-run`, `update
/// --dry-run`): staged there, nothing reaches the real one. It lives as long as the
/// returned folder.
pub(crate) fn trial_store(
    scope: crate::catalog::paths::Scope,
) -> Result<(Store, tempfile::TempDir)> {
    let base = tempfile::tempdir()
        .map_err(|e| anyhow::anyhow!("cannot create a temporary folder for the dry run: {e}"))?;
    let store = Store::open(&crate::catalog::paths::ScopeDirs {
        scope,
        base: base.path().to_path_buf(),
    })?;
    Ok((store, base))
}

/// What installing would do, found in a store in a temporary folder ([`trial`]).
pub(crate) struct Tried {
    pub staged: Staged,
    /// What replacing the installed copy of the name would carry over, save or overwrite;
    /// `None` when none is installed.
    pub carry_over: Option<Plan>,
    /// The temporary store's folder, deleted with this.
    _base: tempfile::TempDir,
}

/// A dry run (`install --dry-run`, `add --dry-run`): the source checked as an install into
/// `dirs` checks it, staged into [`trial_store`], and the carry-over an install with
/// `carry` would do worked out; `dirs`'s store, its lock and the fetch cache are untouched.
pub(crate) fn trial(
    dirs: &crate::catalog::paths::ScopeDirs,
    fetch: &crate::source::Fetch,
    carry: Options,
    out: &Output,
) -> Result<Tried> {
    // Refused as the install refuses it (a folder inside the extensions root, say).
    fetch.source.check_local(dirs)?;
    let (store, base) = trial_store(dirs.scope)?;
    let staged = fetch::stage(&store, fetch, out)?;
    let name = &staged.manifest.name;
    let installed = std::fs::symlink_metadata(dirs.extension(name)).is_ok();
    let carry_over = installed
        .then(|| carry::plan_for(dirs, &staged.staging, name, carry, &[]))
        .transpose()?;
    Ok(Tried {
        staged,
        carry_over,
        _base: base,
    })
}

/// Stages `request` and places it: [`stage`] then [`Ready::place`].
pub(crate) fn install_one(store: &Store, request: &Request, out: &Output) -> Result<Outcome> {
    stage(store, request, out)?.place(store)
}

/// Copies or clones the source into staging and validates it; refuses an installed copy of
/// the same name unless `replace`. Nothing in the extensions root changes.
pub(crate) fn stage(store: &Store, request: &Request, out: &Output) -> Result<Ready> {
    let staged = fetch::stage(store, &request.fetch, out)?;
    if !request.replace
        && let Some(same) = AlreadyInstalled::check(store, &staged)
    {
        return Err(same.into());
    }
    refuse_existing(store, &staged.manifest.name, request.replace)?;
    if let Some(want) = request.expect_tree {
        let found = staged.files.tree_hash();
        if found != want {
            bail!("the fetched tree hashes to {found}, not {want} as locked; nothing was changed");
        }
    }
    let mut staged = staged;
    prepare(&mut staged, request.prepare, out)?;
    let mut carry = request.carry;
    if request.as_fetched {
        carry.enabled = Some(staged.manifest.enabled);
    }
    Ok(Ready {
        folder: staged.manifest.name.clone(),
        staged,
        carry: Carry::Options(carry),
        replace: request.replace,
    })
}

impl Ready {
    /// A new version of the installed copy in `folder`, its files carried over as `plan`
    /// says (`update`, `prepare`).
    pub(crate) fn over(staged: Staged, folder: &str, plan: Plan) -> Ready {
        Ready {
            staged,
            folder: folder.to_string(),
            carry: Carry::Planned(plan),
            replace: true,
        }
    }

    /// A tree zot wrote itself (`new`), or a link to a working copy (`link`), placed
    /// under `record`'s name with nothing carried into it; an installed copy is replaced
    /// only when `replace`.
    pub(crate) fn written(
        staging: crate::store::Staging,
        manifest: Manifest,
        record: Record,
        files: FileList,
        replace: bool,
    ) -> Ready {
        Ready {
            folder: record.name.clone(),
            staged: Staged {
                staging,
                manifest,
                record,
                outside_links: Vec::new(),
                left_out_project_state: false,
                files,
                origin: None,
            },
            carry: Carry::Nothing,
            replace,
        }
    }

    /// Carries the replaced copy's files into the staged tree and publishes it atomically.
    pub(crate) fn place(self, store: &Store) -> Result<Outcome> {
        let mut placed = place_all(store, vec![self]);
        placed.pop().expect("one outcome for one tree")
    }
}

/// A staged tree whose replaced copy's files are carried over, ready to publish.
struct Carried {
    staged: Staged,
    folder: String,
    plan: Plan,
    /// What the tree places (before anything was carried into it); `None` for a link.
    files: Option<FileList>,
    replaced: bool,
}

/// [`Ready::place`] for many trees at once (`sync`): each is carried over, then all are
/// published together ([`Store::publish_all`]: four flushes to disk for the whole batch,
/// each extension still old or new whatever instant the run is killed at). Outcomes in the
/// order given; one that fails leaves the others going. The one way a tree enters the store.
pub(crate) fn place_all(store: &Store, ready: Vec<Ready>) -> Vec<Result<Outcome>> {
    let carried: Vec<Result<Carried>> = ready.into_iter().map(|r| r.carry(store)).collect();
    let placements: Vec<Placement> = carried
        .iter()
        .flatten()
        .map(|c| Placement {
            staging: &c.staged.staging,
            name: &c.folder,
            replace: c.replaced,
            record: &c.staged.record,
            files: c.files.as_ref(),
        })
        .collect();
    let mut published = store.publish_all(&placements).into_iter();
    drop(placements);
    carried
        .into_iter()
        .map(|carried| {
            let carried = carried?;
            let published = published.next().expect("one result per placement")?;
            Ok(carried.outcome(store, published))
        })
        .collect()
}

impl Ready {
    /// Carries the replaced copy's files into the staged tree (see [`carry::prepare`]).
    fn carry(self, store: &Store) -> Result<Carried> {
        let Ready {
            mut staged,
            folder,
            carry,
            replace,
        } = self;
        let replaced = refuse_existing(store, &folder, replace)?;
        let dirs = &store.dirs;
        // Handed on, not copied: carry-over returns the list of what is placed.
        let files = std::mem::take(&mut staged.files);
        let staging = &staged.staging;
        let Prepared { plan, files } = match carry {
            Carry::Options(options) => {
                let prepared = staged.record.prepared.as_ref();
                let outputs = prepared.map(|p| p.outputs.as_slice());
                let outputs = outputs.unwrap_or_default();
                carry::prepare(store, dirs, staging, &folder, options, files, outputs)?
            }
            Carry::Planned(plan) => carry::carry_out(store, dirs, staging, &folder, plan, files)?,
            Carry::Nothing => Prepared {
                plan: Plan::default(),
                files,
            },
        };
        // A link is not a tree: it has no file list.
        let is_tree = std::fs::symlink_metadata(staging.tree()).is_ok_and(|m| m.is_dir());
        Ok(Carried {
            staged,
            folder,
            plan,
            files: is_tree.then_some(files),
            replaced,
        })
    }
}

impl Carried {
    /// What placing it did, once published; deletes its oldest saved copies.
    fn outcome(self, store: &Store, published: Published) -> Outcome {
        let Carried {
            staged,
            folder,
            plan,
            files,
            replaced,
        } = self;
        let _ = store.rotate_backups(&folder);
        let tree = files.as_ref().map(FileList::tree_hash).unwrap_or_default();
        if let Some(files) = files {
            files.drop_aside();
        }
        let warnings = exec_warnings(&published.dest, &staged.manifest);
        Outcome {
            warnings,
            manifest: staged.manifest,
            record: staged.record,
            outside_links: staged.outside_links,
            left_out_project_state: staged.left_out_project_state,
            dest: published.dest,
            carried: replaced.then_some(plan),
            tree,
            record_error: published.record_error,
        }
    }
}

/// Runs the build or dependency install of the installed extension `manifest.name` (at
/// `dir`, listed by `files`, recorded by `record`) again: a copy of what its install placed
/// is staged, prepared, and swapped in over the installed copy ([`again`]: its runtime files
/// carried over, its edits kept, through the journal). `None`: nothing to prepare (nothing
/// changed). The caller holds `store`'s lock.
pub(crate) fn prepare_again(
    store: &Store,
    installed: Installed<'_>,
    options: &crate::prepare::Options,
    out: &Output,
) -> Result<Option<Outcome>> {
    let mut staged = again::stage(
        store,
        installed.dir,
        installed.manifest,
        installed.record,
        installed.files,
    )?;
    if !prepare(&mut staged, options, out)? {
        return Ok(None);
    }
    let plan = again::carry_plan(store, &staged, installed.record)?;
    let folder = staged.manifest.name.clone();
    Ready::over(staged, &folder, plan).place(store).map(Some)
}

/// An installed extension, as [`prepare_again`] reads it.
#[derive(Clone, Copy)]
pub(crate) struct Installed<'a> {
    pub dir: &'a std::path::Path,
    pub manifest: &'a Manifest,
    pub record: &'a Record,
    pub files: &'a crate::store::filelist::FileList,
}

/// Runs the build or dependency install the staged tree needs ([`crate::prepare`]),
/// records it and lists what it made as prepared outputs; whether the tree is prepared. A
/// tree a registry sent built for this platform is placed as published: nothing runs.
pub(crate) fn prepare(
    staged: &mut Staged,
    options: &crate::prepare::Options,
    out: &Output,
) -> Result<bool> {
    if staged.record.platform.is_some() {
        return Ok(staged.record.prepared.is_some());
    }
    let tree = staged.staging.tree();
    let scratch = staged.staging.scratch("prepare");
    let _interrupted = staged.staging.removed_on_signal()?;
    let done = crate::prepare::prepare(
        &tree,
        &scratch,
        &staged.manifest,
        options,
        staged.origin.as_ref(),
        out,
    )?;
    if let Some(done) = &done {
        // What it made is listed as prepared, the modes of everything placed made safe.
        staged.files.add_prepared(&tree, &done.outputs)?;
        staged.files.drop_unsafe_modes(&tree)?;
    }
    let ran = done.is_some();
    staged.record.prepared = done;
    Ok(ran)
}

/// The warnings for a placed copy zot cannot start as it is, with a fix that points at the
/// source (an edit in the store goes with the next update): an `exec` that is not there
/// (after the prepare step, which may have built it; the fix is the build where
/// [`crate::check::build_hint`] knows one), not executable, or a bare name not on PATH;
/// and a venv preparing made that `exec` does not run. Not refusals: the user may fix it
/// in place.
pub(crate) fn exec_warnings(dir: &Path, manifest: &Manifest) -> Vec<Problem> {
    let place = crate::check::prepare_hint::Place::Installed {
        name: &manifest.name,
        shadowed: false,
    };
    let mut warnings = Vec::new();
    if let Err(e) = crate::check::build_hint::resolve(dir, manifest, place) {
        let why = if e.missing {
            ", so zot cannot start it"
        } else {
            ""
        };
        warnings.push(Problem::warning(
            format!("{}: {}{why}", manifest.name, e.message),
            e.fix,
        ));
    }
    if let Some((what, fix)) = crate::check::prepare_hint::venv_bypassed(dir, manifest) {
        warnings.push(Problem::warning(format!("{}: {what}", manifest.name), fix));
    }
    warnings
}

/// `problem` as one line of text: the message, then the fix.
pub(crate) fn warning_line(problem: &Problem) -> String {
    match &problem.fix {
        Some(fix) => format!("{}; {fix}", problem.message),
        None => problem.message.clone(),
    }
}

/// What is asked for is installed already: the same source (and subfolder and commit) and
/// the same tree. Setup scripts and CI run an install again; that is no error (exit 0).
#[derive(Debug)]
pub(crate) struct AlreadyInstalled {
    pub name: String,
    pub version: Option<String>,
    pub dest: PathBuf,
    /// The installed copy's record and tree hash (for a lock entry).
    pub record: Record,
    pub tree: String,
}

impl std::fmt::Display for AlreadyInstalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is already installed at {} (same source, same version); nothing to do",
            self.name,
            self.dest.display()
        )
    }
}

impl std::error::Error for AlreadyInstalled {}

impl AlreadyInstalled {
    /// `Some` when the installed copy of the staged tree's name came from the same source
    /// (subfolder, commit) and its file list hashes as the staged tree does.
    fn check(store: &Store, staged: &Staged) -> Option<AlreadyInstalled> {
        let name = &staged.manifest.name;
        let dest = store.existing(name)?;
        let record = Record::load(&store.dirs, name)?;
        let wanted = &staged.record;
        let same_source = record.source == wanted.source
            && record.subdir == wanted.subdir
            && record.commit == wanted.commit
            && record.kind == wanted.kind;
        let placed = crate::store::filelist::FileList::load(&store.dirs, name)?;
        let tree = staged.files.tree_hash();
        (same_source && placed.tree_hash() == tree).then(|| AlreadyInstalled {
            name: name.clone(),
            version: staged.manifest.version.clone(),
            dest,
            record,
            tree,
        })
    }
}

/// The "already installed" outcome of `error`, if it is one.
pub(crate) fn already_installed(error: &anyhow::Error) -> Option<&AlreadyInstalled> {
    error.downcast_ref::<AlreadyInstalled>()
}

/// Fails when `name` is installed and `replace` is off; otherwise says whether an installed
/// copy will be replaced.
pub(crate) fn refuse_existing(store: &Store, name: &str, replace: bool) -> Result<bool> {
    let exists = store.existing(name).is_some();
    if exists && !replace {
        bail!(
            "extension \"{name}\" is already installed at {}; pass --force to replace it (nothing was changed)",
            store.dirs.extension(name).display()
        );
    }
    Ok(exists)
}
