//! The stream hub at run time: publishers hand items to one hub task through a bounded queue,
//! the hub task offers each to every matching subscriber (`framewire_hub`), and subscribers
//! take deliveries when they are ready.
//!
//! The hub runs on a thread of its own (seed 003's single-threaded engine): however slow it
//! gets, it never holds up the async workers that read the sockets. Subscribers' writers run
//! on that thread too (it drives a single-threaded runtime of its own): a batch the hub has
//! just queued is written out right after, on the same thread, instead of waiting for a
//! worker that is busy reading a thousand device sockets to take the wake-up.
//!
//! While items arrive faster than one per wake-up the hub polls its input every 100 µs instead
//! of waiting on it, so publishers do not pay for waking it (at 200 000 lines/s, futex
//! wake-ups of this thread were a fifth of the server's CPU); at low rates it waits to be
//! woken, so a quiet hub costs nothing.
//!
//! Back-pressure, not unbounded queues: when the hub task falls behind (its input queue is
//! above the high-water mark), publishers are told to pause reading their sockets, so TCP slows
//! the devices down; they resume when the queue drains below the low-water mark (hysteresis,
//! as in seed 003's fix). A publisher is never judged slow because the hub was busy.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use framewire_hub::{Delivery, Filter, Hub, HubCounters, Item, Limits, SubscriberId};
use framewire_telemetry::clock::now_us;

use crate::SensorCounters;
use tokio::sync::{mpsc, watch, Notify};

use crate::lock;

/// Items the hub task's input holds at most.
pub const INPUT_CAPACITY: usize = 65_536;
/// Publishers pause above this many queued items and resume below `LOW_WATER`.
pub const HIGH_WATER: usize = 49_152;
pub const LOW_WATER: usize = 16_384;
/// Bytes of items the hub's input holds at most (see `framewire_hub::item_cost`), counted in
/// units of [`INPUT_UNIT`] bytes: 65 536 samples of 32 readings would otherwise be 150 MB.
/// Samples of a few readings (two units) still reach `INPUT_CAPACITY` first.
pub const INPUT_BYTES: usize = 48 << 20;
const INPUT_UNIT: usize = 256;

fn input_units(item: &Item) -> u32 {
    framewire_hub::item_cost(item)
        .div_ceil(INPUT_UNIT)
        .min(INPUT_BYTES / INPUT_UNIT) as u32
}

/// Samples a subscriber's queue holds before it is told it missed some (its bytes are bounded
/// too: `Limits::queue_bytes`).
pub const DEFAULT_SUBSCRIBER_CAPACITY: usize = 1 << 20;
/// How often the hub thread forgets idle streams.
const EXPIRE_EVERY: Duration = Duration::from_secs(1);

/// Shared by publishers, subscribers and the hub task.
pub struct Streams {
    input: mpsc::Sender<Item>,
    /// Room in the input, in units of `INPUT_UNIT` bytes.
    input_room: tokio::sync::Semaphore,
    /// The hub thread's runtime, where subscribers' writers run.
    delivery: tokio::runtime::Handle,
    hub: Mutex<Hub>,
    wakers: Mutex<HashMap<SubscriberId, Arc<Notify>>>,
    paused: watch::Sender<bool>,
    stop: Notify,
    stopping: AtomicBool,
    pub counters: Arc<SensorCounters>,
    /// Accepted → offered to subscribers, per item.
    queued: prometheus::Histogram,
}

/// Items the hub takes from its input at a time.
const BATCH: usize = 1024;
/// When a look at its input finds at least `BUSY_BATCH` items, the hub looks again after
/// `BUSY_POLL` instead of waiting to be woken; with fewer, it waits.
const BUSY_BATCH: usize = 8;
const BUSY_POLL: Duration = Duration::from_micros(100);
/// The hub thread's scheduling slice: it runs for microseconds per wake-up, and with a short
/// slice the kernel lets it run soon after waking instead of after the running thread's slice.
const HUB_SLICE: Duration = Duration::from_micros(100);

