//! The status file: the Daylight status keys, rewritten atomically (write + rename) every 2 s.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tracing::warn;

use crate::Target;

pub async fn run(path: PathBuf, target: Arc<Target>) {
    let mut warned = false;
    loop {
        let body: String = target
            .mirror
            .status_lines()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect();
        let tmp = path.with_extension("tmp");
        let r = tokio::fs::write(&tmp, body).await;
        let r = match r {
            Ok(()) => tokio::fs::rename(&tmp, &path).await,
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            target.counters.status_file_errors.inc();
            if !warned {
                warn!(path = %path.display(), error = %e, "cannot write the status file");
                warned = true;
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}
