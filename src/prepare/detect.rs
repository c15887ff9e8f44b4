//! Which steps a staged extension folder needs, from its files alone:
//!
//! | found | steps |
//! |---|---|
//! | `go.mod` (the folder's, or its module's above it in the source), `exec` names a missing file | `go list -deps` (fetches), then `go build -trimpath -buildvcs=false -o <exec> <main package>` sealed ([`super::go`]) |
//! | `go.mod`, `exec` is `go` with `run` | `go list -deps` into the user's module cache (zot builds it at each start) |
//! | `package.json` with `dependencies` and a lock | the lock's tool, frozen and script-free; the scripts sealed with `--allow-scripts` ([`super::node`]) |
//! | `requirements.txt`, or `pyproject.toml` + `uv.lock` | a venv at `.venv`, wheels only ([`super::python`]) |
//! | `Cargo.toml`, `exec` names a missing file | `cargo fetch`, then `cargo build --release --locked` sealed, the binary copied to `exec` ([`super::cargo`]) |
//!
//! A missing tool, a Go older than `go.mod` asks for, or dependencies without a lock file
//! are errors here, before anything runs.

use std::path::Path;

use anyhow::Result;

use super::config::SetAside;
use super::files::is_file;
use super::options::Options;
use super::step::Plan;
use crate::catalog::manifest::Manifest;
use crate::source::staged::Origin;

/// The steps `tree` needs, or `None`; `origin` is where it came from (a Go module may be
/// above it there).
pub(crate) fn detect(
    tree: &Path,
    manifest: &Manifest,
    options: &Options,
    origin: Option<&Origin>,
    aside: &SetAside,
) -> Result<Option<Plan>> {
    if let Some(plan) = super::go::plan(tree, manifest, options, origin)? {
        return Ok(Some(plan));
    }
    if let Some(plan) = super::node::plan(tree, options, aside)? {
        return Ok(Some(plan));
    }
    if let Some(plan) = super::python::plan(tree, manifest, options)? {
        return Ok(Some(plan));
    }
    if is_file(&tree.join("Cargo.toml")) {
        return super::cargo::plan(tree, manifest, options);
    }
    Ok(None)
}
