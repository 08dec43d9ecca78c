//! `framewire publish --shm NAME`: renders a synthetic screen and publishes it, BGRA, to a
//! shared-memory route that `framewire serve --source shm:NAME` takes as its screen. Any local
//! program that captures pictures can feed the server the same way (`ShmPublisher`, or the
//! message layout in `framewire_proto::shm_frame`, topic `framewire.capture.v1`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use framewire_capture::{Damage, ShmPublisher, SyntheticSource};
use framewire_server::SourceSpec;
use framewire_telemetry::clock::now_us;

use crate::cli::PublishArgs;

pub fn run(a: PublishArgs) -> anyhow::Result<()> {
    let (spec, res) = crate::serve::source(&a.source)?;
    let SourceSpec::Synthetic(scene) = spec else {
        anyhow::bail!("publish renders a synthetic scene; --source must be `synthetic`");
    };
    let mut publisher = ShmPublisher::open(&a.shm, res.pixels())
        .with_context(|| format!("creating shared-memory route {}", a.shm))?;
    println!(
        "publishing synthetic:{} at {res} ({} fps) to {}; serve it with `framewire serve --source shm:{}`. Ctrl-C to stop.",
        scene.name(),
        a.source.fps,
        publisher.channel().path().display(),
        a.shm
    );
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        s2.store(true, Ordering::Relaxed);
    });
    let mut src = SyntheticSource::new(scene, res.width, res.height);
    let period = Duration::from_secs_f64(1.0 / a.source.fps.max(1) as f64);
    let mut next = Instant::now();
    let (mut sent, mut skipped) = (0u64, 0u64);
    for i in 0.. {
        if a.frames.is_some_and(|n| i >= n) || stop.load(Ordering::Relaxed) {
            break;
        }
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        next += period;
        src.render(i);
        let unchanged = src.damage() == &Damage::Rows(vec![]);
        let bgra = src.render(i); // the same picture, already rendered
        let px = (!unchanged).then_some(bgra);
        if publisher.publish(i, now_us(), res.width, res.height, px)? {
            sent += 1;
        } else {
            skipped += 1;
        }
    }
    println!("published {sent} frames ({skipped} skipped: no room)");
    Ok(())
}
