//! The sections of the man pages beyond the clap definitions and the examples: the
//! environment variables, files and exit statuses of each command, which
//! [`super::man`] renders and tests/cli/generated.rs holds docs/commands.md's "Exit status"
//! tables to. The binary never reads them (its `--help` shows only the examples, from
//! `zot_ext::cli::pages`), so they live beside their renderer.

/// The environment variables zot reads or sets: (name, what it means).
pub(crate) const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "ZOT_HOME",
        "Where global extensions and logs live. When unset or empty: $XDG_STATE_HOME/zot, \
         else ~/.local/state/zot; on macOS ~/Library/Application Support/zot.",
    ),
    (
        "XDG_STATE_HOME",
        "The base of the default ZOT_HOME on Linux and other Unix systems; ignored unless it \
         is an absolute path.",
    ),
    (
        "NO_COLOR",
        "When set and not empty, output is not coloured, unless --color always is given.",
    ),
    (
        "CLICOLOR_FORCE",
        "When set, not empty and not 0, output is coloured even in a pipe, unless NO_COLOR is \
         set or --color never is given.",
    ),
    (
        "TERM",
        "When dumb (or unset), a terminal gets no colour and doctor draws no live progress \
         line; CLICOLOR=0 also turns colour off.",
    ),
    (
        "ZOT_AGENT",
        "The zot agent's executable. Invoked as zot with a command line other than ext, \
         completions or help for those, the binary runs the agent in its place with the \
         same arguments; when unset or empty, the agent is the next zot on PATH that is not \
         this binary (by file identity; relative PATH entries are skipped). A value without \
         a slash is a name looked up on PATH the same way; one with a slash is a path, \
         relative to the current folder unless it starts with /. Never used when invoked \
         as zot-ext.",
    ),
    (
        "ZOT_EXT_PASSTHROUGH",
        "Set in the agent's environment: how many times in a row a command line was handed \
         to the agent. At 4 the binary stops (exit 2), since the agent then seems to call \
         zot back.",
    ),
    (
        "ZOT_EXT_HANDED_OVER",
        "Set in the agent's environment: the file identities (device:inode) of the copies \
         of this binary that handed the command line over; every copy skips them when it \
         looks for the agent, so two copies on PATH do not hand over to each other.",
    ),
    (
        "COMPLETE",
        "Set by the completion scripts: zot then prints completion candidates for the words \
         after -- instead of running a command.",
    ),
    (
        "COLUMNS",
        "The width list fits its table to on a terminal that does not report its own size \
         (else 80). Ignored when stdout is not a terminal: piped output is always full width.",
    ),
    (
        "GIT_HTTP_LOW_SPEED_LIMIT, GIT_HTTP_LOW_SPEED_TIME",
        "A git fetch that receives fewer than LIMIT bytes per second for TIME seconds ends \
         with an error, over every transport; they override git's http.lowSpeedLimit and \
         http.lowSpeedTime (default 1000 bytes per second over 60 s; 0 turns it off).",
    ),
    (
        "ZOT_EXT_ALLOW_SCRIPTS",
        "When set, not empty and not false or 0: as --allow-scripts, for CI (a project \
         file's \"allow_scripts\": true is not enough on its own).",
    ),
    (
        "ZOT_EXT_REQUIRE_SANDBOX",
        "When set, not empty and not false or 0: as --require-sandbox; a build step that \
         cannot run in the seal is an error, whatever else was given.",
    ),
    (
        "ZOT_EXT_SEAL_NAMESPACES",
        "0 makes the seal of build steps do without namespaces (Landlock's TCP rules cut \
         the network, a subreaper ends what the step leaves), as on a machine that forbids \
         them.",
    ),
    (
        "DOCKER_CONFIG",
        "The folder of Docker's config.json, where registry credentials are read from \
         (auths, credHelpers, credsStore); else ~/.docker.",
    ),
    (
        "ZOT_EXT_PLAIN_HTTP",
        "Registries off this machine spoken to in plain HTTP (host:port as references \
         write them, separated by commas or spaces); every other registry but the loopback \
         is HTTPS.",
    ),
    (
        "SOURCE_DATE_EPOCH",
        "Seconds since 1970: zot ext publish writes it as the artifact's created \
         annotation (never the clock).",
    ),
    (
        "GIT_ALLOW_PROTOCOL",
        "When set, the colon-separated protocols submodules may use; a local (file:// or \
         path) submodule URL needs file in it, or else protocol.file.allow=always in the git \
         configuration.",
    ),
];

