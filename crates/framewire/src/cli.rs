//! Command-line interface definition.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
pub enum CodecArg {
    Lz4,
    Zstd,
    Raw,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ProtocolArg {
    Framewire,
    Daylight,
}

#[derive(Args, Clone)]
pub struct SourceArgs {
    /// Where pictures come from: `synthetic` or `demo` (the --scene below), `x11` or
    /// `x11:DISPLAY` (an X screen; `mirror` uses $DISPLAY), or `shm:NAME`, BGRA frames a local
    /// process publishes (e.g. `framewire publish --shm NAME`).
    #[arg(long, default_value = "synthetic")]
    pub source: String,
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

#[derive(Args, Clone)]
pub struct ServeArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Address to listen on. Anything but loopback needs --token (or --insecure).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// framewire v1 port (0 = any free port).
    #[arg(long, default_value_t = 7878)]
    pub port: u16,
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
    /// Token framewire viewers must present.
    #[arg(long, env = "FRAMEWIRE_TOKEN")]
    pub token: Option<String>,
    /// Allow serving beyond loopback without a token.
    #[arg(long)]
    pub insecure: bool,
    /// Block codec for framewire viewers. The Daylight listener always sends LZ4, the only
    /// codec the Daylight app decodes.
    #[arg(long, value_enum, default_value = "lz4")]
    pub codec: CodecArg,
    /// Daylight viewers get a keyframe after N deltas, as they cannot verify pictures
    /// (0 = never). framewire viewers verify every frame and ask when they need one.
    #[arg(long, default_value_t = 60)]
    pub keyframe_interval: u32,
    /// Control socket path [default: $XDG_RUNTIME_DIR/framewire.sock or /tmp/framewire-UID.sock].
    #[arg(long)]
    pub control_socket: Option<PathBuf>,
    /// Status file path [default: beside the control socket].
    #[arg(long)]
    pub status_file: Option<PathBuf>,
    /// Append `protocol viewer seq checksum` for every frame sent to this file.
    #[arg(long)]
    pub trace_frames: Option<PathBuf>,
    /// Also publish every frame to the shared-memory route NAME (/dev/shm/framewire-NAME),
    /// for local consumers such as `framewire view --shm NAME`.
    #[arg(long, value_name = "NAME")]
    pub shm_export: Option<String>,
    /// X11: capture only this part of the screen, WxH+X+Y (e.g. 1600x1200+0+0).
    #[arg(long, value_name = "WxH+X+Y")]
    pub region: Option<String>,
    /// X11: leave the pointer out of the picture.
    #[arg(long)]
    pub no_cursor: bool,
    /// X11: never inject input (browser, native viewer and Daylight touches are ignored).
    #[arg(long)]
    pub view_only: bool,
    /// The token a viewer presents to send input [default: a random one, printed at start].
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
pub struct LoadgenArgs {
    /// Concurrent device connections.
    #[arg(long, default_value_t = 5)]
    pub clients: usize,
    /// Packets per client (this or --duration).
    #[arg(long, conflicts_with = "duration")]
    pub packets: Option<u64>,
    /// Seconds to run (this or --packets).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Packets per second per client (0 = as fast as possible).
    #[arg(long, default_value_t = 10.0)]
    pub rate: f64,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The sensor line port.
    #[arg(long, default_value_t = 9001)]
    pub port: u16,
    /// Every other packet is a 32×24 thermal frame.
    #[arg(long)]
    pub include_frames: bool,
    #[arg(long, default_value = "room")]
    pub locid_prefix: String,
    /// Seconds between progress lines (on stderr).
    #[arg(long, default_value_t = 2.0)]
    pub report_interval: f64,
    /// Also write the JSON results here.
    #[arg(long)]
    pub stats_file: Option<PathBuf>,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// The server's framewire port, where the end-to-end subscriber connects.
    #[arg(long, default_value_t = 7878)]
    pub subscribe_port: u16,
    #[arg(long, env = "FRAMEWIRE_TOKEN")]
    pub token: Option<String>,
    /// Skip the subscriber (no end-to-end figures; what the original tool measured).
    #[arg(long)]
    pub no_subscriber: bool,
    /// The server's pid for its CPU and RSS [default: the process listening on --port].
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// With --rate: each client writes every N ms the lines due by then, in one write (with
    /// the default 5 ms, a rate of 200 or less is one line per write). Clients' ticks are
    /// spread evenly over the N ms, and sending starts once every client has connected.
    /// End-to-end latency counts from that write.
    #[arg(long, default_value_t = 5.0, value_name = "MS")]
    pub write_every_ms: f64,
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
    /// Seconds between statistics lines.
    #[arg(long, default_value_t = 2.0)]
    pub interval: f64,
    /// Print the final statistics as JSON.
    #[arg(long)]
    pub json: bool,
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
    #[arg(long)]
    pub control_socket: Option<PathBuf>,
}

#[derive(Args, Clone)]
pub struct CtlArgs {
    /// The verb and its arguments, e.g. `brightness 200` or `device all REQUEST1`.
    #[arg(required = true, num_args = 1..=3)]
    pub words: Vec<String>,
    #[arg(long)]
    pub control_socket: Option<PathBuf>,
}

#[derive(Subcommand)]
pub enum Bench {
    /// Per-stage codec cost for every scene at every preset.
    Codec(BenchCodecArgs),
    /// Loopback end-to-end latency (capture → applied) with several viewers.
    E2e(BenchE2eArgs),
    /// Shared-memory transport between processes: µs per message for routes and channels,
    /// ping-pong latency, frame throughput, futex syscalls per message.
    Ipc(BenchIpcArgs),
    /// X11 capture on an Xvfb screen it starts (or --display): full-frame capture time, and
    /// the CPU a server uses while the screen is unchanged.
    X11(BenchX11Args),
    /// One process of `bench ipc` (started by it).
    #[command(hide = true)]
    IpcWorker(IpcWorkerArgs),
}

#[derive(Args, Clone)]
pub struct BenchX11Args {
    /// Use this X display instead of starting Xvfb.
    #[arg(long)]
    pub display: Option<String>,
    /// Screen size when starting Xvfb.
    #[arg(long, default_value = "1600x1200")]
    pub size: String,
    /// Full-frame captures to time.
    #[arg(long, default_value_t = 300)]
    pub captures: u32,
    /// Seconds of unchanged screen to measure the server's CPU over.
    #[arg(long, default_value_t = 10.0)]
    pub idle_seconds: f64,
}

#[derive(Args, Clone)]
pub struct BenchIpcArgs {
    /// Messages per run (random sizes 2–256 bytes), split evenly between the senders.
    #[arg(long, default_value_t = 100_000)]
    pub messages: u64,
    /// Comma-separated values of N.
    #[arg(long, default_value = "1,2,4,8")]
    pub n: String,
    /// Runs of each table cell; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub repeat: u32,
    /// Round trips in the ping-pong test (0 skips it).
    #[arg(long, default_value_t = 20_000)]
    pub round_trips: u64,
    /// 1600×1200 grey frames (1.92 MB) in the throughput test (0 skips it).
    #[arg(long, default_value_t = 500)]
    pub frames: u64,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Clone)]
pub struct IpcWorkerArgs {
    pub role: String,
    pub args: Vec<String>,
}

#[derive(Args, Clone)]
pub struct BenchCodecArgs {
    /// Frames measured per scene and resolution.
    #[arg(long, default_value_t = 120)]
    pub frames: u64,
    /// Comma-separated scenes [default: all].
    #[arg(long)]
    pub scenes: Option<String>,
    /// Comma-separated resolutions [default: the four presets].
    #[arg(long)]
    pub resolutions: Option<String>,
    #[arg(long, value_enum, default_value = "lz4")]
    pub codec: CodecArg,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Clone)]
pub struct BenchE2eArgs {
    #[arg(long, default_value = "scroll")]
    pub scene: String,
    #[arg(long, default_value = "sharp")]
    pub resolution: String,
    #[arg(long, default_value_t = 4)]
    pub viewers: usize,
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    #[arg(long, default_value_t = 60)]
    pub fps: u32,
    #[arg(long)]
    pub json: bool,
}
