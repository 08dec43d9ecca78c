//! Named counters. Every drop, rejection and recovery increments one, with a name that says
//! why, and `framewire latency` and the control socket read the same registry.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One counter; cheap to clone and to increment from any thread.
#[derive(Debug, Clone, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    pub fn inc(&self) {
        self.add(1);
    }
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A registry of counters by name (`rejected_packets.bad_magic`, `frames_skipped`, …).
#[derive(Debug, Clone, Default)]
pub struct Counters {
    map: Arc<Mutex<BTreeMap<String, Counter>>>,
}

impl Counters {
    pub fn new() -> Self {
        Self::default()
    }

    /// The counter with this name, created at zero on first use.
    pub fn get(&self, name: &str) -> Counter {
        let mut m = self.map.lock().expect("counter registry poisoned");
        m.entry(name.to_string()).or_default().clone()
    }

    pub fn inc(&self, name: &str) {
        self.get(name).inc();
    }

    pub fn value(&self, name: &str) -> u64 {
        self.map
            .lock()
            .expect("counter registry poisoned")
            .get(name)
            .map_or(0, Counter::get)
    }

    /// All counters, sorted by name.
    pub fn snapshot(&self) -> Vec<(String, u64)> {
        self.map
            .lock()
            .expect("counter registry poisoned")
            .iter()
            .map(|(k, v)| (k.clone(), v.get()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_shared_by_name() {
        let c = Counters::new();
        let a = c.get("drops.slow");
        a.inc();
        c.inc("drops.slow");
        c.get("accepted").add(5);
        assert_eq!(c.value("drops.slow"), 2);
        assert_eq!(c.value("missing"), 0);
        assert_eq!(
            c.snapshot(),
            vec![("accepted".to_string(), 5), ("drops.slow".to_string(), 2)]
        );
    }
}
