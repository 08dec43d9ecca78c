//! A recording replayed as a capture source gives back the recorded pictures, with damage that
//! covers every row that changed, at either pace, and again from the start when it ends.

use std::path::PathBuf;

use framewire_capture::{Damage, FrameSource};
use framewire_record::{FileSource, Header, Pace, Writer};

const W: u32 = 13;
const H: u32 = 11;

/// Pictures where picture `k` changes rows `k % H` .. `k % H + 2` (and the first is new).
fn pictures(n: usize) -> Vec<(Vec<u8>, Damage)> {
    let stride = W as usize * 4;
    let mut pic = vec![0u8; stride * H as usize];
    let mut out = Vec::new();
    for k in 0..n {
        let damage = if k == 0 {
            pic.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
            Damage::All
        } else {
            let y0 = (k as u32) % (H - 1);
            for b in &mut pic[y0 as usize * stride..(y0 as usize + 2) * stride] {
                *b = b.wrapping_add(k as u8 | 1);
            }
            Damage::Rows(vec![(y0, y0 + 2)])
        };
        out.push((pic.clone(), damage));
    }
    out
}

/// Writes `pics` with the given capture times to a fresh file.
fn recording(name: &str, pics: &[(Vec<u8>, Damage)], times: &[u64]) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("framewire-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let f = std::fs::File::create(&path).unwrap();
    let mut w = Writer::new(
        f,
        Header {
            width: W,
            height: H,
        },
    )
    .unwrap();
    for ((p, d), &t) in pics.iter().zip(times) {
        w.write(t, p, d).unwrap();
    }
    w.finish().unwrap();
    path
}

/// Every row that differs between `a` and `b` is inside `damage`.
fn covers(damage: &Damage, a: &[u8], b: &[u8]) -> bool {
    let stride = W as usize * 4;
    let Some(rows) = damage.merged(H) else {
        return true;
    };
    (0..H as usize).all(|y| {
        let same = a[y * stride..(y + 1) * stride] == b[y * stride..(y + 1) * stride];
        same || rows
            .iter()
            .any(|&(y0, y1)| (y0 as usize..y1 as usize).contains(&y))
    })
}

#[test]
fn fast_replay_gives_every_picture_in_order_and_starts_again() {
    let pics = pictures(9);
    let times: Vec<u64> = (0..9).map(|k| k * 1_000_000).collect();
    let path = recording("fast.fwrec", &pics, &times);
    let mut src = FileSource::open(&path, Pace::Fast).unwrap();
    assert_eq!(src.size(), (W, H));
    let mut shown = vec![0u8; pics[0].0.len()];
    for round in 0..2 {
        for (k, (p, _)) in pics.iter().enumerate() {
            let c = src.capture().unwrap();
            assert_eq!(c.bgra, &p[..], "round {round}, picture {k}");
            if k == 0 {
                assert_eq!(c.damage, Damage::All, "a new run through starts whole");
            }
            assert!(
                covers(&c.damage, &shown, c.bgra),
                "round {round}, picture {k}"
            );
            shown.copy_from_slice(c.bgra);
        }
    }
    let counters = src.counters();
    assert!(counters.contains(&("replay_pictures", 18)), "{counters:?}");
    assert!(counters.contains(&("replay_loops", 1)), "{counters:?}");
}

#[test]
fn recorded_pace_holds_a_picture_until_the_next_is_due() {
    let pics = pictures(3);
    // The second picture is due an hour in: every capture until then sees the first.
    let path = recording("slow.fwrec", &pics, &[0, 3_600_000_000, 3_600_000_001]);
    let mut src = FileSource::open(&path, Pace::Recorded).unwrap();
    let c = src.capture().unwrap();
    assert_eq!(c.bgra, &pics[0].0[..]);
    assert_eq!(c.damage, Damage::All);
    for _ in 0..3 {
        let c = src.capture().unwrap();
        assert_eq!(c.bgra, &pics[0].0[..]);
        assert_eq!(c.damage, Damage::Rows(vec![]), "nothing changed yet");
    }
}

#[test]
fn recorded_pace_merges_the_pictures_between_two_captures() {
    let pics = pictures(8);
    // All are due at once: one capture sees the last, with damage covering all the changes,
    // and the next capture begins again with the first.
    let times = vec![0; 8];
    let path = recording("burst.fwrec", &pics, &times);
    let mut src = FileSource::open(&path, Pace::Recorded).unwrap();
    let c = src.capture().unwrap();
    assert_eq!(c.bgra, &pics[7].0[..]);
    assert_eq!(c.damage, Damage::All, "the first capture is whole");
    let c = src.capture().unwrap();
    assert_eq!(c.bgra, &pics[0].0[..], "after the end, the start again");
    assert_eq!(c.damage, Damage::All);
    // A run through with damage: the last picture of it, and damage covering every change.
    let c = src.capture().unwrap();
    assert_eq!(c.bgra, &pics[7].0[..]);
    assert!(covers(&c.damage, &pics[0].0, c.bgra));
    assert_ne!(c.damage, Damage::All);
}

#[test]
fn a_missing_or_bad_file_is_a_clear_error() {
    let missing = std::env::temp_dir().join("framewire-no-such-recording.fwrec");
    let e = FileSource::open(&missing, Pace::Fast).err().unwrap();
    assert!(e.to_string().contains("framewire-no-such-recording"), "{e}");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("framewire-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.fwrec");
    std::fs::write(&bad, b"not a recording at all").unwrap();
    let e = FileSource::open(&bad, Pace::Fast).err().unwrap();
    assert!(e.to_string().contains("bad.fwrec"), "{e}");
    // A header and no pictures: opening works, capturing says why it cannot.
    let empty = recording("empty.fwrec", &[], &[]);
    let mut src = FileSource::open(&empty, Pace::Recorded).unwrap();
    let e = src.capture().err().unwrap();
    assert!(e.to_string().contains("no pictures"), "{e}");
}

#[test]
fn a_recording_rewritten_at_another_size_during_replay_is_an_error_not_a_panic() {
    let pics = pictures(2);
    let path = recording("resized.fwrec", &pics, &[0, 1]);
    let mut src = FileSource::open(&path, Pace::Fast).unwrap();
    src.capture().unwrap();
    src.capture().unwrap();
    // Recorded again, at another size, while it was being replayed.
    let f = std::fs::File::create(&path).unwrap();
    let mut w = Writer::new(
        f,
        Header {
            width: W + 1,
            height: H,
        },
    )
    .unwrap();
    w.write(
        0,
        &vec![7u8; (W as usize + 1) * H as usize * 4],
        &Damage::All,
    )
    .unwrap();
    w.finish().unwrap();
    let e = src.capture().err().expect("a different size is refused");
    assert!(e.to_string().contains("changed size"), "{e}");
}

#[test]
fn a_first_capture_time_beyond_the_uptime_does_not_panic() {
    let pics = pictures(1);
    let path = recording("far.fwrec", &pics, &[u64::MAX / 2]);
    let mut src = FileSource::open(&path, Pace::Recorded).unwrap();
    assert!(src.capture().is_ok());
}
