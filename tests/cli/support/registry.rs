//! An OCI registry on 127.0.0.1 for the tests: Debian's `docker-registry` (the CNCF
//! distribution registry) with a storage folder of its own, killed on drop; and pushing to it
//! with the distribution spec's plain HTTP calls (by `curl`), so what zot reads is what any
//! client would have pushed. Also the layers tests push: a folder as `tar --sort=name` would
//! pack it, or entries built by hand.

use std::fs;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::git_servers::free_port;

/// The media types of an extension artifact (docs/oci.md).
pub(crate) const ARTIFACT_TYPE: &str = "application/vnd.zot.extension.v1";
pub(crate) const CONFIG_TYPE: &str = "application/vnd.zot.extension.config.v1+json";
pub(crate) const LAYER_TYPE: &str = "application/vnd.zot.extension.layer.v1.tar+gzip";

/// `docker-registry serve` on a free port of 127.0.0.1.
pub(crate) struct Registry {
    child: Child,
    pub port: u16,
    /// `http`, or `https` for [`Registry::with_tls`].
    scheme: &'static str,
    _dir: tempfile::TempDir,
}

/// A user the [`Registry::with_htpasswd`] registry knows, and its password (bcrypt in
/// [`HTPASSWD`]: the registry takes bcrypt only, and no tool for it is needed this way).
pub(crate) const USER: &str = "pat";
pub(crate) const PASSWORD: &str = "sesame-42";
const HTPASSWD: &str = "pat:$2b$05$rHsXgbhMoRtbFeLma6A/1ulYRRNJRF0wGg.Eua/YKndFFaKwS3lty\n";

impl Registry {
    pub(crate) fn start() -> Registry {
        Registry::start_with("")
    }

    /// A registry that asks for a user name and password (basic authentication), [`USER`]
    /// with [`PASSWORD`] being the one it takes.
    pub(crate) fn with_htpasswd() -> Registry {
        Registry::start_with("auth")
    }

    /// A registry that speaks only HTTPS, with the test CA's certificate for 127.0.0.1
    /// (`tests/cli/tls`: clients trust it through `SSL_CERT_FILE=<tls>/ca.pem`).
    pub(crate) fn with_tls() -> Registry {
        Registry::start_with("tls")
    }

