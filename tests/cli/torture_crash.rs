//! Crash harness of the torture suite: kills `zot` with SIGKILL at random moments (seeded,
//! spread over the command's measured duration) and at every named crash point of
//! `src/fsx/crashpoint.rs`, during `install` (local folder and git), `install --force`, `update`
//! (git, after a new commit was pushed), `remove`, `enable` and `disable`, in both scopes.
//!
//! After each kill: the store invariants at any instant (trees are the old or the new version,
//! manifests parse, nothing temporary in a root, the lock is free); then `zot ext list` must
//! succeed and leave the store settled (records match trees; staging, trash and pending
//! empty), also when a first run of it was killed too; then the command that finishes the operation must succeed and leave exactly the new
//! version. CI mode (plain `cargo test`) kills a few times per operation; `ZOT_TORTURE=long`
//! kills many more. `ZOT_TORTURE_SEED=<n>` replays a run.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::support::git_servers::{GitDaemon, Repo};
use crate::support::invariants::{
    Checker, Expect, Found, RecordId, Rule, Scope, Torture, Tree, Version, Violation, capture,
    read_record,
};
use crate::support::{Done, Env, REPLACE_POINTS, write_executable};

/// Invariants tolerated after a kill: listed here, their violations are printed but do not
/// fail the test. Empty, so every rule holds. What keeps them: the install-record journal in
/// `.ext-store/pending/` (no record missing after `place.after`, stale after
/// `install --force`/`update` or orphaned after `remove.moved`; no `sources/.tmp*`), temporary
/// manifests of `enable`/`disable` written outside extension folders (no `.extension.json.*`
/// left), and the crash points called from the code (else a named point is never reached).
const KNOWN_FAILING: &[Rule] = &[];

/// The extension every operation works on, and the ones that must never change.
const VICTIM: &str = "victim";
const KEEP: &str = "keep";

/// The command run after each kill, which must succeed and settle the store: resolve the
/// pending journal, match records to trees and empty staging, trash and pending (`list` tidies
/// both scopes when nobody holds their lock).
const SETTLE: &[&str] = &["list"];

/// How long any one command may run before it counts as hung.
const TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    InstallLocal,
    InstallGit,
    InstallForce,
    Update,
    Remove,
    Enable,
    Disable,
}

impl Op {
    const ALL: [Op; 7] = [
        Op::InstallLocal,
        Op::InstallGit,
        Op::InstallForce,
        Op::Update,
        Op::Remove,
        Op::Enable,
        Op::Disable,
    ];

    /// The named crash points this operation passes.
    fn points(self) -> &'static [&'static str] {
        match self {
            Op::InstallLocal | Op::InstallGit | Op::InstallForce | Op::Update => &REPLACE_POINTS,
            Op::Remove => &["remove.moved", "remove.unrecorded"],
            Op::Enable | Op::Disable => &["toggle.temp", "toggle.after"],
        }
    }

    fn uses_git(self) -> bool {
        matches!(self, Op::InstallGit | Op::Update)
    }

    fn test_name(self) -> &'static str {
        match self {
            Op::InstallLocal => "torture_crash::install_local",
            Op::InstallGit => "torture_crash::install_git",
            Op::InstallForce => "torture_crash::install_force",
            Op::Update => "torture_crash::update_git",
            Op::Remove => "torture_crash::remove",
            Op::Enable => "torture_crash::enable",
            Op::Disable => "torture_crash::disable",
        }
    }
}

/// The crash points `src/fsx/crashpoint.rs` declares in `POINTS`, read from its source so this
/// suite follows the list as it grows.
fn declared_points() -> Vec<String> {
    let source = include_str!("../../src/fsx/crashpoint.rs");
    let start = source
        .find("const POINTS")
        .expect("src/fsx/crashpoint.rs declares POINTS");
    let list = &source[start..];
    let list = &list[list.find("= &[").expect("POINTS = &[...]")..];
    let list = &list[..list.find("];").expect("POINTS ends with ];")];
    list.lines()
        .map(str::trim)
        .filter(|line| line.starts_with('"'))
        .map(|line| line.trim_end_matches(',').trim_matches('"').to_string())
        .collect()
}

