//! The link: two namespaces, a TUN device in each with a /30 between them, a relay thread per
//! direction, and tbf where a direction has a rate. Dropping it takes all of that down.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::cmd;
use crate::counters::DirectionCounters;
use crate::error::NetemError;
use crate::impairment::Impairment;
use crate::namespace::{in_namespace, Namespace};
use crate::relay::{Relay, Shared, Stop};
use crate::shaper;
use crate::tun::Tun;

/// The TUN device's name in each namespace (each namespace has its own, so one name serves).
pub const TUN_NAME: &str = "fwnetem0";

/// The MTU of both TUN devices.
pub const MTU: u32 = 1500;
/// Packets each TUN device holds for the relay to read (its txqueuelen), as many as the
/// relay's delay queue ([`crate::QUEUE_MAX_PACKETS`]). The relay is a program: on two busy
/// cores it is sometimes not running when a burst arrives, where a real link's wire would be.
/// At the kernel's default of 500 the device dropped what it could not hold. Colour frames of
/// a Mandelbrot zoom (1.7 MB, 1 200 packets, each sent in one burst by QUIC) then lost about
/// 14 % of their packets on a link set to lose none; TCP lost 508 packets in a cell with the
/// same settings (BENCHMARKS.md, "The emulated link's own drops").
pub const TXQUEUELEN: u32 = crate::QUEUE_MAX_PACKETS as u32;

/// Seed salts of the two directions (B→A's is an arbitrary odd constant), so one seed in both
/// directions does not lose the same packet numbers both ways.
const SALT_A_TO_B: u64 = 0;
const SALT_B_TO_A: u64 = 0x5851_F42D_4C95_7F2D;

/// What to build.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// Name of namespace A (created; an error if it exists).
    pub a: String,
    /// Name of namespace B.
    pub b: String,
    /// What happens to packets from A to B.
    pub a_to_b: Impairment,
    /// What happens to packets from B to A.
    pub b_to_a: Impairment,
    /// A /30 network (its last two bits zero): A gets .1, B gets .2.
    pub subnet: Ipv4Addr,
}

impl LinkConfig {
    /// A perfect link between namespaces `a` and `b` on 10.77.0.0/30.
    pub fn new(a: impl Into<String>, b: impl Into<String>) -> LinkConfig {
        LinkConfig {
            a: a.into(),
            b: b.into(),
            a_to_b: Impairment::default(),
            b_to_a: Impairment::default(),
            subnet: Ipv4Addr::new(10, 77, 0, 0),
        }
    }

    /// A perfect link between namespaces named `fw-<tag>-a-<pid>-<n>` and `fw-<tag>-b-<pid>-<n>`,
    /// unique within this process and among processes running at the same time.
    pub fn unique(tag: &str) -> LinkConfig {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        LinkConfig::new(
            format!("fw-{tag}-a-{pid}-{n}"),
            format!("fw-{tag}-b-{pid}-{n}"),
        )
    }

    /// The same link with the same impairment both ways.
    pub fn both_ways(mut self, imp: Impairment) -> LinkConfig {
        self.a_to_b = imp;
        self.b_to_a = imp;
        self
    }

    fn addrs(&self) -> Result<(Ipv4Addr, Ipv4Addr), NetemError> {
        let base = u32::from(self.subnet);
        if base & 3 != 0 {
            return Err(NetemError::Config(format!(
                "subnet {} is not the start of a /30 (its last two bits must be zero)",
                self.subnet
            )));
        }
        Ok((Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2)))
    }
}

/// A running emulated link. Dropping it stops the relay and deletes both namespaces.
pub struct Link {
    relays: Vec<JoinHandle<()>>,
    stop: Arc<Stop>,
    a_to_b: Arc<Shared>,
    b_to_a: Arc<Shared>,
    /// The rates in force (A→B, B→A), to know when tc must change.
    rates: Mutex<(Option<u64>, Option<u64>)>,
    addr_a: Ipv4Addr,
    addr_b: Ipv4Addr,
    // Dropped in this order, after the relays have stopped: the devices, then the namespaces.
    _tun_a: Arc<Tun>,
    _tun_b: Arc<Tun>,
    ns_a: Namespace,
    ns_b: Namespace,
}

