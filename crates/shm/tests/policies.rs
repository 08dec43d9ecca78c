//! A receiver that is behind, under each policy; sizes from 1 byte to 8 MiB; attach rules.
//! (Between threads of one process: the mapping is the same one other processes use.)

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use framewire_shm::{Channel, Options, Policy, ShmError};

fn name(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "test-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn payload(i: u64, len: usize) -> Vec<u8> {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn small() -> Options {
    // 64 units of ring: a few messages fill it.
    Options::route().ring_bytes(4096).pool(2, 64 * 1024)
}

#[test]
fn block_waits_for_the_slow_receiver_and_loses_nothing() {
    let ch = Channel::open(&name("block"), &small().policy(Policy::Block)).unwrap();
    let mut rx = ch.receiver().unwrap();
    let mut tx = ch.sender().unwrap();
    let mut sent = 0u64;
    loop {
        match tx.send_timeout(&payload(sent, 200), Duration::from_millis(50)) {
            Ok(()) => sent += 1,
            Err(ShmError::Timeout) => break,
            Err(e) => panic!("{e}"),
        }
        assert!(sent < 1000, "a full ring must block the sender");
    }
    assert!(sent > 5);
    assert!(matches!(
        tx.try_send(&payload(sent, 200)),
        Err(ShmError::Full)
    ));
    // The receiver catches up; every message is there, in order.
    for i in 0..sent {
        let m = rx.recv_timeout(Duration::from_secs(1)).unwrap();
        assert_eq!(&m[..], &payload(i, 200)[..]);
    }
    assert_eq!(rx.missed(), 0);
    tx.send(b"after").unwrap();
    assert_eq!(&rx.recv().unwrap()[..], b"after");
}

#[test]
fn drop_oldest_never_blocks_and_counts_what_the_receiver_missed() {
    let ch = Channel::open(&name("drop"), &small().policy(Policy::DropOldest)).unwrap();
    let mut slow = ch.receiver().unwrap();
    let mut tx = ch.sender().unwrap();
    let n = 500u64;
    let t = Instant::now();
    for i in 0..n {
        tx.try_send(&payload(i, 100)).unwrap();
    }
    assert!(t.elapsed() < Duration::from_secs(5));
    let mut got = Vec::new();
    while let Some(m) = slow.try_recv().unwrap() {
        got.push(m.to_vec());
    }
    // What is left are the newest messages, in order, and the rest were counted as missed.
    assert!(!got.is_empty() && got.len() < n as usize);
    assert_eq!(got.len() as u64 + slow.missed(), n);
    let first = n - got.len() as u64;
    for (k, m) in got.iter().enumerate() {
        assert_eq!(m, &payload(first + k as u64, 100));
    }
}

#[test]
fn drop_oldest_does_not_overwrite_a_message_being_read() {
    let ch = Channel::open(&name("hold"), &small().policy(Policy::DropOldest)).unwrap();
    let mut rx = ch.receiver().unwrap();
    let mut tx = ch.sender().unwrap();
    tx.send(&payload(0, 300)).unwrap();
    let held = rx.try_recv().unwrap().unwrap();
    // The ring laps many times while the first message is held: it cannot be reused, so
    // senders get Full instead of corrupting it.
    let mut full = 0;
    for i in 1..200 {
        if let Err(e) = tx.try_send(&payload(i, 300)) {
            assert!(matches!(e, ShmError::Full), "{e}");
            full += 1;
        }
    }
    assert!(full > 0);
    assert_eq!(&held[..], &payload(0, 300)[..]);
}

#[test]
fn fail_refuses_at_once_and_keeps_what_it_accepted() {
    let ch = Channel::open(&name("fail"), &small().policy(Policy::Fail)).unwrap();
    let mut rx = ch.receiver().unwrap();
    let mut tx = ch.sender().unwrap();
    let mut accepted = 0u64;
    let mut refused = 0;
    for i in 0..100u64 {
        let t = Instant::now();
        match tx.send(&payload(accepted, 150)) {
            Ok(()) => accepted += 1,
            Err(ShmError::Full) => {
                refused += 1;
                assert!(
                    t.elapsed() < Duration::from_millis(100),
                    "fail must not wait"
                );
            }
            Err(e) => panic!("{e} at {i}"),
        }
    }
    assert!(accepted > 0 && refused > 0);
    for i in 0..accepted {
        assert_eq!(&rx.try_recv().unwrap().unwrap()[..], &payload(i, 150)[..]);
    }
    assert!(rx.try_recv().unwrap().is_none());
    assert_eq!(rx.missed(), 0);
}

