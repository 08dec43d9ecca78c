//! What the `framewire` process does for itself at start.

use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

/// The soft and hard "Max open files" of a process, from `/proc/PID/limits`.
fn open_file_limits(pid: u32) -> Option<(String, String)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    let mut f = line["Max open files".len()..].split_whitespace();
    Some((f.next()?.to_string(), f.next()?.to_string()))
}

/// Started with a soft limit of 256 descriptors (or half the hard limit, if that is less), the server raises it to the hard limit, so
/// one listener's connections cannot exhaust a small default.
#[test]
fn the_server_raises_its_open_file_limit_to_the_hard_limit() {
    let dir = std::env::temp_dir().join(format!("fw-rlimit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_framewire"));
    cmd.args(["serve", "--scene", "idle", "--resolution", "64x48"])
        .args([
            "--port",
            "0",
            "--daylight-port",
            "0",
            "--no-http",
            "--no-touch",
        ])
        .arg("--control-socket")
        .arg(dir.join("ctl.sock"))
        .arg("--status-file")
        .arg(dir.join("status"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe; it only lowers the child's own soft limit.
    unsafe {
        cmd.pre_exec(|| {
            let mut r = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
            r.rlim_cur = 256.min(r.rlim_max / 2);
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("starting framewire serve");
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = None;
    let raised = loop {
        last = open_file_limits(pid).or(last);
        if let Some((soft, hard)) = &last {
            if soft == hard {
                break true;
            }
        }
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(raised, "soft and hard limits of the server: {last:?}");
}

/// Log lines written by the server's tasks in this test process.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// 1.1 MB of garbage on the touch port is counted in full, and logged a line a second, not
/// a line per skipped run (it once wrote 10 MB of warnings).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_the_touch_port_is_counted_not_logged_line_by_line() {
    use std::net::SocketAddr;
    use tokio::io::AsyncWriteExt;
    let log = Captured::default();
    let writer = log.clone();
    tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::WARN)
        .init();
    let server = framewire_server::Server::start(framewire_server::ServerConfig {
        source: framewire_server::SourceSpec::Synthetic(framewire_capture::Scene::Idle),
        resolution: framewire_capture::Resolution {
            width: 64,
            height: 48,
        },
        v1_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        daylight_addr: None,
        touch_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        ..Default::default()
    })
    .await
    .unwrap();
    let mut sock = tokio::net::TcpStream::connect(server.touch_addr.unwrap())
        .await
        .unwrap();
    // Bytes that never form a touch packet: every run of them is skipped and counted.
    let garbage: Vec<u8> = (0..1_100_000u32).map(|i| (i % 251) as u8 | 0x80).collect();
    sock.write_all(&garbage).await.unwrap();
    drop(sock);
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.counter("touch_bytes_skipped") < garbage.len() as u64 - 64 {
        assert!(
            Instant::now() < deadline,
            "only {} bytes counted as skipped",
            server.counter("touch_bytes_skipped")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let runs: u64 = server
        .counters()
        .iter()
        .filter(|(n, _)| n.starts_with("touch_rejected."))
        .map(|(_, v)| v)
        .sum();
    server.shutdown().await;
    let text = String::from_utf8_lossy(&log.0.lock().unwrap()).to_string();
    let lines = text
        .lines()
        .filter(|l| l.contains("touch: bad bytes"))
        .count();
    assert!(runs > 100, "only {runs} skipped runs: the test needs many");
    assert!(
        (1..=15).contains(&lines),
        "{lines} warning lines for {runs} skipped runs:\n{}",
        &text[..text.len().min(2000)]
    );
}

/// A fresh, empty directory for one test, standing in for `$XDG_RUNTIME_DIR`.
fn temp_dir(tag: &str) -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "fw-process-{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// `framewire serve` on the default paths, started by a shell with umask 000: everything it
/// makes there is its user's alone, and a clean stop leaves `status=stopped`.
#[test]
fn default_control_files_are_private_even_with_umask_000() {
    let xdg = temp_dir("umask");
    let exe = env!("CARGO_BIN_EXE_framewire");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("umask 000; exec \"$0\" serve --scene idle --resolution 64x48 --port 0 --daylight-port 0 --no-http --no-touch --no-sensors")
        .arg(exe)
        .env("XDG_RUNTIME_DIR", &xdg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting framewire serve");
    let dir = xdg.join("framewire");
    let (sock, status) = (dir.join("control.sock"), dir.join("status"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(sock.exists() && status.exists()) {
        assert!(
            Instant::now() < deadline,
            "no control socket and status file"
        );
        assert!(child.try_wait().unwrap().is_none(), "the server stopped");
        std::thread::sleep(Duration::from_millis(20));
    }
    let modes = (mode(&dir), mode(&sock), mode(&status));
    // The client finds it in the same place.
    let ctl = Command::new(exe)
        .args(["ctl", "status"])
        .env("XDG_RUNTIME_DIR", &xdg)
        .output()
        .unwrap();
    // `framewire latency | head -1`: a reader that has gone ends it quietly, not in a panic.
    let mut fds = [0; 2];
    // SAFETY: a new pipe; its read end is closed at once, its write end handed to the child.
    let write_end = unsafe {
        assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
        libc::close(fds[0]);
        std::os::fd::OwnedFd::from_raw_fd(fds[1])
    };
    let latency = Command::new(exe)
        .arg("latency")
        .env("XDG_RUNTIME_DIR", &xdg)
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
        .wait_with_output()
        .unwrap();
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let exit = child.wait().unwrap();
    let text = std::fs::read_to_string(&status).unwrap_or_default();
    let sock_left = sock.exists();
    let _ = std::fs::remove_dir_all(&xdg);
    assert_eq!(
        modes,
        (0o700, 0o600, 0o600),
        "directory, socket, status file"
    );
    assert_eq!(
        String::from_utf8_lossy(&ctl.stdout),
        "OK running\n",
        "{}",
        String::from_utf8_lossy(&ctl.stderr)
    );
    let stderr = String::from_utf8_lossy(&latency.stderr);
    assert!(
        latency.status.success() && stderr.is_empty(),
        "latency into a closed pipe: {}: {stderr}",
        latency.status
    );
    assert!(exit.success(), "{exit}");
    assert!(text.starts_with("status=stopped\n"), "{text}");
    assert!(!sock_left, "the control socket outlived the server");
}

/// A runtime directory someone else prepared (a symlink to theirs) is refused by the server and
/// by the client, with the reason.
#[test]
fn a_runtime_directory_that_is_a_symlink_is_refused() {
    let xdg = temp_dir("symlink");
    let theirs = xdg.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::symlink(&theirs, xdg.join("framewire")).unwrap();
    let exe = env!("CARGO_BIN_EXE_framewire");
    let mut serve = Command::new(exe)
        .args(["serve", "--scene", "idle", "--resolution", "64x48"])
        .args([
            "--port",
            "0",
            "--daylight-port",
            "0",
            "--no-http",
            "--no-touch",
        ])
        .arg("--no-sensors")
        .env("XDG_RUNTIME_DIR", &xdg)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // It must stop by itself; if it serves instead, stop it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while serve.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = serve.kill();
    let serve = serve.wait_with_output().unwrap();
    let ctl = Command::new(exe)
        .args(["ctl", "status"])
        .env("XDG_RUNTIME_DIR", &xdg)
        .output()
        .unwrap();
    let left: Vec<_> = std::fs::read_dir(&theirs).unwrap().collect();
    let _ = std::fs::remove_dir_all(&xdg);
    let err = String::from_utf8_lossy(&serve.stderr);
    assert!(!serve.status.success(), "the server ran: {err}");
    assert!(err.contains("is a symbolic link"), "{err}");
    assert!(left.is_empty(), "the server wrote into the other directory");
    let err = String::from_utf8_lossy(&ctl.stderr);
    assert!(!ctl.status.success());
    assert!(err.contains("is a symbolic link"), "{err}");
}

/// The listening sockets of a process as (address in /proc/net/tcp form, port): IPv4 only.
fn listening(port: u16) -> Vec<String> {
    let text = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (addr, p) = f.get(1)?.split_once(':')?;
            // State 0A: listening.
            (f.get(3) == Some(&"0A") && u16::from_str_radix(p, 16).ok() == Some(port))
                .then(|| addr.to_string())
        })
        .collect()
}

/// The README's remote recipe, `--bind 0.0.0.0 --token SECRET`, starts (it was refused: the
/// Daylight listener followed `--bind` and needed `--insecure`): the HTTP port (HTTPS there)
/// leaves loopback; framewire v1 over plain TCP (unencrypted), the Daylight and sensor ports
/// stay on it.
#[test]
fn the_remote_recipe_starts_and_keeps_unauthenticated_ports_on_loopback() {
    let dir = temp_dir("remote");
    let ([v1, daylight, sensor, http], ports) = common::listener_ports();
    let mut child = Command::new(env!("CARGO_BIN_EXE_framewire"))
        .args(["serve", "--scene", "idle", "--resolution", "64x48"])
        .args(["--bind", "0.0.0.0", "--token", "remote-secret"])
        .args(&ports)
        .arg("--no-touch")
        .env("XDG_RUNTIME_DIR", &dir)
        .env("FRAMEWIRE_CONFIG_DIR", dir.join("config"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("serve exited ({status}): {err}");
        }
        got = [v1, http, daylight, sensor].map(listening).to_vec();
        if got.iter().all(|l| !l.is_empty()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    const ANY: &str = "00000000";
    const LOOPBACK: &str = "0100007F";
    assert_eq!(
        got,
        [vec![LOOPBACK], vec![ANY], vec![LOOPBACK], vec![LOOPBACK]],
        "v1, HTTP, Daylight, sensor"
    );
}

/// Each thread of a process by name, with its scheduling policy and realtime priority
/// (`/proc/PID/task/TID/stat` fields 41 and 40).
fn thread_policies(pid: u32) -> Vec<(String, u32, u32)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| {
            let t = t.ok()?.path();
            let name = std::fs::read_to_string(t.join("comm")).ok()?;
            let stat = std::fs::read_to_string(t.join("stat")).ok()?;
            // After the name in parentheses, fields count from 3.
            let f: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            Some((
                name.trim().to_string(),
                f[41 - 3].parse().ok()?,
                f[40 - 3].parse().ok()?,
            ))
        })
        .collect()
}

/// Waits until the process's threads satisfy `ready` (say, a thread of a name runs at the
/// policy asked: a thread shows in /proc before its first statement has run), then returns
/// them. Gives up after 10 s, and returns what it saw last.
fn wait_for_threads(
    child: &mut std::process::Child,
    ready: impl Fn(&[(String, u32, u32)]) -> bool,
) -> Vec<(String, u32, u32)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let threads = thread_policies(child.id());
        if ready(&threads) || Instant::now() > deadline {
            return threads;
        }
        assert!(child.try_wait().unwrap().is_none(), "the process exited");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Stops a child and returns what it wrote to stderr.
fn stop(mut child: std::process::Child) -> String {
    use std::io::Read;
    let _ = child.kill();
    let _ = child.wait();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).unwrap();
    }
    err
}

/// Whether this process may take realtime priority 7 (root, CAP_SYS_NICE, or RLIMIT_RTPRIO,
/// in a cgroup that allows it): tried on a thread of its own.
fn realtime_allowed() -> bool {
    std::thread::spawn(|| {
        let param = libc::sched_param { sched_priority: 7 };
        // SAFETY: pid 0 is this throwaway thread; param is a valid sched_param.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
    })
    .join()
    .unwrap()
}

/// `--realtime=7`: the server's capture thread, shared-memory export thread and runtime
/// workers (as many as it has: the blocking pool's thread writing the status file is not
/// one), and a viewer's thread over TCP and over shared memory, run under SCHED_FIFO at 7.
/// Where this process may not take it, the server says why and how to allow it, and its
/// threads stay at normal priority. As root, a server started as nobody (RLIMIT_RTPRIO 0) is
/// refused, says so, and goes on serving.
#[test]
fn realtime_is_taken_by_the_stream_threads_or_refused_with_its_remedy() {
    const FIFO: u32 = 1;
    type Threads = Vec<(String, u32, u32)>;
    let dir = temp_dir("realtime");
    // Writable by nobody, below.
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let port = common::free_port();
    let shm = format!("fw-rt-{}", std::process::id());
    let allowed = realtime_allowed();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let is_tokio = |t: &(String, u32, u32)| t.0.starts_with("tokio-r");
    let stream = ["framewire-captu", "framewire-shm-e"];
    let serve = |user: Option<u32>, tag: &str| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_framewire"));
        cmd.args(["serve", "--scene", "scroll", "--resolution", "64x48"])
            .args(["--realtime=7", "--no-http", "--no-touch", "--no-sensors"])
            .args(["--daylight-port", "0", "--port"])
            .arg(if user.is_some() {
                "0".to_string()
            } else {
                port.to_string()
            })
            .arg("--control-socket")
            .arg(dir.join(format!("{tag}.sock")))
            .arg("--status-file")
            .arg(dir.join(format!("{tag}.status")))
            .env("FRAMEWIRE_CONFIG_DIR", dir.join(tag))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if user.is_none() {
            cmd.args(["--shm-export", &shm]);
        }
        if let Some(uid) = user {
            // SAFETY: setrlimit, setgroups, setgid and setuid are async-signal-safe.
            unsafe {
                cmd.pre_exec(move || {
                    let none = libc::rlimit {
                        rlim_cur: 0,
                        rlim_max: 0,
                    };
                    let ok = libc::setrlimit(libc::RLIMIT_RTPRIO, &none) == 0
                        && libc::setgroups(0, std::ptr::null()) == 0
                        && libc::setgid(uid) == 0
                        && libc::setuid(uid) == 0;
                    if ok {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        cmd.spawn().expect("starting framewire serve")
    };

    let mut server = serve(None, "own");
    // A thread shows in /proc before its first statement has run: wait for the priority.
    let threads = wait_for_threads(&mut server, |threads| {
        let named = |n: &str| {
            threads
                .iter()
                .any(|t| t.0 == n && (!allowed || t.1 == FIFO))
        };
        let fifo_workers = threads
            .iter()
            .filter(|t| is_tokio(t) && t.1 == FIFO)
            .count();
        stream.iter().all(|n| named(n)) && (!allowed || fifo_workers >= workers)
    });
    let viewer = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_framewire"))
            .args(["view", "--headless", "--realtime=7", "--interval", "100"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    wait_listening(port);
    let mut tcp = viewer(&["--port", &port.to_string()]);
    let tcp_threads = wait_for_threads(&mut tcp, |threads| {
        threads
            .iter()
            .any(|t| t.0 == "framewire" && (!allowed || t.1 == FIFO))
    });
    let tcp_err = stop(tcp);
    // Over shared memory the reader is a thread of the runtime's blocking pool.
    let mut mem = viewer(&["--shm", &shm]);
    let mem_threads = wait_for_threads(&mut mem, |threads: &[(String, u32, u32)]| {
        threads.iter().any(|t| t.0 != "framewire" && t.1 == FIFO) || !allowed
    });
    let mem_err = stop(mem);
    let err = stop(server);
    let main_of = |threads: &Threads| threads.iter().find(|t| t.0 == "framewire").cloned();
    let policy = |t: Option<(String, u32, u32)>| t.map(|t| (t.1, t.2));
    let fifo_workers = threads
        .iter()
        .filter(|t| is_tokio(t) && t.1 == FIFO)
        .count();
    if allowed {
        for n in stream {
            let t = threads.iter().find(|t| t.0 == n).cloned();
            assert_eq!(policy(t), Some((FIFO, 7)), "{n} in {threads:?}: {err}");
        }
        assert_eq!(fifo_workers, workers, "{threads:?}");
        assert_eq!(policy(main_of(&tcp_threads)), Some((FIFO, 7)), "{tcp_err}");
        let reader = mem_threads
            .iter()
            .find(|t| t.0 != "framewire" && t.1 == FIFO);
        assert_eq!(reader.map(|t| t.2), Some(7), "{mem_threads:?}: {mem_err}");
        assert!(!err.contains("refused"), "{err}");
    } else {
        assert!(err.contains("realtime priority 7 refused"), "{err}");
        assert!(threads.iter().all(|t| t.1 != FIFO), "{threads:?}");
        assert!(tcp_threads.iter().chain(&mem_threads).all(|t| t.1 != FIFO));
    }
    // SAFETY: geteuid only reads.
    if !allowed || unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: a server started as another user is not tried");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }

    let mut server = serve(Some(65534), "nobody");
    let threads = wait_for_threads(&mut server, |threads| {
        threads.iter().any(|t| t.0 == "framewire-captu")
    });
    // Serving: its control socket answers (its owner, who alone may ask).
    let mut latency = Command::new(env!("CARGO_BIN_EXE_framewire"));
    latency
        .args(["latency", "--json", "--control-socket"])
        .arg(dir.join("nobody.sock"));
    // SAFETY: setuid is async-signal-safe.
    unsafe {
        latency.pre_exec(|| match libc::setuid(65534) {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        });
    }
    let latency = latency.output().unwrap();
    let err = stop(server);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        latency.status.success(),
        "{}",
        String::from_utf8_lossy(&latency.stderr)
    );
    assert!(
        err.contains("realtime priority 7 refused")
            && err.contains("CAP_SYS_NICE")
            && err.contains("ulimit -r")
            && err.contains("going on at normal priority"),
        "{err}"
    );
    for t in &threads {
        assert_eq!((t.1, t.2), (0, 0), "{t:?}");
    }
}

/// Waits (10 s at most) until something listens on the TCP port.
fn wait_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while listening(port).is_empty() {
        assert!(Instant::now() < deadline, "nothing listened on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a process catches a signal (`SigCgt` in `/proc/PID/status`).
fn catches(pid: u32, signal: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .unwrap_or(0);
    mask & (1 << (signal - 1)) != 0
}

/// SIGUSR1 empties a viewer's timing windows (a script marks where its measured period
/// starts): the viewer says so, keeps running, and its next line's timings start afresh.
#[test]
fn a_viewer_empties_its_timing_windows_on_sigusr1() {
    let dir = temp_dir("usr1");
    let port = common::free_port();
    let server = Command::new(env!("CARGO_BIN_EXE_framewire"))
        .args(["serve", "--scene", "scroll", "--resolution", "64x48"])
        .args([
            "--no-http",
            "--no-touch",
            "--no-sensors",
            "--daylight-port",
            "0",
        ])
        .args(["--port", &port.to_string(), "--control-socket"])
        .arg(dir.join("ctl.sock"))
        .arg("--status-file")
        .arg(dir.join("status"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_listening(port);
    let mut viewer = Command::new(env!("CARGO_BIN_EXE_framewire"))
        .args([
            "view",
            "--headless",
            "--interval",
            "0.1",
            "--port",
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !catches(viewer.id(), libc::SIGUSR1) {
        assert!(viewer.try_wait().unwrap().is_none(), "the viewer exited");
        assert!(Instant::now() < deadline, "the viewer never caught SIGUSR1");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill sends a signal to our own child.
    assert_eq!(unsafe { libc::kill(viewer.id() as i32, libc::SIGUSR1) }, 0);
    std::thread::sleep(Duration::from_millis(300));
    let alive = viewer.try_wait().unwrap().is_none();
    let err = stop(viewer);
    stop(server);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(alive, "SIGUSR1 ended the viewer: {err}");
    assert!(err.contains("timing windows emptied (SIGUSR1)"), "{err}");
}
