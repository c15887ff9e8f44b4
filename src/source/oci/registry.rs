//! The distribution spec's calls, made in the helper: a manifest by tag or digest, a blob by
//! digest, each checked against its digest before it is trusted; blob uploads (skipped when
//! the repository has the blob) and a manifest put, for `publish`. A registry that answers
//! 401 gets what its challenge asks for: `Bearer`, a token from the realm it names (asked
//! with the registry's credentials from Docker's configuration, [`credentials`], else
//! anonymously, as public repositories on GHCR and Docker Hub need), or `Basic`, those
//! credentials. Plain HTTP only to this machine's loopback ([`OciRef::plain_http`]); HTTPS
//! checks the server with OpenSSL's roots (`SSL_CERT_FILE` and `SSL_CERT_DIR` are honoured).
//! Errors name the registry, the repository and what the registry said; no credential is
//! ever in one.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use serde::Deserialize;

use super::artifact::{Descriptor, INDEX_TYPE, MANIFEST_TYPE, MAX_MANIFEST, digest_of};
use super::credentials::{self, Login};
use super::reference::{OciRef, PLAIN_HTTP, plain_http_allowed};
use super::verified::Verified;
use crate::output::printable;
use crate::source::meter;

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
    /// The `Authorization` value the registry asked for (a bearer token, or basic
    /// credentials from Docker's configuration), once it asked.
    auth: Option<String>,
    /// The API's base for the repository, once chosen ([`Registry::api`]).
    api: Option<String>,
}

impl Registry {
    pub(crate) fn new(reference: &OciRef) -> Registry {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_global(Some(CALL_TIMEOUT))
            .https_only(!reference.plain_http())
            .user_agent(concat!("zot-ext/", env!("CARGO_PKG_VERSION")))
            // OpenSSL, which git2 links already (ureq's default provider is rustls), with the
            // system's roots as OpenSSL finds them (`SSL_CERT_FILE`, `SSL_CERT_DIR`), not
            // ureq's default of a bundled copy of Mozilla's.
            .tls_config(
                ureq::tls::TlsConfig::builder()
                    .provider(ureq::tls::TlsProvider::NativeTls)
                    .root_certs(ureq::tls::RootCerts::PlatformVerifier)
                    .build(),
            )
            .build()
            .into();
        Registry {
            agent,
            reference: reference.clone(),
            auth: None,
            api: None,
        }
    }

    /// How messages name the repository: `oci://<registry>/<repository>`.
    fn shown(&self) -> String {
        printable(&self.reference.unpinned().to_string())
    }

    /// The manifest (or image index) the reference names and its digest (`sha256:` of its
    /// bytes), checked against the digest the reference pins, if any.
    pub(crate) fn manifest(&mut self) -> Result<(Vec<u8>, String)> {
        let name = self.reference.reference().to_string();
        let pinned = self.reference.digest.clone();
        self.manifest_named(&name, pinned.as_deref())
    }

    /// The manifest an index names by `entry`'s digest, checked against it.
    pub(crate) fn manifest_at(&mut self, entry: &Descriptor) -> Result<Vec<u8>> {
        Ok(self.manifest_named(&entry.digest, Some(&entry.digest))?.0)
    }

    /// The manifest the reference's tag names now, if it names one (`publish` adds to the
    /// index there).
    pub(crate) fn tagged(&mut self) -> Result<Option<Vec<u8>>> {
        let name = self.reference.reference().to_string();
        Ok(self
            .fetch_manifest(&name, None, true)?
            .map(|(bytes, _)| bytes))
    }

    fn manifest_named(&mut self, name: &str, pinned: Option<&str>) -> Result<(Vec<u8>, String)> {
        let fetched = self.fetch_manifest(name, pinned, false)?;
        Ok(fetched.expect("a missing manifest is an error"))
    }

