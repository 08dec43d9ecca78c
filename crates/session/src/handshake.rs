//! The Hello rules, in the order a user would want to hear about them: version, token, role,
//! stream. A refusal names its counter and carries the Goodbye code and reason to send.

use framewire_proto::v1::{self, goodbye, Role};

/// Why a Hello was refused: the counter suffix, the Goodbye code and the reason sent.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub counter: &'static str,
    pub code: u16,
    pub reason: String,
}

/// What the host requires of a Hello.
#[derive(Debug, Clone, Copy)]
pub struct HelloRules<'a> {
    /// The token viewers must present, if any.
    pub token: Option<&'a str>,
    /// The host serves named streams to subscribers.
    pub has_streams: bool,
}

/// Checks a Hello against the host's rules.
pub fn check_hello(
    version: u16,
    role: Role,
    token: &str,
    stream: &str,
    rules: HelloRules<'_>,
) -> Result<(), Refusal> {
    let refuse = |counter, code, reason: String| {
        Err(Refusal {
            counter,
            code,
            reason,
        })
    };
    if version != v1::VERSION {
        return refuse(
            "version",
            goodbye::UNSUPPORTED_VERSION,
            format!(
                "protocol version {version} not supported; this server speaks {}",
                v1::VERSION
            ),
        );
    }
    if rules.token.is_some_and(|t| !token_matches(token, t)) {
        return refuse(
            "token",
            goodbye::UNAUTHORIZED,
            "wrong or missing token".into(),
        );
    }
    if role == Role::Subscriber {
        if !rules.has_streams {
            return refuse(
                "stream",
                goodbye::NO_SUCH_STREAM,
                "this server has no named streams (start it with the sensor listener)".into(),
            );
        }
        return Ok(());
    }
    if role != Role::Viewer {
        return refuse(
            "role",
            goodbye::PROTOCOL_ERROR,
            format!("role {role:?} is not served on this port"),
        );
    }
    if !(stream.is_empty() || stream == "screen") {
        return refuse(
            "stream",
            goodbye::NO_SUCH_STREAM,
            format!("no stream named {stream:?}; this server has \"screen\""),
        );
    }
    Ok(())
}

/// Constant-time comparison, so a token cannot be guessed byte by byte from response times.
pub fn token_matches(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: HelloRules<'static> = HelloRules {
        token: None,
        has_streams: false,
    };

    #[test]
    fn hello_rules() {
        let with_token = HelloRules {
            token: Some("t"),
            ..OPEN
        };
        assert_eq!(check_hello(1, Role::Viewer, "", "", OPEN), Ok(()));
        assert_eq!(
            check_hello(1, Role::Viewer, "t", "screen", with_token),
            Ok(())
        );
        let code = |r: Result<(), Refusal>| r.unwrap_err().code;
        let counter = |r: Result<(), Refusal>| r.unwrap_err().counter;
        assert_eq!(
            code(check_hello(2, Role::Viewer, "", "", OPEN)),
            goodbye::UNSUPPORTED_VERSION
        );
        assert_eq!(
            counter(check_hello(1, Role::Viewer, "x", "", with_token)),
            "token"
        );
        assert_eq!(
            counter(check_hello(1, Role::Publisher, "", "", OPEN)),
            "role"
        );
        assert_eq!(
            code(check_hello(1, Role::Viewer, "", "cam", OPEN)),
            goodbye::NO_SUCH_STREAM
        );
        assert_eq!(
            code(check_hello(1, Role::Subscriber, "", "sensor/", OPEN)),
            goodbye::NO_SUCH_STREAM
        );
        let streams = HelloRules {
            has_streams: true,
            ..OPEN
        };
        assert_eq!(
            check_hello(1, Role::Subscriber, "", "sensor/", streams),
            Ok(())
        );
    }

    #[test]
    fn token_comparison() {
        assert!(token_matches("abc", "abc"));
        assert!(!token_matches("abd", "abc"));
        assert!(!token_matches("", "abc"));
    }
}
