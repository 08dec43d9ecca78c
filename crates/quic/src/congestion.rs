//! QUIC's congestion window for a real-time sender: BBR's, without its fall to the bytes in
//! flight when a loss is detected.
//!
//! BBR (quinn's) enters *packet conservation* on a loss: its window becomes the bytes in
//! flight at that moment, and grows only with the ACKs that follow. A frame stream is
//! application-limited, so that is a small number (57 kB measured, under a 2.2 MB window). In
//! a blackout no ACK follows: once the frames sent into it fill those bytes, nothing else
//! leaves, not even the frames made to cross when the path comes back, until quinn's probe
//! timeout (doubled with each probe lost) lets a packet through. Measured on scroll at 80 ms
//! and 5 % loss, that cost about 240 ms after the path came back, where a sender that kept
//! going was exact again in 50 ms (BENCHMARKS.md, "The blackout seen from both ends").
//!
//! [`KeptWindow`] wraps a controller and, while the sender uses at most half its window, never
//! lets that window fall below the largest the wrapped one reported within the last [`HOLD`].
//! BBR's model of the path (delivery rate × minimum RTT) still sets that window, and its
//! pacing rate is untouched; only the loss reaction is undone, for a bounded time, and only
//! for a sender that was not using the window it had. A sender that fills its window (a video
//! on a slow link) gets BBR's window as it is: there a loss is more likely its own overshoot,
//! and keeping the window measured at 10 Mbit/s left some runs with no frame whole at all.
//! (quinn's own "application-limited" flag does not tell them apart: a sender held back by
//! the fallen window is not application-limited, so that flag lost the window exactly when
//! it was needed.) The application already keeps what is in
//! flight to about one frame beyond the bandwidth-delay product (`framewire_flow`'s byte
//! budget) and skips frames beyond it, so the transport's window is a backstop, not the
//! sender's brake. The wrapped controller's window is re-read only at ACKs: through a
//! blackout the window kept stays where it was (the application's bound and least, below,
//! are read whenever quinn asks for the window).
//!
//! **A bound from the application.** quinn paces at 1.25 windows per smoothed RTT, and BBR's
//! window on a rate-limited link measured 8–470 times the bandwidth-delay product (a frame
//! stream's bursts and ACKs make its delivery-rate samples too large). A frame's packets then
//! leave far faster than the link takes them, and the link's queue drops thousands a second
//! on a link set to lose none (BENCHMARKS.md, "QUIC's window is many times the path"). The
//! host measures the path itself, frame by frame, and where the path queues it sets a
//! [`WindowBound`]: the window is then at most that. Whether a sender fills
//! its window (above) is judged against the window before the bound, so under a bound BBR's
//! fall on a loss stays undone; the bound is the brake there.
//!
//! **The least from the application.** On a path that loses packets at random, quinn's BBR
//! can stay in loss recovery, its window a few hundred kilobytes, while the loss lasts, and a
//! sender of large frames fills that window, so it is not kept (above); the frames then cross
//! at that window a round trip (BENCHMARKS.md, "A floor under QUIC's window"). The host's own
//! byte budget, from the delivery rate its frames' ACKs show, does not take random loss for
//! congestion. The host sets that budget, with room for the stall probes it sent since the
//! last ACK where they go on past one budget, as the least the window may be
//! ([`WindowBound::set_least`]): the window is at least that, and still at most the bound. (In
//! a blackout the window fills with packets the path lost, which quinn counts in flight until
//! it has heard otherwise; the probes' room lets the probe sent when the path comes back
//! leave at once.)
//! The bound is set wherever the round trip showed a queue, so the least acts where it did
//! not, and there it overrides BBR's response to loss, a persistent congestion's included:
//! the host's budget, about twice what its frames' ACKs show the path delivered in a minimum
//! RTT, is then what limits the window.

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::congestion::{Controller, ControllerFactory, ControllerMetrics};
use quinn_proto::RttEstimator;

