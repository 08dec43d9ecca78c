/// Which streams a subscriber wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// Exactly this stream.
    Exact(String),
    /// Every stream whose name starts with this (`sensor/`).
    Prefix(String),
    All,
}

impl Filter {
    /// `*` or empty: all; ending in `/` or `*`: a prefix (`sensor/`, `thermal/room*`); else one
    /// stream.
    pub fn parse(s: &str) -> Filter {
        let s = s.trim();
        if s.is_empty() || s == "*" {
            Filter::All
        } else if let Some(p) = s.strip_suffix('*') {
            Filter::Prefix(p.to_string())
        } else if s.ends_with('/') {
            Filter::Prefix(s.to_string())
        } else {
            Filter::Exact(s.to_string())
        }
    }

    pub fn matches(&self, stream: &str) -> bool {
        match self {
            Filter::Exact(n) => n == stream,
            Filter::Prefix(p) => stream.starts_with(p.as_str()),
            Filter::All => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_match() {
        assert_eq!(Filter::parse("*"), Filter::All);
        assert_eq!(Filter::parse(""), Filter::All);
        let p = Filter::parse("sensor/");
        assert!(p.matches("sensor/room_1") && !p.matches("thermal/room_1") && !p.matches("sensor"));
        let q = Filter::parse("thermal/room*");
        assert!(q.matches("thermal/room_9") && !q.matches("thermal/hall"));
        let e = Filter::parse("sensor/a");
        assert!(e.matches("sensor/a") && !e.matches("sensor/ab"));
    }
}
