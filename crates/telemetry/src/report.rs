//! The latency report: one struct, three renderings (table, JSON, Daylight `OK` + key=value).

use serde::{Deserialize, Serialize};

use crate::stats::Quantiles;
use crate::SampleWindow;

/// avg / p50 / p95 / p99 of one stage, in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct StageSummary {
    pub avg: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub samples: u64,
}

impl StageSummary {
    /// Summarises a window of samples given in microseconds (one pass, no sort).
    pub fn from_us(w: &SampleWindow) -> Self {
        let ms = |v: Option<f64>| v.unwrap_or(0.0) / 1000.0;
        let q = Quantiles::of(w.values().iter().copied());
        StageSummary {
            avg: ms(w.avg()),
            p50: ms(q.at(50.0)),
            p95: ms(q.at(95.0)),
            p99: ms(q.at(99.0)),
            samples: w.total(),
        }
    }
}

/// Everything `framewire latency` shows for a running server.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencyReport {
    pub source: String,
    pub resolution: String,
    pub fps: f64,
    pub jitter_ms: f64,
    /// The source's grab of the picture (render, for synthetic scenes).
    pub capture: StageSummary,
    pub grey: StageSummary,
    /// xxh3 of the grey picture (carried in every v1 frame).
    pub checksum: StageSummary,
    pub delta_compress: StageSummary,
    pub keyframe_compress: StageSummary,
    /// Colour, while colour viewers are connected: the planes with their hashes and checksum,
    /// then the frame's encoding (a delta or a keyframe).
    #[serde(default)]
    pub colour_planes: StageSummary,
    #[serde(default)]
    pub colour_compress: StageSummary,
    pub send: StageSummary,
    /// Grey frames' bytes (recent window).
    pub bytes_per_frame: f64,
    /// Colour frames' bytes (recent window; 0 while no colour viewer is served).
    #[serde(default)]
    pub colour_bytes_per_frame: f64,
    pub bandwidth_mbps: f64,
    pub rtt: StageSummary,
    /// Capture timestamp → applied at the viewer, through the estimated clock offset.
    pub end_to_end: StageSummary,
    pub clients: usize,
    pub total_frames: u64,
    pub unchanged_frames: u64,
    pub skipped_frames: u64,
    pub counters: Vec<(String, u64)>,
    /// Each connected viewer's path, as its session and transport see it.
    #[serde(default)]
    pub viewers: Vec<ViewerPath>,
}

/// One viewer's path: what its delivery-rate estimate and its transport (QUIC) say.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ViewerPath {
    pub viewer: u64,
    pub protocol: String,
    /// Delivery rate estimated from its ACKs (0 before the first, or without a byte budget).
    pub bandwidth_mbps: f64,
    pub min_rtt_ms: f64,
    pub inflight_bytes: u64,
    pub budget_bytes: u64,
    /// The transport's smoothed RTT, congestion window and packets (QUIC only).
    pub transport_rtt_ms: Option<f64>,
    pub cwnd_bytes: Option<u64>,
    /// The bound the host set on that window from its own estimate of the path, when it
    /// was in force as the report was made (QUIC only; see `framewire_flow`'s `window_bound`).
    #[serde(default)]
    pub window_bound_bytes: Option<u64>,
    pub lost_packets: Option<u64>,
    pub sent_packets: Option<u64>,
    /// Frames sent to it as datagrams, and the recovery shards sent with them (QUIC only).
    #[serde(default)]
    pub datagram_frames: Option<u64>,
    #[serde(default)]
    pub recovery_shards: Option<u64>,
    /// Of those, recovery shards dropped unsent: the queue that spaces out those of frames
    /// that fit one datagram was full (QUIC only).
    #[serde(default)]
    pub recovery_shards_dropped: Option<u64>,
    /// Frames the host meant for datagrams that went on a stream instead (QUIC only).
    #[serde(default)]
    pub datagram_fallbacks: Option<u64>,
    /// Frames planned for it (sent, or Unchanged).
    #[serde(default)]
    pub frames_planned: u64,
    /// Frames skipped for it, deltas made against a picture it held, frames whose base it
    /// lost, and frames an Ack for a later frame passed before their own came (lost,
    /// superseded or overtaken).
    pub skipped: u64,
    pub rebased: u64,
    /// Of those, deltas against the picture it acknowledged (a frame reported missing, or a
    /// path not counted clean), stall probes apart.
    #[serde(default, alias = "rebased_repairs")]
    pub rebased_acknowledged: u64,
    /// Frames sent beyond the byte budget while its ACKs had stopped.
    #[serde(default)]
    pub stall_probes: u64,
    pub bases_missing: u64,
    #[serde(default)]
    pub unacked_passed: u64,
}

/// The reply of the Daylight `LATENCY` verb, with its exact keys, then framewire's extra keys.
pub fn format_daylight_latency(r: &LatencyReport) -> String {
    let mut s = String::from("OK\n");
    let mut kv = |k: &str, v: String| {
        s.push_str(k);
        s.push('=');
        s.push_str(&v);
        s.push('\n');
    };
    kv("fps", format!("{:.1}", r.fps));
    kv("grey_ms", format!("{:.2}", r.grey.avg));
    kv("compress_ms", format!("{:.2}", r.delta_compress.avg));
    kv("jitter_ms", format!("{:.2}", r.jitter_ms));
    kv("rtt_avg_ms", format!("{:.2}", r.rtt.avg));
    kv("rtt_p95_ms", format!("{:.2}", r.rtt.p95));
    kv("clients", r.clients.to_string());
    kv("total_frames", r.total_frames.to_string());
    kv("skipped_frames", r.skipped_frames.to_string());
    kv("rtt_p99_ms", format!("{:.2}", r.rtt.p99));
    kv("e2e_avg_ms", format!("{:.2}", r.end_to_end.avg));
    kv("e2e_p99_ms", format!("{:.2}", r.end_to_end.p99));
    kv("send_ms", format!("{:.2}", r.send.avg));
    kv("bytes_per_frame", format!("{:.0}", r.bytes_per_frame));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daylight_reply_has_the_reference_keys_in_order() {
        let r = LatencyReport {
            fps: 59.94,
            clients: 2,
            total_frames: 10,
            ..Default::default()
        };
        let text = format_daylight_latency(&r);
        let keys: Vec<&str> = text
            .lines()
            .skip(1)
            .map(|l| l.split('=').next().unwrap())
            .collect();
        assert_eq!(text.lines().next(), Some("OK"));
        assert_eq!(
            &keys[..9],
            [
                "fps",
                "grey_ms",
                "compress_ms",
                "jitter_ms",
                "rtt_avg_ms",
                "rtt_p95_ms",
                "clients",
                "total_frames",
                "skipped_frames"
            ]
        );
        assert!(text.contains("fps=59.9\n") && text.contains("clients=2\n"));
    }
}
