//! The TUN devices' own drops: packets the kernel dropped on the way out of a device, before the
//! relay read them, because the device's queue ([`crate::TXQUEUELEN`]) was full. The relay
//! never sees these, so its counters cannot; the kernel counts them as the device's transmit
//! drops, read here with `ip -s link`.

use crate::cmd;
use crate::error::NetemError;

/// Packets the kernel dropped on the way out of `dev` in namespace `ns`, since it was made.
pub(crate) fn tx_dropped(ns: &str, dev: &str) -> Result<u64, NetemError> {
    let args = ["-n", ns, "-s", "link", "show", "dev", dev];
    cmd::read("ip", &args, "transmit drops", parse_tx_dropped)
}

/// The transmit `dropped` figure of `ip -s link show` output: the line after the `TX:` header,
/// in the header's `dropped` column (found by name: iproute2 versions differ in the columns).
fn parse_tx_dropped(out: &str) -> Option<u64> {
    let mut lines = out.lines();
    while let Some(line) = lines.next() {
        let head: Vec<&str> = line.split_whitespace().collect();
        if head.first() == Some(&"TX:") {
            // The header starts with "TX:", the values line does not.
            let col = head.iter().position(|&h| h == "dropped")? - 1;
            return lines.next()?.split_whitespace().nth(col)?.parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ip -s link show dev fwnetem0` in the layout iproute2 prints on this machine, with the
    /// transmit packets and drops of a `bench net` cell (a colour Mandelbrot zoom over QUIC at
    /// a queue of 500 packets): 204 274 packets passed on, 33 846 dropped.
    const IP_S_LINK: &str = "\
2: fwnetem0: <POINTOPOINT,MULTICAST,NOARP,UP,LOWER_UP> mtu 1500 qdisc pfifo_fast state UNKNOWN mode DEFAULT group default qlen 500
    link/none 
    RX:  bytes packets errors dropped  missed   mcast           
      1748822   37653      0       0       0       0 
    TX:  bytes packets errors dropped carrier collsns           
    290111512  204274      0   33846       0       0 
";

    #[test]
    fn the_transmit_drops_are_read_from_their_column() {
        assert_eq!(parse_tx_dropped(IP_S_LINK), Some(33_846));
    }

    #[test]
    fn columns_in_another_order_are_found_by_name() {
        let out = "    TX:  bytes packets dropped errors\n    10 2 7 0\n";
        assert_eq!(parse_tx_dropped(out), Some(7));
    }

    #[test]
    fn output_without_the_figure_is_none() {
        assert_eq!(parse_tx_dropped(""), None);
        assert_eq!(parse_tx_dropped("    TX:  bytes packets\n    10 2\n"), None);
        assert_eq!(parse_tx_dropped("    TX:  bytes packets dropped\n"), None);
        assert_eq!(
            parse_tx_dropped("    TX:  bytes dropped\n    10 many\n"),
            None
        );
    }
}
