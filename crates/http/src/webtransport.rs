//! `/api/webtransport`: what the page needs to open a WebTransport session to this host: the
//! QUIC port, the session's path, and the SHA-256 of the host's self-signed certificate, which
//! the page passes to the browser as `serverCertificateHashes` (the certificate is P-256 and
//! valid for less than 14 days, as browsers require for that). The hash is not a secret (the
//! certificate is sent in every handshake); the token in the v1 Hello still guards the screen.
//! 404 when the host serves no QUIC port: the page then uses the WebSocket.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::HttpCtx;

/// Where the host's WebTransport is.
#[derive(Debug, Clone)]
pub struct WebTransportInfo {
    /// The UDP port (the QUIC listener's).
    pub port: u16,
    pub path: &'static str,
    /// SHA-256 of the certificate (DER).
    pub certificate_hash: [u8; 32],
}

impl WebTransportInfo {
    /// The JSON the page reads.
    pub fn to_json(&self) -> String {
        let hash: String = self
            .certificate_hash
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        serde_json::json!({
            "port": self.port,
            "path": self.path,
            "certificateHash": hash,
        })
        .to_string()
    }
}

pub(crate) async fn info(State(ctx): State<Arc<HttpCtx>>) -> Response {
    match &ctx.host_cert().webtransport {
        Some(w) => (
            [
                (CONTENT_TYPE, "application/json"),
                (CACHE_CONTROL, "no-store"),
            ],
            w.to_json(),
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            "this host serves no WebTransport (start it with --quic-port)\n",
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_gets_port_path_and_hash_in_hex() {
        let mut h = [0u8; 32];
        h[0] = 0xab;
        h[31] = 0x01;
        let j: serde_json::Value = serde_json::from_str(
            &WebTransportInfo {
                port: 4433,
                path: "/framewire",
                certificate_hash: h,
            }
            .to_json(),
        )
        .unwrap();
        assert_eq!(j["port"], 4433);
        assert_eq!(j["path"], "/framewire");
        let hex = j["certificateHash"].as_str().unwrap();
        assert_eq!(hex.len(), 64);
        assert!(hex.starts_with("ab00") && hex.ends_with("0001"));
    }
}
