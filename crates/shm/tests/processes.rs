//! Real processes on both ends. The test binary re-runs itself as the child (the `child` test,
//! which does nothing unless `FW_SHM_ROLE` is set), so no helper binary is needed.
//!
//! Every message carries its sender and index and a body derived from them, so every receiver
//! checks every byte of every message and the order per sender.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use framewire_shm::{Channel, Options, Policy, ShmError};

fn name(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "ptest-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn body(seed: u64, len: usize) -> impl Iterator<Item = u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u8
    })
}

/// `sender:u32, index:u64`, then `len - 12` bytes derived from both.
fn make(sender: u32, index: u64, len: usize, out: &mut [u8]) {
    assert!(len >= 12 && out.len() == len);
    out[..4].copy_from_slice(&sender.to_le_bytes());
    out[4..12].copy_from_slice(&index.to_le_bytes());
    for (d, b) in out[12..]
        .iter_mut()
        .zip(body(((sender as u64) << 40) ^ index, len - 12))
    {
        *d = b;
    }
}

fn check(m: &[u8]) -> Result<(u32, u64), String> {
    if m.len() < 12 {
        return Err(format!("a message of {} bytes", m.len()));
    }
    let s = u32::from_le_bytes(m[..4].try_into().unwrap());
    let i = u64::from_le_bytes(m[4..12].try_into().unwrap());
    if !m[12..]
        .iter()
        .copied()
        .eq(body(((s as u64) << 40) ^ i, m.len() - 12))
    {
        return Err(format!(
            "message {i} of sender {s} ({} bytes) is corrupt",
            m.len()
        ));
    }
    Ok((s, i))
}

/// A size for message `i`: mostly 12–300 bytes, every 97th in the pool (up to 200 KB).
fn size(i: u64) -> usize {
    let h = i.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33;
    if i % 97 == 96 {
        20_000 + (h as usize % 180_000)
    } else {
        12 + (h as usize % 289)
    }
}

/// Message `i` of the large-size test: log-uniform from 12 bytes to 8 MiB; the last is 8 MiB.
fn big_size(i: u64) -> usize {
    if i == 29 {
        return 8 << 20;
    }
    let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let bits = 4 + (h >> 59) as u32 % 20; // 2^4 .. 2^23
    (12 + (h >> 20) as usize % (1usize << bits)).min(8 << 20)
}

fn opts(shape: Options) -> Options {
    shape
        .ring_bytes(64 * 1024)
        .pool(4, 256 * 1024)
        .topic("test")
}

fn send_all(tx: &mut framewire_shm::Sender, sender: u32, n: u64) {
    for i in 0..n {
        let len = size(i);
        tx.send_with(len, Some(Duration::from_secs(20)), |b| {
            make(sender, i, len, b)
        })
        .unwrap_or_else(|e| panic!("sender {sender} message {i}: {e}"));
    }
}

/// Receives `total` messages from `senders` senders; checks bytes and per-sender order.
fn receive_all(rx: &mut framewire_shm::Receiver, senders: u32, total: u64) -> Result<(), String> {
    let mut next = vec![0u64; senders as usize];
    for k in 0..total {
        let m = rx
            .recv_timeout(Duration::from_secs(20))
            .map_err(|e| format!("after {k} messages: {e}"))?;
        let (s, i) = check(&m)?;
        let slot = next
            .get_mut(s as usize)
            .ok_or(format!("unknown sender {s}"))?;
        if i != *slot {
            return Err(format!("sender {s}: got message {i}, expected {slot}"));
        }
        *slot += 1;
    }
    Ok(())
}

// ---- the child side ----

fn arg(args: &[String], i: usize) -> u64 {
    args[i].parse().unwrap()
}

