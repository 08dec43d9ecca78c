//! Files another user can place in the shared directory: a symlink, a world-readable file, a
//! file of someone else's. None is adopted as a segment, none is written through.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use framewire_shm::{Channel, Options, ShmError};

fn name(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "test-files-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A private temporary directory for victims.
fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fw-shm-files-{}-{tag}", name("d")));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn opts() -> Options {
    Options::route()
        .ring_bytes(4096)
        .pool(1, 4096)
        .topic("files")
}

fn set_mode(p: &std::path::Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn assert_unsafe(r: Result<Channel, ShmError>, what: &str) -> String {
    match r {
        Err(e @ ShmError::Unsafe { .. }) => e.to_string(),
        Err(e) => panic!("{what}: refused for the wrong reason: {e}"),
        Ok(_) => panic!("{what}: adopted"),
    }
}

#[test]
fn a_symlink_at_the_segment_name_is_not_followed() {
    let dir = temp_dir("symlink");
    let victim = dir.join("victim");
    std::fs::write(&victim, b"root-only secrets").unwrap();
    set_mode(&victim, 0o600);
    let n = name("symlink");
    let path = framewire_shm::path_for(&n).unwrap();
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    let msg = assert_unsafe(Channel::open(&n, &opts()), "creator");
    assert!(msg.contains("symbolic link"), "{msg}");
    assert_unsafe(Channel::attach(&n, "files"), "attacher");
    assert_eq!(std::fs::read(&victim).unwrap(), b"root-only secrets");
    // The link is left alone: it is not ours to remove.
    assert!(path.symlink_metadata().unwrap().file_type().is_symlink());
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_world_readable_file_is_not_adopted_by_a_creator() {
    let n = name("0666");
    let path = framewire_shm::path_for(&n).unwrap();
    std::fs::write(&path, b"").unwrap();
    set_mode(&path, 0o666);
    let msg = assert_unsafe(Channel::open(&n, &opts()), "creator");
    assert!(msg.contains("0666") && msg.contains("other users"), "{msg}");
    // Untouched: still empty, still there.
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    // Even a mode of 0640 lets the group read frames.
    set_mode(&path, 0o640);
    let msg = assert_unsafe(Channel::open(&n, &opts()), "creator");
    assert!(msg.contains("its group can read"), "{msg}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_file_of_another_user_is_not_adopted_by_a_creator() {
    let n = name("nobody");
    let path = framewire_shm::path_for(&n).unwrap();
    std::fs::write(&path, b"").unwrap();
    set_mode(&path, 0o600);
    std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    let msg = assert_unsafe(Channel::open(&n, &opts()), "creator");
    assert!(msg.contains("uid 65534"), "{msg}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn an_attacher_refuses_a_segment_others_can_write_or_another_user_owns() {
    let n = name("attach");
    let ch = Channel::open(&n, &opts()).unwrap();
    // Ours, mode 0600: attached.
    drop(Channel::attach(&n, "files").unwrap());
    // Writable by everyone: anyone could have forged its pictures.
    set_mode(ch.path(), 0o666);
    let msg = assert_unsafe(Channel::attach(&n, "files"), "attacher of a 0666 file");
    assert!(msg.contains("other users can write"), "{msg}");
    // Readable by others but writable only by its owner: attached (it is the owner's choice).
    set_mode(ch.path(), 0o644);
    drop(Channel::attach(&n, "files").unwrap());
    // Owned by another user (neither us nor root).
    set_mode(ch.path(), 0o600);
    std::os::unix::fs::chown(ch.path(), Some(65534), Some(65534)).unwrap();
    let msg = assert_unsafe(Channel::attach(&n, "files"), "attacher of nobody's file");
    assert!(msg.contains("uid 65534"), "{msg}");
    // A creator refuses it too, while it is still in use.
    assert_unsafe(Channel::open(&n, &opts()), "creator of nobody's file");
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    std::os::unix::fs::chown(ch.path(), Some(me), None).unwrap();
    drop(ch);
}
