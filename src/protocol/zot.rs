//! What the zot host does, version by version: its own slash commands and tools, the events
//! it sends and lets extensions intercept, how it finds extension folders, and its timing.
//! One [`HostFacts`] entry per known zot version range ([`KNOWN`], oldest first), and
//! [`facts_for`], which picks the entry for a version string. Everything that judges an
//! extension against the host reads from here.
//!
//! Sources: zot's own code at tag v0.1.62 (commit 380eca9; files named on each fact), and,
//! for newer zot, the published Go SDK (`pkg/zotext`, the `sdk-go-ext.go` of the spec).

use std::fmt;
use std::time::Duration;

/// A zot version, `major.minor.patch`; a pre-release or build suffix is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Version(pub u64, pub u64, pub u64);

impl Version {
    /// Reads `0.1.62`, `v0.1.62`, `0.1` (= 0.1.0) or `0.1.62-rc1`; anything else is `None`.
    pub(crate) fn parse(text: &str) -> Option<Version> {
        let text = text.trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        let core = text.split(['-', '+']).next()?;
        let parts: Vec<&str> = core.split('.').collect();
        if parts.len() > 3 {
            return None;
        }
        let mut numbers = [0u64; 3];
        for (slot, part) in numbers.iter_mut().zip(&parts) {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            *slot = part.parse().ok()?;
        }
        Some(Version(numbers[0], numbers[1], numbers[2]))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// How long the host waits for what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timing {
    /// Without `ready`, the host treats an extension as ready after this much silence after
    /// `hello` and builds the agent's tools then (`readyIdleWindow`, manager.go).
    pub ready_idle: Duration,
    /// However busy the extension, the host waits at most this long for `ready`
    /// (`WaitForReady(3 * time.Second)`, cli.go and rpc.go).
    pub ready_grace: Duration,
    /// How long the host waits for `hello`; `None`: no limit (`loadOne` reads the first line
    /// with no deadline, manager.go).
    pub hello_wait: Option<Duration>,
    /// After `shutdown`, how long the host waits for the exit before SIGTERM
    /// (`Stop(2 * time.Second)`, cli.go and rpc.go).
    pub shutdown_grace: Duration,
    /// After SIGTERM, how long the host waits before SIGKILL (`Stop`, manager.go).
    pub term_grace: Duration,
    /// How long the host waits for a `command_response` (`Invoke(..., 30*time.Second)`,
    /// modes/interactive.go).
    pub command_limit: Duration,
    /// How long the host waits for a `tool_result` (`timeout: 60 * time.Second`, tool.go).
    pub tool_limit: Duration,
}

/// How the host finds extension folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Discovery {
    /// Whether an extension folder that is a symbolic link (as `zot ext link` makes) is
    /// loaded. zot 0.1.62 skips it: `Discover` keeps only entries whose `IsDir()` is true,
    /// and `os.ReadDir` reports a link as a link (manager.go).
    pub follows_linked_folders: bool,
    /// Whether a project folder hides the global folder of the same folder name, whatever
    /// the manifests say (`seenDirs`, `Discover`, manager.go).
    pub project_hides_global: bool,
    /// Whether two folders whose manifests share a name both start, the one saying hello
    /// last being kept (`loadOne` checks for a duplicate before the handshake, manager.go).
    pub twins_both_start: bool,
}

/// What one zot version range does, as far as extensions can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostFacts {
    /// The versions these facts describe, as shown to users: `0.1.62`, `>0.1.62`.
    pub versions: &'static str,
    /// The newest version they describe; `None`: every version newer than the entry before.
    pub up_to: Option<Version>,
    /// Where the facts were read.
    pub source: &'static str,
    /// Built-in slash commands, matched exactly (case-sensitive): an extension command of the
    /// same name never runs.
    pub commands: &'static [&'static str],
    /// Commands the interactive mode runs itself when picked from the suggestion list
    /// (`runSlash`), though typed in full they reach an extension of the same name.
    pub picked_commands: &'static [&'static str],
    /// Built-in tools: an extension tool of the same name is shadowed.
    pub tools: &'static [&'static str],
    /// Events the host sends to subscribers.
    pub events: &'static [&'static str],
    /// Events the host lets an extension intercept; other intercept requests are ignored.
    pub interceptable: &'static [&'static str],
    pub discovery: Discovery,
    pub timing: Timing,
}

