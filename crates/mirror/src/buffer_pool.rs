//! Picture buffers, recycled once no viewer holds them, and made ahead of need.
//!
//! A fresh buffer is memory the process has not touched: 5.8 MB of colour planes at 1600×1200
//! (1.9 MB grey), faulted in as it is zeroed, on the capture thread. A burst of changes after
//! a quiet time (the first frames of a scroll or a drag, or just after a viewer joined) needs
//! several at once, while the frames before it are still held by the viewers' sessions.
//! Live, five of the first six changed frames of a terminal's output waited 13.4–14.3 ms
//! before their conversion began (BENCHMARKS.md, "Realtime priority for the stream's threads;
//! buffers made ahead"); in another run a trace showed six buffers made at that moment. On
//! this project's VM a test program making 5.76 MB buffers on huge pages (`huge_vec`) took
//! 1.2–1.5 ms each in one run, and in another 1.5–2.9 ms for the first three, 5.9, then
//! 13.0–14.7 ms (2.8–3.4 ms without the huge-page advice). That the waits were allocations
//! is an inference from these; buffers made ahead took the terminal's p99 from 13.6–13.8 ms
//! to 2.2–2.4 ms. So the pool keeps [`SPARE`] buffers ready, made on a short-lived thread (one
//! at a time) at normal priority, and the capture thread makes one only when they run out.

use std::sync::Arc;
use std::thread::JoinHandle;

use framewire_telemetry::Counter;

/// Idle buffers the pool keeps ready (made ahead on a thread of their own).
const SPARE: usize = 4;
/// Idle buffers kept at most; beyond, they are freed.
const IDLE_KEPT: usize = 8;
/// Buffers the pool keeps track of at most, idle or still held by viewers' sessions (each
/// holds a bounded number of frames): one given back beyond it is left to be freed when its
/// last holder lets go.
const TRACKED: usize = 64;

#[derive(Default)]
pub(crate) struct BufferPool {
    /// Buffers given back, of `picture_len` bytes; those no one else holds can be taken.
    free: Vec<Arc<Vec<u8>>>,
    /// The thread making buffers ahead, and how many.
    coming: Option<(JoinHandle<Vec<Vec<u8>>>, usize)>,
    picture_len: usize,
    /// Buffers the capture thread had to make itself (none was ready).
    made_inline: Counter,
    /// Buffers made ahead and kept.
    made_ahead: Counter,
}

impl BufferPool {
    /// A pool that counts the buffers it makes, on the capture thread and ahead, in the
    /// mirror's counters.
    pub(crate) fn of_mirror(m: &crate::mirror::Mirror) -> BufferPool {
        BufferPool {
            made_inline: m.counters.picture_buffers_made_inline.clone(),
            made_ahead: m.counters.picture_buffers_made_ahead.clone(),
            ..BufferPool::default()
        }
    }

    /// A buffer of `len` bytes. A recycled one keeps the bytes of an earlier picture of the
    /// same size: the caller writes every byte it reads, as the ingest does.
    pub(crate) fn take(&mut self, len: usize) -> Arc<Vec<u8>> {
        self.collect(len);
        let b = match self.free.iter().position(|b| Arc::strong_count(b) == 1) {
            Some(i) => self.free.swap_remove(i),
            None => {
                self.made_inline.inc();
                Arc::new(framewire_capture::huge_pages::huge_vec(len, 0u8))
            }
        };
        self.make_ahead();
        b
    }

    /// A buffer comes back; it may still be held elsewhere, and is taken again once not.
    pub(crate) fn give(&mut self, b: Arc<Vec<u8>>) {
        // A buffer may come back twice (a picture set back as the encoder's reference after it
        // was given: `pass_over.rs`); kept twice, neither copy could ever be taken again. One
        // of an old size (a picture from before a resize) is not kept.
        if b.len() == self.picture_len
            && self.free.len() < TRACKED
            && !self.free.iter().any(|f| Arc::ptr_eq(f, &b))
        {
            self.free.push(b);
        }
    }

    fn idle(&self) -> usize {
        self.free
            .iter()
            .filter(|b| Arc::strong_count(b) == 1)
            .count()
    }

    /// Pictures of `len` bytes from now on; buffers made ahead that are done join the idle
    /// ones, within [`IDLE_KEPT`].
    fn collect(&mut self, len: usize) {
        if len != self.picture_len {
            self.picture_len = len;
            self.free.retain(|b| b.len() == len);
        }
        if self.coming.as_ref().is_some_and(|(h, _)| h.is_finished()) {
            let (h, _) = self.coming.take().expect("checked above");
            for v in h.join().unwrap_or_default() {
                if v.len() == self.picture_len && self.idle() < IDLE_KEPT {
                    self.free.push(Arc::new(v));
                    self.made_ahead.inc();
                }
            }
        }
        // Idle beyond what is kept: freed.
        let mut idle = self.idle();
        self.free.retain(|b| {
            let drop = idle > IDLE_KEPT && Arc::strong_count(b) == 1;
            idle -= usize::from(drop);
            !drop
        });
    }

