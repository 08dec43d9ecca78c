//! `--adb`: the Daylight tablet over USB. Sets up `adb reverse` for the Daylight port and the
//! touch port, checks every 2 s that the device is there and its tunnels are up, and sets them
//! up again when it comes back (unplugged, rebooted, `adb kill-server`). Says what is wrong
//! when adb or the device is missing, once per change, not every poll.
//!
//! Display settings, as the original Daylight host does them: when the tablet connects, its
//! `screen_brightness` and `screen_brightness_amber_rate` become the current brightness and
//! warmth; every warmth change is written with `adb shell settings put system
//! screen_brightness_amber_rate N`, because the app's own write of that protected setting
//! usually fails. Brightness goes through the app (its window brightness).

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use framewire_server::ViewerCommand;

/// Stops the watcher when dropped.
pub struct AdbWatch {
    stop: Arc<AtomicBool>,
}

impl Drop for AdbWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn adb(args: &[&str]) -> Result<String, String> {
    let out = Command::new("adb").args(args).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            "adb not found: install Android's platform tools (Debian: `apt install adb`) and put adb on PATH".to_string()
        } else {
            format!("running adb: {e}")
        }
    })?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!(
            "adb {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The state of the device, as a sentence for the user, and whether tunnels can be set up.
fn device_state() -> Result<(), String> {
    let list = adb(&["devices"])?;
    let devices: Vec<&str> = list
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .collect();
    match devices.as_slice() {
        [] => Err("no Android device: connect the tablet by USB and enable USB debugging".into()),
        [one] if one.ends_with("unauthorized") => Err(
            "the tablet has not authorised this computer: accept the USB debugging prompt on it"
                .into(),
        ),
        [one] if one.ends_with("offline") => {
            Err("the tablet is offline: reconnect the cable".into())
        }
        [one] if one.ends_with("device") => Ok(()),
        [_] => Err(format!("unexpected adb state: {}", devices[0])),
        _ => Err(
            "more than one Android device: leave only the tablet connected (or set ANDROID_SERIAL)"
                .into(),
        ),
    }
}

/// Whether `adb reverse --list` shows every port.
fn tunnels_up(ports: &[u16]) -> bool {
    adb(&["reverse", "--list"])
        .map(|l| {
            ports
                .iter()
                .all(|p| l.contains(&format!("tcp:{p} tcp:{p}")))
        })
        .unwrap_or(false)
}

fn set_up(ports: &[u16]) -> Result<(), String> {
    for p in ports {
        let spec = format!("tcp:{p}");
        adb(&["reverse", &spec, &spec])?;
    }
    Ok(())
}

/// The Android system setting that holds the amber (warmth) level.
const AMBER: &str = "screen_brightness_amber_rate";

/// Where the watcher reports what the tablet says and hears of display changes.
pub struct DisplayLink {
    /// Called with the tablet's brightness and amber rate when it connects.
    pub adopt: Box<dyn Fn(Option<i64>, Option<i64>) + Send>,
    pub commands: tokio::sync::broadcast::Receiver<ViewerCommand>,
}

fn read_setting(name: &str) -> Option<i64> {
    adb(&["shell", "settings", "get", "system", name])
        .ok()
        .and_then(|v| v.trim().parse().ok())
}

/// Reads the tablet's brightness and warmth into the server's settings.
fn adopt_device(adopt: &dyn Fn(Option<i64>, Option<i64>)) {
    let (b, a) = (read_setting("screen_brightness"), read_setting(AMBER));
    adopt(b, a);
    let show = |v: Option<i64>| v.map_or("unknown".to_string(), |v| v.to_string());
    println!("adb: tablet brightness {}, amber rate {}", show(b), show(a));
}

/// Writes each warmth change to the tablet, on its own thread (adb takes tens of ms).
fn write_warmth(mut commands: tokio::sync::broadcast::Receiver<ViewerCommand>) {
    use tokio::sync::broadcast::error::RecvError;
    let mut failing = false;
    loop {
        let v = match commands.blocking_recv() {
            Ok(ViewerCommand::Warmth(v)) => v,
            Ok(_) | Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        let value = v.to_string();
        match adb(&["shell", "settings", "put", "system", AMBER, &value]) {
            Ok(_) => failing = false,
            Err(e) if !failing => {
                eprintln!("adb: could not set the warmth on the tablet: {e}");
                failing = true;
            }
            Err(_) => {}
        }
    }
}

pub fn spawn(ports: Vec<u16>, display: DisplayLink) -> anyhow::Result<AdbWatch> {
    if ports.is_empty() {
        anyhow::bail!("--adb needs the Daylight port (not --no-daylight)");
    }
    if let Err(e) = adb(&["version"]) {
        anyhow::bail!("{e}");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let DisplayLink { adopt, commands } = display;
    std::thread::Builder::new()
        .name("framewire-adb-warmth".into())
        .spawn(move || write_warmth(commands))?;
    std::thread::Builder::new()
        .name("framewire-adb".into())
        .spawn(move || {
            let mut last: Option<String> = None;
            while !s.load(Ordering::Relaxed) {
                let now = match device_state() {
                    Ok(()) if tunnels_up(&ports) => "ok".to_string(),
                    Ok(()) => match set_up(&ports) {
                        Ok(()) => {
                            let list: Vec<String> = ports.iter().map(|p| p.to_string()).collect();
                            println!(
                                "adb: tablet connected; reverse tunnels set up for ports {}",
                                list.join(", ")
                            );
                            "ok".to_string()
                        }
                        Err(e) => e,
                    },
                    Err(e) => e,
                };
                if last.as_deref() != Some(&now) && now != "ok" {
                    eprintln!("adb: {now}");
                }
                if now == "ok" && last.as_deref() != Some("ok") {
                    adopt_device(&*adopt);
                }
                last = Some(now);
                std::thread::sleep(Duration::from_secs(2));
            }
        })?;
    Ok(AdbWatch { stop })
}
