//! The Unix control socket, compatible with the Daylight host's: one newline-terminated
//! command (≤ 255 bytes) per connection, verb case-insensitive, reply `OK …` or `ERR …` and a
//! newline (multi-line replies: `OK`, then `key=value` lines), then the socket closes.
//! framewire adds `REPORT` (the full latency report as JSON after `OK`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use framewire_capture::Resolution;
use framewire_codec::tune::{Tuning, PROFILES};
use framewire_telemetry::format_daylight_latency;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tracing::{info, warn};

use crate::report::{build_report, status_lines};
use crate::state::{lock, Shared, ViewerCommand};

pub const MAX_LINE: usize = 255;

/// The default control socket path: `$XDG_RUNTIME_DIR/framewire.sock`, else
/// `/tmp/framewire-$UID.sock`.
pub fn default_socket_path() -> PathBuf {
    runtime_dir().join(format!("framewire{}.sock", uid_suffix()))
}

/// The default status file path, beside the socket.
pub fn default_status_path() -> PathBuf {
    runtime_dir().join(format!("framewire{}.status", uid_suffix()))
}

fn runtime_dir() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

fn uid_suffix() -> String {
    if std::env::var_os("XDG_RUNTIME_DIR").is_some() {
        String::new()
    } else {
        // SAFETY: getuid has no preconditions and cannot fail.
        format!("-{}", unsafe { libc::getuid() })
    }
}

pub fn bind(path: &Path) -> anyhow::Result<UnixListener> {
    if path.exists() {
        // A socket file left by a dead server: remove it, but never steal a live one.
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            anyhow::bail!(
                "another framewire server is answering on {}; stop it or pass --control-socket",
                path.display()
            );
        }
        std::fs::remove_file(path)
            .with_context(|| format!("removing stale socket {}", path.display()))?;
    }
    UnixListener::bind(path)
        .with_context(|| format!("binding the control socket {}", path.display()))
}

pub async fn serve(l: UnixListener, shared: Arc<Shared>, path: PathBuf) {
    info!(path = %path.display(), "control socket ready");
    loop {
        let Ok((s, _)) = l.accept().await else {
            shared.counters.inc("control_accept_errors");
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            if let Err(e) = handle(s, &shared).await {
                shared.counters.inc("control_errors");
                warn!(error = %e, "control request failed");
            }
        });
    }
}

async fn handle(s: UnixStream, shared: &Shared) -> anyhow::Result<()> {
    let (rd, mut wr) = s.into_split();
    let mut line = String::new();
    let mut rd = BufReader::new(rd.take(MAX_LINE as u64 + 1));
    let read = tokio::time::timeout(Duration::from_secs(2), rd.read_line(&mut line)).await;
    let reply = match read {
        Err(_) => "ERR timeout waiting for a command\n".to_string(),
        Ok(Err(e)) => format!("ERR {e}\n"),
        Ok(Ok(_)) if line.len() > MAX_LINE => "ERR command longer than 255 bytes\n".to_string(),
        Ok(Ok(_)) => execute(line.trim(), shared),
    };
    wr.write_all(reply.as_bytes()).await?;
    wr.shutdown().await?;
    Ok(())
}

fn parse_u8(arg: Option<&str>, what: &str) -> Result<Option<u8>, String> {
    match arg {
        None => Ok(None),
        Some(a) => a
            .parse::<u8>()
            .map(Some)
            .map_err(|_| format!("ERR {what} must be 0-255, got {a:?}\n")),
    }
}

