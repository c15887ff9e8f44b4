//! Real shells load the committed scripts in completions/ and complete
//! `zot ext disable <TAB>`: the enabled `alpha` and `gamma` are offered, the disabled `beta`
//! is not; bash and fish also complete folders for `zot ext doctor ./<TAB>`. bash, zsh and
//! fish must be installed when `CI` or `ZOT_REQUIRE_SHELLS` is set (`.ci/run` installs
//! them); elsewhere a missing shell skips its test with a note. elvish is tested when
//! installed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::Env;

/// A world with alpha and gamma enabled and beta disabled, and a `bin` folder holding `zot`
/// and `zot-ext` links to the binary under test, first on the shells' PATH.
struct World {
    env: Env,
    bin: PathBuf,
}

fn world() -> World {
    let env = Env::new();
    for name in ["alpha", "beta", "gamma"] {
        env.installed(name, false);
    }
    env.zot(["ext", "disable", "beta"]).ok();
    let bin = env.work.join("bin");
    fs::create_dir_all(&bin).unwrap();
    for link in ["zot", "zot-ext"] {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zot"), bin.join(link)).unwrap();
    }
    World { env, bin }
}

fn script(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("completions")
        .join(file)
}

fn required() -> bool {
    let set = |key: &str| std::env::var(key).is_ok_and(|v| !v.is_empty() && v != "false");
    set("CI") || set("ZOT_REQUIRE_SHELLS")
}

/// Whether `shell` can be run; a missing shell fails under CI and skips elsewhere.
fn have(shell: &str, required_in_ci: bool) -> bool {
    // script(1) would write a typescript file for `-c`; every shell takes `-c`.
    let probe: &[&str] = if shell == "script" {
        &["--version"]
    } else {
        &["-c", "exit 0"]
    };
    let found = Command::new(shell)
        .args(probe)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            !(required_in_ci && required()),
            "{shell} is not installed, and CI must test its completion: apt-get install {shell}"
        );
        eprintln!("note: {shell} is not installed; skipping its completion test");
    }
    found
}

impl World {
    /// Runs `program args` in the project folder with only this world's environment, and
    /// returns its stdout; fails after 60 seconds.
    fn run(&self, program: &str, args: &[&str], vars: &[(&str, &Path)]) -> String {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![self.bin.clone()];
        paths.extend(std::env::split_paths(&path));
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(&self.env.project)
            .env_clear()
            .env("PATH", std::env::join_paths(paths).unwrap())
            .env("HOME", &self.env.user_home)
            .env("XDG_CONFIG_HOME", self.env.user_home.join(".config"))
            .env("XDG_DATA_HOME", self.env.user_home.join(".local/share"))
            .env("ZOT_HOME", &self.env.home)
            .env("TERM", "dumb")
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in vars {
            cmd.env(key, value);
        }
        let mut child = cmd.spawn().unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!("{program} did not finish within 60 seconds");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{program} failed: {:?}\nstdout:\n{stdout}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.env.work.join(name);
        fs::write(&path, text).unwrap();
        path
    }
}

/// Asserts `listing` offers alpha and gamma but not beta.
fn offers_enabled_only(shell: &str, line: &str, listing: &str) {
    for name in ["alpha", "gamma"] {
        assert!(
            listing.contains(name),
            "{shell}: `{line}<TAB>` did not offer {name}:\n{listing}"
        );
    }
    assert!(
        !listing.contains("beta"),
        "{shell}: `{line}<TAB>` offered the disabled beta:\n{listing}"
    );
}

