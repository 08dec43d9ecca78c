//! Per-stage latency as Prometheus histograms (cumulative since start, so Prometheus can take
//! rates and quantiles over any range), next to the recent-window percentiles the reports use.
//! The `prometheus` crate's histograms are lock-free atomics: cheap enough to observe on
//! every frame and every delivered sample.

use prometheus::{Histogram, HistogramOpts, HistogramVec};

/// Bucket bounds in seconds: 50 µs to 1 s, about three per decade.
const BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0,
];

pub struct StageHistograms {
    pub vec: HistogramVec,
    pub capture: Histogram,
    pub grey: Histogram,
    pub checksum: Histogram,
    pub delta_compress: Histogram,
    pub keyframe_compress: Histogram,
    /// Colour (while colour viewers are connected): the damaged rows split into planes
    /// G, R − G, B − G with their hashes and the checksum, then the frame encoded.
    pub colour_planes: Histogram,
    pub colour_compress: Histogram,
    pub send: Histogram,
    pub rtt: Histogram,
    pub end_to_end: Histogram,
    /// A sensor reading or grid: accepted from its socket → offered to subscribers by the hub
    /// (its wait in the hub's input queue).
    pub sensor_hub: Histogram,
    /// A sensor reading or grid: accepted from its socket → written to a subscriber's socket.
    pub sensor_delivery: Histogram,
}

impl Default for StageHistograms {
    fn default() -> Self {
        let vec = HistogramVec::new(
            HistogramOpts::new(
                "framewire_stage_latency_seconds",
                "Latency of each pipeline stage, and of capture → viewer (end_to_end), viewer round trips (rtt) and sensor item → taken by the hub (sensor_hub) and → written to a subscriber (sensor_delivery)",
            )
            .buckets(BUCKETS.to_vec()),
            &["stage"],
        )
        .expect("valid histogram options");
        let h = |s: &str| vec.with_label_values(&[s]);
        StageHistograms {
            capture: h("capture"),
            grey: h("grey"),
            checksum: h("checksum"),
            delta_compress: h("delta_compress"),
            keyframe_compress: h("keyframe_compress"),
            colour_planes: h("colour_planes"),
            colour_compress: h("colour_compress"),
            send: h("send"),
            rtt: h("rtt"),
            end_to_end: h("end_to_end"),
            sensor_hub: h("sensor_hub"),
            sensor_delivery: h("sensor_delivery"),
            vec,
        }
    }
}

/// Records a duration given in microseconds.
pub fn observe_us(h: &Histogram, us: u64) {
    h.observe(us as f64 / 1e6);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_their_buckets() {
        let s = StageHistograms::default();
        observe_us(&s.grey, 400); // ≤ 0.5 ms
        observe_us(&s.grey, 3_000); // ≤ 5 ms
        observe_us(&s.grey, 3_000);
        use prometheus::core::Collector;
        let families = s.vec.collect();
        let grey = families[0]
            .get_metric()
            .iter()
            .find(|m| m.get_label()[0].value() == "grey")
            .unwrap();
        let h = grey.get_histogram();
        assert_eq!(h.get_sample_count(), 3);
        let le = |bound: f64| {
            h.get_bucket()
                .iter()
                .find(|b| (b.upper_bound() - bound).abs() < 1e-12)
                .unwrap()
                .cumulative_count()
        };
        assert_eq!(
            (le(0.000_25), le(0.000_5), le(0.002_5), le(0.005)),
            (0, 1, 1, 3)
        );
        assert!((h.get_sample_sum() - 0.0064).abs() < 1e-9);
    }
}
