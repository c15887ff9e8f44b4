//! Race suite of the torture suite: 16 `zot ext` processes at once, round after round, run
//! mixed commands (install, install --force, remove, enable, disable, update, list, info) on
//! four names in both scopes of one store: three installed from local folders (two versions
//! each), one from a loopback git daemon that gets a new commit every few rounds.
//!
//! After every round: the store invariants (every entry is one of the known versions, records
//! match, nothing temporary, lock free, staging and trash empty); no command hung; every
//! failure printed exactly one `error: ` line; and the end state of each name can be explained
//! by the successful commands in some order, each consistent with what it reported
//! ("installed" or "replaced", "already enabled" or not, the version `update` went to).
//! CI mode runs 16 × 50 rounds, `ZOT_TORTURE=long` 16 × 200; `ZOT_TORTURE_SEED=<n>` replays.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::support::git_servers::{GitDaemon, Repo};
use crate::support::invariants::{
    Checker, Expect, RecordId, Rng, Scope, Torture, Tree, Version, capture, read_record,
};
use crate::support::{Env, write_executable};

/// Race outcomes tolerated for now: listed here, they are printed but do not fail the test.
/// Empty, so each of them fails it (a command that waited for the lock re-checks what it
/// was asked to change, and records are journalled).
const KNOWN_FAILING: &[Known] = &[];

/// A race outcome that is wrong but known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    /// `update` read the record, waited for the lock while a `remove` finished, then placed
    /// the extension again: a removed extension comes back.
    UpdateRecreatesRemoved,
    /// A command that found its target before waiting for the lock fails on what a `remove`
    /// did meanwhile with a message about a missing file (`…/extension.json: not found; an
    /// extension needs extension.json…`, `…/a does not exist: No such file or directory (os
    /// error 2)`) instead of saying the extension was removed meanwhile.
    StaleTargetError,
    /// `info` ran between an install's rename and its record's (the install-record journal
    /// closes that window) and called a zot-installed extension "copied in by
    /// hand?".
    InfoWithoutRecord,
}

impl Known {
    fn stale_target_error(error: &str) -> bool {
        error.contains("extension.json: not found")
            || error.contains("does not exist: No such file or directory")
    }
}

const NAMES: [&str; 4] = ["a", "b", "c", "g"];
/// The name installed from git.
const GIT: usize = 3;
/// A new commit is pushed to the git source before every this many rounds.
const PUSH_EVERY: usize = 4;
const PROCESSES: usize = 16;
/// How long one command may take, lock waits included, before it counts as hung.
const TIMEOUT: Duration = Duration::from_secs(60);

fn rounds(torture: &Torture) -> usize {
    if torture.long { 200 } else { 50 }
}

/// What one name holds in one scope; `version` is the patch number of its manifest version
/// (`1.0.<version>`): 1 or 2 for the local sources, 101, 102... for the git commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum State {
    Absent,
    Present { version: usize, enabled: bool },
}

/// One command of the mix.
#[derive(Clone, Debug)]
enum Cmd {
    Install {
        name: usize,
        version: usize,
        scope: Scope,
        force: bool,
    },
    Remove {
        name: usize,
        scope: Scope,
    },
    Toggle {
        name: usize,
        scope: Scope,
        enable: bool,
    },
    Update {
        name: usize,
        scope: Scope,
    },
    List,
    Info {
        name: usize,
    },
}

impl Cmd {
    fn random(rng: &mut Rng) -> Cmd {
        let name = rng.below(NAMES.len());
        let scope = *rng.pick(&Scope::ALL);
        match rng.below(12) {
            0 | 1 => Cmd::Install {
                name,
                version: rng.below(2),
                scope,
                force: false,
            },
            2 | 3 => Cmd::Install {
                name,
                version: rng.below(2),
                scope,
                force: true,
            },
            4 | 5 => Cmd::Remove { name, scope },
            6 | 7 => Cmd::Toggle {
                name,
                scope,
                enable: true,
            },
            8 | 9 => Cmd::Toggle {
                name,
                scope,
                enable: false,
            },
            10 => Cmd::Update { name, scope },
            _ if rng.below(2) == 0 => Cmd::List,
            _ => Cmd::Info { name },
        }
    }

