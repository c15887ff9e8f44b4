//! What a staged folder holds, read without following links: a plain file, and the path
//! an `exec` names inside the folder when nothing is there yet.

use std::fs;
use std::path::{Path, PathBuf};

/// Whether `path` is a regular file (a link is not).
pub(super) fn is_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// `exec` as a path inside the folder (`./hello`, `bin/x`) that names nothing yet.
pub(super) fn missing_exec(tree: &Path, exec: &str) -> Option<PathBuf> {
    if Path::new(exec).is_absolute() || !exec.contains('/') {
        return None;
    }
    let rel: PathBuf = Path::new(exec)
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    let plain = rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    (plain && fs::symlink_metadata(tree.join(&rel)).is_err()).then_some(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_outside_the_folder_is_never_built() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            missing_exec(dir.path(), "./hello"),
            Some(PathBuf::from("hello"))
        );
        assert_eq!(missing_exec(dir.path(), "../hello"), None);
        assert_eq!(missing_exec(dir.path(), "/bin/hello"), None);
        assert_eq!(missing_exec(dir.path(), "node"), None);
    }
}
