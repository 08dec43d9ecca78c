//! The control verbs: one command line in, one reply out. The Daylight verbs answer exactly
//! as the original host does; framewire's own are `GAMMA`, `PROFILE`, `REPORT` and `DEVICE`.

use framewire_capture::Resolution;
use framewire_codec::tune::{Tuning, PROFILES};
use framewire_mirror::{Backlight, Mirror, ViewerCommand};
use framewire_sensors::{valid_command, Sensors};
use framewire_telemetry::format_daylight_latency;
use tracing::info;

use crate::Target;

/// Every verb, for the reply to an unknown one.
const VERBS: &str = "BRIGHTNESS WARMTH BACKLIGHT RESOLUTION START STOP STATUS RESTART RECONNECT SHARPEN CONTRAST FONTSMOOTHING LATENCY HEALTH GAMMA PROFILE REPORT DEVICE";

/// Executes one control command and returns the reply text (ending in a newline). The
/// Daylight verbs answer exactly as the original host does (`OK 255`, `OK on`,
/// `OK comfortable (no change)`, …); what framewire adds is in extra `key=value` lines or in
/// its own verbs, never in place of the original's words.
pub fn execute(line: &str, target: &Target) -> String {
    let mirror = &*target.mirror;
    let (verb, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let verb = verb.to_ascii_uppercase();
    let rest = rest.trim();
    let arg = (!rest.is_empty()).then_some(rest);
    let reply = match verb.as_str() {
        "BRIGHTNESS" | "WARMTH" => level(&verb, arg, mirror),
        "BACKLIGHT" => backlight(arg, mirror),
        "RESOLUTION" => resolution(arg, mirror),
        "START" | "STOP" | "RESTART" | "RECONNECT" | "STATUS" => running_verb(&verb, mirror),
        "SHARPEN" | "CONTRAST" => daylight_tuning(&verb, arg, mirror),
        "GAMMA" | "PROFILE" => framewire_tuning(&verb, arg, mirror),
        "FONTSMOOTHING" => match arg.map(str::to_ascii_lowercase).as_deref() {
            None | Some("on") => "OK on".to_string(),
            Some("off") => "ERR font smoothing is each X11 application's own (fontconfig); framewire cannot turn it off (use SHARPEN and CONTRAST)".to_string(),
            Some(_) => "ERR use on or off".to_string(),
        },
        "LATENCY" if !mirror.settings().running => "ERR not running".to_string(),
        "LATENCY" => format_daylight_latency(&mirror.report())
            .trim_end()
            .to_string(),
        "HEALTH" => health(mirror),
        "DEVICE" => device(arg, target.sensors.as_ref()),
        "REPORT" => match serde_json::to_string(&mirror.report()) {
            Ok(j) => format!("OK\n{j}"),
            Err(e) => format!("ERR {e}"),
        },
        "" => "ERR empty command".to_string(),
        _ => format!("ERR unknown command\nverbs={VERBS}"),
    };
    reply + "\n"
}

/// `BRIGHTNESS [n]`, `WARMTH [n]`: clamped to 0–255, reply `OK <value>`.
fn level(verb: &str, arg: Option<&str>, mirror: &Mirror) -> String {
    let mut s = mirror.settings_mut();
    let brightness = verb == "BRIGHTNESS";
    let Some(a) = arg else {
        return format!("OK {}", if brightness { s.brightness } else { s.warmth });
    };
    let Ok(v) = a.parse::<i64>() else {
        return format!(
            "ERR {} must be a whole number 0-255, got {a:?}",
            verb.to_ascii_lowercase()
        );
    };
    let c = if brightness {
        s.set_brightness(v)
    } else {
        s.set_warmth(v)
    };
    drop(s);
    mirror.send_command(c);
    let (ViewerCommand::Brightness(v) | ViewerCommand::Warmth(v) | ViewerCommand::Backlight(v)) = c;
    format!("OK {v}")
}

/// `BACKLIGHT [on|off|toggle]`: reply `OK on` or `OK off`.
fn backlight(arg: Option<&str>, mirror: &Mirror) -> String {
    let b = match arg.map(str::to_ascii_lowercase).as_deref() {
        Some("on") => Some(Backlight::On),
        Some("off") => Some(Backlight::Off),
        Some("toggle") => Some(Backlight::Toggle),
        // The original answers the current state to anything else.
        _ => None,
    };
    let mut s = mirror.settings_mut();
    let c = b.and_then(|b| s.set_backlight(b));
    let on = s.backlight_on;
    drop(s);
    if let Some(c) = c {
        mirror.send_command(c);
    }
    format!("OK {}", if on { "on" } else { "off" })
}

/// `RESOLUTION [name|WxH]`: `OK comfortable`, `OK comfortable (restarting)` while capturing,
/// `OK comfortable (no change)`; presets landscape and `portrait-*`, and (framewire) any WxH.
fn resolution(arg: Option<&str>, mirror: &Mirror) -> String {
    let (w, h) = mirror.resolution();
    let current = Resolution {
        width: w,
        height: h,
    };
    let Some(a) = arg else {
        return format!("OK {}", current.label());
    };
    let Ok(r) = a.parse::<Resolution>() else {
        return format!(
            "ERR unknown resolution (valid: {}, WxH)",
            Resolution::preset_names().join(", ")
        );
    };
    if r == current {
        return format!("OK {} (no change)", r.label());
    }
    mirror.set_resolution((r.width, r.height));
    if mirror.settings_mut().running {
        format!("OK {} (restarting)", r.label())
    } else {
        format!("OK {}", r.label())
    }
}

/// `START`, `STOP`, `RESTART`, `RECONNECT`, `STATUS`: the capture's running state, in the
/// original's words (`idle` when stopped).
fn running_verb(verb: &str, mirror: &Mirror) -> String {
    let mut s = mirror.settings_mut();
    let was = s.running;
    match verb {
        "START" if was => "OK already running".into(),
        "START" => {
            s.running = true;
            "OK starting".into()
        }
        "STOP" if !was => "OK already idle".into(),
        "STOP" => {
            s.running = false;
            "OK stopping".into()
        }
        "RESTART" | "RECONNECT" if !was => "ERR not running".into(),
        "RESTART" => {
            drop(s);
            mirror.restart_capture();
            "OK restarting".into()
        }
        // Viewers reconnect by themselves; with --adb the tunnels are watched and renewed.
        "RECONNECT" => "OK reconnecting".into(),
        _ => format!("OK {}", if was { "running" } else { "idle" }),
    }
}

/// `SHARPEN [0-3]`, `CONTRAST [1-2]`: the original's ranges and one-decimal replies.
fn daylight_tuning(verb: &str, arg: Option<&str>, mirror: &Mirror) -> String {
    let mut s = mirror.settings_mut();
    let slot = if verb == "SHARPEN" {
        &mut s.tuning.sharpen
    } else {
        &mut s.tuning.contrast
    };
    let Some(a) = arg else {
        return format!("OK {:.1}", *slot as f64 / 100.0);
    };
    let (lo, hi, help) = if verb == "SHARPEN" {
        (
            0.0,
            3.0,
            "ERR value must be 0.0-3.0 (0=none, 1=mild, 2=strong)",
        )
    } else {
        (
            1.0,
            2.0,
            "ERR value must be 1.0-2.0 (1.0=off, 1.5=moderate, 2.0=high)",
        )
    };
    match a.parse::<f64>() {
        Ok(v) if (lo..=hi).contains(&v) => {
            *slot = (v * 100.0).round() as u16;
            info!(tuning = %s.tuning, "display tuning changed");
            format!("OK {v:.1}")
        }
        _ => help.to_string(),
    }
}

/// framewire's own tuning verbs: `GAMMA [0.2-5]`, `PROFILE [name]`.
fn framewire_tuning(verb: &str, arg: Option<&str>, mirror: &Mirror) -> String {
    let mut s = mirror.settings_mut();
    if verb == "GAMMA" {
        if let Some(a) = arg {
            match Tuning::parse_setting("gamma", a) {
                Ok(v) => s.tuning.gamma = v,
                Err(e) => return format!("ERR {e}"),
            }
            info!(tuning = %s.tuning, "display tuning changed");
        }
        return format!("OK {}", s.tuning);
    }
    if let Some(a) = arg {
        match Tuning::profile(a) {
            Some(t) => s.tuning = t,
            None => {
                let names: Vec<&str> = PROFILES.iter().map(|(n, _)| *n).collect();
                return format!("ERR no profile {a:?}; profiles: {}", names.join(" "));
            }
        }
        info!(tuning = %s.tuning, "display profile changed");
    }
    let name = s.tuning.profile_name().unwrap_or("custom");
    format!("OK profile={name} {}", s.tuning)
}

/// `HEALTH`: `OK`, then the original's keys, then framewire's own.
/// Grey frames' size, or colour frames' on a server that makes no grey.
fn frame_size_kb(r: &framewire_telemetry::LatencyReport) -> f64 {
    match r.bytes_per_frame {
        0.0 => r.colour_bytes_per_frame / 1024.0,
        grey => grey / 1024.0,
    }
}

fn health(mirror: &Mirror) -> String {
    let r = mirror.report();
    let s = mirror.settings();
    let (w, h) = mirror.resolution();
    let label = Resolution {
        width: w,
        height: h,
    }
    .label();
    let on_off = |b: bool| if b { "on" } else { "off" };
    let frames = mirror.frames_published();
    let mut out = String::from("OK");
    for (k, v) in [
        (
            "status",
            if s.running { "running" } else { "idle" }.to_string(),
        ),
        ("resolution", label),
        ("fps", format!("{:.1}", r.fps)),
        ("clients", r.clients.to_string()),
        ("total_frames", r.total_frames.to_string()),
        ("skipped_frames", r.skipped_frames.to_string()),
        ("frame_size_kb", format!("{:.0}", frame_size_kb(&r))),
        ("bandwidth_mbps", format!("{:.2}", r.bandwidth_mbps)),
        ("grey_ms", format!("{:.1}", r.grey.avg)),
        ("compress_ms", format!("{:.1}", r.delta_compress.avg)),
        ("jitter_ms", format!("{:.1}", r.jitter_ms)),
        ("rtt_avg_ms", format!("{:.1}", r.rtt.avg)),
        ("rtt_p95_ms", format!("{:.1}", r.rtt.p95)),
        ("brightness", s.brightness.to_string()),
        ("warmth", s.warmth.to_string()),
        ("backlight", on_off(s.backlight_on).to_string()),
        ("frames_published", frames.to_string()),
        ("source", r.source.clone()),
        ("pid", std::process::id().to_string()),
    ] {
        out.push_str(&format!("\n{k}={v}"));
    }
    out
}

/// framewire's `DEVICE <all|serial|location|peer> <COMMAND>`: a command to sensor devices.
fn device(arg: Option<&str>, sensors: Option<&Sensors>) -> String {
    let mut it = arg.unwrap_or("").split_whitespace();
    let (Some(target), Some(cmd)) = (it.next(), it.next()) else {
        return "ERR usage: DEVICE <all|serial|location|peer> <COMMAND>".to_string();
    };
    let cmd = cmd.to_ascii_uppercase();
    if !valid_command(&cmd) {
        return format!("ERR {cmd:?} is not a device command (A-Z, 0-9, _; at most 32)");
    }
    let Some(sensors) = sensors else {
        return format!("ERR no connected device matches {target:?} (the sensor listener is off)");
    };
    let sent = sensors.devices.send(target, &cmd);
    sensors.counters.device_commands.inc();
    match sent.matched {
        0 => format!("ERR no connected device matches {target:?}"),
        n if sent.full > 0 => format!(
            "OK sent {cmd} to {} of {n} devices; {} are not reading their commands",
            n - sent.full,
            sent.full
        ),
        n => format!("OK sent {cmd} to {n} devices"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use framewire_mirror::MirrorConfig;
    use framewire_telemetry::CounterRegistry;

    fn mirror() -> Target {
        let cfg = MirrorConfig {
            resolution: Resolution {
                width: 1024,
                height: 768,
            },
            ..MirrorConfig::default()
        };
        let registry = CounterRegistry::new();
        let mirror = Mirror::new(cfg, registry.clone(), Default::default()).unwrap();
        Target::new(mirror, None, &registry)
    }

    /// Each (command, reply) in order, string for string, as the original host answers.
    fn replies(s: &Target, table: &[(&str, &str)]) {
        for (cmd, want) in table {
            assert_eq!(execute(cmd, s), format!("{want}\n"), "reply to {cmd:?}");
        }
    }

    #[test]
    fn health_gives_colour_frames_size_when_no_grey_is_made() {
        let mut r = framewire_telemetry::LatencyReport {
            colour_bytes_per_frame: 4096.0,
            ..Default::default()
        };
        assert_eq!(frame_size_kb(&r), 4.0);
        r.bytes_per_frame = 2048.0;
        assert_eq!(frame_size_kb(&r), 2.0, "grey's when grey is made");
    }

    #[test]
    fn display_verbs_answer_in_the_original_format() {
        let s = mirror();
        let mut rx = s.mirror.subscribe_commands();
        replies(
            &s,
            &[
                ("brightness 200", "OK 200"),
                ("BRIGHTNESS", "OK 200"),
                ("BRIGHTNESS 300", "OK 255"),
                ("brightness -5", "OK 0"),
                ("WARMTH 300", "OK 255"),
                ("warmth 40", "OK 40"),
                ("WARMTH", "OK 40"),
                ("brightness 90", "OK 90"),
                ("BACKLIGHT off", "OK off"),
                ("BACKLIGHT", "OK off"),
                ("BRIGHTNESS", "OK 0"),
                ("backlight toggle", "OK on"),
                ("BRIGHTNESS", "OK 90"),
                ("BACKLIGHT on", "OK on"),
            ],
        );
        assert!(execute("brightness high", &s).starts_with("ERR brightness must be a whole number"));
        // What the viewers were told, in order: the backlight is brightness 0, then the saved
        // brightness; the Daylight app ignores the backlight command itself.
        let mut sent = Vec::new();
        while let Ok(c) = rx.try_recv() {
            sent.push(c);
        }
        use ViewerCommand::*;
        assert_eq!(
            sent,
            [
                Brightness(200),
                Brightness(255),
                Brightness(0),
                Warmth(255),
                Warmth(40),
                Brightness(90),
                Brightness(0),
                Brightness(90)
            ]
        );
    }

    #[test]
    fn resolution_and_running_verbs_answer_in_the_original_format() {
        let s = mirror();
        replies(
            &s,
            &[
                ("RESOLUTION", "OK comfortable"),
                ("RESOLUTION comfortable", "OK comfortable (no change)"),
                ("resolution sharp", "OK sharp (restarting)"),
                ("RESOLUTION 1600x1200", "OK sharp (no change)"),
                ("RESOLUTION portrait-comfortable", "OK portrait comfortable (restarting)"),
                ("RESOLUTION", "OK portrait comfortable"),
                ("RESOLUTION portrait cozy", "OK portrait cozy (restarting)"),
                ("RESOLUTION 1000x700", "OK 1000x700 (restarting)"),
                (
                    "RESOLUTION huge",
                    "ERR unknown resolution (valid: cozy, comfortable, balanced, sharp, portrait-cozy, portrait-comfortable, portrait-balanced, portrait-sharp, WxH)",
                ),
                ("STATUS", "OK running"),
                ("START", "OK already running"),
                ("RESTART", "OK restarting"),
                ("RECONNECT", "OK reconnecting"),
                ("STOP", "OK stopping"),
                ("STATUS", "OK idle"),
                ("STOP", "OK already idle"),
                ("RESTART", "ERR not running"),
                ("RECONNECT", "ERR not running"),
                ("LATENCY", "ERR not running"),
                ("RESOLUTION balanced", "OK balanced"),
                ("START", "OK starting"),
                ("STATUS", "OK running"),
                ("bogus", &format!("ERR unknown command\nverbs={VERBS}")),
            ],
        );
        assert_eq!(s.mirror.resolution(), (1280, 960));
        let lat = execute("LATENCY", &s);
        assert!(lat.starts_with("OK\nfps="));
        assert!(lat.contains("\nskipped_frames=0\n"));
        let health = execute("HEALTH", &s);
        let keys: Vec<&str> = health
            .lines()
            .skip(1)
            .map(|l| l.split('=').next().unwrap())
            .collect();
        assert_eq!(health.lines().next(), Some("OK"));
        for key in [
            "status",
            "resolution",
            "fps",
            "clients",
            "total_frames",
            "skipped_frames",
            "brightness",
            "warmth",
            "backlight",
            "frames_published",
        ] {
            assert!(keys.contains(&key), "HEALTH lacks {key}: {health}");
        }
        assert!(health.contains("\nresolution=balanced\n"));
        assert!(health.contains("\nframes_published=0\n"));
    }

    #[test]
    fn sharpen_and_contrast_take_the_original_ranges() {
        let s = mirror();
        replies(
            &s,
            &[
                ("SHARPEN", "OK 0.0"),
                ("SHARPEN 1.5", "OK 1.5"),
                ("sharpen 3", "OK 3.0"),
                (
                    "SHARPEN 3.5",
                    "ERR value must be 0.0-3.0 (0=none, 1=mild, 2=strong)",
                ),
                (
                    "SHARPEN much",
                    "ERR value must be 0.0-3.0 (0=none, 1=mild, 2=strong)",
                ),
                ("CONTRAST", "OK 1.0"),
                ("CONTRAST 1.5", "OK 1.5"),
                (
                    "CONTRAST 0.5",
                    "ERR value must be 1.0-2.0 (1.0=off, 1.5=moderate, 2.0=high)",
                ),
                ("SHARPEN", "OK 3.0"),
                ("FONTSMOOTHING", "OK on"),
                ("FONTSMOOTHING maybe", "ERR use on or off"),
            ],
        );
        assert_eq!(
            s.mirror.settings().tuning,
            Tuning {
                sharpen: 300,
                contrast: 150,
                gamma: 100
            }
        );
    }

    #[test]
    fn framewire_tuning_verbs_change_the_live_settings() {
        let s = mirror();
        replies(
            &s,
            &[
                ("SHARPEN 0.5", "OK 0.5"),
                ("contrast 1.25", "OK 1.2"),
                ("gamma 2.2", "OK sharpen=0.50 contrast=1.25 gamma=2.20"),
                (
                    "profile",
                    "OK profile=custom sharpen=0.50 contrast=1.25 gamma=2.20",
                ),
                (
                    "PROFILE ink",
                    "OK profile=ink sharpen=1.00 contrast=1.40 gamma=0.85",
                ),
            ],
        );
        // Out of range or not a number: refused, and nothing changes.
        assert!(execute("gamma 0", &s).starts_with("ERR gamma must be from 0.2 to 5"));
        assert!(execute("profile glossy", &s).contains("profiles: neutral crisp ink"));
        assert_eq!(s.mirror.settings().tuning, Tuning::profile("ink").unwrap());
    }
}