#[test]
fn sizes_from_one_byte_to_eight_mib_arrive_byte_for_byte() {
    let opts = Options::route().pool(2, 8 << 20);
    let ch = Channel::open(&name("sizes"), &opts).unwrap();
    assert!(ch.max_message() >= 8 << 20);
    let mut rx = ch.receiver().unwrap();
    let tx_ch = ch.clone();
    let mut sizes = vec![
        1usize,
        2,
        47,
        48,
        49,
        ch.inline_max(),
        ch.inline_max() + 1,
        8 << 20,
    ];
    let mut x = 12345u64;
    for _ in 0..40 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        // Log-uniform between 1 byte and 8 MiB.
        let bits = (x >> 59) as u32 % 24;
        sizes.push(1 + ((x >> 20) as usize % (1usize << bits)).min((8 << 20) - 1));
    }
    let expect = sizes.clone();
    let sender = std::thread::spawn(move || {
        let mut tx = tx_ch.sender().unwrap();
        for (i, &n) in sizes.iter().enumerate() {
            tx.send(&payload(i as u64, n)).unwrap();
        }
    });
    for (i, &n) in expect.iter().enumerate() {
        let m = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(m.len(), n, "message {i}");
        assert!(
            m[..] == payload(i as u64, n)[..],
            "message {i} of {n} bytes differs"
        );
    }
    sender.join().unwrap();
    assert!(matches!(
        ch.sender()
            .unwrap()
            .try_send(&vec![0u8; ch.max_message() + 1]),
        Err(ShmError::TooLarge { .. })
    ));
}

#[test]
fn attach_checks_topic_and_layout() {
    let n = name("attach");
    let opts = Options::channel().topic("frames").ring_bytes(8192);
    let a = Channel::open(&n, &opts).unwrap();
    // Same layout and topic: attaches. Attach-only with the topic: attaches to what exists.
    let b = Channel::open(&n, &opts).unwrap();
    let c = Channel::attach(&n, "frames").unwrap();
    assert_eq!(c.inline_max(), a.inline_max());
    // Another topic or layout while it is in use: refused, naming the user.
    let e = Channel::open(&n, &opts.clone().topic("samples"))
        .err()
        .unwrap();
    assert!(e.to_string().contains("in use by pid"), "{e}");
    assert!(Channel::open(&n, &opts.clone().ring_bytes(16384)).is_err());
    assert!(Channel::attach(&n, "samples").is_err());
    assert!(matches!(
        Channel::attach(&name("absent"), "frames"),
        Err(ShmError::NotFound(_))
    ));
    assert!(matches!(
        Channel::open("../etc", &opts),
        Err(ShmError::BadName(_))
    ));
    // The last handle to leave removes the file.
    let path = a.path().to_path_buf();
    drop((a, b));
    assert!(path.exists());
    drop(c);
    assert!(!path.exists());
}

#[test]
fn a_route_has_one_sender_and_a_channel_many() {
    let r = Channel::open(&name("one"), &Options::route()).unwrap();
    let _tx = r.sender().unwrap();
    assert!(matches!(r.sender(), Err(ShmError::RouteHasSender(_))));
    let c = Channel::open(&name("many"), &Options::channel().max_senders(3)).unwrap();
    let txs: Vec<_> = (0..3).map(|_| c.sender().unwrap()).collect();
    assert!(matches!(c.sender(), Err(ShmError::NoSenderPlace(3))));
    drop(txs);
    assert!(c.sender().is_ok());
}

#[test]
fn no_futex_syscalls_while_the_receiver_keeps_up() {
    let ch = Channel::open(&name("futex"), &Options::route()).unwrap();
    let mut rx = ch.receiver().unwrap();
    let mut tx = ch.sender().unwrap();
    let before = framewire_shm::futex::syscalls();
    for i in 0..10_000u64 {
        tx.send(&i.to_le_bytes()).unwrap();
        let m = rx.try_recv().unwrap().unwrap();
        assert_eq!(&m[..], &i.to_le_bytes());
    }
    assert_eq!(framewire_shm::futex::syscalls(), before);
}

mod garbage {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Whatever a file in /dev/shm holds, attaching to it is a clear error, never a crash,
        /// and never a mapping sized by an unchecked field.
        #[test]
        fn attaching_to_garbage_is_an_error(
            bytes in proptest::collection::vec(any::<u8>(), 0..9000),
            keep_magic in any::<bool>(),
        ) {
            let n = name("garbage");
            let path = framewire_shm::path_for(&n).unwrap();
            let mut b = bytes.clone();
            if keep_magic && b.len() >= 12 {
                b[..8].copy_from_slice(b"FWSHM\0\0\x01");
                b[8..12].copy_from_slice(&1u32.to_le_bytes());
            }
            std::fs::write(&path, &b).unwrap();
            let r = Channel::attach(&n, "");
            prop_assert!(r.is_err());
            let _ = std::fs::remove_file(&path);
        }
    }
}
