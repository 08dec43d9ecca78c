//! Server configuration with safe defaults: loopback only, framewire v1 on 7878, Daylight on
//! 8888, 60 fps, LZ4, a refresh keyframe for Daylight viewers every 60 deltas.

use std::net::SocketAddr;
use std::path::PathBuf;

use framewire_capture::{Resolution, Scene};
use framewire_codec::BlockCodec;
use framewire_flow::InflightLimit;
use framewire_mirror::input::InputConfig;
use framewire_mirror::{MirrorConfig, SourceSpec};

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub source: SourceSpec,
    pub resolution: Resolution,
    pub fps: u32,
    /// framewire v1 listener; `None` disables it.
    pub v1_addr: Option<SocketAddr>,
    /// framewire v1 over QUIC (UDP); `None` (the default) disables it.
    pub quic_addr: Option<SocketAddr>,
    /// Frames to QUIC viewers that take them (framewire/1, not the browser's WebTransport) go
    /// as datagrams with Reed-Solomon recovery shards instead of a stream each: a lost packet
    /// is made good from the others, not retransmitted (the default; `false`: a stream each).
    pub quic_datagrams: bool,
    /// Where the host's certificate (QUIC, WebTransport and HTTPS) is kept (`None`:
    /// framewire's config directory).
    pub quic_dir: Option<PathBuf>,
    /// Daylight-compatible listener; `None` disables it.
    pub daylight_addr: Option<SocketAddr>,
    /// Sensor line listener (EmberEye-compatible); `None` (the library default) disables it.
    pub sensor_addr: Option<SocketAddr>,
    /// Sent as `<command>\n` to every device when it connects (`PERIOD_ON`); `None` sends
    /// nothing.
    pub sensor_start: Option<String>,
    /// HTTP port (`/metrics`); `None` (the library default) disables it.
    pub http_addr: Option<SocketAddr>,
    /// Whether the HTTP port speaks HTTPS.
    pub http_tls: HttpTls,
    /// Required from v1 viewers when set; required to bind beyond loopback.
    pub token: Option<String>,
    /// Allows a non-loopback bind without a token (and the token-less Daylight listener).
    pub insecure: bool,
    pub codec: BlockCodec,
    /// Daylight viewers get a keyframe after this many deltas (0 = never). They cannot verify
    /// pictures; framewire v1 viewers check every checksum and ask when they need one.
    pub keyframe_interval: u32,
    /// Send framewire v1 viewers row deltas (shift + changed rows) instead of full-frame XOR.
    pub row_deltas: bool,
    /// Moved-rectangle deltas for the viewers that declare them (with row deltas on).
    pub moved_rects: bool,
    /// Predicted rectangles in them, for the viewers that declare those too.
    pub predicted_rects: bool,
    /// With `codec` LZ4, deltas with predicted rectangles in zstd for viewers that declare it.
    pub dense_zstd: bool,
    pub limit: InflightLimit,
    pub ack_timeout_us: u64,
    pub control_socket: Option<PathBuf>,
    pub status_file: Option<PathBuf>,
    /// Appends `protocol viewer wire_seq checksum` for every frame sent (debugging and
    /// checking clients that cannot verify checksums themselves, like the Daylight app).
    pub trace_frames: Option<PathBuf>,
    /// Also publish every frame to this shared-memory route (see `shm_export.rs`).
    pub shm_export: Option<String>,
    /// Export colour planes (G, R − G, B − G) instead of grey.
    pub shm_colour: bool,
    /// Inject viewers' input into this X display (`None`: view only).
    pub input: Option<InputConfig>,
    /// The token a viewer presents to send input (it may view with it too).
    pub control_token: Option<String>,
    /// The Daylight app's touch port; always loopback (adb reverse arrives there).
    pub touch_addr: Option<SocketAddr>,
    pub brightness: u8,
    /// Display tuning applied to every picture (changeable live through the control socket).
    pub tuning: framewire_codec::tune::Tuning,
    /// Connections each listener holds at most (within the descriptor budget).
    pub max_connections: ConnLimits,
    /// Subscriber queues, their memory budget, and the live streams.
    pub hub: framewire_hub::Limits,
    /// Required for `/metrics`, `/api/stats` and the dashboard when set; otherwise `token`
    /// guards them (and on loopback without a token they are open).
    pub metrics_token: Option<String>,
    /// Addresses the sensor listener admits when it is not on loopback (loopback always).
    pub sensor_allow: Option<framewire_net::AllowList>,
    /// How long a v1 connection (TCP or WebSocket) may take to send its Hello.
    pub handshake_timeout: std::time::Duration,
    /// How long an HTTP client may take to send a request's head.
    pub header_timeout: std::time::Duration,
}