/// The host's timing, the same in every known version.
pub(crate) const TIMING: Timing = Timing {
    ready_idle: Duration::from_millis(250),
    ready_grace: Duration::from_secs(3),
    hello_wait: None,
    shutdown_grace: Duration::from_secs(2),
    term_grace: Duration::from_secs(1),
    command_limit: Duration::from_secs(30),
    tool_limit: Duration::from_secs(60),
};

/// zot 0.1.62's slash commands: `slashCatalog` (`modes/slash_suggest.go`), which
/// `isKnownSlashCommand` compares exactly before a typed command may reach an extension.
/// Newer zot publishes no list, so this, the only sourced one, serves for it too.
const COMMANDS_0_1_62: &[&str] = &[
    "help",
    "login",
    "logout",
    "model",
    "sessions",
    "session",
    "jump",
    "compact",
    "study",
    "btw",
    "jail",
    "unjail",
    "skills",
    "reload-ext",
    "yolo",
    "telegram",
    "clear",
    "exit",
];

/// zot 0.1.62's `runSlash` (modes/interactive.go) has cases for these beside the catalog's:
/// an extension's `/settings` or `/tg` chosen from the suggestion list runs zot's own.
const PICKED_0_1_62: &[&str] = &["settings", "tg"];

/// zot 0.1.62: the tag's own source.
pub(crate) const ZOT_0_1_62: HostFacts = HostFacts {
    versions: "0.1.62",
    up_to: Some(Version(0, 1, 62)),
    source: "zot's source at v0.1.62",
    commands: COMMANDS_0_1_62,
    picked_commands: PICKED_0_1_62,
    // The `Name()` of tools/read.go, write.go, edit.go, bash.go and skills/tool.go.
    tools: &["read", "write", "edit", "bash", "skill"],
    // Every `EmitEvent` call: cli.go and rpc.go.
    events: &[
        "session_start",
        "turn_start",
        "turn_end",
        "tool_call",
        "assistant_message",
    ],
    // The `subscribe` case of the reader in manager.go keeps only these.
    interceptable: &["tool_call", "turn_start", "assistant_message"],
    discovery: Discovery {
        follows_linked_folders: false,
        project_hides_global: true,
        twins_both_start: true,
    },
    timing: TIMING,
};

/// zot newer than 0.1.62, as its published Go SDK describes it.
pub(crate) const NEWER: HostFacts = HostFacts {
    versions: ">0.1.62",
    up_to: None,
    source: "the published Go SDK",
    commands: COMMANDS_0_1_62,
    picked_commands: PICKED_0_1_62,
    // The SDK's `Tool` comment: read, write, edit, bash, glob, skill.
    tools: &["read", "write", "edit", "bash", "glob", "skill"],
    // The SDK's `On` comment.
    events: &[
        "session_start",
        "session_end",
        "user_prompt_submit",
        "turn_start",
        "turn_end",
        "tool_call",
        "tool_result",
        "tool_confirmation_requested",
        "permission_decision",
        "assistant_message",
        "pre_compact",
        "post_compact",
        "subagent_start",
        "subagent_stop",
    ],
    // What the SDK's `subscribe` frame may list under `intercept`.
    interceptable: &[
        "before_agent_start",
        "tool_call",
        "turn_start",
        "assistant_message",
    ],
    discovery: Discovery {
        follows_linked_folders: true,
        project_hides_global: true,
        twins_both_start: true,
    },
    timing: TIMING,
};

/// Every known entry, oldest first.
pub(crate) const KNOWN: [&HostFacts; 2] = [&ZOT_0_1_62, &NEWER];

/// The facts of the newest known zot.
pub(crate) fn newest() -> &'static HostFacts {
    KNOWN[KNOWN.len() - 1]
}

/// The facts of the oldest known zot.
pub(crate) fn oldest() -> &'static HostFacts {
    KNOWN[0]
}

impl HostFacts {
    /// `zot 0.1.62`, `zot >0.1.62`.
    pub(crate) fn label(&self) -> String {
        format!("zot {}", self.versions)
    }

    /// Whether `/name` is a built-in command (exactly: `/Help` is not `/help`).
    pub(crate) fn has_command(&self, name: &str) -> bool {
        self.commands.contains(&name)
    }

    /// Whether zot runs its own command for `name` when it is picked from the suggestions.
    pub(crate) fn picks_own_command(&self, name: &str) -> bool {
        self.picked_commands.contains(&name)
    }

