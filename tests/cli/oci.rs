//! `zot ext install oci://…` against a real distribution registry on 127.0.0.1 (Debian's
//! `docker-registry`), with artifacts pushed by the spec's plain HTTP calls; and against a
//! registry that lies (a stand-in on `tiny_http`) for what a real one would not serve.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::support::Env;
use crate::support::registry::{
    EVIL, LAYER_TYPE, Registry, digest_of, hostile_layers, lying_registry, manifest_json, pack,
};

fn hello(env: &Env, version: &str) -> std::path::PathBuf {
    env.source_with_manifest(
        "hello",
        &format!(r#"{{"name": "hello", "version": "{version}", "exec": "./run.sh"}}"#),
    )
}

fn record(env: &Env, name: &str) -> Value {
    let text =
        fs::read_to_string(env.home.join(format!(".ext-store/sources/{name}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn version(dir: &Path) -> Value {
    let text = fs::read_to_string(dir.join("extension.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["version"].clone()
}

fn nothing_placed(env: &Env) {
    let root = env.global_root();
    let names: Vec<_> = fs::read_dir(&root)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(names.is_empty(), "placed: {names:?}");
}

#[test]
fn an_artifact_pushed_with_plain_http_calls_installs_follows_its_tag_and_matches_the_folder() {
    let env = Env::new();
    let registry = Registry::start();
    let dir = hello(&env, "1.0.0");
    let digest = registry.push_folder("team/hello", "1.0", &dir);

    let done = env
        .zot(["ext", "install", &registry.oci("team/hello:1.0")])
        .ok();
    assert!(done.stdout.contains("installed hello 1.0.0"), "{done:?}");
    let r = record(&env, "hello");
    assert_eq!(r["kind"], "oci");
    assert_eq!(r["source"], registry.oci("team/hello"));
    assert_eq!(r["ref"], "1.0");
    assert_eq!(r["digest"], digest.as_str());
    let info = |env: &Env| {
        let doc: Value =
            serde_json::from_str(&env.zot(["ext", "info", "--json", "hello"]).ok().stdout).unwrap();
        doc["copies"][0].clone()
    };
    let from_registry = info(&env);
    assert_eq!(from_registry["record"]["digest"], digest.as_str());
    assert_eq!(from_registry["updates"], "tracking");

    // The same folder installed from disk has the same file list and tree hash.
    let other = Env::new();
    other.zot(["ext", "install", dir.to_str().unwrap()]).ok();
    let from_disk = info(&other);
    assert_eq!(from_registry["tree_hash"], from_disk["tree_hash"]);
    assert!(
        from_registry["tree_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );

    let done = env.zot(["ext", "update", "hello"]).ok();
    assert!(done.stdout.contains("up to date"), "{done:?}");
    let dir = hello(&env, "1.1.0");
    let moved = registry.push_folder("team/hello", "1.0", &dir);
    assert_ne!(moved, digest);
    let done = env.zot(["ext", "update", "hello"]).ok();
    assert!(done.stdout.contains("1.0.0 -> 1.1.0"), "{done:?}");
    assert_eq!(record(&env, "hello")["digest"], moved.as_str());
    assert_eq!(version(&env.global_root().join("hello")), "1.1.0");
}

#[test]
fn a_digest_pins_the_install_and_one_the_registry_lacks_places_nothing() {
    let env = Env::new();
    let registry = Registry::start();
    let digest = registry.push_folder("hello", "1.0", &hello(&env, "1.0.0"));
    let missing = format!("sha256:{}", "0".repeat(64));

    let done = env
        .zot(["ext", "install", &registry.oci(&format!("hello@{missing}"))])
        .fails(1);
    assert!(
        done.stderr.contains("not found (404)") && done.stderr.contains("MANIFEST_UNKNOWN"),
        "{done:?}"
    );
    nothing_placed(&env);
    let done = env
        .zot(["ext", "install", &registry.oci("nothing:1.0")])
        .fails(1);
    assert!(
        done.stderr.contains(&registry.oci("nothing:1.0")),
        "{done:?}"
    );

    env.zot(["ext", "install", &registry.oci(&format!("hello@{digest}"))])
        .ok();
    assert_eq!(record(&env, "hello")["digest"], digest.as_str());
    assert!(record(&env, "hello")["ref"].is_null());
    registry.push_folder("hello", "1.0", &hello(&env, "2.0.0"));
    let done = env.zot(["ext", "update", "hello"]).ok();
    assert!(
        done.stdout
            .contains(&format!("pinned to the digest {digest}")),
        "{done:?}"
    );
    assert_eq!(version(&env.global_root().join("hello")), "1.0.0");
}

#[test]
fn references_outside_the_specs_grammar_are_usage_errors_before_any_connection() {
    let env = Env::new();
    for bad in [
        "oci://127.0.0.1:1/Upper:1.0",
        "oci://127.0.0.1:1/a/../b",
        "oci://127.0.0.1:1/a:bad tag",
        "oci://127.0.0.1:1/a@sha256:abc",
        "oci://127.0.0.1:1/a%0A:1",
    ] {
        let done = env.zot(["ext", "install", bad]).fails(2);
        assert!(!done.stderr.contains("cannot reach"), "{done:?}");
    }
    nothing_placed(&env);
}

/// Each hostile layer is refused with its reason, and nothing is placed.
#[test]
fn hostile_layers_are_refused_with_nothing_placed() {
    let env = Env::new();
    let registry = Registry::start();
    for (repo, why, bytes) in hostile_layers() {
        registry.push_extension(repo, "1", EVIL, &bytes, LAYER_TYPE);
        let done = env
            .zot(["ext", "install", &registry.oci(&format!("{repo}:1"))])
            .fails(1);
        assert!(done.stderr.contains(why), "{repo}: {done:?}");
        nothing_placed(&env);
        assert!(!env.work.parent().unwrap().join("evil").exists());
        assert!(!Path::new("/tmp/evil").exists());
    }
}

/// A layer of another media type (a container image's) is not fetched at all.
#[test]
fn a_layer_of_another_media_type_is_refused() {
    let env = Env::new();
    let registry = Registry::start();
    let dir = hello(&env, "1.0.0");
    registry.push_extension(
        "image",
        "1",
        EVIL,
        &pack(&dir),
        "application/vnd.oci.image.layer.v1.tar+gzip",
    );
    let done = env
        .zot(["ext", "install", &registry.oci("image:1")])
        .fails(1);
    assert!(
        done.stderr
            .contains("media type application/vnd.oci.image.layer.v1.tar+gzip"),
        "{done:?}"
    );
    nothing_placed(&env);
}

#[test]
fn a_lying_registry_is_caught_by_the_digests_and_sizes() {
    let env = Env::new();
    let dir = hello(&env, "1.0.0");
    let config = fs::read(dir.join("extension.json")).unwrap();
    let packed = pack(&dir);
    let good = |size: u64, digest: &str| {
        manifest_json(
            &digest_of(&config),
            config.len() as u64,
            LAYER_TYPE,
            digest,
            size,
        )
        .into_bytes()
    };
    let cases: Vec<(&str, Vec<u8>, Vec<u8>, String)> = vec![
        // The manifest does not hash to the digest asked for.
        (
            "has the digest",
            good(packed.len() as u64, &digest_of(&packed)),
            packed.clone(),
            format!("x@sha256:{}", "1".repeat(64)),
        ),
        // The blob is shorter than its descriptor says.
        (
            "ended after",
            good(packed.len() as u64 + 10, &digest_of(&packed)),
            packed.clone(),
            "x:1".into(),
        ),
        // The blob is longer than its descriptor says.
        (
            "is longer than",
            good(packed.len() as u64 - 10, &digest_of(&packed)),
            packed.clone(),
            "x:1".into(),
        ),
        // The blob is not the one the manifest names.
        (
            "not the one its manifest names",
            good(packed.len() as u64, &digest_of(b"other")),
            packed.clone(),
            "x:1".into(),
        ),
        // A layer that claims 10 GB is refused before it is asked for.
        (
            "claims",
            good(10_000_000_000, &digest_of(&packed)),
            packed.clone(),
            "x:1".into(),
        ),
    ];
    for (why, manifest, blob, reference) in cases {
        let port = lying_registry(manifest, blob);
        let done = env
            .zot([
                "ext",
                "install",
                &format!("oci://127.0.0.1:{port}/{reference}"),
            ])
            .fails(1);
        assert!(done.stderr.contains(why), "{why}: {done:?}");
        nothing_placed(&env);
    }
}

#[test]
fn the_lock_pins_the_digest_and_sync_installs_it_after_the_tag_moved() {
    let env = Env::new();
    let registry = Registry::start();
    let first = registry.push_folder("hello", "1.0", &hello(&env, "1.0.0"));
    let source = registry.oci("hello:1.0");
    env.zot(["ext", "add", &source]).ok();
    let lock_path = env.project.join(".zot/extensions.lock");
    let lock: Value = serde_json::from_str(&fs::read_to_string(&lock_path).unwrap()).unwrap();
    assert_eq!(lock["extensions"]["hello"]["digest"], first.as_str());

    // The tag moves on; a fresh checkout of the project syncs what the lock pins.
    registry.push_folder("hello", "1.0", &hello(&env, "2.0.0"));
    fs::remove_dir_all(env.project.join(".zot/extensions")).unwrap();
    let done = env.zot(["ext", "sync", "--frozen", "--json"]).ok();
    let doc: Value = serde_json::from_str(&done.stdout).unwrap();
    assert_eq!(doc["extensions"][0]["digest"], first.as_str(), "{done:?}");
    let installed = env.project.join(".zot/extensions/hello");
    assert_eq!(version(&installed), "1.0.0");

    // A lock without the digest is refused by --frozen before anything is fetched.
    let text = fs::read_to_string(&lock_path).unwrap();
    let line = format!("      \"digest\": \"{first}\",\n");
    assert!(text.contains(&line), "{text}");
    fs::write(&lock_path, text.replace(&line, "")).unwrap();
    let done = env.zot(["ext", "sync", "--frozen"]).fails(1);
    assert!(
        done.stderr
            .contains("the lock has no digest for a registry source"),
        "{done:?}"
    );
}

#[test]
fn publish_then_install_round_trips_with_one_digest_that_a_generic_client_reads() {
    let env = Env::new();
    let registry = Registry::start();
    let dir = hello(&env, "1.0.0");
    fs::create_dir_all(dir.join(".git")).unwrap();
    fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let dest = registry.oci("team/hello:1.0");
    let publish = |args: &[&str]| {
        let mut all = vec!["ext", "publish", "--json"];
        all.extend(args);
        let done = env.zot(all).ok();
        serde_json::from_str::<Value>(&done.stdout).unwrap()
    };
    let first = publish(&[dir.to_str().unwrap(), &dest]);
    let digest = first["digest"].as_str().unwrap().to_string();
    assert!(digest.starts_with("sha256:"), "{first}");
    // The same folder again: the same digest (no clock, no owners, sorted entries).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(
        publish(&[dir.to_str().unwrap(), &dest])["digest"],
        digest.as_str()
    );

    // A generic client reads it: skopeo's raw manifest hashes to the digest published.
    let raw = registry.inspect_raw("team/hello:1.0");
    assert_eq!(digest_of(&raw), digest);
    let manifest: Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(manifest["artifactType"], "application/vnd.zot.extension.v1");
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.version"],
        "1.0.0"
    );

    // Installed, it is the folder as installed from disk: same tree hash, no .git.
    env.zot(["ext", "install", &dest]).ok();
    let installed = env.global_root().join("hello");
    assert!(!installed.join(".git").exists());
    let other = Env::new();
    other.zot(["ext", "install", dir.to_str().unwrap()]).ok();
    let tree = |env: &Env| {
        let doc: Value =
            serde_json::from_str(&env.zot(["ext", "info", "--json", "hello"]).ok().stdout).unwrap();
        doc["copies"][0]["tree_hash"].clone()
    };
    assert_eq!(tree(&env), tree(&other));

    // The installed copy publishes to the same digest, its runtime files left out.
    fs::write(installed.join("state.json"), "{}").unwrap();
    let again = publish(&["hello", &registry.oci("team/hello:again")]);
    assert_eq!(again["digest"], digest.as_str());
}

#[test]
fn publish_wants_a_tag_and_refuses_what_install_refuses() {
    let env = Env::new();
    let dir = hello(&env, "1.0.0");
    let folder = dir.to_str().unwrap();
    for bad in [
        "https://ghcr.io/me/x",
        "oci://127.0.0.1:1/x",
        &format!("oci://127.0.0.1:1/x@sha256:{}", "0".repeat(64)),
    ] {
        env.zot(["ext", "publish", folder, bad]).fails(2);
    }
    let broken = env.source_with_manifest("broken", r#"{"name": "broken"}"#);
    let done = env
        .zot([
            "ext",
            "publish",
            broken.to_str().unwrap(),
            "oci://127.0.0.1:1/x:1",
        ])
        .fails(1);
    assert!(done.stderr.contains("exec"), "{done:?}");
}

/// Docker's `config.json` holding `auths` for `registry` (`user:password`), in a folder of
/// its own; its path for `DOCKER_CONFIG`.
fn docker_config(env: &Env, registry: &str, user: &str, password: &str) -> std::path::PathBuf {
    use base64::Engine as _;
    let dir = env.work.join("docker");
    fs::create_dir_all(&dir).unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    fs::write(
        dir.join("config.json"),
        format!(r#"{{"auths": {{"http://{registry}": {{"auth": "{auth}"}}}}}}"#),
    )
    .unwrap();
    dir
}

#[test]
fn credentials_come_from_dockers_config_and_never_show() {
    use crate::support::registry::{PASSWORD, USER};
    let env = Env::new();
    let registry = Registry::with_htpasswd();
    let dir = hello(&env, "1.0.0");
    let dest = registry.oci("private/hello:1.0");

    // Without credentials: refused, saying where they are read from.
    let done = env
        .zot(["ext", "publish", dir.to_str().unwrap(), &dest])
        .fails(1);
    assert!(done.stderr.contains("docker login"), "{done:?}");

    let config = docker_config(&env, &registry.host(), USER, PASSWORD);
    let mut run = env.zot(["ext", "publish", dir.to_str().unwrap(), &dest]);
    run.cmd.env("DOCKER_CONFIG", &config);
    let done = run.ok();
    assert!(done.stdout.contains("published hello 1.0.0"), "{done:?}");
    let mut run = env.zot(["ext", "install", "--json", &dest]);
    run.cmd.env("DOCKER_CONFIG", &config);
    let done = run.ok();
    for text in [&done.stdout, &done.stderr] {
        assert!(!text.contains(PASSWORD), "{done:?}");
    }
    let record = record(&env, "hello").to_string();
    assert!(
        !record.contains(PASSWORD) && !record.contains("c2VzYW1l"),
        "{record}"
    );

    // Wrong credentials: refused with the registry's 401, the password not shown.
    let wrong = docker_config(&env, &registry.host(), USER, "not-it");
    let mut run = env.zot(["ext", "install", "--force", &dest]);
    run.cmd.env("DOCKER_CONFIG", &wrong);
    let done = run.fails(1);
    assert!(done.stderr.contains("401"), "{done:?}");
    assert!(!done.stderr.contains("not-it"), "{done:?}");
}

#[test]
fn a_registry_speaking_only_https_is_checked_against_ssl_cert_file() {
    let env = Env::new();
    let registry = Registry::with_tls();
    let digest = registry.push_folder("secure/hello", "1.0", &hello(&env, "1.0.0"));
    let dest = registry.oci("secure/hello:1.0");
    let ca = crate::support::git_servers::tls_dir().join("ca.pem");

    // The test CA is not among the system's roots: refused, nothing placed.
    let done = env.zot(["ext", "install", &dest]).fails(1);
    assert!(
        done.stderr.contains("cannot reach the registry"),
        "{done:?}"
    );
    nothing_placed(&env);

    let mut run = env.zot(["ext", "install", &dest]);
    run.cmd.env("SSL_CERT_FILE", &ca);
    run.ok();
    assert_eq!(record(&env, "hello")["digest"], digest.as_str());
}

/// docs/provisioning.md's mirror: a project's extensions published from their installed
/// copies into the team's registry, the project file pointed at it, and a fresh checkout
/// synced from the registry alone (the original source gone).
#[test]
fn a_project_mirrored_into_a_registry_syncs_from_it_alone() {
    let env = Env::new();
    let registry = Registry::start();
    let dir = hello(&env, "1.0.0");
    env.zot(["ext", "add", dir.to_str().unwrap()]).ok();
    let list: Value =
        serde_json::from_str(&env.zot(["ext", "list", "-p", "--json"]).ok().stdout).unwrap();
    for e in list["extensions"].as_array().unwrap() {
        let (name, version) = (e["name"].as_str().unwrap(), e["version"].as_str().unwrap());
        let mirror = registry.oci(&format!("zot/{name}:{version}"));
        env.zot(["ext", "publish", "-p", name, &mirror]).ok();
        env.zot(["ext", "add", "--force", &mirror]).ok();
    }
    let file = fs::read_to_string(env.project.join(".zot/extensions.json")).unwrap();
    assert!(file.contains(&registry.oci("zot/hello:1.0.0")), "{file}");

    // A fresh checkout, the original folder gone: everything comes from the registry.
    fs::remove_dir_all(&dir).unwrap();
    fs::remove_dir_all(env.project.join(".zot/extensions")).unwrap();
    let done = env.zot(["ext", "sync", "--frozen"]).ok();
    assert!(done.stdout.contains("hello"), "{done:?}");
    assert_eq!(version(&env.project.join(".zot/extensions/hello")), "1.0.0");
}

/// The fetch cache keeps what a registry served under its manifest digest, for that
/// repository only: a digest installed again needs no registry, another repository naming
/// the same digest does.
#[test]
fn the_fetch_cache_serves_a_digest_to_its_repository_without_the_registry() {
    let env = Env::new();
    let registry = Registry::start();
    let digest = registry.push_folder("team/hello", "1.0", &hello(&env, "1.0.0"));
    env.zot(["ext", "install", &registry.oci("team/hello:1.0")])
        .ok();
    let pinned = registry.oci(&format!("team/hello@{digest}"));
    let elsewhere = registry.oci(&format!("other/hello@{digest}"));
    drop(registry);

    let done = env.zot(["ext", "install", "--project", &pinned]).ok();
    assert!(
        done.stdout.contains("installed hello 1.0.0 (project)"),
        "{done:?}"
    );
    let done = env
        .zot(["ext", "install", "--project", "--force", &elsewhere])
        .fails(1);
    assert!(
        done.stderr.contains("cannot reach the registry"),
        "{done:?}"
    );

    // The cache keeps the compressed layer, not a second copy of the tree; one changed on
    // disk fails its digest when served: not installed from, deleted, fetched again.
    let hex = digest.strip_prefix("sha256:").unwrap();
    let kept = env.home.join(format!(".ext-store/cache/{hex}.layer"));
    assert!(kept.is_file() && !env.home.join(format!(".ext-store/cache/{hex}")).exists());
    let mut bytes = fs::read(&kept).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&kept, bytes).unwrap();
    let done = env
        .zot(["ext", "install", "--project", "--force", &pinned])
        .fails(1);
    assert!(
        done.stderr.contains("cannot reach the registry"),
        "{done:?}"
    );
    assert!(!kept.exists());
}

#[test]
fn credential_helpers_named_in_dockers_config_are_asked() {
    use crate::support::registry::{PASSWORD, USER};
    use crate::support::write_executable;
    let env = Env::new();
    let registry = Registry::with_htpasswd();
    let dir = hello(&env, "1.0.0");
    let dest = registry.oci("private/hello:1.0");
    let bin = env.work.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let asked = env.work.join("asked");
    write_executable(
        &bin.join("docker-credential-standin"),
        &format!(
            "#!/bin/sh\nread -r server\necho \"$1 $server\" >> '{}'\n\
             printf '{{\"ServerURL\":\"%s\",\"Username\":\"{USER}\",\"Secret\":\"{PASSWORD}\"}}' \"$server\"\n",
            asked.display()
        ),
    );
    let config = env.work.join("docker");
    fs::create_dir_all(&config).unwrap();
    let with = |json: &str, args: &[&str]| {
        fs::write(config.join("config.json"), json).unwrap();
        let mut run = env.zot(args);
        run.cmd
            .env("DOCKER_CONFIG", &config)
            .env("PATH", env.path_with(&bin));
        run
    };
    let helper_for_it = format!(r#"{{"credHelpers": {{"{}": "standin"}}}}"#, registry.host());
    let done = with(
        &helper_for_it,
        &["ext", "publish", dir.to_str().unwrap(), &dest],
    )
    .ok();
    assert!(done.stdout.contains("published hello"), "{done:?}");
    let done = with(r#"{"credsStore": "standin"}"#, &["ext", "install", &dest]).ok();
    assert!(!done.stdout.contains(PASSWORD) && !done.stderr.contains(PASSWORD));
    let lines = fs::read_to_string(&asked).unwrap();
    let expected = format!("get {}\n", registry.host());
    assert!(lines.lines().count() >= 2, "{lines}");
    assert!(
        lines.lines().all(|l| format!("{l}\n") == expected),
        "{lines}"
    );
    // A helper for another registry is not asked: refused for want of credentials.
    let other = r#"{"credHelpers": {"registry.example": "standin"}}"#;
    let done = with(other, &["ext", "install", "--force", &dest]).fails(1);
    assert!(done.stderr.contains("docker login"), "{done:?}");
}

#[test]
fn a_token_realm_gets_the_credentials_and_the_registry_only_the_token() {
    use crate::support::registry::{PASSWORD, TOKEN, USER, token_registry};
    let env = Env::new();
    let dir = hello(&env, "1.0.0");
    let config = fs::read(dir.join("extension.json")).unwrap();
    let layer = pack(&dir);
    let manifest = manifest_json(
        &digest_of(&config),
        config.len() as u64,
        LAYER_TYPE,
        &digest_of(&layer),
        layer.len() as u64,
    );
    let (port, asked) = token_registry(manifest.into_bytes(), layer, "127.0.0.1");
    let host = format!("127.0.0.1:{port}");
    let dest = format!("oci://{host}/team/x:1");

    // No credentials: the realm refuses an anonymous token, and the error says so.
    let done = env.zot(["ext", "install", &dest]).fails(1);
    assert!(done.stderr.contains("401"), "{done:?}");
    nothing_placed(&env);

    asked.lock().unwrap().clear();
    let docker = docker_config(&env, &host, USER, PASSWORD);
    let mut run = env.zot(["ext", "install", &dest]);
    run.cmd.env("DOCKER_CONFIG", &docker);
    run.ok();
    assert!(env.global_root().join("hello/run.sh").is_file());
    let asked = asked.lock().unwrap().clone();
    let basic_to: Vec<&str> = asked
        .iter()
        .filter(|(_, auth)| auth.as_deref().is_some_and(|a| a.starts_with("Basic")))
        .map(|(url, _)| url.as_str())
        .collect();
    assert!(
        !basic_to.is_empty() && basic_to.iter().all(|u| u.starts_with("/token")),
        "{asked:?}"
    );
    assert!(
        asked.iter().any(|(url, auth)| url.contains("/blobs/")
            && auth.as_deref() == Some(&format!("Bearer {TOKEN}"))),
        "{asked:?}"
    );
}

#[test]
fn plain_http_off_the_loopback_only_for_a_registry_named_in_zot_ext_plain_http() {
    let env = Env::new();
    let registry = Registry::start();
    registry.push_folder("team/hello", "1.0", &hello(&env, "1.0.0"));
    // The registry as an IPv4-mapped IPv6 address: it reaches 127.0.0.1, but zot does not
    // take it for the loopback, as it would not take a host on the network.
    let far = format!("[::ffff:127.0.0.1]:{}", registry.port);
    let dest = format!("oci://{far}/team/hello:1.0");
    let done = env.zot(["ext", "install", &dest]).fails(1);
    assert!(done.stderr.contains("over HTTPS"), "{done:?}");
    assert!(
        done.stderr.contains(&format!("ZOT_EXT_PLAIN_HTTP={far}")),
        "{done:?}"
    );
    nothing_placed(&env);
    let mut run = env.zot(["ext", "install", &dest]);
    run.cmd
        .env("ZOT_EXT_PLAIN_HTTP", format!("registry.example, {far}"));
    run.ok();
    assert!(env.global_root().join("hello/run.sh").is_file());
}

#[test]
fn a_token_realm_in_plain_http_off_the_loopback_gets_no_credentials() {
    use crate::support::registry::{PASSWORD, USER, token_registry};
    let env = Env::new();
    let dir = hello(&env, "1.0.0");
    let layer = pack(&dir);
    let manifest = manifest_json(&digest_of(b"{}"), 2, LAYER_TYPE, &digest_of(&layer), 9);
    // A loopback registry whose realm is, as far as zot can tell, another host in plain
    // HTTP (an IPv4-mapped address: it is the stand-in itself, so a token would be handed
    // out if the credentials were sent).
    let (port, asked) = token_registry(manifest.into_bytes(), layer, "[::ffff:127.0.0.1]");
    let host = format!("127.0.0.1:{port}");
    let docker = docker_config(&env, &host, USER, PASSWORD);
    let mut run = env.zot(["ext", "install", &format!("oci://{host}/team/x:1")]);
    run.cmd.env("DOCKER_CONFIG", &docker);
    let done = run.fails(1);
    assert!(done.stderr.contains("not HTTPS; refused"), "{done:?}");
    let asked = asked.lock().unwrap().clone();
    assert!(
        asked
            .iter()
            .all(|(url, auth)| auth.is_none() && !url.starts_with("/token")),
        "{asked:?}"
    );
    nothing_placed(&env);
}

#[test]
fn a_folder_in_a_git_working_copy_publishes_its_commit_and_commit_time() {
    use crate::support::git_servers::git;
    let env = Env::new();
    let registry = Registry::start();
    let dir = hello(&env, "1.0.0");
    git(&dir, &["init", "-q"]);
    git(
        &dir,
        &[
            "remote",
            "add",
            "origin",
            "https://pat:s3cret@example.test/team/hello.git",
        ],
    );
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "one"]);
    let commit = git(&dir, &["rev-parse", "HEAD"]);
    let seconds: u64 = git(&dir, &["log", "-1", "--format=%ct"]).parse().unwrap();
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds);
    let committed = humantime::format_rfc3339_seconds(time).to_string();
    let annotations = |tag: &str, epoch: Option<&str>| {
        let dest = registry.oci(&format!("team/hello:{tag}"));
        let mut run = env.zot(["ext", "publish", dir.to_str().unwrap(), &dest]);
        if let Some(epoch) = epoch {
            run.cmd.env("SOURCE_DATE_EPOCH", epoch);
        }
        run.ok();
        let raw = registry.inspect_raw(&format!("team/hello:{tag}"));
        serde_json::from_slice::<Value>(&raw).unwrap()["annotations"].clone()
    };
    let notes = annotations("1", None);
    assert_eq!(notes["org.opencontainers.image.revision"], commit.as_str());
    assert_eq!(
        notes["org.opencontainers.image.created"],
        committed.as_str()
    );
    let source = notes["org.opencontainers.image.source"].as_str().unwrap();
    assert!(source.contains("example.test/team/hello"), "{source}");
    assert!(!source.contains("s3cret"), "{source}");
    // SOURCE_DATE_EPOCH wins over the commit time.
    let notes = annotations("2", Some("0"));
    assert_eq!(
        notes["org.opencontainers.image.created"],
        "1970-01-01T00:00:00Z"
    );
}