/// Executes one control command and returns the reply text (ending in a newline).
pub(crate) fn execute(line: &str, shared: &Shared) -> String {
    let mut it = line.split_whitespace();
    let verb = it.next().unwrap_or("").to_ascii_uppercase();
    let arg = it.next();
    let send = |c| {
        let _ = shared.commands.send(c);
    };
    match verb.as_str() {
        "BRIGHTNESS" | "WARMTH" => {
            let v = match parse_u8(arg, &verb.to_ascii_lowercase()) {
                Ok(v) => v,
                Err(e) => return e,
            };
            let mut s = lock(&shared.settings);
            let slot = if verb == "BRIGHTNESS" { &mut s.brightness } else { &mut s.warmth };
            if let Some(v) = v {
                *slot = v;
                send(if verb == "BRIGHTNESS" { ViewerCommand::Brightness(v) } else { ViewerCommand::Warmth(v) });
            }
            format!("OK {}={}\n", verb.to_ascii_lowercase(), slot)
        }
        "BACKLIGHT" => {
            let mut s = lock(&shared.settings);
            let (on, code) = match arg.map(str::to_ascii_lowercase).as_deref() {
                Some("on") => (true, 1),
                Some("off") => (false, 0),
                Some("toggle") | None => (!s.backlight_on, 2),
                Some(other) => return format!("ERR backlight takes on, off or toggle, got {other:?}\n"),
            };
            s.backlight_on = on;
            send(ViewerCommand::Backlight(code));
            format!("OK backlight={}\n", if on { "on" } else { "off" })
        }
        "RESOLUTION" => match arg {
            None => {
                let (w, h) = *shared.resolution.borrow();
                format!("OK resolution={w}x{h}\n")
            }
            Some(a) => match a.parse::<Resolution>() {
                Ok(r) => {
                    shared.resolution.send_replace((r.width, r.height));
                    format!("OK resolution={r}\n")
                }
                Err(e) => format!("ERR {e}\n"),
            },
        },
        "START" | "STOP" => {
            lock(&shared.settings).running = verb == "START";
            format!("OK {}\n", if verb == "START" { "running" } else { "stopped" })
        }
        "RESTART" => {
            shared.resolution.send_modify(|_| {});
            "OK restarting capture\n".to_string()
        }
        "RECONNECT" => "OK viewers reconnect by themselves; nothing to do for TCP viewers\n".to_string(),
        "SHARPEN" | "CONTRAST" | "GAMMA" => {
            let which = verb.to_ascii_lowercase();
            let mut s = lock(&shared.settings);
            if let Some(a) = arg {
                match Tuning::parse_setting(&which, a) {
                    Ok(v) => match verb.as_str() {
                        "SHARPEN" => s.tuning.sharpen = v,
                        "CONTRAST" => s.tuning.contrast = v,
                        _ => s.tuning.gamma = v,
                    },
                    Err(e) => return format!("ERR {e}\n"),
                }
                info!(tuning = %s.tuning, "display tuning changed");
            }
            format!("OK {}\n", s.tuning)
        }
        "PROFILE" => {
            let mut s = lock(&shared.settings);
            if let Some(a) = arg {
                match Tuning::profile(a) {
                    Some(t) => s.tuning = t,
                    None => {
                        let names: Vec<&str> = PROFILES.iter().map(|(n, _)| *n).collect();
                        return format!("ERR no profile {a:?}; profiles: {}\n", names.join(" "));
                    }
                }
                info!(tuning = %s.tuning, "display profile changed");
            }
            let name = s.tuning.profile_name().unwrap_or("custom");
            format!("OK profile={name} {}\n", s.tuning)
        }
        "FONTSMOOTHING" => "ERR fontsmoothing is a macOS system setting; on X11 each application's fontconfig decides, so framewire leaves it alone (use SHARPEN and CONTRAST)\n".to_string(),
        "LATENCY" => format_daylight_latency(&build_report(shared)),
        "STATUS" => {
            let mut s = String::from("OK\n");
            for (k, v) in status_lines(shared) {
                s.push_str(&format!("{k}={v}\n"));
            }
            s
        }
        "HEALTH" => {
            let frames = shared.frames.borrow().as_ref().map(|f| f.seq).unwrap_or(0);
            if frames > 0 {
                format!("OK healthy frames={frames}\n")
            } else {
                "ERR no frame captured yet\n".to_string()
            }
        }
        "DEVICE" => {
            let (Some(target), Some(cmd)) = (arg, it.next()) else {
                return "ERR usage: DEVICE <all|serial|location|peer> <COMMAND>\n".to_string();
            };
            let cmd = cmd.to_ascii_uppercase();
            if !crate::devices::valid_command(&cmd) {
                return format!("ERR {cmd:?} is not a device command (A-Z, 0-9, _; at most 32)\n");
            }
            let sent = shared.devices.send(target, &cmd);
            shared.counters.inc("device_commands");
            match sent.matched {
                0 => format!("ERR no connected device matches {target:?}\n"),
                n if sent.full > 0 => format!(
                    "OK sent {cmd} to {} of {n} devices; {} are not reading their commands\n",
                    n - sent.full,
                    sent.full
                ),
                n => format!("OK sent {cmd} to {n} devices\n"),
            }
        }
        "REPORT" => match serde_json::to_string(&build_report(shared)) {
            Ok(j) => format!("OK\n{j}\n"),
            Err(e) => format!("ERR {e}\n"),
        },
        "" => "ERR empty command\n".to_string(),
        other => format!(
            "ERR unknown command {other:?}; verbs: BRIGHTNESS WARMTH BACKLIGHT RESOLUTION START STOP STATUS RESTART RECONNECT SHARPEN CONTRAST GAMMA PROFILE LATENCY HEALTH REPORT DEVICE\n"
        ),
    }
}