    pub(crate) fn has_tool(&self, name: &str) -> bool {
        self.tools.contains(&name)
    }

    pub(crate) fn sends(&self, event: &str) -> bool {
        self.events.contains(&event)
    }

    pub(crate) fn can_intercept(&self, event: &str) -> bool {
        self.interceptable.contains(&event)
    }
}

/// Built-in commands of any known version.
pub(crate) fn any_command(name: &str) -> bool {
    KNOWN.iter().any(|f| f.has_command(name))
}

/// Commands some known version runs itself when picked from the suggestions.
pub(crate) fn any_picked_command(name: &str) -> bool {
    KNOWN.iter().any(|f| f.picks_own_command(name))
}

/// Built-in tools of any known version.
pub(crate) fn any_tool(name: &str) -> bool {
    KNOWN.iter().any(|f| f.has_tool(name))
}

/// How a version string matched the known entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fit {
    /// An entry describes it.
    Known,
    /// Older than every entry: the oldest known facts stand in.
    OlderThanKnown,
    /// `0.0.0`, what zot reports when built from source without a version: the newest facts.
    Unversioned,
    /// Not a version: the newest facts.
    NotAVersion,
}

/// The facts picked for a version string, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Chosen {
    pub facts: &'static HostFacts,
    pub fit: Fit,
}

/// The entry for `version`: the first whose range holds it; older than all of them, the
/// oldest; `0.0.0` (cmd/zot/main.go's default for a build without a version) or not a
/// version at all, the newest.
pub(crate) fn facts_for(version: &str) -> Chosen {
    let Some(parsed) = Version::parse(version) else {
        return Chosen {
            facts: newest(),
            fit: Fit::NotAVersion,
        };
    };
    if parsed == Version(0, 0, 0) {
        return Chosen {
            facts: newest(),
            fit: Fit::Unversioned,
        };
    }
    let facts = KNOWN
        .iter()
        .copied()
        .find(|f| f.up_to.is_none_or(|up_to| parsed <= up_to))
        .unwrap_or_else(newest);
    let older = oldest().up_to.is_some_and(|first| parsed < first);
    Chosen {
        facts,
        fit: if older {
            Fit::OlderThanKnown
        } else {
            Fit::Known
        },
    }
}

