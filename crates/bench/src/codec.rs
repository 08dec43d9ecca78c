//! `framewire bench codec`: per-stage cost of the codec on every scene at every preset, with
//! medians over many frames. Rendering the synthetic scene is not timed.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use framewire_capture::{Resolution, Scene, SyntheticSource, PRESETS};
use framewire_codec::checksum::checksum_of_rows;
use framewire_codec::grey::{to_grey, to_grey_scalar, PixelOrder};
use framewire_codec::ingest::{ingest, Source, Tuned};
use framewire_codec::tune::{Tuner, Tuning};
use framewire_codec::{BlockCodec, EncodedKind, HostEncoder, Picture};
use serde::Serialize;

use crate::args::BenchCodecArgs;

#[derive(Serialize)]
struct Row {
    scene: String,
    resolution: String,
    frames: u64,
    /// BGRA → grey alone, whole frame.
    grey_ms_p50: f64,
    /// BGRA → grey + row hashes in one pass (the server's first stage), whole frame.
    grey_hash_ms_p50: f64,
    /// The frame checksum, from the row hashes.
    checksum_ms_p50: f64,
    /// framewire v1: row deltas (shift + changed rows).
    rows: PathResult,
    /// Daylight-compatible: full-frame XOR deltas.
    full: PathResult,
    /// framewire v1 with moved rectangles (viewers that declare them).
    rects: PathResult,
    unchanged_frames: u64,
    keyframe_compress_ms_p50: f64,
    keyframe_bytes: usize,
}

#[derive(Serialize)]
pub(crate) struct PathResult {
    pub delta_compress_ms_p50: f64,
    pub decode_apply_ms_p50: f64,
    pub bytes_per_frame_p50: f64,
    pub bytes_per_frame_mean: f64,
    /// Over the pictures that changed (keyframes aside).
    pub bytes_per_changed_frame_mean: f64,
    pub bytes_per_changed_frame_p50: f64,
}

use framewire_telemetry::stats::median;

pub(crate) fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// The delta forms compared.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// Full-frame XOR (what the Daylight protocol carries).
    Full,
    /// Row deltas: a whole-picture shift and whole changed rows.
    Rows,
    /// Moved-rectangle deltas: moves, then patches as narrow as the change.
    Rects,
    /// Moved-rectangle deltas of three stacked colour planes.
    Colour,
}

/// One way of encoding the same pictures, with its own viewer-side picture.
pub(crate) struct Path {
    enc: HostEncoder,
    pic: Picture,
    row_width: Option<usize>,
    pub out: Vec<u8>,
    enc_ms: Vec<f64>,
    dec_ms: Vec<f64>,
    bytes: Vec<f64>,
    changed_bytes: Vec<f64>,
}

impl Path {
    /// Moved-rectangle deltas from this path may carry predicted rectangles.
    pub fn with_predicted(mut self) -> Path {
        self.enc = self.enc.with_predicted(true);
        self
    }

    /// Deltas with predicted rectangles go in `dense` (as `serve` sends them by default).
    pub fn with_dense_codec(mut self, dense: BlockCodec) -> Path {
        self.enc = self.enc.with_dense_codec(dense);
        self
    }

    pub fn new(codec: BlockCodec, res: Resolution, form: Form) -> Path {
        Path {
            enc: HostEncoder::new(codec, 0)
                .with_rects(matches!(form, Form::Rects | Form::Colour))
                .with_planes(if form == Form::Colour { 3 } else { 1 }),
            pic: Picture::new(
                res.width,
                res.height * if form == Form::Colour { 3 } else { 1 },
            ),
            row_width: (form != Form::Full).then_some(res.width as usize),
            out: Vec::new(),
            enc_ms: vec![],
            dec_ms: vec![],
            bytes: vec![],
            changed_bytes: vec![],
        }
    }

