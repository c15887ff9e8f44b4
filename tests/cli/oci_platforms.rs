//! `zot ext publish --platform`: a Go extension published prepared for platforms under an
//! image index beside its source, installed where there is no `go` at all (the manifest
//! built for the machine, placed as published), and where the index has none for the
//! machine (the source, prepared here); the index kept across publishes from different
//! machines; what cannot be published for a platform refused.

use std::fs;
use std::path::PathBuf;

use serde_json::Value;

use crate::prepare::{extension, go_extension, have_go, write, zot};
use crate::support::Env;
use crate::support::registry::{LAYER_TYPE, Registry, digest_of, manifest_json, pack};

/// An OCI image index.
const INDEX_TYPE: &str = "application/vnd.oci.image.index.v1+json";

/// A Go extension that passes doctor: hello, ready, and it ends on shutdown.
const GO_HANDSHAKE: &str = r#"package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

func main() {
	fmt.Println(`{"type":"hello","name":"hello","version":"1.0.0"}`)
	fmt.Println(`{"type":"ready"}`)
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		if strings.Contains(lines.Text(), `"shutdown"`) {
			return
		}
	}
}
"#;

/// The platform this test runs on, in Go's names, and another one Go builds for.
fn platforms() -> (String, String) {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let other = if arch == "arm64" { "amd64" } else { "arm64" };
    (format!("linux/{arch}"), format!("linux/{other}"))
}

/// A registry, and the Go extension's source in `env` to publish to it.
struct World {
    env: Env,
    registry: Registry,
    src: PathBuf,
    here: String,
    other: String,
    dest: String,
}

fn world() -> World {
    let env = Env::new();
    let registry = Registry::start();
    let src = go_extension(&env, "hello", "1.19");
    write(&src.join("main.go"), GO_HANDSHAKE);
    let (here, other) = platforms();
    let dest = registry.oci("team/hello:1.0");
    World {
        env,
        registry,
        src,
        here,
        other,
        dest,
    }
}

fn publish(env: &Env, args: &[&str]) -> Value {
    let mut all = vec!["ext", "publish", "--json"];
    all.extend(args);
    serde_json::from_str(&zot(env, &all).ok().stdout).unwrap()
}

