//! Command-line interface definition.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
pub use framewire_bench::args::{Bench, CodecArg, LoadgenArgs};

#[derive(Parser)]
#[command(name = "framewire", version, about = "Low-latency, lossless streaming of frames and samples", long_about = None)]
pub struct Cli {
    /// Log connections and other events to stderr (or set FRAMEWIRE_LOG=debug).
    #[arg(short, long, global = true)]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Serve a screen to framewire (port 7878) and Daylight-compatible (port 8888) viewers.
    Serve(ServeArgs),
    /// Mirror this X11 desktop ($DISPLAY) to browsers (port 8890), framewire viewers and a
    /// Daylight tablet (--adb), with touch and input going back to the desktop.
    Mirror(ServeArgs),
    /// Publish a synthetic screen to a shared-memory route, for `serve --source shm:NAME`
    /// (what any local program that captures a screen can do instead).
    Publish(PublishArgs),
    /// Record what a source shows (each picture with its capture time and damage, losslessly)
    /// to a file: replay it with `serve --source file:PATH`, measure it with
    /// `bench codec --input PATH`.
    Record(RecordArgs),
    /// Connect to a server and show (or, with --headless, verify and measure) the stream.
    View(ViewArgs),
    /// A server on a synthetic screen with two built-in viewers and a live statistics table.
    Demo(DemoArgs),
    /// Per-stage latency of a running server (through its control socket).
    Latency(LatencyArgs),
    /// Send a control command to a running server: brightness 200, warmth 80, backlight off,
    /// resolution sharp, status, health, device all REQUEST1, ...
    Ctl(CtlArgs),
    /// Load test for the sensor listener, with the EmberEye tool's options and JSON, plus
    /// end-to-end latency through a subscriber, lost readings, and the server's CPU and RSS.
    Loadgen(LoadgenArgs),
    /// Benchmarks that print tables (and --json).
    #[command(subcommand)]
    Bench(Bench),
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ProtocolArg {
    Framewire,
    Daylight,
}

#[derive(Args, Clone)]
pub struct SourceArgs {
    /// Where pictures come from: `synthetic` or `demo` (the --scene below), `x11` or
    /// `x11:DISPLAY` (an X screen; `mirror` uses $DISPLAY), `shm:NAME`, BGRA frames a local
    /// process publishes (e.g. `framewire publish --shm NAME`), or `file:PATH`, a recording
    /// made by `framewire record` (replayed from the start again when it ends).
    #[arg(long, default_value = "synthetic")]
    pub source: String,
    /// How a recording (`--source file:PATH`) is replayed: `recorded`, at the pace it was
    /// recorded (each capture sees what the screen showed at that moment), or `fast`, the next
    /// recorded picture at every capture (--fps sets how often; up to 240).
    #[arg(long, value_enum, default_value = "recorded")]
    pub replay: ReplayArg,
    /// Synthetic scene: idle, typing, scroll, video, mixed.
    #[arg(long, default_value = "mixed")]
    pub scene: String,
    /// cozy (800x600), comfortable (1024x768), balanced (1280x960), sharp (1600x1200), their
    /// portrait orientations (portrait-cozy, …), or WxH (each side 1-4096).
    #[arg(long, default_value = "sharp")]
    pub resolution: String,
    /// Capture rate.
    #[arg(long, default_value_t = 60)]
    pub fps: u32,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ReplayArg {
    Recorded,
    Fast,
}

#[derive(Args, Clone)]
pub struct ServeArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Address of the authenticated listeners (QUIC and HTTP). Anything but loopback needs
    /// --token (or --insecure); there the HTTP port speaks HTTPS, and framewire v1 over plain
    /// TCP stays on loopback (viewers across a network take --quic-port) unless --insecure.
    /// The Daylight, touch and sensor ports have no authentication and stay on loopback
    /// unless named with their own option.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Address of the Daylight listener (no authentication: beyond loopback it needs
    /// --insecure; the app reaches loopback through `adb reverse`).
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    pub daylight_bind: IpAddr,
    /// Address of the sensor listener. Beyond loopback it needs --sensor-allow (or --insecure).
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    pub sensor_bind: IpAddr,
    /// Networks the sensor listener admits devices from, off loopback (loopback always):
    /// `10.0.0.0/24,192.168.1.7`. Others are closed at once and counted.
    #[arg(long, value_name = "CIDR,…")]
    pub sensor_allow: Option<String>,
    /// Token for /metrics, /api/stats and /dashboard (at least 8 characters) [default: the
    /// --token, when there is one]. Send it as `Authorization: Bearer TOKEN` or `?token=`.
    #[arg(long, env = "FRAMEWIRE_METRICS_TOKEN")]
    pub metrics_token: Option<String>,
    /// Connections each listener holds at most; beyond it a connection is closed at once and
    /// counted. Change some: `--max-connections sensor=20000,daylight=2`. The limits together
    /// are kept within the open-file limit (less 256).
    #[arg(
        long,
        value_name = "LISTENER=N,…",
        default_value = "v1=256,daylight=8,http=256,sensor=10000,touch=4"
    )]
    pub max_connections: String,
    /// Bytes one subscriber's queue may hold (MiB); beyond it, it is told how many samples it
    /// missed.
    #[arg(long, default_value_t = 32, value_name = "MIB")]
    pub subscriber_queue_mib: usize,
    /// Bytes all subscribers' queues may hold together (MiB); beyond it the subscriber holding
    /// the most is cut off (told what it lost and why).
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    pub subscriber_budget_mib: usize,
    /// Streams alive at once; items that would open another are refused and counted.
    #[arg(long, default_value_t = 10_000)]
    pub max_streams: usize,
    /// A stream without items for this long is forgotten (seconds).
    #[arg(long, default_value_t = 600, value_name = "SECONDS")]
    pub stream_idle_secs: u64,
    #[command(flatten)]
    pub sched: SchedArgs,
    /// framewire v1 port (0 = any free port).
    #[arg(long, default_value_t = 7878)]
    pub port: u16,
    /// Also serve framewire viewers over QUIC (UDP) on this port, on the --bind address:
    /// always encrypted (TLS 1.3), one stream per frame so a lost packet delays only its own
    /// frame. The certificate is made on first run and kept in the config directory; the
    /// link printed at start carries its fingerprint.
    #[arg(long, value_name = "PORT")]
    pub quic_port: Option<u16>,
    /// How frames go to QUIC viewers: datagrams with Reed-Solomon recovery shards (a lost
    /// packet is made good from the others; a frame that loses more than its recovery shards
    /// is not shown; one shard a frame while the path has lost nothing lately, a tenth more
    /// bytes and more for small frames for 2 s and 1,000 packets after a loss), or a stream each (a lost
    /// packet is retransmitted a round trip later; a frame made stale is reset). Keyframes
    /// always take a stream, and so do browsers over WebTransport; frames over 128 KiB do
    /// unless the path has shown no lasting queue lately (then up to 2 MiB, and up to twice
    /// the path's bandwidth-delay product, go as datagrams, but not for 10 s after the
    /// content outran the path as datagrams); a frame that fits one datagram is followed by
    /// its recovery shards 2 ms apart.
    #[arg(long, value_enum, default_value_t = QuicFrames::Datagrams, value_name = "HOW")]
    pub quic_frames: QuicFrames,
    /// Daylight-compatible port, for the Daylight Android app (via `adb reverse tcp:8888 tcp:8888`).
    #[arg(long, default_value_t = 8888)]
    pub daylight_port: u16,
    /// Do not open the Daylight-compatible listener.
    #[arg(long)]
    pub no_daylight: bool,
    /// Sensor line port (EmberEye-compatible devices and load tools).
    #[arg(long, default_value_t = 9001)]
    pub sensor_port: u16,
    /// Do not open the sensor line listener.
    #[arg(long)]
    pub no_sensors: bool,
    /// The command that starts each sensor device when it connects, sent as `<COMMAND>\n`
    /// (real EmberEye devices take PERIOD_ON; `none` sends nothing).
    #[arg(long, default_value = "PERIOD_ON", value_name = "COMMAND")]
    pub sensor_start: String,
    /// HTTP port: `/metrics` for Prometheus.
    #[arg(long, default_value_t = 8890)]
    pub http_port: u16,
    /// Do not open the HTTP port.
    #[arg(long)]
    pub no_http: bool,
    /// Serve the HTTP port as HTTPS even on loopback (off loopback it always is), with the
    /// host's self-signed certificate from the config directory (browsers ask once to trust it).
    #[arg(long, conflicts_with = "plain_http")]
    pub https: bool,
    /// Serve plain HTTP off loopback (needs --insecure: the token would cross the network
    /// readable, and browsers give WebTransport only to secure pages).
    #[arg(long)]
    pub plain_http: bool,
    /// Token framewire viewers must present (at least 8 characters; an empty or short one is
    /// refused, not ignored).
    #[arg(long, env = "FRAMEWIRE_TOKEN")]
    pub token: Option<String>,
    /// Allow serving beyond loopback without a token, framewire v1 over plain TCP and plain
    /// HTTP beyond loopback.
    #[arg(long)]
    pub insecure: bool,
    /// Block codec for framewire viewers. The Daylight listener always sends LZ4, the only
    /// codec the Daylight app decodes.
    #[arg(long, value_enum, default_value = "lz4")]
    pub codec: CodecArg,
    /// Never send predicted rectangles (pixels coded from their neighbours where an XOR saves
    /// nothing: a video, a photograph); the host then does not offer them. On a 1600x1200
    /// video they save about a fifth of the bytes (a third with --codec zstd) for about 2.4 ms
    /// more to encode a picture and 2 ms more to decode it; on loopback, where bytes are free,
    /// turning them off lowers the latency of such content.
    #[arg(long)]
    pub no_predicted_rects: bool,
    /// Send deltas with predicted rectangles in --codec too. By default, with --codec lz4, they
    /// go in zstd to viewers that declared it: their residuals need an entropy coder (a third
    /// fewer bytes on a video or a fractal zoom, for the same encode time), and every other
    /// frame stays LZ4.
    #[arg(long)]
    pub no_dense_zstd: bool,
    /// Daylight viewers get a keyframe after N deltas, as they cannot verify pictures
    /// (0 = never). framewire viewers verify every frame and ask when they need one.
    #[arg(long, default_value_t = 60)]
    pub keyframe_interval: u32,
    /// Control socket path [default: control.sock in $XDG_RUNTIME_DIR/framewire/, else in
    /// /tmp/framewire-UID/; that directory is made 0700 and must be yours]. The socket is mode
    /// 0600; a stale socket of yours there is replaced, anything else is refused, never deleted.
    #[arg(long)]
    pub control_socket: Option<PathBuf>,
    /// Status file path [default: `status`, beside the default control socket]. Says
    /// `status=stopped` after a clean stop.
    #[arg(long)]
    pub status_file: Option<PathBuf>,
    /// Append `protocol viewer seq checksum` for every frame sent to this file.
    #[arg(long)]
    pub trace_frames: Option<PathBuf>,
    /// Also publish every frame to the shared-memory route NAME (/dev/shm/framewire-NAME),
    /// for local consumers such as `framewire view --shm NAME`.
    #[arg(long, value_name = "NAME")]
    pub shm_export: Option<String>,
    /// Export lossless colour (planes G, R − G, B − G; shared-memory format 2) instead of grey.
    #[arg(long, requires = "shm_export")]
    pub shm_colour: bool,
    /// X11: capture only this part of the screen, WxH+X+Y (e.g. 1600x1200+0+0).
    #[arg(long, value_name = "WxH+X+Y")]
    pub region: Option<String>,
    /// X11: leave the pointer out of the picture.
    #[arg(long)]
    pub no_cursor: bool,
    /// X11: never inject input (browser, native viewer and Daylight touches are ignored).
    #[arg(long)]
    pub view_only: bool,
    /// The token a viewer presents to send input, at least 8 characters [default: a random
    /// one, printed at start].
    #[arg(long, env = "FRAMEWIRE_CONTROL_TOKEN")]
    pub control_token: Option<String>,
    /// The Daylight app's touch port (loopback; `adb reverse tcp:8892 tcp:8892`).
    #[arg(long, default_value_t = 8892)]
    pub touch_port: u16,
    /// Do not open the touch port.
    #[arg(long)]
    pub no_touch: bool,
    /// Set up `adb reverse` for the Daylight tablet (8888 and the touch port), and again
    /// whenever it reconnects; read its brightness and warmth when it connects, and write
    /// warmth changes with `adb shell settings put system screen_brightness_amber_rate`.
    #[arg(long)]
    pub adb: bool,
    /// Display profile: neutral, crisp or ink (sets sharpen, contrast and gamma together;
    /// the three options below override parts of it). Live: `framewire ctl profile ink`.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Sharpen (3×3 Laplacian) amount, 0 (off) to 3. Live: `framewire ctl sharpen 0.5`.
    #[arg(long, value_name = "0-3")]
    pub sharpen: Option<String>,
    /// Contrast around mid-grey, 0.25 to 4 (1 = unchanged). Live: `framewire ctl contrast 1.2`
    /// (1 to 2 there, as the Daylight host's control socket takes).
    #[arg(long, value_name = "0.25-4")]
    pub contrast: Option<String>,
    /// Gamma, 0.2 to 5 (1 = unchanged; above 1 lightens mid-greys). Live: `framewire ctl gamma 0.9`.
    #[arg(long, value_name = "0.2-5")]
    pub gamma: Option<String>,
}

