//! Before a session exists: the host's [`Handshake`] (bytes and time in, the Hello or the
//! refusal out, with its own deadline), and the Hello rules, checked in the order a user would
//! want to hear about them: version, token, role, stream. A refusal names its counter and
//! carries the Goodbye code and reason to send.

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

/// A Hello as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub version: u16,
    pub role: Role,
    pub token: String,
    pub stream: String,
    pub caps: u32,
}

/// The host's side of a v1 connection before its Hello has been accepted: bytes in, and out
/// either the Hello (with whatever the peer sent after it still in the decoder) or the refusal
/// to send. It has a deadline: a connection that has sent no Hello by then is refused. No I/O
/// and no clock of its own; the runtime passes bytes and the time.
/// The bytes a connection's buffer starts with before its Hello. A Hello is at most a header and
/// `MAX_CONTROL_BODY` bytes, so nothing before it can hold more than that plus one read.
pub const PRE_HELLO_BUFFER: usize = 512;

pub struct Handshake {
    dec: v1::Decoder,
    deadline_us: u64,
    timeout_us: u64,
}

impl Handshake {
    /// A connection accepted at `now_us` that must send its Hello within `timeout_us`.
    pub fn new(now_us: u64, timeout_us: u64) -> Self {
        Handshake {
            // Small until a Hello is known: a connection holds little before it is admitted.
            dec: v1::Decoder::with_capacity(v1::MAX_CONTROL_BODY, PRE_HELLO_BUFFER),
            deadline_us: now_us + timeout_us,
            timeout_us,
        }
    }

    /// Bytes from the peer.
    pub fn handle_bytes(&mut self, bytes: &[u8]) {
        self.dec.feed(bytes);
    }

    /// Bytes the handshake holds (received, not yet decoded) and its buffer's capacity.
    pub fn held(&mut self) -> (usize, usize) {
        let pending = self.dec.pending();
        (pending, self.dec.buffer_mut().capacity())
    }

    /// The peer closed its side before a Hello.
    pub fn closed(&self) -> Refusal {
        protocol_error("bad_packet", "bad handshake: closed before hello".into())
    }

    /// When [`Handshake::poll`] refuses by itself if nothing has arrived.
    pub fn poll_timeout(&self) -> u64 {
        self.deadline_us
    }

    /// `None` while more bytes are needed; the Hello; or why the connection is refused.
    pub fn poll(&mut self, now_us: u64) -> Option<Result<Hello, Refusal>> {
        match self.dec.next_packet() {
            Ok(Some(v1::Packet::Hello {
                version,
                role,
                token,
                stream,
                caps,
            })) => Some(Ok(Hello {
                version,
                role,
                token,
                stream,
                caps,
            })),
            Ok(Some(other)) => {
                let kind = v1::kind_name(other.type_byte());
                Some(Err(protocol_error(
                    "not_hello",
                    format!("expected hello, got {kind}"),
                )))
            }
            Err(e) => Some(Err(protocol_error(
                "bad_packet",
                format!("bad handshake: {e}"),
            ))),
            Ok(None) if now_us >= self.deadline_us => Some(Err(protocol_error(
                "timeout",
                format!("no hello within {} s", self.timeout_us / 1_000_000),
            ))),
            Ok(None) => None,
        }
    }

    /// The decoder, holding whatever the peer sent after its Hello (for the session).
    pub fn into_decoder(self) -> v1::Decoder {
        self.dec
    }
}

fn protocol_error(counter: &'static str, reason: String) -> Refusal {
    Refusal {
        counter,
        code: goodbye::PROTOCOL_ERROR,
        reason,
    }
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
