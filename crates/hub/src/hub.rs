use std::collections::BTreeMap;

use crate::filter::Filter;
use crate::item::Item;
use crate::subscriber::{Delivery, Subscriber};

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
}

/// Streams, subscribers, and delivery between them.
#[derive(Default)]
pub struct Hub {
    subs: BTreeMap<SubscriberId, Subscriber>,
    next: u64,
    counters: HubCounters,
    streams: BTreeMap<String, u64>,
    /// The newest grid of each thermal stream: a grid stream's current state, which a new
    /// subscriber gets at once instead of waiting for the camera's next frame.
    latest_thermal: BTreeMap<String, Item>,
}

impl Hub {
    pub fn new() -> Hub {
        Hub::default()
    }

    /// A subscriber to the streams `filter` matches, holding at most `capacity` samples. It
    /// starts with the newest grid of every thermal stream it matches (samples are events and
    /// are not replayed).
    pub fn subscribe(&mut self, filter: Filter, capacity: usize) -> SubscriberId {
        let id = SubscriberId(self.next);
        self.next += 1;
        let mut sub = Subscriber::new(filter, capacity);
        for (stream, grid) in &self.latest_thermal {
            if sub.filter.matches(stream) && sub.offer(grid) {
                self.counters.queued += 1;
            }
        }
        self.subs.insert(id, sub);
        id
    }

    pub fn unsubscribe(&mut self, id: SubscriberId) -> Option<Subscriber> {
        self.subs.remove(&id)
    }

    /// Offers `item` to every matching subscriber; returns how many took it.
    pub fn publish(&mut self, item: Item) -> usize {
        let stream = item.stream();
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
        if let Some(n) = self.streams.get_mut(stream) {
            *n += 1;
        } else {
            self.streams.insert(stream.to_string(), 1);
        }
        let mut n = 0;
        for s in self.subs.values_mut() {
            if !s.filter.matches(stream) {
                continue;
            }
            let (missed, replaced) = (s.missed_samples, s.replaced_thermal);
            if s.offer(&item) {
                n += 1;
                self.counters.queued += 1;
            }
            self.counters.samples_missed += s.missed_samples - missed;
            self.counters.thermal_replaced += s.replaced_thermal - replaced;
        }
        if n == 0 {
            self.counters.unsubscribed += 1;
        }
        n
    }

    pub fn pop(&mut self, id: SubscriberId) -> Option<Delivery> {
        self.subs.get_mut(&id)?.pop()
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

    /// Every stream seen, with how many items it carried.
    pub fn streams(&self) -> &BTreeMap<String, u64> {
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
                Delivery::Missed { .. } => unreachable!(),
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
                            Delivery::Item(Item::Thermal(_)) => unreachable!(),
                        }
                    }
                }
            }
            while let Some(x) = h.pop(s) {
                match x {
                    Delivery::Item(_) => delivered += 1,
                    Delivery::Missed { samples } => missed += samples,
                }
            }
            prop_assert_eq!(delivered + missed, next.iter().sum::<u64>());
            prop_assert_eq!(missed, h.counters().samples_missed);
        }
    }
}
