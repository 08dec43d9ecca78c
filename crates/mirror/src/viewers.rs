//! Viewers joining and leaving: each gets an id and a place in the reports, the wire its
//! protocol and capabilities call for, and a [`HostSession`] driven by its own task
//! (`connection.rs`); when it leaves, its figures fold into the totals.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use framewire_proto::daylight::ViewerDecoder;
use framewire_proto::v1::{self, caps, Packet};
use framewire_session::{
    codec_to_wire, negotiate, DaylightWire, HostConfig, HostSession, Protocol, V1Wire,
    ViewerCommand, ViewerReader, Wire,
};
use framewire_telemetry::SampleWindow;
use tokio::io::{AsyncRead, AsyncWrite};
use tracing::info;

use crate::connection::drive;
use crate::mirror::{lock, Mirror, ViewerShared};
use crate::transport::{StreamTransport, Transport};

/// One viewer in a stream's count, for as long as it lives (however its task ends, a
/// cancelled one included).
struct Counted<'a>(&'a AtomicUsize);

impl<'a> Counted<'a> {
    fn new(c: &'a AtomicUsize) -> Counted<'a> {
        c.fetch_add(1, Ordering::Relaxed);
        Counted(c)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Mirror {
    /// A framewire v1 viewer whose Hello was accepted: negotiates its codec and features,
    /// welcomes it and serves it until it leaves. `dec` holds whatever it sent after its Hello.
    pub async fn serve_v1_viewer<T: Transport>(
        self: &Arc<Self>,
        mut sock: T,
        dec: v1::Decoder,
        peer: SocketAddr,
        viewer_caps: u32,
        control: bool,
    ) -> std::io::Result<()> {
        let viewer = self.register(Protocol::V1, peer);
        // The viewer gets only what it declared: the configured codec, else LZ4, else raw.
        let preferred = codec_to_wire(self.cfg.codec);
        // A host told not to send predicted rectangles does not offer them: neither the shared
        // deltas nor the ones made for this viewer alone carry them.
        let offered = match self.cfg.predicted_rects {
            true => caps::ALL,
            false => caps::ALL & !caps::PREDICTED_RECTS,
        };
        let mut n = negotiate(preferred, offered, viewer_caps);
        if !self.cfg.dense_zstd {
            n.dense = n.codec;
        }
        if preferred != n.codec {
            self.counters.codec_fallbacks.inc();
            info!(viewer = viewer.id, codec = ?n.codec, "viewer does not take the configured codec; it gets another");
        }
        let welcome = Packet::Welcome {
            version: v1::VERSION,
            caps: n.caps,
            session: viewer.id,
        };
        let welcome = framewire_session::Transmit::control(welcome.to_bytes());
        if let Err(e) = sock.send(welcome).await {
            self.unregister(&viewer);
            return Err(e);
        }
        let mut cfg = self.host_config(Protocol::V1, control);
        cfg.drops_superseded = sock.drops_superseded();
        // A transport that gives up on frames is one on which they may never arrive.
        cfg.frames_may_be_lost = sock.drops_superseded();
        cfg.datagrams_up_to = sock.datagram_frames_up_to();
        cfg.large_datagrams_up_to = sock.large_datagram_frames_up_to();
        let session = HostSession::new(V1Wire::new(n), ViewerReader::V1(dec), cfg);
        // The capture loop makes (and encodes) each stream while its count is above zero.
        let _counted = match n.colour {
            true => {
                info!(viewer = viewer.id, "viewer takes colour");
                Counted::new(&self.colour_viewers)
            }
            false => Counted::new(&self.grey_viewers),
        };
        self.run_session(viewer, session, sock, n.colour).await
    }

    /// A Daylight app connection: it has no handshake, so it is a viewer from its first byte.
    pub async fn serve_daylight_viewer<S: AsyncRead + AsyncWrite + Unpin + Send>(
        self: &Arc<Self>,
        sock: S,
        peer: SocketAddr,
    ) -> std::io::Result<()> {
        let viewer = self.register(Protocol::Daylight, peer);
        let reader = ViewerReader::Daylight(ViewerDecoder::new());
        let cfg = self.host_config(Protocol::Daylight, false);
        let session = HostSession::new(DaylightWire::default(), reader, cfg);
        let _counted = Counted::new(&self.grey_viewers);
        let sock = StreamTransport::new(sock);
        self.run_session(viewer, session, sock, false).await
    }

    fn register(&self, proto: Protocol, peer: SocketAddr) -> Arc<ViewerShared> {
        let v = Arc::new(ViewerShared {
            id: self.new_viewer_id(),
            protocol: proto,
            peer,
            flow: Default::default(),
            e2e_us: Mutex::new(SampleWindow::new(600)),
            bytes_sent: Default::default(),
        });
        lock(&self.viewers).insert(v.id, v.clone());
        info!(viewer = v.id, protocol = proto.name(), %peer, "viewer connected");
        v
    }

    /// How the host treats a viewer of `proto`.
    fn host_config(&self, proto: Protocol, control: bool) -> HostConfig {
        HostConfig {
            limit: self.cfg.limit,
            ack_timeout_us: self.cfg.ack_timeout_us,
            refresh_every: match proto {
                // Daylight viewers cannot tell a wrong picture: refresh it now and then.
                Protocol::Daylight => self.cfg.keyframe_interval,
                // v1 viewers verify every frame's checksum and ask for a keyframe when needed.
                Protocol::V1 => 0,
            },
            control,
            initial: vec![ViewerCommand::Brightness(self.settings().brightness)],
            drops_superseded: false,
            frames_may_be_lost: false,
            datagrams_up_to: None,
            large_datagrams_up_to: None,
        }
    }

    /// Drives a viewer's session on `sock` until it ends, then unregisters the viewer.
    async fn run_session<W: Wire, T: Transport>(
        self: &Arc<Self>,
        viewer: Arc<ViewerShared>,
        session: HostSession<W>,
        sock: T,
        colour: bool,
    ) -> std::io::Result<()> {
        let r = drive(session, self.clone(), viewer.clone(), sock, colour).await;
        self.unregister(&viewer);
        r
    }

    fn unregister(&self, v: &ViewerShared) {
        // The departed totals are locked before the viewer leaves the list, and readers take
        // them in the same order, so a report counts this viewer exactly once.
        let mut d = lock(&self.departed);
        lock(&self.viewers).remove(&v.id);
        let s = lock(&v.flow).stats;
        for &x in lock(&v.e2e_us).values() {
            d.e2e_us.push(x);
        }
        d.flow.add(&s);
        drop(d);
        info!(
            viewer = v.id,
            protocol = v.protocol.name(),
            frames = s.frames_planned,
            bytes = v.bytes_sent.load(Ordering::Relaxed),
            "viewer left"
        );
    }
}
