//! What a sealed step is, as both stages read it from their command line (and the names
//! they are started under): the program, its arguments and folder, the file rules and
//! whether the network is kept. Paths and flags
//! only (the environment is inherited, so no value of it shows in a process listing), and
//! any bytes a path may hold.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// `argv[0]` of the first stage.
pub(crate) const SUPERVISOR: &str = "zot-ext-seal";

/// `argv[0]` of the second stage.
pub(crate) const CONFINED: &str = "zot-ext-sealed";

/// Exit status of a stage that could not set the seal up (as `env` and container runtimes
/// use 125 for their own failures); its reason is the last line it wrote on stderr.
pub(crate) const SETUP_FAILED: u8 = 125;

/// This program's own file, to start again as a stage.
pub(super) fn this_program() -> std::io::Result<PathBuf> {
    std::env::current_exe()
}

/// The folders a sealed step may read and write (each with everything beneath it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rules {
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
}

/// One step, as the stages run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The working folder.
    pub dir: PathBuf,
    /// `None`: no file rules (a fetch step).
    pub rules: Option<Rules>,
    /// Whether the step may use the network.
    pub network: bool,
    /// zot's process id, which the supervisor checks is its parent (set by `to_args`).
    pub parent: u32,
    /// Set by the supervisor for the confined stage: the network is already cut by a
    /// namespace of its own.
    pub network_namespace: bool,
    /// Whether the supervisor may make namespaces (`ZOT_EXT_SEAL_NAMESPACES=0` says no:
    /// the seal then stands on Landlock and the subreaper alone, as where the kernel
    /// forbids them).
    pub namespaces: bool,
}

impl Spec {
    /// A step of `program` with `args` in `dir`, with the network and no file rules.
    pub(crate) fn new(program: PathBuf, args: Vec<OsString>, dir: PathBuf) -> Spec {
        Spec {
            program,
            args,
            dir,
            rules: None,
            network: true,
            parent: 0,
            network_namespace: false,
            namespaces: true,
        }
    }

    /// The command line of the supervisor, for zot's process `parent`.
    pub(crate) fn to_args(&self, parent: u32) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["--parent".into(), parent.to_string().into()];
        args.push("--dir".into());
        args.push(self.dir.clone().into_os_string());
        if let Some(rules) = &self.rules {
            args.push("--files".into());
            for path in &rules.read {
                args.push("--read".into());
                args.push(path.clone().into_os_string());
            }
            for path in &rules.write {
                args.push("--write".into());
                args.push(path.clone().into_os_string());
            }
        }
        if !self.network {
            args.push("--no-network".into());
        }
        if self.network_namespace {
            args.push("--network-namespace".into());
        }
        if !self.namespaces {
            args.push("--no-namespaces".into());
        }
        args.push("--".into());
        args.push(self.program.clone().into_os_string());
        args.extend(self.args.iter().cloned());
        args
    }

    /// Reads what [`Spec::to_args`] wrote.
    pub(crate) fn parse(args: &[OsString]) -> Result<Spec, String> {
        let mut spec = Spec::new(PathBuf::new(), Vec::new(), PathBuf::new());
        let mut words = args.iter();
        let value = |words: &mut std::slice::Iter<'_, OsString>, flag: &str| {
            words
                .next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        while let Some(word) = words.next() {
            match word.to_str() {
                Some("--parent") => {
                    let text = value(&mut words, "--parent")?;
                    spec.parent = text
                        .to_str()
                        .and_then(|t| t.parse().ok())
                        .ok_or("--parent needs a process id")?;
                }
                Some("--dir") => spec.dir = value(&mut words, "--dir")?.into(),
                Some("--files") => spec.rules = Some(spec.rules.take().unwrap_or_default()),
                Some("--read") => {
                    let path = value(&mut words, "--read")?.into();
                    spec.rules
                        .get_or_insert_with(Rules::default)
                        .read
                        .push(path);
                }
                Some("--write") => {
                    let path = value(&mut words, "--write")?.into();
                    spec.rules
                        .get_or_insert_with(Rules::default)
                        .write
                        .push(path);
                }
                Some("--no-network") => spec.network = false,
                Some("--network-namespace") => spec.network_namespace = true,
                Some("--no-namespaces") => spec.namespaces = false,
                Some("--") => {
                    let program = words.next().ok_or(
                        "zot runs this to seal the steps that prepare an extension; it is not a command of its own",
                    )?;
                    spec.program = program.into();
                    spec.args = words.cloned().collect();
                    return Ok(spec);
                }
                _ => return Err(format!("unknown argument {}", show(word))),
            }
        }
        Err(
            "zot runs this to seal the steps that prepare an extension; it is not a command of its own"
                .into(),
        )
    }
}

fn show(word: &OsStr) -> String {
    crate::output::printable(&word.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt as _;

    #[test]
    fn the_command_line_reads_back_as_written() {
        let odd = OsString::from_vec(b"/tmp/z\xffo t/--read".to_vec());
        let mut spec = Spec::new(
            "/usr/bin/go".into(),
            vec!["build".into(), "--".into(), odd.clone()],
            PathBuf::from(odd.clone()),
        );
        spec.rules = Some(Rules {
            read: vec!["/usr".into(), PathBuf::from(odd.clone())],
            write: vec![],
        });
        spec.network = false;
        spec.namespaces = false;
        let args = spec.to_args(42);
        let back = Spec::parse(&args).unwrap();
        assert_eq!(back.parent, 42);
        assert_eq!(Spec { parent: 0, ..back }, spec);
    }

    #[test]
    fn without_a_program_it_says_what_it_is() {
        let e = Spec::parse(&[]).unwrap_err();
        assert!(e.contains("not a command of its own"), "{e}");
        let e = Spec::parse(&["--bogus".into()]).unwrap_err();
        assert_eq!(e, "unknown argument --bogus");
    }

    #[test]
    fn no_rules_and_the_network_are_the_default() {
        let spec = Spec::parse(&["--".into(), "/bin/true".into()]).unwrap();
        assert_eq!(spec.rules, None);
        assert!(spec.network);
    }
}
