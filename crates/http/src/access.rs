//! Who may read the server's figures. `/metrics`, `/api/stats` and `/dashboard` show device
//! serials, locations and viewers' addresses, so when the server has a token (or a metrics
//! token) they need it: `Authorization: Bearer TOKEN` (Prometheus' `authorization` setting) or
//! `?token=TOKEN` (the dashboard's link). Without any token they are open (loopback only: the
//! server refuses to leave loopback without one). The viewer page and its assets hold no data
//! and stay open; the WebSocket checks the token in the v1 Hello.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use framewire_session::token_matches;
use tracing::warn;

use crate::HttpCtx;

/// The tokens the HTTP port checks.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// The viewers' token (checked by the front door in the WebSocket's Hello).
    pub viewer_token: Option<String>,
    /// Needed for `/metrics`, `/api/stats` and `/dashboard` when set.
    pub metrics_token: Option<String>,
}

#[derive(Debug, serde::Deserialize, Default)]
pub(crate) struct TokenQuery {
    token: Option<String>,
}

impl Access {
    /// Whether a request with these headers and query may read the figures.
    pub fn allows(&self, headers: &HeaderMap, query: Option<&str>) -> bool {
        let Some(want) = &self.metrics_token else {
            return true;
        };
        let bearer = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        bearer.or(query).is_some_and(|t| token_matches(t, want))
    }
}

/// The 401 answer (counted and logged) for a request without the metrics token; `None` when
/// it has it.
pub(crate) fn refusal(
    ctx: &HttpCtx,
    what: &'static str,
    headers: &HeaderMap,
    query: &TokenQuery,
) -> Option<Response> {
    if ctx.access.allows(headers, query.token.as_deref()) {
        return None;
    }
    ctx.counters.http_unauthorized.inc(what);
    if let Some(held) = ctx.log.allow() {
        warn!(what, held, "request without the token refused");
    }
    Some(
        (
            StatusCode::UNAUTHORIZED,
            [(WWW_AUTHENTICATE, "Bearer")],
            "this server needs its token: Authorization: Bearer TOKEN, or ?token=TOKEN\n",
        )
            .into_response(),
    )
}

/// `/dashboard`, for those with the token.
pub(crate) async fn guard_page(
    State(ctx): State<Arc<HttpCtx>>,
    headers: HeaderMap,
    Query(q): Query<TokenQuery>,
) -> Response {
    if let Some(r) = refusal(&ctx, "dashboard", &headers, &q) {
        return r;
    }
    crate::pages::page("dashboard.html").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_by_header_or_query_and_nothing_else() {
        let open = Access::default();
        assert!(open.allows(&HeaderMap::new(), None));
        let a = Access {
            viewer_token: None,
            metrics_token: Some("s3cret-token".into()),
        };
        assert!(!a.allows(&HeaderMap::new(), None));
        assert!(!a.allows(&HeaderMap::new(), Some("")));
        assert!(!a.allows(&HeaderMap::new(), Some("s3cret-toke")));
        assert!(a.allows(&HeaderMap::new(), Some("s3cret-token")));
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, "Bearer s3cret-token".parse().unwrap());
        assert!(a.allows(&h, None));
        h.insert(AUTHORIZATION, "Basic s3cret-token".parse().unwrap());
        assert!(!a.allows(&h, None));
    }
}