    /// Encodes, decodes and checks one picture; returns its kind.
    /// The row path uses the row hashes the grey stage made, as the server does.
    pub fn step(
        &mut self,
        grey: &Arc<Vec<u8>>,
        hashes: &[u64],
        sum: u64,
        record: bool,
    ) -> anyhow::Result<EncodedKind> {
        let t = Instant::now();
        let (e, _) = match self.row_width {
            Some(w) => self
                .enc
                .encode_hashed(grey.clone(), w, hashes, &mut self.out),
            None => self.enc.encode(grey.clone(), &mut self.out),
        }
        .context("encoding")?;
        let enc_ms = ms(t);
        let t = Instant::now();
        match e.kind {
            EncodedKind::Unchanged => {}
            EncodedKind::Keyframe(_) => self.pic.decode(true, e.codec, &self.out)?,
            EncodedKind::Delta => self.pic.decode(false, e.codec, &self.out)?,
            EncodedKind::RowDelta => self.pic.decode_rows(e.codec, &self.out)?,
            EncodedKind::RectDelta => self.pic.decode_rects(e.codec, &self.out)?,
        }
        self.pic.apply();
        let dec_ms = ms(t);
        anyhow::ensure!(
            self.pic.equals(grey) && self.pic.checksum() == sum,
            "a frame did not round-trip"
        );
        if record && e.kind != EncodedKind::Unchanged {
            self.enc_ms.push(enc_ms);
            self.dec_ms.push(dec_ms);
        }
        if record {
            self.bytes.push(e.payload_len as f64);
            if e.kind != EncodedKind::Unchanged {
                self.changed_bytes.push(e.payload_len as f64);
            }
        }
        Ok(e.kind)
    }

    pub fn result(mut self) -> PathResult {
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        PathResult {
            delta_compress_ms_p50: median(&mut self.enc_ms),
            decode_apply_ms_p50: median(&mut self.dec_ms),
            bytes_per_frame_p50: median(&mut self.bytes),
            bytes_per_frame_mean: mean(&self.bytes),
            bytes_per_changed_frame_mean: mean(&self.changed_bytes),
            bytes_per_changed_frame_p50: median(&mut self.changed_bytes),
        }
    }
}

/// The three delta forms side by side on the same pictures.
pub(crate) struct Paths {
    pub rows: Path,
    pub full: Path,
    pub rects: Path,
}

impl Paths {
    pub fn new(codec: BlockCodec, res: Resolution) -> Paths {
        Paths {
            rows: Path::new(codec, res, Form::Rows),
            full: Path::new(codec, res, Form::Full),
            rects: Path::new(codec, res, Form::Rects),
        }
    }

    /// Every path on picture `i`, the row path's kind returned. Which goes first rotates with
    /// `i`, so none always finds the picture in cache.
    pub fn step(
        &mut self,
        i: u64,
        grey: &Arc<Vec<u8>>,
        hashes: &[u64],
        sum: u64,
        record: bool,
    ) -> anyhow::Result<EncodedKind> {
        let mut kind = EncodedKind::Unchanged;
        for k in 0..3 {
            match (k + i) % 3 {
                0 => kind = self.rows.step(grey, hashes, sum, record)?,
                1 => _ = self.full.step(grey, hashes, sum, record)?,
                _ => _ = self.rects.step(grey, hashes, sum, record)?,
            }
        }
        Ok(kind)
    }
}