/// Sources the script and defines `complete_line <words>...`, which finds the function
/// `complete -p` registered and calls it the way bash's programmable completion does, the
/// last word being the one under the cursor; it prints the candidates on one line.
const BASH: &str = r#"
source "$ZOT_SCRIPT" || exit 3
complete_line() {
    local spec fn
    spec=$(complete -p "$1") || { echo "no completion registered for $1"; exit 4; }
    fn=${spec#*-F }; fn=${fn%% *}
    COMP_WORDS=("$@")
    COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
    COMP_LINE="${COMP_WORDS[*]}"
    COMP_POINT=${#COMP_LINE}
    COMP_TYPE=9
    COMPREPLY=()
    "$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    echo "${COMPREPLY[*]}"
}
"#;

#[test]
fn bash_completes_enabled_extensions_for_disable() {
    if !have("bash", true) {
        return;
    }
    let world = world();
    let out = world.bash("complete_line zot ext disable ''\ncomplete_line zot-ext disable ''\n");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, ["alpha gamma", "alpha gamma"], "bash:\n{out}");
}

/// With nothing disabled, `enable <TAB>` offers nothing: bash inserts no `--`.
#[test]
fn bash_offers_nothing_where_no_name_fits() {
    if !have("bash", true) {
        return;
    }
    let world = world();
    world.env.zot(["ext", "enable", "beta"]).ok();
    let out = world.bash("complete_line zot ext enable ''\ncomplete_line zot ext enable --g\n");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, ["", "--global"], "bash:\n{out}");
}

#[test]
fn bash_inserts_a_name_with_a_space_as_one_word() {
    if !have("bash", true) {
        return;
    }
    let world = world();
    world.env.installed("my ext", false);
    // The word under the cursor reaches the function as typed, backslash and all.
    let out =
        world.bash("complete_line zot ext disable 'my'\ncomplete_line zot ext disable 'my\\ e'\n");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, ["my\\ ext", "my\\ ext"], "bash:\n{out}");
}

#[test]
fn fish_and_zsh_offer_a_name_with_a_space_as_one_candidate() {
    let world = world();
    world.env.installed("my ext", false);
    if have("fish", true) {
        let out = world.run(
            "fish",
            &[
                "--no-config",
                "-c",
                "source $ZOT_SCRIPT; and complete -C 'zot ext disable my'",
            ],
            &[("ZOT_SCRIPT", &script("zot.fish"))],
        );
        // fish escapes the candidate itself when it inserts it.
        assert_eq!(out, "my ext\ttest extension my ext\n", "fish");
    }
    if have("zsh", true) {
        let driver = world.write("complete.zsh", ZSH);
        let none = PathBuf::new();
        let out = world.run(
            "zsh",
            &["-f", driver.to_str().unwrap()],
            &[
                ("ZOT_SCRIPT", &script("_zot")),
                ("ZOT_FPATH", &none),
                ("ZOT_LINE", Path::new("zot ext disable ")),
                ("ZOT_UNTIL", Path::new("test extension my ext")),
            ],
        );
        assert!(
            out.contains("my ext  -- test extension my ext"),
            "zsh: {out}"
        );
    }
}

impl World {
    /// Runs `lines` in bash after the `BASH` driver; returns what they printed.
    fn bash(&self, lines: &str) -> String {
        let driver = self.write("complete.bash", &format!("{BASH}{lines}"));
        self.run(
            "bash",
            &["--norc", "--noprofile", driver.to_str().unwrap()],
            &[("ZOT_SCRIPT", &script("zot.bash"))],
        )
    }

    /// A folder `my-ext` in the project and `src/weather` in the home folder.
    fn folders(&self) {
        fs::create_dir_all(self.env.project.join("my-ext")).unwrap();
        fs::create_dir_all(self.env.user_home.join("src/weather")).unwrap();
    }
}

/// doctor and call take a folder too: a path-like word completes folders, `~` included,
/// with no space after the `/` so the next level can follow.
#[test]
fn bash_completes_folders_for_doctor_and_call() {
    if !have("bash", true) {
        return;
    }
    let world = world();
    world.folders();
    let out = world.bash(
        "complete_line zot ext doctor ./m\n\
         complete_line zot-ext call '~/src/'\n\
         complete_line zot ext doctor alpha ./m\n",
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        ["./my-ext/", "~/src/weather/", "./my-ext/"],
        "bash:\n{out}"
    );
}

#[test]
fn fish_completes_folders_for_doctor_and_call() {
    if !have("fish", true) {
        return;
    }
    let world = world();
    world.folders();
    let out = world.run(
        "fish",
        &[
            "--no-config",
            "-c",
            "source $ZOT_SCRIPT; and complete -C 'zot ext doctor ./m'; and complete -C 'zot ext call ~/src/'",
        ],
        &[("ZOT_SCRIPT", &script("zot.fish"))],
    );
    assert_eq!(out, "./my-ext/\n~/src/weather/\n", "fish");
}

