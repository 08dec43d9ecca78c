//! One render shared by concurrent scrapes. Rendering `/metrics` walks every counter, viewer
//! and stream; ten thousand scrapes at once each rendering their own starved the data path.
//! Here the first scrape renders (on a blocking thread, off the async workers), the ones that
//! arrive meanwhile wait for it, and any scrape within `FRESH` of a render gets that render.

use std::time::{Duration, Instant};

use bytes::Bytes;

/// How long a render answers later scrapes.
pub const FRESH: Duration = Duration::from_millis(250);

#[derive(Default)]
pub struct Shared(tokio::sync::Mutex<Option<(Instant, Bytes)>>);

impl Shared {
    /// The latest render if fresh, else a new one from `render`. The second value says
    /// whether the render was shared (made for another scrape).
    pub async fn get<F>(&self, render: F) -> Result<(Bytes, bool), String>
    where
        F: FnOnce() -> Result<String, String> + Send + 'static,
    {
        let mut slot = self.0.lock().await;
        if let Some((at, body)) = &*slot {
            if at.elapsed() < FRESH {
                return Ok((body.clone(), true));
            }
        }
        let body = tokio::task::spawn_blocking(render)
            .await
            .map_err(|e| format!("rendering stopped: {e}"))??;
        let body = Bytes::from(body);
        *slot = Some((Instant::now(), body.clone()));
        Ok((body, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_scrapes_share_one_render() {
        let cache = Arc::new(Shared::default());
        let renders = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..200 {
            let (cache, renders) = (cache.clone(), renders.clone());
            tasks.push(tokio::spawn(async move {
                cache
                    .get(move || {
                        renders.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        Ok("body".to_string())
                    })
                    .await
            }));
        }
        let mut shared = 0;
        for t in tasks {
            let (body, was_shared) = t.await.unwrap().unwrap();
            assert_eq!(&body[..], b"body");
            shared += was_shared as usize;
        }
        // Each render stays fresh for FRESH (250 ms); 200 scrapes of a 20 ms render made at
        // once need one, or two if the first went stale while the queue drained.
        let n = renders.load(Ordering::SeqCst);
        assert!(n <= 2, "{n} renders for 200 concurrent scrapes");
        assert_eq!(shared, 200 - n);
    }
}