    /// The `zot ext` arguments; `url` is the git source of [`GIT`].
    fn args(&self, env: &Env, url: &str) -> Vec<String> {
        match self {
            Cmd::Install {
                name,
                version,
                scope,
                force,
            } => {
                let source = if *name == GIT {
                    url.to_string()
                } else {
                    source(env, *name, *version)
                };
                let mut args = vec!["install".into(), source];
                if *force {
                    args.push("--force".into());
                }
                if *scope == Scope::Project {
                    args.push("--project".into());
                }
                args
            }
            Cmd::Remove { name, scope } => {
                vec![
                    "remove".into(),
                    "--yes".into(),
                    NAMES[*name].into(),
                    scope.flag().into(),
                ]
            }
            Cmd::Toggle {
                name,
                scope,
                enable,
            } => {
                let verb = if *enable { "enable" } else { "disable" };
                vec![verb.into(), NAMES[*name].into(), scope.flag().into()]
            }
            Cmd::Update { name, scope } => {
                vec!["update".into(), NAMES[*name].into(), scope.flag().into()]
            }
            Cmd::List => vec!["list".into()],
            Cmd::Info { name } => vec!["info".into(), NAMES[*name].into()],
        }
    }

    /// What kind of command this is, for the counts: the verb and git or local.
    fn kind(&self) -> String {
        let verb = match self {
            Cmd::Install { force: false, .. } => "install",
            Cmd::Install { force: true, .. } => "install --force",
            Cmd::Remove { .. } => "remove",
            Cmd::Toggle { enable: true, .. } => "enable",
            Cmd::Toggle { enable: false, .. } => "disable",
            Cmd::Update { .. } => "update",
            Cmd::List => return "list".into(),
            Cmd::Info { .. } => return "info".into(),
        };
        let from = if self.key().is_some_and(|(_, n)| n == GIT) {
            "git"
        } else {
            "local"
        };
        format!("{verb} ({from})")
    }

    /// The name and scope a changing command works on.
    fn key(&self) -> Option<(Scope, usize)> {
        match self {
            Cmd::Install { name, scope, .. }
            | Cmd::Remove { name, scope }
            | Cmd::Toggle { name, scope, .. }
            | Cmd::Update { name, scope } => Some((*scope, *name)),
            Cmd::List | Cmd::Info { .. } => None,
        }
    }

    /// The states a successful run that printed `stdout` may leave after `before`; empty
    /// when `before` could not have led to that report.
    /// With `recreate`, an `update` may also find its extension removed and place it again
    /// ([`Known::UpdateRecreatesRemoved`]).
    fn after(&self, before: State, stdout: &str, recreate: bool) -> Vec<State> {
        use State::*;
        match (self, before) {
            (
                Cmd::Install {
                    name,
                    version,
                    force,
                    ..
                },
                _,
            ) => {
                // The same source at the same version, installed already: nothing changed.
                if stdout.starts_with("already installed") {
                    let same = patch(stdout.split_whitespace().nth(3).unwrap_or(""));
                    return match before {
                        Present { version: now, .. } if same == Some(now) => vec![before],
                        _ => vec![],
                    };
                }
                let replaced = stdout.starts_with("replaced");
                let fits = match before {
                    Absent => !replaced,
                    Present { .. } => *force && replaced,
                };
                // A local source installs its own version; git whatever the head was.
                let installed = patch(stdout.split_whitespace().nth(2).unwrap_or(""))
                    .filter(|p| *name == GIT || *p == version + 1);
                // `--force` keeps the replaced copy's `enabled`.
                let enabled = match before {
                    Present { enabled, .. } => enabled,
                    Absent => true,
                };
                match installed {
                    Some(version) if fits => vec![Present { version, enabled }],
                    _ => vec![],
                }
            }
            (Cmd::Remove { .. }, Present { .. }) => vec![Absent],
            (Cmd::Toggle { enable, .. }, Present { version, enabled }) => {
                let unchanged = stdout.contains("is already");
                if unchanged == (enabled == *enable) {
                    vec![Present {
                        version,
                        enabled: *enable,
                    }]
                } else {
                    vec![]
                }
            }
            (Cmd::Update { .. }, Present { .. }) if stdout.contains("is up to date") => {
                vec![before]
            }
            // An update keeps `enabled` (the source's manifest says `"enabled": true`).
            (Cmd::Update { .. }, Present { enabled, .. }) => match updated_to(stdout) {
                Some(version) => vec![Present { version, enabled }],
                None => vec![],
            },
            (Cmd::Update { .. }, Absent) if recreate => updated_to(stdout)
                .map(|version| {
                    vec![Present {
                        version,
                        enabled: true,
                    }]
                })
                .unwrap_or_default(),
            _ => vec![],
        }
    }
}

