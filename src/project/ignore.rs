//! Keeping a project's installed copies out of git: `add`, `sync` and `remove` write
//! `.zot/.gitignore` listing the extension folders the project file manages (what `zot ext
//! sync` puts there, `node_modules/` and builds included), and the file ignores itself, so
//! `git status` shows only the two files to commit: `extensions.json` and
//! `extensions.lock`. A folder the project file does not name (installed by hand, or
//! linked) is left for git to see. A `.gitignore` there that zot did not write is left
//! alone. The file is replaced atomically, never written through a link; the extensions
//! folder itself holds extensions only.

use std::path::Path;

use anyhow::{Context as _, Result};

use crate::catalog::paths::Scope;
use crate::fsx::{Flush, Folder};

use super::Where;

/// The file's name in `.zot`.
const FILE: &str = ".gitignore";

/// The first line, which says whose the file is.
const HEADER: &str = "# Written by zot ext: the extension folders extensions.json names, which zot ext sync installs; this file ignores itself.\n";

/// Writes the ignore file of the project `at` for the extensions `names` manage (nothing
/// for the global scope, which is no repository's).
pub(crate) fn keep_managed_out<'a>(
    at: &Where,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<()> {
    if at.scope != Scope::Project {
        return Ok(());
    }
    let root = at.dir.as_path();
    if !root.is_dir() {
        return Ok(());
    }
    let text = contents(names);
    let now = read(root);
    let theirs = std::fs::symlink_metadata(root.join(FILE)).is_ok()
        && !now.as_deref().is_some_and(|t| t.starts_with(HEADER));
    if theirs || now.as_deref() == Some(text.as_str()) {
        return Ok(());
    }
    let folder =
        Folder::open_path(root).with_context(|| format!("cannot open {}", root.display()))?;
    folder
        .replace_file(&folder, FILE, text.as_bytes(), 0o644, Flush::Now)
        .with_context(|| format!("cannot write {}", root.join(FILE).display()))
}

/// The file for `names`, sorted: each as `/extensions/<name>/`.
fn contents<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_unstable();
    let mut text = format!("{HEADER}/{FILE}\n");
    for name in names {
        text.push_str("/extensions/");
        text.push_str(name);
        text.push_str("/\n");
    }
    text
}

/// The file as it is, when it is a small regular file.
fn read(root: &Path) -> Option<String> {
    let bytes = crate::fsx::bounded::read(&root.join(FILE), 1 << 20).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_names_each_managed_folder_and_itself() {
        assert_eq!(
            contents(["weather", "clock"]),
            format!("{HEADER}/.gitignore\n/extensions/clock/\n/extensions/weather/\n")
        );
    }
}