fn child_main(role: &str, args: &[String]) -> Result<(), String> {
    let nm = &args[0];
    let attach = || Channel::attach(nm, "test").map_err(|e| e.to_string());
    match role {
        // recv NAME SENDERS TOTAL THREADS
        "recv" => {
            let ch = attach()?;
            let (senders, total, threads) = (arg(args, 1) as u32, arg(args, 2), arg(args, 3));
            let mut rxs: Vec<_> = (0..threads)
                .map(|_| ch.receiver().map_err(|e| e.to_string()))
                .collect::<Result<_, _>>()?;
            println!("READY");
            let handles: Vec<_> = rxs
                .drain(..)
                .map(|mut rx| {
                    std::thread::spawn(move || {
                        receive_all(&mut rx, senders, total).map(|()| rx.missed())
                    })
                })
                .collect();
            for h in handles {
                let missed = h.join().map_err(|_| "receiver thread panicked")??;
                if missed != 0 {
                    return Err(format!("missed {missed}"));
                }
            }
            println!("DONE {}", threads * total);
            Ok(())
        }
        // send NAME SENDER_ID COUNT
        "send" => {
            let ch = attach()?;
            let mut tx = ch.sender().map_err(|e| e.to_string())?;
            send_all(&mut tx, arg(args, 1) as u32, arg(args, 2));
            println!("DONE");
            Ok(())
        }
        // send-sizes NAME COUNT: sizes from 12 bytes to 8 MiB, log-uniform, then exactly 8 MiB
        "send-sizes" => {
            let ch = attach()?;
            let mut tx = ch.sender().map_err(|e| e.to_string())?;
            for i in 0..arg(args, 1) {
                let len = big_size(i);
                tx.send_with(len, Some(Duration::from_secs(20)), |b| make(7, i, len, b))
                    .map_err(|e| e.to_string())?;
            }
            println!("DONE");
            Ok(())
        }
        // send-die NAME SENDER_ID COUNT LEN: sends COUNT messages, then dies inside the next one
        "send-die" => {
            let ch = attach()?;
            let mut tx = ch.sender().map_err(|e| e.to_string())?;
            let (id, n, len) = (arg(args, 1) as u32, arg(args, 2), arg(args, 3) as usize);
            for i in 0..n {
                tx.send_with(len, None, |b| make(id, i, len, b))
                    .map_err(|e| e.to_string())?;
            }
            println!("DYING");
            let _ = tx.send_with(len, None, |b| {
                let half = b.len() / 2;
                b[..half].fill(0xEE);
                // SAFETY: raising a signal against ourselves.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            });
            unreachable!("killed")
        }
        // hold NAME N: receives N messages, then holds the next one and sleeps
        "hold" => {
            let ch = attach()?;
            let mut rx = ch.receiver().map_err(|e| e.to_string())?;
            println!("READY");
            for _ in 0..arg(args, 1) {
                rx.recv().map_err(|e| e.to_string())?;
            }
            let _m = rx.recv().map_err(|e| e.to_string())?;
            println!("HOLDING");
            std::thread::sleep(Duration::from_secs(120));
            Ok(())
        }
        // create-and-die NAME: makes a segment, uses it, and is killed without cleaning up
        "create-and-die" => {
            let ch = Channel::open(nm, &Options::route().ring_bytes(8192).topic("test"))
                .map_err(|e| e.to_string())?;
            let mut rx = ch.receiver().map_err(|e| e.to_string())?;
            let mut tx = ch.sender().map_err(|e| e.to_string())?;
            tx.send(b"hello").map_err(|e| e.to_string())?;
            let _m = rx.recv().map_err(|e| e.to_string())?;
            println!("READY");
            // SAFETY: as above.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            unreachable!("killed")
        }
        other => Err(format!("unknown role {other}")),
    }
}

#[test]
fn child() {
    let Ok(role) = std::env::var("FW_SHM_ROLE") else {
        return; // the normal test run: nothing to do
    };
    let args: Vec<String> = std::env::var("FW_SHM_ARGS")
        .unwrap_or_default()
        .split(' ')
        .map(str::to_string)
        .collect();
    let code = match child_main(&role, &args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("child {role}: {e}");
            1
        }
    };
    std::process::exit(code);
}

// ---- the parent side ----

struct Kid {
    child: Child,
    lines: mpsc::Receiver<String>,
}

fn spawn(role: &str, args: &[String]) -> Kid {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child",
            "--exact",
            "--nocapture",
            "--test-threads",
            "1",
            "--quiet",
        ])
        .env("FW_SHM_ROLE", role)
        .env("FW_SHM_ARGS", args.join(" "))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    Kid { child, lines }
}

