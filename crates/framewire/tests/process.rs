//! What the `framewire` process does for itself at start.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