impl Streams {
    /// Starts the hub on its own thread. [`Streams::stop`] ends it.
    pub fn start(
        counters: Arc<SensorCounters>,
        queued: prometheus::Histogram,
        limits: Limits,
    ) -> Arc<Streams> {
        let (input, rx) = mpsc::channel(INPUT_CAPACITY);
        // I/O of its own is not needed: the sockets its writers write to are registered with
        // the runtime that accepted them, which wakes the writers. Timers are: idle streams
        // expire, and a subscriber cut off has a deadline for its last packets.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("building the hub thread's runtime");
        let s = Arc::new(Streams {
            input,
            input_room: tokio::sync::Semaphore::new(INPUT_BYTES / INPUT_UNIT),
            delivery: rt.handle().clone(),
            hub: Mutex::new(Hub::with_limits(limits)),
            wakers: Mutex::new(HashMap::new()),
            paused: watch::channel(false).0,
            stop: Notify::new(),
            stopping: AtomicBool::new(false),
            counters,
            queued,
        });
        let s2 = s.clone();
        std::thread::Builder::new()
            .name("framewire-hub".into())
            .spawn(move || rt.block_on(run_hub(&s2, rx)))
            .expect("spawning the hub thread");
        s
    }

    /// Runs a subscriber's writer on the hub thread.
    pub fn spawn_writer<F>(&self, writer: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.delivery.spawn(writer)
    }

    /// Ends the hub thread.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        self.stop.notify_one();
    }

    /// Items waiting for the hub task.
    pub fn depth(&self) -> usize {
        self.input.max_capacity() - self.input.capacity()
    }

    /// Publishes `item`, waiting for room in the hub's input, in items and in bytes (never
    /// dropping it).
    pub async fn publish(&self, item: Item) -> Result<(), Item> {
        match self.input_room.acquire_many(input_units(&item)).await {
            // Given back by the hub thread when it takes the item.
            Ok(room) => room.forget(),
            Err(_) => return Err(item),
        }
        self.input.send(item).await.map_err(|e| e.0)
    }

    /// Resolves when publishers may read from their sockets again.
    pub async fn wait_unpaused(&self) {
        if !*self.paused.borrow() {
            return; // the common case: no allocation, no subscription
        }
        let mut rx = self.paused.subscribe();
        if *rx.borrow_and_update() {
            self.counters.stream_reads_paused.inc();
            let _ = rx.wait_for(|p| !*p).await;
        }
    }

    pub fn is_paused(&self) -> bool {
        *self.paused.borrow()
    }

    pub fn subscribe(self: &Arc<Self>, filter: Filter, capacity: usize) -> Subscription {
        let id = lock(&self.hub).subscribe(filter, capacity);
        let notify = Arc::new(Notify::new());
        lock(&self.wakers).insert(id, notify.clone());
        Subscription {
            streams: self.clone(),
            id,
            notify,
        }
    }

    /// Holds the hub as a stalled consumer would, until the guard drops (back-pressure tests).
    #[doc(hidden)]
    pub fn stall(&self) -> std::sync::MutexGuard<'_, Hub> {
        lock(&self.hub)
    }

    /// Subscribers connected now.
    pub fn subscriber_count(&self) -> usize {
        lock(&self.hub).subscribers().count()
    }

    pub fn hub_counters(&self) -> HubCounters {
        lock(&self.hub).counters()
    }

    /// Streams alive and how many items each carried.
    pub fn stream_names(&self) -> Vec<(String, u64)> {
        lock(&self.hub)
            .streams()
            .iter()
            .map(|(k, v)| (k.clone(), v.items))
            .collect()
    }

    /// Streams alive now.
    pub fn stream_count(&self) -> usize {
        lock(&self.hub).streams().len()
    }

    /// Bytes all subscribers' queues pin together, and the budget for them.
    pub fn queued_bytes(&self) -> (usize, usize) {
        let hub = lock(&self.hub);
        (hub.queued_bytes(), hub.limits().total_bytes)
    }
}