/// The version `update` reports it went to: `... -> 1.0.<patch> [commit]`.
fn updated_to(stdout: &str) -> Option<usize> {
    patch(stdout.rsplit("-> ").next()?.split_whitespace().next()?)
}

/// The patch number of `1.0.<patch>`.
fn patch(version: &str) -> Option<usize> {
    version.strip_prefix("1.0.")?.parse().ok()
}

fn source(env: &Env, name: usize, version: usize) -> String {
    env.work
        .join(format!("{}-v{}", NAMES[name], version + 1))
        .display()
        .to_string()
}

/// Writes the two versions of every name: different contents, both enabled.
fn write_sources(env: &Env) {
    for (n, name) in NAMES.iter().enumerate().take(GIT) {
        for v in 0..2 {
            let dir = Path::new(&source(env, n, v)).to_path_buf();
            fs::create_dir_all(dir.join("lib")).unwrap();
            fs::write(
                dir.join("extension.json"),
                format!(
                    "{{\n  \"name\": \"{name}\",\n  \"version\": \"1.0.{}\",\n  \"exec\": \"./run.sh\",\n  \"enabled\": true\n}}\n",
                    v + 1
                ),
            )
            .unwrap();
            write_executable(&dir.join("run.sh"), &format!("#!/bin/sh\n# {name} {v}\n"));
            for i in 0..(8 + 8 * v) {
                fs::write(
                    dir.join("lib").join(format!("{i}.txt")),
                    format!("{name} {v} {i}\n"),
                )
                .unwrap();
            }
        }
    }
}

/// The tree every (name, version, enabled) installs as, found by installing it once.
struct References {
    trees: BTreeMap<(usize, usize, bool), Tree>,
    records: BTreeMap<(usize, usize), RecordId>,
}

impl References {
    fn take(env: &Env) -> References {
        let mut trees = BTreeMap::new();
        let mut records = BTreeMap::new();
        for (n, name) in NAMES.iter().enumerate().take(GIT) {
            for v in 0..2 {
                let source = source(env, n, v);
                let (on, off, record) = install_twice(env, name, &source);
                trees.insert((n, v + 1, true), on);
                trees.insert((n, v + 1, false), off);
                records.insert((n, v + 1), record);
            }
        }
        References { trees, records }
    }

    /// Adds the git head, version `1.0.<patch>`, installing it in `scratch`.
    fn add_git(&mut self, scratch: &Env, url: &str, patch: usize) {
        let (on, off, record) = install_twice(scratch, NAMES[GIT], url);
        self.trees.insert((GIT, patch, true), on);
        self.trees.insert((GIT, patch, false), off);
        self.records.insert((GIT, patch), record);
    }

    /// Every version of every name, absent included, may be anywhere.
    fn expect(&self) -> Expect {
        let mut expect = Expect::default();
        for scope in Scope::ALL {
            for ((n, v, enabled), tree) in &self.trees {
                expect.allow(
                    scope,
                    NAMES[*n],
                    &Version {
                        label: label(*v, *enabled),
                        tree: tree.clone(),
                        record: Some(self.records[&(*n, *v)].clone()),
                    },
                );
                expect.allow_absent(scope, NAMES[*n]);
            }
        }
        expect
    }

