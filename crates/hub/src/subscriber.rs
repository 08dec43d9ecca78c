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
}

enum Entry {
    Sample(Arc<Sample>),
    Missed(u64),
    /// The newest undelivered grid of this stream (in `thermal`).
    Thermal(Arc<str>),
}

/// One subscriber: a bounded queue of samples, newest-wins grids, and what it lost.
pub struct Subscriber {
    pub filter: Filter,
    capacity: usize,
    queue: VecDeque<Entry>,
    samples_queued: usize,
    thermal: HashMap<Arc<str>, Arc<Thermal>>,
    /// Deliveries handed out.
    pub delivered: u64,
    /// Samples lost to a full queue (each also reported by a `Missed` notice).
    pub missed_samples: u64,
    /// Grids replaced by a newer one of the same stream before this subscriber took them.
    pub replaced_thermal: u64,
}

impl Subscriber {
    pub fn new(filter: Filter, capacity: usize) -> Subscriber {
        Subscriber {
            filter,
            capacity: capacity.max(1),
            queue: VecDeque::new(),
            samples_queued: 0,
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

    /// Entries waiting (samples, notices, grids).
    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    /// Queues `item`; returns false when a sample did not fit (a notice records it).
    pub(crate) fn offer(&mut self, item: &Item) -> bool {
        match item {
            Item::Sample(s) => {
                if self.samples_queued < self.capacity {
                    self.queue.push_back(Entry::Sample(s.clone()));
                    self.samples_queued += 1;
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
                if self.thermal.insert(t.stream.clone(), t.clone()).is_some() {
                    // The older grid's place in the queue now delivers this one.
                    self.replaced_thermal += 1;
                } else {
                    self.queue.push_back(Entry::Thermal(t.stream.clone()));
                }
                true
            }
        }
    }

    pub fn pop(&mut self) -> Option<Delivery> {
        let d = match self.queue.pop_front()? {
            Entry::Sample(s) => {
                self.samples_queued -= 1;
                Delivery::Item(Item::Sample(s))
            }
            Entry::Missed(n) => Delivery::Missed { samples: n },
            Entry::Thermal(name) => Delivery::Item(Item::Thermal(
                self.thermal
                    .remove(&name)
                    .expect("a queued grid marker has its grid"),
            )),
        };
        self.delivered += 1;
        Some(d)
    }
}
