//! Whole-link runs: real namespaces, TUN devices, relay threads and tbf. Each test skips (prints
//! `SKIPPED: <reason>`) where links cannot be built, e.g. without root.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use framewire_netem::{available, in_namespace, DirectionCounters, Impairment, Link, LinkConfig};

macro_rules! require_link_support {
    () => {
        if let Err(reason) = available() {
            eprintln!("SKIPPED: {reason}");
            return;
        }
    };
}

/// A UDP socket in A and one in B, each bound to its side's link address.
fn udp_pair(link: &Link) -> (UdpSocket, UdpSocket) {
    let (a, b) = (link.addr_a(), link.addr_b());
    let sa = in_namespace(link.a(), || UdpSocket::bind((a, 0)))
        .unwrap()
        .unwrap();
    let sb = in_namespace(link.b(), || UdpSocket::bind((b, 0)))
        .unwrap()
        .unwrap();
    (sa, sb)
}

/// Waits until neither direction holds packets and the counters have stood still for 100 ms
/// (the last packets of a closing connection may still be crossing), then returns them.
fn idle_counters(link: &Link) -> (DirectionCounters, DirectionCounters) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut last = link.counters();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = link.counters();
        let idle = now.0.queued == 0 && now.1.queued == 0;
        if (idle && now == last) || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

/// Every packet that entered a direction left it through exactly one door.
fn assert_accounted(c: &DirectionCounters) {
    assert_eq!(
        c.packets_in + c.duplicated,
        c.packets_out + c.lost + c.queue_full + c.write_errors + c.queued,
        "{c:?}"
    );
}

/// Sets its flag when dropped, so helper threads that wait for the flag end even when the
/// test panics (a scope would otherwise wait for them forever).
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Receives u32 sequence numbers on `sock` until `done` is set and nothing came for 300 ms.
fn collect_seqs(sock: &UdpSocket, done: &AtomicBool) -> Vec<u32> {
    sock.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut seqs = Vec::new();
    let mut buf = [0u8; 64];
    loop {
        match sock.recv(&mut buf) {
            Ok(n) if n >= 4 => seqs.push(u32::from_be_bytes(buf[..4].try_into().unwrap())),
            Ok(_) => {}
            Err(_) if done.load(Ordering::Acquire) => return seqs,
            Err(_) => {}
        }
    }
}

/// Sends `count` numbered 32-byte datagrams from `from` to `to`'s address, `gap` apart (a
/// pause every 20 packets when `gap` is zero, so the receiver's buffer never overflows).
fn send_seqs(from: &UdpSocket, to: &UdpSocket, count: u32, gap: Duration) {
    let dest = to.local_addr().unwrap();
    for seq in 0..count {
        let mut msg = [0u8; 32];
        msg[..4].copy_from_slice(&seq.to_be_bytes());
        from.send_to(&msg, dest).unwrap();
        if !gap.is_zero() {
            std::thread::sleep(gap);
        } else if seq % 20 == 19 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Sends `count` datagrams A→B and returns the sequence numbers B received, in order.
fn udp_run(link: &Link, count: u32, gap: Duration) -> Vec<u32> {
    let (sa, sb) = udp_pair(link);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let receiver = s.spawn(|| collect_seqs(&sb, &done));
        let finished = SetOnDrop(&done);
        send_seqs(&sa, &sb, count, gap);
        drop(finished);
        receiver.join().unwrap()
    })
}