impl Link {
    pub fn start(cfg: LinkConfig) -> Result<Link, NetemError> {
        cfg.a_to_b.validate()?;
        cfg.b_to_a.validate()?;
        let (addr_a, addr_b) = cfg.addrs()?;
        if cfg.a == cfg.b {
            return Err(NetemError::Config(format!(
                "both namespaces are named {:?}",
                cfg.a
            )));
        }
        let ns_a = Namespace::create(&cfg.a)?;
        let ns_b = Namespace::create(&cfg.b)?;
        let tun_a = Arc::new(setup_side(&ns_a, addr_a)?);
        let tun_b = Arc::new(setup_side(&ns_b, addr_b)?);
        shaper::apply(ns_a.name(), TUN_NAME, cfg.a_to_b.rate_kbit, false)?;
        shaper::apply(ns_b.name(), TUN_NAME, cfg.b_to_a.rate_kbit, false)?;

        let mut link = Link {
            relays: Vec::new(),
            stop: Arc::new(Stop::new()?),
            a_to_b: Arc::new(Shared::new(cfg.a_to_b)),
            b_to_a: Arc::new(Shared::new(cfg.b_to_a)),
            rates: Mutex::new((cfg.a_to_b.rate_kbit, cfg.b_to_a.rate_kbit)),
            addr_a,
            addr_b,
            _tun_a: tun_a.clone(),
            _tun_b: tun_b.clone(),
            ns_a,
            ns_b,
        };
        // On an error here, dropping `link` stops the thread already started.
        for (label, from, to, shared, salt) in [
            ("a>b", &tun_a, &tun_b, &link.a_to_b, SALT_A_TO_B),
            ("b>a", &tun_b, &tun_a, &link.b_to_a, SALT_B_TO_A),
        ] {
            let relay = Relay {
                label: label.to_string(),
                from: from.clone(),
                to: to.clone(),
                shared: shared.clone(),
                stop: link.stop.clone(),
                salt,
            };
            let handle = relay.spawn()?;
            link.relays.push(handle);
        }
        tracing::debug!(
            "netem: link {} ({addr_a}) <-> {} ({addr_b}) up",
            link.ns_a.name(),
            link.ns_b.name()
        );
        Ok(link)
    }

    /// A's address, on its TUN device.
    pub fn addr_a(&self) -> Ipv4Addr {
        self.addr_a
    }

    /// B's address, on its TUN device.
    pub fn addr_b(&self) -> Ipv4Addr {
        self.addr_b
    }

    /// Name of namespace A (for [`in_namespace`](crate::in_namespace)).
    pub fn a(&self) -> &str {
        self.ns_a.name()
    }

    /// Name of namespace B.
    pub fn b(&self) -> &str {
        self.ns_b.name()
    }

    /// Counters of (A→B, B→A), as of now.
    pub fn counters(&self) -> (DirectionCounters, DirectionCounters) {
        (
            self.a_to_b.counters.snapshot(),
            self.b_to_a.counters.snapshot(),
        )
    }

    /// Packets each side's TUN device dropped before the relay read them (A→B, B→A), since
    /// the link was made: its queue ([`TXQUEUELEN`]) was full. These never reach the relay,
    /// so [`Link::counters`] does not count them.
    pub fn device_drops(&self) -> Result<(u64, u64), NetemError> {
        Ok((
            crate::device::tx_dropped(self.ns_a.name(), TUN_NAME)?,
            crate::device::tx_dropped(self.ns_b.name(), TUN_NAME)?,
        ))
    }

    /// Packets each direction's rate limit dropped (A→B, B→A; 0 where it has none) since it
    /// was set: its tbf queue, [`crate::TBF_LATENCY_MS`] at the rate, was full. A sender that
    /// runs ahead of the rate by more than that loses packets there, as on a real link.
    pub fn shaper_drops(&self) -> Result<(u64, u64), NetemError> {
        let rates = *self.rates.lock().unwrap_or_else(|p| p.into_inner());
        let read = |ns: &str, rate: Option<u64>| match rate {
            Some(_) => shaper::dropped(ns, TUN_NAME),
            None => Ok(0),
        };
        Ok((read(self.a(), rates.0)?, read(self.b(), rates.1)?))
    }

