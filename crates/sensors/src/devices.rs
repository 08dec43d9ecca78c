//! The sensor devices connected now, so commands can reach them (`framewire ctl device all
//! REQUEST1`, the control socket's `DEVICE` verb). Each connection has a small bounded queue
//! of commands; a device that does not take them is reported, not waited for.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tokio::sync::mpsc;

use crate::lock;

/// Commands waiting for one device at most.
const QUEUE: usize = 16;

struct Entry {
    peer: SocketAddr,
    serial: Option<String>,
    location: Option<String>,
    tx: mpsc::Sender<String>,
}

#[derive(Default)]
pub struct Devices {
    map: Mutex<BTreeMap<u64, Entry>>,
    next: AtomicU64,
}

/// What sending a command did.
#[derive(Debug, PartialEq, Eq)]
pub struct Sent {
    pub matched: usize,
    /// Devices whose command queue was full (they are not reading their socket).
    pub full: usize,
}

impl Devices {
    pub fn register(&self, peer: SocketAddr) -> (u64, mpsc::Receiver<String>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(QUEUE);
        lock(&self.map).insert(
            id,
            Entry {
                peer,
                serial: None,
                location: None,
                tx,
            },
        );
        (id, rx)
    }

    pub fn identify(&self, id: u64, serial: Option<&str>, location: Option<&str>) {
        if let Some(e) = lock(&self.map).get_mut(&id) {
            if let Some(s) = serial {
                e.serial = Some(s.to_string());
            }
            if let Some(l) = location {
                e.location = Some(l.to_string());
            }
        }
    }

    pub fn unregister(&self, id: u64) {
        lock(&self.map).remove(&id);
    }

    pub fn count(&self) -> usize {
        lock(&self.map).len()
    }

    /// Queues `command` for every device `target` names: `all`, a serial number, a location
    /// or a peer address.
    pub fn send(&self, target: &str, command: &str) -> Sent {
        let map = lock(&self.map);
        let mut s = Sent {
            matched: 0,
            full: 0,
        };
        for e in map.values() {
            let hit = target.eq_ignore_ascii_case("all")
                || e.serial.as_deref() == Some(target)
                || e.location.as_deref() == Some(target)
                || e.peer.to_string() == target;
            if hit {
                s.matched += 1;
                if e.tx.try_send(command.to_string()).is_err() {
                    s.full += 1;
                }
            }
        }
        s
    }
}

/// A command a device may be sent: what the reference lists (`REQUEST1`, `EEPROM1`,
/// `PERIODIC_ON`, …) are upper-case letters, digits and `_`.
pub fn valid_command(c: &str) -> bool {
    !c.is_empty()
        && c.len() <= 32
        && c.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}
