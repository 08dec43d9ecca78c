//! What one direction of the link does to packets, and the per-packet decision — a pure
//! function of the settings and the random generator, so it is tested without a network.

use std::time::Duration;

use crate::error::NetemError;
use crate::rng::SplitMix64;

/// The impairments of one direction of a [`Link`](crate::Link).
///
/// Every packet is first lost with probability `loss`; a packet that is kept is sent twice with
/// probability `duplicate`; each copy is delivered `delay_us + uniform(0..=jitter_us)` after it
/// was read. Jitter therefore reorders packets closer together than the jitter, as a real path
/// with varying queueing would.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Impairment {
    /// Fixed one-way delay, microseconds.
    pub delay_us: u64,
    /// Extra delay, uniform in 0..=jitter_us microseconds, drawn per packet copy.
    pub jitter_us: u64,
    /// Probability in [0, 1] that a packet is dropped.
    pub loss: f64,
    /// Probability in [0, 1] that a kept packet is delivered twice.
    pub duplicate: f64,
    /// Seed of this direction's random generator: the same seed gives the same decisions for
    /// the same sequence of packets.
    pub seed: u64,
    /// Rate limit in kbit/s (1 kbit = 1000 bit), applied by a `tbf` qdisc on the sending
    /// side's TUN device; `None` for no limit.
    pub rate_kbit: Option<u64>,
}

impl Default for Impairment {
    /// A perfect link: no delay, no loss, no limit.
    fn default() -> Impairment {
        Impairment {
            delay_us: 0,
            jitter_us: 0,
            loss: 0.0,
            duplicate: 0.0,
            seed: 0,
            rate_kbit: None,
        }
    }
}

impl Impairment {
    pub fn validate(&self) -> Result<(), NetemError> {
        for (name, p) in [("loss", self.loss), ("duplicate", self.duplicate)] {
            if !(0.0..=1.0).contains(&p) {
                return Err(NetemError::Config(format!(
                    "{name} is {p}; it is a probability, from 0 to 1"
                )));
            }
        }
        // A delay beyond an hour is a typo (ms for µs, say), and would hold packets forever.
        const HOUR_US: u64 = 3_600_000_000;
        if self.delay_us.saturating_add(self.jitter_us) > HOUR_US {
            return Err(NetemError::Config(format!(
                "delay {} µs + jitter {} µs is more than an hour",
                self.delay_us, self.jitter_us
            )));
        }
        if self.rate_kbit == Some(0) {
            return Err(NetemError::Config(
                "rate_kbit is 0; use None for no limit, or at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// What happens to one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Lost,
    /// Deliver once, after this long.
    Once(Duration),
    /// Deliver twice, each copy after its own delay.
    Twice(Duration, Duration),
}

/// Decides the fate of one packet. It always draws the same number of random values, whatever
/// the settings, so the n-th packet sees the same random numbers whether or not earlier packets
/// were lost or duplicated, and a live change of settings does not shift the sequence.
pub fn decide(imp: &Impairment, rng: &mut SplitMix64) -> Verdict {
    let lose = rng.next_f64() < imp.loss;
    let dup = rng.next_f64() < imp.duplicate;
    let first = imp.delay_us.saturating_add(rng.up_to(imp.jitter_us));
    let second = imp.delay_us.saturating_add(rng.up_to(imp.jitter_us));
    if lose {
        Verdict::Lost
    } else if dup {
        Verdict::Twice(Duration::from_micros(first), Duration::from_micros(second))
    } else {
        Verdict::Once(Duration::from_micros(first))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(imp: &Impairment, n: usize) -> (usize, usize, usize) {
        let mut rng = SplitMix64::new(imp.seed);
        let (mut lost, mut once, mut twice) = (0, 0, 0);
        for _ in 0..n {
            match decide(imp, &mut rng) {
                Verdict::Lost => lost += 1,
                Verdict::Once(_) => once += 1,
                Verdict::Twice(..) => twice += 1,
            }
        }
        (lost, once, twice)
    }

    #[test]
    fn perfect_link_delivers_everything_once_at_once() {
        let imp = Impairment::default();
        let mut rng = SplitMix64::new(0);
        for _ in 0..1000 {
            assert_eq!(decide(&imp, &mut rng), Verdict::Once(Duration::ZERO));
        }
    }

    #[test]
    fn loss_one_loses_everything() {
        let imp = Impairment {
            loss: 1.0,
            ..Impairment::default()
        };
        assert_eq!(tally(&imp, 1000), (1000, 0, 0));
    }

    #[test]
    fn rates_match_the_probabilities() {
        let imp = Impairment {
            loss: 0.2,
            duplicate: 0.1,
            seed: 99,
            ..Impairment::default()
        };
        let n = 100_000;
        let (lost, _, twice) = tally(&imp, n);
        let lost = lost as f64 / n as f64;
        // Duplicates are drawn among the kept packets.
        let dup = twice as f64 / (n as f64 * 0.8);
        assert!((lost - 0.2).abs() < 0.01, "loss {lost}");
        assert!((dup - 0.1).abs() < 0.01, "dup {dup}");
    }

    #[test]
    fn delay_is_base_plus_jitter_within_bounds() {
        let imp = Impairment {
            delay_us: 1000,
            jitter_us: 500,
            duplicate: 0.5,
            ..Impairment::default()
        };
        let mut rng = SplitMix64::new(3);
        let (mut min, mut max) = (u128::MAX, 0);
        for _ in 0..10_000 {
            let delays = match decide(&imp, &mut rng) {
                Verdict::Once(d) => vec![d],
                Verdict::Twice(a, b) => vec![a, b],
                Verdict::Lost => unreachable!(),
            };
            for d in delays {
                min = min.min(d.as_micros());
                max = max.max(d.as_micros());
            }
        }
        assert_eq!((min, max), (1000, 1500));
    }

    #[test]
    fn same_seed_same_decisions_and_loss_does_not_shift_the_stream() {
        let a = Impairment {
            loss: 0.3,
            jitter_us: 100,
            seed: 5,
            ..Impairment::default()
        };
        let run = |imp: &Impairment| {
            let mut rng = SplitMix64::new(imp.seed);
            (0..500).map(|_| decide(imp, &mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(run(&a), run(&a));
        // With no loss, every packet that `a` kept gets the same delay as under `a`.
        let b = Impairment { loss: 0.0, ..a };
        for (x, y) in run(&a).iter().zip(run(&b)) {
            if *x != Verdict::Lost {
                assert_eq!(*x, y);
            }
        }
    }

    #[test]
    fn validation_names_the_bad_field() {
        let bad = Impairment {
            loss: 1.5,
            ..Impairment::default()
        };
        assert!(bad.validate().unwrap_err().to_string().contains("loss"));
        let nan = Impairment {
            duplicate: f64::NAN,
            ..Impairment::default()
        };
        assert!(nan.validate().is_err());
        let zero_rate = Impairment {
            rate_kbit: Some(0),
            ..Impairment::default()
        };
        assert!(zero_rate.validate().is_err());
        assert!(Impairment::default().validate().is_ok());
    }
}
