//! Extension trees on disk: checking symbolic links and special files, and a recursive copy
//! that keeps file modes, times and symbolic links (as links) and leaves out `.git`.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use walkdir::{DirEntry, WalkDir};

/// Running totals of a copy, reported to the progress callback.
#[derive(Debug, Default, Clone, Copy)]
pub struct CopyStats {
    pub files: u64,
    pub dirs: u64,
    pub links: u64,
    pub bytes: u64,
}

fn walk(root: &Path) -> impl Iterator<Item = walkdir::Result<DirEntry>> {
    WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || e.file_name() != ".git")
}

fn walk_error(e: walkdir::Error) -> anyhow::Error {
    if e.loop_ancestor().is_some() {
        return anyhow::anyhow!("{e}");
    }
    let path = e.path().map(Path::to_path_buf).unwrap_or_default();
    match e.into_io_error() {
        Some(io) => anyhow::anyhow!("cannot read {}: {}", path.display(), io_reason(&io)),
        None => anyhow::anyhow!("cannot read {}", path.display()),
    }
}

fn io_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        io::ErrorKind::NotFound => "no such file or directory".into(),
        _ => e.to_string(),
    }
}

/// Checks every entry of `root`: symbolic links must resolve inside the tree, and only
/// regular files, directories and links are allowed. Returns the number of entries.
/// Messages show paths inside the tree after `prefix` instead of under `root` (a staging
/// folder means nothing to the user; the source does): `"src/"` or `"<url> (<commit>): "`.
pub fn audit(root: &Path, prefix: &str) -> Result<u64> {
    audit_tree(root).map_err(|e| {
        let message = format!("{e:#}");
        let root = format!("{}/", root.display());
        anyhow::anyhow!("{}", message.replace(&root, prefix))
    })
}

fn audit_tree(root: &Path) -> Result<u64> {
    let canonical_root =
        fs::canonicalize(root).with_context(|| format!("cannot resolve {}", root.display()))?;
    let mut count = 0;
    for entry in walk(root) {
        let entry = entry.map_err(walk_error)?;
        count += 1;
        let kind = entry.file_type();
        if kind.is_symlink() {
            link_target_inside(entry.path(), &canonical_root)?;
        } else if !kind.is_dir() && !kind.is_file() {
            bail!(
                "{} is a special file ({}); an extension may only hold files, folders and symbolic links",
                entry.path().display(),
                special_kind(&kind)
            );
        }
    }
    Ok(count)
}

fn special_kind(kind: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a named pipe";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    let _ = kind;
    "not a regular file"
}

