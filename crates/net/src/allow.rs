//! Which addresses a listener admits: a list of networks (`10.0.0.0/24,192.168.1.7`), parsed
//! with `ipnet`. `with_loopback` adds the machine's own addresses.

use std::net::IpAddr;

use ipnet::IpNet;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowList(Vec<IpNet>);

impl AllowList {
    /// Comma-separated networks (`10.0.0.0/24`) or single addresses (`10.0.0.7`).
    pub fn parse(s: &str) -> Result<AllowList, String> {
        let mut nets = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let net = match part.parse::<IpNet>() {
                Ok(n) => n,
                Err(_) => match part.parse::<IpAddr>() {
                    Ok(a) => IpNet::from(a),
                    Err(_) => {
                        return Err(format!(
                            "{part:?} is not an address or a network (like 10.0.0.0/24)"
                        ))
                    }
                },
            };
            nets.push(net.trunc());
        }
        if nets.is_empty() {
            return Err("an empty allowlist would admit nobody; name at least one network".into());
        }
        Ok(AllowList(nets))
    }

    /// This list and loopback (the machine's own processes, like a local load test).
    pub fn with_loopback(mut self) -> AllowList {
        self.0.push("127.0.0.0/8".parse().expect("a network"));
        self.0.push("::1/128".parse().expect("a network"));
        self
    }

    pub fn permits(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            // An IPv4 peer on an IPv6 socket.
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        self.0.iter().any(|n| n.contains(&ip))
    }
}

impl std::fmt::Display for AllowList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s: Vec<String> = self.0.iter().map(|n| n.to_string()).collect();
        f.write_str(&s.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn networks_and_addresses() {
        let a = AllowList::parse("10.1.2.0/24, 192.168.1.7,fd00::/8").unwrap();
        assert!(a.permits(ip("10.1.2.200")));
        assert!(!a.permits(ip("10.1.3.1")));
        assert!(a.permits(ip("192.168.1.7")));
        assert!(!a.permits(ip("192.168.1.8")));
        assert!(a.permits(ip("fd12::1")));
        assert!(
            a.permits(ip("::ffff:10.1.2.3")),
            "IPv4-mapped peers match IPv4 networks"
        );
        assert!(!a.permits(ip("127.0.0.1")) && !a.permits(ip("::1")));
        assert_eq!(a.to_string(), "10.1.2.0/24,192.168.1.7/32,fd00::/8");
        let a = a.with_loopback();
        assert!(a.permits(ip("127.0.0.1")) && a.permits(ip("::1")));
        assert!(AllowList::parse("").is_err());
        assert!(AllowList::parse("10.0.0.0/33")
            .unwrap_err()
            .contains("10.0.0.0/33"));
        assert!(AllowList::parse("room1").is_err());
    }
}
