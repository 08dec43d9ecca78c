//! The browser pages, embedded at build time from `web/dist` (see `build.rs`).

include!(concat!(env!("OUT_DIR"), "/web_assets.rs"));

/// The content type and bytes of an embedded file.
pub fn get(name: &str) -> Option<(&'static str, &'static [u8])> {
    FILES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, t, b)| (*t, *b))
}

/// Whether the pages were built into this binary.
pub fn built() -> bool {
    !FILES.is_empty()
}
