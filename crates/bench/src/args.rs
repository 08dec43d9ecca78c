//! The benches' and the load generator's command-line arguments (the `framewire` binary
//! mounts them as `framewire bench …` and `framewire loadgen`).

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use framewire_codec::BlockCodec;

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum CodecArg {
    Lz4,
    Zstd,
    Raw,
}

impl CodecArg {
    pub fn codec(self) -> BlockCodec {
        match self {
            CodecArg::Lz4 => BlockCodec::Lz4,
            CodecArg::Zstd => BlockCodec::Zstd(1),
            CodecArg::Raw => BlockCodec::Raw,
        }
    }
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

#[derive(Subcommand)]
pub enum Bench {
    /// Per-stage codec cost for every scene at every preset.
    Codec(BenchCodecArgs),
    /// Loopback end-to-end latency (capture → applied) with several viewers.
    E2e(BenchE2eArgs),
    /// framewire across emulated networks (two network namespaces, a user-space relay for
    /// delay and loss, tbf for the rate): QUIC beside TCP, cell by cell. Needs root.
    Net(BenchNetArgs),
    /// One emulated link held open for another program (the browser benchmark): prints its
    /// namespaces and addresses as a JSON line, holds it until standard input closes. Needs root.
    Link(BenchLinkArgs),
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
    /// Measure on these recordings (`framewire record`, comma-separated) instead of the
    /// synthetic scenes: every picture in each, with its recorded damage, as the server
    /// would take it.
    #[arg(long, value_name = "PATH,…", value_delimiter = ',')]
    pub input: Vec<PathBuf>,
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
pub struct BenchNetArgs {
    /// Link rates in Mbit/s, or `unlimited`.
    #[arg(long, default_value = "unlimited,50,10")]
    pub rates: String,
    /// Round-trip times in ms (half each way).
    #[arg(long, default_value = "1,20,80")]
    pub rtts: String,
    /// Packet loss in percent, both ways.
    #[arg(long, default_value = "0,1,5")]
    pub losses: String,
    /// Content: typing, scroll, video (the full-frame moving scene), or `file:PATH`, a
    /// recording of real programs (`framewire record`, `make corpus`) replayed at its pace.
    #[arg(long, default_value = "typing,scroll,video")]
    pub contents: String,
    /// The viewer asks for lossless colour (grey otherwise).
    #[arg(long)]
    pub colour: bool,
    /// Transports compared in each cell: quic-dgram (QUIC as served by default: frames as
    /// datagrams with recovery shards), quic (a stream per frame, `serve --quic-frames
    /// streams`), tcp.
    #[arg(long, default_value = "quic-dgram,tcp")]
    pub transports: String,
    #[arg(long, default_value = "balanced")]
    pub resolution: String,
    #[arg(long, default_value_t = 60)]
    pub fps: u32,
    /// Seconds measured per cell (after a 1.5 s warm-up).
    #[arg(long, default_value_t = 4.0)]
    pub seconds: f64,
    /// Seed of the relay's loss draws (cell i uses seed + i).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Clone)]
pub struct BenchLinkArgs {
    /// Round-trip time in ms (half each way).
    #[arg(long, default_value_t = 20.0)]
    pub rtt_ms: f64,
    /// Packet loss in percent, both ways.
    #[arg(long, default_value_t = 0.0)]
    pub loss_pct: f64,
    /// Link rate in Mbit/s (unlimited when absent).
    #[arg(long)]
    pub rate_mbit: Option<u64>,
    /// Seed of the relay's loss draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Args, Clone)]
pub struct BenchE2eArgs {
    #[arg(long, default_value = "scroll")]
    pub scene: String,
    /// The viewers ask for lossless colour (planes G, R − G, B − G) instead of grey.
    #[arg(long)]
    pub colour: bool,
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
