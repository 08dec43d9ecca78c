//! The moved-rectangle vectors of spec/vectors/moves/ (written by an independent Python
//! generator from the spec's definition): each frame, applied by the viewer's picture to the
//! picture before it, gives exactly the picture after it and the checksum the frame carries.

use framewire_codec::checksum::picture_checksum;
use framewire_codec::{BlockCodec, Picture};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn every_moved_rectangle_vector_applies_exactly() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors/moves");
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 9);
    let predicted = cases
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("predicted-"));
    assert_eq!(predicted.count(), 4);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let (w, h) = (
            c["width"].as_u64().unwrap() as u32,
            c["height"].as_u64().unwrap() as u32,
        );
        let (before, after) = (
            hex(c["before"].as_str().unwrap()),
            hex(c["after"].as_str().unwrap()),
        );
        let pkt = std::fs::read(dir.join(format!("{name}.bin"))).unwrap();
        // Framing (magic, type 0x10, body length), then the Frame's fixed fields.
        assert_eq!(&pkt[..3], b"FW\x10", "{name}");
        let body = &pkt[7..];
        assert_eq!(
            u32::from_le_bytes(pkt[3..7].try_into().unwrap()) as usize,
            body.len()
        );
        let (flags, codec) = (body[16], body[17]);
        let checksum = u64::from_le_bytes(body[18..26].try_into().unwrap());
        let raw_len = u32::from_le_bytes(body[26..30].try_into().unwrap()) as usize;
        assert_eq!(
            (flags, codec),
            (4, 0),
            "{name}: a moved-rectangle delta, raw"
        );
        assert_eq!(format!("{checksum:016x}"), c["checksum"].as_str().unwrap());
        let mut pic = Picture::new(w, h);
        pic.decode(true, BlockCodec::Raw, &before).unwrap();
        pic.apply();
        pic.decode_rects(BlockCodec::Raw, &body[30..]).unwrap();
        pic.apply();
        assert!(pic.equals(&after), "{name}: the picture after differs");
        assert_eq!(pic.checksum(), checksum, "{name}");
        assert_eq!(picture_checksum(&after, w as usize), checksum, "{name}");
        let (plan, _) =
            framewire_codec::rects::parse_header(&body[30..], w as usize, h as usize).unwrap();
        assert_eq!(
            plan.block_bytes(),
            raw_len,
            "{name}: raw_len is the patches' and predicted rectangles' size"
        );
    }
}