/// Test data that a shifted, dropped or repeated chunk cannot match.
fn pattern(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x1234_5678;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// Sends `data` over TCP from A to B; returns what B received and how long from the first
/// write to B's end of stream.
fn tcp_transfer(link: &Link, data: &[u8]) -> (Vec<u8>, Duration) {
    let b = link.addr_b();
    let listener = in_namespace(link.b(), || TcpListener::bind((b, 0)))
        .unwrap()
        .unwrap();
    let dest = listener.local_addr().unwrap();
    let client = in_namespace(link.a(), || {
        TcpStream::connect_timeout(&dest, Duration::from_secs(10))
    })
    .unwrap()
    .expect("connect A → B across the link");
    let (mut server, _) = listener.accept().unwrap();
    server
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut client = client;
    client
        .set_write_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    std::thread::scope(|s| {
        let start = Instant::now();
        let reader = s.spawn(move || {
            let mut got = Vec::with_capacity(data.len());
            server
                .read_to_end(&mut got)
                .expect("B reads until A closes");
            (got, start.elapsed())
        });
        client.write_all(data).expect("A writes");
        client.shutdown(Shutdown::Write).unwrap();
        reader.join().unwrap()
    })
}

#[test]
fn udp_echo_round_trip_is_twice_the_delay() {
    require_link_support!();
    let imp = Impairment {
        delay_us: 10_000,
        ..Impairment::default()
    };
    let link = Link::start(LinkConfig::unique("echo").both_ways(imp)).unwrap();
    let (sa, sb) = udp_pair(&link);
    let dest = sb.local_addr().unwrap();
    let stop = AtomicBool::new(false);
    let mut rtts = std::thread::scope(|s| {
        s.spawn(|| {
            sb.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            let mut buf = [0u8; 64];
            while !stop.load(Ordering::Acquire) {
                if let Ok((n, from)) = sb.recv_from(&mut buf) {
                    sb.send_to(&buf[..n], from).unwrap();
                }
            }
        });
        let _finished = SetOnDrop(&stop);
        sa.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut rtts = Vec::new();
        let mut buf = [0u8; 64];
        for seq in 0u32..50 {
            let t = Instant::now();
            sa.send_to(&seq.to_be_bytes(), dest).unwrap();
            match sa.recv(&mut buf) {
                Ok(4) if buf[..4] == seq.to_be_bytes() => rtts.push(t.elapsed()),
                other => panic!("echo {seq}: {other:?}"),
            }
        }
        rtts
    });
    rtts.sort();
    let median = rtts[rtts.len() / 2];
    eprintln!(
        "udp echo over 10 ms + 10 ms: min {:?} median {median:?} max {:?} of {}",
        rtts[0],
        rtts[rtts.len() - 1],
        rtts.len()
    );
    assert_eq!(rtts.len(), 50);
    assert!(
        median >= Duration::from_millis(20) && median <= Duration::from_millis(30),
        "median round trip {median:?}"
    );
    let (ab, ba) = idle_counters(&link);
    for c in [&ab, &ba] {
        assert_eq!((c.lost, c.queue_full, c.write_errors), (0, 0, 0), "{c:?}");
        assert_accounted(c);
    }
}

#[test]
fn loss_drops_the_configured_fraction_and_replays_from_the_seed() {
    require_link_support!();
    let run = || {
        let mut cfg = LinkConfig::unique("loss");
        cfg.a_to_b = Impairment {
            loss: 0.2,
            seed: 12345,
            ..Impairment::default()
        };
        let link = Link::start(cfg).unwrap();
        let got = udp_run(&link, 2000, Duration::ZERO);
        let (ab, _) = idle_counters(&link);
        (got, ab)
    };
    let (got, c) = run();
    let received = got.iter().collect::<HashSet<_>>().len();
    let fraction_lost = 1.0 - received as f64 / 2000.0;
    eprintln!("loss 0.2: {received}/2000 received (lost {fraction_lost:.3}); A→B {c:?}");
    assert!(
        (fraction_lost - 0.2).abs() <= 0.05,
        "lost fraction {fraction_lost}"
    );
    assert_eq!(c.duplicated, 0);
    assert_eq!(c.lost, c.packets_in - c.packets_out, "{c:?}");
    assert_accounted(&c);
    // No other traffic crosses the link, so the relay's counts are the test's.
    assert_eq!(c.packets_in, 2000, "{c:?}");
    assert_eq!(c.packets_out as usize, received, "{c:?}");

    // The same seed loses the same packets.
    let (again, c2) = run();
    assert_eq!(c2.lost, c.lost);
    assert_eq!(
        got.iter().collect::<HashSet<_>>(),
        again.iter().collect::<HashSet<_>>()
    );
}

#[test]
fn jitter_reorders_and_duplicate_repeats() {
    require_link_support!();
    let mut cfg = LinkConfig::unique("jitter");
    cfg.a_to_b = Impairment {
        jitter_us: 20_000,
        duplicate: 0.1,
        seed: 7,
        ..Impairment::default()
    };
    let link = Link::start(cfg).unwrap();
    let got = udp_run(&link, 200, Duration::from_millis(1));
    let mut seen = HashSet::new();
    let (mut duplicates, mut out_of_order, mut highest) = (0, 0, None);
    for &seq in &got {
        if !seen.insert(seq) {
            duplicates += 1;
            continue;
        }
        if highest.is_some_and(|h| seq < h) {
            out_of_order += 1;
        }
        highest = highest.max(Some(seq));
    }
    let (c, _) = idle_counters(&link);
    eprintln!(
        "jitter 20 ms, duplicate 0.1: {} datagrams, {} distinct, {out_of_order} out of order, \
         {duplicates} duplicates; A→B {c:?}",
        got.len(),
        seen.len()
    );
    assert_eq!(seen.len(), 200, "nothing is lost");
    assert!(out_of_order > 0, "jitter reorders");
    assert!(duplicates > 0, "duplicate repeats");
    assert_eq!(duplicates, c.duplicated);
    assert_accounted(&c);
}

#[test]
fn tcp_survives_two_percent_loss_with_every_byte_intact() {
    require_link_support!();
    let imp = Impairment {
        delay_us: 5_000,
        loss: 0.02,
        seed: 99,
        ..Impairment::default()
    };
    let link = Link::start(LinkConfig::unique("tcploss").both_ways(imp)).unwrap();
    let data = pattern(2 << 20);
    let (got, took) = tcp_transfer(&link, &data);
    let (ab, ba) = idle_counters(&link);
    eprintln!("tcp 2 MiB over 5 ms and 2 % loss each way: {took:?}; A→B {ab:?}; B→A {ba:?}");
    assert_eq!(got.len(), data.len());
    assert!(got == data, "received bytes differ from sent bytes");
    assert!(ab.lost > 0, "the loss was real: {ab:?}");
    assert_accounted(&ab);
    assert_accounted(&ba);
}

#[test]
fn tbf_limits_tcp_to_the_rate() {
    require_link_support!();
    let mut cfg = LinkConfig::unique("rate");
    cfg.a_to_b.rate_kbit = Some(10_000);
    let link = Link::start(cfg).unwrap();
    let data = pattern(2 << 20);
    let (got, took) = tcp_transfer(&link, &data);
    let (ab, _) = idle_counters(&link);
    let mbit = data.len() as f64 * 8.0 / took.as_secs_f64() / 1e6;
    eprintln!("tcp 2 MiB at tbf 10 Mbit/s: {took:?} ({mbit:.2} Mbit/s); A→B {ab:?}");
    assert!(got == data);
    // 2 MiB at 10 Mbit/s is 1.68 s; the bucket's 12.5 kB head start is 10 ms of it.
    assert!(took >= Duration::from_millis(1400), "too fast: {took:?}");
    assert!(took <= Duration::from_secs(10), "far too slow: {took:?}");
}

#[test]
fn impairment_changes_live() {
    require_link_support!();
    let link = Link::start(LinkConfig::unique("live")).unwrap();
    let blackout = Impairment {
        loss: 1.0,
        ..Impairment::default()
    };
    link.set_impairment(blackout, Impairment::default())
        .unwrap();
    assert!(udp_run(&link, 100, Duration::ZERO).is_empty());
    link.set_impairment(Impairment::default(), Impairment::default())
        .unwrap();
    assert_eq!(udp_run(&link, 100, Duration::ZERO).len(), 100);
    let (c, _) = idle_counters(&link);
    assert_eq!((c.lost, c.packets_out), (100, 100), "{c:?}");

    // A rate added and removed live shows in tc.
    let qdisc = |ns: &str| {
        let out = std::process::Command::new("tc")
            .args(["-n", ns, "qdisc", "show", "dev", framewire_netem::TUN_NAME])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let limited = Impairment {
        rate_kbit: Some(5_000),
        ..Impairment::default()
    };
    link.set_impairment(limited, Impairment::default()).unwrap();
    assert!(qdisc(link.a()).contains("tbf"), "{}", qdisc(link.a()));
    assert!(!qdisc(link.b()).contains("tbf"));
    link.set_impairment(Impairment::default(), Impairment::default())
        .unwrap();
    assert!(!qdisc(link.a()).contains("tbf"), "{}", qdisc(link.a()));
}

#[test]
fn drop_deletes_the_namespaces_and_start_never_takes_an_existing_one() {
    require_link_support!();
    let netns_list = || {
        let out = std::process::Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let link = Link::start(LinkConfig::unique("drop")).unwrap();
    let (a, b) = (link.a().to_string(), link.b().to_string());
    assert_eq!(link.exec_a(), ["ip", "netns", "exec", a.as_str()]);
    // A program run with the prefix is in the namespace: it sees the link's address.
    let mut cmd = link.exec_b();
    cmd.extend(["ip", "-4", "-o", "addr", "show"].map(String::from));
    let out = std::process::Command::new(&cmd[0])
        .args(&cmd[1..])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(&link.addr_b().to_string()));

    // A second link that names an existing namespace fails, and leaves that namespace alone.
    let mut clash = LinkConfig::unique("drop");
    clash.a = a.clone();
    let e = Link::start(clash.clone()).err().expect("namespace exists");
    eprintln!("clash: {e}");
    let list = netns_list();
    assert!(list.contains(&a));
    assert!(!list.contains(&clash.b));

    let started = Instant::now();
    drop(link);
    eprintln!("drop took {:?}", started.elapsed());
    let list = netns_list();
    assert!(!list.contains(&a) && !list.contains(&b), "{list}");
}

#[test]
fn a_tokio_runtime_run_inside_a_namespace_serves_there() {
    require_link_support!();
    let link = Link::start(LinkConfig::unique("tokio")).unwrap();
    let b = link.addr_b();
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let server = s.spawn(|| {
            in_namespace(link.b(), move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    use tokio::io::AsyncReadExt;
                    let listener = tokio::net::TcpListener::bind((b, 0)).await.unwrap();
                    port_tx.send(listener.local_addr().unwrap()).unwrap();
                    let serve = async {
                        let (mut conn, from) = listener.accept().await.unwrap();
                        let mut got = String::new();
                        conn.read_to_string(&mut got).await.unwrap();
                        (got, from)
                    };
                    // Bounded, so a failing client cannot leave this thread (and the test) hung.
                    tokio::time::timeout(Duration::from_secs(10), serve)
                        .await
                        .expect("A connects and sends within 10 s")
                })
            })
            .unwrap()
        });
        let dest = port_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let mut client = in_namespace(link.a(), || TcpStream::connect(dest))
            .unwrap()
            .unwrap();
        client.write_all(b"hello from A").unwrap();
        drop(client);
        let (got, from) = server.join().unwrap();
        assert_eq!(got, "hello from A");
        assert_eq!(from.ip(), link.addr_a());
    });
}