fn bench_one(scene: Scene, res: Resolution, frames: u64, codec: BlockCodec) -> anyhow::Result<Row> {
    let mut src = SyntheticSource::new(scene, res.width, res.height);
    let mut paths = Paths::new(codec, res);
    // Grey buffers are recycled once neither encoder holds them (as the server's pool does),
    // so no frame pays for fresh pages.
    let mut pool: Vec<Arc<Vec<u8>>> = Vec::new();
    let (mut g, mut gh, mut cs, mut kc) = (vec![], vec![], vec![], vec![]);
    let mut plain = vec![0u8; res.pixels()];
    let mut hashes = Vec::new();
    let mut unchanged = 0;
    let mut key_bytes = 0;
    for i in 0..=frames {
        let bgra = src.render(i);
        let mut grey = match pool.iter().position(|b| Arc::strong_count(b) == 1) {
            Some(k) => pool.swap_remove(k),
            None => Arc::new(vec![0u8; res.pixels()]),
        };
        let dst = Arc::get_mut(&mut grey).context("grey buffer is shared")?;
        // Plain grey and grey + row hashes on the same capture, the first one alternating so
        // neither always finds the source in cache.
        let (mut grey_ms, mut hash_ms) = (0.0, 0.0);
        for k in 0..2 {
            let t = Instant::now();
            if (i + k) % 2 == 0 {
                to_grey(bgra, PixelOrder::Bgra, &mut plain);
                grey_ms = ms(t);
            } else {
                ingest(
                    Source::new(bgra, PixelOrder::Bgra, res.width as usize),
                    None,
                    None,
                    None,
                    dst,
                    &mut hashes,
                );
                hash_ms = ms(t);
            }
        }
        anyhow::ensure!(plain[..] == dst[..], "the two grey paths disagree");
        let t = Instant::now();
        let sum = checksum_of_rows(&hashes);
        let sum_ms = ms(t);
        let record = i > 0; // the first frame is a keyframe: measured separately below
        let kind = paths.step(i, &grey, &hashes, sum, record)?;
        if i == 0 {
            key_bytes = paths.rows.out.len();
        } else {
            g.push(grey_ms);
            gh.push(hash_ms);
            cs.push(sum_ms);
            unchanged += (kind == EncodedKind::Unchanged) as u64;
            if i % 10 == 0 {
                let mut k = Vec::new();
                let t = Instant::now();
                codec.compress(&grey, &mut k)?;
                kc.push(ms(t));
            }
        }
        pool.push(grey);
    }
    Ok(Row {
        scene: scene.name().into(),
        resolution: res
            .preset_name()
            .map(str::to_string)
            .unwrap_or_else(|| res.to_string()),
        frames,
        grey_ms_p50: median(&mut g),
        grey_hash_ms_p50: median(&mut gh),
        checksum_ms_p50: median(&mut cs),
        rows: paths.rows.result(),
        full: paths.full.result(),
        rects: paths.rects.result(),
        unchanged_frames: unchanged,
        keyframe_compress_ms_p50: median(&mut kc),
        keyframe_bytes: key_bytes,
    })
}