/// The files and folders zot reads and writes: (path pattern, what it holds).
pub(crate) const FILES: &[(&str, &str)] = &[
    (
        "./.zot/extensions/<name>/",
        "Project scope: extensions of the project in the current directory. A project copy \
         wins over a global copy of the same name.",
    ),
    (
        "$ZOT_HOME/extensions/<name>/",
        "Global scope: extensions of every project.",
    ),
    (
        "<extension>/extension.json",
        "The manifest: name, exec, args, version, language, description and enabled.",
    ),
    (
        "$ZOT_HOME/logs/ext-<name>.log",
        "The extension's stderr, appended by zot; printed by zot ext logs.",
    ),
    (
        ".ext-store/",
        "Beside each extensions folder: the lock file, staging and trash folders, the \
         install records sources/<name>.json (where each extension came from), the file \
         lists files/<name>.json (what each install placed, with SHA-256 and the tree hash), \
         backup/<name>/<time>/ (what update and install --force saved; the last 3 kept) and \
         pending/, a journal that is empty except while a change is being made. Never followed \
         through a symbolic link: a link there is an error naming it.",
    ),
    (
        "$ZOT_HOME/.ext-store/cache/",
        "The fetch cache: <commit>/ the checked-out tree of each git commit fetched, and \
         <commit>.tree its tree hash; <digest>.layer the compressed layer of each registry \
         manifest pulled, and <digest>.tree the layer's digest. Used only while the files \
         still hash to what is recorded, and only for the sources that fetched them. Emptied \
         by zot ext cache clean.",
    ),
    (
        "$ZOT_HOME/.ext-store/build-cache/",
        "zot's own build caches, never the user's: go-build/ and go-mod/ (Go's build and \
         module caches), cargo-home/ (what cargo fetch downloads), cargo-target/<name>/ (an \
         extension's Cargo target folder), kept warm between installs.",
    ),
    (
        "$ZOT_HOME/logs/prepare-<name>.log",
        "The output of the last steps that prepared <name> (its build or dependency \
         install), and what was set aside while they ran.",
    ),
    (
        "extensions.lock",
        "Beside each extensions folder (./.zot/ and $ZOT_HOME/): the lock file, read by \
         zot ext verify: each extension's source, ref, commit and tree hash.",
    ),
];

/// The exit statuses of every command; each page adds its own from [`EXIT_STATUSES`].
pub(crate) const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Success, also when the output pipe was closed early (zot ext list | head -1).",
    ),
    (
        "1",
        "Failure: what was asked could not be done, for instance because a file could not \
         be read or written. The error is printed to stderr as error: ..., naming the file, \
         field or flag involved; with --json, as one line of JSON instead: \
         {\"schema_version\": 1, \"error\": \"...\", \"suggestions\": [...]}.",
    ),
    (
        "2",
        "Usage error: an unknown flag or subcommand, a missing argument, or a value that \
         does not parse; nothing was changed.",
    ),
];

