//! The distribution spec's pull calls, made in the helper: a manifest by tag or digest, a blob
//! by digest, each checked against its digest before it is used; the token flow a registry
//! asks for with `WWW-Authenticate: Bearer` (anonymous: public repositories on GHCR, Docker
//! Hub and the like need a token even to read). Plain HTTP only to this machine's loopback
//! ([`OciRef::plain_http`]); HTTPS checks the server with OpenSSL's roots (`SSL_CERT_FILE`
//! and `SSL_CERT_DIR` are honoured). Errors name the registry, the repository and what the
//! registry said.

use std::fs::File;
use std::io::{Read, Write};
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::artifact::{Descriptor, MANIFEST_TYPE, MAX_MANIFEST};
use super::reference::OciRef;
use crate::output::printable;
use crate::source::git::meter;
use crate::store::filelist::hex;

/// How long connecting may take, and how long a call may last in all.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// The largest error or token document read.
const MAX_DOCUMENT: u64 = 64 * 1024;

type Response = ureq::http::Response<ureq::Body>;

/// A repository of a registry, spoken to for one fetch.
pub(crate) struct Registry {
    agent: ureq::Agent,
    reference: OciRef,
    token: Option<String>,
}

impl Registry {
    pub(crate) fn new(reference: &OciRef) -> Registry {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_global(Some(CALL_TIMEOUT))
            .https_only(!reference.plain_http())
            .user_agent(concat!("zot-ext/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Registry {
            agent,
            reference: reference.clone(),
            token: None,
        }
    }

    /// How messages name the repository: `oci://<registry>/<repository>`.
    fn shown(&self) -> String {
        printable(&self.reference.unpinned().to_string())
    }

    /// The manifest the reference names and its digest (`sha256:` of its bytes), checked
    /// against the digest the reference pins, if any.
    pub(crate) fn manifest(&mut self) -> Result<(Vec<u8>, String)> {
        let url = format!(
            "{}/manifests/{}",
            self.reference.api(),
            self.reference.reference()
        );
        let response = self.get(&url, MANIFEST_TYPE)?;
        let what = format!("the manifest {}", printable(self.reference.reference()));
        let response = self.ok(response, &what)?;
        let bytes = response
            .into_body()
            .with_config()
            .limit(MAX_MANIFEST)
            .read_to_vec()
            .map_err(|e| anyhow!("{}: cannot read {what}: {e}", self.shown()))?;
        let digest = format!("sha256:{}", hex(&Sha256::digest(&bytes)));
        if let Some(pinned) = &self.reference.digest
            && *pinned != digest
        {
            bail!(
                "{}: the manifest the registry sent for {pinned} has the digest {digest}; nothing was installed",
                self.shown()
            );
        }
        Ok((bytes, digest))
    }

    /// Writes the blob `blob` to `to`, refusing more bytes than it claims and any whose
    /// digest differs.
    pub(crate) fn blob_to(&mut self, blob: &Descriptor, to: &mut File) -> Result<()> {
        let url = format!("{}/blobs/{}", self.reference.api(), blob.digest);
        let what = format!("the blob {}", blob.digest);
        let response = self.get(&url, "*/*")?;
        let response = self.ok(response, &what)?;
        let mut body = response.into_body().into_reader().take(blob.size + 1);
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 256 * 1024];
        let mut received = 0u64;
        loop {
            let n = body
                .read(&mut buf)
                .map_err(|e| anyhow!("{}: cannot read {what}: {e}", self.shown()))?;
            if n == 0 {
                break;
            }
            received += n as u64;
            meter::received(n as u64);
            if received > blob.size {
                bail!(
                    "{}: {what} is longer than the {} bytes its manifest says; nothing was installed",
                    self.shown(),
                    blob.size
                );
            }
            hasher.update(&buf[..n]);
            to.write_all(&buf[..n])?;
        }
        if received < blob.size {
            bail!(
                "{}: {what} ended after {received} of its {} bytes; nothing was installed",
                self.shown(),
                blob.size
            );
        }
        let digest = format!("sha256:{}", hex(&hasher.finalize()));
        if digest != blob.digest {
            bail!(
                "{}: {what} has the digest {digest}, not the one its manifest names; nothing was installed",
                self.shown()
            );
        }
        Ok(())
    }

    /// GET `url`; once asked for a bearer token (401 with `WWW-Authenticate: Bearer`), gets
    /// one from the realm the registry names and asks again with it.
    fn get(&mut self, url: &str, accept: &str) -> Result<Response> {
        let response = self.send(url, accept)?;
        if response.status() != 401 || self.token.is_some() {
            return Ok(response);
        }
        let Some(challenge) = response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
        else {
            return Ok(response);
        };
        let Some(params) = challenge.strip_prefix("Bearer ").map(parse_challenge) else {
            bail!(
                "{}: the registry asks for a user name and password ({}); zot ext reads no registry credentials yet, so only repositories anyone may read can be installed",
                self.shown(),
                printable(challenge.split(' ').next().unwrap_or_default())
            );
        };
        self.token = Some(self.fetch_token(&params)?);
        self.send(url, accept)
    }