/// When to kill the command.
#[derive(Clone, Copy, Debug)]
enum Kill {
    /// SIGKILL from outside, this long after the start.
    After(Duration),
    /// `ZOT_EXT_CRASH_AT=<point>`: zot kills itself there.
    At(&'static str),
}

impl fmt::Display for Kill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kill::After(d) => write!(f, "kill after {} µs", d.as_micros()),
            Kill::At(point) => write!(f, "crash point {point}"),
        }
    }
}

/// A git repository served on loopback, whose head alternates between two contents.
struct Git {
    _daemon: GitDaemon,
    repo: Repo,
    url: String,
    /// Which of the two contents the head holds.
    head: usize,
}

impl Git {
    fn start(env: &Env) -> Git {
        let root = env.work.join("served");
        let repo = Repo::from_dir(&root, VICTIM, &env.work.join("src-v1"));
        let daemon = GitDaemon::start(&root);
        let url = daemon.url(VICTIM);
        let mut git = Git {
            _daemon: daemon,
            repo,
            url,
            head: 1,
        };
        git.push_other(); // content A
        git
    }

    /// Pushes a commit that switches the head to the other content.
    fn push_other(&mut self) -> String {
        self.head = 1 - self.head;
        let head = self.head;
        self.repo.commit_with("switch", |work| {
            let variant = work.join("variant.txt");
            let extra = work.join("extra");
            if head == 1 {
                fs::write(&variant, "content B\n").unwrap();
                fs::create_dir_all(&extra).unwrap();
                fs::write(extra.join("added.txt"), "only in B\n").unwrap();
            } else {
                fs::write(&variant, "content A\n").unwrap();
                let _ = fs::remove_dir_all(&extra);
            }
        })
    }
}

/// One world per operation, reused for every kill: sources, bystanders, the reference trees.
struct World {
    env: Env,
    op: Op,
    git: Option<Git>,
    /// The versions the local sources install as: v1, v1 disabled, v2.
    v1: Version,
    v1_off: Version,
    v2: Version,
    /// The trees of the git head's two contents.
    git_trees: [Tree; 2],
    /// Extensions that no operation may touch: `keep` in both scopes, and `victim` in the
    /// scope the operation does not work on (set per attempt).
    keep: Version,
    other: Version,
}