    fn start_with(kind: &str) -> Registry {
        let dir = tempfile::tempdir().unwrap();
        let tls = super::git_servers::tls_dir();
        let scheme = if kind == "tls" { "https" } else { "http" };
        let auth = if kind == "tls" {
            format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                tls.join("server.pem").display(),
                tls.join("server.key").display()
            )
        } else if kind.is_empty() {
            String::new()
        } else {
            let file = dir.path().join("htpasswd");
            fs::write(&file, HTPASSWD).unwrap();
            format!(
                "auth:\n  htpasswd:\n    realm: zot-tests\n    path: {}\n",
                file.display()
            )
        };
        for _ in 0..5 {
            let port = free_port();
            let config = dir.path().join("config.yml");
            fs::write(
                &config,
                format!(
                    "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: zot-ext-tests\n{auth}",
                    dir.path().join("data").display()
                ),
            )
            .unwrap();
            let mut child = Command::new("docker-registry")
                .arg("serve")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("cannot start docker-registry (Debian's docker-registry package; .ci/run installs it)");
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
                if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                    return Registry {
                        child,
                        port,
                        scheme,
                        _dir: dir,
                    };
                }
                std::thread::sleep(Duration::from_millis(25));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("docker-registry did not listen in time");
    }

    /// `127.0.0.1:<port>`.
    pub(crate) fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The raw manifest or index `rest` (`<repository>:<tag>` or `@<digest>`) names, as a
    /// generic client reads it: `skopeo inspect --raw`.
    pub(crate) fn inspect_raw(&self, rest: &str) -> Vec<u8> {
        let raw = Command::new("skopeo")
            .args(["inspect", "--raw", "--tls-verify=false"])
            .arg(format!("docker://{}/{rest}", self.host()))
            .output()
            .expect("skopeo (Debian's skopeo package; .ci/run installs it)");
        let stderr = String::from_utf8_lossy(&raw.stderr);
        assert!(raw.status.success(), "{stderr}");
        raw.stdout
    }

    /// `oci://127.0.0.1:<port>/<rest>`.
    pub(crate) fn oci(&self, rest: &str) -> String {
        format!("oci://{}/{rest}", self.host())
    }

    /// Uploads `bytes` as a blob of `repo` (POST, then PUT with the digest); its digest.
    pub(crate) fn push_blob(&self, repo: &str, bytes: &[u8]) -> String {
        let digest = digest_of(bytes);
        let headers = curl(&[
            "-sf",
            "-X",
            "POST",
            "-D",
            "-",
            "-o",
            "/dev/null",
            &format!("{}://{}/v2/{repo}/blobs/uploads/", self.scheme, self.host()),
        ]);
        let location = String::from_utf8(headers)
            .unwrap()
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("location")
                    .then(|| value.trim().to_string())
            })
            .expect("the registry names the upload's location");
        let location = if location.starts_with("http") {
            location
        } else {
            format!("{}://{}{location}", self.scheme, self.host())
        };
        let sep = if location.contains('?') { '&' } else { '?' };
        let file = tempfile::NamedTempFile::new().unwrap();
        fs::write(file.path(), bytes).unwrap();
        curl(&[
            "-sf",
            "-X",
            "PUT",
            "-H",
            "Content-Type: application/octet-stream",
            "--data-binary",
            &format!("@{}", file.path().display()),
            &format!("{location}{sep}digest={digest}"),
        ]);
        digest
    }

    /// Puts `manifest` as `repo:reference`; its digest.
    pub(crate) fn push_manifest(&self, repo: &str, reference: &str, manifest: &[u8]) -> String {
        self.push_manifest_as(
            repo,
            reference,
            manifest,
            "application/vnd.oci.image.manifest.v1+json",
        )
    }

    /// Puts `manifest` (of the media type `kind`: an image index, say) as `repo:reference`;
    /// its digest.
    pub(crate) fn push_manifest_as(
        &self,
        repo: &str,
        reference: &str,
        manifest: &[u8],
        kind: &str,
    ) -> String {
        let file = tempfile::NamedTempFile::new().unwrap();
        fs::write(file.path(), manifest).unwrap();
        curl(&[
            "-sf",
            "-X",
            "PUT",
            "-H",
            &format!("Content-Type: {kind}"),
            "--data-binary",
            &format!("@{}", file.path().display()),
            &format!(
                "{}://{}/v2/{repo}/manifests/{reference}",
                self.scheme,
                self.host()
            ),
        ]);
        digest_of(manifest)
    }

    /// Pushes an extension artifact: `config` (the manifest's text) and `layer` under
    /// `repo:tag`, the layer declared with `layer_type`; the manifest's digest.
    pub(crate) fn push_extension(
        &self,
        repo: &str,
        tag: &str,
        config: &[u8],
        layer: &[u8],
        layer_type: &str,
    ) -> String {
        let config_digest = self.push_blob(repo, config);
        let layer_digest = self.push_blob(repo, layer);
        let manifest = manifest_json(
            &config_digest,
            config.len() as u64,
            layer_type,
            &layer_digest,
            layer.len() as u64,
        );
        self.push_manifest(repo, tag, manifest.as_bytes())
    }

    /// Pushes the extension folder `dir` (its files packed by [`pack`]).
    pub(crate) fn push_folder(&self, repo: &str, tag: &str, dir: &Path) -> String {
        let config = fs::read(dir.join("extension.json")).unwrap();
        self.push_extension(repo, tag, &config, &pack(dir), LAYER_TYPE)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An extension's image manifest.
pub(crate) fn manifest_json(
    config_digest: &str,
    config_size: u64,
    layer_type: &str,
    layer_digest: &str,
    layer_size: u64,
) -> String {
    format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"{ARTIFACT_TYPE}","config":{{"mediaType":"{CONFIG_TYPE}","digest":"{config_digest}","size":{config_size}}},"layers":[{{"mediaType":"{layer_type}","digest":"{layer_digest}","size":{layer_size}}}]}}"#
    )
}