/// The most connections each listener holds at once. Beyond it a connection is closed at
/// once and counted (`connections_refused.<listener>_full`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// framewire v1 viewers and subscribers (TCP).
    pub v1: usize,
    /// Daylight viewers: they have no handshake, and each holds megabytes of socket buffers,
    /// so a handful (a tablet or two).
    pub daylight: usize,
    /// HTTP: pages, WebSockets, scrapes.
    pub http: usize,
    /// Sensor devices.
    pub sensor: usize,
    /// The Daylight app's touch connections.
    pub touch: usize,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits {
            v1: 256,
            daylight: 8,
            http: 256,
            sensor: 10_000,
            touch: 4,
        }
    }
}

impl ConnLimits {
    pub const NAMES: [&'static str; 5] = ["v1", "daylight", "http", "sensor", "touch"];

    pub fn as_array(&self) -> [usize; 5] {
        [self.v1, self.daylight, self.http, self.sensor, self.touch]
    }

    pub fn from_array(a: [usize; 5]) -> Self {
        ConnLimits {
            v1: a[0],
            daylight: a[1],
            http: a[2],
            sensor: a[3],
            touch: a[4],
        }
    }

    /// `v1=256,sensor=20000`: the listeners named are changed, the others keep theirs.
    pub fn parse_over(mut self, s: &str) -> Result<Self, String> {
        let mut a = self.as_array();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?}: expected LISTENER=N, like sensor=20000"))?;
            let i = Self::NAMES
                .iter()
                .position(|n| n.eq_ignore_ascii_case(k.trim()))
                .ok_or_else(|| {
                    format!("no listener {k:?}; listeners: {}", Self::NAMES.join(", "))
                })?;
            a[i] = match v.trim().parse::<usize>() {
                Ok(n) if (1..=1_000_000).contains(&n) => n,
                _ => return Err(format!("{part:?}: N must be 1 to 1000000")),
            };
        }
        self = Self::from_array(a);
        Ok(self)
    }
}

impl std::fmt::Display for ConnLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = Self::NAMES
            .iter()
            .zip(self.as_array())
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        f.write_str(&parts.join(","))
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            source: SourceSpec::Synthetic(Scene::Mixed),
            resolution: Resolution::SHARP,
            fps: 60,
            v1_addr: Some(SocketAddr::from(([127, 0, 0, 1], 7878))),
            quic_addr: None,
            quic_datagrams: true,
            quic_dir: None,
            http_tls: HttpTls::Auto,
            daylight_addr: Some(SocketAddr::from(([127, 0, 0, 1], 8888))),
            sensor_addr: None,
            sensor_start: Some(framewire_proto::sensor_line::START_COMMAND.to_string()),
            http_addr: None,
            token: None,
            insecure: false,
            codec: BlockCodec::Lz4,
            keyframe_interval: 60,
            row_deltas: true,
            moved_rects: true,
            predicted_rects: true,
            dense_zstd: true,
            limit: InflightLimit::default(),
            ack_timeout_us: 2_000_000,
            control_socket: None,
            status_file: None,
            trace_frames: None,
            shm_export: None,
            shm_colour: false,
            input: None,
            control_token: None,
            touch_addr: None,
            brightness: 128,
            tuning: Default::default(),
            max_connections: ConnLimits::default(),
            hub: framewire_hub::Limits::default(),
            metrics_token: None,
            sensor_allow: None,
            handshake_timeout: std::time::Duration::from_secs(5),
            header_timeout: framewire_http::HEADER_TIMEOUT,
        }
    }
}

/// The shortest token a server accepts (for viewers and for control).
pub const MIN_TOKEN_LEN: usize = 8;