/// Resolves the link at `link` and checks the result lies inside `canonical_root`.
/// Returns the resolved path.
fn link_target_inside(link: &Path, canonical_root: &Path) -> Result<PathBuf> {
    let target = fs::read_link(link)
        .with_context(|| format!("cannot read the symbolic link {}", link.display()))?;
    let resolved = match fs::canonicalize(link) {
        Ok(resolved) => resolved,
        Err(e) if e.raw_os_error() == Some(40) || e.to_string().contains("symbolic links") => {
            bail!(
                "{} -> {} is a symbolic link loop; fix or delete the link",
                link.display(),
                target.display()
            )
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => bail!(
            "{} -> {} is a dangling symbolic link (its target does not exist); fix or delete the link",
            link.display(),
            target.display()
        ),
        Err(e) => bail!(
            "cannot resolve the symbolic link {}: {}",
            link.display(),
            io_reason(&e)
        ),
    };
    if !resolved.starts_with(canonical_root) {
        bail!(
            "{} -> {} points outside the extension folder; only links to files inside it are copied",
            link.display(),
            target.display()
        );
    }
    Ok(resolved)
}

/// Copies `src` to `dst` (which must not exist), calling `progress` after each entry.
/// Callers run [`audit`] first; links are re-checked here all the same.
pub fn copy(src: &Path, dst: &Path, progress: &mut dyn FnMut(&CopyStats)) -> Result<CopyStats> {
    let canonical_root =
        fs::canonicalize(src).with_context(|| format!("cannot resolve {}", src.display()))?;
    let mut stats = CopyStats::default();
    let mut dirs = Vec::new();
    for entry in walk(src) {
        let entry = entry.map_err(walk_error)?;
        let relative = entry
            .path()
            .strip_prefix(src)
            .expect("walk stays under its root");
        let to = dst.join(relative);
        let kind = entry.file_type();
        if kind.is_dir() {
            fs::create_dir(&to).with_context(|| format!("cannot create {}", to.display()))?;
            dirs.push((entry.path().to_path_buf(), to));
            stats.dirs += 1;
        } else if kind.is_symlink() {
            copy_link(entry.path(), &to, &canonical_root, relative)?;
            stats.links += 1;
        } else if kind.is_file() {
            stats.bytes += copy_file(entry.path(), &to)?;
            stats.files += 1;
        } else {
            bail!(
                "{} is a special file; refusing to copy it",
                entry.path().display()
            );
        }
        progress(&stats);
    }
    // Directory modes last (deepest first), so read-only folders could still be filled.
    for (from, to) in dirs.iter().rev() {
        let meta = fs::metadata(from)?;
        keep_modified(from, to);
        fs::set_permissions(to, meta.permissions())?;
    }
    Ok(stats)
}

fn copy_file(from: &Path, to: &Path) -> Result<u64> {
    let bytes = fs::copy(from, to)
        .map_err(|e| anyhow::anyhow!("cannot copy {}: {}", from.display(), io_reason(&e)))?;
    keep_modified(from, to);
    Ok(bytes)
}

/// Gives `to` the modification time of `from`, best effort. A read-only handle is enough
/// for the owner, so read-only files and folders keep their times too.
fn keep_modified(from: &Path, to: &Path) {
    if let Ok(modified) = fs::metadata(from).and_then(|m| m.modified()) {
        let _ = fs::File::open(to).and_then(|f| f.set_modified(modified));
    }
}

/// Recreates a link; an absolute target inside the tree is rewritten relative, so the copy
/// points into itself rather than back at the source.
fn copy_link(link: &Path, to: &Path, canonical_root: &Path, relative: &Path) -> Result<()> {
    let resolved = link_target_inside(link, canonical_root)?;
    let target = fs::read_link(link)?;
    let target = if target.is_absolute() {
        let link_dir = canonical_root.join(relative.parent().unwrap_or(Path::new("")));
        relative_path(&link_dir, &resolved)
    } else {
        target
    };
    symlink(&target, to).with_context(|| format!("cannot create the link {}", to.display()))
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(windows)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    let absolute = link.parent().unwrap_or(Path::new(".")).join(target);
    if absolute.is_dir() {
        std::os::windows::fs::symlink_dir(target, link)
    } else {
        std::os::windows::fs::symlink_file(target, link)
    }
}

/// The path from directory `from` to `to`, both absolute and canonical.
fn relative_path(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for part in &to[common..] {
        out.push(part);
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    fn no_progress() -> impl FnMut(&CopyStats) {
        |_| {}
    }

    #[test]
    fn copy_keeps_modes_links_and_skips_git() {
        let src = tempfile::tempdir().unwrap();
        let s = src.path();
        fs::create_dir_all(s.join("node_modules/.bin")).unwrap();
        fs::create_dir_all(s.join(".git")).unwrap();
        fs::write(s.join(".git/HEAD"), "x").unwrap();
        fs::write(s.join("run.sh"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(s.join("run.sh"), fs::Permissions::from_mode(0o751)).unwrap();
        symlink("../../run.sh", s.join("node_modules/.bin/run")).unwrap();
        symlink(s.join("run.sh"), s.join("abs")).unwrap();
        audit(s, "").unwrap();
        let dst = tempfile::tempdir().unwrap();
        let to = dst.path().join("t");
        let stats = copy(s, &to, &mut no_progress()).unwrap();
        assert_eq!(stats.links, 2);
        let mode = fs::metadata(to.join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o751);
        assert_eq!(
            fs::read_link(to.join("node_modules/.bin/run")).unwrap(),
            Path::new("../../run.sh")
        );
        assert_eq!(fs::read_link(to.join("abs")).unwrap(), Path::new("run.sh"));
        assert!(!to.join(".git").exists());
    }

    #[test]
    fn copy_keeps_times_of_read_only_files_and_folders() {
        use std::time::{Duration, SystemTime};
        let src = tempfile::tempdir().unwrap();
        let s = src.path();
        fs::create_dir(s.join("dir")).unwrap();
        fs::write(s.join("dir/ro"), "x").unwrap();
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        fs::File::open(s.join("dir/ro"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        fs::set_permissions(s.join("dir/ro"), fs::Permissions::from_mode(0o444)).unwrap();
        fs::File::open(s.join("dir"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let dst = tempfile::tempdir().unwrap();
        let to = dst.path().join("t");
        copy(s, &to, &mut no_progress()).unwrap();
        for path in ["dir/ro", "dir"] {
            assert_eq!(
                fs::metadata(to.join(path)).unwrap().modified().unwrap(),
                old,
                "{path}"
            );
        }
    }

    #[test]
    fn audit_refuses_escaping_dangling_and_looping_links() {
        type Make = fn(&Path);
        let cases: [(&str, Make); 3] = [
            ("outside", |d| symlink("/etc/passwd", d.join("l")).unwrap()),
            ("dangling", |d| symlink("missing", d.join("l")).unwrap()),
            ("loop", |d| {
                symlink("b", d.join("a")).unwrap();
                symlink("a", d.join("b")).unwrap();
            }),
        ];
        for (word, make) in cases {
            let dir = tempfile::tempdir().unwrap();
            make(dir.path());
            let err = audit(dir.path(), "src/").unwrap_err().to_string();
            assert!(err.contains(word), "{word}: {err}");
            assert!(err.starts_with("src/"), "{err}");
        }
    }

    #[test]
    fn audit_refuses_fifos() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let err = audit(dir.path(), "src/").unwrap_err().to_string();
        assert!(err.contains("named pipe"), "{err}");
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_path(Path::new("/a/b"), Path::new("/a/c/d")),
            Path::new("../c/d")
        );
        assert_eq!(
            relative_path(Path::new("/a"), Path::new("/a/x")),
            Path::new("x")
        );
    }
}