/// A folder with nothing in it to put on PATH: no `go`, no other tool.
fn empty_path(env: &Env) -> PathBuf {
    let dir = env.work.join("empty-path");
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn record(env: &Env) -> Value {
    let text = fs::read_to_string(env.home.join(".ext-store/sources/hello.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn tree_hash(env: &Env) -> Value {
    let info: Value =
        serde_json::from_str(&env.zot(["ext", "info", "--json", "hello"]).ok().stdout).unwrap();
    info["copies"][0]["tree_hash"].clone()
}

/// The tag names an index a generic client reads: the source manifest first, then one per
/// platform of `platforms`, each saying what preparing ran and made.
fn assert_index(registry: &Registry, done: &Value, platforms: &[&str]) {
    let raw = registry.inspect_raw("team/hello:1.0");
    assert_eq!(digest_of(&raw), done["digest"].as_str().unwrap());
    let index: Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(
        index["mediaType"],
        "application/vnd.oci.image.index.v1+json"
    );
    let manifests = index["manifests"].as_array().unwrap();
    assert_eq!(manifests.len(), platforms.len() + 1, "{index}");
    assert_eq!(manifests[0]["digest"], done["source_digest"]);
    assert!(manifests[0].get("platform").is_none());
    let named: Vec<String> = manifests[1..]
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["platform"]["os"].as_str().unwrap(),
                m["platform"]["architecture"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(named, platforms);
    let built_here = format!("team/hello@{}", manifests[1]["digest"].as_str().unwrap());
    let platform_manifest: Value =
        serde_json::from_slice(&registry.inspect_raw(&built_here)).unwrap();
    let prepared: Value = serde_json::from_str(
        platform_manifest["annotations"]["vnd.zot.extension.prepared"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(prepared["tool"], "go");
    assert_eq!(prepared["roots"], serde_json::json!(["hello"]));
}

#[test]
fn a_go_extension_built_for_this_platform_installs_and_passes_doctor_without_go() {
    if !have_go() {
        return;
    }
    let World {
        env,
        registry,
        src,
        here,
        other,
        dest,
    } = world();
    let both = format!("{here},{other}");
    let done = publish(&env, &[src.to_str().unwrap(), &dest, "--platform", &both]);
    let built: Vec<&str> = done["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["platform"].as_str().unwrap())
        .collect();
    assert_eq!(built, [here.as_str(), other.as_str()], "{done}");
    assert_ne!(done["digest"], done["source_digest"]);

    assert_index(&registry, &done, &[here.as_str(), other.as_str()]);

    // Installed where there is no go at all: the program as published, nothing run.
    let bare = Env::new();
    let path = empty_path(&bare);
    let plan = bare
        .zot(["ext", "install", "--dry-run", "--json", &dest])
        .env("PATH", &path)
        .ok();
    let plan: Value = serde_json::from_str(&plan.stdout).unwrap();
    assert_eq!(plan["platform"], here.as_str(), "{plan}");
    assert_eq!(plan["digest"], done["digest"], "{plan}");
    bare.zot(["ext", "install", &dest]).env("PATH", &path).ok();
    let dir = bare.global_root().join("hello");
    assert!(dir.join("hello").is_file());
    let rec = record(&bare);
    assert_eq!(rec["platform"], here.as_str());
    assert_eq!(rec["digest"], done["digest"]);
    assert_eq!(rec["prepared"]["tool"], "go");
    assert!(!bare.home.join("logs/prepare-hello.log").exists());
    bare.zot(["ext", "doctor", "hello"]).env("PATH", &path).ok();
    bare.zot(["ext", "verify", "hello"]).env("PATH", &path).ok();
    let info = bare.zot(["ext", "info", "hello"]).ok().stdout;
    assert!(
        info.contains(&format!(
            "{here}: the manifest built for it, placed as published"
        )),
        "{info}"
    );
    assert!(info.contains("run by the publisher for"), "{info}");

    // The same tree hash as the folder built here: a lock holds on every platform.
    let local = Env::new();
    zot(&local, &["ext", "install", src.to_str().unwrap()]).ok();
    assert_eq!(tree_hash(&bare), tree_hash(&local));

    // A project locks the index's digest; a machine with no go syncs it, frozen.
    zot(&env, &["ext", "add", &dest]).ok();
    let lock = fs::read_to_string(env.project.join(".zot/extensions.lock")).unwrap();
    assert!(lock.contains(done["digest"].as_str().unwrap()), "{lock}");
    let ci = Env::new();
    fs::create_dir_all(ci.project.join(".zot")).unwrap();
    for file in ["extensions.json", "extensions.lock"] {
        fs::copy(
            env.project.join(".zot").join(file),
            ci.project.join(".zot").join(file),
        )
        .unwrap();
    }
    let ci_path = empty_path(&ci);
    ci.zot(["ext", "sync", "--frozen"])
        .env("PATH", &ci_path)
        .ok();
    assert!(ci.project.join(".zot/extensions/hello/hello").is_file());

    // The manifest built for this machine is in the fetch cache with what its manifest
    // said: with the registry gone, the index's digest installs from there, as published.
    drop(registry);
    let pinned = dest.replace(":1.0", &format!("@{}", done["digest"].as_str().unwrap()));
    bare.zot(["ext", "install", "--force", &pinned])
        .env("PATH", &path)
        .ok();
    let again = record(&bare);
    assert_eq!(again["platform"], here.as_str(), "{again}");
    assert_eq!(again["prepared"], rec["prepared"], "{again}");
    assert!(!bare.home.join("logs/prepare-hello.log").exists());
    assert_eq!(tree_hash(&bare), tree_hash(&local));
    bare.zot(["ext", "doctor", "hello"]).env("PATH", &path).ok();
}

#[test]
fn an_index_without_this_platform_gives_the_source_prepared_here_and_keeps_other_platforms() {
    if !have_go() {
        return;
    }
    let World {
        env,
        registry,
        src,
        here,
        other,
        dest,
    } = world();
    let first = publish(&env, &[src.to_str().unwrap(), &dest, "--platform", &other]);
    assert_eq!(first["kept_platforms"], serde_json::json!([]));

    // No manifest for this machine: the source, and the build needs go here.
    let bare = Env::new();
    let path = empty_path(&bare);
    let refused = bare
        .zot(["ext", "install", &dest])
        .env("PATH", &path)
        .fails(1);
    assert!(refused.stderr.contains("go"), "{}", refused.stderr);
    assert!(!bare.global_root().join("hello").exists());
    zot(&bare, &["ext", "install", &dest]).ok();
    let rec = record(&bare);
    assert!(rec.get("platform").is_none(), "{rec}");
    assert!(bare.home.join("logs/prepare-hello.log").exists());
    let info = bare.zot(["ext", "info", "hello"]).ok().stdout;
    assert!(
        info.contains("none: the source manifest, prepared here"),
        "{info}"
    );

    // This machine publishes its own: the other platform's manifest is kept.
    let second = publish(&env, &[src.to_str().unwrap(), &dest, "--platform", &here]);
    assert_eq!(second["kept_platforms"], serde_json::json!([other.clone()]));
    let index: Value = serde_json::from_slice(&registry.inspect_raw("team/hello:1.0")).unwrap();
    assert_eq!(index["manifests"].as_array().unwrap().len(), 3, "{index}");

    // The same source: update changes no file, and the copy stays the one built here.
    let done = bare.zot(["ext", "update", "hello"]).env("PATH", &path).ok();
    assert!(done.stdout.contains("changes no file of it"), "{done:?}");
    let rec = record(&bare);
    assert_eq!(rec["digest"], second["digest"]);
    assert!(rec.get("platform").is_none(), "{rec}");
    assert!(rec["prepared"]["ran_at"].is_string(), "{rec}");

    // A new source replaces the index: nothing of the old one is kept.
    write(
        &src.join("extension.json"),
        r#"{"name": "hello", "version": "1.1.0", "exec": "./hello"}"#,
    );
    let third = publish(&env, &[src.to_str().unwrap(), &dest, "--platform", &here]);
    assert_eq!(third["kept_platforms"], serde_json::json!([]));
    let index: Value = serde_json::from_slice(&registry.inspect_raw("team/hello:1.0")).unwrap();
    assert_eq!(index["manifests"].as_array().unwrap().len(), 2, "{index}");

    // update follows the tag to the new index, and takes the manifest built for here.
    bare.zot(["ext", "update", "hello"]).env("PATH", &path).ok();
    assert_eq!(record(&bare)["platform"], here.as_str());
}

#[test]
fn what_cannot_be_published_for_a_platform_is_refused() {
    let env = Env::new();
    let registry = Registry::start();
    let dest = registry.oci("team/x:1");
    // Nothing to prepare: a script runs as it is everywhere.
    let script = extension(&env, "script", "script", "./run.sh");
    crate::support::write_executable(&script.join("run.sh"), "#!/bin/sh\n");
    let refused = env
        .zot([
            "ext",
            "publish",
            script.to_str().unwrap(),
            &dest,
            "--platform",
            "linux/amd64",
        ])
        .fails(1);
    assert!(
        refused.stderr.contains("publish without --platform"),
        "{}",
        refused.stderr
    );
    let bad = env
        .zot([
            "ext",
            "publish",
            script.to_str().unwrap(),
            &dest,
            "--platform",
            "amd64",
        ])
        .fails(2);
    assert!(bad.stderr.contains("os/architecture"), "{}", bad.stderr);
}

#[test]
fn a_platform_manifest_whose_annotation_names_paths_outside_is_refused_with_nothing_placed() {
    let env = Env::new();
    let registry = Registry::start();
    let src = extension(&env, "x", "x", "./run.sh");
    crate::support::write_executable(&src.join("run.sh"), "#!/bin/sh\n");
    let config = fs::read(src.join("extension.json")).unwrap();
    let config_digest = registry.push_blob("team/x", &config);
    let layer = pack(&src);
    let layer_digest = registry.push_blob("team/x", &layer);
    let (here, _) = platforms();
    let (os, arch) = here.split_once('/').unwrap();
    for (roots, said) in [
        (r#"["../../etc"]"#, "not a path inside the extension"),
        (r#"["/etc"]"#, "not a path inside the extension"),
        (r#"["missing"]"#, "is not in the tree"),
    ] {
        let built = format!(r#"{{"step":"go build","tool":"go","outputs":[],"roots":{roots}}}"#);
        let mut manifest: Value = serde_json::from_str(&manifest_json(
            &config_digest,
            config.len() as u64,
            LAYER_TYPE,
            &layer_digest,
            layer.len() as u64,
        ))
        .unwrap();
        manifest["annotations"] = serde_json::json!({ "vnd.zot.extension.prepared": built });
        let manifest = manifest.to_string().into_bytes();
        let digest = registry.push_manifest("team/x", &digest_of(&manifest), &manifest);
        let index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": INDEX_TYPE,
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": digest,
                "size": manifest.len(),
                "platform": {"os": os, "architecture": arch},
            }],
        });
        registry.push_manifest_as("team/x", "1", index.to_string().as_bytes(), INDEX_TYPE);
        let refused = env
            .zot(["ext", "install", &registry.oci("team/x:1")])
            .fails(1);
        assert!(refused.stderr.contains(said), "{roots}: {}", refused.stderr);
        assert!(!env.global_root().join("x").exists(), "{roots}: placed");
    }
}
