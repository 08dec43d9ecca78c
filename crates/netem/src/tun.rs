//! A TUN device (layer 3, `IFF_TUN | IFF_NO_PI`): the file descriptor reads the IP packets the
//! kernel sends out of the device and injects the ones written to it as if received.
//!
//! No vnet header is asked for, so the device offers no segmentation offload and the kernel
//! hands over packets already cut to the MTU, with checksums computed.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

use crate::error::NetemError;

/// `struct ifreq` as TUNSETIFF reads it: the name, then the flags (a short) at the start of
/// the 24-byte union.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

#[derive(Debug)]
pub struct Tun {
    file: File,
    name: String,
}

impl Tun {
    /// Creates the device `name` in the calling thread's network namespace (run it through
    /// [`in_namespace`](crate::in_namespace)). The device lives as long as the descriptor and
    /// stays in that namespace, whichever thread uses it later. The descriptor is nonblocking.
    pub fn create(name: &str) -> Result<Tun, NetemError> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(NetemError::Config(format!(
                "TUN device name {name:?}: 1–{} bytes",
                libc::IFNAMSIZ - 1
            )));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(|e| NetemError::io("opening /dev/net/tun", e))?;
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
            _pad: [0; 22],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: TUNSETIFF reads and writes a `struct ifreq`, which `IfReq` lays out (40
        // bytes on Linux); `req` outlives the call.
        if unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut req as *mut IfReq) } < 0 {
            return Err(NetemError::last_os(format!("creating TUN device {name}")));
        }
        Ok(Tun {
            file,
            name: name.to_string(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// One packet into `buf`; `WouldBlock` when none waits.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for writes of its length.
        let n = unsafe { libc::read(self.fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Hands one packet to the kernel as received on this device.
    pub fn send(&self, packet: &[u8]) -> io::Result<usize> {
        // SAFETY: `packet` is valid for reads of its length.
        let n = unsafe { libc::write(self.fd(), packet.as_ptr().cast(), packet.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

const _: () = assert!(std::mem::size_of::<IfReq>() == 40);
