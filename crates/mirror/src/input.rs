//! The input back-channel at run time: events from viewers (v1 Input packets, browser or
//! native, only from viewers that presented the control token) and from the Daylight app's
//! touch port go to one thread that owns the XTest connection. The deterministic parts (touch
//! stream parsing, tap/drag/scroll gestures) are in `framewire-input`.
//!
//! The queue to the thread is bounded: if the X server stops taking events, new ones are
//! dropped and counted (`input_dropped.queue_full`) rather than piling up.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};

use framewire_input::{Action, GestureConfig, Gestures};
use framewire_proto::daylight::{Touch as TouchPacket, TouchDecoder, TouchEvent, TouchKind};
use framewire_proto::v1::{InputKind, INPUT_TOUCH};
use std::sync::Arc;

use framewire_telemetry::{counter_set, Counter, Family, LogLimit};

counter_set! {
    /// What the input back-channel counts: refusals, drops, injected actions, the touch port.
    pub struct InputCounters {
        /// Connections to the touch port (`touch`).
        connections: Family,
        /// Input refused, by reason (`view_only`, `no_control_token`).
        input_refused: Family,
        /// Input dropped, by reason (`queue_full`, `injector_gone`, `x11_error`).
        input_dropped: Family,
        input_actions_injected: Counter,
        touch_packets: Counter,
        touch_bytes_skipped: Counter,
        /// Bytes of the touch stream refused, by reason.
        touch_rejected: Family,
    }
}
use framewire_x11::{Injector, Region};
use tracing::{info, warn};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputConfig {
    pub display: Option<String>,
    /// The captured part of the screen: picture coordinates are relative to it.
    pub region: Option<Region>,
}

#[derive(Debug, Clone, Copy)]
pub enum InputEvent {
    /// A v1 Input packet, in picture pixels.
    Viewer {
        kind: InputKind,
        x: i32,
        y: i32,
        code: u32,
    },
    /// A Daylight touch packet, normalised to the picture.
    Touch(TouchPacket),
}

#[derive(Clone)]
pub struct InputSink {
    tx: SyncSender<InputEvent>,
    counters: Arc<InputCounters>,
}

impl InputSink {
    pub fn send(&self, e: InputEvent) {
        match self.tx.try_send(e) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.counters.input_dropped.inc("queue_full"),
            Err(TrySendError::Disconnected(_)) => self.counters.input_dropped.inc("injector_gone"),
        }
    }
}

/// Opens the injector now (so a missing XTest is reported at start) and starts its thread.
pub fn start(cfg: &InputConfig, counters: Arc<InputCounters>) -> anyhow::Result<InputSink> {
    let inj = Injector::open(cfg.display.as_deref()).map_err(|e| anyhow::anyhow!("input: {e}"))?;
    let (sw, sh) = inj.screen_size();
    let r = cfg.region.unwrap_or(Region {
        x: 0,
        y: 0,
        width: sw,
        height: sh,
    });
    let (tx, rx) = sync_channel(1024);
    let c = counters.clone();
    std::thread::Builder::new()
        .name("framewire-input".into())
        .spawn(move || run(inj, r, rx, c))?;
    info!(region = ?r, "input injection on (XTest)");
    Ok(InputSink { tx, counters })
}

/// Turns one event into actions, in screen coordinates.
pub fn actions(e: InputEvent, r: Region, touch: &mut Gestures) -> Vec<Action> {
    let (ox, oy) = (r.x as i32, r.y as i32);
    let clamp = |x: i32, y: i32| {
        (
            ox + x.clamp(0, r.width as i32 - 1),
            oy + y.clamp(0, r.height as i32 - 1),
        )
    };
    match e {
        InputEvent::Viewer { kind, x, y, code } => {
            let (sx, sy) = clamp(x, y);
            let finger = code & INPUT_TOUCH != 0;
            let button = (code & 0xff).clamp(1, 3) as u8;
            match (kind, finger) {
                (InputKind::PointerMove, false) => vec![Action::Move { x: sx, y: sy }],
                (InputKind::PointerMove, true) => touch.moved(sx, sy),
                (InputKind::PointerDown, false) => vec![
                    Action::Move { x: sx, y: sy },
                    Action::Button { button, down: true },
                ],
                (InputKind::PointerDown, true) => touch.down(sx, sy),
                (InputKind::PointerUp, false) => vec![
                    Action::Move { x: sx, y: sy },
                    Action::Button {
                        button,
                        down: false,
                    },
                ],
                (InputKind::PointerUp, true) => touch.up(sx, sy),
                (InputKind::Wheel, _) => touch.scroll(x as f64, y as f64),
                (InputKind::KeyDown, _) => vec![Action::Key {
                    keysym: code,
                    down: true,
                }],
                (InputKind::KeyUp, _) => vec![Action::Key {
                    keysym: code,
                    down: false,
                }],
            }
        }
        InputEvent::Touch(t) => {
            let px = |v: f32, n: u16| (v as f64 * (n as f64 - 1.0)).round() as i32;
            let (sx, sy) = clamp(px(t.x, r.width), px(t.y, r.height));
            match t.kind {
                TouchKind::Down => touch.down(sx, sy),
                TouchKind::Move => touch.moved(sx, sy),
                TouchKind::Up => touch.up(sx, sy),
                // Normalised finger travel; the content follows the fingers, so a swipe up
                // (negative dy) scrolls down.
                TouchKind::Scroll => touch.scroll(
                    -(t.dx as f64) * r.width as f64,
                    -(t.dy as f64) * r.height as f64,
                ),
            }
        }
    }
}