/// The version in `zot --version` output: the word after `zot` on the first line, as
/// `fmt.Println("zot", version)` writes it (internal/agent/cli.go), where the version may
/// carry ` (commit, date)` (cmd/zot/main.go).
pub(crate) fn version_in_banner(output: &str) -> Option<String> {
    let line = output.lines().find(|l| !l.trim().is_empty())?;
    let mut words = line.split_whitespace();
    let first = words.next()?;
    let word = if first == "zot" { words.next()? } else { first };
    Version::parse(word).map(|_| word.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(d: Duration) -> String {
        format!("{} ms", d.as_millis())
    }

    /// The whole table as text, to pin every fact at once.
    fn render(facts: &HostFacts) -> String {
        let t = &facts.timing;
        let d = &facts.discovery;
        let up_to = facts.up_to.map_or("any newer".into(), |v| v.to_string());
        [
            format!("{} (up to {up_to}; from {})", facts.label(), facts.source),
            format!("  commands: {}", facts.commands.join(" ")),
            format!("  picked commands: {}", facts.picked_commands.join(" ")),
            format!("  tools: {}", facts.tools.join(" ")),
            format!("  events: {}", facts.events.join(" ")),
            format!("  interceptable: {}", facts.interceptable.join(" ")),
            format!(
                "  linked folders followed: {}; project hides global: {}; twins both start: {}",
                d.follows_linked_folders, d.project_hides_global, d.twins_both_start
            ),
            format!(
                "  ready idle {}, ready grace {}, hello wait {}, shutdown grace {}, term grace {}, command limit {}, tool limit {}",
                secs(t.ready_idle),
                secs(t.ready_grace),
                t.hello_wait.map_or("unlimited".into(), secs),
                secs(t.shutdown_grace),
                secs(t.term_grace),
                secs(t.command_limit),
                secs(t.tool_limit)
            ),
        ]
        .join("\n")
    }

    #[test]
    fn the_table_is_pinned() {
        let all: Vec<String> = KNOWN.iter().map(|f| render(f)).collect();
        assert_eq!(
            all.join("\n"),
            "\
zot 0.1.62 (up to 0.1.62; from zot's source at v0.1.62)
  commands: help login logout model sessions session jump compact study btw jail unjail skills reload-ext yolo telegram clear exit
  picked commands: settings tg
  tools: read write edit bash skill
  events: session_start turn_start turn_end tool_call assistant_message
  interceptable: tool_call turn_start assistant_message
  linked folders followed: false; project hides global: true; twins both start: true
  ready idle 250 ms, ready grace 3000 ms, hello wait unlimited, shutdown grace 2000 ms, term grace 1000 ms, command limit 30000 ms, tool limit 60000 ms
zot >0.1.62 (up to any newer; from the published Go SDK)
  commands: help login logout model sessions session jump compact study btw jail unjail skills reload-ext yolo telegram clear exit
  picked commands: settings tg
  tools: read write edit bash glob skill
  events: session_start session_end user_prompt_submit turn_start turn_end tool_call tool_result tool_confirmation_requested permission_decision assistant_message pre_compact post_compact subagent_start subagent_stop
  interceptable: before_agent_start tool_call turn_start assistant_message
  linked folders followed: true; project hides global: true; twins both start: true
  ready idle 250 ms, ready grace 3000 ms, hello wait unlimited, shutdown grace 2000 ms, term grace 1000 ms, command limit 30000 ms, tool limit 60000 ms"
        );
    }

    #[test]
    fn versions_parse_loosely() {
        assert_eq!(Version::parse("0.1.62"), Some(Version(0, 1, 62)));
        assert_eq!(Version::parse(" v0.1.62 "), Some(Version(0, 1, 62)));
        assert_eq!(Version::parse("0.2"), Some(Version(0, 2, 0)));
        assert_eq!(Version::parse("1"), Some(Version(1, 0, 0)));
        assert_eq!(Version::parse("0.1.63-rc.1"), Some(Version(0, 1, 63)));
        assert_eq!(Version::parse("0.1.62+build"), Some(Version(0, 1, 62)));
        for bad in [
            "", "v", "x.1.2", "0..1", "0.1.2.3", "0.1.-2", "dev", "１.2.3",
        ] {
            assert_eq!(Version::parse(bad), None, "{bad:?}");
        }
        assert!(Version(0, 1, 62) < Version(0, 1, 100));
        assert!(Version(0, 9, 0) < Version(0, 10, 0));
    }

    #[test]
    fn each_version_gets_its_entry() {
        let pick = |v: &str| {
            let c = facts_for(v);
            (c.facts.versions, c.fit)
        };
        assert_eq!(pick("0.1.62"), ("0.1.62", Fit::Known));
        assert_eq!(pick("v0.1.62"), ("0.1.62", Fit::Known));
        assert_eq!(pick("0.1.61"), ("0.1.62", Fit::OlderThanKnown));
        assert_eq!(pick("0.0.1"), ("0.1.62", Fit::OlderThanKnown));
        assert_eq!(pick("0.1.63"), (">0.1.62", Fit::Known));
        assert_eq!(pick("0.1.100"), (">0.1.62", Fit::Known));
        assert_eq!(pick("1.0.0"), (">0.1.62", Fit::Known));
        assert_eq!(pick("0.0.0"), (">0.1.62", Fit::Unversioned));
        assert_eq!(pick("latest"), (">0.1.62", Fit::NotAVersion));
    }

    #[test]
    fn the_banner_names_the_version() {
        assert_eq!(version_in_banner("zot 0.1.62\n").as_deref(), Some("0.1.62"));
        assert_eq!(
            version_in_banner("\nzot 0.1.62 (380eca9, 2026-01-01)\n").as_deref(),
            Some("0.1.62")
        );
        assert_eq!(version_in_banner("0.2.0").as_deref(), Some("0.2.0"));
        assert_eq!(version_in_banner("zot dev"), None);
        assert_eq!(version_in_banner("usage: zot [flags]"), None);
        assert_eq!(version_in_banner(""), None);
    }

    #[test]
    fn builtins_match_exactly() {
        assert!(ZOT_0_1_62.has_command("yolo"));
        for free in ["Help", "new", "cd", "swarm", "matrix", "settings"] {
            assert!(!any_command(free), "{free}");
        }
        assert!(!ZOT_0_1_62.has_tool("glob") && NEWER.has_tool("glob") && any_tool("glob"));
    }
}
