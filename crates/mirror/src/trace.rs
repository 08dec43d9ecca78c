//! The frame trace (`serve --trace-frames FILE`): one line per frame sent, `protocol viewer
//! wire_seq checksum`, for checking clients that cannot verify checksums themselves (the
//! Daylight app).

use std::sync::{Arc, Mutex};

/// Appends one line per frame sent to the trace file, if tracing is on.
pub(crate) type Trace = Option<Arc<Mutex<std::fs::File>>>;

/// Opens the frame trace file for appending, if one is configured.
pub(crate) fn open_trace(path: Option<&std::path::Path>) -> anyhow::Result<Trace> {
    use anyhow::Context;
    let Some(p) = path else { return Ok(None) };
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(p)
        .with_context(|| format!("opening trace file {}", p.display()))?;
    Ok(Some(Arc::new(Mutex::new(f))))
}
