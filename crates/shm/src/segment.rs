//! Named segments: files in `/dev/shm` (or `$FRAMEWIRE_SHM_DIR`), mode 0600, created,
//! validated, attached, cleaned when stale and removed by the last member to leave.
//!
//! The directory is shared, so a name in it may have been placed by another user: a segment is
//! opened without following a symlink and without truncating, and checked on the open file. A
//! creator uses only a regular file of its own that nobody else can read or write; an attacher
//! also accepts root's, but never a file that its group or other users can write.
//!
//! Opening and closing take an exclusive `flock` on the file, so a segment is never
//! initialised twice, never removed while someone is attaching, and an opener that raced with
//! the removal (the file it opened has no name any more) simply opens again.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::SeqCst;

use crate::error::ShmError;
use crate::layout::*;
use crate::liveness::{self, Process};
use crate::{Policy, Shape};

/// A shared mapping of a whole segment.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory accessed through atomics (see `Words`); it can be
// used from any thread.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Words for Mapping {
    fn base(&self) -> *mut u8 {
        self.ptr
    }
}

impl Mapping {
    fn new(file: &File, len: usize, path: &Path) -> Result<Mapping, ShmError> {
        // SAFETY: mapping a file we hold open, shared and read-write; the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io(path, std::io::Error::last_os_error()));
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }

    /// Maps the first `len` bytes (header, tables, ring) writable now, so the first lap of
    /// messages does not pay a page fault per 4 KB. The pool is left to fault in as used (it
    /// can be large and is often mostly idle). Advice only: older kernels ignore it.
    pub fn prefault(&self, len: usize) {
        // SAFETY: the range is inside our mapping; MADV_POPULATE_WRITE only faults pages in.
        unsafe {
            libc::madvise(
                self.ptr.cast(),
                len.min(self.len),
                libc::MADV_POPULATE_WRITE,
            );
        }
    }

    /// Bytes `[off, off + len)` of the mapping.
    ///
    /// # Safety
    /// The range must be inside the mapping, and no one may write it while the slice lives.
    pub unsafe fn bytes(&self, off: usize, len: usize) -> &[u8] {
        debug_assert!(off + len <= self.len);
        std::slice::from_raw_parts(self.ptr.add(off), len)
    }