impl Kid {
    fn expect(&self, word: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.starts_with(word) => return l,
                Ok(_) => {}
                Err(_) => panic!("child never said {word}"),
            }
        }
    }
    fn finish(mut self) {
        let st = self.child.wait().unwrap();
        assert!(st.success(), "child failed: {st}");
    }
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

fn s(x: impl ToString) -> String {
    x.to_string()
}

#[test]
fn route_one_sender_four_receiver_processes() {
    let n = name("route");
    let ch = Channel::open(&n, &opts(Options::route())).unwrap();
    let total = 20_000u64;
    let kids: Vec<Kid> = (0..4)
        .map(|_| spawn("recv", &[n.clone(), s(1), s(total), s(1)]))
        .collect();
    for k in &kids {
        k.expect("READY");
    }
    let mut tx = ch.sender().unwrap();
    send_all(&mut tx, 0, total);
    for k in kids {
        assert_eq!(k.expect("DONE"), format!("DONE {total}"));
        k.finish();
    }
}

#[test]
fn channel_three_sender_and_three_receiver_processes() {
    let n = name("chan");
    let _ch = Channel::open(&n, &opts(Options::channel())).unwrap();
    let per = 5_000u64;
    let rx: Vec<Kid> = (0..3)
        .map(|_| spawn("recv", &[n.clone(), s(3), s(3 * per), s(1)]))
        .collect();
    for k in &rx {
        k.expect("READY");
    }
    let tx: Vec<Kid> = (0..3)
        .map(|i| spawn("send", &[n.clone(), s(i), s(per)]))
        .collect();
    for k in tx {
        k.finish();
    }
    for k in rx {
        assert_eq!(k.expect("DONE"), format!("DONE {}", 3 * per));
        k.finish();
    }
}

#[test]
fn two_hundred_fifty_six_receivers_in_sixteen_processes() {
    let n = name("wide");
    let ch = Channel::open(&n, &opts(Options::route()).max_receivers(256)).unwrap();
    let total = 2_000u64;
    let kids: Vec<Kid> = (0..16)
        .map(|_| spawn("recv", &[n.clone(), s(1), s(total), s(16)]))
        .collect();
    for k in &kids {
        k.expect("READY");
    }
    assert_eq!(ch.stats().receivers, 256);
    assert!(matches!(ch.receiver(), Err(ShmError::NoReceiverPlace(256))));
    let mut tx = ch.sender().unwrap();
    send_all(&mut tx, 0, total);
    for k in kids {
        assert_eq!(k.expect("DONE"), format!("DONE {}", 16 * total));
        k.finish();
    }
}

#[test]
fn a_receiver_killed_while_holding_a_message_stops_blocking_the_sender() {
    let n = name("kill-rx");
    let ch = Channel::open(&n, &opts(Options::route()).policy(Policy::Block)).unwrap();
    let total = 3_000u64;
    let good = spawn("recv", &[n.clone(), s(1), s(total), s(1)]);
    let bad = spawn("hold", &[n.clone(), s(10)]);
    good.expect("READY");
    bad.expect("READY");
    let mut tx = ch.sender().unwrap();
    let sender = std::thread::spawn(move || {
        send_all(&mut tx, 0, total);
        Instant::now()
    });
    bad.expect("HOLDING");
    // The ring fills behind the held message and the sender blocks; then the holder dies.
    std::thread::sleep(Duration::from_millis(300));
    let killed = Instant::now();
    bad.kill();
    let done = sender.join().unwrap();
    assert!(
        done.saturating_duration_since(killed) < Duration::from_secs(2),
        "the sender went on {:?} after the kill",
        done.saturating_duration_since(killed)
    );
    assert_eq!(good.expect("DONE"), format!("DONE {total}"));
    good.finish();
    assert!(ch.stats().reaped_receivers >= 1);
}

