//! Picture buffers, recycled once no viewer holds them, and made ahead of need.
//!
//! A fresh buffer is memory the process has not touched: 5.8 MB of colour planes at 1600×1200
//! (1.9 MB grey), faulted in page by page as it is zeroed. On this project's VM that took
//! 0.7–14 ms a buffer on the capture thread (14 ms where the hypervisor had to back the pages
//! too). A burst of changes after a quiet time (the first frames of a scroll or a drag, or
//! just after a viewer joined) needs several at once, while the frames before it are still
//! held by the viewers' sessions: live, the first six changed frames of a terminal's output
//! each waited 13.5–14.3 ms for one (BENCHMARKS.md, "Realtime priority for the stream's
//! threads"). So the pool keeps [`SPARE`] buffers ready, made on a thread of their own at
//! normal priority, and the capture thread allocates only when they run out.

use std::sync::Arc;
use std::thread::JoinHandle;

use framewire_telemetry::Counter;

/// Buffers the pool keeps ready beyond those in use (made ahead on a thread of their own).
const SPARE: usize = 4;
/// Buffers the pool holds at most, in use by viewers or ready; one given back beyond it is
/// freed.
const KEPT: usize = 12;

#[derive(Default)]
pub(crate) struct BufferPool {
    /// Buffers given back; those no one else holds any more can be taken.
    free: Vec<Arc<Vec<u8>>>,
    /// Buffers being made ahead, of `len` bytes.
    coming: Vec<JoinHandle<Vec<u8>>>,
    len: usize,
    /// Buffers the capture thread had to make itself (none were ready).
    made_inline: Counter,
    /// Buffers made ahead, on a thread of their own.
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

    /// A buffer of `len` bytes (contents unspecified where it is recycled: the caller writes
    /// every byte it reads, as the ingest does).
    pub(crate) fn take(&mut self, len: usize) -> Arc<Vec<u8>> {
        self.collect(len);
        let b = match self.free.iter().position(|b| Arc::strong_count(b) == 1) {
            Some(i) => {
                let mut b = self.free.swap_remove(i);
                Arc::get_mut(&mut b)
                    .expect("a buffer no one else holds")
                    .resize(len, 0);
                b
            }
            None => {
                self.made_inline.inc();
                Arc::new(framewire_capture::huge_pages::huge_vec(len, 0u8))
            }
        };
        self.make_ahead();
        b
    }

    /// A buffer comes back (it may still be held elsewhere: it is taken again once not).
    pub(crate) fn give(&mut self, b: Arc<Vec<u8>>) {
        // A buffer may come back twice (a picture set back as the encoder's reference after it
        // was given: `pass_over.rs`); kept twice, neither copy could ever be taken again.
        if self.free.len() < KEPT && !self.free.iter().any(|f| Arc::ptr_eq(f, &b)) {
            self.free.push(b);
        }
    }

    /// Buffers made ahead that are done join the free ones (those of another size, after a
    /// resize, are dropped).
    fn collect(&mut self, len: usize) {
        if len != self.len {
            self.len = len;
            self.free
                .retain(|b| b.len() == len || Arc::strong_count(b) > 1);
        }
        let mut i = 0;
        while i < self.coming.len() {
            if !self.coming[i].is_finished() {
                i += 1;
                continue;
            }
            if let Ok(v) = self.coming.swap_remove(i).join() {
                if v.len() == self.len && self.free.len() < KEPT {
                    self.free.push(Arc::new(v));
                }
            }
        }
    }

    /// Starts making buffers while fewer than [`SPARE`] are ready or coming, within [`KEPT`].
    fn make_ahead(&mut self) {
        let ready = self
            .free
            .iter()
            .filter(|b| Arc::strong_count(b) == 1)
            .count();
        let mut wanted = SPARE.saturating_sub(ready + self.coming.len());
        while wanted > 0 && self.free.len() + self.coming.len() < KEPT {
            let len = self.len;
            let made = std::thread::Builder::new()
                .name("framewire-buffers".into())
                .spawn(move || framewire_capture::huge_pages::huge_vec(len, 0u8));
            match made {
                Ok(h) => self.coming.push(h),
                // No thread to spare: the capture thread makes its own when it needs one.
                Err(_) => return,
            }
            self.made_ahead.inc();
            wanted -= 1;
        }
    }

    /// Waits until the buffers being made ahead are done and collected (tests).
    #[cfg(test)]
    fn settle(&mut self, len: usize) {
        while !self.coming.is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(1));
            self.collect(len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_twice_is_kept_once_and_taken_again() {
        let mut pool = BufferPool::default();
        let b = pool.take(16);
        pool.settle(16);
        let spares = pool.free.len();
        let held = b.clone();
        // The encoder hands a picture back, and later again after it was set back as its
        // reference (`pass_over.rs`).
        pool.give(b.clone());
        pool.give(b);
        assert_eq!(pool.free.len(), spares + 1);
        let at = Arc::as_ptr(&held);
        drop(held);
        // Taken until the one given back comes again: it is not lost among the spares.
        let taken: Vec<_> = (0..=spares).map(|_| pool.take(16)).collect();
        assert!(
            taken.iter().any(|t| Arc::as_ptr(t) == at),
            "the buffer is taken again, not lost"
        );
    }

    /// After the first picture, a burst of pictures held at once (by viewers that have not
    /// acknowledged them) takes buffers made ahead: the capture thread makes none itself
    /// while the spares last, and the pool holds no more than it may keep.
    #[test]
    fn a_burst_after_a_quiet_time_takes_buffers_made_ahead() {
        let mut pool = BufferPool::default();
        let first = pool.take(1 << 20);
        assert_eq!(
            (pool.made_inline.get(), pool.made_ahead.get()),
            (1, SPARE as u64)
        );
        pool.settle(1 << 20);
        let held: Vec<_> = (0..SPARE).map(|_| pool.take(1 << 20)).collect();
        assert_eq!(
            pool.made_inline.get(),
            1,
            "a buffer made on the capture thread"
        );
        assert!(held.iter().all(|b| b.len() == 1 << 20));
        for b in held.into_iter().chain([first]) {
            pool.give(b);
        }
        pool.settle(1 << 20);
        assert!(pool.free.len() <= KEPT);
        // A resize: buffers of the old size are not taken.
        let small = pool.take(64);
        assert_eq!(small.len(), 64);
        pool.settle(64);
        assert!(pool.free.iter().all(|b| b.len() == 64));
    }
}
