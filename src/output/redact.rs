//! The one redaction function, [`redact`], through which every URL or source string passes
//! before it reaches the terminal, a record, `--json` or an error, and [`redact_text`], the
//! same rules applied to every URL-shaped word of a free-form message, and the query rule to
//! every `?name=value`/`&name=value` in any word (a server quotes a path with its query).
//!
//! Redaction rules: the user-info part of a `scheme://` URL becomes `***` (for ssh URLs the
//! user name is kept and only the password becomes `***`); the password of an scp-like
//! `user:password@host:path` becomes `***`; the value of a query parameter whose name
//! contains `token`, `key`, `secret`, `pass`, `pwd`, `sig`, `auth`, `credential` or `session`
//! (any case, percent-decoded; parameters separated by `&` or `;`) becomes `***`. The
//! user-info part runs to the last `@` before the first `/` after `://`, the way libgit2
//! reads it, so a password may hold `#`, `?`, `@` or `:`.

// Every index sliced at here is that of an ASCII delimiter found in the same string (`@`,
// `:`, `/`, `?`, `#`, `&`, `;`, `=`, `%`, `://`) or just past one, or the length of a
// prefix of that string (a trimmed word, a matched ASCII scheme): always a character
// boundary, so no slice can panic.
#![allow(clippy::string_slice)]

use std::fmt::Write as _;

/// What stands in for a secret.
pub(crate) const HIDDEN: &str = "***";

/// A query parameter whose name (lower-cased) contains one of these holds a secret.
pub(crate) const SECRET_PARAMS: [&str; 9] = [
    "token",
    "key",
    "secret",
    "pass",
    "pwd",
    "sig",
    "auth",
    "credential",
    "session",
];

/// Removes credentials from a URL or source string (see the module documentation for the
/// rules); anything else is returned as it is. Idempotent.
pub fn redact(source: &str) -> String {
    if let Some(end) = scheme_end(source) {
        return redact_url(source, end);
    }
    if let Some(at) = scp_at(source)
        && let Some((user, _)) = source[..at].split_once(':')
    {
        return format!("{user}:{HIDDEN}{}", &source[at..]);
    }
    source.to_string()
}

/// A free-form message with every URL-shaped word redacted: `scheme://` URLs (also several
/// in one word, or after a quote or bracket) and scp-like `user:password@host:path`, and
/// the values of secret `?name=value` / `&name=value` parameters in any word, URL or not (a
/// server quotes the path it was asked for: `not exported: /r?token=abc`). The last line
/// of defence for errors built from a raw URL (deep inside libgit2, say).
pub fn redact_text(text: &str) -> String {
    if !text.contains('@') && !text.contains("://") && !text.contains('=') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for piece in text.split_inclusive(char::is_whitespace) {
        let word = piece.trim_end_matches(char::is_whitespace);
        out.push_str(&redact_word(word));
        out.push_str(&piece[word.len()..]);
    }
    out
}

pub(crate) fn redact_url(url: &str, scheme_end: usize) -> String {
    let scheme = &url[..scheme_end];
    let rest = &url[scheme_end + 3..];
    let (userinfo, tail) = match userinfo_at(url) {
        Some(at) => (Some(&url[scheme_end + 3..at]), &url[at + 1..]),
        None => (None, rest),
    };
    let mut out = format!("{scheme}://");
    if let Some(userinfo) = userinfo {
        let ssh = scheme.to_ascii_lowercase().contains("ssh");
        match userinfo.split_once(':') {
            _ if !ssh => out.push_str(HIDDEN),
            Some((user, _)) => {
                let _ = write!(out, "{user}:{HIDDEN}");
            }
            None => out.push_str(userinfo),
        }
        out.push('@');
    }
    out.push_str(&redact_query(tail));
    out
}

/// `host/path?query#fragment` with the values of secret query parameters hidden.
pub(crate) fn redact_query(tail: &str) -> String {
    let fragment = tail.find('#').unwrap_or(tail.len());
    let Some(question) = tail[..fragment].find('?') else {
        return tail.to_string();
    };
    let query = &tail[question + 1..fragment];
    let params: Vec<String> = query
        .split('&')
        .map(|param| match secret_value_start(param) {
            Some(start) if start < param.len() && !already_hidden(&param[start..]) => {
                format!("{}{HIDDEN}", &param[..start])
            }
            _ => param.to_string(),
        })
        .collect();
    format!(
        "{}{}{}",
        &tail[..=question],
        params.join("&"),
        &tail[fragment..]
    )
}

/// Where the secret value of one `&`-separated query parameter starts, if it holds one:
/// after `name=` when the name marks a secret, else after the first `;name=` inside it
/// whose name does (`;` separates parameters on many servers). The value runs to the end of
/// the parameter, so a secret holding `;` is hidden whole.
pub(crate) fn secret_value_start(param: &str) -> Option<usize> {
    let starts = std::iter::once(0).chain(param.match_indices(';').map(|(i, _)| i + 1));
    starts.into_iter().find_map(|start| {
        let piece = &param[start..];
        let eq = piece.find('=')?;
        let name = &piece[..eq];
        (!name.contains(';') && is_secret_param(name)).then_some(start + eq + 1)
    })
}

/// `***`, perhaps followed by the punctuation of the message it stands in
/// (`…?token=***: failed`): redacting it again would eat that punctuation.
pub(crate) fn already_hidden(value: &str) -> bool {
    value.strip_prefix(HIDDEN).is_some_and(|rest| {
        rest.chars()
            .all(|c| matches!(c, ':' | ',' | ';' | '.' | ')'))
    })
}

/// Whether a query parameter's name (percent-decoded, any case) marks a secret value.
pub(crate) fn is_secret_param(name: &str) -> bool {
    let name = percent_decoded(name).to_ascii_lowercase();
    SECRET_PARAMS.iter().any(|word| name.contains(word))
}