#[derive(Args, Clone)]
pub struct RecordArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// The recording to write (refused if it exists, unless --force).
    #[arg(long, short, value_name = "PATH")]
    pub out: PathBuf,
    /// Replace --out if it exists.
    #[arg(long)]
    pub force: bool,
    /// Stop after this many seconds (default: until Ctrl-C or --frames).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Stop after this many captures.
    #[arg(long)]
    pub frames: Option<u64>,
    /// X11: record only this part of the screen, WxH+X+Y.
    #[arg(long, value_name = "WxH+X+Y")]
    pub region: Option<String>,
    /// X11: leave the pointer out of the picture.
    #[arg(long)]
    pub no_cursor: bool,
}

#[derive(Args, Clone)]
pub struct PublishArgs {
    /// The route's name (/dev/shm/framewire-NAME).
    #[arg(long, value_name = "NAME")]
    pub shm: String,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Stop after this many frames (default: until Ctrl-C).
    #[arg(long)]
    pub frames: Option<u64>,
}

#[derive(Args, Clone)]
pub struct ViewArgs {
    /// Verify and measure without a window (the default opens a window on $DISPLAY).
    #[arg(long)]
    pub headless: bool,
    /// The X display for the window [default: $DISPLAY].
    #[arg(long)]
    pub display: Option<String>,
    #[arg(long, value_enum, default_value = "framewire")]
    pub protocol: ProtocolArg,
    /// Read the frames a local server exports to shared memory (`serve --shm-export NAME`)
    /// instead of connecting over TCP.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["protocol", "host", "port", "token"])]
    pub shm: Option<String>,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port [default: 7878 for framewire, 8888 for daylight].
    #[arg(long)]
    pub port: Option<u16>,
    #[arg(long, env = "FRAMEWIRE_TOKEN")]
    pub token: Option<String>,
    /// Stop after this many frames.
    #[arg(long)]
    pub frames: Option<u64>,
    /// Seconds between statistics lines. Their timings are over the last frames (capture →
    /// applied over 600); SIGUSR1 empties these windows, so that what follows is measured
    /// without the join (`kill -USR1 PID` as the period to measure begins).
    #[arg(long, default_value_t = 2.0)]
    pub interval: f64,
    /// Print the final statistics as JSON.
    #[arg(long)]
    pub json: bool,
    /// Ask for grey instead of lossless colour (framewire protocol; Daylight is always grey).
    #[arg(long)]
    pub grey: bool,
    /// Connect over QUIC to --host:--port (the server's --quic-port), accepting only a host
    /// whose certificate has this SHA-256 fingerprint (printed by `framewire serve`).
    #[arg(long, value_name = "FINGERPRINT", conflicts_with = "shm")]
    pub quic: Option<framewire_quic::Fingerprint>,
    #[command(flatten)]
    pub sched: SchedArgs,
}