/// Asks for a receive buffer of `bytes` on `sock` (forced: the tests run as root).
fn force_rcvbuf(sock: &UdpSocket, bytes: usize) {
    use std::os::fd::AsRawFd;
    let v = bytes as libc::c_int;
    // SAFETY: `sock` is an open socket; `v` is a c_int of the length given.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "SO_RCVBUFFORCE: {}", std::io::Error::last_os_error());
}

#[test]
fn a_burst_of_more_packets_than_the_kernels_default_device_queue_crosses_whole() {
    require_link_support!();
    // More packets than a device holds by default (500), all sent at once, as QUIC sends a
    // large frame, before the relay has read many of them.
    const BURST: u32 = 3_000;
    let link = Link::start(LinkConfig::unique("burst")).unwrap();
    let (sa, sb) = udp_pair(&link);
    force_rcvbuf(&sb, 32 << 20);
    let dest = sb.local_addr().unwrap();
    let mut msg = [0u8; 1200];
    for seq in 0..BURST {
        msg[..4].copy_from_slice(&seq.to_be_bytes());
        sa.send_to(&msg, dest).unwrap();
    }
    // Read until every packet came, or for at most 10 s (the relay may be starved of the cores
    // for a while; it still holds what it has not passed on).
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = HashSet::new();
    let mut buf = [0u8; 64];
    sb.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    while got.len() < BURST as usize && Instant::now() < deadline {
        if let Ok(n) = sb.recv(&mut buf) {
            if n >= 4 {
                got.insert(u32::from_be_bytes(buf[..4].try_into().unwrap()));
            }
        }
    }
    let (ab, _) = idle_counters(&link);
    let (dropped_ab, _) = link.device_drops().unwrap();
    let received = got.len() as u64;
    eprintln!("burst of {BURST}: {received} received, {dropped_ab} dropped by A's device; {ab:?}");
    // Every packet sent is either read by the relay or counted as dropped by the device.
    assert_eq!(ab.packets_in + dropped_ab, BURST as u64, "{ab:?}");
    assert_accounted(&ab);
    assert_eq!(dropped_ab, 0, "the device's queue held the burst");
    assert_eq!(received, BURST as u64);
}