/// An extension `name` at `dir`: a manifest, an executable, `files` small files under
/// `lib/` (one private), an empty folder and an internal link, so modes, folders and links
/// all count in the comparison.
fn write_source(dir: &Path, name: &str, version: &str, files: usize) {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(dir.join("lib/deep")).unwrap();
    fs::create_dir_all(dir.join("data/empty")).unwrap();
    fs::write(
        dir.join("extension.json"),
        format!(
            "{{\n  \"name\": \"{name}\",\n  \"version\": \"{version}\",\n  \"exec\": \"./run.sh\",\n  \"language\": \"shell\",\n  \"enabled\": true\n}}\n"
        ),
    )
    .unwrap();
    write_executable(&dir.join("run.sh"), &format!("#!/bin/sh\n# {version}\n"));
    for i in 0..files {
        let sub = if i % 3 == 0 { "lib/deep" } else { "lib" };
        fs::write(
            dir.join(sub).join(format!("f{i}.txt")),
            format!("{version} {i}\n").repeat(1 + i % 7),
        )
        .unwrap();
    }
    let private = dir.join("lib/f1.txt");
    fs::set_permissions(&private, fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink("run.sh", dir.join("start")).unwrap();
}

impl World {
    fn new(op: Op) -> World {
        let env = Env::new();
        write_source(&env.work.join("src-v1"), VICTIM, "1.0.0", 60);
        write_source(&env.work.join("src-v2"), VICTIM, "2.0.0", 90);
        write_source(&env.work.join("victim-other"), VICTIM, "9.0.0", 5);
        write_source(&env.work.join("keep-src"), KEEP, "1.0.0", 5);
        let git = op.uses_git().then(|| Git::start(&env));
        let mut world = World {
            env,
            op,
            git,
            v1: placeholder(),
            v1_off: placeholder(),
            v2: placeholder(),
            git_trees: [Tree::new(), Tree::new()],
            keep: placeholder(),
            other: placeholder(),
        };
        world.reference();
        world
    }

    fn src(&self, which: &str) -> String {
        self.env.work.join(which).display().to_string()
    }

    /// Installs each version once, the normal way, and keeps its tree and record as the
    /// reference; leaves `keep` installed in both scopes.
    fn reference(&mut self) {
        let g = Scope::Global;
        self.v1 = self.install_as("v1", &self.src("src-v1"), g);
        self.zot_ok(&["disable", VICTIM, "--global"]);
        self.v1_off = self.version_in("v1-disabled", g, VICTIM);
        self.v2 = self.install_as("v2", &self.src("src-v2"), g);
        self.other = self.install_as("other", &self.src("victim-other"), g);
        self.zot_ok(&["remove", "--yes", VICTIM, "--global"]);
        for scope in Scope::ALL {
            self.keep = self.install_as("keep", &self.src("keep-src"), scope);
        }
        if let Some(git) = &mut self.git {
            let url = git.url.clone();
            let env = &self.env;
            run_ok(env, &install_args(&url, true, g));
            self.git_trees[0] = capture(&g.root(env).join(VICTIM));
            git.push_other();
            run_ok(env, &["update", VICTIM, "--global"]);
            self.git_trees[1] = capture(&g.root(env).join(VICTIM));
            run_ok(env, &["remove", "--yes", VICTIM, "--global"]);
            assert_ne!(self.git_trees[0], self.git_trees[1]);
        }
    }

    fn install_as(&self, label: &str, source: &str, scope: Scope) -> Version {
        let name = read_manifest_name(Path::new(source));
        run_ok(&self.env, &install_args(source, true, scope));
        self.version_in(label, scope, &name)
    }

    fn version_in(&self, label: &str, scope: Scope, name: &str) -> Version {
        let record = scope
            .state(&self.env)
            .join("sources")
            .join(format!("{name}.json"));
        Version {
            label: label.into(),
            tree: capture(&scope.root(&self.env).join(name)),
            record: Some(read_record(&record).expect("the reference install wrote a record")),
        }
    }

    fn zot_ok(&self, args: &[&str]) -> Done {
        run_ok(&self.env, args)
    }

    fn present(&self, scope: Scope) -> bool {
        fs::symlink_metadata(scope.root(&self.env).join(VICTIM)).is_ok()
    }

    /// The git head as a version.
    fn git_head(&self) -> Version {
        let git = self.git.as_ref().unwrap();
        Version {
            label: format!("git content {}", ["A", "B"][git.head]),
            tree: self.git_trees[git.head].clone(),
            record: Some(RecordId {
                source: git.url.clone(),
                commit: Some(git.repo.head_commit()),
            }),
        }
    }

    /// Brings `victim` in `scope` to the operation's old state and `victim` in the other
    /// scope to the bystander version; returns the old and new versions (`None`: absent).
    fn prepare(&mut self, scope: Scope) -> (Option<Version>, Option<Version>) {
        let other = scope.other();
        if capture(&other.root(&self.env).join(VICTIM)) != self.other.tree {
            run_ok(
                &self.env,
                &install_args(&self.src("victim-other"), true, other),
            );
        }
        let v1 = self.src("src-v1");
        match self.op {
            Op::InstallLocal | Op::InstallGit => {
                if self.present(scope) {
                    self.zot_ok(&["remove", "--yes", VICTIM, scope.flag()]);
                }
                let new = match self.op {
                    Op::InstallGit => self.git_head(),
                    _ => self.v1.clone(),
                };
                (None, Some(new))
            }
            Op::InstallForce => {
                run_ok(&self.env, &install_args(&v1, true, scope));
                (Some(self.v1.clone()), Some(self.v2.clone()))
            }
            Op::Update => {
                let url = self.git.as_ref().unwrap().url.clone();
                run_ok(&self.env, &install_args(&url, true, scope));
                let old = self.git_head();
                self.git.as_mut().unwrap().push_other();
                (Some(old), Some(self.git_head()))
            }
            Op::Remove => {
                run_ok(&self.env, &install_args(&v1, true, scope));
                (Some(self.v1.clone()), None)
            }
            Op::Enable => {
                run_ok(&self.env, &install_args(&v1, true, scope));
                self.zot_ok(&["disable", VICTIM, scope.flag()]);
                (Some(self.v1_off.clone()), Some(self.v1.clone()))
            }
            Op::Disable => {
                run_ok(&self.env, &install_args(&v1, true, scope));
                (Some(self.v1.clone()), Some(self.v1_off.clone()))
            }
        }
    }

    /// The command under test.
    fn command(&self, scope: Scope) -> Vec<String> {
        let strings = |args: &[&str]| -> Vec<String> {
            args.iter().map(std::string::ToString::to_string).collect()
        };
        match self.op {
            Op::InstallLocal => install_args(&self.src("src-v1"), false, scope),
            Op::InstallGit => install_args(&self.git.as_ref().unwrap().url, false, scope),
            Op::InstallForce => install_args(&self.src("src-v2"), true, scope),
            Op::Update => strings(&["update", VICTIM, scope.flag()]),
            Op::Remove => strings(&["remove", "--yes", VICTIM, scope.flag()]),
            Op::Enable => strings(&["enable", VICTIM, scope.flag()]),
            Op::Disable => strings(&["disable", VICTIM, scope.flag()]),
        }
    }

    /// The command that finishes the operation after a kill, if anything is left to do.
    fn completion(&self, scope: Scope) -> Option<Vec<String>> {
        match self.op {
            Op::InstallLocal => Some(install_args(&self.src("src-v1"), true, scope)),
            Op::InstallGit => Some(install_args(&self.git.as_ref().unwrap().url, true, scope)),
            Op::Remove if !self.present(scope) => None,
            _ => Some(self.command(scope)),
        }
    }

    /// What may be where while `victim` in `scope` goes from `old` to `new`.
    fn expect(&self, scope: Scope, versions: &[&Option<Version>]) -> Expect {
        let mut expect = Expect::default();
        for s in Scope::ALL {
            expect.allow(s, KEEP, &self.keep);
        }
        expect.allow(scope.other(), VICTIM, &self.other);
        for version in versions {
            match version {
                Some(v) => expect.allow(scope, VICTIM, v),
                None => expect.allow_absent(scope, VICTIM),
            }
        }
        expect
    }
}

/// Which version of `victim` in `scope` a kill left: "new", "old" or "neither".
fn left_behind(
    found: &Found,
    scope: Scope,
    old: Option<&Version>,
    new: Option<&Version>,
) -> &'static str {
    let label = found.get(&(scope, VICTIM.to_string()));
    let is = |version: Option<&Version>| match (version, label) {
        (None, None) => true,
        (Some(v), Some(Some(l))) => v.label == *l,
        _ => false,
    };
    if is(new) {
        "new"
    } else if is(old) {
        "old"
    } else {
        "neither"
    }
}

