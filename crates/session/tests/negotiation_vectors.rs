//! Capability negotiation against the shared vectors in `spec/vectors/negotiation/`: the table
//! `negotiation/cases.json`, whose expected results were worked out by hand from the spec's
//! "Capability negotiation" rules, and the bytes of a viewer that declares only LZ4 and of the
//! Welcome the host answers it with (written by the independent Python encoder).

use framewire_proto::v1::{self, caps, goodbye, Codec, Packet, Role};
use framewire_session::{
    check_hello, negotiate, HelloRules, ViewerEvent, ViewerHello, ViewerSession,
};
use serde_json::Value;

fn vector_path(name: &str) -> String {
    format!(
        "{}/../../spec/vectors/negotiation/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn vector(name: &str) -> Vec<u8> {
    let path = vector_path(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

fn field<'a>(case: &'a Value, key: &str) -> &'a Value {
    case.get(key)
        .unwrap_or_else(|| panic!("case {case} has no {key:?}"))
}

fn text<'a>(case: &'a Value, key: &str) -> &'a str {
    field(case, key)
        .as_str()
        .unwrap_or_else(|| panic!("{key:?} of {case} is not a string"))
}

/// A hex string such as "0x0000000F".
fn hex(case: &Value, key: &str) -> u32 {
    let s = text(case, key);
    let digits = s
        .strip_prefix("0x")
        .unwrap_or_else(|| panic!("{key:?} = {s:?} is not 0x-prefixed hex"));
    u32::from_str_radix(digits, 16).unwrap_or_else(|e| panic!("{key:?} = {s:?}: {e}"))
}

fn codec(case: &Value, key: &str) -> Codec {
    match text(case, key) {
        "raw" => Codec::Raw,
        "lz4" => Codec::Lz4,
        "zstd" => Codec::Zstd,
        other => panic!("{key:?} = {other:?} is not raw, lz4 or zstd"),
    }
}

/// Every row of the table: the codec, the Welcome's caps and whether Unchanged packets go to
/// the viewer are the ones the spec's rules give.
#[test]
fn negotiation_table() {
    let path = vector_path("cases.json");
    let table: Value = serde_json::from_str(
        &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}")),
    )
    .unwrap_or_else(|e| panic!("parsing {path}: {e}"));
    let cases = table["cases"].as_array().expect("a \"cases\" array");
    // The table covers the situations listed in spec/vectors/README.md; a truncated table
    // must not pass for a checked one.
    assert!(cases.len() >= 24, "only {} cases in {path}", cases.len());

    let mut failures = Vec::new();
    for case in cases {
        let name = text(case, "name");
        let (preferred, host, viewer) = (
            codec(case, "preferred"),
            hex(case, "host_caps"),
            hex(case, "viewer_caps"),
        );
        let (want_codec, want_caps, want_unchanged) = (
            codec(case, "codec"),
            hex(case, "welcome_caps"),
            field(case, "unchanged")
                .as_bool()
                .unwrap_or_else(|| panic!("\"unchanged\" of {name:?} is not a bool")),
        );
        let n = negotiate(preferred, host, viewer);
        if (n.codec, n.caps, n.unchanged) != (want_codec, want_caps, want_unchanged) {
            failures.push(format!(
                "{name}: negotiate({preferred:?}, {host:#010X}, {viewer:#010X}) gave codec \
                 {:?}, caps {:#010X}, unchanged {}; the table says {want_codec:?}, \
                 {want_caps:#010X}, {want_unchanged}",
                n.codec, n.caps, n.unchanged
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

const SESSION: u64 = 0x1122_3344_5566_7788;

/// The LZ4-only viewer's Hello decodes to what `spec/vectors/README.md` lists, passes the Hello
/// rules, and the Welcome a zstd host builds from the negotiated caps is the vector's bytes.
#[test]
fn lz4_only_hello_and_welcome() {
    let hello = vector("v1_hello_lz4_only.bin");
    let mut d = v1::Decoder::new(v1::MAX_CONTROL_BODY);
    d.feed(&hello);
    let packet = d
        .next_packet()
        .expect("a valid Hello")
        .expect("a whole packet");
    assert_eq!(d.pending(), 0, "the vector is exactly one packet");
    let Packet::Hello {
        version,
        role,
        caps: declared,
        stream,
        token,
    } = packet
    else {
        panic!("not a Hello: {packet:?}")
    };
    assert_eq!(
        (version, role, declared, stream.as_str(), token.as_str()),
        (1, Role::Viewer, 0x0000_0001, "screen", "")
    );

    // The host answers Welcome, not Goodbye; one that requires a token refuses it with
    // Goodbye 2 (negotiation itself never refuses).
    let open = HelloRules {
        token: None,
        has_streams: false,
    };
    assert_eq!(check_hello(version, role, &token, &stream, open), Ok(()));
    let with_token = HelloRules {
        token: Some("s3cret"),
        ..open
    };
    assert_eq!(
        check_hello(version, role, &token, &stream, with_token)
            .unwrap_err()
            .code,
        goodbye::UNAUTHORIZED
    );

    let n = negotiate(Codec::Zstd, caps::ALL, declared);
    assert_eq!(n.codec, Codec::Lz4, "a zstd host sends this viewer LZ4");
    assert!(!n.unchanged, "and no Unchanged packets");
    let welcome = Packet::Welcome {
        version: v1::VERSION,
        caps: n.caps,
        session: SESSION,
    }
    .to_bytes();
    assert_eq!(&welcome[..], &vector("v1_welcome_lz4_only.bin")[..]);
}

/// The viewer's side: a `ViewerSession` declaring only LZ4 says exactly the vector's Hello,
/// and reads the vector's Welcome as the caps and session it carries.
#[test]
fn lz4_only_viewer_session() {
    let mut viewer = ViewerSession::new(
        ViewerHello {
            caps: caps::LZ4,
            stream: "screen".into(),
            token: String::new(),
        },
        || 0,
    );
    let sent: Vec<u8> = std::iter::from_fn(|| viewer.poll_transmit())
        .flatten()
        .collect();
    assert_eq!(sent, vector("v1_hello_lz4_only.bin"));
    viewer.handle_bytes(0, &vector("v1_welcome_lz4_only.bin"));
    assert_eq!(
        viewer.poll_event(),
        Some(ViewerEvent::Welcomed {
            caps: caps::LZ4,
            session: SESSION,
        })
    );
}