/// Sends one command to a control socket and returns the whole reply.
pub async fn request(path: &Path, line: &str) -> anyhow::Result<String> {
    let mut s = UnixStream::connect(path)
        .await
        .with_context(|| format!("no framewire server answers on {} (start one with `framewire serve` or `framewire demo`, or pass --control-socket)", path.display()))?;
    s.write_all(format!("{line}\n").as_bytes()).await?;
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut out))
        .await
        .context("the server did not reply within 5 s")??;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Settings;

    fn shared() -> Arc<Shared> {
        Shared::new(
            Settings {
                brightness: 128,
                warmth: 128,
                backlight_on: true,
                running: true,
                tuning: Default::default(),
            },
            (800, 600),
            0,
        )
    }

    #[test]
    fn verbs_reply_in_the_reference_format() {
        let s = shared();
        let mut rx = s.commands.subscribe();
        assert_eq!(execute("brightness 200", &s), "OK brightness=200\n");
        assert_eq!(rx.try_recv().unwrap(), ViewerCommand::Brightness(200));
        assert_eq!(execute("BRIGHTNESS", &s), "OK brightness=200\n");
        assert!(execute("BRIGHTNESS 300", &s).starts_with("ERR"));
        assert_eq!(execute("backlight off", &s), "OK backlight=off\n");
        assert_eq!(execute("resolution cozy", &s), "OK resolution=800x600\n");
        assert!(execute("resolution 1x1", &s).starts_with("ERR"));
        assert!(execute("bogus", &s).starts_with("ERR unknown command"));
        let lat = execute("LATENCY", &s);
        assert!(lat.starts_with("OK\nfps="));
        assert!(lat.contains("\nskipped_frames=0\n"));
        let st = execute("status", &s);
        for key in [
            "status",
            "resolution",
            "fps",
            "bandwidth_mbps",
            "clients",
            "total_frames",
            "jitter_ms",
            "rtt_avg_ms",
            "rtt_p95_ms",
            "pid",
            "updated",
        ] {
            assert!(
                st.contains(&format!("\n{key}=")),
                "STATUS lacks {key}: {st}"
            );
        }
        assert!(execute("HEALTH", &s).starts_with("ERR"));
    }

    #[test]
    fn tuning_verbs_change_the_live_settings() {
        let s = shared();
        // Each verb changes its own setting and reports all three.
        for (cmd, reply) in [
            ("sharpen", "sharpen=0.00 contrast=1.00 gamma=1.00"),
            ("SHARPEN 0.5", "sharpen=0.50 contrast=1.00 gamma=1.00"),
            ("contrast 1.25", "sharpen=0.50 contrast=1.25 gamma=1.00"),
            ("gamma 2.2", "sharpen=0.50 contrast=1.25 gamma=2.20"),
        ] {
            assert_eq!(execute(cmd, &s), format!("OK {reply}\n"), "{cmd}");
        }
        assert_eq!(
            lock(&s.settings).tuning,
            Tuning {
                sharpen: 50,
                contrast: 125,
                gamma: 220
            }
        );
        // Out of range or not a number: refused, and nothing changes.
        assert!(execute("gamma 0", &s).starts_with("ERR gamma must be from 0.2 to 5"));
        assert!(execute("contrast high", &s).starts_with("ERR contrast must be a number"));
        assert_eq!(lock(&s.settings).tuning.gamma, 220);
        assert_eq!(
            execute("profile", &s),
            "OK profile=custom sharpen=0.50 contrast=1.25 gamma=2.20\n"
        );
        assert_eq!(
            execute("PROFILE ink", &s),
            "OK profile=ink sharpen=1.00 contrast=1.40 gamma=0.85\n"
        );
        assert!(execute("profile glossy", &s).contains("profiles: neutral crisp ink"));
        assert_eq!(lock(&s.settings).tuning, Tuning::profile("ink").unwrap());
        assert!(execute("fontsmoothing", &s).starts_with("ERR"));
    }
}