async fn run_hub(s: &Streams, mut rx: mpsc::Receiver<Item>) {
    // Measured at 200 000 lines/s with the load generator on the same 2 cores: the hub's
    // queue wait p99 halved, end-to-end p99 15-18 ms instead of 21-26 ms at 2 lines per write.
    if !framewire_sched::short_slice(HUB_SLICE) {
        tracing::debug!("the kernel keeps its default slice for the hub thread");
    }
    let mut batch = Vec::with_capacity(BATCH);
    let mut watch = HubWatch::default();
    while !s.stopping.load(Ordering::Relaxed) {
        watch.check(s);
        // Take what is there without registering to be woken.
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(item) => batch.push(item),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => return,
            }
        }
        if batch.is_empty() {
            // Nothing: wait to be woken by the next publisher (or by stop).
            let n = tokio::select! {
                n = rx.recv_many(&mut batch, BATCH) => Some(n),
                _ = s.stop.notified() => Some(0),
                // Idle streams expire even when nothing arrives.
                _ = tokio::time::sleep(EXPIRE_EVERY) => None,
            };
            match n {
                Some(0) => return,
                Some(_) => {}
                None => continue,
            }
        }
        let busy = batch.len() >= BUSY_BATCH;
        deliver(s, &mut batch, rx.len());
        // The writers this batch woke are queued on this thread: let them write it now.
        tokio::task::yield_now().await;
        if busy {
            // Items arrive faster than one per wake-up: let a few accumulate rather than be
            // woken for each. (Blocking is deliberate: nothing else runs on this thread, and
            // the runtime's timers are milliseconds.)
            std::thread::sleep(BUSY_POLL);
        }
    }
}

/// The hub thread's housekeeping: forgets idle streams once a second, and says (at most once a
/// second) when items were refused for opening a stream beyond the limit or a subscriber was cut
/// off. Every one of them is counted by the hub; these lines point at the counters.
#[derive(Default)]
struct HubWatch {
    last: Option<std::time::Instant>,
    seen: HubCounters,
}

impl HubWatch {
    fn check(&mut self, s: &Streams) {
        let now = std::time::Instant::now();
        if self.last.is_some_and(|l| now - l < EXPIRE_EVERY) {
            return;
        }
        self.last = Some(now);
        let (c, expired) = {
            let mut hub = lock(&s.hub);
            let expired = hub.expire_idle(now_us());
            (hub.counters(), expired)
        };
        if expired > 0 {
            tracing::info!(expired, "idle streams forgotten");
        }
        let refused = c.items_refused_stream_limit - self.seen.items_refused_stream_limit;
        if refused > 0 {
            tracing::warn!(
                refused,
                "items refused: they would open a stream beyond the stream limit (hub_items_refused_stream_limit)"
            );
        }
        let cut = c.subscribers_cut_off - self.seen.subscribers_cut_off;
        if cut > 0 {
            tracing::warn!(
                cut,
                "subscribers cut off: the subscribers' memory budget ran out (hub_subscribers_cut_off)"
            );
        }
        self.seen = c;
    }
}

/// Publishes a batch, wakes the subscribers it gave something to, and pauses or resumes the
/// publishers by the input's depth.
fn deliver(s: &Streams, batch: &mut Vec<Item>, depth: usize) {
    {
        let now = now_us();
        let mut hub = lock(&s.hub);
        let mut units = 0;
        for item in batch.drain(..) {
            framewire_telemetry::observe_us(&s.queued, now.saturating_sub(item.accepted_us()));
            units += input_units(&item) as usize;
            hub.publish(item);
        }
        s.input_room.add_permits(units);
    }
    // Wake every subscriber with something to take.
    let wakers: Vec<Arc<Notify>> = {
        let hub = lock(&s.hub);
        let w = lock(&s.wakers);
        hub.subscribers()
            .filter(|(_, sub)| sub.pending() > 0)
            .filter_map(|(id, _)| w.get(&id).cloned())
            .collect()
    };
    for w in wakers {
        w.notify_one();
    }
    let paused = *s.paused.borrow();
    if !paused && depth > HIGH_WATER {
        s.paused.send_replace(true);
        s.counters.stream_pauses.inc();
    } else if paused && depth < LOW_WATER {
        s.paused.send_replace(false);
    }
}

