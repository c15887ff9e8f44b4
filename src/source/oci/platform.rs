//! Platforms as OCI image indexes name them (`os/architecture[/variant]`, Go's names:
//! `linux/amd64`, `darwin/arm64`, `linux/arm/v7`): what `publish --platform` builds for,
//! and the one `install` picks from an index for the machine it runs on.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One platform of an image index.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct Platform {
    pub os: String,
    pub architecture: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl Platform {
    /// `os/architecture[/variant]`, each part lowercase letters, digits and `_`; `Err` says
    /// what the argument should look like.
    pub(crate) fn parse(text: &str) -> Result<Platform, String> {
        let parts: Vec<&str> = text.split('/').collect();
        let word = |p: &&str| {
            !p.is_empty()
                && p.len() <= 32
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        };
        match parts.as_slice() {
            [os, arch, rest @ ..] if rest.len() <= 1 && parts.iter().all(word) => Ok(Platform {
                os: os.to_string(),
                architecture: arch.to_string(),
                variant: rest.first().map(ToString::to_string),
            }),
            _ => Err(format!(
                "{} is not a platform: give os/architecture as Go names them (linux/amd64, linux/arm64, darwin/arm64, linux/arm/v7)",
                crate::output::printable(text)
            )),
        }
    }

    /// The platform this program was built for (and so runs on), in Go's names.
    pub(crate) fn running() -> Platform {
        let os = match std::env::consts::OS {
            "macos" => "darwin",
            other => other,
        };
        let (architecture, variant) = match std::env::consts::ARCH {
            "x86_64" => ("amd64", None),
            "x86" => ("386", None),
            "aarch64" => ("arm64", None),
            "arm" => ("arm", Some("v7")),
            "powerpc64" if cfg!(target_endian = "little") => ("ppc64le", None),
            "loongarch64" => ("loong64", None),
            other => (other, None),
        };
        Platform {
            os: os.to_string(),
            architecture: architecture.to_string(),
            variant: variant.map(str::to_string),
        }
    }

    /// Whether it reads as [`Platform::parse`] takes it (one from a registry's index may
    /// hold anything): only such a platform is picked, kept or shown.
    pub(crate) fn well_formed(&self) -> bool {
        Platform::parse(&self.to_string()).as_ref() == Ok(self)
    }

    /// Whether a manifest for `self` runs where `running` is: same OS and architecture, and
    /// the same variant when both name one.
    pub(crate) fn runs_on(&self, running: &Platform) -> bool {
        self.os == running.os
            && self.architecture == running.architecture
            && match (&self.variant, &running.variant) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(variant) = &self.variant {
            write!(f, "/{variant}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_read_and_print_as_go_names_them() {
        let arm = Platform::parse("linux/arm/v7").unwrap();
        assert_eq!(arm.variant.as_deref(), Some("v7"));
        assert_eq!(arm.to_string(), "linux/arm/v7");
        assert_eq!(
            Platform::parse("linux/amd64").unwrap().to_string(),
            "linux/amd64"
        );
        for bad in [
            "linux",
            "Linux/amd64",
            "linux/amd64/v1/x",
            "linux//amd64",
            "a/b c",
        ] {
            assert!(Platform::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_variant_decides_only_when_both_name_one() {
        let running = Platform::parse("linux/arm/v7").unwrap();
        assert!(Platform::parse("linux/arm").unwrap().runs_on(&running));
        assert!(!Platform::parse("linux/arm/v6").unwrap().runs_on(&running));
        assert!(!Platform::parse("linux/arm64").unwrap().runs_on(&running));
    }

    #[test]
    fn a_platform_from_a_registry_is_well_formed_only_as_parse_takes_it() {
        let odd = |os: &str, variant: Option<&str>| Platform {
            os: os.to_string(),
            architecture: "amd64".to_string(),
            variant: variant.map(str::to_string),
        };
        assert!(odd("linux", None).well_formed());
        assert!(odd("linux", Some("v2")).well_formed());
        assert!(!odd("linux", Some("\u{1b}[2J")).well_formed());
        assert!(!odd("linux/x", None).well_formed());
        assert!(!odd("", None).well_formed());
    }

    #[test]
    fn the_running_platform_has_go_names() {
        let running = Platform::running();
        assert!(Platform::parse(&running.to_string()).is_ok());
        assert_ne!(running.os, "macos");
        assert_ne!(running.architecture, "x86_64");
    }
}