    fn send(&self, url: &str, accept: &str) -> Result<Response> {
        let mut request = self.agent.get(url).header("Accept", accept);
        if let Some(token) = &self.token {
            request = request.header("Authorization", &format!("Bearer {token}"));
        }
        request
            .call()
            .map_err(|e| anyhow!("{}: cannot reach the registry: {e}", self.shown()))
    }

    /// An anonymous token from the realm of a bearer challenge, for the scope it names.
    fn fetch_token(&self, params: &[(String, String)]) -> Result<String> {
        let get = |key: &str| {
            params
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let realm = get("realm").ok_or_else(|| {
            anyhow!(
                "{}: the registry's token challenge names no realm",
                self.shown()
            )
        })?;
        let plain_allowed = self.reference.plain_http() && realm.starts_with("http://");
        if !(realm.starts_with("https://") || plain_allowed) {
            bail!(
                "{}: the registry sends for a token to {}, which is not HTTPS; refused",
                self.shown(),
                printable(realm)
            );
        }
        let mut request = self.agent.get(realm);
        for key in ["service", "scope"] {
            if let Some(value) = get(key) {
                request = request.query(key, value);
            }
        }
        let response = request
            .call()
            .map_err(|e| anyhow!("{}: cannot reach the token service: {e}", self.shown()))?;
        let response = self.ok(response, "a token")?;
        let token: Token = response
            .into_body()
            .with_config()
            .limit(MAX_DOCUMENT)
            .read_json()
            .map_err(|e| {
                anyhow!(
                    "{}: the token service's answer is not a token: {e}",
                    self.shown()
                )
            })?;
        token.token.or(token.access_token).ok_or_else(|| {
            anyhow!(
                "{}: the token service's answer holds no token",
                self.shown()
            )
        })
    }

    /// `response` when it is a success; else an error naming the repository, `what` was
    /// asked for, the status and the registry's own words.
    fn ok(&self, response: Response, what: &str) -> Result<Response> {
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let said = said(response);
        let meaning = match status.as_u16() {
            401 => "the registry wants credentials (401)",
            403 => "the registry refuses access (403)",
            404 => "not found (404)",
            _ => "",
        };
        let status = if meaning.is_empty() {
            format!("the registry answered {status}")
        } else {
            meaning.to_string()
        };
        Err(anyhow!("{}: {what}: {status}{said}", self.shown()))
    }
}

/// A token service's answer (Docker's `token`, OAuth's `access_token`).
#[derive(Deserialize)]
struct Token {
    token: Option<String>,
    access_token: Option<String>,
}

/// The registry's explanation in an error body (`{"errors":[{"code","message"}]}`), as
/// `: MANIFEST_UNKNOWN manifest unknown`, escaped; empty when there is none.
fn said(response: Response) -> String {
    #[derive(Deserialize)]
    struct Errors {
        errors: Vec<Error>,
    }
    #[derive(Deserialize)]
    struct Error {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    let Ok(body) = response
        .into_body()
        .with_config()
        .limit(MAX_DOCUMENT)
        .read_json::<Errors>()
    else {
        return String::new();
    };
    let words: Vec<String> = body
        .errors
        .iter()
        .take(3)
        .map(|e| printable(format!("{} {}", e.code, e.message).trim()))
        .collect();
    if words.is_empty() {
        String::new()
    } else {
        format!(": the registry said {}", words.join("; "))
    }
}

/// The `key="value"` pairs of a challenge's parameters.
fn parse_challenge(params: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = params.trim();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let (value, next) = match after.strip_prefix('"') {
            Some(quoted) => match quoted.split_once('"') {
                Some((value, next)) => (value, next),
                None => (quoted, ""),
            },
            None => after.split_once(',').unwrap_or((after, "")),
        };
        out.push((key, value.to_string()));
        rest = next.trim_start_matches(',').trim();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_challenges_are_read_as_docker_writes_them() {
        let params = parse_challenge(
            r#"realm="https://ghcr.io/token",service="ghcr.io",scope="repository:me/ext:pull""#,
        );
        assert_eq!(
            params,
            [
                ("realm".to_string(), "https://ghcr.io/token".to_string()),
                ("service".to_string(), "ghcr.io".to_string()),
                ("scope".to_string(), "repository:me/ext:pull".to_string()),
            ]
        );
        assert_eq!(
            parse_challenge("realm=x, service=y")[1],
            ("service".into(), "y".into())
        );
    }
}
