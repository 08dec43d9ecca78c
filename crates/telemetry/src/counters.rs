//! Counters as an API (Aeron's lesson): each subsystem declares its counters once, as a struct
//! of named fields ([`counter_set!`]), and increments them by field, never by a string built at
//! run time. Every reader — `/metrics`, `framewire latency`, the control socket, the status
//! file, the dashboard — walks the same sets through a [`CounterRegistry`].
//!
//! A [`Family`] is a counter with a reason (`handshake_rejected.timeout`): its labels are
//! `&'static str`, so the number of series is fixed by the code, not by the input.

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

/// Counters of one event by reason, reported as `NAME.REASON`.
#[derive(Debug, Default)]
pub struct Family(Mutex<BTreeMap<&'static str, u64>>);

impl Family {
    pub fn inc(&self, reason: &'static str) {
        self.add(reason, 1);
    }
    pub fn add(&self, reason: &'static str, n: u64) {
        *self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(reason)
            .or_default() += n;
    }
    pub fn get(&self, reason: &str) -> u64 {
        let m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        m.get(reason).copied().unwrap_or(0)
    }
}

/// How one field of a counter set reports itself.
pub trait Visit {
    fn visit(&self, name: &str, f: &mut dyn FnMut(&str, u64));
}

impl Visit for Counter {
    fn visit(&self, name: &str, f: &mut dyn FnMut(&str, u64)) {
        f(name, self.get())
    }
}

impl Visit for Family {
    fn visit(&self, name: &str, f: &mut dyn FnMut(&str, u64)) {
        let m = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for (reason, v) in m {
            f(&format!("{name}.{reason}"), v);
        }
    }
}

/// A subsystem's counters (declared with [`counter_set!`]).
pub trait CounterSet: Send + Sync {
    /// Calls `f` with each counter's name and value, in declaration order.
    fn visit(&self, f: &mut dyn FnMut(&str, u64));
}

/// Declares a subsystem's counters: a struct with one public field per counter (a [`Counter`]
/// or a [`Family`]) and its [`CounterSet`] implementation. The field name is the counter's
/// name everywhere it is read.
#[macro_export]
macro_rules! counter_set {
    ($(#[$m:meta])* $vis:vis struct $name:ident {
        $($(#[$fm:meta])* $field:ident: $ty:ty),* $(,)?
    }) => {
        $(#[$m])*
        #[derive(Debug, Default)]
        $vis struct $name {
            $($(#[$fm])* pub $field: $ty,)*
        }
        impl $crate::CounterSet for $name {
            fn visit(&self, f: &mut dyn FnMut(&str, u64)) {
                $($crate::Visit::visit(&self.$field, stringify!($field), f);)*
            }
        }
    };
}

/// Every subsystem's counter set, for the readers. Subsystems register theirs when they start.
#[derive(Clone, Default)]
pub struct CounterRegistry(Arc<Mutex<Vec<Arc<dyn CounterSet>>>>);

impl CounterRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&self, set: Arc<dyn CounterSet>) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(set);
    }

    /// All counters, sorted by name (a name two sets share is summed).
    pub fn snapshot(&self) -> Vec<(String, u64)> {
        let sets = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut all = BTreeMap::<String, u64>::new();
        for s in sets {
            s.visit(&mut |n, v| *all.entry(n.to_string()).or_default() += v);
        }
        all.into_iter().collect()
    }

    /// Names that more than one set reports (each reader would see their sum): a test of the
    /// whole server keeps this empty, so every name says which subsystem counted it.
    pub fn duplicates(&self) -> Vec<String> {
        let sets = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut seen = BTreeMap::<String, usize>::new();
        for s in sets {
            s.visit(&mut |n, _| *seen.entry(n.to_string()).or_default() += 1);
        }
        seen.into_iter()
            .filter(|(_, k)| *k > 1)
            .map(|(n, _)| n)
            .collect()
    }

    /// One counter's value by name (0 if no set has it).
    pub fn value(&self, name: &str) -> u64 {
        let sets = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut total = 0;
        for s in sets {
            s.visit(&mut |n, v| {
                if n == name {
                    total += v;
                }
            });
        }
        total
    }
}

impl std::fmt::Debug for CounterRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.snapshot()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    counter_set! {
        struct Demo {
            accepted: Counter,
            rejected: Family,
            slow_drops: Counter,
        }
    }

    #[test]
    fn sets_report_their_fields_by_name_through_the_registry() {
        let d = Arc::new(Demo::default());
        d.accepted.add(5);
        d.rejected.inc("bad_magic");
        d.rejected.inc("bad_magic");
        d.rejected.inc("too_long");
        let other = Arc::new(Demo::default());
        other.accepted.inc();
        let r = CounterRegistry::new();
        r.register(d.clone());
        r.register(other);
        assert_eq!(
            r.snapshot(),
            vec![
                ("accepted".to_string(), 6),
                ("rejected.bad_magic".to_string(), 2),
                ("rejected.too_long".to_string(), 1),
                ("slow_drops".to_string(), 0),
            ]
        );
        assert_eq!(r.value("rejected.bad_magic"), 2);
        assert_eq!(
            r.duplicates(),
            ["accepted", "slow_drops"],
            "two sets of the same declaration report the same names"
        );
        assert_eq!(r.value("missing"), 0);
        assert_eq!(d.rejected.get("too_long"), 1);
    }
}
