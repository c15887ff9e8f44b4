//! `oci://<registry>/<repository>[:<tag>][@sha256:<digest>]`: an extension published in an
//! OCI registry, named as the distribution spec names a manifest. The grammar is the spec's
//! (`[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*` path components, tags of at most 128 word
//! characters, dots and dashes, SHA-256 digests in lowercase hex); anything else is refused
//! before a connection is made, so no text of the argument reaches a request line unchecked.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// The scheme that makes an install argument an OCI reference.
pub(crate) const SCHEME: &str = "oci://";

/// A parsed reference; [`OciRef::check`] says whether it follows the spec's grammar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct OciRef {
    /// `host[:port]` as written (lowercased host).
    pub registry: String,
    pub repository: String,
    pub tag: Option<String>,
    /// `sha256:<64 hex>` when the reference pins a manifest.
    pub digest: Option<String>,
}

impl OciRef {
    /// `arg` read as a reference when it starts with `oci://`; `None` otherwise. The parts
    /// are split here and judged by [`OciRef::check`].
    pub(crate) fn parse(arg: &str) -> Option<OciRef> {
        let rest = arg.strip_prefix(SCHEME)?;
        let (rest, digest) = match rest.split_once('@') {
            Some((rest, digest)) => (rest, Some(digest.to_string())),
            None => (rest, None),
        };
        let (registry, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repository, tag)) => (repository, Some(tag.to_string())),
            None => (path, None),
        };
        Some(OciRef {
            registry: registry.to_ascii_lowercase(),
            repository: repository.to_string(),
            tag,
            digest,
        })
    }

    /// `Err` saying which part breaks the distribution spec's grammar, and how it should look.
    pub(crate) fn check(&self) -> Result<(), String> {
        let shown = crate::output::printable(&self.to_string());
        if !valid_registry(&self.registry) {
            return Err(format!(
                "{shown}: the registry must be a host name or address with an optional :port (oci://ghcr.io/me/ext:1.0)"
            ));
        }
        if !valid_repository(&self.repository) {
            return Err(format!(
                "{shown}: the repository must be lowercase path components of letters and digits joined by . _ __ or -, separated by / (oci://ghcr.io/me/ext:1.0)"
            ));
        }
        if let Some(tag) = &self.tag
            && !valid_tag(tag)
        {
            return Err(format!(
                "{shown}: a tag is 1 to 128 letters, digits, _ . or -, not starting with . or -"
            ));
        }
        if let Some(digest) = &self.digest
            && !valid_digest(digest)
        {
            return Err(format!(
                "{shown}: a digest is sha256: followed by 64 lowercase hexadecimal digits"
            ));
        }
        Ok(())
    }

    /// What the manifest is asked for by: the digest when pinned, else the tag (`latest`
    /// when none is given, as docker, oras and helm do).
    pub(crate) fn reference(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// Whether the registry may be spoken to in plain HTTP ([`plain_http_allowed`]).
    pub(crate) fn plain_http(&self) -> bool {
        plain_http_allowed(&self.registry)
    }

    /// The base of the registry's API for this repository over `scheme`:
    /// `https://<registry>/v2/<repo>`.
    pub(crate) fn api(&self, scheme: &str) -> String {
        format!("{scheme}://{}/v2/{}", self.registry, self.repository)
    }

    /// The reference without its digest: what `update` follows.
    pub(crate) fn unpinned(&self) -> OciRef {
        OciRef {
            digest: None,
            ..self.clone()
        }
    }
}

impl fmt::Display for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// The variable naming registries off this machine that may be spoken to in plain HTTP:
/// `host[:port]` as references write them, separated by commas or spaces.
pub(crate) const PLAIN_HTTP: &str = "ZOT_EXT_PLAIN_HTTP";