    /// The impairments in force (A→B, B→A).
    pub fn impairment(&self) -> (Impairment, Impairment) {
        (self.a_to_b.get(), self.b_to_a.get())
    }

    /// Changes both directions' impairments while the link runs (a loss burst, say). Packets
    /// already queued keep the delay they were given. A direction's random stream goes on
    /// unless its seed changes, in which case it restarts from the new seed. A changed rate
    /// re-runs `tc`, whose failure is the only error.
    pub fn set_impairment(&self, a_to_b: Impairment, b_to_a: Impairment) -> Result<(), NetemError> {
        a_to_b.validate()?;
        b_to_a.validate()?;
        let mut rates = self.rates.lock().unwrap_or_else(|p| p.into_inner());
        if rates.0 != a_to_b.rate_kbit {
            shaper::apply(self.a(), TUN_NAME, a_to_b.rate_kbit, rates.0.is_some())?;
            rates.0 = a_to_b.rate_kbit;
        }
        if rates.1 != b_to_a.rate_kbit {
            shaper::apply(self.b(), TUN_NAME, b_to_a.rate_kbit, rates.1.is_some())?;
            rates.1 = b_to_a.rate_kbit;
        }
        self.a_to_b.set(a_to_b);
        self.b_to_a.set(b_to_a);
        Ok(())
    }

    /// The command prefix that runs a program in namespace A: `ip netns exec <a>`.
    pub fn exec_a(&self) -> Vec<String> {
        exec_prefix(self.a())
    }

    /// The command prefix that runs a program in namespace B.
    pub fn exec_b(&self) -> Vec<String> {
        exec_prefix(self.b())
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop.signal();
        for handle in self.relays.drain(..) {
            if handle.join().is_err() {
                tracing::warn!("netem: a relay thread panicked");
            }
        }
    }
}

fn exec_prefix(ns: &str) -> Vec<String> {
    ["ip", "netns", "exec", ns]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Creates the TUN device in `ns` and gives it `addr`/30, the MTU, and `up` (and `lo` too).
fn setup_side(ns: &Namespace, addr: Ipv4Addr) -> Result<Tun, NetemError> {
    let tun = in_namespace(ns.name(), || {
        let tun = Tun::create(TUN_NAME)?;
        // No IPv6 on the link: router and neighbour solicitations would otherwise cross the
        // relay, draw from its random stream, and show up in the counters. (Where the kernel
        // has no IPv6 the file does not exist, which is just as good.) The path resolves in
        // this thread's namespace.
        let knob = format!("/proc/sys/net/ipv6/conf/{TUN_NAME}/disable_ipv6");
        match std::fs::write(&knob, "1") {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(NetemError::io(format!("writing {knob}"), e))
            }
            _ => {}
        }
        Ok(tun)
    })??;
    let n = ns.name();
    let cidr = format!("{addr}/30");
    let mtu = MTU.to_string();
    cmd::run("ip", &["-n", n, "link", "set", "dev", "lo", "up"])?;
    cmd::run("ip", &["-n", n, "addr", "add", &cidr, "dev", TUN_NAME])?;
    let qlen = TXQUEUELEN.to_string();
    cmd::run(
        "ip",
        &[
            "-n",
            n,
            "link",
            "set",
            "dev",
            TUN_NAME,
            "mtu",
            &mtu,
            "txqueuelen",
            &qlen,
            "up",
        ],
    )?;
    Ok(tun)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_come_from_the_subnet() {
        let mut cfg = LinkConfig::new("x", "y");
        assert_eq!(
            cfg.addrs().unwrap(),
            (Ipv4Addr::new(10, 77, 0, 1), Ipv4Addr::new(10, 77, 0, 2))
        );
        cfg.subnet = Ipv4Addr::new(10, 1, 2, 5);
        assert!(cfg.addrs().is_err());
    }

    #[test]
    fn unique_names_differ() {
        let (x, y) = (LinkConfig::unique("t"), LinkConfig::unique("t"));
        assert_ne!(x.a, y.a);
        assert_ne!(x.a, x.b);
    }
}