pub(crate) fn digest_of(bytes: &[u8]) -> String {
    let mut text = String::from("sha256:");
    for b in Sha256::digest(bytes) {
        use std::fmt::Write as _;
        let _ = write!(text, "{b:02x}");
    }
    text
}

/// `dir` as a gzip-compressed tar, as `tar --sort=name -C dir -c . | gzip -n` makes it.
pub(crate) fn pack(dir: &Path) -> Vec<u8> {
    let out = Command::new("sh")
        .arg("-c")
        .arg("tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C \"$1\" -cf - . | gzip -n")
        .arg("sh")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tar: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A gzip-compressed tar built entry by entry by `build`.
pub(crate) fn layer(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    build(&mut builder);
    let tar = builder.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &tar).unwrap();
    gz.finish().unwrap()
}

fn curl(args: &[&str]) -> Vec<u8> {
    let ca = super::git_servers::tls_dir().join("ca.pem");
    let out = Command::new("curl")
        .args(["-u", &format!("{USER}:{PASSWORD}")])
        .arg("--cacert")
        .arg(ca)
        .args(args)
        .output()
        .expect("curl");
    assert!(
        out.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

pub(crate) const EVIL: &[u8] = br#"{"name": "evil", "version": "1.0.0", "exec": "./run.sh"}"#;

/// (repository, what the refusal says, layer): a row each of the hostile-input table.
// A table of cases, one per entry.
#[allow(clippy::too_many_lines)]
pub(crate) fn hostile_layers() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let config = EVIL;
    let header = |kind: tar::EntryType, size: u64| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_size(size);
        h.set_mode(0o755);
        h
    };
    let raw_name = |kind: tar::EntryType, name: &[u8]| {
        let mut h = header(kind, 1);
        h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name);
        h.set_cksum();
        h
    };
    let manifest_entry = |b: &mut tar::Builder<Vec<u8>>| {
        let mut h = header(tar::EntryType::Regular, config.len() as u64);
        b.append_data(&mut h, "extension.json", config).unwrap();
    };
    let rows: Vec<(&str, &str, Vec<u8>)> = vec![
        (
            "dotdot",
            "climbs out",
            layer(|b| {
                manifest_entry(b);
                b.append(&raw_name(tar::EntryType::Regular, b"../evil"), &b"x"[..])
                    .unwrap();
            }),
        ),
        (
            "absolute",
            "absolute path",
            layer(|b| {
                manifest_entry(b);
                b.append(&raw_name(tar::EntryType::Regular, b"/tmp/evil"), &b"x"[..])
                    .unwrap();
            }),
        ),
        (
            "link-out",
            "outside the extension",
            layer(|b| {
                manifest_entry(b);
                b.append_link(&mut header(tar::EntryType::Symlink, 0), "home", "../../..")
                    .unwrap();
            }),
        ),
        (
            // Inside by its names alone, outside once `sub/up` (a link to `..`) is followed.
            "link-via-link",
            "outside the extension",
            layer(|b| {
                manifest_entry(b);
                let mut dir = header(tar::EntryType::Directory, 0);
                b.append_data(&mut dir, "sub", std::io::empty()).unwrap();
                b.append_link(&mut header(tar::EntryType::Symlink, 0), "sub/up", "..")
                    .unwrap();
                b.append_link(&mut header(tar::EntryType::Symlink, 0), "x", "sub/up/../..")
                    .unwrap();
            }),
        ),
        (
            "link-absolute",
            "outside the extension",
            layer(|b| {
                manifest_entry(b);
                b.append_link(
                    &mut header(tar::EntryType::Symlink, 0),
                    "passwd",
                    "/etc/passwd",
                )
                .unwrap();
            }),
        ),
        (
            "device",
            "a character device",
            layer(|b| {
                manifest_entry(b);
                b.append_data(&mut header(tar::EntryType::Char, 0), "null", &[][..])
                    .unwrap();
            }),
        ),
        (
            "fifo",
            "a named pipe",
            layer(|b| {
                manifest_entry(b);
                b.append_data(&mut header(tar::EntryType::Fifo, 0), "pipe", &[][..])
                    .unwrap();
            }),
        ),
        (
            "hardlink",
            "hard link",
            layer(|b| {
                manifest_entry(b);
                b.append_link(
                    &mut header(tar::EntryType::Link, 0),
                    "again",
                    "extension.json",
                )
                .unwrap();
            }),
        ),
        (
            "under-link",
            "a link",
            layer(|b| {
                b.append_link(&mut header(tar::EntryType::Symlink, 0), "d", ".")
                    .unwrap();
                manifest_entry(b);
                let mut h = header(tar::EntryType::Regular, 1);
                b.append_data(&mut h, "d/run.sh", &b"x"[..]).unwrap();
            }),
        ),
        (
            "not-gzip",
            "not a valid gzip-compressed tar",
            b"just bytes".to_vec(),
        ),
    ];
    rows
}