/// Whether `authority` (`host[:port]`) may be spoken to in plain HTTP: on this machine's
/// loopback (`localhost`, 127.0.0.0/8, `::1`), or when [`PLAIN_HTTP`] names it; anything
/// else is HTTPS.
pub(crate) fn plain_http_allowed(authority: &str) -> bool {
    let authority = authority.to_ascii_lowercase();
    let host = host_of(&authority);
    let loopback = host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback
        || std::env::var(PLAIN_HTTP).is_ok_and(|listed| {
            listed
                .split(|c: char| c == ',' || c.is_whitespace())
                .any(|named| !named.is_empty() && named.eq_ignore_ascii_case(&authority))
        })
}

fn host_of(registry: &str) -> &str {
    if registry.starts_with('[') {
        return registry.split_inclusive(']').next().unwrap_or(registry);
    }
    registry.split(':').next().unwrap_or(registry)
}

fn valid_registry(registry: &str) -> bool {
    let host = host_of(registry);
    let port = &registry[host.len()..];
    let port_ok = port.is_empty()
        || port.strip_prefix(':').is_some_and(|p| {
            !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
        });
    let bracketed = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    let host_ok = match bracketed {
        Some(ip) => ip.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host.split('.').all(|label| {
                    !label.is_empty()
                        && label.len() <= 63
                        && label
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                })
        }
    };
    host_ok && port_ok
}

fn valid_repository(repository: &str) -> bool {
    !repository.is_empty() && repository.len() <= 255 && repository.split('/').all(valid_component)
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`
fn valid_component(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    if !alnum(first) || !alnum(last) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let separator = &component[start..i];
        let dashes = separator.bytes().all(|b| b == b'-');
        if !(separator == "." || separator == "_" || separator == "__" || dashes) {
            return false;
        }
    }
    true
}

/// `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`
fn valid_tag(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    tag.len() <= 128
        && tag.bytes().next().is_some_and(word)
        && tag.bytes().all(|b| word(b) || b == b'.' || b == b'-')
}

/// `sha256:` and 64 lowercase hex digits.
pub(crate) fn valid_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn the_parts_of_a_reference() {
        let r = OciRef::parse("oci://GHCR.io/me/zot-weather:1.2.0").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_deref()),
            ("ghcr.io", "me/zot-weather", Some("1.2.0"))
        );
        assert_eq!(r.reference(), "1.2.0");
        assert!(!r.plain_http());
        assert_eq!(r.api("https"), "https://ghcr.io/v2/me/zot-weather");
        let r = OciRef::parse(&format!("oci://127.0.0.1:5000/ext@{D}")).unwrap();
        assert_eq!((r.tag.as_deref(), r.reference()), (None, D));
        assert!(r.plain_http() && r.check().is_ok());
        assert_eq!(r.api("http"), "http://127.0.0.1:5000/v2/ext");
        let r = OciRef::parse("oci://localhost:5000/a/b").unwrap();
        assert_eq!((r.reference(), r.plain_http()), ("latest", true));
        assert_eq!(r.to_string(), "oci://localhost:5000/a/b");
        assert!(OciRef::parse("https://ghcr.io/x").is_none());
    }

    #[test]
    fn only_the_spec_grammar_is_taken() {
        for good in [
            "oci://ghcr.io/me/ext",
            "oci://r.example:443/a_b/c__d/e--f.g:v1.0-rc_1",
            "oci://[::1]:5000/x:latest",
        ] {
            assert!(OciRef::parse(good).unwrap().check().is_ok(), "{good}");
        }
        for bad in [
            "oci://ghcr.io/Me/ext",
            "oci://ghcr.io/me//ext",
            "oci://ghcr.io/me/ext:",
            "oci://ghcr.io/me/ext:.x",
            "oci://ghcr.io/me/../ext",
            "oci://ghcr.io/me/ext?x=1",
            "oci://ghcr.io/me/ext\n",
            "oci://ghcr.io",
            "oci://gh cr.io/me/ext",
            "oci://ghcr.io:99999x/me/ext",
            "oci://ghcr.io/me/ext@sha256:abc",
            "oci://ghcr.io/me/ext@md5:0123",
        ] {
            assert!(OciRef::parse(bad).unwrap().check().is_err(), "{bad:?}");
        }
    }
}
