//! One viewer connection: a single task owns its [`HostSession`] and only moves bytes and
//! timestamps. It reads what the viewer sends, offers it the newest frame whenever its flow
//! has room, passes on display commands, wakes at the session's own timeout (pings, ACK
//! timeouts) and writes what the session queues. Nothing is shared with another task but the
//! published figures; a viewer whose socket stops draining blocks only this task.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use framewire_flow::{Plan, TransportRtt};
use framewire_session::{Event, HostSession, SourceFrame, Transmit, Wire};
use tokio::sync::broadcast;
use tracing::{debug, warn};

use framewire_session::HostCount;
use framewire_telemetry::clock::{now_us, thread_cpu_us};
use framewire_telemetry::observe_us;

use crate::mirror::{lock, Mirror, ViewerShared};
use crate::transport::Transport;
/// Bytes read from the viewer at a time (ACKs, pings, input: small packets).
const READ_BUF: usize = 16 * 1024;

struct SessionCtx {
    mirror: Arc<Mirror>,
    viewer: Arc<ViewerShared>,
    /// The viewer takes the colour stream.
    colour: bool,
}

/// Runs the session until the viewer leaves, breaks the protocol, or the server stops; its
/// last figures are published however it ends.
pub(crate) async fn drive<W: Wire, T: Transport>(
    mut session: HostSession<W>,
    mirror: Arc<Mirror>,
    viewer: Arc<ViewerShared>,
    sock: T,
    colour: bool,
) -> io::Result<()> {
    let cx = SessionCtx {
        mirror,
        viewer,
        colour,
    };
    let r = run(&mut session, &cx, sock).await;
    publish_figures(&session, &cx, true, None);
    r
}

async fn run<W: Wire, T: Transport>(
    session: &mut HostSession<W>,
    cx: &SessionCtx,
    mut sock: T,
) -> io::Result<()> {
    let mirror = cx.mirror.clone();
    let mut frames = match cx.colour {
        true => mirror.colour_frames.subscribe(),
        false => mirror.frames.subscribe(),
    };
    frames.mark_changed();
    let mut cmds = mirror.commands.subscribe();
    let mut shutdown = mirror.stop.subscribe();
    let mut rbuf = vec![0u8; READ_BUF];
    // What the viewer sent right behind its Hello is already in the session's reader.
    session.handle_bytes(now_us(), &[]);
    loop {
        let now = now_us();
        session.handle_timeout(now);
        flush(session, cx, &mut sock).await?;
        if session.is_done() {
            return Ok(());
        }
        let newest = frames.borrow().as_ref().map(|f| f.info());
        if let Some(newest) = newest {
            session.note_newest(&newest);
        }
        let can = session.can_send(now);
        if can && frames.has_changed().unwrap_or(false) {
            offer(session, &mirror, &mut frames).await?;
            continue;
        }
        let wake = session.poll_timeout().map(|t| t.saturating_sub(now));
        tokio::select! {
            biased;
            _ = shutdown.changed() => return Ok(()),
            r = sock.read(&mut rbuf) => match r? {
                0 => return Ok(()),
                n => session.handle_bytes(now_us(), &rbuf[..n]),
            },
            r = frames.changed(), if can => {
                r.map_err(|_| io::Error::other("capture stopped"))?;
                offer(session, &mirror, &mut frames).await?;
            }
            c = cmds.recv() => match c {
                Ok(c) => session.command(c),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    mirror.counters.commands_lagged.add(n)
                }
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            },
            _ = sleep_for(wake) => {}
        }
    }
}

async fn sleep_for(us: Option<u64>) {
    match us {
        Some(us) => tokio::time::sleep(Duration::from_micros(us)).await,
        None => std::future::pending().await,
    }
}

/// Offers the newest frame: planned by the session, compressed off the async workers when it
/// needs compressing, then sent. When the viewer missed the frame before it and can catch up
/// ([`HostSession::catches_up_with`]), that one goes first, and the newest stays offered.
async fn offer<W: Wire>(
    session: &mut HostSession<W>,
    mirror: &Mirror,
    frames: &mut tokio::sync::watch::Receiver<Option<Arc<SourceFrame>>>,
) -> io::Result<()> {
    let Some(newest) = frames.borrow_and_update().clone() else {
        return Ok(());
    };
    let f = match newest.previous() {
        // Claimed first: a frame the capture passed over is never offered again.
        Some(p) if session.catches_up_with(&newest, &p) && p.claim() => {
            mirror.counters.frames_caught_up.inc();
            // Offered again as soon as the flow has room.
            frames.mark_changed();
            p
        }
        _ => newest,
    };
    if !f.claim() {
        // The capture passed over it (costly deltas; `pass_over.rs`): the next frame, made
        // against a picture a viewer took, is being made.
        return Ok(());
    }
    let (plan, work) = session.plan_frame(&f);
    if let Some(work) = work {
        let (took, cpu) = tokio::task::spawn_blocking(move || {
            let (t, c) = (now_us(), thread_cpu_us());
            work();
            (now_us() - t, thread_cpu_us().saturating_sub(c))
        })
        .await
        .map_err(io::Error::other)?;
        match plan {
            Plan::Keyframe { .. } => lock(&mirror.pipeline).keyframe_us.push(took as f64),
            // What making it cost, not how long it waited for a core: on a busy machine the
            // wall time of a 4 ms delta went past 8 ms, and the viewer was taken for one whose
            // deltas are costly.
            Plan::Rebased { .. } => session.on_rebased_made(cpu),
            _ => {}
        }
    }
    session.send_frame(now_us(), &f, plan);
    Ok(())
}

