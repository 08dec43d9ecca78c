use std::collections::BTreeMap;

use crate::filter::Filter;
use crate::item::Item;
use crate::subscriber::{item_cost, Delivery, QueueLimit, Subscriber};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SubscriberId(pub u64);

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HubCounters {
    pub samples_published: u64,
    pub thermal_published: u64,
    /// Items queued for subscribers (one per matching subscriber).
    pub queued: u64,
    /// Samples that found a subscriber's queue full (each reported to it as missed).
    pub samples_missed: u64,
    /// Grids replaced before a subscriber took them (newest wins).
    pub thermal_replaced: u64,
    /// Published items no subscriber wanted.
    pub unsubscribed: u64,
    /// Subscribers cut off because all queues together went over the budget.
    pub subscribers_cut_off: u64,
    /// Items refused because they would have opened a stream beyond `Limits::streams`.
    pub items_refused_stream_limit: u64,
    /// Streams forgotten after `Limits::stream_idle_us` without an item.
    pub streams_expired: u64,
}

/// What the hub holds at most. Every bound is declared here; every drop it causes is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// One subscriber's queue in bytes (its sample count is given to `subscribe`).
    pub queue_bytes: usize,
    /// All subscribers' queues together, in bytes. Beyond it the subscriber holding the most
    /// is cut off, so one that stopped reading cannot take the memory every other one needs.
    pub total_bytes: usize,
    /// Streams alive at once (each has a name, counts and perhaps a grid kept for new
    /// subscribers). Items of a new stream beyond it are refused and counted.
    pub streams: usize,
    /// A stream with no item for this long is forgotten (its counts leave `/metrics`).
    pub stream_idle_us: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            queue_bytes: 32 << 20,
            total_bytes: 64 << 20,
            streams: 10_000,
            stream_idle_us: 600_000_000,
        }
    }
}

/// One stream's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamStats {
    pub items: u64,
    /// When its last item was accepted (µs, the items' clock).
    pub last_us: u64,
}

/// Why a subscriber is cut off.
pub const CUT_OFF_BUDGET: &str = "too far behind: the subscribers' memory budget is used up";

/// Streams, subscribers, and delivery between them.
pub struct Hub {
    subs: BTreeMap<SubscriberId, Subscriber>,
    next: u64,
    counters: HubCounters,
    streams: BTreeMap<String, StreamStats>,
    limits: Limits,
    /// Bytes all subscribers' queues pin together.
    queued_bytes: usize,
    /// The newest grid of each thermal stream: a grid stream's current state, which a new
    /// subscriber gets at once instead of waiting for the camera's next frame.
    latest_thermal: BTreeMap<String, Item>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub::new()
    }
}

impl Hub {
    pub fn new() -> Hub {
        Hub::with_limits(Limits::default())
    }