/// A subscriber's end: take deliveries in order.
pub struct Subscription {
    streams: Arc<Streams>,
    id: SubscriberId,
    notify: Arc<Notify>,
}

impl Subscription {
    pub fn try_next(&self) -> Option<Delivery> {
        lock(&self.streams.hub).pop(self.id)
    }

    /// Moves up to `max` deliveries into `out` under one lock (the hub thread publishes under
    /// the same lock: taking items one lock at a time made the two threads trade it 200 000
    /// times a second). Returns how many it moved.
    pub fn take(&self, max: usize, out: &mut Vec<Delivery>) -> usize {
        let mut hub = lock(&self.streams.hub);
        let before = out.len();
        while out.len() - before < max {
            match hub.pop(self.id) {
                Some(d) => out.push(d),
                None => break,
            }
        }
        out.len() - before
    }

    /// Whether the hub has cut this subscriber off.
    pub fn is_cut_off(&self) -> bool {
        lock(&self.streams.hub)
            .subscriber(self.id)
            .is_some_and(|s| s.cut_off().is_some())
    }

    /// Resolves when the hub cuts this subscriber off (while its writer is busy elsewhere,
    /// for instance blocked on a socket its peer does not read). A wake-up it takes from
    /// [`Subscription::next_batch`] costs nothing: that looks before it waits.
    pub async fn cut_off(&self) {
        while !self.is_cut_off() {
            self.notify.notified().await;
        }
    }

    /// Waits for at least one delivery, then moves up to `max` into `out`.
    pub async fn next_batch(&self, max: usize, out: &mut Vec<Delivery>) -> usize {
        loop {
            let n = self.take(max, out);
            if n > 0 {
                return n;
            }
            self.notify.notified().await;
        }
    }

    /// The next delivery, waiting for one.
    pub async fn next(&self) -> Delivery {
        let mut one = Vec::with_capacity(1);
        self.next_batch(1, &mut one).await;
        one.pop().expect("next_batch returns with at least one")
    }

    /// Samples lost so far to a full queue (each also delivered as a notice).
    pub fn missed(&self) -> u64 {
        lock(&self.streams.hub)
            .subscriber(self.id)
            .map_or(0, |s| s.missed_samples)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        lock(&self.streams.hub).unsubscribe(self.id);
        lock(&self.streams.wakers).remove(&self.id);
    }
}

/// The hub's own counters (kept by the sans-IO hub) join the registry under `hub_…` names, so
/// `REPORT`, `framewire latency` and `framewire_events_total` show them like every other set.
impl framewire_telemetry::CounterSet for Streams {
    fn visit(&self, f: &mut dyn FnMut(&str, u64)) {
        let HubCounters {
            samples_published,
            thermal_published,
            queued,
            samples_missed,
            thermal_replaced,
            unsubscribed,
            subscribers_cut_off,
            items_refused_stream_limit,
            streams_expired,
        } = self.hub_counters();
        f("hub_samples_published", samples_published);
        f("hub_thermal_published", thermal_published);
        f("hub_queued", queued);
        f("hub_samples_missed", samples_missed);
        f("hub_thermal_replaced", thermal_replaced);
        f("hub_unsubscribed", unsubscribed);
        f("hub_subscribers_cut_off", subscribers_cut_off);
        f("hub_items_refused_stream_limit", items_refused_stream_limit);
        f("hub_streams_expired", streams_expired);
    }
}