    /// The state of `name` in `scope` on disk; `None` for a tree of no known version.
    fn observe(&self, env: &Env, scope: Scope, name: usize) -> Option<State> {
        let dir = scope.root(env).join(NAMES[name]);
        if fs::symlink_metadata(&dir).is_err() {
            return Some(State::Absent);
        }
        let tree = capture(&dir);
        self.trees
            .iter()
            .find(|((n, _, _), t)| *n == name && **t == tree)
            .map(|((_, version, enabled), _)| State::Present {
                version: *version,
                enabled: *enabled,
            })
    }
}

/// Installs `source` globally in `env`: its tree enabled and disabled, and its record; then
/// removes it again.
fn install_twice(env: &Env, name: &str, source: &str) -> (Tree, Tree, RecordId) {
    let dir = env.global_root().join(name);
    zot_ok(env, &["install", "--force", source]);
    let on = capture(&dir);
    let record = env.home.join(format!(".ext-store/sources/{name}.json"));
    let record = read_record(&record).unwrap();
    zot_ok(env, &["disable", name, "--global"]);
    let off = capture(&dir);
    zot_ok(env, &["remove", "--yes", name, "--global"]);
    (on, off, record)
}

fn label(version: usize, enabled: bool) -> String {
    format!("1.0.{version}{}", if enabled { "" } else { " disabled" })
}

/// The git source of [`GIT`]: a repository on a loopback `git daemon`, and a scratch world
/// to take the reference tree of each new commit in.
struct GitSource {
    _daemon: GitDaemon,
    repo: Repo,
    url: String,
    patch: usize,
    scratch: Env,
}

impl GitSource {
    fn start(env: &Env) -> GitSource {
        let root = env.work.join("served");
        let repo = Repo::empty(&root, NAMES[GIT]);
        let daemon = GitDaemon::start(&root);
        GitSource {
            url: daemon.url(NAMES[GIT]),
            _daemon: daemon,
            repo,
            patch: 100,
            scratch: Env::new(),
        }
    }

    /// Commits the next version (`1.0.<patch>`, its own file contents) and learns its trees.
    fn push(&mut self, refs: &mut References) {
        self.patch += 1;
        let patch = self.patch;
        self.repo.commit_with("next", |work| {
            fs::write(
                work.join("extension.json"),
                format!(
                    "{{\n  \"name\": \"g\",\n  \"version\": \"1.0.{patch}\",\n  \"exec\": \"./run.sh\",\n  \"enabled\": true\n}}\n"
                ),
            )
            .unwrap();
            write_executable(&work.join("run.sh"), &format!("#!/bin/sh\n# {patch}\n"));
            fs::create_dir_all(work.join("lib")).unwrap();
            fs::write(work.join("lib/push.txt"), format!("push {patch}\n").repeat(patch % 5 + 1))
                .unwrap();
        });
        refs.add_git(&self.scratch, &self.url, patch);
    }
}

fn zot_ok(env: &Env, args: &[&str]) {
    let mut full = vec!["ext"];
    full.extend(args);
    env.zot(&full).ok();
}

/// How one command ended.
struct Outcome {
    cmd: Cmd,
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
    hung: bool,
}

/// Starts every command at once and waits for all, killing any that outlive [`TIMEOUT`].
fn run_round(env: &Env, url: &str, cmds: Vec<Cmd>) -> Vec<Outcome> {
    let out_dir = env.work.join("out");
    fs::create_dir_all(&out_dir).unwrap();
    let mut running: Vec<(Cmd, Child)> = Vec::new();
    for (i, cmd) in cmds.into_iter().enumerate() {
        let mut full = vec!["ext".to_string()];
        full.extend(cmd.args(env, url));
        let mut run = env.zot(&full).cmd;
        run.stdin(Stdio::null())
            .stdout(File::create(out_dir.join(format!("{i}.out"))).unwrap())
            .stderr(File::create(out_dir.join(format!("{i}.err"))).unwrap());
        running.push((cmd, run.spawn().expect("spawn zot")));
    }
    let started = Instant::now();
    let mut outcomes = Vec::new();
    for (i, (cmd, mut child)) in running.into_iter().enumerate() {
        let mut hung = false;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > TIMEOUT {
                hung = true;
                let _ = child.kill();
                break child.wait().unwrap();
            }
            thread::sleep(Duration::from_millis(5));
        };
        let read =
            |ext: &str| fs::read_to_string(out_dir.join(format!("{i}.{ext}"))).unwrap_or_default();
        outcomes.push(Outcome {
            cmd,
            code: status.code(),
            signal: status.signal(),
            stdout: read("out"),
            stderr: read("err"),
            hung,
        });
    }
    outcomes
}

