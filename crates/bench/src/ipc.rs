//! `framewire bench ipc`: the shared-memory transport between real processes, with the tables
//! of seed 004 (µs per message for route 1→N and channel 1→N, N→1, N→N; 100 000 messages of
//! random size 2–256 bytes; blocking receivers), a ping-pong latency distribution, 1.92 MB
//! frame throughput, and the futex syscalls each run made.
//!
//! Every sender and receiver is its own process (`framewire bench ipc-worker ...`). Senders
//! wait for a "go" on a control route, so process start-up is not timed; the time of a run is
//! from "go" to the last message received by the last receiver (CLOCK_MONOTONIC, which all
//! processes share).

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};

use anyhow::{anyhow, bail, Context};
use framewire_shm::{futex, Channel, Options, Shape};
use serde::Serialize;

use crate::args::{BenchIpcArgs, IpcWorkerArgs};

const TOPIC: &str = "framewire.bench";
const FRAME: usize = 1600 * 1200;

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the struct we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Message sizes of sender `id`: random 2–256 bytes, the same sequence every run.
fn sizes(id: u64) -> impl Iterator<Item = usize> {
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x0005_DEEC_E66D;
    std::iter::repeat_with(move || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        2 + (x >> 33) as usize % 255
    })
}

fn syscalls() -> u64 {
    let (w, k) = futex::syscalls();
    w + k
}

// ---- workers ----

fn attach(name: &str) -> anyhow::Result<Channel> {
    Channel::attach(name, TOPIC).with_context(|| format!("attaching to {name}"))
}

fn arg<T: std::str::FromStr>(a: &[String], i: usize) -> anyhow::Result<T> {
    a.get(i)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("worker argument {i} missing or invalid"))
}

pub fn worker(w: IpcWorkerArgs) -> anyhow::Result<()> {
    let a = &w.args;
    match w.role.as_str() {
        // recv NAME COUNT: receives COUNT messages
        "recv" => {
            let ch = attach(&a[0])?;
            let count: u64 = arg(a, 1)?;
            let mut rx = ch.receiver()?;
            println!("READY");
            let (mut bytes, mut last) = (0u64, 0u64);
            for _ in 0..count {
                let m = rx.recv()?;
                bytes += m.len() as u64;
                last = now_ns();
            }
            println!("DONE {last} {bytes} {} {}", syscalls(), rx.missed());
        }
        // send NAME ID COUNT CTL: waits for "go" on CTL, then sends COUNT messages
        "send" => {
            let ch = attach(&a[0])?;
            let (id, count): (u64, u64) = (arg(a, 1)?, arg(a, 2)?);
            let ctl = attach(&a[3])?;
            let mut go = ctl.receiver()?;
            let mut tx = ch.sender()?;
            println!("READY");
            drop(go.recv()?);
            for n in sizes(id).take(count as usize) {
                tx.send_with(n, None, |b| b.fill(id as u8))?;
            }
            println!("DONE 0 0 {} 0", syscalls());
        }
        // pong PING PONG COUNT SPIN: answers every message
        "pong" => {
            let (ping, pong) = (attach(&a[0])?, attach(&a[1])?);
            let (count, spin): (u64, u32) = (arg(a, 2)?, arg(a, 3)?);
            let mut rx = ping.receiver()?;
            rx.set_spin(spin);
            let mut tx = pong.sender()?;
            println!("READY");
            for _ in 0..count {
                let m = rx.recv()?;
                tx.send(&m)?;
            }
            println!("DONE 0 0 {} 0", syscalls());
        }
        // frames NAME COUNT: receives COUNT frames, reading one byte of every cache line
        "frames" => {
            let ch = attach(&a[0])?;
            let count: u64 = arg(a, 1)?;
            let mut rx = ch.receiver()?;
            println!("READY");
            let (mut sum, mut last) = (0u64, 0u64);
            for i in 0..count {
                let m = rx.recv()?;
                let idx = u64::from_le_bytes(m[..8].try_into()?);
                if idx != i || m.len() != FRAME {
                    bail!("frame {i}: got index {idx}, {} bytes", m.len());
                }
                sum += m.iter().step_by(64).map(|&b| b as u64).sum::<u64>();
                last = now_ns();
            }
            println!("DONE {last} {sum} {} {}", syscalls(), rx.missed());
        }
        other => bail!("unknown ipc worker role {other}"),
    }
    Ok(())
}

// ---- the parent ----

struct Worker {
    child: Child,
    out: BufReader<ChildStdout>,
}

/// Fields of a worker's DONE line.
struct Done {
    last_ns: u64,
    bytes: u64,
    syscalls: u64,
    missed: u64,
}

impl Worker {
    fn spawn(role: &str, args: &[String]) -> anyhow::Result<Worker> {
        let exe = std::env::current_exe().context("finding the framewire binary")?;
        let mut child = Command::new(exe)
            .args(["bench", "ipc-worker", role])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .context("starting an ipc worker")?;
        let out = BufReader::new(child.stdout.take().expect("piped"));
        Ok(Worker { child, out })
    }