    /// Fewer than [`SPARE`] ready and none coming: one thread makes what is missing.
    fn make_ahead(&mut self) {
        let wanted = SPARE.saturating_sub(self.idle());
        if wanted == 0 || self.coming.is_some() {
            return;
        }
        let len = self.picture_len;
        let made = std::thread::Builder::new()
            .name("framewire-buffers".into())
            .spawn(move || {
                (0..wanted)
                    .map(|_| framewire_capture::huge_pages::huge_vec(len, 0u8))
                    .collect()
            });
        // No thread to spare: the capture thread makes its own when it needs one.
        if let Ok(h) = made {
            self.coming = Some((h, wanted));
        }
    }

    /// Waits until the buffers being made ahead are done and collected (tests).
    #[cfg(test)]
    fn settle(&mut self) {
        while self.coming.is_some() {
            std::thread::sleep(std::time::Duration::from_millis(1));
            self.collect(self.picture_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: usize = 1 << 20;

    #[test]
    fn a_buffer_given_back_twice_is_kept_once_and_taken_again() {
        let mut pool = BufferPool::default();
        let b = pool.take(16);
        pool.settle();
        assert_eq!(pool.idle(), SPARE);
        let held = b.clone();
        // The encoder hands a picture back, and later again after it was set back as its
        // reference (`pass_over.rs`).
        pool.give(b.clone());
        pool.give(b);
        assert_eq!(pool.free.len(), SPARE + 1);
        let at = Arc::as_ptr(&held);
        drop(held);
        // Taken until the one given back comes again: it is not lost among the spares.
        let taken: Vec<_> = (0..=SPARE).map(|_| pool.take(16)).collect();
        assert!(
            taken.iter().any(|t| Arc::as_ptr(t) == at),
            "not taken again"
        );
    }

    /// After the first picture, a burst of pictures held at once (by viewers that have not
    /// acknowledged them) takes buffers made ahead: the capture thread makes none itself
    /// while the spares last.
    #[test]
    fn a_burst_after_a_quiet_time_takes_buffers_made_ahead() {
        let mut pool = BufferPool::default();
        let first = pool.take(MB);
        assert_eq!(pool.made_inline.get(), 1);
        pool.settle();
        assert_eq!(pool.made_ahead.get(), SPARE as u64);
        let held: Vec<_> = (0..SPARE).map(|_| pool.take(MB)).collect();
        assert_eq!(
            pool.made_inline.get(),
            1,
            "a buffer made on the capture thread"
        );
        assert!(held.iter().all(|b| b.len() == MB));
        drop(first);
    }

    /// Many pictures held at once (a viewer on a long path holds frames in flight for their
    /// round trip) are all kept track of and recycled as their holders let go: in that steady
    /// state no buffer is made, on the capture thread or ahead, and none is freed.
    #[test]
    fn many_held_at_once_are_recycled_without_making_more() {
        let mut pool = BufferPool::default();
        let mut held = std::collections::VecDeque::new();
        // 20 pictures in flight at once, each given back as the next is taken.
        for _ in 0..200 {
            let b = pool.take(MB);
            pool.give(b.clone());
            held.push_back(b);
            if held.len() > 20 {
                held.pop_front();
            }
            pool.settle();
        }
        let (inline, ahead) = (pool.made_inline.get(), pool.made_ahead.get());
        for _ in 0..200 {
            let b = pool.take(MB);
            pool.give(b.clone());
            held.push_back(b);
            held.pop_front();
            pool.settle();
        }
        assert_eq!(
            (pool.made_inline.get(), pool.made_ahead.get()),
            (inline, ahead),
            "buffers made in steady state"
        );
        assert!(pool.idle() <= IDLE_KEPT);
    }

    /// After a resize, a buffer of the old size (the encoder's old reference, given back) is
    /// never taken, and none of the new size is made on the capture thread once spares exist.
    #[test]
    fn after_a_resize_only_buffers_of_the_new_size_are_taken() {
        let mut pool = BufferPool::default();
        let old = pool.take(MB);
        pool.settle();
        let small = pool.take(64);
        assert_eq!(small.len(), 64);
        pool.give(old);
        pool.settle();
        let inline = pool.made_inline.get();
        for _ in 0..SPARE {
            let b = pool.take(64);
            assert_eq!((b.len(), b.capacity() < MB), (64, true));
        }
        assert_eq!(pool.made_inline.get(), inline);
    }
}
