//! Git URLs holding control characters are refused before anything connects. A newline in
//! a URL's user name (`http://x%0Ahost%3Dgithub.com@127.0.0.1/r.git`) would otherwise
//! reach a credential helper as a line of its own and ask it for another host's password;
//! git refuses such URLs ("credential url cannot be parsed"). Every part a URL carries
//! (user name, password, host, path and query) is checked as written and percent-decoded,
//! for any C0 or C1 control character and DEL.

use crate::output::printable;
use crate::output::redact::{percent_decoded, redact, scheme_end, scp_at, userinfo_at};

/// Why `url` is refused, `None` when it holds no control character: the part that holds
/// one and its code point (`a control character (U+000A) in its user name`).
pub(crate) fn control_in(url: &str) -> Option<String> {
    parts(url).into_iter().find_map(|(part, text)| {
        let decoded = percent_decoded(text);
        let found = text
            .chars()
            .chain(decoded.chars())
            .find(|c| c.is_control())?;
        Some(format!(
            "a control character (U+{:04X}) in its {part}",
            u32::from(found)
        ))
    })
}

/// The error for a URL [`control_in`] refuses: the URL redacted and escaped, the reason and
/// what to do.
pub(crate) fn refusal(url: &str, why: &str) -> String {
    format!(
        "the git URL {} holds {why} (percent-decoded); git refuses such URLs too, as a credential helper would read the rest as another request: check where the URL came from",
        printable(&redact(url))
    )
}

/// `Err` with [`refusal`] when `url` holds a control character.
pub(crate) fn check(url: &str) -> Result<(), String> {
    match control_in(url) {
        Some(why) => Err(refusal(url, &why)),
        None => Ok(()),
    }
}

/// The parts of `url` with their names: `scheme://user:password@host/path`,
/// `user:password@host:path`, or a local path.
fn parts(url: &str) -> Vec<(&'static str, &str)> {
    let (authority_start, rest_at) = match (scheme_end(url), scp_at(url)) {
        (Some(end), _) => {
            let start = end + 3;
            let slash = url[start..].find('/').map_or(url.len(), |i| start + i);
            (start, slash)
        }
        (None, Some(at)) => {
            let colon = url[at..].find(':').map_or(url.len(), |i| at + i);
            (0, colon)
        }
        (None, None) => return vec![("path", url)],
    };
    let mut parts = vec![("scheme", &url[..authority_start])];
    let host_start = match userinfo_at(url).filter(|at| *at < rest_at) {
        Some(at) => {
            let userinfo = &url[authority_start..at];
            match userinfo.split_once(':') {
                Some((user, password)) => {
                    parts.push(("user name", user));
                    parts.push(("password", password));
                }
                None => parts.push(("user name", userinfo)),
            }
            at + 1
        }
        None => authority_start,
    };
    parts.push(("host", &url[host_start..rest_at]));
    parts.push(("path", &url[rest_at..]));
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_and_raw_controls_are_found_in_each_part() {
        let cases = [
            (
                "http://victim%0Ahost%3Dgithub.com@127.0.0.1:1/r.git",
                "U+000A) in its user name",
            ),
            ("https://u:pa%0Dss@h/r", "U+000D) in its password"),
            ("https://h%00st/r", "U+0000) in its host"),
            ("https://h/r%1b[2J.git", "U+001B) in its path"),
            ("https://h/r.git?x=%C2%85", "U+0085) in its path"),
            ("https://h/r\n.git", "U+000A) in its path"),
            ("git%0A@host:r.git", "U+000A) in its user name"),
            ("git@host:r%7F.git", "U+007F) in its path"),
            ("/srv/r%0A.git", "U+000A) in its path"),
        ];
        for (url, want) in cases {
            let why = control_in(url).unwrap_or_default();
            assert!(why.ends_with(want), "{url}: {why}");
        }
    }

    #[test]
    fn ordinary_urls_pass() {
        for url in [
            "https://user:p%40ss@h:8443/o/r.git?ref=main",
            "ssh://git@h/r",
            "git@h:o/r.git",
            "/srv/some dir/r.git",
            "file:///srv/r%20x.git",
            "https://h/é.git",
        ] {
            assert_eq!(control_in(url), None, "{url}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_input_is_judged_without_panicking(url in "[a-z:/@%0-9A-F\\x00-\\x1fé.]{0,40}") {
            let found = control_in(&url);
            let raw = url.chars().any(char::is_control);
            proptest::prop_assert!(!raw || found.is_some(), "{:?}", url);
        }
    }

    #[test]
    fn the_refusal_shows_no_password_and_no_raw_control() {
        let url = "https://u:hunter2%0A@h/r";
        let message = check(url).unwrap_err();
        assert!(!message.contains("hunter2"), "{message}");
        assert!(message.contains("U+000A) in its password"), "{message}");
        let message = check("https://h/r\u{1b}[2J").unwrap_err();
        assert!(!message.contains('\u{1b}'), "{message}");
    }
}
