//! The private directory the control socket and the status file live in by default:
//! `$XDG_RUNTIME_DIR/framewire/`, else `/tmp/framewire-$UID/`, mode 0700.
//!
//! `/tmp` is shared, and another user may have made that name first (a directory of theirs, a
//! symlink to one, a directory anyone can write): it is checked, never trusted.

use std::ffi::OsStr;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// This process's effective uid: the owner of the files it creates.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// A uid as people read it: `uid 65534 (nobody)`, or `uid 1234` when it has no name.
pub fn user_label(uid: u32) -> String {
    // SAFETY: passwd is plain data (integers and pointers); all zeroes is a valid value.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to a live local of the size given; the result is read only
    // when getpwuid_r reports a match, and the name it points to lives in `buf`.
    let name = unsafe {
        let rc = libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut found);
        (rc == 0 && !found.is_null() && !pw.pw_name.is_null()).then(|| {
            std::ffi::CStr::from_ptr(pw.pw_name)
                .to_string_lossy()
                .into_owned()
        })
    };
    match name {
        Some(n) => format!("uid {uid} ({n})"),
        None => format!("uid {uid}"),
    }
}

/// Where the runtime directory is, from the value of `XDG_RUNTIME_DIR` (used only when it is
/// an absolute path) and the user's uid. Nothing is created or checked.
pub fn runtime_dir_for(xdg_runtime_dir: Option<&OsStr>, uid: u32) -> PathBuf {
    match xdg_runtime_dir.map(Path::new) {
        Some(d) if d.is_absolute() => d.join("framewire"),
        _ => PathBuf::from(format!("/tmp/framewire-{uid}")),
    }
}

/// The runtime directory of this process's user, created (mode 0700) if missing and checked.
pub fn runtime_dir() -> anyhow::Result<PathBuf> {
    let uid = euid();
    let dir = runtime_dir_for(std::env::var_os("XDG_RUNTIME_DIR").as_deref(), uid);
    ensure_private_dir(&dir, uid)?;
    Ok(dir)
}

/// Creates `dir` with mode 0700 if it does not exist, then checks that it is a real directory
/// (not a symlink), owned by `uid`, that nobody else can enter or write.
pub fn ensure_private_dir(dir: &Path, uid: u32) -> anyhow::Result<()> {
    let hint = "set XDG_RUNTIME_DIR to a directory of yours, or pass --control-socket and \
                --status-file";
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        // Ours, just made: the umask may have taken bits off, never added any.
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("setting the mode of {}", dir.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(e).with_context(|| {
                format!("creating the runtime directory {} ({hint})", dir.display())
            })
        }
    }
    let m = std::fs::symlink_metadata(dir)
        .with_context(|| format!("reading the runtime directory {}", dir.display()))?;
    let fix = format!("it may have been placed by another user: remove it, or {hint}");
    if m.file_type().is_symlink() {
        bail!(
            "the runtime directory {} is a symbolic link, not a directory; {fix}",
            dir.display()
        );
    }
    if !m.is_dir() {
        bail!(
            "the runtime directory {} is not a directory; {fix}",
            dir.display()
        );
    }
    if m.uid() != uid {
        bail!(
            "the runtime directory {} belongs to {}, not to you ({}); {fix}",
            dir.display(),
            user_label(m.uid()),
            user_label(uid)
        );
    }
    let mode = m.mode() & 0o7777;
    if mode & 0o077 != 0 {
        bail!(
            "the runtime directory {} has mode {mode:04o}: other users can reach what is in it; \
             `chmod 700 {}` if it is yours, or remove it",
            dir.display(),
            dir.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
    }

    #[test]
    fn the_path_comes_from_xdg_runtime_dir_when_absolute_else_tmp_and_the_uid() {
        let p = runtime_dir_for(Some(OsStr::new("/run/user/1000")), 1000);
        assert_eq!(p, Path::new("/run/user/1000/framewire"));
        assert_eq!(
            runtime_dir_for(None, 1000),
            Path::new("/tmp/framewire-1000")
        );
        assert_eq!(
            runtime_dir_for(Some(OsStr::new("run/user")), 7),
            Path::new("/tmp/framewire-7")
        );
        assert_eq!(
            runtime_dir_for(Some(OsStr::new("")), 7),
            Path::new("/tmp/framewire-7")
        );
    }

    #[test]
    fn a_missing_directory_is_created_0700_and_an_existing_private_one_is_accepted() {
        let base = crate::test_dir("create");
        let dir = base.join("framewire");
        ensure_private_dir(&dir, euid()).unwrap();
        assert!(std::fs::symlink_metadata(&dir).unwrap().is_dir());
        assert_eq!(mode(&dir), 0o700);
        ensure_private_dir(&dir, euid()).unwrap();
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_symlink_is_refused_even_to_a_private_directory_of_ours() {
        let base = crate::test_dir("symlink");
        let real = base.join("real");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&real)
            .unwrap();
        let dir = base.join("framewire");
        std::os::unix::fs::symlink(&real, &dir).unwrap();
        let e = ensure_private_dir(&dir, euid()).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_directory_of_another_user_is_refused_naming_the_owner() {
        let base = crate::test_dir("owner");
        let dir = base.join("framewire");
        std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
        let e = ensure_private_dir(&dir, euid()).unwrap_err().to_string();
        assert!(e.contains("belongs to uid 65534"), "{e}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_directory_others_can_enter_is_refused() {
        let base = crate::test_dir("mode");
        let dir = base.join("framewire");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = ensure_private_dir(&dir, euid()).unwrap_err().to_string();
        assert!(e.contains("mode 0777"), "{e}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).unwrap();
        let e = ensure_private_dir(&dir, euid()).unwrap_err().to_string();
        assert!(e.contains("mode 0750"), "{e}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_file_in_its_place_is_refused() {
        let base = crate::test_dir("file");
        let dir = base.join("framewire");
        std::fs::write(&dir, b"").unwrap();
        let e = ensure_private_dir(&dir, euid()).unwrap_err().to_string();
        assert!(e.contains("not a directory"), "{e}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_uid_is_named() {
        assert_eq!(user_label(0), "uid 0 (root)");
        assert!(user_label(4_000_000_000).starts_with("uid 4000000000"));
    }
}
