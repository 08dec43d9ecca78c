//! Rate limits with the kernel's token bucket filter (`tbf`) on the sending side's TUN device:
//! packets queue in the sender's own stack, so TCP sees real back-pressure, and the relay reads
//! them at the shaped rate.

use crate::cmd;
use crate::error::NetemError;

/// The tbf queue holds at most this much time's worth of packets at the rate (tbf's `latency`
/// turns into a byte limit of rate × latency + burst); beyond it, tbf drops. 100 ms keeps the
/// queue bounded without making a shaped link a bufferbloated one.
pub const LATENCY_MS: u64 = 100;

/// Smallest bucket: two full-size (1500-byte) packets, so an MTU-sized packet always fits.
pub const MIN_BURST_BYTES: u64 = 3000;

/// The bucket size for `kbit`: 10 ms worth of the rate (a sender can run ahead of the rate by
/// 10 ms, as on a real link with a small buffer), at least [`MIN_BURST_BYTES`].
pub fn burst_bytes(kbit: u64) -> u64 {
    // kbit/s × 1000 / 8 = bytes/s; / 100 = bytes per 10 ms.
    (kbit.saturating_mul(1000) / 8 / 100).max(MIN_BURST_BYTES)
}

/// The `tc` arguments that set (or replace) the limit on `dev` in namespace `ns`.
pub fn tbf_args(ns: &str, dev: &str, kbit: u64) -> Vec<String> {
    [
        "-n",
        ns,
        "qdisc",
        "replace",
        "dev",
        dev,
        "root",
        "tbf",
        "rate",
        &format!("{kbit}kbit"),
        "burst",
        &burst_bytes(kbit).to_string(),
        "latency",
        &format!("{LATENCY_MS}ms"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Sets the limit on `dev` in `ns` to `kbit`, or removes it for `None` (`had_limit` says
/// whether one was set, since deleting a qdisc that is not there is an error).
pub fn apply(ns: &str, dev: &str, kbit: Option<u64>, had_limit: bool) -> Result<(), NetemError> {
    match kbit {
        Some(kbit) => {
            let args = tbf_args(ns, dev, kbit);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            cmd::run("tc", &args)?;
        }
        None if had_limit => {
            cmd::run("tc", &["-n", ns, "qdisc", "del", "dev", dev, "root"])?;
        }
        None => {}
    }
    Ok(())
}

/// Packets the rate limit on `dev` in `ns` dropped since it was set: its queue
/// ([`LATENCY_MS`] at the rate) was full. The kernel counts them on the qdisc, not the device,
/// read here with `tc -s qdisc`.
pub(crate) fn dropped(ns: &str, dev: &str) -> Result<u64, NetemError> {
    let args = ["-n", ns, "-s", "qdisc", "show", "dev", dev];
    cmd::read("tc", &args, "the tbf queue's drops", parse_dropped)
}

/// The `dropped` figure of the tbf qdisc in `tc -s qdisc show` output (`Sent … (dropped N,
/// overlimits …)` on the line after the qdisc's own).
fn parse_dropped(out: &str) -> Option<u64> {
    let mut lines = out.lines().skip_while(|l| !l.starts_with("qdisc tbf"));
    lines.next()?;
    let stats = lines.next()?;
    let (_, rest) = stats.split_once("(dropped ")?;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tc -s qdisc show dev fwnetem0` as this machine's iproute2 prints it after a cell of
    /// glxgears in colour at 10 Mbit/s.
    const TC_S_QDISC: &str = "\
qdisc tbf 8001: root refcnt 2 rate 10Mbit burst 12500b lat 100ms 
 Sent 12081934 bytes 9311 pkt (dropped 57, overlimits 14022 requeues 0) 
 backlog 0b 0p requeues 0
";

    #[test]
    fn the_tbf_queue_drops_are_read() {
        assert_eq!(parse_dropped(TC_S_QDISC), Some(57));
        assert_eq!(
            parse_dropped("qdisc noqueue 0: root refcnt 2\n Sent 0 bytes\n"),
            None
        );
    }

    #[test]
    fn burst_is_ten_ms_of_rate_with_a_floor() {
        assert_eq!(burst_bytes(10_000), 12_500);
        assert_eq!(burst_bytes(100_000), 125_000);
        assert_eq!(burst_bytes(1_000), MIN_BURST_BYTES);
        assert_eq!(burst_bytes(u64::MAX), u64::MAX / 8 / 100);
    }

    #[test]
    fn args_spell_a_tbf_replace() {
        assert_eq!(
            tbf_args("ns1", "fw0", 10_000).join(" "),
            "-n ns1 qdisc replace dev fw0 root tbf rate 10000kbit burst 12500 latency 100ms"
        );
    }
}
