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
use framewire_codec::checksum::{checksum_of_rows, row_hashes};
use framewire_codec::colour::{ingest_planes, PLANES};
use framewire_codec::grey::PixelOrder;
use framewire_codec::ingest::{ingest, Previous, Source};
use framewire_codec::{BlockCodec, EncodedKind};
use framewire_record::Reader;
use framewire_telemetry::stats::median;
use serde::Serialize;

use crate::args::BenchCodecArgs;
use crate::codec::{ms, Form, Path, PathResult, Paths};

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
    /// Colour: planes G, R − G, B − G with moved rectangles; its first stage (planes + row
    /// hashes of the damaged rows) over the pictures that changed.
    colour: PathResult,
    colour_ingest_ms_p50: f64,
    colour_keyframe_bytes: usize,
    /// The same with predicted rectangles, every delta in the codec asked for.
    colour_predicted: PathResult,
    /// With predicted rectangles, as `serve` sends them to a viewer that declared them and
    /// zstd: with `--codec lz4`, the deltas that have some in zstd.
    colour_served: PathResult,
    /// The alternative measured beside it: planes R, G, B, same encoder.
    colour_rgb: PathResult,
    keyframe_bytes: usize,
    /// The recording's own size on disk per changed picture (colour, LZ4 of XOR), for scale.
    recording_bytes_per_changed_frame: f64,
}

/// Planes R, G, B without the transform: the alternative the colour format is measured against.
fn rgb_planes(bgra: &[u8], out: &mut Vec<u8>) {
    let n = bgra.len() / 4;
    out.resize(n * 3, 0);
    let (r, gb) = out.split_at_mut(n);
    let (g, b) = gb.split_at_mut(n);
    for (i, px) in bgra.chunks_exact(4).enumerate() {
        (r[i], g[i], b[i]) = (px[2], px[1], px[0]);
    }
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
    let mut colour = Path::new(codec, res, Form::Colour);
    let mut colour_rgb = Path::new(codec, res, Form::Colour);
    let mut colour_pred = Path::new(codec, res, Form::Colour).with_predicted();
    let mut colour_served = Path::new(codec, res, Form::Colour)
        .with_predicted()
        .with_dense_codec(framewire_codec::rects::Codecs::served(codec).dense);
    let (mut planes, mut rgb) = (Arc::new(Vec::new()), Arc::new(Vec::new()));
    let (mut plane_hashes, mut prev_plane_hashes, mut rgb_hashes) = (vec![], vec![], vec![]);
    let mut colour_ms = Vec::new();
    let mut colour_key = 0;
    let mut colour_pool: Vec<Arc<Vec<u8>>> = Vec::new();
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
        // Colour: into a recycled buffer (the encoder keeps the last as its reference).
        let mut next = match colour_pool.iter().position(|b| Arc::strong_count(b) == 1) {
            Some(k) => colour_pool.swap_remove(k),
            None => Arc::new(vec![0u8; res.pixels() * PLANES]),
        };
        let t = Instant::now();
        ingest_planes(
            Source::new(f.bgra, PixelOrder::Bgra, h.width as usize),
            (frames > 0).then(|| Previous {
                grey: &planes,
                hashes: &prev_plane_hashes,
            }),
            damage.as_deref().filter(|_| frames > 0),
            Arc::get_mut(&mut next).context("fresh")?,
            &mut plane_hashes,
        );
        let cms = ms(t);
        let old = std::mem::replace(&mut planes, next);
        if !old.is_empty() {
            colour_pool.push(old);
        }
        rgb_planes(f.bgra, Arc::make_mut(&mut rgb));
        row_hashes(&rgb, h.width as usize, &mut rgb_hashes);
        let record = frames > 0;
        let csum = checksum_of_rows(&plane_hashes);
        let ck = colour.step(&planes, &plane_hashes, csum, record)?;
        colour_pred.step(&planes, &plane_hashes, csum, record)?;
        colour_served.step(&planes, &plane_hashes, csum, record)?;
        colour_rgb.step(&rgb, &rgb_hashes, checksum_of_rows(&rgb_hashes), record)?;
        if frames == 0 {
            colour_key = colour.out.len();
        } else if ck != EncodedKind::Unchanged {
            colour_ms.push(cms);
        }
        std::mem::swap(&mut prev_plane_hashes, &mut plane_hashes);
        let sum = checksum_of_rows(&hashes);
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
        colour: colour.result(),
        colour_ingest_ms_p50: median(&mut colour_ms),
        colour_keyframe_bytes: colour_key,
        colour_rgb: colour_rgb.result(),
        colour_predicted: colour_pred.result(),
        colour_served: colour_served.result(),
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
        return Ok(());
    }
    println!();
    println!("colour (planes G, R-G, B-G, moved rectangles), same pictures; the alternative: planes R, G, B; then with predicted rectangles;");
    println!("then as served by default (with --codec lz4, the deltas with predicted rectangles in zstd)");
    println!(
        "{:<22} {:>8} {:>8} {:>8} {:>10} {:>9} | {:>10} | {:>12} | {:>8} {:>8} {:>10} | {:>8} {:>8} {:>10}",
        "input",
        "planes+h",
        "enc",
        "dec",
        "B/chg",
        "key B",
        "RGB B/chg",
        "colour÷grey",
        "pred enc",
        "pred dec",
        "pred B/chg",
        "srv enc",
        "srv dec",
        "srv B/chg"
    );
    for r in &out {
        println!(
            "{:<22} {:>8.3} {:>8.3} {:>8.3} {:>10.0} {:>9} | {:>10.0} | {:>12.2} | {:>8.3} {:>8.3} {:>10.0} | {:>8.3} {:>8.3} {:>10.0}",
            r.input,
            r.colour_ingest_ms_p50,
            r.colour.delta_compress_ms_p50,
            r.colour.decode_apply_ms_p50,
            r.colour.bytes_per_changed_frame_mean,
            r.colour_keyframe_bytes,
            r.colour_rgb.bytes_per_changed_frame_mean,
            r.colour.bytes_per_changed_frame_mean / r.rects.bytes_per_changed_frame_mean.max(1.0),
            r.colour_predicted.delta_compress_ms_p50,
            r.colour_predicted.decode_apply_ms_p50,
            r.colour_predicted.bytes_per_changed_frame_mean,
            r.colour_served.delta_compress_ms_p50,
            r.colour_served.decode_apply_ms_p50,
            r.colour_served.bytes_per_changed_frame_mean
        );
    }
    Ok(())
}