pub fn run(a: BenchCodecArgs) -> anyhow::Result<()> {
    if !a.input.is_empty() {
        return crate::codec_input::run(&a);
    }
    let scenes: Vec<Scene> = match &a.scenes {
        Some(s) => s
            .split(',')
            .map(|x| x.parse::<Scene>().map_err(anyhow::Error::msg))
            .collect::<Result<_, _>>()?,
        None => Scene::ALL.to_vec(),
    };
    let resolutions: Vec<Resolution> = match &a.resolutions {
        Some(s) => s
            .split(',')
            .map(|x| x.parse::<Resolution>())
            .collect::<Result<_, _>>()?,
        None => PRESETS
            .iter()
            .map(|p| Resolution {
                width: p.1,
                height: p.2,
            })
            .collect(),
    };
    anyhow::ensure!(a.frames >= 10, "--frames must be at least 10");
    let codec = a.codec.codec();
    let mut rows = Vec::new();
    if !a.json {
        println!(
            "codec {} — medians over {} frames per row (decode+apply = decompress + XOR)",
            codec.name(),
            a.frames
        );
        println!("(enc = compare + delta + compress, dec = decompress + apply: medians over frames that changed;");
        println!(" rows = framewire v1 row deltas, full = full-frame XOR deltas as the Daylight protocol carries)");
        println!(
            "{:<7} {:<12} {:>7} {:>7} {:>7} | {:>8} {:>8} {:>9} | {:>8} {:>8} {:>9} | {:>8} {:>8} {:>9} | {:>5} {:>8} {:>9}",
            "scene",
            "resolution",
            "grey",
            "grey+h",
            "sum",
            "rows enc",
            "rows dec",
            "rows B",
            "full enc",
            "full dec",
            "full B",
            "rect enc",
            "rect dec",
            "rect B",
            "same",
            "key enc",
            "key B"
        );
    }
    for &res in &resolutions {
        for &scene in &scenes {
            let r = bench_one(scene, res, a.frames, codec)?;
            if !a.json {
                println!(
                    "{:<7} {:<12} {:>7.3} {:>7.3} {:>7.3} | {:>8.3} {:>8.3} {:>9.0} | {:>8.3} {:>8.3} {:>9.0} | {:>8.3} {:>8.3} {:>9.0} | {:>5} {:>8.3} {:>9}",
                    r.scene,
                    r.resolution,
                    r.grey_ms_p50,
                    r.grey_hash_ms_p50,
                    r.checksum_ms_p50,
                    r.rows.delta_compress_ms_p50,
                    r.rows.decode_apply_ms_p50,
                    r.rows.bytes_per_frame_mean,
                    r.full.delta_compress_ms_p50,
                    r.full.decode_apply_ms_p50,
                    r.full.bytes_per_frame_mean,
                    r.rects.delta_compress_ms_p50,
                    r.rects.decode_apply_ms_p50,
                    r.rects.bytes_per_frame_mean,
                    r.unchanged_frames,
                    r.keyframe_compress_ms_p50,
                    r.keyframe_bytes
                );
            }
            rows.push(r);
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        let res = resolutions[resolutions.len() - 1];
        let (scalar, fast) = grey_side_by_side(res, a.frames);
        println!("grey at {res}, same frames, one run: scalar reference {scalar:.3} ms, vectorised {fast:.3} ms ({:.1}x)", scalar / fast);
        let t = tune_side_by_side(res, a.frames);
        println!(
            "display tuning at {res}, whole frame (grey + tuning + row hashes), same frames, one run: neutral {:.3} ms, crisp {:.3} ms, ink {:.3} ms",
            t[0], t[1], t[2]
        );
    }
    Ok(())
}

/// Medians of the scalar reference and the vectorised grey conversion, interleaved frame by
/// frame so both see the same machine state.
fn grey_side_by_side(res: Resolution, frames: u64) -> (f64, f64) {
    let mut src = SyntheticSource::new(Scene::Mixed, res.width, res.height);
    let mut out = vec![0u8; res.pixels()];
    let (mut s, mut f) = (vec![], vec![]);
    for i in 0..frames.min(60) {
        let bgra = src.render(i);
        let t = Instant::now();
        to_grey_scalar(bgra, PixelOrder::Bgra, &mut out);
        s.push(ms(t));
        let t = Instant::now();
        to_grey(bgra, PixelOrder::Bgra, &mut out);
        f.push(ms(t));
    }
    (median(&mut s), median(&mut f))
}

/// Medians of the first stage (grey + row hashes) over whole frames with each display profile,
/// interleaved frame by frame. The tuned profiles sharpen and look up every pixel.
fn tune_side_by_side(res: Resolution, frames: u64) -> [f64; 3] {
    let mut src = SyntheticSource::new(Scene::Mixed, res.width, res.height);
    let mut out = vec![0u8; res.pixels()];
    let mut hashes = Vec::new();
    let mut tuned: Vec<Tuned> = ["neutral", "crisp", "ink"]
        .iter()
        .map(|p| Tuned::new(Tuner::new(Tuning::profile(p).expect("a built-in profile"))))
        .collect();
    let mut times = [vec![], vec![], vec![]];
    for i in 0..frames.min(60) {
        let bgra = src.render(i);
        for (t, times) in tuned.iter_mut().zip(times.iter_mut()) {
            let start = Instant::now();
            let source = Source::new(bgra, PixelOrder::Bgra, res.width as usize);
            ingest(source, None, None, Some(t), &mut out, &mut hashes);
            times.push(ms(start));
        }
    }
    times.map(|mut t| median(&mut t))
}
