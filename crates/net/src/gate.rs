//! One listener's connection limit. Every connection holds a [`Permit`] until it ends; when a
//! listener is full a new connection is refused at once (closed, counted under
//! `connections_refused.<listener>_full`, logged at most once a second), before it can cost
//! anything but its accept.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use framewire_telemetry::{counter_set, Counter, Family, SharedLogLimit};
use tokio::net::{TcpListener, TcpStream};
use tracing::warn;

use crate::allow::AllowList;

counter_set! {
    /// What the listeners count, by listener.
    pub struct NetCounters {
        /// Connections accepted and admitted (`v1`, `daylight`, `http`, `sensor`, `touch`).
        connections_admitted: Family,
        /// Connections closed at once: `<listener>_full` (at its limit) or
        /// `<listener>_address` (not on its allowlist).
        connections_refused: Family,
        /// accept() failures (out of descriptors and the like), retried after 50 ms.
        listener_accept_errors: Counter,
    }
}

/// One listener's limit and its open connections.
pub struct Gate {
    /// The listener's name in counters and logs.
    pub name: &'static str,
    max: usize,
    open: AtomicUsize,
    allow: Option<AllowList>,
    counters: Arc<NetCounters>,
    full_reason: &'static str,
    address_reason: &'static str,
    log: SharedLogLimit,
}

/// A connection's place under its listener's limit, given back when dropped.
pub struct Permit(Arc<Gate>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A connection that got in.
pub struct Admitted {
    pub sock: TcpStream,
    pub peer: SocketAddr,
    pub permit: Permit,
}

impl Gate {
    /// A limit of `max` connections (at least 1) for the listener `name`; only addresses on
    /// `allow` get in when it is given.
    pub fn new(
        name: &'static str,
        max: usize,
        allow: Option<AllowList>,
        counters: Arc<NetCounters>,
    ) -> Arc<Gate> {
        // Family reasons are static: the counter names are fixed by the code, not the input.
        let (full_reason, address_reason) = reasons(name);
        Arc::new(Gate {
            name,
            max: max.max(1),
            open: AtomicUsize::new(0),
            allow,
            counters,
            full_reason,
            address_reason,
            log: SharedLogLimit::default(),
        })
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Connections holding a permit now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// A permit, or `None` (counted) when the listener is full.
    pub fn try_enter(self: &Arc<Self>) -> Option<Permit> {
        let mut n = self.open.load(Ordering::Acquire);
        loop {
            if n >= self.max {
                self.counters.connections_refused.inc(self.full_reason);
                return None;
            }
            match self
                .open
                .compare_exchange_weak(n, n + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(Permit(self.clone())),
                Err(now) => n = now,
            }
        }
    }

    /// The next connection this listener admits: one from an allowed address while it is
    /// under its limit. Others are closed as they arrive, counted and logged (at most a line
    /// a second).
    pub async fn accept(self: &Arc<Self>, l: &TcpListener) -> Admitted {
        loop {
            let (sock, peer) =
                crate::listen::accept(l, &self.counters.listener_accept_errors).await;
            if let Some(allow) = &self.allow {
                if !allow.permits(peer.ip()) {
                    self.counters.connections_refused.inc(self.address_reason);
                    self.log_refusal(peer, "its address is not on the allowlist");
                    continue;
                }
            }
            match self.try_enter() {
                Some(permit) => {
                    self.counters.connections_admitted.inc(self.name);
                    return Admitted { sock, peer, permit };
                }
                None => self.log_refusal(peer, "the listener is at its connection limit"),
            }
        }
    }

    fn log_refusal(&self, peer: SocketAddr, why: &str) {
        if let Some(held) = self.log.allow() {
            warn!(listener = self.name, %peer, max = self.max, held, "connection refused: {why}");
        }
    }
}

fn reasons(name: &'static str) -> (&'static str, &'static str) {
    match name {
        "v1" => ("v1_full", "v1_address"),
        "daylight" => ("daylight_full", "daylight_address"),
        "http" => ("http_full", "http_address"),
        "sensor" => ("sensor_full", "sensor_address"),
        "touch" => ("touch_full", "touch_address"),
        _ => ("other_full", "other_address"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_gate_refuses_and_counts_and_a_dropped_permit_makes_room() {
        let c = Arc::new(NetCounters::default());
        let g = Gate::new("touch", 2, None, c.clone());
        let a = g.try_enter().unwrap();
        let _b = g.try_enter().unwrap();
        assert!(g.try_enter().is_none());
        assert!(g.try_enter().is_none());
        assert_eq!(c.connections_refused.get("touch_full"), 2);
        assert_eq!(g.open(), 2);
        drop(a);
        assert_eq!(g.open(), 1);
        assert!(g.try_enter().is_some());
    }

    #[tokio::test]
    async fn connections_beyond_the_limit_or_off_the_allowlist_are_closed_at_once() {
        use tokio::io::AsyncReadExt;
        let c = Arc::new(NetCounters::default());
        let l = crate::listen(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        let addr = l.local_addr().unwrap();
        let g = Gate::new("sensor", 1, None, c.clone());
        let g2 = g.clone();
        let kept = tokio::spawn(async move {
            let first = g2.accept(&l).await;
            // Hold the first; the next admitted one only comes after it is dropped.
            let second =
                tokio::time::timeout(std::time::Duration::from_millis(300), g2.accept(&l)).await;
            assert!(
                second.is_err(),
                "a second connection got in while the first was open"
            );
            drop(first);
            g2.accept(&l).await.peer
        });
        let _one = tokio::net::TcpStream::connect(addr).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let mut two = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut b = [0u8; 1];
        // Refused: closed by the server without a byte.
        let n = tokio::time::timeout(std::time::Duration::from_secs(5), two.read(&mut b))
            .await
            .expect("the refused connection was closed")
            .unwrap_or(0);
        assert_eq!(n, 0);
        assert_eq!(c.connections_refused.get("sensor_full"), 1);
        // After the window in which the first is held (a connection made inside it is refused).
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        let three = tokio::net::TcpStream::connect(addr).await.unwrap();
        let peer = kept.await.unwrap();
        assert_eq!(peer, three.local_addr().unwrap());
        assert_eq!(c.connections_admitted.get("sensor"), 2);

        let deny = AllowList::parse("10.0.0.0/8").unwrap();
        let l = crate::listen(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        let addr = l.local_addr().unwrap();
        let g = Gate::new("sensor", 10, Some(deny), c.clone());
        tokio::spawn(async move { g.accept(&l).await });
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let n = tokio::time::timeout(std::time::Duration::from_secs(5), s.read(&mut b))
            .await
            .expect("the connection off the allowlist was closed")
            .unwrap_or(0);
        assert_eq!(n, 0);
        assert_eq!(c.connections_refused.get("sensor_address"), 1);
    }
}