/// Writes what the session queued and acts on what it reports, then publishes its figures.
async fn flush<W: Wire, T: Transport>(
    session: &mut HostSession<W>,
    cx: &SessionCtx,
    sock: &mut T,
) -> io::Result<()> {
    // The bound first: it counts a stall probe just planned, and only a write wakes the
    // transport to find the room it makes.
    if let Some(p) = sock.path() {
        let rtt = TransportRtt {
            smoothed_us: p.rtt_us,
            min_us: p.min_rtt_us,
        };
        let bound = session.window_bound(rtt, now_us());
        sock.bound_window(bound, session.window_least());
    }
    while let Some(t) = session.poll_transmit() {
        write(cx, sock, t).await?;
    }
    let mut acked = false;
    while let Some(e) = session.poll_event() {
        acked |= matches!(e, Event::Rtt(_));
        on_event(cx, e);
    }
    let path = sock.path();
    if let Some(p) = &path {
        session.on_path_counters(p.sent_packets, p.lost_packets, now_us());
    }
    publish_figures(session, cx, acked, path);
    Ok(())
}

/// What the reports read of this viewer: its flow figures every time (a copy of a few
/// numbers), its RTT window when it changed.
fn publish_figures<W: Wire>(
    session: &HostSession<W>,
    cx: &SessionCtx,
    rtt_changed: bool,
    path: Option<crate::transport::PathFigures>,
) {
    let mut r = lock(&cx.viewer.flow);
    r.stats = session.flow_stats();
    r.link = session.link_estimate();
    if path.is_some() {
        r.path = path;
    }
    if rtt_changed {
        r.rtt = session.rtt_window().clone();
    }
}

async fn write<T: Transport>(cx: &SessionCtx, sock: &mut T, t: Transmit) -> io::Result<()> {
    let t0 = now_us();
    let bytes = t.head.len() + t.payload.as_ref().map_or(0, |p| p.len());
    let frame = t.frame;
    sock.send(t).await?;
    cx.viewer
        .bytes_sent
        .fetch_add(bytes as u64, Ordering::Relaxed);
    if frame {
        let took = now_us() - t0;
        lock(&cx.mirror.send_us).push(took as f64);
        observe_us(&cx.mirror.stages.send, took);
    }
    Ok(())
}

fn on_event(cx: &SessionCtx, e: Event) {
    let (mirror, viewer) = (&cx.mirror, &cx.viewer);
    match e {
        Event::Rtt(rtt) => observe_us(&mirror.stages.rtt, rtt),
        Event::EndToEnd(us) => {
            lock(&viewer.e2e_us).push(us as f64);
            observe_us(&mirror.stages.end_to_end, us);
        }
        Event::FrameSent { ack_id, checksum } => {
            if let Some(t) = &mirror.trace {
                use std::io::Write;
                let line = format!(
                    "{} {} {} {:016x}\n",
                    viewer.protocol.name(),
                    viewer.id,
                    ack_id,
                    checksum
                );
                let _ = lock(t).write_all(line.as_bytes());
            }
        }
        Event::Input {
            kind,
            x,
            y,
            code,
            control,
        } => match mirror.input.get() {
            Some(sink) if control => {
                sink.send(crate::input::InputEvent::Viewer { kind, x, y, code })
            }
            Some(_) => mirror.input_counters.input_refused.inc("no_control_token"),
            None => mirror.input_counters.input_refused.inc("view_only"),
        },
        Event::Count(what) => {
            let c = &mirror.counters;
            match what {
                HostCount::DeltaSentAsKeyframe => c.deltas_sent_as_keyframes.inc(),
                HostCount::PongDropped => c.pongs_dropped.inc(),
                HostCount::LargeDatagramsOutrun => {
                    c.large_datagrams_outrun.inc();
                    debug!(
                        viewer = viewer.id,
                        "the content outruns the path: large frames on streams for a while"
                    );
                }
                HostCount::BaseMissing => {
                    c.viewer_bases_missing.inc();
                    debug!(
                        viewer = viewer.id,
                        "viewer lost a frame; repairing from its picture"
                    );
                }
                HostCount::ViewerChecksumMismatch | HostCount::ViewerDecodeError => {
                    if what == HostCount::ViewerChecksumMismatch {
                        c.viewer_checksum_mismatch.inc();
                    } else {
                        c.viewer_decode_errors.inc();
                    }
                    warn!(
                        viewer = viewer.id,
                        what = ?what,
                        "viewer could not reproduce the frame; sending a keyframe"
                    );
                }
            }
        }
        Event::Rejected(e) => {
            mirror.counters.rejected_packets.inc(e.reason());
            warn!(viewer = viewer.id, protocol = viewer.protocol.name(), peer = %viewer.peer, error = %e, "closing connection: bad packet");
        }
        Event::ViewerLeft { code, reason } => {
            debug!(viewer = viewer.id, code, %reason, "viewer said goodbye");
        }
    }
}