#[test]
fn fish_completes_enabled_extensions_for_disable() {
    if !have("fish", true) {
        return;
    }
    let world = world();
    let out = world.run(
        "fish",
        &[
            "--no-config",
            "-c",
            "source $ZOT_SCRIPT; and complete -C 'zot ext disable '; and echo ---; and complete -C 'zot-ext disable '",
        ],
        &[("ZOT_SCRIPT", &script("zot.fish"))],
    );
    let (zot, alias) = out.split_once("---\n").expect("fish printed both listings");
    assert_eq!(
        zot, "alpha\ttest extension alpha\ngamma\ttest extension gamma\n",
        "fish"
    );
    assert_eq!(alias, zot, "fish, zot-ext");
}

/// Drives an interactive zsh in a pseudo-terminal (zsh/zpty): compinit, the script (sourced,
/// or autoloaded from $fpath), then the line and TAB bound to list-choices; prints what the
/// terminal showed.
const ZSH: &str = r#"
zmodload zsh/zpty || exit 3
zpty z zsh -f -i
zpty -w z "PS1='%% '; autoload -Uz compinit && compinit -u -D"
zpty -w z "zstyle ':completion:*' list-prompt ''; zstyle ':completion:*' menu no; bindkey '^I' list-choices"
if [[ -n $ZOT_FPATH ]]; then
    zpty -w z "fpath=(${(q)ZOT_FPATH} \$fpath); compinit -u -D"
else
    zpty -w z "source ${(q)ZOT_SCRIPT}"
fi
zpty -w z "print READY"
out=
integer deadline=$(( SECONDS + 20 ))
while (( SECONDS < deadline )) && [[ $out != *$'\nREADY'* ]]; do
    zpty -rt z chunk && out+=$chunk || sleep 0.05
done
[[ $out == *$'\nREADY'* ]] || { print -r -- "zsh did not start: $out"; exit 4; }
zpty -n -w z "$ZOT_LINE"$'\t'
out=
deadline=$(( SECONDS + 20 ))
while (( SECONDS < deadline )); do
    if zpty -rt z chunk; then
        out+=$chunk
    elif [[ $out == *"$ZOT_UNTIL"* ]]; then
        sleep 0.3
        zpty -rt z chunk && out+=$chunk
        break
    else
        sleep 0.05
    fi
done
zpty -d z
print -r -- "$out"
"#;

#[test]
fn zsh_completes_enabled_extensions_for_disable() {
    if !have("zsh", true) {
        return;
    }
    let world = world();
    let driver = world.write("complete.zsh", ZSH);
    // The file as it is installed in $fpath: named _zot, in a folder of its own.
    let fpath = world.env.work.join("zfunc");
    fs::create_dir_all(&fpath).unwrap();
    fs::copy(script("_zot"), fpath.join("_zot")).unwrap();
    let sourced = script("_zot");
    let none = PathBuf::new();
    for (how, fpath_dir, line) in [
        ("sourced", &none, "zot ext disable "),
        ("from $fpath", &fpath, "zot ext disable "),
        ("from $fpath", &fpath, "zot-ext disable "),
    ] {
        let out = world.run(
            "zsh",
            &["-f", driver.to_str().unwrap()],
            &[
                ("ZOT_SCRIPT", &sourced),
                ("ZOT_FPATH", fpath_dir),
                ("ZOT_LINE", Path::new(line)),
                ("ZOT_UNTIL", Path::new("test extension gamma")),
            ],
        );
        offers_enabled_only(&format!("zsh ({how})"), line, &out);
        assert!(out.contains("alpha  -- test extension alpha"), "{out}");
    }
}

