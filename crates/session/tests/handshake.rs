//! The host's side of a connection before its Hello is accepted, on a fake clock: a Hello in
//! pieces, what follows it kept for the session, refusals for a wrong first packet, garbage and
//! silence, and the rules applied to what arrived. Nothing sleeps.

use framewire_proto::v1::{self, goodbye, Packet, Role};
use framewire_session::{check_hello, Handshake, Hello, HelloRules};

const TIMEOUT: u64 = 5_000_000;

fn hello(token: &str, role: Role, caps: u32) -> Vec<u8> {
    Packet::Hello {
        version: v1::VERSION,
        role,
        token: token.into(),
        stream: "screen".into(),
        caps,
    }
    .to_bytes()
    .to_vec()
}

#[test]
fn a_hello_in_pieces_then_what_follows_it_stays_for_the_session() {
    let mut h = Handshake::new(1_000, TIMEOUT);
    let mut bytes = hello("secret-token", Role::Viewer, 0b1_0001);
    let ping = Packet::Ping { id: 7, sent_us: 42 }.to_bytes();
    bytes.extend_from_slice(&ping);
    for b in &bytes[..5] {
        h.handle_bytes(&[*b]);
        assert!(h.poll(2_000).is_none(), "a Hello is not complete yet");
    }
    h.handle_bytes(&bytes[5..]);
    let got = h.poll(3_000).expect("a whole Hello").expect("a Hello");
    assert_eq!(
        got,
        Hello {
            version: v1::VERSION,
            role: Role::Viewer,
            token: "secret-token".into(),
            stream: "screen".into(),
            caps: 0b1_0001,
        }
    );
    let rules = HelloRules {
        token: Some("secret-token"),
        has_streams: false,
    };
    assert!(check_hello(got.version, got.role, &got.token, &got.stream, rules).is_ok());
    let mut dec = h.into_decoder();
    assert_eq!(
        dec.next_packet().unwrap(),
        Some(Packet::Ping { id: 7, sent_us: 42 }),
        "the packet behind the Hello is still there"
    );
}

#[test]
fn silence_is_refused_at_the_deadline_and_not_before() {
    let mut h = Handshake::new(1_000, TIMEOUT);
    assert_eq!(h.poll_timeout(), 1_000 + TIMEOUT);
    assert!(h.poll(1_000 + TIMEOUT - 1).is_none());
    let r = h.poll(1_000 + TIMEOUT).unwrap().unwrap_err();
    assert_eq!((r.counter, r.code), ("timeout", goodbye::PROTOCOL_ERROR));
    assert_eq!(r.reason, "no hello within 5 s");
}

#[test]
fn another_packet_first_or_garbage_is_refused_with_the_reason() {
    let mut h = Handshake::new(0, TIMEOUT);
    h.handle_bytes(&Packet::Ping { id: 1, sent_us: 2 }.to_bytes());
    let r = h.poll(1).unwrap().unwrap_err();
    assert_eq!((r.counter, r.code), ("not_hello", goodbye::PROTOCOL_ERROR));
    assert_eq!(r.reason, "expected hello, got ping");

    let mut h = Handshake::new(0, TIMEOUT);
    h.handle_bytes(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = h.poll(1).unwrap().unwrap_err();
    assert_eq!(r.counter, "bad_packet");
    assert!(r.reason.starts_with("bad handshake: "), "{}", r.reason);

    let h = Handshake::new(0, TIMEOUT);
    assert_eq!(h.closed().reason, "bad handshake: closed before hello");
}

#[test]
fn the_rules_refuse_a_wrong_token_and_a_subscriber_without_streams() {
    let mut h = Handshake::new(0, TIMEOUT);
    h.handle_bytes(&hello("guess", Role::Viewer, 1));
    let got = h.poll(1).unwrap().unwrap();
    let rules = HelloRules {
        token: Some("secret-token"),
        has_streams: false,
    };
    let r = check_hello(got.version, got.role, &got.token, &got.stream, rules).unwrap_err();
    assert_eq!((r.counter, r.code), ("token", goodbye::UNAUTHORIZED));

    let mut h = Handshake::new(0, TIMEOUT);
    h.handle_bytes(&hello("", Role::Subscriber, 1));
    let got = h.poll(1).unwrap().unwrap();
    let open = HelloRules {
        token: None,
        has_streams: false,
    };
    let r = check_hello(got.version, got.role, &got.token, &got.stream, open).unwrap_err();
    assert_eq!((r.counter, r.code), ("stream", goodbye::NO_SUCH_STREAM));
}

/// Before its Hello a connection holds little: the buffer starts small, and a Hello that says
/// it is longer than a control packet may be is refused from its header, before its body.
#[test]
fn before_a_hello_a_connection_holds_at_most_one_control_packet() {
    let mut hs = Handshake::new(0, 5_000_000);
    assert!(hs.held().1 <= framewire_session::PRE_HELLO_BUFFER);
    // A header announcing 4096 bytes (the most a Hello may have), then 3000 of them.
    let mut head = vec![b'F', b'W', 0x01];
    head.extend_from_slice(&4096u32.to_le_bytes());
    hs.handle_bytes(&head);
    hs.handle_bytes(&[0u8; 3000]);
    assert!(hs.poll(1).is_none(), "still waiting for the rest");
    let (pending, cap) = hs.held();
    assert_eq!(pending, 7 + 3000);
    assert!(cap <= 7 + 4096 + 4096, "buffer grew to {cap}");
    // One byte more than a control packet may hold: refused at the header.
    let mut hs = Handshake::new(0, 5_000_000);
    let mut head = vec![b'F', b'W', 0x01];
    head.extend_from_slice(&4097u32.to_le_bytes());
    hs.handle_bytes(&head);
    let r = hs.poll(1).expect("refused at once").unwrap_err();
    assert_eq!(r.code, framewire_proto::v1::goodbye::PROTOCOL_ERROR);
    assert!(hs.held().1 <= framewire_session::PRE_HELLO_BUFFER);
}