    pub fn with_limits(limits: Limits) -> Hub {
        Hub {
            subs: BTreeMap::new(),
            next: 0,
            counters: HubCounters::default(),
            streams: BTreeMap::new(),
            limits,
            queued_bytes: 0,
            latest_thermal: BTreeMap::new(),
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// A subscriber to the streams `filter` matches, holding at most `capacity` samples (and
    /// `Limits::queue_bytes`). It starts with the newest grid of every thermal stream it
    /// matches (samples are events and are not replayed).
    pub fn subscribe(&mut self, filter: Filter, capacity: usize) -> SubscriberId {
        let id = SubscriberId(self.next);
        self.next += 1;
        let limit = QueueLimit {
            items: capacity,
            bytes: self.limits.queue_bytes,
        };
        let mut sub = Subscriber::new(filter, limit);
        for (stream, grid) in &self.latest_thermal {
            if sub.filter.matches(stream) && sub.offer(grid, item_cost(grid)) {
                self.counters.queued += 1;
            }
        }
        self.queued_bytes += sub.queued_bytes();
        self.subs.insert(id, sub);
        self.enforce_budget();
        id
    }

    pub fn unsubscribe(&mut self, id: SubscriberId) -> Option<Subscriber> {
        let s = self.subs.remove(&id)?;
        self.queued_bytes -= s.queued_bytes();
        Some(s)
    }

    /// Bytes all subscribers' queues pin together.
    pub fn queued_bytes(&self) -> usize {
        self.queued_bytes
    }

    /// Offers `item` to every matching subscriber; returns how many took it.
    pub fn publish(&mut self, item: Item) -> usize {
        let stream = item.stream();
        let at = item.accepted_us();
        if let Some(st) = self.streams.get_mut(stream) {
            st.items += 1;
            st.last_us = st.last_us.max(at);
        } else if self.streams.len() >= self.limits.streams {
            self.counters.items_refused_stream_limit += 1;
            return 0;
        } else {
            let st = StreamStats {
                items: 1,
                last_us: at,
            };
            self.streams.insert(stream.to_string(), st);
        }
        match &item {
            Item::Sample(_) => self.counters.samples_published += 1,
            Item::Thermal(_) => {
                self.counters.thermal_published += 1;
                if let Some(g) = self.latest_thermal.get_mut(stream) {
                    *g = item.clone();
                } else {
                    self.latest_thermal.insert(stream.to_string(), item.clone());
                }
            }
        }
        let cost = item_cost(&item);
        let mut n = 0;
        for s in self.subs.values_mut() {
            if !s.filter.matches(stream) {
                continue;
            }
            let (missed, replaced, bytes) =
                (s.missed_samples, s.replaced_thermal, s.queued_bytes());
            if s.offer(&item, cost) {
                n += 1;
                self.counters.queued += 1;
            }
            self.counters.samples_missed += s.missed_samples - missed;
            self.counters.thermal_replaced += s.replaced_thermal - replaced;
            self.queued_bytes = self.queued_bytes + s.queued_bytes() - bytes;
        }
        if n == 0 {
            self.counters.unsubscribed += 1;
        }
        self.enforce_budget();
        n
    }

    /// While all queues together are over `Limits::total_bytes`, cuts off the subscriber that
    /// holds the most: the one furthest behind, whose memory the others would otherwise pay
    /// for. It is told why, and what it lost, in its last delivery.
    fn enforce_budget(&mut self) {
        while self.queued_bytes > self.limits.total_bytes {
            let Some((_, laggard)) = self
                .subs
                .iter_mut()
                .filter(|(_, s)| s.cut_off().is_none())
                .max_by_key(|(_, s)| s.queued_bytes())
            else {
                return;
            };
            let bytes = laggard.queued_bytes();
            self.counters.samples_missed += laggard.cut(CUT_OFF_BUDGET);
            self.counters.subscribers_cut_off += 1;
            self.queued_bytes -= bytes;
        }
    }

    /// Forgets streams with no item since `now_us - Limits::stream_idle_us` (their names,
    /// counts and kept grid). Returns how many.
    pub fn expire_idle(&mut self, now_us: u64) -> usize {
        let horizon = now_us.saturating_sub(self.limits.stream_idle_us);
        let before = self.streams.len();
        let latest = &mut self.latest_thermal;
        self.streams.retain(|name, st| {
            let keep = st.last_us >= horizon;
            if !keep {
                latest.remove(name);
            }
            keep
        });
        let n = before - self.streams.len();
        self.counters.streams_expired += n as u64;
        n
    }

    pub fn pop(&mut self, id: SubscriberId) -> Option<Delivery> {
        let s = self.subs.get_mut(&id)?;
        let bytes = s.queued_bytes();
        let d = s.pop();
        self.queued_bytes -= bytes - s.queued_bytes();
        d
    }

    pub fn subscriber(&self, id: SubscriberId) -> Option<&Subscriber> {
        self.subs.get(&id)
    }

    pub fn subscribers(&self) -> impl Iterator<Item = (SubscriberId, &Subscriber)> {
        self.subs.iter().map(|(k, v)| (*k, v))
    }

    pub fn counters(&self) -> HubCounters {
        self.counters
    }

    /// Every stream alive, with how many items it carried and when it last did.
    pub fn streams(&self) -> &BTreeMap<String, StreamStats> {
        &self.streams
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::{Sample, Thermal, Value};
    use proptest::prelude::*;
    use std::sync::Arc;

    fn sample(stream: &str, device: &str, seq: u64) -> Item {
        Item::Sample(Arc::new(Sample {
            stream: stream.into(),
            device: device.into(),
            device_seq: seq,
            accepted_us: seq,
            readings: vec![("ADC1".into(), Value::Int(seq as i64))],
        }))
    }

    fn grid(stream: &str, seq: u64) -> Item {
        Item::Thermal(Arc::new(Thermal {
            stream: stream.into(),
            device: "cam".into(),
            device_seq: seq,
            accepted_us: seq,
            width: 2,
            height: 1,
            values: vec![seq as u16, 0],
        }))
    }

    #[test]
    fn filters_choose_streams() {
        let mut h = Hub::new();
        let a = h.subscribe(Filter::parse("sensor/"), 10);
        let b = h.subscribe(Filter::parse("thermal/r1"), 10);
        let c = h.subscribe(Filter::All, 10);
        assert_eq!(h.publish(sample("sensor/r1", "d", 0)), 2);
        assert_eq!(h.publish(grid("thermal/r1", 0)), 2);
        assert_eq!(h.publish(grid("thermal/r2", 0)), 1);
        let count = |h: &Hub, id| h.subscriber(id).unwrap().pending();
        assert_eq!((count(&h, a), count(&h, b), count(&h, c)), (1, 1, 3));
        h.unsubscribe(c);
        assert_eq!(h.publish(sample("other", "d", 1)), 0);
        assert_eq!(h.counters().unsubscribed, 1);
    }

    #[test]
    fn a_full_queue_tells_the_subscriber_what_it_missed_in_place() {
        let mut h = Hub::new();
        let s = h.subscribe(Filter::All, 3);
        for i in 0..10 {
            h.publish(sample("sensor/a", "d", i));
        }
        let got: Vec<Delivery> = std::iter::from_fn(|| h.pop(s)).collect();
        assert_eq!(got.len(), 4);
        assert!(matches!(got[3], Delivery::Missed { samples: 7 }));
        assert_eq!(h.counters().samples_missed, 7);
        // Room again: the next sample comes after the notice.
        h.publish(sample("sensor/a", "d", 10));
        assert!(matches!(h.pop(s), Some(Delivery::Item(Item::Sample(x))) if x.device_seq == 10));
    }

    #[test]
    fn grids_are_newest_wins_per_stream() {
        let mut h = Hub::new();
        let s = h.subscribe(Filter::All, 100);
        h.publish(grid("thermal/a", 0));
        h.publish(sample("sensor/a", "d", 0));
        h.publish(grid("thermal/b", 0));
        h.publish(grid("thermal/a", 1));
        h.publish(grid("thermal/a", 2));
        let got: Vec<(String, u64)> = std::iter::from_fn(|| h.pop(s))
            .map(|d| match d {
                Delivery::Item(Item::Thermal(t)) => (t.stream.to_string(), t.device_seq),
                Delivery::Item(Item::Sample(x)) => (x.stream.to_string(), x.device_seq),
                other => unreachable!("{other:?}"),
            })
            .collect();
        assert_eq!(
            got,
            [
                ("thermal/a".to_string(), 2),
                ("sensor/a".into(), 0),
                ("thermal/b".into(), 0)
            ]
        );
        assert_eq!(h.counters().thermal_replaced, 2);
    }

    #[test]
    fn a_new_subscriber_starts_with_the_newest_grid_of_each_matching_stream() {
        let mut h = Hub::new();
        h.publish(grid("thermal/a", 0));
        h.publish(grid("thermal/a", 1));
        h.publish(grid("thermal/b", 5));
        h.publish(sample("sensor/a", "d", 0));
        let s = h.subscribe(Filter::parse("thermal/a"), 10);
        let all = h.subscribe(Filter::All, 10);
        let seqs = |h: &mut Hub, id| -> Vec<(String, u64)> {
            std::iter::from_fn(|| h.pop(id))
                .map(|d| match d {
                    Delivery::Item(Item::Thermal(t)) => (t.stream.to_string(), t.device_seq),
                    other => panic!("only grids are replayed, got {other:?}"),
                })
                .collect()
        };
        assert_eq!(seqs(&mut h, s), [("thermal/a".to_string(), 1)]);
        assert_eq!(
            seqs(&mut h, all),
            [("thermal/a".to_string(), 1), ("thermal/b".to_string(), 5)]
        );
    }

    #[test]
    fn a_queue_is_bounded_in_bytes_as_well_as_samples() {
        let one = crate::item_cost(&sample("sensor/a", "d", 0));
        let mut h = Hub::with_limits(Limits {
            queue_bytes: 10 * one,
            ..Limits::default()
        });
        let s = h.subscribe(Filter::All, 1 << 20);
        for i in 0..25 {
            h.publish(sample("sensor/a", "d", i));
        }
        assert_eq!(h.subscriber(s).unwrap().queued_samples(), 10);
        assert_eq!(h.subscriber(s).unwrap().queued_bytes(), 10 * one);
        assert_eq!(h.queued_bytes(), 10 * one);
        assert_eq!(h.counters().samples_missed, 15);
        let got: Vec<Delivery> = std::iter::from_fn(|| h.pop(s)).collect();
        assert_eq!(got[10], Delivery::Missed { samples: 15 });
        assert_eq!(h.queued_bytes(), 0);
    }

    #[test]
    fn over_the_budget_the_laggard_is_cut_off_and_told_what_it_lost() {
        let one = crate::item_cost(&sample("sensor/a", "d", 0));
        let mut h = Hub::with_limits(Limits {
            queue_bytes: 1000 * one,
            total_bytes: 150 * one,
            ..Limits::default()
        });
        let stalled = h.subscribe(Filter::All, 1 << 20);
        let live = h.subscribe(Filter::All, 1 << 20);
        let mut live_got = 0;
        for i in 0..300 {
            h.publish(sample("sensor/a", "d", i));
            // The live one keeps up; the stalled one never reads.
            while let Some(d) = h.pop(live) {
                assert!(matches!(d, Delivery::Item(_)), "{d:?}");
                live_got += 1;
            }
        }
        assert_eq!(live_got, 300, "the subscriber that keeps up loses nothing");
        assert_eq!(h.counters().subscribers_cut_off, 1);
        assert_eq!(
            h.subscriber(stalled).unwrap().cut_off(),
            Some(CUT_OFF_BUDGET)
        );
        // Cut when its 150 samples and the live one's 1 went over 150: it takes nothing after,
        // and all of it is accounted for.
        let got: Vec<Delivery> = std::iter::from_fn(|| h.pop(stalled)).collect();
        assert_eq!(
            got,
            [Delivery::CutOff {
                samples: 150,
                reason: CUT_OFF_BUDGET
            }]
        );
        assert_eq!(h.counters().samples_missed, 150);
        assert_eq!(h.subscriber(stalled).unwrap().missed_samples, 150);
        assert_eq!(h.queued_bytes(), 0);
        assert!(h.publish(sample("sensor/a", "d", 300)) == 1);
        assert_eq!(h.pop(stalled), None);
    }

    #[test]
    fn grids_count_in_bytes_and_a_replaced_grid_frees_its_bytes() {
        let mut h = Hub::new();
        let s = h.subscribe(Filter::All, 10);
        h.publish(grid("thermal/a", 0));
        let one = h.queued_bytes();
        assert_eq!(one, crate::item_cost(&grid("thermal/a", 0)));
        h.publish(grid("thermal/a", 1));
        assert_eq!(h.queued_bytes(), one, "newest wins: one grid held, not two");
        h.pop(s);
        assert_eq!(h.queued_bytes(), 0);
        h.unsubscribe(s);
    }

    #[test]
    fn streams_beyond_the_limit_are_refused_and_idle_ones_expire() {
        let mut h = Hub::with_limits(Limits {
            streams: 3,
            stream_idle_us: 1_000,
            ..Limits::default()
        });
        let s = h.subscribe(Filter::All, 100);
        for (i, name) in ["sensor/a", "sensor/b", "sensor/c"].iter().enumerate() {
            assert_eq!(h.publish(sample(name, "d", i as u64)), 1);
        }
        assert_eq!(h.publish(sample("sensor/d", "d", 3)), 0);
        assert_eq!(h.counters().items_refused_stream_limit, 1);
        // Known streams still flow.
        assert_eq!(h.publish(sample("sensor/a", "d", 1500)), 1);
        assert_eq!(h.streams().len(), 3);
        // b and c were last seen at 1 and 2 µs: idle at 1502.
        assert_eq!(h.expire_idle(1_502), 2);
        assert_eq!(h.counters().streams_expired, 2);
        assert_eq!(h.streams().keys().collect::<Vec<_>>(), ["sensor/a"]);
        assert_eq!(h.publish(sample("sensor/d", "d", 1600)), 1);
        assert_eq!(h.subscriber(s).unwrap().queued_samples(), 5);
        // An expired grid stream is no longer replayed to new subscribers.
        h.publish(grid("thermal/x", 1600));
        assert_eq!(h.expire_idle(10_000), 3);
        let late = h.subscribe(Filter::All, 10);
        assert_eq!(h.pop(late), None);
    }

    proptest! {
        /// However publishing and popping interleave, each subscriber sees every sample of a
        /// device at most once, in order, and every sample it did not see is counted in a
        /// notice: delivered + missed = published.
        #[test]
        fn samples_are_delivered_once_in_order_or_reported(
            ops in proptest::collection::vec((0u8..4, 0u8..3), 1..400),
            cap in 1usize..20,
        ) {
            let mut h = Hub::new();
            let s = h.subscribe(Filter::Prefix("sensor/".into()), cap);
            let mut next = [0u64; 3];
            let mut last_seen = [None::<u64>; 3];
            let (mut delivered, mut missed) = (0u64, 0u64);
            for (op, dev) in ops {
                if op < 3 {
                    let d = dev as usize;
                    h.publish(sample("sensor/x", &format!("d{d}"), next[d]));
                    next[d] += 1;
                } else {
                    while let Some(x) = h.pop(s) {
                        match x {
                            Delivery::Item(Item::Sample(x)) => {
                                let d: usize = x.device[1..].parse().unwrap();
                                prop_assert!(last_seen[d].is_none_or(|l| x.device_seq > l));
                                last_seen[d] = Some(x.device_seq);
                                delivered += 1;
                            }
                            Delivery::Missed { samples } => missed += samples,
                            other => unreachable!("{other:?}"),
                        }
                    }
                }
            }
            while let Some(x) = h.pop(s) {
                match x {
                    Delivery::Item(_) => delivered += 1,
                    Delivery::Missed { samples } => missed += samples,
                    Delivery::CutOff { .. } => unreachable!(),
                }
            }
            prop_assert_eq!(delivered + missed, next.iter().sum::<u64>());
            prop_assert_eq!(missed, h.counters().samples_missed);
        }

        /// With a tight budget and subscribers reading at different paces, the hub's byte
        /// count is always the sum of its queues and within the budget, and every subscriber
        /// accounts for every sample: delivered + missed + dropped when cut off = published.
        #[test]
        fn the_budget_holds_and_every_sample_is_accounted_for(
            ops in proptest::collection::vec((0u8..6, 0u8..3), 1..600),
            budget in 1usize..40,
        ) {
            let one = crate::item_cost(&sample("sensor/x", "d", 0));
            let mut h = Hub::with_limits(Limits {
                queue_bytes: 16 * one,
                total_bytes: budget * one,
                ..Limits::default()
            });
            let subs: Vec<SubscriberId> = (0..3).map(|_| h.subscribe(Filter::All, 1000)).collect();
            let mut seen = [0u64; 3];
            let mut published = 0u64;
            let take = |h: &mut Hub, k: usize, seen: &mut [u64; 3]| {
                while let Some(d) = h.pop(subs[k]) {
                    seen[k] += match d {
                        Delivery::Item(_) => 1,
                        Delivery::Missed { samples } | Delivery::CutOff { samples, .. } => samples,
                    };
                }
            };
            for (op, k) in ops {
                if op < 4 {
                    h.publish(sample("sensor/x", "d", published));
                    published += 1;
                } else {
                    take(&mut h, k as usize, &mut seen);
                }
                let sum: usize = h.subscribers().map(|(_, s)| s.queued_bytes()).sum();
                prop_assert_eq!(h.queued_bytes(), sum);
                prop_assert!(h.queued_bytes() <= budget * one);
            }
            for k in 0..3 {
                take(&mut h, k, &mut seen);
                let s = h.subscriber(subs[k]).unwrap();
                if s.cut_off().is_none() {
                    prop_assert_eq!(seen[k], published);
                } else {
                    prop_assert!(seen[k] <= published);
                }
            }
        }
    }
}
