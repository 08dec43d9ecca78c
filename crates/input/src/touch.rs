//! Daylight touch packets (port 8892): `DA 70` type:u8 x:f32 y:f32 dx:f32 dy:f32 pointer:i32,
//! 23 bytes, little-endian. Parsed as a byte stream: a packet split across reads is joined, and
//! after garbage the parser resynchronises on the next `DA 70` instead of losing alignment
//! for good (the original app's server read fixed 23-byte chunks).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TouchKind {
    Down = 1,
    Move = 2,
    Up = 3,
    Scroll = 4,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TouchPacket {
    pub kind: TouchKind,
    /// Position normalised to 0..=1 of the view.
    pub x: f32,
    pub y: f32,
    /// Two-finger scroll deltas, normalised.
    pub dx: f32,
    pub dy: f32,
    pub pointer: i32,
}

pub const PACKET_LEN: usize = 23;
const MAGIC: [u8; 2] = [0xDA, 0x70];

impl TouchPacket {
    pub fn to_bytes(&self) -> [u8; PACKET_LEN] {
        let mut b = [0u8; PACKET_LEN];
        b[..2].copy_from_slice(&MAGIC);
        b[2] = self.kind as u8;
        b[3..7].copy_from_slice(&self.x.to_le_bytes());
        b[7..11].copy_from_slice(&self.y.to_le_bytes());
        b[11..15].copy_from_slice(&self.dx.to_le_bytes());
        b[15..19].copy_from_slice(&self.dy.to_le_bytes());
        b[19..23].copy_from_slice(&self.pointer.to_le_bytes());
        b
    }
}

/// Counts of what the parser threw away.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TouchStats {
    pub packets: u64,
    /// Bytes skipped looking for the next packet start.
    pub skipped_bytes: u64,
    /// Packets with an unknown type or a coordinate that is not a finite number in range.
    pub rejected: u64,
}

#[derive(Default)]
pub struct TouchParser {
    buf: Vec<u8>,
    pub stats: TouchStats,
}

fn f32_at(b: &[u8], at: usize) -> f32 {
    f32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl TouchParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds bytes from the socket and returns every whole packet they complete. The buffer
    /// never holds more than one partial packet.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<TouchPacket> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut i = 0;
        while self.buf.len() - i >= 2 {
            if self.buf[i..i + 2] != MAGIC {
                i += 1;
                self.stats.skipped_bytes += 1;
                continue;
            }
            if self.buf.len() - i < PACKET_LEN {
                break;
            }
            let p = &self.buf[i..i + PACKET_LEN];
            let kind = match p[2] {
                1 => Some(TouchKind::Down),
                2 => Some(TouchKind::Move),
                3 => Some(TouchKind::Up),
                4 => Some(TouchKind::Scroll),
                _ => None,
            };
            let (x, y, dx, dy) = (f32_at(p, 3), f32_at(p, 7), f32_at(p, 11), f32_at(p, 15));
            let pointer = i32::from_le_bytes([p[19], p[20], p[21], p[22]]);
            let in_range = |v: f32| v.is_finite() && (-0.5..=1.5).contains(&v);
            let delta_ok = |v: f32| v.is_finite() && v.abs() <= 2.0;
            match kind {
                Some(kind) if in_range(x) && in_range(y) && delta_ok(dx) && delta_ok(dy) => {
                    self.stats.packets += 1;
                    out.push(TouchPacket {
                        kind,
                        x: x.clamp(0.0, 1.0),
                        y: y.clamp(0.0, 1.0),
                        dx,
                        dy,
                        pointer,
                    });
                    i += PACKET_LEN;
                }
                _ => {
                    // Not a packet after all (or a bad one): look for the next start inside it.
                    self.stats.rejected += 1;
                    i += 2;
                }
            }
        }
        // A lone trailing byte that cannot start a packet is dropped.
        if self.buf.len() - i == 1 && self.buf[i] != MAGIC[0] {
            i += 1;
            self.stats.skipped_bytes += 1;
        }
        self.buf.drain(..i);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pkt(kind: TouchKind, x: f32, y: f32) -> TouchPacket {
        TouchPacket {
            kind,
            x,
            y,
            dx: 0.0,
            dy: -0.125,
            pointer: 1,
        }
    }

    #[test]
    fn the_shared_vector_parses() {
        let v = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../spec/vectors/daylight_touch.bin"
        ))
        .unwrap();
        let got = TouchParser::new().push(&v);
        assert_eq!(got, [pkt(TouchKind::Move, 0.5, 0.25)]);
    }

    #[test]
    fn garbage_between_packets_is_skipped_and_counted() {
        let mut p = TouchParser::new();
        let mut bytes = vec![1, 2, 0xDA, 3];
        bytes.extend(pkt(TouchKind::Down, 0.1, 0.2).to_bytes());
        bytes.extend([0xDA, 0x70, 9]); // a start with an unknown type...
        bytes.extend([0u8; 20]);
        bytes.extend(pkt(TouchKind::Up, 0.3, 0.4).to_bytes());
        let got = p.push(&bytes);
        assert_eq!(
            got,
            [pkt(TouchKind::Down, 0.1, 0.2), pkt(TouchKind::Up, 0.3, 0.4)]
        );
        assert_eq!(p.stats.rejected, 1);
        assert!(p.stats.skipped_bytes >= 4);
    }

    proptest! {
        /// However the stream is cut into reads, the same packets come out in order.
        #[test]
        fn packets_split_across_reads_are_joined(
            pts in proptest::collection::vec((1u8..=4, 0f32..=1.0, 0f32..=1.0), 1..20),
            cuts in proptest::collection::vec(1usize..40, 1..60),
        ) {
            let want: Vec<TouchPacket> = pts.iter().map(|&(k, x, y)| TouchPacket {
                kind: [TouchKind::Down, TouchKind::Move, TouchKind::Up, TouchKind::Scroll][k as usize - 1],
                x, y, dx: 0.5, dy: -0.5, pointer: 7,
            }).collect();
            let stream: Vec<u8> = want.iter().flat_map(|p| p.to_bytes()).collect();
            let mut p = TouchParser::new();
            let mut got = Vec::new();
            let mut at = 0;
            for c in cuts.iter().cycle() {
                if at >= stream.len() { break; }
                let end = (at + c).min(stream.len());
                got.extend(p.push(&stream[at..end]));
                at = end;
            }
            prop_assert_eq!(got, want);
        }

        /// Random bytes never panic, and the buffer stays bounded.
        #[test]
        fn random_bytes_are_safe(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..32)) {
            let mut p = TouchParser::new();
            for c in chunks {
                p.push(&c);
                prop_assert!(p.buf.len() < PACKET_LEN);
            }
        }
    }
}