#[test]
fn elvish_completes_enabled_extensions_for_disable() {
    // elvish's line editor, and with it the completer table, exists only at a terminal:
    // run it under script(1). Not required in CI.
    if !have("elvish", false) || !have("script", false) {
        return;
    }
    let world = world();
    let input = world.write(
        "input.elv",
        "eval (slurp < $E:ZOT_SCRIPT)\n\
         $edit:completion:arg-completer[zot] zot ext disable '' | each {|c| echo '<<'$c'>>' }\n\
         $edit:completion:arg-completer[zot-ext] zot-ext disable '' | each {|c| echo '<<'$c'>>' }\n\
         exit\n",
    );
    let out = world.run(
        "sh",
        &[
            "-c",
            "script -qec 'elvish -norc' /dev/null < \"$ZOT_INPUT\"",
        ],
        &[("ZOT_SCRIPT", &script("zot.elv")), ("ZOT_INPUT", &input)],
    );
    // The terminal also echoes the typed lines, where `<<` is followed by a quote.
    let found: Vec<&str> = out
        .split("<<")
        .skip(1)
        .filter_map(|rest| rest.split_once(">>").map(|(name, _)| name))
        .filter(|name| name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        .collect();
    assert_eq!(
        found,
        ["alpha", "gamma", "alpha", "gamma"],
        "elvish:\n{out}"
    );
}

/// Runs an interactive bash in a pseudo-terminal (python3's `pty`), loads `$ZOT_SCRIPT`,
/// types `$ZOT_LINE` and two TABs, and prints what the terminal showed once `$ZOT_UNTIL`
/// appears (or after 30 seconds), then ends that bash. Waits for text, never for a set time.
const BASH_PTY: &str = r#"
import os, pty, select, signal, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
def read_until(text):
    out = b""
    end = time.time() + 30
    while time.time() < end and text.encode() not in out:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
    return out.decode(errors="replace")
# The prompt is spelt so that the echo of this line does not look like it.
os.write(fd, b"stty cols 200; PS1='RE''ADY> '; source \"$ZOT_SCRIPT\"\n")
read_until("READY> ")
os.write(fd, os.environ["ZOT_LINE"].encode() + b"\t\t")
sys.stdout.write(read_until(os.environ["ZOT_UNTIL"]))
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
"#;

/// The python3 interpreter itself (not a wrapper such as pyenv's, which needs the real
/// home folder); a missing python3 fails under CI and skips elsewhere.
fn python3() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .stderr(Stdio::null())
        .output();
    let path = out
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|p| p.is_absolute());
    if path.is_none() {
        assert!(
            !required(),
            "python3 is not installed, and CI must test completion at a terminal: apt-get install python3"
        );
        eprintln!("note: python3 is not installed; skipping the terminal completion test");
    }
    path
}

impl World {
    /// What bash shows when `line` is completed at a terminal (see [`BASH_PTY`]).
    fn bash_at_a_terminal(&self, python: &Path, line: &str, until: &str) -> String {
        let driver = self.write("terminal.py", BASH_PTY);
        let out = self.run(
            python.to_str().unwrap(),
            &[driver.to_str().unwrap()],
            &[
                ("ZOT_SCRIPT", &script("zot.bash")),
                ("ZOT_LINE", Path::new(line)),
                ("ZOT_UNTIL", Path::new(until)),
            ],
        );
        // Only what follows the typed line: the listing and the line redrawn.
        out.split_once(line)
            .map_or(out.clone(), |(_, rest)| rest.to_string())
    }
}

/// At a terminal, bash lists folder candidates by their last part, as its own file name
/// completion does (`alpha/  weather/  with space/`, not `~/src/alpha/ ...`), and inserts
/// one escaped once, with its `/`.
#[test]
fn bash_lists_folders_by_their_last_part() {
    if !have("bash", true) {
        return;
    }
    let Some(python) = python3() else { return };
    let world = world();
    world.folders();
    for dir in ["src/alpha", "src/with space"] {
        fs::create_dir_all(world.env.user_home.join(dir)).unwrap();
    }
    let listed = world.bash_at_a_terminal(&python, "zot ext install ~/src/", "with space/");
    let names: Vec<&str> = listed
        .lines()
        .find(|l| l.contains("weather/"))
        .unwrap_or_else(|| panic!("no listing:\n{listed}"))
        .split("  ")
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .collect();
    assert_eq!(names, ["alpha/", "weather/", "with space/"], "{listed:?}");
    let inserted = world.bash_at_a_terminal(&python, "zot ext doctor ~/src/wi", "space/");
    assert!(
        inserted.contains("\\ space/") && !inserted.contains("\\\\"),
        "{inserted:?}"
    );
    let inserted = world.bash_at_a_terminal(&python, "zot ext doctor ./m", "ext/");
    assert!(inserted.starts_with("y-ext/"), "{inserted:?}");
}