/// How the kernel schedules the stream's threads (`serve`, `mirror`, `view`).
#[derive(Args, Clone, Copy)]
pub struct SchedArgs {
    /// Run the stream's threads under realtime scheduling (SCHED_FIFO) at this priority
    /// (1-99) [default without a value: 10], so that programs busy on the same cores do not
    /// delay them. Needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO of the priority (`ulimit -r`);
    /// refused, framewire says so and goes on at normal priority.
    // 10 by default: low among realtime threads (the kernel's interrupt threads take 50,
    // audio servers usually more), above every normal thread.
    #[arg(long, value_name = "PRIORITY", num_args = 0..=1, require_equals = true,
          default_missing_value = "10", value_parser = clap::value_parser!(u8).range(1..=99))]
    pub realtime: Option<u8>,
}

#[derive(Args, Clone)]
pub struct DemoArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Stop after this many seconds (default: until Ctrl-C).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// framewire v1 port for the demo server.
    #[arg(long, default_value_t = 7878)]
    pub port: u16,
    /// Daylight-compatible port for the demo server.
    #[arg(long, default_value_t = 8888)]
    pub daylight_port: u16,
}

#[derive(Args, Clone)]
pub struct LatencyArgs {
    /// Refresh every 2 s until Ctrl-C.
    #[arg(long)]
    pub watch: bool,
    #[arg(long)]
    pub json: bool,
    /// The server's control socket [default: control.sock in $XDG_RUNTIME_DIR/framewire/, else
    /// in /tmp/framewire-UID/]; only one of yours or root's is used.
    #[arg(long)]
    pub control_socket: Option<PathBuf>,
}

#[derive(Args, Clone)]
pub struct CtlArgs {
    /// The verb and its arguments, e.g. `brightness 200` or `device all REQUEST1`.
    #[arg(required = true, num_args = 1..=3)]
    pub words: Vec<String>,
    /// The server's control socket [default: control.sock in $XDG_RUNTIME_DIR/framewire/, else
    /// in /tmp/framewire-UID/]; only one of yours or root's is used.
    #[arg(long)]
    pub control_socket: Option<PathBuf>,
}

/// `serve --quic-frames`.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum QuicFrames {
    Streams,
    Datagrams,
}