    /// Mutable bytes `[off, off + len)`.
    ///
    /// # Safety
    /// The range must be inside the mapping and owned by the caller (a reserved record or a
    /// claimed pool block) for the slice's lifetime.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn bytes_mut(&self, off: usize, len: usize) -> &mut [u8] {
        debug_assert!(off + len <= self.len);
        std::slice::from_raw_parts_mut(self.ptr.add(off), len)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from a successful mmap and nothing borrows the mapping any more
        // (every borrower holds an Arc to the segment that owns it).
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

fn io(path: &Path, source: std::io::Error) -> ShmError {
    ShmError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The directory segments live in: `$FRAMEWIRE_SHM_DIR`, else `/dev/shm` (memory), else the
/// temporary directory on a system without it.
pub fn dir() -> PathBuf {
    if let Some(d) = std::env::var_os("FRAMEWIRE_SHM_DIR") {
        return PathBuf::from(d);
    }
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

/// The file of segment `name`, after checking the name.
pub fn path_for(name: &str) -> Result<PathBuf, ShmError> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
        && !name.starts_with('.');
    if !ok {
        return Err(ShmError::BadName(name.to_string()));
    }
    Ok(dir().join(format!("framewire-{name}")))
}

/// Whether an opened segment file is safe to use. A creator uses only a regular file of its
/// own that nobody else can read or write (it makes them mode 0600); an attacher also accepts
/// one of root's, but never one that others can write.
fn check_owner(meta: &std::fs::Metadata, creator: bool) -> Result<(), String> {
    if !meta.file_type().is_file() {
        return Err("it is not a regular file".into());
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let (uid, mode) = (meta.uid(), meta.mode() & 0o7777);
    let owner_ok = uid == me || (!creator && uid == 0);
    if !owner_ok {
        return Err(format!(
            "it belongs to uid {uid}, not to this user (uid {me}){}",
            if creator { "" } else { " or root" }
        ));
    }
    let bad = mode & if creator { 0o077 } else { 0o022 };
    if bad != 0 {
        let who = if bad & 0o007 != 0 {
            "other users"
        } else {
            "its group"
        };
        let what = if bad & 0o022 != 0 { "write" } else { "read" };
        return Err(format!("its mode is {mode:04o}: {who} can {what} it"));
    }
    Ok(())
}

struct Lock<'a>(&'a File);

impl<'a> Lock<'a> {
    fn new(f: &'a File, path: &Path) -> Result<Self, ShmError> {
        // SAFETY: flock on an fd we own.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io(path, std::io::Error::last_os_error()));
        }
        Ok(Lock(f))
    }
}

impl Drop for Lock<'_> {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// What the creator asks for.
#[derive(Debug, Clone)]
pub struct Spec {
    pub shape: Shape,
    pub policy: Policy,
    pub sizes: Sizes,
    pub topic: u64,
}

/// An open segment and this handle's member place in it.
pub struct Segment {
    pub map: Mapping,
    pub layout: Layout,
    pub shape: Shape,
    pub policy: Policy,
    pub name: String,
    path: PathBuf,
    file: File,
    member: u32,
}

pub fn topic_hash(topic: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(topic.as_bytes())
}

fn entry_process(m: &Mapping, off: usize) -> Process {
    Process {
        pid: m.u32_at(off + E_PID).load(SeqCst),
        start: m.u64_at(off + E_START).load(SeqCst),
    }
}

/// The first live process registered anywhere in the segment, if any.
fn live_member(m: &Mapping, l: &Layout, except: Option<u32>) -> Option<u32> {
    let s = l.sizes;
    let tables = [
        (l.members, s.max_members),
        (l.receivers, s.max_receivers),
        (l.senders, s.max_senders),
    ];
    for (base, n) in tables {
        for i in 0..n {
            let off = base + i as usize * ENTRY;
            if base == l.members && Some(i) == except {
                continue;
            }
            if m.u32_at(off + E_STATE).load(SeqCst) != FREE {
                let p = entry_process(m, off);
                if liveness::alive(p) {
                    return Some(p.pid);
                }
            }
        }
    }
    None
}

/// Reads and bounds-checks the header of an existing segment of `file_len` bytes.
fn read_header(m: &Mapping, file_len: u64) -> Result<(Shape, Policy, Sizes, u64), String> {
    // SAFETY: the first page is mapped (file_len >= HEADER_BYTES was checked).
    let magic = unsafe { m.bytes(H_MAGIC, 8) };
    if magic != MAGIC {
        return Err("not a framewire segment".into());
    }
    let version = m.u32_at(H_VERSION).load(SeqCst);
    if version != VERSION {
        return Err(format!(
            "layout version {version}, this build reads {VERSION}"
        ));
    }
    if m.u32_at(H_STATE).load(SeqCst) != READY {
        return Err("never finished initialising".into());
    }
    let shape = Shape::from_u32(m.u32_at(H_SHAPE).load(SeqCst)).ok_or("unknown shape")?;
    let policy = Policy::from_u32(m.u32_at(H_POLICY).load(SeqCst)).ok_or("unknown policy")?;
    let sizes = Sizes {
        ring_units: m.u64_at(H_RING_UNITS).load(SeqCst),
        max_receivers: m.u32_at(H_MAX_RECEIVERS).load(SeqCst),
        max_senders: m.u32_at(H_MAX_SENDERS).load(SeqCst),
        max_members: m.u32_at(H_MAX_MEMBERS).load(SeqCst),
        pool_blocks: m.u32_at(H_POOL_BLOCKS).load(SeqCst),
        pool_block_bytes: m.u64_at(H_POOL_BLOCK_BYTES).load(SeqCst),
    };
    check_sizes(&sizes)?;
    let total = m.u64_at(H_TOTAL).load(SeqCst);
    if total != Layout::new(sizes).total as u64 || total != file_len {
        return Err(format!(
            "recorded size {total} does not match its layout or the file ({file_len} bytes)"
        ));
    }
    Ok((shape, policy, sizes, m.u64_at(H_TOPIC).load(SeqCst)))
}

/// Bounds on every size, checked before anything is mapped or allocated from it.
pub fn check_sizes(s: &Sizes) -> Result<(), String> {
    let bad = |what: &str| Err(format!("{what} out of range"));
    if !(64..=(1 << 24)).contains(&s.ring_units) {
        return bad("ring size");
    }
    if !(1..=65_536).contains(&s.max_receivers) {
        return bad("receiver count");
    }
    if !(1..=4096).contains(&s.max_senders) {
        return bad("sender count");
    }
    if !(1..=70_000).contains(&s.max_members) {
        return bad("member count");
    }
    if s.pool_blocks > 4096
        || s.pool_block_bytes > (1 << 30)
        || !s.pool_block_bytes.is_multiple_of(4096)
    {
        return bad("pool");
    }
    if s.pool_blocks as u64 * s.pool_block_bytes > (64 << 30) {
        return bad("pool total");
    }
    Ok(())
}

impl Segment {
    /// Opens segment `name`: creates it from `spec` if it does not exist, attaches if it exists
    /// and matches, re-creates it if every process that used it is dead. With `spec` `None`
    /// only attaches, to whatever layout exists, if its topic is `topic`.
    pub fn open(name: &str, spec: Option<&Spec>, topic: u64) -> Result<Segment, ShmError> {
        let path = path_for(name)?;
        loop {
            // Never through a symlink, and never truncated on open: a name in a shared
            // directory may have been placed there by someone else.
            let mut o = OpenOptions::new();
            o.read(true).write(true).custom_flags(libc::O_NOFOLLOW);
            if spec.is_some() {
                o.create(true).truncate(false).mode(0o600);
            }
            let file = match o.open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && spec.is_none() => {
                    return Err(ShmError::NotFound(name.to_string()))
                }
                Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                    return Err(ShmError::Unsafe {
                        path,
                        reason: "it is a symbolic link".into(),
                    })
                }
                Err(e) => return Err(io(&path, e)),
            };
            // Checked on the open file (no race with a rename), before taking its lock.
            let meta = file.metadata().map_err(|e| io(&path, e))?;
            if let Err(reason) = check_owner(&meta, spec.is_some()) {
                return Err(ShmError::Unsafe { path, reason });
            }
            let lock = Lock::new(&file, &path)?;
            let meta = file.metadata().map_err(|e| io(&path, e))?;
            if meta.nlink() == 0 {
                continue; // removed by its last member while we waited for the lock
            }
            let mut existing = None;
            if meta.len() >= HEADER_BYTES as u64 {
                let head = Mapping::new(&file, HEADER_BYTES, &path)?;
                existing = Some(read_header(&head, meta.len()));
            }
            let seg = match (existing, spec) {
                (Some(Ok((shape, policy, sizes, t))), _)
                    if t == topic
                        && match spec {
                            None => true,
                            Some(s) => s.shape == shape && s.policy == policy && s.sizes == sizes,
                        } =>
                {
                    let layout = Layout::new(sizes);
                    let map = Mapping::new(&file, layout.total, &path)?;
                    let live = live_member(&map, &layout, None);
                    match (live, spec) {
                        (None, Some(spec)) => {
                            // Everyone who used it is gone: start afresh, dropping stale state.
                            drop(map);
                            Self::init(&file, &path, spec)?
                        }
                        _ => (map, layout, shape, policy),
                    }
                }
                (existing, Some(spec)) => {
                    if let Some(Ok((_, _, sizes, t))) = &existing {
                        let layout = Layout::new(*sizes);
                        let map = Mapping::new(&file, layout.total, &path)?;
                        if let Some(pid) = live_member(&map, &layout, None) {
                            let why = if *t != topic {
                                "another topic".to_string()
                            } else {
                                "another shape, policy or size".to_string()
                            };
                            return Err(ShmError::Incompatible {
                                name: name.into(),
                                why,
                                pid: Some(pid),
                            });
                        }
                    }
                    // Absent, empty, unreadable or stale: (re)create. Nobody live maps it.
                    Self::init(&file, &path, spec)?
                }
                (Some(Ok(_)), None) => {
                    return Err(ShmError::Incompatible {
                        name: name.into(),
                        why: "another topic".into(),
                        pid: None,
                    })
                }
                (Some(Err(why)), None) => {
                    return Err(ShmError::Incompatible {
                        name: name.into(),
                        why,
                        pid: None,
                    })
                }
                (None, None) => return Err(ShmError::NotFound(name.to_string())),
            };
            let (map, layout, shape, policy) = seg;
            map.prefault(layout.pool);
            let member = claim_member(&map, &layout)?;
            drop(lock);
            return Ok(Segment {
                map,
                layout,
                shape,
                policy,
                name: name.to_string(),
                path,
                file,
                member,
            });
        }
    }

    fn init(
        file: &File,
        path: &Path,
        spec: &Spec,
    ) -> Result<(Mapping, Layout, Shape, Policy), ShmError> {
        check_sizes(&spec.sizes).map_err(|why| ShmError::Incompatible {
            name: path.display().to_string(),
            why,
            pid: None,
        })?;
        let layout = Layout::new(spec.sizes);
        // Truncating to zero first discards every byte of a stale segment.
        file.set_len(0).map_err(|e| io(path, e))?;
        file.set_len(layout.total as u64).map_err(|e| io(path, e))?;
        let map = Mapping::new(file, layout.total, path)?;
        // SAFETY: the header page is ours alone while we hold the lock.
        unsafe { map.bytes_mut(H_MAGIC, 8) }.copy_from_slice(&MAGIC);
        map.u32_at(H_VERSION).store(VERSION, SeqCst);
        map.u32_at(H_SHAPE).store(spec.shape as u32, SeqCst);
        map.u32_at(H_POLICY).store(spec.policy as u32, SeqCst);
        let s = spec.sizes;
        map.u64_at(H_RING_UNITS).store(s.ring_units, SeqCst);
        map.u32_at(H_MAX_RECEIVERS).store(s.max_receivers, SeqCst);
        map.u32_at(H_MAX_SENDERS).store(s.max_senders, SeqCst);
        map.u32_at(H_MAX_MEMBERS).store(s.max_members, SeqCst);
        map.u32_at(H_POOL_BLOCKS).store(s.pool_blocks, SeqCst);
        map.u64_at(H_POOL_BLOCK_BYTES)
            .store(s.pool_block_bytes, SeqCst);
        map.u64_at(H_TOPIC).store(spec.topic, SeqCst);
        map.u64_at(H_TOTAL).store(layout.total as u64, SeqCst);
        for i in 0..s.max_receivers {
            map.u64_at(layout.receiver(i) + R_HOLDING)
                .store(NONE, SeqCst);
        }
        map.u32_at(H_STATE).store(READY, SeqCst);
        Ok((map, layout, spec.shape, spec.policy))
    }

    /// Leaves the segment; the last live member removes its file.
    fn leave(&mut self) {
        let Ok(lock) = Lock::new(&self.file, &self.path) else {
            return;
        };
        let off = self.layout.member(self.member);
        self.map.u32_at(off + E_STATE).store(FREE, SeqCst);
        let nlink = self.file.metadata().map(|m| m.nlink()).unwrap_or(0);
        if nlink > 0 && live_member(&self.map, &self.layout, Some(self.member)).is_none() {
            let _ = std::fs::remove_file(&self.path);
        }
        drop(lock);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        self.leave();
    }
}