/// What each command's exit statuses mean beyond [`EXIT_STATUS`], keyed by command like
/// [`EXAMPLES`]: (status, when). A test fails when a `zot ext` subcommand has none.
pub(crate) const EXIT_STATUSES: &[(&str, &[(&str, &str)])] = &[
    (
        "zot",
        &[
            (
                "0",
                "Without a command and without an agent: the overview is printed (as for \
                 zot ext alone).",
            ),
            (
                "2",
                "A command line for the agent when no agent is found, ZOT_AGENT names \
                 something that cannot run, or the hand-over loops. (A command line handed \
                 to the agent ends with the agent's own exit status.)",
            ),
        ],
    ),
    (
        "zot ext",
        &[(
            "0",
            "Without a subcommand: the overview of the commands is printed.",
        )],
    ),
    (
        "zot ext list",
        &[
            (
                "0",
                "Also when a manifest is missing or invalid: that extension is listed as \
                 broken, with the reason. Also when nothing is installed.",
            ),
            ("1", "An extensions folder exists but cannot be read."),
        ],
    ),
    (
        "zot ext install",
        &[
            (
                "1",
                "The source does not exist, is a file, or is inside (or contains) the \
                 extensions folder; cloning it or checking out --ref fails; the subfolder \
                 does not exist; the manifest is missing or invalid; the source holds a \
                 named pipe, socket or device; a submodule cannot be fetched; the project's \
                 .zot or .zot/extensions is a symbolic link (with --project), or .ext-store \
                 is not what it must be; or an extension of that name is installed and \
                 --force is not given. Nothing is installed.",
            ),
            (
                "2",
                "--ref with a local folder; both --subdir and URL#path; a --subdir that is \
                 not a relative folder inside the source; an empty source; a \
                 user:password@host:path source (that form cannot carry a password); or a git \
                 URL holding a control character, also percent-encoded.",
            ),
        ],
    ),
    (
        "zot ext remove",
        &[
            (
                "1",
                "No extension of that name is installed (in the scope given), the answer \
                 at the terminal is not y or yes, or --keep-data cannot save its data; \
                 nothing is removed.",
            ),
            (
                "2",
                "Without --yes when stdin is not a terminal and gives no y or yes line within \
                 1 second (an empty or silent pipe, /dev/null, any other answer); nothing is \
                 removed.",
            ),
        ],
    ),
    (
        "zot ext enable",
        &[
            (
                "0",
                "Also when the extension is enabled already; the manifest is left as it is.",
            ),
            (
                "1",
                "No extension of that name is installed (in the scope given), or its \
                 manifest is invalid (fix it first).",
            ),
        ],
    ),
    (
        "zot ext disable",
        &[
            (
                "0",
                "Also when the extension is disabled already; the manifest is left as it is.",
            ),
            (
                "1",
                "No extension of that name is installed (in the scope given), or its \
                 manifest is invalid (fix it first).",
            ),
        ],
    ),
    (
        "zot ext logs",
        &[
            (
                "1",
                "No extension of that name is installed and it has no log; or, without -f, the \
                 log of an installed extension does not exist yet (with -f zot waits for it); or \
                 the log is not a regular file (a named pipe, socket or device; also with -f).",
            ),
            (
                "2",
                "The name is empty, . or .., contains a slash, backslash or control \
                 character, or is too long for a file name; nothing is read.",
            ),
        ],
    ),
    (
        "zot ext doctor",
        &[
            (
                "0",
                "Also when nothing is installed: there is nothing to check.",
            ),
            (
                "1",
                "Any extension checked has an error; with --strict, also when one has only \
                 warnings (notes never fail). Also when a named extension is not installed, \
                 or a folder given as a path does not exist.",
            ),
        ],
    ),
    (
        "zot ext call",
        &[
            (
                "1",
                "The extension cannot be started (not installed, invalid manifest, exec not \
                 found); it does not register the command or tool, or the tool is \
                 interactive; it exits or times out (--timeout) before answering, or its \
                 answer cannot be decoded; or it answers with an error (a command_response \
                 with an error, a tool_result with is_error).",
            ),
            (
                "2",
                "No /<command> is given, or its name is empty; or the --tool arguments are \
                 not one JSON object. The extension is not started.",
            ),
        ],
    ),
    (
        "zot ext new",
        &[
            (
                "1",
                "An extension of that name exists already in the scope, or the --dir folder \
                 exists and is not an empty folder; nothing is written.",
            ),
            (
                "2",
                "The name is not a valid extension name (letters, digits, '.', '_' and '-').",
            ),
        ],
    ),
    (
        "zot ext update",
        &[
            (
                "0",
                "Also when nothing changed (up to date) and when extensions are skipped: \
                 pinned to a tag or commit (without --ref), and, with --all, linked ones, \
                 ones made by zot ext new and ones without an install record.",
            ),
            (
                "1",
                "Any extension failed to update (it keeps its old version; the others are \
                 still updated), or a named extension is not installed or cannot be updated \
                 (linked, made by zot ext new, or without an install record); the reasons \
                 go to stderr, also with --quiet.",
            ),
            (
                "2",
                "Neither names nor --all; names together with --all; or --ref without \
                 exactly one name, or for an extension that is not a git install (installed \
                 from a folder, linked, made by zot ext new, or without an install record).",
            ),
        ],
    ),
    (
        "zot ext link",
        &[(
            "1",
            "The path does not exist, is not a folder, or is inside (or contains) the \
             extensions folder; its manifest is missing or invalid; or an extension of that \
             name is installed and --force is not given. Nothing is linked.",
        )],
    ),
    (
        "zot ext publish",
        &[
            ("0", "Pushed; the manifest digest is printed."),
            (
                "1",
                "The folder or installed copy is not one installing would place, it cannot be prepared for a --platform asked for, or the registry refused or could not be reached.",
            ),
            (
                "2",
                "The destination is not oci://<registry>/<repository>:<tag> (a digest, no tag, or outside the spec's grammar), or a --platform is not os/architecture.",
            ),
        ],
    ),
    (
        "zot ext info",
        &[
            (
                "0",
                "Also when the copies found are broken: their errors are shown.",
            ),
            (
                "1",
                "No copy of that name is installed in either scope (in the scope given).",
            ),
        ],
    ),
    (
        "zot ext add",
        &[
            (
                "1",
                "The source cannot be installed (as for install), an extension of that name is \
                 installed already, or the project file or lock cannot be read or written.",
            ),
            (
                "2",
                "--ref for a folder source, a subfolder given twice (--subdir and URL#path), a \
                 URL with credentials (they are never written into the project file), or a git \
                 URL holding a control character, also percent-encoded.",
            ),
        ],
    ),
    (
        "zot ext verify",
        &[
            (
                "0",
                "Also when an extension is not in the lock file, or has no file list (it \
                 cannot be verified; the report says so), and when nothing is installed.",
            ),
            (
                "1",
                "A file an install placed or prepared was edited, deleted or replaced; an \
                 extension the lock file names is not installed; an installed tree is not the one the lock \
                 file records; an extension folder or the lock file cannot be read; or a \
                 named extension is neither installed nor in the lock file.",
            ),
        ],
    ),
    (
        "zot ext sync",
        &[
            (
                "1",
                "There is no project file, it or the lock is invalid, or an extension failed \
                 (the others are still in place); with --frozen, the file and the lock \
                 disagree, a fetched tree does not hash to the lock or is prepared otherwise \
                 than locked, or an installed extension's placed files changed since its \
                 install (then nothing changed).",
            ),
            ("2", "--jobs is not a number of at least 1."),
        ],
    ),
    (
        "zot ext prepare",
        &[
            (
                "1",
                "A step failed, timed out or was interrupted, or its tool is missing (the \
                 installed copy is as it was); a named extension is linked (the command to run \
                 in the working copy is printed), has no install record or file list, or is \
                 not installed.",
            ),
            (
                "2",
                "Neither a name nor --all, or --prepare-timeout is not at least 1.",
            ),
        ],
    ),
    (
        "zot ext cache",
        &[("2", "Without a subcommand: the help is printed instead.")],
    ),
    (
        "zot ext cache clean",
        &[(
            "1",
            "The cache folder, or the state folder holding it, is a symbolic link or not a \
             folder, or an entry cannot be deleted.",
        )],
    ),
    (
        "zot completions",
        &[(
            "2",
            "The shell is not one of bash, elvish, fish, powershell and zsh (also for \
             COMPLETE=<shell> zot), or none is given and $SHELL names none of them.",
        )],
    ),
];

/// The exit statuses particular to `path`, if the table has them.
pub(crate) fn exit_statuses(path: &str) -> Option<&'static [(&'static str, &'static str)]> {
    EXIT_STATUSES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, e)| *e)
}

#[test]
fn every_ext_subcommand_has_exit_statuses() {
    let missing: Vec<String> = super::man::pages()
        .into_iter()
        .map(|page| page.path)
        .filter(|p| p.starts_with("zot ext "))
        .filter(|p| exit_statuses(p).is_none_or(<[(&str, &str)]>::is_empty))
        .collect();
    assert!(
        missing.is_empty(),
        "add the exit statuses particular to {missing:?} to EXIT_STATUSES in \
         tests/cli/support/man_sections.rs"
    );
}

#[test]
fn every_exit_status_entry_belongs_to_a_command() {
    let paths: Vec<String> = super::man::pages()
        .into_iter()
        .map(|page| page.path)
        .collect();
    for (path, statuses) in EXIT_STATUSES {
        assert!(paths.iter().any(|p| p == path), "no command {path:?}");
        for (status, _) in *statuses {
            assert!(["0", "1", "2"].contains(status), "{path}: status {status}");
        }
    }
}