    fn expect(&mut self, word: &str) -> anyhow::Result<Vec<u64>> {
        let mut line = String::new();
        loop {
            line.clear();
            if self.out.read_line(&mut line)? == 0 {
                let st = self.child.wait()?;
                bail!("an ipc worker ended ({st}) before saying {word}");
            }
            if let Some(rest) = line.trim().strip_prefix(word) {
                return Ok(rest
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect());
            }
        }
    }

    fn done(mut self) -> anyhow::Result<Done> {
        let f = self.expect("DONE")?;
        let st = self.child.wait()?;
        if !st.success() || f.len() < 4 {
            bail!("an ipc worker failed ({st})");
        }
        Ok(Done {
            last_ns: f[0],
            bytes: f[1],
            syscalls: f[2],
            missed: f[3],
        })
    }
}

fn unique(tag: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "bench-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

#[derive(Serialize, Clone)]
struct RunResult {
    table: String,
    n: u32,
    senders: u32,
    receivers: u32,
    messages: u64,
    us_per_message: f64,
    futex_syscalls: u64,
    futex_syscalls_per_message: f64,
}

/// One table cell: `senders` processes send `messages` in all, `receivers` processes receive
/// every one of them.
fn run_one(
    table: &str,
    shape: Shape,
    n: u32,
    senders: u32,
    receivers: u32,
    messages: u64,
) -> anyhow::Result<RunResult> {
    let (name, ctl_name) = (unique("data"), unique("ctl"));
    let opts = match shape {
        Shape::Route => Options::route(),
        Shape::Channel => Options::channel(),
    }
    .topic(TOPIC);
    let ch = Channel::open(&name, &opts)?;
    let ctl = Channel::open(&ctl_name, &Options::route().topic(TOPIC))?;
    let per = messages / senders as u64;
    let total = per * senders as u64;
    let expected_bytes: u64 = (0..senders as u64)
        .map(|id| sizes(id).take(per as usize).map(|n| n as u64).sum::<u64>())
        .sum();
    let mut rx = Vec::new();
    for _ in 0..receivers {
        let mut w = Worker::spawn("recv", &[name.clone(), total.to_string()])?;
        w.expect("READY")?;
        rx.push(w);
    }
    let mut tx = Vec::new();
    for id in 0..senders {
        let mut w = Worker::spawn(
            "send",
            &[
                name.clone(),
                id.to_string(),
                per.to_string(),
                ctl_name.clone(),
            ],
        )?;
        w.expect("READY")?;
        tx.push(w);
    }
    let mut go = ctl.sender()?;
    let t0 = now_ns();
    go.send(b"go")?;
    let mut sys = 0;
    for w in tx {
        sys += w.done()?.syscalls;
    }
    let mut last = t0;
    for w in rx {
        let d = w.done()?;
        if d.bytes != expected_bytes || d.missed != 0 {
            bail!(
                "a receiver got {} bytes (expected {expected_bytes}), missed {}",
                d.bytes,
                d.missed
            );
        }
        last = last.max(d.last_ns);
        sys += d.syscalls;
    }
    drop((ch, ctl));
    Ok(RunResult {
        table: table.into(),
        n,
        senders,
        receivers,
        messages: total,
        us_per_message: (last - t0) as f64 / 1000.0 / total as f64,
        futex_syscalls: sys,
        futex_syscalls_per_message: sys as f64 / total as f64,
    })
}

#[derive(Serialize)]
struct PingPong {
    spin: u32,
    round_trips: u64,
    rtt_us_p50: f64,
    rtt_us_p99: f64,
    one_way_us_p50: f64,
    futex_syscalls_per_round_trip: f64,
}

fn ping_pong(round_trips: u64, spin: u32) -> anyhow::Result<PingPong> {
    let (a, b) = (unique("ping"), unique("pong"));
    let opts = Options::route().topic(TOPIC);
    let (ping, pong) = (Channel::open(&a, &opts)?, Channel::open(&b, &opts)?);
    let warm = 1000;
    let mut w = Worker::spawn(
        "pong",
        &[
            a.clone(),
            b.clone(),
            (round_trips + warm).to_string(),
            spin.to_string(),
        ],
    )?;
    w.expect("READY")?;
    let mut tx = ping.sender()?;
    let mut rx = pong.receiver()?;
    rx.set_spin(spin);
    let msg = [7u8; 64];
    let before = syscalls();
    let mut rtt = Vec::with_capacity(round_trips as usize);
    for i in 0..round_trips + warm {
        let t = now_ns();
        tx.send(&msg)?;
        let m = rx.recv()?;
        if m.len() != 64 {
            bail!("a reply of {} bytes", m.len());
        }
        if i >= warm {
            rtt.push((now_ns() - t) as f64 / 1000.0);
        }
    }
    let mine = syscalls() - before;
    let theirs = w.done()?.syscalls;
    let p50 = framewire_telemetry::stats::median(&mut rtt);
    Ok(PingPong {
        spin,
        round_trips,
        rtt_us_p50: p50,
        rtt_us_p99: framewire_telemetry::stats::percentile(&mut rtt, 99.0),
        one_way_us_p50: p50 / 2.0,
        futex_syscalls_per_round_trip: (mine + theirs) as f64 / (round_trips + warm) as f64,
    })
}

#[derive(Serialize)]
struct Frames {
    frames: u64,
    frame_bytes: usize,
    us_per_frame: f64,
    gb_per_s: f64,
    futex_syscalls_per_frame: f64,
}

fn frames(count: u64) -> anyhow::Result<Frames> {
    let name = unique("frames");
    let ch = Channel::open(&name, &Options::route().pool(4, 2 << 20).topic(TOPIC))?;
    let mut w = Worker::spawn("frames", &[name.clone(), count.to_string()])?;
    w.expect("READY")?;
    let frame: Vec<u8> = (0..FRAME).map(|i| (i * 31 % 251) as u8).collect();
    let mut tx = ch.sender()?;
    let before = syscalls();
    let t0 = now_ns();
    for i in 0..count {
        tx.send_with(FRAME, None, |b| {
            b.copy_from_slice(&frame);
            b[..8].copy_from_slice(&i.to_le_bytes());
        })?;
    }
    let mine = syscalls() - before;
    let d = w.done()?;
    let secs = (d.last_ns - t0) as f64 / 1e9;
    Ok(Frames {
        frames: count,
        frame_bytes: FRAME,
        us_per_frame: secs * 1e6 / count as f64,
        gb_per_s: (count as f64 * FRAME as f64) / secs / 1e9,
        futex_syscalls_per_frame: (mine + d.syscalls) as f64 / count as f64,
    })
}

/// A table's name, its shape, and N → (senders, receivers).
type Table = (&'static str, Shape, fn(u32) -> (u32, u32));

#[derive(Serialize)]
struct Report {
    runs: Vec<RunResult>,
    ping_pong: Vec<PingPong>,
    frames: Option<Frames>,
}

pub fn run(a: BenchIpcArgs) -> anyhow::Result<()> {
    let ns: Vec<u32> =
        a.n.split(',')
            .map(|x| {
                x.trim()
                    .parse::<u32>()
                    .map_err(|_| anyhow!("bad --n value {x:?}"))
            })
            .collect::<Result<_, _>>()?;
    anyhow::ensure!(
        ns.iter().all(|&n| (1..=64).contains(&n)),
        "--n values must be 1–64"
    );
    anyhow::ensure!(a.messages >= 1000, "--messages must be at least 1000");
    let tables: [Table; 4] = [
        ("route 1→N", Shape::Route, |n| (1, n)),
        ("channel 1→N", Shape::Channel, |n| (1, n)),
        ("channel N→1", Shape::Channel, |n| (n, 1)),
        ("channel N→N", Shape::Channel, |n| (n, n)),
    ];
    let mut runs = Vec::new();
    if !a.json {
        println!(
            "framewire shm, every sender and receiver a process; {} messages of 2–256 bytes per run, blocking receivers; median of {} runs",
            a.messages, a.repeat.max(1)
        );
        println!(
            "{:<13} {:>3} {:>12} {:>16}",
            "table", "N", "µs/message", "futex calls/msg"
        );
    }
    for (table, shape, who) in tables {
        for &n in &ns {
            let (s, r) = who(n);
            let mut tries = Vec::new();
            for _ in 0..a.repeat.max(1) {
                tries.push(
                    run_one(table, shape, n, s, r, a.messages)
                        .with_context(|| format!("{table}, N = {n}"))?,
                );
            }
            tries.sort_by(|x, y| x.us_per_message.total_cmp(&y.us_per_message));
            let res = tries.swap_remove(tries.len() / 2);
            if !a.json {
                println!(
                    "{:<13} {:>3} {:>12.4} {:>16.4}",
                    table, n, res.us_per_message, res.futex_syscalls_per_message
                );
            }
            runs.push(res);
        }
    }
    let mut pp = Vec::new();
    for spin in [2000, 0].into_iter().filter(|_| a.round_trips > 0) {
        let r = ping_pong(a.round_trips, spin)?;
        if !a.json {
            println!(
                "ping-pong, 64 B, receivers {}: round trip p50 {:.2} µs, p99 {:.2} µs (one way p50 {:.2} µs), {:.2} futex calls per round trip",
                if spin > 0 { "spin, then sleep" } else { "sleep at once" },
                r.rtt_us_p50,
                r.rtt_us_p99,
                r.one_way_us_p50,
                r.futex_syscalls_per_round_trip
            );
        }
        pp.push(r);
    }
    let f = if a.frames > 0 {
        Some(frames(a.frames)?)
    } else {
        None
    };
    if let (false, Some(f)) = (a.json, &f) {
        println!(
            "frames, 1600×1200 grey (1.92 MB), route 1→1, receiver reads every cache line: {:.1} µs per frame, {:.2} GB/s, {:.3} futex calls per frame",
            f.us_per_frame, f.gb_per_s, f.futex_syscalls_per_frame
        );
    }
    if a.json {
        let r = Report {
            runs,
            ping_pong: pp,
            frames: f,
        };
        println!("{}", serde_json::to_string_pretty(&r)?);
    }
    Ok(())
}
