//! One direction of the link: a thread that reads packets from the sending side's TUN device,
//! decides each one's fate ([`decide`]), holds the kept ones in a [`DelayQueue`] until they are
//! due, and writes them to the receiving side's TUN device.
//!
//! Reading and delivering share one thread and one `ppoll` (nanosecond timeout, 1 ns timer
//! slack): it sleeps until a packet arrives or the earliest queued one is due, whichever is
//! first. No lock or hand-off sits between the two, and the order of events is the order of
//! the thread's loop.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::counters::Counters;
use crate::delay_queue::{DelayQueue, Full};
use crate::error::NetemError;
use crate::impairment::{decide, Impairment, Verdict};
use crate::rng::SplitMix64;
use crate::tun::Tun;

/// Packets read per wake-up before due packets get their turn again, so a flood in cannot
/// hold back deliveries by more than this many reads.
const READ_BATCH: usize = 64;

/// Larger than any packet a TUN device hands over (the IPv4 maximum).
const BUF_BYTES: usize = 65_536;

/// What the link and its relay thread share for one direction.
#[derive(Debug)]
pub(crate) struct Shared {
    pub counters: Counters,
    settings: Mutex<Impairment>,
    /// Bumped on every change of `settings`, so the relay looks at the mutex only then.
    generation: AtomicU64,
}

impl Shared {
    pub fn new(imp: Impairment) -> Shared {
        Shared {
            counters: Counters::default(),
            settings: Mutex::new(imp),
            generation: AtomicU64::new(0),
        }
    }

    pub fn set(&self, imp: Impairment) {
        *self.settings.lock().unwrap_or_else(|p| p.into_inner()) = imp;
        self.generation.fetch_add(1, Ordering::Release);
    }

    pub fn get(&self) -> Impairment {
        *self.settings.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Wakes every relay thread for good (an eventfd that stays readable once written).
#[derive(Debug)]
pub(crate) struct Stop {
    fd: OwnedFd,
}

impl Stop {
    pub fn new() -> Result<Stop, NetemError> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(NetemError::last_os("creating an eventfd"));
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        Ok(Stop {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    pub fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64. A failure could only be a full counter,
        // which would already be readable.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

/// One direction's thread, with what it needs.
pub(crate) struct Relay {
    pub label: String,
    pub from: Arc<Tun>,
    pub to: Arc<Tun>,
    pub shared: Arc<Shared>,
    pub stop: Arc<Stop>,
    /// XORed into the seed, so the two directions draw different streams from one seed.
    pub salt: u64,
}

impl Relay {
    pub fn spawn(self) -> Result<JoinHandle<()>, NetemError> {
        std::thread::Builder::new()
            .name(format!("netem {}", self.label))
            .spawn(move || self.run())
            .map_err(|e| NetemError::io("starting a relay thread", e))
    }

    fn run(self) {
        // Wake-ups on time to the microsecond rather than the default 50 µs slack.
        // SAFETY: prctl with an integer argument; failure only costs precision.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
        let c = &self.shared.counters;
        let mut generation = self.shared.generation.load(Ordering::Acquire);
        let mut imp = self.shared.get();
        let mut rng = SplitMix64::new(imp.seed ^ self.salt);
        let mut queue = DelayQueue::default();
        let mut buf = vec![0u8; BUF_BYTES];
        let mut logged_write_error = false;
        loop {
            let now = Instant::now();
            while let Some(packet) = queue.pop_due(now) {
                match self.to.send(&packet) {
                    Ok(_) => {
                        Counters::add(&c.packets_out, 1);
                        Counters::add(&c.bytes_out, packet.len() as u64);
                    }
                    Err(e) => {
                        Counters::add(&c.write_errors, 1);
                        if !logged_write_error {
                            logged_write_error = true;
                            tracing::warn!(
                                "netem {}: writing to {} failed: {e} (counted in write_errors; \
                                 further failures are not logged)",
                                self.label,
                                self.to.name()
                            );
                        }
                    }
                }
            }
            c.queued.store(queue.len() as u64, Ordering::Relaxed);

            let timeout = queue
                .next_due()
                .map(|due| due.saturating_duration_since(now));
            let (readable, stopped) = match wait(self.from.fd(), self.stop.fd.as_raw_fd(), timeout)
            {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!("netem {}: poll failed: {e}", self.label);
                    std::thread::sleep(Duration::from_millis(10));
                    (false, false)
                }
            };
            if stopped {
                return;
            }
            if !readable {
                continue;
            }
            for _ in 0..READ_BATCH {
                let n = match self.from.recv(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        tracing::warn!(
                            "netem {}: reading from {} failed: {e}",
                            self.label,
                            self.from.name()
                        );
                        std::thread::sleep(Duration::from_millis(10));
                        break;
                    }
                };
                let arrived = Instant::now();
                Counters::add(&c.packets_in, 1);
                Counters::add(&c.bytes_in, n as u64);

                let g = self.shared.generation.load(Ordering::Acquire);
                if g != generation {
                    generation = g;
                    let new = self.shared.get();
                    if new.seed != imp.seed {
                        rng = SplitMix64::new(new.seed ^ self.salt);
                    }
                    imp = new;
                }

                let mut enqueue = |delay: Duration, data: Vec<u8>| {
                    if let Err(Full) = queue.push(arrived + delay, data) {
                        Counters::add(&c.queue_full, 1);
                    }
                };
                match decide(&imp, &mut rng) {
                    Verdict::Lost => Counters::add(&c.lost, 1),
                    Verdict::Once(d) => enqueue(d, buf[..n].to_vec()),
                    Verdict::Twice(d1, d2) => {
                        Counters::add(&c.duplicated, 1);
                        enqueue(d1, buf[..n].to_vec());
                        enqueue(d2, buf[..n].to_vec());
                    }
                }
                c.queued.store(queue.len() as u64, Ordering::Relaxed);
            }
        }
    }
}

/// Sleeps until `data_fd` or `stop_fd` is readable or `timeout` passes (`None`: no timeout).
/// Returns (data readable, stop signalled).
fn wait(data_fd: i32, stop_fd: i32, timeout: Option<Duration>) -> io::Result<(bool, bool)> {
    let mut fds = [
        libc::pollfd {
            fd: data_fd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop_fd,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `fds` and `ts` are live for the call; a null timeout means wait indefinitely.
    let r = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, ts_ptr, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok((false, false));
        }
        return Err(e);
    }
    let ready = |f: &libc::pollfd| f.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0;
    Ok((ready(&fds[0]), ready(&fds[1])))
}
