//! The host's certificate while the server runs: one self-signed certificate (kept in the
//! config directory by `framewire-quic`) shown by QUIC, WebTransport and HTTPS alike, so the
//! hash the page pins covers all three. It is valid for 13 days (browsers accept at most 14
//! for `serverCertificateHashes`), so a host that runs longer renews it: every hour it checks,
//! and when less than a day is left it makes a new one and swaps it into the QUIC endpoint,
//! the HTTPS acceptor and `/api/webtransport`. Connections already open keep theirs; browsers
//! read the new hash when they reconnect; native viewers need the new fingerprint (logged).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use framewire_http::{HostCert, HttpCtx, WebTransportInfo};
use framewire_quic::{Fingerprint, Identity};
use tracing::warn;

/// How often a running server checks whether its certificate needs renewing.
pub const RENEW_CHECK: Duration = Duration::from_secs(3600);

pub struct HostCertificate {
    dir: PathBuf,
    /// The HTTP port speaks HTTPS.
    https: bool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    fingerprint: Option<Fingerprint>,
    quic: Option<quinn::Endpoint>,
    http: Option<Arc<HttpCtx>>,
}

impl HostCertificate {
    /// The certificate in `dir` (made or renewed as needed).
    pub fn load(dir: PathBuf, https: bool) -> anyhow::Result<(HostCertificate, Identity)> {
        let id = Identity::load_or_create(&dir)?;
        let c = HostCertificate {
            dir,
            https,
            state: Mutex::new(State {
                fingerprint: Some(id.fingerprint),
                ..State::default()
            }),
        };
        Ok((c, id))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn fingerprint(&self) -> Option<Fingerprint> {
        self.state().fingerprint
    }

    /// The QUIC endpoint that shows it.
    pub fn attach_quic(&self, e: quinn::Endpoint) {
        self.state().quic = Some(e);
    }

    /// The HTTP port that shows it (HTTPS) and hands its hash to the page; sets it there now.
    pub fn attach_http(&self, ctx: Arc<HttpCtx>, id: &Identity) -> anyhow::Result<()> {
        let mut st = self.state();
        let port = st
            .quic
            .as_ref()
            .and_then(|e| e.local_addr().ok())
            .map(|a| a.port());
        *ctx.cert.write().unwrap_or_else(|e| e.into_inner()) = self.http_cert(id, port)?;
        st.http = Some(ctx);
        Ok(())
    }

    fn http_cert(&self, id: &Identity, quic_port: Option<u16>) -> anyhow::Result<HostCert> {
        Ok(HostCert {
            tls: match self.https {
                true => Some(framewire_quic::https_config(id)?),
                false => None,
            },
            webtransport: quic_port.map(|port| WebTransportInfo {
                port,
                path: crate::webtransport::PATH,
                certificate_hash: id.fingerprint.0,
            }),
        })
    }

    /// Renews the certificate if it runs out within a day; the new fingerprint when it did.
    pub fn renew(&self) -> anyhow::Result<Option<Fingerprint>> {
        let id = Identity::load_or_create(&self.dir)?;
        let mut st = self.state();
        if st.fingerprint == Some(id.fingerprint) {
            return Ok(None);
        }
        if let Some(e) = &st.quic {
            e.set_server_config(Some(framewire_quic::server_config(&id)?));
        }
        if let Some(ctx) = &st.http {
            let port = st
                .quic
                .as_ref()
                .and_then(|e| e.local_addr().ok())
                .map(|a| a.port());
            *ctx.cert.write().unwrap_or_else(|e| e.into_inner()) = self.http_cert(&id, port)?;
        }
        st.fingerprint = Some(id.fingerprint);
        warn!(fingerprint = %id.fingerprint, "renewed the host's certificate: native viewers need the new fingerprint (--quic {})", id.fingerprint);
        Ok(Some(id.fingerprint))
    }
}

/// Checks the certificate every [`RENEW_CHECK`] for as long as the server runs.
pub async fn renew_loop(c: Arc<HostCertificate>) {
    let mut every = tokio::time::interval(RENEW_CHECK);
    every.tick().await;
    loop {
        every.tick().await;
        if let Err(e) = c.renew() {
            warn!(error = %e, "could not renew the host's certificate; the current one is kept");
        }
    }
}