    /// The manifest `name` (a tag or digest), checked against `pinned`; `None` when the
    /// registry has none and `missing_ok`.
    fn fetch_manifest(
        &mut self,
        name: &str,
        pinned: Option<&str>,
        missing_ok: bool,
    ) -> Result<Option<(Vec<u8>, String)>> {
        let url = format!("{}/manifests/{name}", self.api());
        let response = self.get(&url, &format!("{MANIFEST_TYPE}, {INDEX_TYPE}"))?;
        if missing_ok && response.status() == 404 {
            return Ok(None);
        }
        let what = format!("the manifest {}", printable(name));
        let response = self.ok(response, &what)?;
        let bytes = response
            .into_body()
            .with_config()
            .limit(MAX_MANIFEST)
            .read_to_vec()
            .map_err(|e| anyhow!("{}: cannot read {what}: {e}", self.shown()))?;
        let digest = digest_of(&bytes);
        if let Some(pinned) = pinned
            && *pinned != digest
        {
            bail!(
                "{}: the manifest the registry sent for {pinned} has the digest {digest}; nothing was installed",
                self.shown()
            );
        }
        Ok(Some((bytes, digest)))
    }

    /// The blob `blob` as a stream that refuses more bytes than it claims, and fewer, and
    /// (at its end) any whose digest differs: read it to its end before trusting it.
    pub(crate) fn blob(&mut self, blob: &Descriptor) -> Result<Verified> {
        let url = format!("{}/blobs/{}", self.api(), blob.digest);
        let what = format!("the blob {}", blob.digest);
        let response = self.get(&url, "*/*")?;
        let response = self.ok(response, &what)?;
        let body = response.into_body().into_reader();
        let metered = Metered(Box::new(body));
        let shown = self.shown();
        Ok(Verified::new(
            Box::new(metered),
            &blob.digest,
            blob.size,
            shown,
        ))
    }

    /// The API's base for the repository: HTTPS; on the loopback, plain HTTP when a registry
    /// answers it there (its `GET /v2/` answer is a registry's: 200 or 401, or the API
    /// version header), else HTTPS. Chosen at the first call.
    fn api(&mut self) -> String {
        if self.api.is_none() {
            let plain = self.reference.plain_http() && {
                let probe = format!("http://{}/v2/", self.reference.registry);
                self.agent.get(&probe).call().is_ok_and(|r| {
                    r.headers().contains_key("docker-distribution-api-version")
                        || matches!(r.status().as_u16(), 200 | 401)
                })
            };
            self.api = Some(self.reference.api(if plain { "http" } else { "https" }));
        }
        self.api.clone().unwrap_or_default()
    }

    /// GET `url`, with a token when the registry asks for one ([`Registry::authorized`]).
    fn get(&mut self, url: &str, accept: &str) -> Result<Response> {
        let agent = self.agent.clone();
        self.authorized(|auth| with_auth(agent.get(url).header("Accept", accept), auth).call())
    }

