//! A private Xvfb screen for tests and benchmarks: Xvfb picks a free display number itself
//! (`-displayfd`), and `-noreset` keeps it from resetting when its last client leaves.

use std::io::BufRead;
use std::process::{Child, ChildStdout, Command, Stdio};

pub struct Xvfb {
    child: Child,
    pub display: String,
    /// Kept open while Xvfb runs: a closed pipe would kill it with SIGPIPE.
    _out: std::io::BufReader<ChildStdout>,
}

impl Xvfb {
    /// Starts a `width`×`height`×24 screen; an error when Xvfb is missing or fails.
    pub fn start(width: u32, height: u32) -> Result<Xvfb, String> {
        let mut child = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                &format!("{width}x{height}x24"),
            ])
            .args(["-noreset", "-nolisten", "tcp"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!("starting Xvfb (Debian package xvfb; `make setup` installs it): {e}")
            })?;
        let mut out = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        out.read_line(&mut line)
            .map_err(|e| format!("reading Xvfb's display: {e}"))?;
        if line.trim().is_empty() {
            let _ = child.kill();
            return Err("Xvfb did not report a display".into());
        }
        Ok(Xvfb {
            child,
            display: format!(":{}", line.trim()),
            _out: out,
        })
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