impl ServerConfig {
    /// The mirror's part of the configuration.
    pub fn mirror(&self) -> MirrorConfig {
        MirrorConfig {
            source: self.source.clone(),
            resolution: self.resolution,
            fps: self.fps,
            codec: self.codec,
            keyframe_interval: self.keyframe_interval,
            row_deltas: self.row_deltas,
            moved_rects: self.moved_rects,
            predicted_rects: self.predicted_rects,
            dense_zstd: self.dense_zstd,
            limit: self.limit,
            ack_timeout_us: self.ack_timeout_us,
            trace_frames: self.trace_frames.clone(),
            brightness: self.brightness,
            tuning: self.tuning,
        }
    }

    /// Refuses to expose a screen beyond loopback without a token (or an explicit
    /// `--insecure`). The Daylight app cannot send a token, so its listener needs `--insecure`
    /// to leave loopback.
    pub fn check_exposure(&self) -> Result<(), String> {
        // An empty or short token is no protection: refuse it rather than treat it as one.
        for (flag, t) in [
            ("--token", &self.token),
            ("--control-token", &self.control_token),
            ("--metrics-token", &self.metrics_token),
        ] {
            if let Some(t) = t {
                if t.chars().count() < MIN_TOKEN_LEN {
                    return Err(format!(
                        "{flag} must be at least {MIN_TOKEN_LEN} characters (got {}); an empty or short token would let anyone in (is FRAMEWIRE_TOKEN set but empty?)",
                        t.chars().count()
                    ));
                }
            }
        }
        if let Some(a) = self.v1_addr {
            // framewire v1 over TCP is not encrypted: its token (and the screen) would cross
            // the network readable. Across a network, viewers take QUIC.
            if !a.ip().is_loopback() && !self.insecure {
                return Err(format!(
                    "refusing to serve framewire v1 over plain TCP on {a} (not loopback): the token and the screen would cross the network unencrypted; serve viewers across a network with --quic-port (TLS 1.3), or pass --insecure if you really mean it"
                ));
            }
        }
        if let Some(a) = self.quic_addr {
            // QUIC is always encrypted; the token is what keeps the screen to its viewers.
            if !a.ip().is_loopback() && self.token.is_none() && !self.insecure {
                return Err(format!(
                    "refusing to serve the screen over QUIC on {a} (not loopback) without --token; pass --token SECRET, or --insecure if you really mean it"
                ));
            }
        }
        if let Some(a) = self.daylight_addr {
            if !a.ip().is_loopback() && !self.insecure {
                return Err(format!(
                    "refusing to serve the Daylight protocol on {a} (not loopback): it has no authentication; use adb reverse to reach it over USB, or pass --insecure"
                ));
            }
        }
        if let Some(a) = self.sensor_addr {
            if !a.ip().is_loopback() && self.sensor_allow.is_none() && !self.insecure {
                return Err(format!(
                    "refusing to take sensor data on {a} (not loopback) from anyone: the line protocol has no authentication; name the devices' networks with --sensor-allow 10.0.0.0/24,… (or pass --insecure to admit every address)"
                ));
            }
        }
        if let Some(a) = self.http_addr {
            // The HTTP port carries the viewer page and its WebSocket (v1 rules: the token),
            // and the metrics (the token or the metrics token).
            if !a.ip().is_loopback() && self.token.is_none() && !self.insecure {
                return Err(format!(
                    "refusing to serve the browser viewer on {a} (not loopback) without --token; pass --token SECRET, or --insecure if you really mean it"
                ));
            }
            if !a.ip().is_loopback() && self.http_tls == HttpTls::Off && !self.insecure {
                return Err(format!(
                    "refusing to serve the HTTP port on {a} (not loopback) without TLS: the token would cross the network unencrypted; leave HTTPS on, or pass --insecure if you really mean it"
                ));
            }
        }
        if let Some(a) = self.touch_addr {
            if !a.ip().is_loopback() {
                return Err(format!(
                    "the touch port has no authentication and only listens on loopback (adb reverse arrives there), not {a}"
                ));
            }
        }
        if self.input.is_some() && self.control_token.is_none() {
            return Err(format!(
                "input injection needs a control token of at least {MIN_TOKEN_LEN} characters"
            ));
        }
        if self.fps == 0 || self.fps > 240 {
            return Err(format!("fps {} is out of range 1..=240", self.fps));
        }
        Ok(())
    }
}

/// Whether the HTTP port speaks HTTPS, with the host's self-signed certificate (the same as
/// QUIC's, kept in the config directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpTls {
    /// HTTPS off loopback (the page needs a secure context there for WebTransport, and the
    /// token must not cross the network in the clear), plain HTTP on loopback (already a
    /// secure context for browsers).
    #[default]
    Auto,
    On,
    /// Plain HTTP everywhere (off loopback only with `insecure`).
    Off,
}