fn run(mut inj: Injector, r: Region, rx: Receiver<InputEvent>, counters: Arc<InputCounters>) {
    let mut touch = Gestures::new(GestureConfig::default());
    let injected = &counters.input_actions_injected;
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        batch.extend(rx.try_iter().take(255));
        for e in batch {
            for a in actions(e, r, &mut touch) {
                if let Err(err) = inj.apply(a) {
                    counters.input_dropped.inc("x11_error");
                    warn!(error = %err, "input injection failed");
                    continue;
                }
                injected.inc();
            }
        }
        if let Err(err) = inj.flush() {
            warn!(error = %err, "input: X connection lost; injection stops");
            counters.input_dropped.inc("x11_error");
            return;
        }
    }
}

/// The Daylight touch port: a stream of 23-byte packets per connection, parsed as a stream.
pub async fn serve_touch(
    l: tokio::net::TcpListener,
    gate: Arc<framewire_net::Gate>,
    sink: Option<InputSink>,
    counters: Arc<InputCounters>,
) {
    use tokio::io::AsyncReadExt;
    loop {
        let framewire_net::Admitted {
            mut sock,
            peer,
            permit,
        } = gate.accept(&l).await;
        let (sink, counters) = (sink.clone(), counters.clone());
        tokio::spawn(async move {
            let _permit = permit;
            info!(%peer, "touch connection");
            counters.connections.inc("touch");
            let mut dec = TouchDecoder::new();
            let mut buf = [0u8; 4096];
            // A stream of garbage is counted in full and logged once a second.
            let mut log = LogLimit::per_second();
            while let Ok(n) = sock.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                dec.feed(&buf[..n]);
                while let Some(ev) = dec.next_event() {
                    match (ev, &sink) {
                        (TouchEvent::Touch(t), Some(s)) => {
                            counters.touch_packets.inc();
                            s.send(InputEvent::Touch(t))
                        }
                        (TouchEvent::Touch(_), None) => counters.input_refused.inc("view_only"),
                        (TouchEvent::Skipped { bytes, reason }, _) => {
                            counters.touch_bytes_skipped.add(bytes as u64);
                            counters.touch_rejected.inc(reason);
                            if let Some(held) = log.allow(std::time::Instant::now()) {
                                warn!(%peer, bytes, reason, held, "touch: bad bytes in the stream skipped (held: lines not logged since the last)");
                            }
                        }
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picture_and_touch_coordinates_map_into_the_region() {
        let r = Region {
            x: 100,
            y: 50,
            width: 800,
            height: 600,
        };
        let mut g = Gestures::new(GestureConfig::default());
        let down = InputEvent::Viewer {
            kind: InputKind::PointerDown,
            x: 10,
            y: 20,
            code: 1,
        };
        assert_eq!(
            actions(down, r, &mut g),
            [
                Action::Move { x: 110, y: 70 },
                Action::Button {
                    button: 1,
                    down: true
                }
            ]
        );
        // Out of the picture: clamped to its edge.
        let far = InputEvent::Viewer {
            kind: InputKind::PointerMove,
            x: 5000,
            y: -3,
            code: 0,
        };
        assert_eq!(actions(far, r, &mut g), [Action::Move { x: 899, y: 50 }]);
        // A Daylight tap in the middle clicks the middle of the region.
        let t = |kind| {
            InputEvent::Touch(TouchPacket {
                kind,
                x: 0.5,
                y: 0.5,
                dx: 0.0,
                dy: 0.0,
                pointer: 0,
            })
        };
        assert!(actions(t(TouchKind::Down), r, &mut g).is_empty());
        assert_eq!(
            actions(t(TouchKind::Up), r, &mut g),
            [
                Action::Move { x: 500, y: 350 },
                Action::Button {
                    button: 1,
                    down: true
                },
                Action::Button {
                    button: 1,
                    down: false
                }
            ]
        );
    }
}
