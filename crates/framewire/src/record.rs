//! `framewire record`: captures a source at its pace and writes every picture, with its capture
//! time and damage, to a recording (`framewire_record`, specified in spec/PROTOCOL.md).

use std::fs::OpenOptions;
use std::io::BufWriter;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use framewire_capture::Damage;
use framewire_record::{Header, Writer};
use framewire_server::SourceSpec;

use crate::cli::RecordArgs;

pub async fn run(a: RecordArgs) -> anyhow::Result<()> {
    let (mut spec, res) = crate::serve::source(&a.source)?;
    crate::serve::x11_options(&mut spec, a.region.as_deref(), a.no_cursor)?;
    if let Some(s) = a.seconds {
        anyhow::ensure!(s.is_finite() && s > 0.0, "--seconds must be above 0");
    }
    anyhow::ensure!((1..=240).contains(&a.source.fps), "--fps must be 1 to 240");
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        s2.store(true, Ordering::Relaxed);
    });
    tokio::task::spawn_blocking(move || record(a, spec, res, stop)).await?
}

/// What one recording run wrote.
#[derive(Default)]
struct Tally {
    captures: u64,
    changed: u64,
}

fn record(
    a: RecordArgs,
    spec: SourceSpec,
    res: framewire_capture::Resolution,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<()> {
    let mut src = framewire_server::open_source(&spec, res.width, res.height, 0)
        .context("opening the source")?;
    let (w, h) = src.size();
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(a.force)
        .create_new(!a.force)
        .open(&a.out)
        .with_context(|| match a.force {
            true => format!("creating {}", a.out.display()),
            false => format!("creating {} (--force replaces it)", a.out.display()),
        })?;
    let mut out = Writer::new(
        BufWriter::with_capacity(1 << 20, file),
        Header {
            width: w,
            height: h,
        },
    )
    .with_context(|| format!("writing {}", a.out.display()))?;
    eprintln!(
        "recording {} ({w}×{h}, {} fps) to {}; Ctrl-C to stop",
        src.name(),
        a.source.fps,
        a.out.display()
    );
    let period = Duration::from_secs_f64(1.0 / a.source.fps as f64);
    let until = a.seconds.map(Duration::from_secs_f64);
    let start = Instant::now();
    let (mut next, mut progress) = (start, start + Duration::from_secs(1));
    let mut t = Tally::default();
    while !stop.load(Ordering::Relaxed)
        && a.frames.is_none_or(|n| t.captures < n)
        && until.is_none_or(|u| start.elapsed() < u)
    {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        // Behind (a slow capture): the next capture is a period from now, not a burst.
        next = (next + period).max(Instant::now());
        let c = src.capture().context("capturing")?;
        anyhow::ensure!(
            (c.width, c.height) == (w, h),
            "the source changed size ({w}×{h} → {}×{}); a recording has one size",
            c.width,
            c.height
        );
        let at = start.elapsed().as_micros() as u64;
        t.changed += (c.damage != Damage::Rows(vec![])) as u64;
        out.write(at, c.bgra, &c.damage)
            .with_context(|| format!("writing {}", a.out.display()))?;
        t.captures += 1;
        if Instant::now() >= progress {
            progress += Duration::from_secs(1);
            eprintln!(
                "  {:>6.1} s  {} captures, {} changed, {:.1} MB",
                start.elapsed().as_secs_f64(),
                t.captures,
                t.changed,
                out.bytes() as f64 / 1e6
            );
        }
    }
    let bytes = out.bytes();
    out.finish()
        .with_context(|| format!("writing {}", a.out.display()))?;
    println!(
        "recorded {} captures ({} changed) over {:.1} s to {}: {:.1} MB, {:.0} bytes per changed picture",
        t.captures,
        t.changed,
        start.elapsed().as_secs_f64(),
        a.out.display(),
        bytes as f64 / 1e6,
        bytes as f64 / t.changed.max(1) as f64
    );
    Ok(())
}