/// Whether some order of `ops` (each successful, with what it printed) leads from `before`
/// to `after`.
fn explainable(before: State, ops: &[(&Cmd, &str)], after: State, recreate: bool) -> bool {
    let mut seen = HashSet::new();
    let mut search = |state, done| search(state, done, ops, after, recreate, &mut seen);
    search(before, 0u32)
}

/// Depth-first over the orders of `ops` not yet `done` (a bit set), from `state`.
fn search(
    state: State,
    done: u32,
    ops: &[(&Cmd, &str)],
    after: State,
    recreate: bool,
    seen: &mut HashSet<(State, u32)>,
) -> bool {
    if done.count_ones() as usize == ops.len() {
        return state == after;
    }
    if !seen.insert((state, done)) {
        return false;
    }
    (0..ops.len()).any(|i| {
        done & (1 << i) == 0
            && ops[i]
                .0
                .after(state, ops[i].1, recreate)
                .into_iter()
                .any(|next| search(next, done | (1 << i), ops, after, recreate, seen))
    })
}

/// The race suite's bookkeeping across rounds.
struct Races {
    env: Env,
    refs: References,
    git: GitSource,
    torture: Torture,
    /// (round, what went wrong)
    failures: Vec<(usize, String)>,
    /// (round, a wrong outcome listed in [`KNOWN_FAILING`])
    known: Vec<(usize, String)>,
    /// Every distinct error message (paths replaced by `<tmp>`), with how often it came.
    errors: BTreeMap<String, usize>,
    commands: usize,
    succeeded: usize,
    /// Per kind of command (`install g`, `update local`...): how many succeeded and failed.
    kinds: BTreeMap<String, (usize, usize)>,
}

impl Races {
    fn new() -> Races {
        let env = Env::new();
        write_sources(&env);
        let mut refs = References::take(&env);
        let mut git = GitSource::start(&env);
        git.push(&mut refs);
        Races {
            env,
            refs,
            git,
            torture: Torture::from_env(),
            failures: Vec::new(),
            known: Vec::new(),
            errors: BTreeMap::new(),
            commands: 0,
            succeeded: 0,
            kinds: BTreeMap::new(),
        }
    }

    fn observe_all(&self) -> BTreeMap<(Scope, usize), Option<State>> {
        let mut states = BTreeMap::new();
        for scope in Scope::ALL {
            for n in 0..NAMES.len() {
                states.insert((scope, n), self.refs.observe(&self.env, scope, n));
            }
        }
        states
    }

    fn run(&mut self, rounds: usize) {
        let mut rng = self.torture.rng("torture_races");
        let mut expect = self.refs.expect();
        let mut before = self.observe_all();
        for round in 0..rounds {
            if round % PUSH_EVERY == PUSH_EVERY - 1 {
                self.git.push(&mut self.refs);
                expect = self.refs.expect();
            }
            let cmds: Vec<Cmd> = (0..PROCESSES).map(|_| Cmd::random(&mut rng)).collect();
            let outcomes = run_round(&self.env, &self.git.url, cmds);
            for outcome in &outcomes {
                self.judge(round, outcome);
            }
            for v in (Checker {
                env: &self.env,
                expect: &expect,
            })
            .settled()
            {
                self.failures.push((round, v.to_string()));
            }
            let after = self.observe_all();
            self.explain(round, &outcomes, &before, &after);
            before = after;
        }
    }

