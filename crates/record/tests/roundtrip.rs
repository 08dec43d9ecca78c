//! Recordings read back exactly what was written, and bad files are errors, never panics.

use framewire_capture::Damage;
use framewire_record::{Header, Reader, RecordError, Writer};
use proptest::prelude::*;

/// A sequence of pictures where only the damaged rows change (as a source reports them).
/// A step: the damaged ranges (`None`: all rows), and how the changed bytes change.
type Step = (Option<Vec<(u32, u32)>>, u8);

fn pictures(w: u32, h: u32, steps: &[Step]) -> Vec<(Vec<u8>, Damage)> {
    let stride = w as usize * 4;
    let mut pic: Vec<u8> = (0..stride * h as usize).map(|i| (i * 7) as u8).collect();
    let mut out = Vec::new();
    for (k, (ranges, seed)) in steps.iter().enumerate() {
        let damage = match ranges {
            // A source's first capture is all damage (there is no previous picture).
            _ if k == 0 => Damage::All,
            None => Damage::All,
            Some(r) => Damage::Rows(r.iter().map(|&(a, b)| (a % h, b % (h + 1))).collect()),
        };
        let rows = damage.merged(h).unwrap_or_else(|| vec![(0, h)]);
        for (y0, y1) in rows {
            for (i, b) in pic[y0 as usize * stride..y1 as usize * stride]
                .iter_mut()
                .enumerate()
            {
                // Most bytes unchanged, some changed: like a screen.
                if (i + k) % 5 == 0 {
                    *b = b.wrapping_add(*seed | 1);
                }
            }
        }
        out.push((pic.clone(), damage));
    }
    out
}

fn writer(width: u32, height: u32) -> Writer<Vec<u8>> {
    Writer::new(Vec::new(), Header { width, height }).unwrap()
}

fn record(w: u32, h: u32, pics: &[(Vec<u8>, Damage)]) -> Vec<u8> {
    let mut wr = writer(w, h);
    for (k, (p, d)) in pics.iter().enumerate() {
        wr.write(k as u64 * 16_667, p, d).unwrap();
    }
    assert_eq!(wr.frames(), pics.len() as u64);
    let n = wr.bytes();
    let bytes = wr.finish().unwrap();
    assert_eq!(n, bytes.len() as u64);
    bytes
}

proptest! {
    #[test]
    fn every_picture_comes_back_exactly(
        w in 1u32..24,
        h in 1u32..24,
        steps in proptest::collection::vec(
            (proptest::option::of(proptest::collection::vec((0u32..30, 0u32..30), 0..5)), any::<u8>()),
            1..12,
        ),
    ) {
        let pics = pictures(w, h, &steps);
        let bytes = record(w, h, &pics);
        let mut r = Reader::new(&bytes[..]).unwrap();
        prop_assert_eq!(r.header(), Header { width: w, height: h });
        for (k, (p, d)) in pics.iter().enumerate() {
            let f = r.next_frame().unwrap().expect("a frame per picture");
            prop_assert_eq!(f.capture_us, k as u64 * 16_667);
            prop_assert_eq!(f.bgra, &p[..]);
            let want = match d.merged(h) {
                None => Damage::All,
                Some(v) => Damage::Rows(v),
            };
            prop_assert_eq!(&f.damage, &want);
        }
        prop_assert!(r.next_frame().unwrap().is_none());
    }

    /// Whatever follows a valid header, reading gives pictures or an error, never a panic,
    /// and never allocates beyond what a picture of the header's size needs.
    #[test]
    fn garbage_is_an_error_not_a_panic(body in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut bytes = Header { width: 8, height: 8 }.to_bytes().to_vec();
        bytes.extend_from_slice(&body);
        let mut r = Reader::new(&bytes[..]).unwrap();
        for _ in 0..50 {
            match r.next_frame() {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }

    /// A recording cut anywhere reads its whole records and then says it was cut.
    #[test]
    fn a_cut_recording_says_so(cut in 0usize..2000) {
        let steps: Vec<_> = (0..6).map(|k| (Some(vec![(k, k + 3)]), k as u8)).collect();
        let bytes = record(16, 12, &pictures(16, 12, &steps));
        let cut = cut % bytes.len();
        match Reader::new(&bytes[..cut]) {
            Err(e) => prop_assert_eq!(e, RecordError::Truncated("header")),
            Ok(mut r) => loop {
                match r.next_frame() {
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(RecordError::Truncated(_)) => break,
                    Err(e) => prop_assert!(false, "{e}"),
                }
            },
        }
    }
}

#[test]
fn an_unchanged_picture_costs_sixteen_bytes_and_a_scroll_little() {
    let (w, h) = (1600u32, 1200u32);
    let stride = w as usize * 4;
    let mut pic: Vec<u8> = (0..stride * h as usize).map(|i| (i % 251) as u8).collect();
    let mut wr = writer(w, h);
    wr.write(0, &pic, &Damage::All).unwrap();
    let first = wr.bytes();
    wr.write(16_667, &pic, &Damage::Rows(vec![])).unwrap();
    assert_eq!(
        wr.bytes() - first,
        4 + 8 + 4,
        "length, time, no ranges, no pixels"
    );
    // A typed character: 16 rows, a few bytes changed.
    for y in 600..616 {
        pic[y * stride + 400] ^= 0xFF;
    }
    let before = wr.bytes();
    wr.write(33_333, &pic, &Damage::Rows(vec![(600, 616)]))
        .unwrap();
    let typed = wr.bytes() - before;
    assert!(typed < 2_000, "a typed character cost {typed} bytes");
    let bytes = wr.finish().unwrap();
    let mut r = Reader::new(&bytes[..]).unwrap();
    r.next_frame().unwrap();
    r.next_frame().unwrap();
    assert_eq!(r.next_frame().unwrap().unwrap().bgra, &pic[..]);
}

#[test]
fn bad_headers_and_records_are_refused_with_the_reason() {
    assert_eq!(
        Reader::new(&b"GIF89a.........."[..]).err(),
        Some(RecordError::NotARecording)
    );
    let mut h = Header {
        width: 8,
        height: 8,
    }
    .to_bytes();
    h[6] = 9;
    assert_eq!(Reader::new(&h[..]).err(), Some(RecordError::Version(9)));
    let big = Header {
        width: 5000,
        height: 8,
    }
    .to_bytes();
    assert_eq!(
        Reader::new(&big[..]).err(),
        Some(RecordError::Size(5000, 8))
    );
    // A record claiming 4 GB is refused before it is read.
    let mut b = Header {
        width: 8,
        height: 8,
    }
    .to_bytes()
    .to_vec();
    b.extend_from_slice(&u32::MAX.to_le_bytes());
    let mut r = Reader::new(&b[..]).unwrap();
    assert!(matches!(
        r.next_frame(),
        Err(RecordError::RecordTooLong { .. })
    ));
    // Overlapping ranges.
    let mut b = Header {
        width: 8,
        height: 8,
    }
    .to_bytes()
    .to_vec();
    b.extend_from_slice(&(8u32 + 4 + 16).to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b.extend_from_slice(&2u32.to_le_bytes());
    for v in [0u32, 4, 2, 6] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    let mut r = Reader::new(&b[..]).unwrap();
    assert!(matches!(r.next_frame(), Err(RecordError::BadDamage(_))));
    // A picture of the wrong size is refused by the writer.
    let mut wr = Writer::new(
        Vec::new(),
        Header {
            width: 8,
            height: 8,
        },
    )
    .unwrap();
    assert!(matches!(
        wr.write(0, &[0u8; 10], &Damage::All),
        Err(RecordError::WrongSize { .. })
    ));
}