/// A stand-in registry serving one manifest for every tag or digest and one blob for every
/// digest: what a compromised or broken registry could send.
pub(crate) fn lying_registry(manifest: Vec<u8>, blob: Vec<u8>) -> u16 {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let port = server.server_addr().to_ip().unwrap().port();
    std::thread::spawn(move || {
        for request in server.incoming_requests() {
            let body = if request.url().contains("/manifests/") {
                manifest.clone()
            } else {
                blob.clone()
            };
            let _ = request.respond(tiny_http::Response::from_data(body));
        }
    });
    port
}

/// What a [`token_registry`] was asked: each request's path and `Authorization` header.
pub(crate) type Asked = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>;

/// The token a [`token_registry`]'s realm hands out for [`USER`] and [`PASSWORD`].
pub(crate) const TOKEN: &str = "t0ken-for-pat";

/// A stand-in registry with the distribution spec's token flow, as GHCR or Docker Hub run
/// it: every `/v2/` call without `Bearer` [`TOKEN`] gets 401 and a `Bearer` challenge whose
/// realm is its own `/token` (at `http://<realm_host>:<its port>`), which hands the token
/// out only for basic credentials of [`USER`] with [`PASSWORD`]; with the token, `manifest`
/// for any manifest and `blob` for any blob.
pub(crate) fn token_registry(manifest: Vec<u8>, blob: Vec<u8>, realm_host: &str) -> (u16, Asked) {
    use base64::Engine as _;
    let realm_host = realm_host.to_string();
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let port = server.server_addr().to_ip().unwrap().port();
    let asked = Asked::default();
    let seen = asked.clone();
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"))
    );
    std::thread::spawn(move || {
        for request in server.incoming_requests() {
            let auth = request
                .headers()
                .iter()
                .find(|h| h.field.equiv("Authorization"))
                .map(|h| h.value.to_string());
            let url = request.url().to_string();
            seen.lock().unwrap().push((url.clone(), auth.clone()));
            let header = |k: &str, v: &str| tiny_http::Header::from_bytes(k, v).unwrap();
            let response = if url.starts_with("/token") {
                if auth.as_deref() == Some(basic.as_str()) {
                    tiny_http::Response::from_data(format!(r#"{{"token":"{TOKEN}"}}"#).into_bytes())
                } else {
                    tiny_http::Response::from_data(Vec::new()).with_status_code(401)
                }
            } else if auth.as_deref() != Some(&format!("Bearer {TOKEN}")) {
                let challenge = format!(
                    r#"Bearer realm="http://{realm_host}:{port}/token",service="stand-in",scope="repository:team/x:pull""#
                );
                tiny_http::Response::from_data(Vec::new())
                    .with_status_code(401)
                    .with_header(header("WWW-Authenticate", &challenge))
            } else if url.contains("/manifests/") {
                tiny_http::Response::from_data(manifest.clone())
            } else {
                tiny_http::Response::from_data(blob.clone())
            };
            let _ = request.respond(response);
        }
    });
    (port, asked)
}