/// One word of a message with the URLs and secret query parameters in it redacted.
pub(crate) fn redact_word(word: &str) -> String {
    redact_loose_query(&redact_urls(word))
}

/// One word of a message with the URLs in it redacted.
pub(crate) fn redact_urls(word: &str) -> String {
    let Some(&first) = url_starts(word).first() else {
        return redact(word);
    };
    // The whole first, so a query value holding `://` is hidden entirely; then each URL
    // nested in it (`?next=https://user:pw@host/`) on its own.
    let outer = redact(&word[first..]);
    let starts = url_starts(&outer);
    let mut out = format!("{}{}", &word[..first], &outer[..starts[0]]);
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(outer.len());
        out.push_str(&redact(&outer[start..end]));
    }
    out
}

/// `word` with the value of every secret parameter that follows a `?` or `&` hidden,
/// whatever precedes it and at any length. A value runs to the next `&` or `#`.
pub(crate) fn redact_loose_query(word: &str) -> String {
    if !word.contains('=') {
        return word.to_string();
    }
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(sep) = rest.find(['?', '&']) {
        out.push_str(&rest[..=sep]);
        rest = &rest[sep + 1..];
        let param = &rest[..rest.find(['&', '#']).unwrap_or(rest.len())];
        match secret_value_start(param) {
            Some(start) if start < param.len() && !already_hidden(&param[start..]) => {
                let _ = write!(out, "{}{HIDDEN}", &param[..start]);
                rest = &rest[param.len()..];
            }
            _ => {}
        }
    }
    out.push_str(rest);
    out
}

/// Where each `scheme://` URL in `word` starts.
pub(crate) fn url_starts(word: &str) -> Vec<usize> {
    word.match_indices("://")
        .filter_map(|(i, _)| {
            // The scheme starts after the last character that cannot be part of one (which
            // may take more than one byte).
            let start = word[..i]
                .char_indices()
                .rfind(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
                .map_or(0, |(j, c)| j + c.len_utf8());
            is_scheme(&word[start..i]).then_some(start)
        })
        .collect()
}

/// The secret parts of a URL as written: user-info (not an ssh user name), the password of
/// an scp-like address, and the values of secret query parameters.
pub(crate) fn secrets(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(at) = userinfo_at(url) {
        let start = scheme_end(url).map_or(0, |end| end + 3);
        let userinfo = &url[start..at];
        let ssh = scheme_end(url).is_none_or(|end| url[..end].to_ascii_lowercase().contains("ssh"));
        match userinfo.split_once(':') {
            Some((user, password)) => {
                found.push(password.to_string());
                if !ssh {
                    found.push(user.to_string());
                }
            }
            None if !ssh => found.push(userinfo.to_string()),
            None => {}
        }
    }
    let tail = &url[userinfo_at(url).map_or(0, |at| at + 1)..];
    let fragment = tail.find('#').unwrap_or(tail.len());
    if let Some(question) = tail[..fragment].find('?') {
        for param in tail[question + 1..fragment].split('&') {
            if let Some(start) = secret_value_start(param) {
                found.push(param[start..].to_string());
            }
        }
    }
    found.retain(|s| !s.is_empty() && s != HIDDEN);
    found
}

/// `%XX` escapes decoded (invalid UTF-8 replaced), as libgit2 decodes user-info.
pub(crate) fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The index of the `@` that ends the user-info part of a `scheme://` URL or an scp-like
/// address, if it has one.
pub(crate) fn userinfo_at(s: &str) -> Option<usize> {
    match scheme_end(s) {
        Some(end) => {
            let start = end + 3;
            let rest = &s[start..];
            let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
            authority.rfind('@').map(|at| start + at)
        }
        None => scp_at(s),
    }
}

/// The index of `://` when `s` starts with a URL scheme (`[a-zA-Z][a-zA-Z0-9+.-]*://`).
pub(crate) fn scheme_end(s: &str) -> Option<usize> {
    let end = s.find("://")?;
    is_scheme(&s[..end]).then_some(end)
}

pub(crate) fn is_scheme(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// `user@host:path`, the scp-like syntax for SSH (but not `C:\...` or `./a:b`); the user may
/// carry a password (`user:password@host:path`).
pub(crate) fn is_scp_like(arg: &str) -> bool {
    scp_at(arg).is_some()
}

/// The `@` between user and host of an scp-like address: the last `@` before the first `/`
/// that is followed by `host:path` and preceded by a plain user name (plus `:password`).
pub(crate) fn scp_at(arg: &str) -> Option<usize> {
    if scheme_end(arg).is_some() {
        return None;
    }
    let head = &arg[..arg.find('/').unwrap_or(arg.len())];
    let plain = |s: &str| !s.is_empty() && !s.contains(['/', '\\', ' ', '@', ':', '#']);
    head.match_indices('@').rev().map(|(at, _)| at).find(|&at| {
        let user = arg[..at].split(':').next().unwrap_or("");
        let Some((host, path)) = arg[at + 1..].split_once(':') else {
            return false;
        };
        plain(user) && plain(host) && !path.is_empty()
    })
}

/// Replaces every occurrence of the raw URL `raw` and its secrets in `message` (also their
/// percent-decoded forms, as libgit2 shows them) with `display` or `***`, then redacts
/// whatever else looks like a URL.
pub fn scrub(message: &str, raw: &str, display: &str) -> String {
    let mut out = message.replace(raw, display);
    for secret in secrets(raw) {
        for form in [percent_decoded(&secret), secret] {
            if form.len() >= 4 {
                out = out.replace(&form, HIDDEN);
            }
        }
    }
    redact_text(&out)
}
