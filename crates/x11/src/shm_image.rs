//! A System V shared-memory segment the X server writes images into (MIT-SHM), so a capture
//! is one request and no copy through the socket, and nothing is allocated per frame.

use x11rb::connection::Connection;
use x11rb::protocol::shm::{self, ConnectionExt as _};

use crate::display::X11Error;

pub struct ShmImage {
    pub seg: shm::Seg,
    ptr: *mut u8,
    len: usize,
}

// The mapping is owned by this value and only read through &self / written by the X server.
unsafe impl Send for ShmImage {}

impl ShmImage {
    /// `None` when the server has no MIT-SHM (a remote display): the caller falls back to
    /// plain GetImage.
    pub fn new(conn: &impl Connection, len: usize) -> Result<Option<ShmImage>, X11Error> {
        let has_shm = conn
            .shm_query_version()
            .map(|c| c.reply().is_ok())
            .unwrap_or(false);
        if !has_shm {
            return Ok(None);
        }
        // SAFETY: plain System V calls; every result is checked before use.
        unsafe {
            let id = libc::shmget(libc::IPC_PRIVATE, len, libc::IPC_CREAT | 0o600);
            if id < 0 {
                return Err(X11Error::Request(format!(
                    "shmget of {len} bytes: {}",
                    std::io::Error::last_os_error()
                )));
            }
            let ptr = libc::shmat(id, std::ptr::null(), 0);
            if ptr as isize == -1 {
                libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
                return Err(X11Error::Request(format!(
                    "shmat: {}",
                    std::io::Error::last_os_error()
                )));
            }
            let seg = conn.generate_id().map_err(X11Error::request)?;
            let attached = conn
                .shm_attach(seg, id as u32, false)
                .map_err(X11Error::request)
                .and_then(|c| c.check().map_err(X11Error::request));
            // Marked for removal now: it goes away when both we and the server detach, even if
            // this process is killed.
            libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
            if attached.is_err() {
                // The server cannot see our segment (another machine or namespace).
                libc::shmdt(ptr);
                return Ok(None);
            }
            Ok(Some(ShmImage {
                seg,
                ptr: ptr as *mut u8,
                len,
            }))
        }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as bytes(); the X server writes only during our synchronous GetImage.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `len` bytes and lives as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for ShmImage {
    fn drop(&mut self) {
        // SAFETY: detaching our own mapping once.
        unsafe {
            libc::shmdt(self.ptr as *const libc::c_void);
        }
    }
}
