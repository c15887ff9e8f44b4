//! Registry credentials where Docker keeps them, read as oras, helm and skopeo read them:
//! `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json` (at most 1 MiB, a regular
//! file): `credHelpers[<registry>]`, else `credsStore`, names a `docker-credential-<name>`
//! program asked `get` with the registry on its stdin (in a process group of its own, killed
//! after [`HELPER_TIMEOUT`]); else `auths[<registry>]` holds `auth`, base64 of
//! `user:password`. Keys are matched with or without a scheme and path
//! (`https://registry.example/v1/`). Used in the helper only; a secret goes nowhere but the
//! `Authorization` header of a request to that registry.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Result, anyhow};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use crate::fsx::bounded;

/// How long a credential helper may take to answer.
const HELPER_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest config.json read.
const MAX_CONFIG: u64 = 1 << 20;

/// A user name and its password or token.
#[derive(Clone)]
pub(crate) struct Login {
    pub user: String,
    pub secret: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Login {{ user: {:?}, secret: *** }}", self.user)
    }
}

impl Login {
    /// The `Authorization` header's value for basic authentication.
    pub(crate) fn basic(&self) -> String {
        format!(
            "Basic {}",
            STANDARD.encode(format!("{}:{}", self.user, self.secret))
        )
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Config {
    #[serde(default)]
    auths: std::collections::BTreeMap<String, Entry>,
    #[serde(default)]
    cred_helpers: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    creds_store: Option<String>,
}

/// One entry of `auths`: `auth` (base64 of `user:password`), or the two apart.
#[derive(Deserialize, Default)]
struct Entry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

/// The credentials Docker's configuration holds for `registry` (`host[:port]`), if any.
pub(crate) fn for_registry(registry: &str) -> Result<Option<Login>> {
    let Some(path) = config_path() else {
        return Ok(None);
    };
    let bytes = match bounded::read(&path, MAX_CONFIG) {
        Ok(bytes) => bytes,
        Err(bounded::ReadError::Missing) => return Ok(None),
        Err(e) => return Err(anyhow!("cannot read {}: {e}", path.display())),
    };
    let config: Config = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow!("{} is not Docker's config.json: {e}", path.display()))?;
    let helper = config
        .cred_helpers
        .iter()
        .find(|(key, _)| names(key, registry))
        .map(|(_, helper)| helper.clone())
        .or(config.creds_store.clone());
    if let Some(helper) = helper.filter(|h| !h.is_empty())
        && let Some(login) = from_helper(&helper, registry)?
    {
        return Ok(Some(login));
    }
    let Some(auth) = config
        .auths
        .iter()
        .find(|(key, _)| names(key, registry))
        .map(|(_, a)| a)
    else {
        return Ok(None);
    };
    if let (Some(user), Some(secret)) = (&auth.username, &auth.password) {
        return Ok(Some(Login {
            user: user.clone(),
            secret: secret.clone(),
        }));
    }
    let Some(encoded) = auth.auth.as_deref().filter(|a| !a.is_empty()) else {
        return Ok(None);
    };
    let decoded = STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| {
            anyhow!(
                "{}: the auth of {registry} is not base64 of user:password",
                path.display()
            )
        })?;
    let (user, secret) = decoded.split_once(':').ok_or_else(|| {
        anyhow!(
            "{}: the auth of {registry} is not base64 of user:password",
            path.display()
        )
    })?;
    Ok(Some(Login {
        user: user.to_string(),
        secret: secret.to_string(),
    }))
}

/// What a `docker-credential-*` helper answers to `get`.
#[derive(Deserialize)]
struct HelperAnswer {
    #[serde(rename = "Username")]
    user: String,
    #[serde(rename = "Secret")]
    secret: String,
}

fn config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(PathBuf::from(home).join(".docker/config.json"))
}

/// Whether the config key `key` names `registry`: the same host and port, with or without
/// a scheme and a path after it.
fn names(key: &str, registry: &str) -> bool {
    let bare = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = bare.split('/').next().unwrap_or(bare);
    host.eq_ignore_ascii_case(registry)
}

/// What `docker-credential-<helper> get` answers for `registry`; `None` when it has none.
fn from_helper(helper: &str, registry: &str) -> Result<Option<Login>> {
    if !helper
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    {
        return Err(anyhow!(
            "Docker's config names the credential helper {:?}, which is not a plain name; fix credsStore or credHelpers",
            crate::output::printable(helper)
        ));
    }
    let program = format!("docker-credential-{helper}");
    let mut command = Command::new(&program);
    command.arg("get").current_dir("/").stderr(Stdio::null());
    let what = format!("the credential helper {program}");
    let Some(text) =
        crate::source::credential_process::ask(command, registry, HELPER_TIMEOUT, &what)?
    else {
        return Ok(None);
    };
    let answer: HelperAnswer = serde_json::from_str(&text)
        .map_err(|_| anyhow!("{what} answered something other than its JSON"))?;
    Ok(Some(Login {
        user: answer.user,
        secret: answer.secret,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_a_registry_with_or_without_scheme_and_path() {
        assert!(names("ghcr.io", "ghcr.io"));
        assert!(names("https://ghcr.io/v1/", "ghcr.io"));
        assert!(names("http://127.0.0.1:5000", "127.0.0.1:5000"));
        assert!(!names("ghcr.io.evil", "ghcr.io"));
        assert!(!names("127.0.0.1:5000", "127.0.0.1"));
    }

    #[test]
    fn a_login_never_shows_its_secret() {
        let login = Login {
            user: "pat".into(),
            secret: "sesame".into(),
        };
        assert!(!format!("{login:?}").contains("sesame"));
        assert_eq!(login.basic(), "Basic cGF0OnNlc2FtZQ==");
    }
}