/// How long the largest window is kept once the wrapped controller lowers its own.
pub const HOLD: Duration = Duration::from_secs(1);

/// The smallest bound a [`WindowBound`] sets, a backstop: the host's own bound has the same
/// floor, kept equal by hand, before it adds room for its stall probes (`WINDOW_BOUND_FLOOR`
/// in `framewire_flow`'s `rate.rs`).
pub const BOUND_FLOOR: u64 = 64 * 1024;

/// The largest window the application allows a connection, and the least, shared between the
/// connection's controller and whoever drives the connection. Read through
/// [`WindowBound::of`] from a connection whose controller is a [`KeptWindow`].
#[derive(Debug, Clone, Default)]
pub struct WindowBound(Arc<Limits>);

/// 0: none.
#[derive(Debug, Default)]
struct Limits {
    most: AtomicU64,
    least: AtomicU64,
}

impl WindowBound {
    /// At most `bytes` in flight, but never less than [`BOUND_FLOOR`]; `None` lifts the bound.
    pub fn set(&self, bytes: Option<u64>) {
        let v = bytes.map_or(0, |b| b.max(BOUND_FLOOR));
        self.0.most.store(v, Ordering::Relaxed);
    }

    /// The bound in force (`None`: none).
    pub fn get(&self) -> Option<u64> {
        match self.0.most.load(Ordering::Relaxed) {
            0 => None,
            b => Some(b),
        }
    }

    /// At least `bytes` may be in flight, under the bound (`None` or 0: no least): what the
    /// application's own measure of the path allows (the module doc, "The least from the
    /// application").
    pub fn set_least(&self, bytes: Option<u64>) {
        self.0.least.store(bytes.unwrap_or(0), Ordering::Relaxed);
    }

    /// The least in force (0: none).
    pub fn least(&self) -> u64 {
        self.0.least.load(Ordering::Relaxed)
    }

    /// The bound of `conn`'s controller, when it is a [`KeptWindow`].
    pub fn of(conn: &quinn::Connection) -> Option<WindowBound> {
        let c = conn
            .congestion_state()
            .into_any()
            .downcast::<KeptWindow>()
            .ok()?;
        Some(c.bound.clone())
    }
}

/// A controller whose window does not fall for [`HOLD`] after the wrapped one lowers it, and
/// is never above its [`WindowBound`]'s bound nor, under that, below its least.
pub struct KeptWindow {
    inner: Box<dyn Controller>,
    /// The largest window the wrapped controller reported within [`HOLD`], and when.
    kept: Option<(u64, Instant)>,
    /// At the last ACKs, more than half the window before the bound and the least (the wrapped
    /// one's, or the one kept) was in flight. Under a
    /// bound far below BBR's window this stays false, and BBR's fall on a loss is undone: the
    /// bound, set from the host's own measure of the path, is the brake there.
    filling: bool,
    bound: WindowBound,
}

impl KeptWindow {
    pub fn new(inner: Box<dyn Controller>) -> Self {
        KeptWindow {
            inner,
            kept: None,
            filling: false,
            bound: WindowBound::default(),
        }
    }

    /// The window before the bound and the least: the wrapped one's, or the one kept.
    fn unbounded(&self) -> u64 {
        let w = self.inner.window();
        match self.kept {
            Some((k, _)) if !self.filling => w.max(k),
            _ => w,
        }
    }

    fn remember(&mut self, now: Instant) {
        let w = self.inner.window();
        let keep = match self.kept {
            Some((k, at)) => w >= k || now.saturating_duration_since(at) > HOLD,
            None => true,
        };
        if keep {
            self.kept = Some((w, now));
        }
    }
}

