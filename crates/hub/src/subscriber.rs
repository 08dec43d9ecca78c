use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::item::{Item, Sample, Thermal};
use crate::Filter;

/// What a subscriber receives next.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivery {
    Item(Item),
    /// This many samples were lost here because the subscriber's queue was full.
    Missed {
        samples: u64,
    },
    /// The hub cut this subscriber off (the last delivery it gets): it held the most of the
    /// hub's memory when all subscribers together went over their budget. `samples` were
    /// dropped from its queue (also counted as missed).
    CutOff {
        samples: u64,
        reason: &'static str,
    },
}

enum Entry {
    Sample(Arc<Sample>),
    Missed(u64),
    /// The newest undelivered grid of this stream (in `thermal`).
    Thermal(Arc<str>),
    CutOff(u64, &'static str),
}

/// Bytes an item pins while it waits in a queue: its own allocations (a sample's readings, a
/// grid's values) and its place in the queue. Names are shared between items and not counted.
pub fn item_cost(item: &Item) -> usize {
    const ENTRY: usize = std::mem::size_of::<Entry>();
    const ARC: usize = 2 * std::mem::size_of::<usize>();
    match item {
        Item::Sample(s) => {
            ENTRY
                + ARC
                + std::mem::size_of::<Sample>()
                + s.readings.capacity() * std::mem::size_of::<(String, crate::Value)>()
                + s.readings.iter().map(|(k, _)| k.capacity()).sum::<usize>()
        }
        Item::Thermal(t) => {
            ENTRY
                + ARC
                + std::mem::size_of::<Thermal>()
                + t.values.capacity() * std::mem::size_of::<u16>()
        }
    }
}

/// How much one subscriber's queue may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLimit {
    /// Samples (grids are newest-wins per stream and bounded by the number of streams).
    pub items: usize,
    /// Bytes of samples and grids together (see [`item_cost`]).
    pub bytes: usize,
}

/// One subscriber: a bounded queue of samples, newest-wins grids, and what it lost.
pub struct Subscriber {
    pub filter: Filter,
    limit: QueueLimit,
    queue: VecDeque<Entry>,
    samples_queued: usize,
    bytes_queued: usize,
    /// Why the hub cut it off; it takes nothing more.
    cut_off: Option<&'static str>,
    thermal: HashMap<Arc<str>, Arc<Thermal>>,
    /// Deliveries handed out.
    pub delivered: u64,
    /// Samples lost to a full queue (each also reported by a `Missed` notice).
    pub missed_samples: u64,
    /// Grids replaced by a newer one of the same stream before this subscriber took them.
    pub replaced_thermal: u64,
}

impl Subscriber {
    pub fn new(filter: Filter, limit: QueueLimit) -> Subscriber {
        Subscriber {
            filter,
            limit: QueueLimit {
                items: limit.items.max(1),
                bytes: limit.bytes,
            },
            queue: VecDeque::new(),
            samples_queued: 0,
            bytes_queued: 0,
            cut_off: None,
            thermal: HashMap::new(),
            delivered: 0,
            missed_samples: 0,
            replaced_thermal: 0,
        }
    }

    /// Samples waiting.
    pub fn queued_samples(&self) -> usize {
        self.samples_queued
    }

    /// Bytes its queue pins (see [`item_cost`]).
    pub fn queued_bytes(&self) -> usize {
        self.bytes_queued
    }

    /// Why it was cut off, if it was.
    pub fn cut_off(&self) -> Option<&'static str> {
        self.cut_off
    }

    /// Entries waiting (samples, notices, grids).
    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    /// Queues `item`; returns false when a sample did not fit (a notice records it).
    /// `cost` is `item_cost(item)`, worked out once by the hub for every subscriber.
    pub(crate) fn offer(&mut self, item: &Item, cost: usize) -> bool {
        if self.cut_off.is_some() {
            return false;
        }
        match item {
            Item::Sample(s) => {
                if self.samples_queued < self.limit.items
                    && self.bytes_queued + cost <= self.limit.bytes
                {
                    self.queue.push_back(Entry::Sample(s.clone()));
                    self.samples_queued += 1;
                    self.bytes_queued += cost;
                    true
                } else {
                    self.missed_samples += 1;
                    match self.queue.back_mut() {
                        Some(Entry::Missed(n)) => *n += 1,
                        _ => self.queue.push_back(Entry::Missed(1)),
                    }
                    false
                }
            }
            Item::Thermal(t) => {
                if let Some(old) = self.thermal.insert(t.stream.clone(), t.clone()) {
                    // The older grid's place in the queue now delivers this one.
                    self.replaced_thermal += 1;
                    self.bytes_queued -= item_cost(&Item::Thermal(old));
                } else {
                    self.queue.push_back(Entry::Thermal(t.stream.clone()));
                }
                self.bytes_queued += cost;
                true
            }
        }
    }

    /// Drops everything queued and leaves one notice saying why and how many samples it lost;
    /// takes nothing more. Returns the samples dropped.
    pub(crate) fn cut(&mut self, reason: &'static str) -> u64 {
        let dropped: u64 = self
            .queue
            .iter()
            .map(|e| match e {
                Entry::Sample(_) => 1,
                Entry::Missed(n) => *n,
                _ => 0,
            })
            .sum();
        let fresh = self.samples_queued as u64;
        self.queue.clear();
        self.thermal.clear();
        self.samples_queued = 0;
        self.bytes_queued = 0;
        self.missed_samples += fresh;
        self.cut_off = Some(reason);
        self.queue.push_back(Entry::CutOff(dropped, reason));
        fresh
    }

    pub fn pop(&mut self) -> Option<Delivery> {
        let d = match self.queue.pop_front()? {
            Entry::Sample(s) => {
                self.samples_queued -= 1;
                let item = Item::Sample(s);
                self.bytes_queued -= item_cost(&item);
                Delivery::Item(item)
            }
            Entry::Missed(n) => Delivery::Missed { samples: n },
            Entry::Thermal(name) => {
                let item = Item::Thermal(
                    self.thermal
                        .remove(&name)
                        .expect("a queued grid marker has its grid"),
                );
                self.bytes_queued -= item_cost(&item);
                Delivery::Item(item)
            }
            Entry::CutOff(samples, reason) => Delivery::CutOff { samples, reason },
        };
        self.delivered += 1;
        Some(d)
    }
}
