//! The browser viewer and dashboard pages and their scripts, embedded at build time.

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::web_assets;

pub(crate) async fn page(name: &'static str) -> Response {
    match web_assets::get(name) {
        // Cross-origin isolation gives the page a 5 µs clock instead of 100 µs, so it can time
        // its own decode and draw; the pages load nothing from other origins.
        Some((ty, body)) => (
            [
                (CONTENT_TYPE, ty),
                (CACHE_CONTROL, "no-cache"),
                (
                    HeaderName::from_static("cross-origin-opener-policy"),
                    "same-origin",
                ),
                (
                    HeaderName::from_static("cross-origin-embedder-policy"),
                    "require-corp",
                ),
            ],
            body,
        )
            .into_response(),
        None if !web_assets::built() => (
            StatusCode::NOT_FOUND,
            "The browser pages were not built into this binary: run `make build` \
             (it bundles web/ with esbuild) and start the server again.\n",
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such page\n").into_response(),
    }
}

pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    // The pages have their own routes (the dashboard behind the token): scripts only here.
    if file.ends_with(".html") {
        return (StatusCode::NOT_FOUND, "no such asset\n").into_response();
    }
    match web_assets::get(&file) {
        Some((ty, body)) => {
            ([(CONTENT_TYPE, ty), (CACHE_CONTROL, "no-cache")], body).into_response()
        }
        None => (StatusCode::NOT_FOUND, "no such asset\n").into_response(),
    }
}
