//! `framewire bench codec`: per-stage cost of the codec on every scene at every preset, with
//! medians over many frames. Rendering the synthetic scene is not timed.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use framewire_capture::{Resolution, Scene, SyntheticSource, PRESETS};
use framewire_codec::checksum::picture_checksum;
use framewire_codec::grey::{to_grey, to_grey_scalar, PixelOrder};
use framewire_codec::{EncodedKind, HostEncoder, Picture};
use serde::Serialize;

use crate::cli::BenchCodecArgs;

#[derive(Serialize)]
struct Row {
    scene: String,
    resolution: String,
    frames: u64,
    grey_ms_p50: f64,
    checksum_ms_p50: f64,
    delta_compress_ms_p50: f64,
    decode_apply_ms_p50: f64,
    bytes_per_frame_p50: f64,
    bytes_per_frame_mean: f64,
    unchanged_frames: u64,
    keyframe_compress_ms_p50: f64,
    keyframe_bytes: usize,
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn bench_one(
    scene: Scene,
    res: Resolution,
    frames: u64,
    codec: framewire_codec::BlockCodec,
) -> anyhow::Result<Row> {
    let mut src = SyntheticSource::new(scene, res.width, res.height);
    let mut enc = HostEncoder::new(codec, 0);
    let mut pic = Picture::new(res.width, res.height);
    let mut grey = Arc::new(vec![0u8; res.pixels()]);
    let mut spare: Option<Arc<Vec<u8>>> = None;
    let mut out = Vec::new();
    let (mut g, mut cs, mut dc, mut da, mut bytes, mut kc) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let mut unchanged = 0;
    let mut key_bytes = 0;
    for i in 0..=frames {
        let bgra = src.render(i);
        // Reuse the buffer the encoder released (as the server's pool does): no allocation.
        if let Some(b) = spare.take().filter(|b| Arc::strong_count(b) == 1) {
            grey = b;
        } else if Arc::strong_count(&grey) > 1 {
            grey = Arc::new(vec![0u8; res.pixels()]);
        }
        let t = Instant::now();
        to_grey(
            bgra,
            PixelOrder::Bgra,
            Arc::get_mut(&mut grey).context("grey buffer is shared")?,
        );
        let grey_ms = ms(t);
        let t = Instant::now();
        let sum = picture_checksum(&grey);
        let sum_ms = ms(t);
        let t = Instant::now();
        let (e, old) = enc.encode(grey.clone(), &mut out).context("encoding")?;
        let enc_ms = ms(t);
        spare = old;
        let t = Instant::now();
        match e.kind {
            EncodedKind::Unchanged => {}
            EncodedKind::Keyframe(_) => pic.decode(true, codec, &out)?,
            EncodedKind::Delta => pic.decode(false, codec, &out)?,
        }
        pic.apply();
        let dec_ms = ms(t);
        anyhow::ensure!(
            pic.pixels() == &grey[..] && pic.checksum() == sum,
            "frame {i} of {} did not round-trip",
            scene.name()
        );
        if i == 0 {
            key_bytes = e.payload_len;
            continue; // the first frame is a keyframe: measured separately below
        }
        g.push(grey_ms);
        cs.push(sum_ms);
        if e.kind != EncodedKind::Unchanged {
            dc.push(enc_ms);
            da.push(dec_ms);
        }
        bytes.push(e.payload_len as f64);
        unchanged += (e.kind == EncodedKind::Unchanged) as u64;
        if i % 10 == 0 {
            let mut k = Vec::new();
            let t = Instant::now();
            codec.compress(&grey, &mut k)?;
            kc.push(ms(t));
        }
    }
    let mean = bytes.iter().sum::<f64>() / bytes.len().max(1) as f64;
    Ok(Row {
        scene: scene.name().into(),
        resolution: res
            .preset_name()
            .map(str::to_string)
            .unwrap_or_else(|| res.to_string()),
        frames,
        grey_ms_p50: median(&mut g),
        checksum_ms_p50: median(&mut cs),
        delta_compress_ms_p50: median(&mut dc),
        decode_apply_ms_p50: median(&mut da),
        bytes_per_frame_p50: median(&mut bytes),
        bytes_per_frame_mean: mean,
        unchanged_frames: unchanged,
        keyframe_compress_ms_p50: median(&mut kc),
        keyframe_bytes: key_bytes,
    })
}

pub fn run(a: BenchCodecArgs) -> anyhow::Result<()> {
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
    let codec = crate::serve::codec(a.codec);
    let mut rows = Vec::new();
    if !a.json {
        println!(
            "codec {} — medians over {} frames per row (decode+apply = decompress + XOR)",
            codec.name(),
            a.frames
        );
        println!("(delta+comp and dec+apply: medians over frames that changed; unchanged frames cost a compare only)");
        println!(
            "{:<8} {:<12} {:>8} {:>8} {:>14} {:>13} {:>10} {:>10} {:>10} {:>12} {:>10}",
            "scene",
            "resolution",
            "grey ms",
            "xxh3 ms",
            "delta+comp ms",
            "dec+apply ms",
            "bytes p50",
            "bytes mean",
            "unchanged",
            "key comp ms",
            "key bytes"
        );
    }
    for &res in &resolutions {
        for &scene in &scenes {
            let r = bench_one(scene, res, a.frames, codec)?;
            if !a.json {
                println!(
                    "{:<8} {:<12} {:>8.3} {:>8.3} {:>14.3} {:>13.3} {:>10.0} {:>10.0} {:>10} {:>12.3} {:>10}",
                    r.scene, r.resolution, r.grey_ms_p50, r.checksum_ms_p50, r.delta_compress_ms_p50, r.decode_apply_ms_p50, r.bytes_per_frame_p50, r.bytes_per_frame_mean, r.unchanged_frames, r.keyframe_compress_ms_p50, r.keyframe_bytes
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