impl Controller for KeptWindow {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.inner.on_ack(now, sent, bytes, app_limited, rtt);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        // The window before these ACKs' losses took effect, then after.
        self.filling = in_flight.saturating_mul(2) > self.unbounded();
        self.remember(now);
        self.inner
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
        self.remember(now);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        self.remember(now);
        self.inner
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        let w = self.unbounded().max(self.bound.least());
        self.bound.get().map_or(w, |b| w.min(b))
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = self.inner.metrics();
        m.congestion_window = self.window();
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(KeptWindow {
            inner: self.inner.clone_box(),
            kept: self.kept,
            filling: self.filling,
            bound: self.bound.clone(),
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Builds a [`KeptWindow`] around each controller `F` builds.
pub struct KeptWindowConfig<F>(pub Arc<F>);

impl<F: ControllerFactory + Send + Sync + 'static> ControllerFactory for KeptWindowConfig<F> {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(KeptWindow::new(self.0.clone().build(now, current_mtu)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A controller whose window the test sets.
    #[derive(Clone)]
    struct Set(Arc<Mutex<u64>>);

    impl Controller for Set {
        fn on_congestion_event(&mut self, _: Instant, _: Instant, _: bool, _: u64) {}
        fn on_mtu_update(&mut self, _: u16) {}
        fn window(&self) -> u64 {
            *self.0.lock().unwrap()
        }
        fn clone_box(&self) -> Box<dyn Controller> {
            Box::new(self.clone())
        }
        fn initial_window(&self) -> u64 {
            12_000
        }
        fn into_any(self: Box<Self>) -> Box<dyn Any> {
            self
        }
    }

    /// A [`KeptWindow`] around a controller whose window starts at `window`, the handle that
    /// sets it, and a start time.
    fn wrapped(window: u64) -> (Arc<Mutex<u64>>, KeptWindow, Instant) {
        let w = Arc::new(Mutex::new(window));
        (w.clone(), KeptWindow::new(Box::new(Set(w))), Instant::now())
    }

    #[test]
    fn a_window_lowered_by_a_loss_is_kept_for_the_hold_then_follows() {
        let (w, mut c, t0) = wrapped(2_000_000);
        c.on_end_acks(t0, 50_000, true, Some(10));
        assert_eq!(c.window(), 2_000_000);

        // A loss: the wrapped window falls to what was in flight.
        c.on_congestion_event(t0, t0, false, 1_200);
        *w.lock().unwrap() = 57_000;
        c.on_end_acks(t0 + Duration::from_millis(5), 57_000, true, Some(11));
        assert_eq!(c.window(), 2_000_000, "kept through the loss");
        // No ACK for a while (a blackout): still kept, whatever the time.
        assert_eq!(c.window(), 2_000_000);

        // ACKs after the hold: the window follows the wrapped one again, down as well as up.
        c.on_end_acks(
            t0 + HOLD + Duration::from_millis(10),
            57_000,
            true,
            Some(12),
        );
        assert_eq!(c.window(), 57_000);
        *w.lock().unwrap() = 300_000;
        c.on_end_acks(t0 + HOLD + Duration::from_millis(20), 0, true, Some(13));
        assert_eq!(c.window(), 300_000);
        assert_eq!(c.metrics().congestion_window, 300_000);
    }

    #[test]
    fn a_sender_that_fills_its_window_gets_the_wrapped_window_as_it_is() {
        let (w, mut c, t0) = wrapped(2_000_000);
        c.on_end_acks(t0, 50_000, true, Some(10));
        *w.lock().unwrap() = 500_000;
        c.on_end_acks(t0 + Duration::from_millis(1), 50_000, true, Some(11));
        assert_eq!(c.window(), 2_000_000, "a quarter of it in flight: kept");
        // More than half the window in flight: BBR's window as it is.
        c.on_end_acks(t0 + Duration::from_millis(5), 1_100_000, false, Some(12));
        assert_eq!(c.window(), 500_000);
        c.on_end_acks(t0 + Duration::from_millis(6), 490_000, false, Some(13));
        assert_eq!(c.window(), 500_000, "still filling the window it has");
        // Little in flight again: the window of the last second is kept.
        c.on_end_acks(t0 + Duration::from_millis(10), 20_000, true, Some(14));
        assert_eq!(c.window(), 2_000_000);
    }

    #[test]
    fn the_least_raises_the_window_but_not_past_the_bound() {
        let (w, mut c, t0) = wrapped(280_000);
        c.on_end_acks(t0, 270_000, false, Some(1));
        assert_eq!(c.window(), 280_000);
        let b = c.bound.clone();
        b.set_least(Some(1_100_000));
        assert_eq!(
            c.window(),
            1_100_000,
            "the host's budget, over BBR's window"
        );
        assert_eq!(c.metrics().congestion_window, 1_100_000);
        // A larger window of BBR's own is not lowered to the least.
        *w.lock().unwrap() = 3_000_000;
        assert_eq!(c.window(), 3_000_000);
        *w.lock().unwrap() = 280_000;
        // The bound still caps it.
        b.set(Some(700_000));
        assert_eq!(c.window(), 700_000);
        b.set(None);
        // 0 is none, as `None` is.
        b.set_least(Some(0));
        assert_eq!(c.window(), 280_000);
        // A window kept through a loss stays above a smaller least.
        c.on_end_acks(t0 + Duration::from_millis(1), 10_000, true, Some(2));
        *w.lock().unwrap() = 57_000;
        c.on_end_acks(t0 + Duration::from_millis(2), 10_000, true, Some(3));
        b.set_least(Some(100_000));
        assert_eq!(c.window(), 280_000, "kept, above the least");
        b.set_least(None);
        assert_eq!(c.window(), 280_000);
    }

    #[test]
    fn a_bound_caps_the_window_never_below_its_floor_and_can_be_lifted() {
        let (w, mut c, t0) = wrapped(2_000_000);
        c.on_end_acks(t0, 0, true, Some(1));
        let b = c.bound.clone();
        // What quinn hands out of a connection is a clone: it shares the bound, and it is
        // found again as a `KeptWindow` (as `WindowBound::of` finds it).
        let seen = c.clone_box();
        let found = c
            .clone_box()
            .into_any()
            .downcast::<KeptWindow>()
            .expect("a KeptWindow");
        found.bound.set(Some(700_000));
        assert_eq!(c.window(), 700_000);
        b.set(Some(500_000));
        assert_eq!(c.window(), 500_000);
        assert_eq!(seen.window(), 500_000);
        assert_eq!(c.metrics().congestion_window, 500_000);
        // A bound above the window does not raise it.
        b.set(Some(5_000_000));
        assert_eq!(c.window(), 2_000_000);
        // A window kept through a loss is bounded too.
        b.set(Some(800_000));
        c.on_congestion_event(t0, t0, false, 1_200);
        *w.lock().unwrap() = 57_000;
        c.on_end_acks(t0 + Duration::from_millis(5), 57_000, true, Some(2));
        assert_eq!(c.window(), 800_000);
        b.set(Some(1_000));
        assert_eq!(c.window(), BOUND_FLOOR);
        assert_eq!(b.get(), Some(BOUND_FLOOR));
        b.set(None);
        assert_eq!(b.get(), None);
        assert_eq!(c.window(), 2_000_000, "the kept window again");
    }

    #[test]
    fn a_larger_window_is_taken_at_once() {
        let (w, mut c, t0) = wrapped(100_000);
        c.on_end_acks(t0, 0, true, Some(1));
        *w.lock().unwrap() = 400_000;
        assert_eq!(c.window(), 400_000, "read through before any ACK");
        c.on_end_acks(t0 + Duration::from_millis(1), 0, true, Some(2));
        *w.lock().unwrap() = 200_000;
        c.on_end_acks(t0 + Duration::from_millis(2), 0, true, Some(3));
        assert_eq!(c.window(), 400_000);
    }
}