/// Claims an entry in a table of `n` entries at `base`: a free one, or (with `reuse_dead`) one
/// whose process died.
pub fn claim_entry(m: &Mapping, base: usize, n: u32, me: Process, reuse_dead: bool) -> Option<u32> {
    for pass in 0..1 + reuse_dead as u32 {
        for i in 0..n {
            let off = base + i as usize * ENTRY;
            let st = m.u32_at(off + E_STATE);
            let cur = st.load(SeqCst);
            let takeable = cur == FREE || (pass == 1 && cur != REAPING && !alive_at(m, off));
            if takeable && st.compare_exchange(cur, CLAIMED, SeqCst, SeqCst).is_ok() {
                m.u32_at(off + E_PID).store(me.pid, SeqCst);
                m.u64_at(off + E_START).store(me.start, SeqCst);
                return Some(i);
            }
        }
    }
    None
}

pub fn alive_at(m: &Mapping, off: usize) -> bool {
    liveness::alive(entry_process(m, off))
}

fn claim_member(m: &Mapping, l: &Layout) -> Result<u32, ShmError> {
    let i = claim_entry(m, l.members, l.sizes.max_members, liveness::me(), true)
        .ok_or(ShmError::NoReceiverPlace(l.sizes.max_members))?;
    m.u32_at(l.member(i) + E_STATE).store(ACTIVE, SeqCst);
    Ok(i)
}
