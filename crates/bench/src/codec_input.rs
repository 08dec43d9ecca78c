//! `framewire bench codec --input PATH,…`: the codec on recordings of real programs. Each
//! picture is taken as the server takes it (grey and row hashes of the damaged rows only, the
//! checksum, then both delta paths), decoded on a viewer-side picture, and checked exactly.

use std::fs::File;
use std::io::BufReader;
use std::path::Path as FsPath;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use framewire_capture::Resolution;
use framewire_codec::checksum::checksum_of_rows;
use framewire_codec::grey::PixelOrder;
use framewire_codec::ingest::{ingest, Previous, Source};
use framewire_codec::{BlockCodec, EncodedKind};
use framewire_record::Reader;
use framewire_telemetry::stats::median;
use serde::Serialize;

use crate::args::BenchCodecArgs;
use crate::codec::{ms, PathResult, Paths};

#[derive(Serialize)]
struct InputRow {
    input: String,
    width: u32,
    height: u32,
    /// Pictures in the recording, and how many of them changed (the first aside).
    frames: u64,
    changed_frames: u64,
    /// Grey + row hashes of the damaged rows, over the pictures that changed.
    grey_hash_ms_p50: f64,
    rows: PathResult,
    full: PathResult,
    rects: PathResult,
    keyframe_bytes: usize,
    /// The recording's own size on disk per changed picture (colour, LZ4 of XOR), for scale.
    recording_bytes_per_changed_frame: f64,
}

fn bench_input(path: &FsPath, codec: BlockCodec) -> anyhow::Result<InputRow> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let disk = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut reader = Reader::new(BufReader::with_capacity(1 << 20, file))
        .with_context(|| format!("reading {}", path.display()))?;
    let h = reader.header();
    let res = Resolution {
        width: h.width,
        height: h.height,
    };
    let mut paths = Paths::new(codec, res);
    let mut pool: Vec<Arc<Vec<u8>>> = Vec::new();
    let (mut prev, mut prev_hashes): (Option<Arc<Vec<u8>>>, Vec<u64>) = (None, Vec::new());
    let mut hashes = Vec::new();
    let mut grey_ms = Vec::new();
    let (mut frames, mut changed, mut key_bytes) = (0u64, 0u64, 0usize);
    while let Some(f) = reader
        .next_frame()
        .with_context(|| format!("reading {} at picture {frames}", path.display()))?
    {
        let damage = f.damage.merged(h.height);
        let mut grey = match pool.iter().position(|b| Arc::strong_count(b) == 1) {
            Some(k) => pool.swap_remove(k),
            None => Arc::new(vec![0u8; res.pixels()]),
        };
        let dst = Arc::get_mut(&mut grey).context("grey buffer is shared")?;
        let t = Instant::now();
        ingest(
            Source::new(f.bgra, PixelOrder::Bgra, h.width as usize),
            prev.as_ref().map(|p| Previous {
                grey: p,
                hashes: &prev_hashes,
            }),
            damage.as_deref().filter(|_| prev.is_some()),
            None,
            dst,
            &mut hashes,
        );
        let g = ms(t);
        let sum = checksum_of_rows(&hashes);
        let record = frames > 0;
        let kind = paths.step(frames, &grey, &hashes, sum, record)?;
        if frames == 0 {
            key_bytes = paths.rows.out.len();
        } else if kind != EncodedKind::Unchanged {
            changed += 1;
            grey_ms.push(g);
        }
        std::mem::swap(&mut prev_hashes, &mut hashes);
        if let Some(p) = prev.replace(grey) {
            pool.push(p);
        }
        frames += 1;
    }
    anyhow::ensure!(
        frames > 0,
        "{}: the recording has no pictures",
        path.display()
    );
    Ok(InputRow {
        input: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string()),
        width: h.width,
        height: h.height,
        frames,
        changed_frames: changed,
        grey_hash_ms_p50: median(&mut grey_ms),
        rows: paths.rows.result(),
        full: paths.full.result(),
        rects: paths.rects.result(),
        keyframe_bytes: key_bytes,
        recording_bytes_per_changed_frame: disk as f64 / changed.max(1) as f64,
    })
}

pub fn run(a: &BenchCodecArgs) -> anyhow::Result<()> {
    let codec = a.codec.codec();
    if !a.json {
        println!(
            "codec {} on recordings — every picture, checked exactly; B/chg = mean bytes per changed picture",
            codec.name()
        );
        println!(
            "{:<22} {:>9} {:>6} {:>6} {:>7} | {:>8} {:>8} {:>9} | {:>8} {:>9} | {:>8} {:>8} {:>9} | {:>9} {:>9}",
            "input",
            "size",
            "frames",
            "chg",
            "grey+h",
            "rows enc",
            "rows dec",
            "rows B/chg",
            "full enc",
            "full B/chg",
            "rect enc",
            "rect dec",
            "rect B/chg",
            "key B",
            "file B/chg"
        );
    }
    let mut out = Vec::new();
    for p in &a.input {
        let r = bench_input(p, codec)?;
        if !a.json {
            println!(
                "{:<22} {:>9} {:>6} {:>6} {:>7.3} | {:>8.3} {:>8.3} {:>9.0} | {:>8.3} {:>9.0} | {:>8.3} {:>8.3} {:>9.0} | {:>9} {:>9.0}",
                r.input,
                format!("{}x{}", r.width, r.height),
                r.frames,
                r.changed_frames,
                r.grey_hash_ms_p50,
                r.rows.delta_compress_ms_p50,
                r.rows.decode_apply_ms_p50,
                r.rows.bytes_per_changed_frame_mean,
                r.full.delta_compress_ms_p50,
                r.full.bytes_per_changed_frame_mean,
                r.rects.delta_compress_ms_p50,
                r.rects.decode_apply_ms_p50,
                r.rects.bytes_per_changed_frame_mean,
                r.keyframe_bytes,
                r.recording_bytes_per_changed_frame
            );
        }
        out.push(r);
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    }
    Ok(())
}
