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
    /// Daylight-compatible listener; `None` disables it.
    pub daylight_addr: Option<SocketAddr>,
    /// Sensor line listener (EmberEye-compatible); `None` (the library default) disables it.
    pub sensor_addr: Option<SocketAddr>,
    /// Sent as `<command>\n` to every device when it connects (`PERIOD_ON`); `None` sends
    /// nothing.
    pub sensor_start: Option<String>,
    /// HTTP port (`/metrics`); `None` (the library default) disables it.
    pub http_addr: Option<SocketAddr>,
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
    pub limit: InflightLimit,
    pub ack_timeout_us: u64,
    pub control_socket: Option<PathBuf>,
    pub status_file: Option<PathBuf>,
    /// Appends `protocol viewer wire_seq checksum` for every frame sent (debugging and
    /// checking clients that cannot verify checksums themselves, like the Daylight app).
    pub trace_frames: Option<PathBuf>,
    /// Also publish every frame to this shared-memory route (see `shm_export.rs`).
    pub shm_export: Option<String>,
    /// Inject viewers' input into this X display (`None`: view only).
    pub input: Option<InputConfig>,
    /// The token a viewer presents to send input (it may view with it too).
    pub control_token: Option<String>,
    /// The Daylight app's touch port; always loopback (adb reverse arrives there).
    pub touch_addr: Option<SocketAddr>,
    pub brightness: u8,
    /// Display tuning applied to every picture (changeable live through the control socket).
    pub tuning: framewire_codec::tune::Tuning,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            source: SourceSpec::Synthetic(Scene::Mixed),
            resolution: Resolution::SHARP,
            fps: 60,
            v1_addr: Some(SocketAddr::from(([127, 0, 0, 1], 7878))),
            daylight_addr: Some(SocketAddr::from(([127, 0, 0, 1], 8888))),
            sensor_addr: None,
            sensor_start: Some(framewire_proto::sensor_line::START_COMMAND.to_string()),
            http_addr: None,
            token: None,
            insecure: false,
            codec: BlockCodec::Lz4,
            keyframe_interval: 60,
            row_deltas: true,
            limit: InflightLimit::default(),
            ack_timeout_us: 2_000_000,
            control_socket: None,
            status_file: None,
            trace_frames: None,
            shm_export: None,
            input: None,
            control_token: None,
            touch_addr: None,
            brightness: 128,
            tuning: Default::default(),
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
            if !a.ip().is_loopback() && self.token.is_none() && !self.insecure {
                return Err(format!(
                    "refusing to serve the screen on {a} (not loopback) without --token; pass --token SECRET, or --insecure if you really mean it"
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
            if !a.ip().is_loopback() && !self.insecure {
                return Err(format!(
                    "refusing to take sensor data on {a} (not loopback): the line protocol has no authentication; put the devices on a trusted network and pass --insecure"
                ));
            }
        }
        if let Some(a) = self.http_addr {
            // The HTTP port carries the viewer page and its WebSocket (v1 rules: the token).
            if !a.ip().is_loopback() && self.token.is_none() && !self.insecure {
                return Err(format!(
                    "refusing to serve the browser viewer on {a} (not loopback) without --token; pass --token SECRET, or --insecure if you really mean it"
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