#[test]
fn senders_killed_mid_message_leave_no_hole_and_no_lost_block() {
    let n = name("kill-tx");
    let ch = Channel::open(&n, &opts(Options::channel())).unwrap();
    let mut rx = ch.receiver().unwrap();
    // Sender 1 dies while writing an inline message (reserved, never committed); sender 2
    // while writing a pool message (block claimed, never published).
    let die_inline = spawn("send-die", &[n.clone(), s(1), s(100), s(200)]);
    let die_pool = spawn("send-die", &[n.clone(), s(2), s(3), s(100_000)]);
    die_inline.expect("DYING");
    die_pool.expect("DYING");
    let _ = die_inline.child.wait_with_output();
    let _ = die_pool.child.wait_with_output();
    let healthy = spawn("send", &[n.clone(), s(0), s(2_000)]);
    let mut next = [0u64; 3];
    let t = Instant::now();
    while next[0] < 2_000 {
        let m = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("stuck behind a dead sender");
        let (s, i) = check(&m).unwrap();
        assert_eq!(i, next[s as usize], "sender {s}");
        next[s as usize] += 1;
    }
    assert_eq!(next, [2_000, 100, 3]);
    assert!(t.elapsed() < Duration::from_secs(20));
    healthy.finish();
    let st = ch.stats();
    assert!(st.repaired_records >= 1 && st.reaped_senders >= 2, "{st:?}");
    // Every pool block is usable again (one was claimed by the dead sender).
    let mut tx = ch.sender().unwrap();
    for i in 0..8u64 {
        tx.send_with(150_000, Some(Duration::from_secs(5)), |b| {
            make(9, i, 150_000, b)
        })
        .unwrap();
        let m = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(check(&m).unwrap(), (9, i));
    }
}

#[test]
fn a_segment_left_by_a_killed_process_is_recreated() {
    let n = name("stale");
    let kid = spawn("create-and-die", std::slice::from_ref(&n));
    kid.expect("READY");
    let _ = kid.child.wait_with_output();
    // It is still there: nobody cleaned up.
    let path = framewire_shm::path_for(&n).unwrap();
    assert!(path.exists());
    // Opening it with another layout works: its users are all dead.
    let ch = Channel::open(&n, &Options::channel().ring_bytes(32 * 1024).topic("test")).unwrap();
    let mut rx = ch.receiver().unwrap();
    let mut tx = ch.sender().unwrap();
    tx.send(b"fresh").unwrap();
    assert_eq!(&rx.recv().unwrap()[..], b"fresh");
    assert_eq!(ch.stats().head, 1);
}

#[test]
fn messages_up_to_eight_mib_cross_processes_byte_for_byte() {
    let n = name("big");
    let ch = Channel::open(&n, &opts(Options::route()).pool(2, 8 << 20)).unwrap();
    let mut rx = ch.receiver().unwrap();
    let kid = spawn("send-sizes", &[n.clone(), s(30)]);
    let mut inline_and_pool = (0, 0);
    for i in 0..30u64 {
        let m = rx.recv_timeout(Duration::from_secs(20)).unwrap();
        assert_eq!(m.len(), big_size(i), "message {i}");
        assert_eq!(check(&m).unwrap(), (7, i));
        if m.len() <= ch.inline_max() {
            inline_and_pool.0 += 1;
        } else {
            inline_and_pool.1 += 1;
        }
    }
    assert!(
        inline_and_pool.0 > 3 && inline_and_pool.1 > 3,
        "{inline_and_pool:?}"
    );
    kid.finish();
}