    /// Exit status and stderr of one command.
    fn judge(&mut self, round: usize, o: &Outcome) {
        self.commands += 1;
        let counts = self.kinds.entry(o.cmd.kind()).or_default();
        if o.code == Some(0) {
            counts.0 += 1;
        } else {
            counts.1 += 1;
        }
        let what = format!("zot ext {}", o.cmd.args(&self.env, &self.git.url).join(" "));
        if o.hung {
            self.failures.push((
                round,
                format!("{what} hung for {TIMEOUT:?}; stderr: {}", o.stderr),
            ));
            return;
        }
        let errors: Vec<&str> = o
            .stderr
            .lines()
            .filter(|l| l.starts_with("error: "))
            .collect();
        match o.code {
            Some(0) => {
                self.succeeded += 1;
                if matches!(o.cmd, Cmd::Info { .. }) && o.stdout.contains("by hand") {
                    self.known(
                        round,
                        Known::InfoWithoutRecord,
                        &format!("{what}: {}", o.stdout),
                    );
                }
                if !errors.is_empty() {
                    self.failures
                        .push((round, format!("{what} succeeded but printed {errors:?}")));
                }
                return;
            }
            Some(1) if errors.len() == 1 => {}
            _ => {
                self.failures.push((
                    round,
                    format!(
                        "{what} ended with code {:?} signal {:?} and {} error lines: {:?}",
                        o.code,
                        o.signal,
                        errors.len(),
                        o.stderr
                    ),
                ));
            }
        }
        if matches!(o.cmd, Cmd::List) {
            self.failures
                .push((round, format!("{what} failed: {}", o.stderr.trim())));
        }
        for error in errors {
            let base = self.env.home.parent().unwrap().display().to_string();
            let error = error.replace(&base, "<tmp>");
            if Known::stale_target_error(&error) {
                self.known(round, Known::StaleTargetError, &format!("{what}: {error}"));
            }
            *self.errors.entry(error).or_default() += 1;
        }
    }

    /// A known wrong outcome: printed, and a failure only once its kind is off the list.
    fn known(&mut self, round: usize, kind: Known, detail: &str) {
        if KNOWN_FAILING.contains(&kind) {
            self.known.push((round, format!("[{kind:?}] {detail}")));
        } else {
            self.failures.push((round, format!("[{kind:?}] {detail}")));
        }
    }

    /// Each name's new state must follow from its successful commands in some order.
    fn explain(
        &mut self,
        round: usize,
        outcomes: &[Outcome],
        before: &BTreeMap<(Scope, usize), Option<State>>,
        after: &BTreeMap<(Scope, usize), Option<State>>,
    ) {
        for (key, now) in after {
            let (Some(was), Some(now)) = (before[key], *now) else {
                continue; // an unknown tree is reported by the invariant check
            };
            let ops: Vec<(&Cmd, &str)> = outcomes
                .iter()
                .filter(|o| o.code == Some(0) && o.cmd.key() == Some(*key))
                .map(|o| (&o.cmd, o.stdout.as_str()))
                .collect();
            if ops.len() > 20 || explainable(was, &ops, now, false) {
                continue;
            }
            let (scope, n) = key;
            let reported: Vec<String> = ops
                .iter()
                .map(|(cmd, out)| {
                    let args = cmd.args(&self.env, &self.git.url).join(" ");
                    format!("{args} => {}", out.trim())
                })
                .collect();
            if explainable(was, &ops, now, true) {
                self.known(
                    round,
                    Known::UpdateRecreatesRemoved,
                    &format!("{} ({scope:?}): {reported:?}", NAMES[*n]),
                );
                continue;
            }
            self.failures.push((
                round,
                format!(
                    "{} ({scope:?}) went from {was:?} to {now:?}, which no order of the successful commands explains: {reported:#?}",
                    NAMES[*n]
                ),
            ));
        }
    }