    /// `call` made with the authorization held, if any; once asked for one (401), answers the
    /// challenge: `Bearer` with a token from the realm it names (asked with the registry's
    /// credentials from Docker's configuration when there are some, else anonymously),
    /// `Basic` with those credentials; then makes the call again.
    fn authorized(
        &mut self,
        mut call: impl FnMut(Option<&str>) -> Result<Response, ureq::Error>,
    ) -> Result<Response> {
        let shown = self.shown();
        let (over, hint) = if self.reference.plain_http() {
            ("", String::new())
        } else {
            let registry = printable(&self.reference.registry);
            let hint = format!(
                "; if it speaks plain HTTP only, name it in {PLAIN_HTTP} ({PLAIN_HTTP}={registry})"
            );
            (" over HTTPS", hint)
        };
        let reach = |e: ureq::Error| anyhow!("{shown}: cannot reach the registry{over}: {e}{hint}");
        let response = call(self.auth.as_deref()).map_err(reach)?;
        if response.status() != 401 || self.auth.is_some() {
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
        // Looked up once: the answer to the first 401 is kept for every later call.
        let login = credentials::for_registry(&self.reference.registry)?;
        self.auth = Some(match challenge.split_once(' ') {
            Some((scheme, params)) if scheme.eq_ignore_ascii_case("bearer") => {
                format!(
                    "Bearer {}",
                    self.fetch_token(&parse_challenge(params), login.as_ref())?
                )
            }
            _ => match login {
                Some(login) => login.basic(),
                None => bail!(
                    "{shown}: the registry asks for a user name and password, and Docker's config.json has none for {}; log in with docker login, oras login or helm registry login",
                    printable(&self.reference.registry)
                ),
            },
        });
        call(self.auth.as_deref()).map_err(reach)
    }

    /// Uploads the file `path` as the blob `digest`, unless the repository has it already:
    /// the spec's POST of an upload, then a PUT of the whole blob.
    pub(crate) fn push_blob(&mut self, path: &Path, digest: &str) -> Result<()> {
        let api = self.api();
        let agent = self.agent.clone();
        let url = format!("{api}/blobs/{digest}");
        let there = self.authorized(|auth| with_auth(agent.head(&url), auth).call())?;
        if there.status().is_success() {
            return Ok(());
        }
        let uploads = format!("{api}/blobs/uploads/");
        let started = self.authorized(|auth| with_auth(agent.post(&uploads), auth).send_empty())?;
        let started = self.ok(started, "an upload")?;
        let location = started
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                anyhow!(
                    "{}: the registry started an upload without naming where",
                    self.shown()
                )
            })?;
        let location = self.absolute(&api, location)?;
        let sep = if location.contains('?') { '&' } else { '?' };
        let put = format!("{location}{sep}digest={digest}");
        let file = File::open(path).map_err(|e| anyhow!("cannot open {}: {e}", path.display()))?;
        let done = self.authorized(|auth| {
            let request = agent
                .put(&put)
                .header("Content-Type", "application/octet-stream");
            with_auth(request, auth).send(&file)
        })?;
        self.ok(done, &format!("the upload of {digest}")).map(drop)
    }

    /// Puts `manifest` under the tag the reference names.
    pub(crate) fn push_manifest(
        &mut self,
        manifest: &[u8],
        media_type: &str,
        name: &str,
    ) -> Result<()> {
        let url = format!("{}/manifests/{name}", self.api());
        let agent = self.agent.clone();
        let done = self.authorized(|auth| {
            let request = agent.put(&url).header("Content-Type", media_type);
            with_auth(request, auth).send(manifest)
        })?;
        self.ok(done, "the manifest").map(drop)
    }

    /// An upload's `Location`, made absolute against the registry: a path, or a URL of the
    /// registry itself (an upload sent to another server is refused).
    fn absolute(&self, api: &str, location: &str) -> Result<String> {
        let origin = &api[..api.len() - self.reference.repository.len() - "/v2/".len()];
        if location.starts_with('/') {
            return Ok(format!("{origin}{location}"));
        }
        if location.starts_with(&format!("{origin}/")) {
            return Ok(location.to_string());
        }
        bail!(
            "{}: the registry sends the upload to {}, another server; refused",
            self.shown(),
            printable(location)
        )
    }

    /// A token from the realm of a bearer challenge, for the scope it names: asked with
    /// `login` (basic credentials) when there is one, else anonymously.
    fn fetch_token(&self, params: &[(String, String)], login: Option<&Login>) -> Result<String> {
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
        // A plain HTTP realm only where plain HTTP is allowed: on the loopback, or named.
        let plain_allowed = realm
            .strip_prefix("http://")
            .map(|rest| rest.split(['/', '?', '#']).next().unwrap_or(rest))
            .is_some_and(|authority| !authority.contains('@') && plain_http_allowed(authority));
        if !(realm.starts_with("https://") || plain_allowed) {
            bail!(
                "{}: the registry sends for a token to {}, which is not HTTPS; refused",
                self.shown(),
                printable(realm)
            );
        }
        let mut request = self.agent.get(realm);
        if let Some(login) = login {
            request = request.header("Authorization", &login.basic());
        }
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

/// A response body whose bytes count as received for the low-speed limit.
struct Metered(Box<dyn Read + Send>);

impl Read for Metered {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        meter::received(n as u64);
        Ok(n)
    }
}

/// `request` with the `Authorization` value `auth`, if any.
fn with_auth<B>(request: ureq::RequestBuilder<B>, auth: Option<&str>) -> ureq::RequestBuilder<B> {
    match auth {
        Some(value) => request.header("Authorization", value),
        None => request,
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