fn placeholder() -> Version {
    Version {
        label: String::new(),
        tree: Tree::new(),
        record: None,
    }
}

fn read_manifest_name(dir: &Path) -> String {
    let text = fs::read_to_string(dir.join("extension.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["name"].as_str().unwrap().to_string()
}

/// `install [--force] <source> [--project]`.
fn install_args(source: &str, force: bool, scope: Scope) -> Vec<String> {
    let mut args = vec!["install".to_string(), source.to_string()];
    if force {
        // A forced install keeps the replaced copy's `enabled`; every source here ships
        // `enabled: true`, and the reference trees are those.
        args.push("--force".into());
        args.push("--enable".into());
    }
    if scope == Scope::Project {
        args.push("--project".into());
    }
    args
}

/// Runs `zot ext <args>` and asserts success.
fn run_ok<S: AsRef<str>>(env: &Env, args: &[S]) -> Done {
    let done = run(env, args);
    done.success();
    done
}

fn run<S: AsRef<str>>(env: &Env, args: &[S]) -> Done {
    let mut full = vec!["ext".to_string()];
    full.extend(args.iter().map(|a| a.as_ref().to_string()));
    env.zot(&full).output()
}

/// Runs `zot ext <args>` and kills it as `kill` says; returns how it ended and how long it ran.
fn run_killed(env: &Env, args: &[String], kill: &Kill) -> (ExitStatus, Duration) {
    let mut run = env.zot(std::iter::once("ext".to_string()).chain(args.iter().cloned()));
    if let Kill::At(point) = kill {
        run = run.env("ZOT_EXT_CRASH_AT", point);
    }
    let mut cmd = run.cmd;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn zot");
    if let Kill::After(delay) = kill {
        thread::sleep(delay.saturating_sub(started.elapsed()));
        let _ = child.kill();
    }
    loop {
        if let Some(status) = child.try_wait().expect("wait for zot") {
            return (status, started.elapsed());
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            panic!("zot ext {} hung for {TIMEOUT:?} ({kill})", args.join(" "));
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// Runs one operation's kills and reports every violation.
struct Harness {
    world: World,
    torture: Torture,
    /// Kills that landed (the process died of SIGKILL).
    kills: usize,
    /// Violations, each with the attempt it was found in.
    violations: Vec<(String, Violation)>,
    /// What the kills left in place: how many left the old version, how many the new one.
    left: BTreeMap<String, usize>,
    /// How long the settling command runs, and how many kills of it landed.
    settle_duration: Duration,
    settle_kills: usize,
}

impl Harness {
    fn new(op: Op) -> Harness {
        Harness {
            world: World::new(op),
            torture: Torture::from_env(),
            kills: 0,
            violations: Vec::new(),
            left: BTreeMap::new(),
            settle_duration: Duration::ZERO,
            settle_kills: 0,
        }
    }

    /// How long the command normally runs: the longest of three undisturbed runs, each of
    /// which must leave exactly the new version.
    fn calibrate(&mut self) -> Duration {
        let mut longest = Duration::ZERO;
        for i in 0..3 {
            let scope = Scope::ALL[i % 2];
            let (_, new) = self.world.prepare(scope);
            let args = self.world.command(scope);
            let started = Instant::now();
            let done = run(&self.world.env, &args);
            longest = longest.max(started.elapsed());
            let context = format!("undisturbed run {i} in {scope:?}");
            if done.code != 0 {
                self.violation(
                    &context,
                    Rule::NextCommandSucceeds,
                    format!("zot ext {} failed: {done:?}", args.join(" ")),
                );
            }
            let expect = self.world.expect(scope, &[&new]);
            self.check_settled(&context, &expect);
            let started = Instant::now();
            run(&self.world.env, SETTLE);
            self.settle_duration = self.settle_duration.max(started.elapsed());
        }
        longest
    }

    fn violation(&mut self, context: &str, rule: Rule, detail: String) {
        self.add(context, vec![Violation { rule, detail }]);
    }

    /// Keeps the first sighting of each violation (a leftover stays until something removes
    /// it; it is reported where it appeared).
    fn add(&mut self, context: &str, found: Vec<Violation>) {
        for v in found {
            if !self.violations.iter().any(|(_, seen)| *seen == v) {
                self.violations.push((context.to_string(), v));
            }
        }
    }

    fn check_settled(&mut self, context: &str, expect: &Expect) {
        let found = Checker {
            env: &self.world.env,
            expect,
        }
        .settled();
        self.add(context, found);
    }

    /// One kill and everything checked after it.
    /// Returns whether the kill landed. With `settle_kill`, the settling command is killed
    /// once that long after its start before it runs undisturbed (recovery must survive a
    /// kill too).
    fn attempt(&mut self, scope: Scope, kill: Kill, settle_kill: Option<Duration>) -> bool {
        let (old, new) = self.world.prepare(scope);
        let args = self.world.command(scope);
        let context = format!("zot ext {} in {scope:?}, {kill}", args.join(" "));
        let (status, _) = run_killed(&self.world.env, &args, &kill);
        let killed = status.signal() == Some(9);
        if killed {
            self.kills += 1;
        } else if let Kill::At(point) = kill {
            self.violation(
                &context,
                Rule::PointReached,
                format!("zot ran past {point} and exited with {status}"),
            );
        }
        let either = self.world.expect(scope, &[&old, &new]);
        let (now, found) = Checker {
            env: &self.world.env,
            expect: &either,
        }
        .at_any_instant();
        self.add(&format!("{context}, at once"), now);
        if killed {
            let left = left_behind(&found, scope, old.as_ref(), new.as_ref());
            *self.left.entry(left.to_string()).or_default() += 1;
        }
        if let Some(delay) = settle_kill {
            self.kill_settle(&context, &either, delay);
        }
        let settle = run(&self.world.env, SETTLE);
        if settle.code != 0 {
            self.violation(
                &context,
                Rule::NextCommandSucceeds,
                format!("zot ext {} failed: {settle:?}", SETTLE.join(" ")),
            );
        }
        self.check_settled(&format!("{context}, after {}", SETTLE.join(" ")), &either);
        if let Some(finish) = self.world.completion(scope) {
            let done = run(&self.world.env, &finish);
            if done.code != 0 {
                self.violation(
                    &context,
                    Rule::NextCommandSucceeds,
                    format!("zot ext {} failed: {done:?}", finish.join(" ")),
                );
            }
        }
        let finished = self.world.expect(scope, &[&new]);
        self.check_settled(&format!("{context}, after finishing"), &finished);
        killed
    }

    /// Kills the settling command `delay` after its start, then checks what must hold at
    /// any instant.
    fn kill_settle(&mut self, context: &str, expect: &Expect, delay: Duration) {
        let settle: Vec<String> = SETTLE
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        let (status, _) = run_killed(&self.world.env, &settle, &Kill::After(delay));
        if status.signal() == Some(9) {
            self.settle_kills += 1;
        }
        let (now, _) = Checker {
            env: &self.world.env,
            expect,
        }
        .at_any_instant();
        let when = delay.as_micros();
        self.add(
            &format!("{context}, {} killed after {when} µs", SETTLE.join(" ")),
            now,
        );
    }

    /// Random kills until `wanted` have landed (or six times as many attempts). A kill that
    /// comes after the command finished shortens the window (the calibration may have run on
    /// a busier machine).
    fn random_kills(&mut self, wanted: usize, mut duration: Duration) {
        let mut rng = self.torture.rng(self.world.op.test_name());
        let before = self.kills;
        let mut attempts = 0;
        while self.kills - before < wanted && attempts < wanted * 6 {
            let scope = Scope::ALL[attempts % 2];
            let delay = duration.mul_f64(rng.fraction());
            let settle_delay = self.settle_duration.mul_f64(rng.fraction());
            let settle_kill = (attempts % 3 == 2).then_some(settle_delay);
            if !self.attempt(scope, Kill::After(delay), settle_kill) {
                duration = duration.mul_f64(0.75);
            }
            attempts += 1;
        }
        assert!(
            self.kills - before >= wanted,
            "only {} of {attempts} random kills landed before {} finished ({duration:?}); {}",
            self.kills - before,
            self.world.op.test_name(),
            self.torture.replay(self.world.op.test_name())
        );
    }

    /// A kill at each of the operation's named points, in one scope (both in long mode).
    fn named_kills(&mut self) {
        let mut rng = self
            .torture
            .rng(&format!("{} points", self.world.op.test_name()));
        for (i, point) in self.world.op.points().iter().enumerate() {
            let scopes = if self.torture.long {
                Scope::ALL.to_vec()
            } else {
                vec![Scope::ALL[i % 2]]
            };
            for scope in scopes {
                // In long mode the project-scope kill also kills the recovery once.
                let settle_delay = self.settle_duration.mul_f64(rng.fraction());
                let settle_kill =
                    (self.torture.long && scope == Scope::Project).then_some(settle_delay);
                self.attempt(scope, Kill::At(point), settle_kill);
            }
        }
    }

    /// Fails on any violation not listed in [`KNOWN_FAILING`]; prints the known ones.
    fn finish(self) {
        let test = self.world.op.test_name();
        let (known, failing): (Vec<_>, Vec<_>) = self
            .violations
            .iter()
            .partition(|(_, v)| KNOWN_FAILING.contains(&v.rule));
        let describe = |list: &[&(String, Violation)]| -> String {
            list.iter()
                .take(30)
                .map(|(context, v)| format!("  {context}: {v}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        eprintln!(
            "{test}: {} kills landed, leaving {:?}, and {} kills of `{}` after one; {} violations of rules in KNOWN_FAILING:\n{}",
            self.kills,
            self.left,
            self.settle_kills,
            SETTLE.join(" "),
            known.len(),
            describe(&known)
        );
        assert!(
            failing.is_empty(),
            "{test}: {} invariant violations after {} kills ({}):\n{}",
            failing.len(),
            self.kills,
            self.torture.replay(test),
            describe(&failing)
        );
    }
}

/// Kills per operation at random moments: 5 × 7 operations in CI, 30 × 7 in long mode.
fn random_kills_wanted(torture: &Torture) -> usize {
    if torture.long { 30 } else { 5 }
}

fn torture(op: Op) {
    let mut harness = Harness::new(op);
    let test = op.test_name();
    eprintln!("{test}: {}", harness.torture.replay(test));
    let wanted = random_kills_wanted(&harness.torture);
    // A command that sets up the next attempt may fail on a store a kill broke: report it
    // with everything found so far rather than losing that to the panic.
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let duration = harness.calibrate();
        harness.random_kills(wanted, duration);
        harness.named_kills();
    }));
    if let Err(panic) = run {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| {
                panic
                    .downcast_ref::<&str>()
                    .map(std::string::ToString::to_string)
            })
            .unwrap_or_default();
        harness.violation("stopped", Rule::NextCommandSucceeds, message);
    }
    harness.finish();
}

#[test]
fn install_local() {
    torture(Op::InstallLocal);
}

#[test]
fn install_git() {
    torture(Op::InstallGit);
}

#[test]
fn install_force() {
    torture(Op::InstallForce);
}

#[test]
fn update_git() {
    torture(Op::Update);
}

#[test]
fn remove() {
    torture(Op::Remove);
}

#[test]
fn enable() {
    torture(Op::Enable);
}

#[test]
fn disable() {
    torture(Op::Disable);
}

#[test]
fn every_crash_point_is_exercised() {
    let declared = declared_points();
    assert!(declared.len() >= 8, "parsed {declared:?}");
    let used: Vec<&str> = Op::ALL.iter().flat_map(|op| op.points()).copied().collect();
    for point in &declared {
        assert!(
            used.contains(&point.as_str()),
            "crash point {point} is declared in src/fsx/crashpoint.rs but no operation here kills at it"
        );
    }
    for point in used {
        assert!(
            declared.iter().any(|d| d == point),
            "crash point {point} is killed at here but not declared in src/fsx/crashpoint.rs"
        );
    }
    for op in Op::ALL {
        assert!(op.test_name().starts_with("torture_crash::"));
    }
}

/// The checker itself: a half-copied tree, a leftover temporary manifest and a stale record
/// are each caught (so a clean run of the harness means something).
#[test]
fn the_checker_catches_broken_stores() {
    let mut world = World::new(Op::InstallLocal);
    let g = Scope::Global;
    let (_, new) = world.prepare(g);
    let env = &world.env;
    run_ok(env, &install_args(&world.src("src-v1"), false, g));
    let expect = world.expect(g, &[&new]);
    let check = || {
        let mut rules: Vec<Rule> = Checker {
            env,
            expect: &expect,
        }
        .settled()
        .into_iter()
        .map(|v| v.rule)
        .collect();
        rules.sort();
        rules.dedup();
        rules
    };
    assert_eq!(check(), Vec::<Rule>::new());
    let dir = g.root(env).join(VICTIM);
    fs::write(dir.join(".extension.json.AbC123"), "{").unwrap();
    assert_eq!(check(), vec![Rule::NoTempManifest]);
    fs::remove_file(dir.join(".extension.json.AbC123")).unwrap();
    fs::remove_file(dir.join("lib/f1.txt")).unwrap();
    assert_eq!(check(), vec![Rule::TreeIsOldOrNew]);
    run_ok(env, &install_args(&world.src("src-v1"), true, g));
    let list = g.state(env).join("files").join("victim.json");
    let good = fs::read_to_string(&list).unwrap();
    let mut stale: serde_json::Value = serde_json::from_str(&good).unwrap();
    for entry in stale["entries"].as_array_mut().unwrap() {
        if entry["path"] == "lib/f1.txt" {
            entry["sha256"] = "0".repeat(64).into();
        }
    }
    fs::write(&list, stale.to_string()).unwrap();
    assert_eq!(check(), vec![Rule::FileListMatches]);
    fs::remove_file(&list).unwrap();
    assert_eq!(check(), vec![Rule::FileListMatches]);
    fs::write(&list, good).unwrap();
    assert_eq!(check(), Vec::<Rule>::new());
    let record = g.state(env).join("sources").join("victim.json");
    let text = fs::read_to_string(&record).unwrap();
    fs::write(&record, text.replace("src-v1", "src-v2")).unwrap();
    assert_eq!(check(), vec![Rule::RecordStale]);
    fs::remove_file(&record).unwrap();
    assert_eq!(check(), vec![Rule::RecordMissing]);
    fs::write(g.state(env).join("sources").join("gone.json"), text).unwrap();
    assert!(check().contains(&Rule::RecordOrphan));
    fs::create_dir_all(g.state(env).join("staging/stage-x")).unwrap();
    assert!(check().contains(&Rule::StateEmptied));
}