    fn finish(self, rounds: usize) {
        let errors: Vec<String> = self
            .errors
            .iter()
            .map(|(e, count)| format!("  {count} × {e}"))
            .collect();
        eprintln!(
            "torture_races: {rounds} rounds × {PROCESSES} processes, {} commands, {} succeeded ({:?} as (ok, failed)); distinct errors:\n{}",
            self.commands,
            self.succeeded,
            self.kinds,
            errors.join("\n")
        );
        eprintln!(
            "{} known-failing outcomes (KNOWN_FAILING):",
            self.known.len()
        );
        for (round, known) in self.known.iter().take(20) {
            eprintln!("  round {round}: {known}");
        }
        let failures: Vec<String> = self
            .failures
            .iter()
            .take(30)
            .map(|(round, f)| format!("  round {round}: {f}"))
            .collect();
        assert!(
            self.failures.is_empty(),
            "{} race failures ({}):\n{}\ndistinct errors:\n{}",
            self.failures.len(),
            self.torture.replay("torture_races::sixteen_processes"),
            failures.join("\n"),
            errors.join("\n")
        );
    }
}

#[test]
fn sixteen_processes() {
    let mut races = Races::new();
    let rounds = rounds(&races.torture);
    let test = "torture_races::sixteen_processes";
    eprintln!("{test}: {}", races.torture.replay(test));
    races.run(rounds);
    races.finish(rounds);
}

/// The order search accepts what can happen and refuses what cannot.
#[test]
fn explainable_orders() {
    use State::*;
    let on = |version| Present {
        version,
        enabled: true,
    };
    let install = Cmd::Install {
        name: 0,
        version: 1,
        scope: Scope::Global,
        force: false,
    };
    let remove = Cmd::Remove {
        name: 0,
        scope: Scope::Global,
    };
    let disable = Cmd::Toggle {
        name: 0,
        scope: Scope::Global,
        enable: false,
    };
    let ops = [
        (&install, "installed a 1.0.2 (global) in /x/a"),
        (&remove, "removed a"),
    ];
    // install then remove, or remove then install
    assert!(explainable(Absent, &ops, Absent, false));
    assert!(explainable(on(1), &ops, on(2), false));
    // the second local version reports 1.0.2, nothing else
    let wrong = [(&install, "installed a 1.0.1 (global) in /x/a")];
    assert!(!explainable(Absent, &wrong, on(1), false));
    // two successful plain installs need a remove in between
    let installed = "installed a 1.0.2 (global) in /x/a";
    let twice = [(&install, installed), (&install, installed)];
    assert!(!explainable(Absent, &twice, on(2), false));
    // a git install is whatever version it reports
    let git = Cmd::Install {
        name: GIT,
        version: 0,
        scope: Scope::Global,
        force: true,
    };
    let replaced = [(&git, "replaced g 1.0.104 (global) in /x/g")];
    assert!(explainable(on(103), &replaced, on(104), false));
    assert!(!explainable(Absent, &replaced, on(104), false));
    // a disable that says it changed something cannot have found it disabled
    let off = Present {
        version: 1,
        enabled: false,
    };
    assert!(!explainable(
        off,
        &[(&disable, "disabled a (global)")],
        off,
        false
    ));
    assert!(explainable(
        off,
        &[(&disable, "a (global) is already disabled")],
        off,
        false
    ));
    // an update after a remove brings the extension back only when recreating is allowed
    let update = Cmd::Update {
        name: 0,
        scope: Scope::Global,
    };
    let ops = [
        (&remove, "removed a"),
        (&update, "updated a (global): 1.0.1 -> 1.0.1"),
    ];
    assert!(!explainable(on(1), &ops, on(1), false));
    assert!(explainable(on(1), &ops, on(1), true));
    // a git update goes where it says; up to date changes nothing
    let update = Cmd::Update {
        name: GIT,
        scope: Scope::Global,
    };
    let moved = [(
        &update,
        "updated g (global): 1.0.101 1a2b3c4 -> 1.0.103 5d6e7f8",
    )];
    assert!(explainable(on(101), &moved, on(103), false));
    let same = [(&update, "g (global) is up to date (1.0.103 5d6e7f8)")];
    assert!(explainable(on(103), &same, on(103), false));
    assert!(!explainable(on(103), &same, on(104), false));
}