impl ServerConfig {
    /// Whether the HTTP port on `a` speaks HTTPS.
    pub fn https(&self, a: SocketAddr) -> bool {
        match self.http_tls {
            HttpTls::Auto => !a.ip().is_loopback(),
            HttpTls::On => true,
            HttpTls::Off => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(ip: [u8; 4], port: u16) -> Option<SocketAddr> {
        Some(SocketAddr::from((ip, port)))
    }

    /// The README's remote recipe (`--bind 0.0.0.0 --token SECRET --quic-port 4433`): the
    /// encrypted, authenticated listeners leave loopback (QUIC, and HTTP as HTTPS); plain TCP
    /// v1 and the unauthenticated ones stay (they are not refused for it).
    #[test]
    fn authenticated_listeners_follow_bind_and_the_others_stay_on_loopback() {
        let remote = ServerConfig {
            v1_addr: on([127, 0, 0, 1], 7878),
            quic_addr: on([0, 0, 0, 0], 4433),
            http_addr: on([0, 0, 0, 0], 8890),
            daylight_addr: on([127, 0, 0, 1], 8888),
            sensor_addr: on([127, 0, 0, 1], 9001),
            token: Some("a-long-secret".into()),
            ..ServerConfig::default()
        };
        assert_eq!(remote.check_exposure(), Ok(()));
        // Off loopback the HTTP port speaks HTTPS; on loopback plain HTTP, unless asked.
        assert!(remote.https(on([0, 0, 0, 0], 8890).unwrap()));
        assert!(!remote.https(on([127, 0, 0, 1], 8890).unwrap()));
        let forced = ServerConfig {
            http_tls: HttpTls::On,
            ..remote.clone()
        };
        assert!(forced.https(on([127, 0, 0, 1], 8890).unwrap()));
        // Plain HTTP off loopback, and v1 over plain TCP off loopback, only with --insecure,
        // token or not: the token would cross the network readable.
        let plain_http = ServerConfig {
            http_tls: HttpTls::Off,
            ..remote.clone()
        };
        assert!(plain_http.check_exposure().unwrap_err().contains("TLS"));
        let tcp_out = ServerConfig {
            v1_addr: on([0, 0, 0, 0], 7878),
            ..remote.clone()
        };
        assert!(tcp_out
            .check_exposure()
            .unwrap_err()
            .contains("--quic-port"));
        for c in [plain_http, tcp_out] {
            let c = ServerConfig {
                insecure: true,
                ..c
            };
            assert_eq!(c.check_exposure(), Ok(()));
        }
        // The sensor port off loopback needs its allowlist (or --insecure).
        let sensors_out = ServerConfig {
            sensor_addr: on([0, 0, 0, 0], 9001),
            ..remote.clone()
        };
        assert!(sensors_out
            .check_exposure()
            .unwrap_err()
            .contains("--sensor-allow"));
        let allowed = ServerConfig {
            sensor_allow: Some(framewire_net::AllowList::parse("10.0.0.0/24").unwrap()),
            ..sensors_out
        };
        assert_eq!(allowed.check_exposure(), Ok(()));
        // The Daylight listener off loopback still needs --insecure.
        let daylight_out = ServerConfig {
            daylight_addr: on([0, 0, 0, 0], 8888),
            ..remote.clone()
        };
        assert!(daylight_out.check_exposure().is_err());
        let short = ServerConfig {
            metrics_token: Some("short".into()),
            ..remote
        };
        assert!(short
            .check_exposure()
            .unwrap_err()
            .contains("--metrics-token"));
    }

    #[test]
    fn connection_limits_are_changed_by_name() {
        let l = ConnLimits::default()
            .parse_over("sensor=20000, Daylight=2")
            .unwrap();
        assert_eq!((l.sensor, l.daylight, l.v1), (20_000, 2, 256));
        assert_eq!(
            l.to_string(),
            "v1=256,daylight=2,http=256,sensor=20000,touch=4"
        );
        assert!(ConnLimits::default().parse_over("ftp=3").is_err());
        assert!(ConnLimits::default().parse_over("v1=0").is_err());
        assert!(ConnLimits::default().parse_over("v1").is_err());
    }
}
