//! Display tuning, the Daylight host's profiles: a 3×3 Laplacian sharpen, then contrast and
//! gamma folded into one 256-entry lookup table. It runs on the host, on the grey picture and
//! before the rows are hashed, so viewers verify exactly the picture they show.
//!
//! Settings are kept in hundredths (integers), so two equal settings are equal bit for bit and
//! the picture a setting makes never depends on how a float was printed or parsed.

use std::fmt;

/// Sharpen amount, contrast factor and gamma, each in hundredths (`100` = 1.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tuning {
    /// 0 (off) ..= 200: how much of the Laplacian is added back.
    pub sharpen: u16,
    /// 25 ..= 400: grey levels are spread around mid-grey by this factor (100 = unchanged).
    pub contrast: u16,
    /// 20 ..= 500: `out = 255·(in/255)^(1/gamma)`; above 100 lightens mid-greys, below darkens.
    pub gamma: u16,
}

/// The accepted ranges, in the units users type (not hundredths).
/// The Daylight host accepts sharpen 0–3 (0 none, 1 mild, 2 strong).
pub const SHARPEN_RANGE: (f32, f32) = (0.0, 3.0);
pub const CONTRAST_RANGE: (f32, f32) = (0.25, 4.0);
pub const GAMMA_RANGE: (f32, f32) = (0.2, 5.0);

/// Named profiles: (name, sharpen, contrast, gamma), in hundredths.
pub const PROFILES: [(&str, Tuning); 3] = [
    ("neutral", Tuning::NEUTRAL),
    (
        // Crisper text edges with a touch more contrast, for reading.
        "crisp",
        Tuning {
            sharpen: 60,
            contrast: 115,
            gamma: 100,
        },
    ),
    (
        // Ink on paper: strong edges, high contrast, darker mid-greys (thin strokes survive on a
        // reflective panel).
        "ink",
        Tuning {
            sharpen: 100,
            contrast: 140,
            gamma: 85,
        },
    ),
];

impl Tuning {
    pub const NEUTRAL: Tuning = Tuning {
        sharpen: 0,
        contrast: 100,
        gamma: 100,
    };

    /// A profile by name (case-insensitive).
    pub fn profile(name: &str) -> Option<Tuning> {
        PROFILES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, t)| t)
    }

    /// The name of the profile these settings equal, if any.
    pub fn profile_name(&self) -> Option<&'static str> {
        PROFILES.iter().find(|(_, t)| t == self).map(|&(n, _)| n)
    }

    /// The picture is left exactly as captured.
    pub fn is_neutral(&self) -> bool {
        *self == Tuning::NEUTRAL
    }

    /// Parses a user's value for one setting (`sharpen`, `contrast` or `gamma`) into hundredths,
    /// with an error that names the range.
    pub fn parse_setting(which: &str, text: &str) -> Result<u16, String> {
        let (lo, hi) = match which {
            "sharpen" => SHARPEN_RANGE,
            "contrast" => CONTRAST_RANGE,
            "gamma" => GAMMA_RANGE,
            other => return Err(format!("{other} is not a display setting")),
        };
        let v: f32 = text
            .trim()
            .parse()
            .map_err(|_| format!("{which} must be a number from {lo} to {hi}, got {text:?}"))?;
        if !(lo..=hi).contains(&v) {
            return Err(format!("{which} must be from {lo} to {hi}, got {v}"));
        }
        Ok((v * 100.0).round() as u16)
    }
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning::NEUTRAL
    }
}

fn hundredths(v: u16) -> String {
    format!("{}.{:02}", v / 100, v % 100)
}

impl fmt::Display for Tuning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sharpen={} contrast={} gamma={}",
            hundredths(self.sharpen),
            hundredths(self.contrast),
            hundredths(self.gamma)
        )
    }
}

/// The prepared form of a [`Tuning`]: the sharpen weight in 1/256 and the lookup table.
#[derive(Clone)]
pub struct Tuner {
    tuning: Tuning,
    /// Sharpen weight in 1/256 (amount 1.0 = 256).
    weight: i32,
    lut: [u8; 256],
    lut_is_identity: bool,
}

impl Tuner {
    pub fn new(tuning: Tuning) -> Tuner {
        let lut = build_lut(tuning.contrast, tuning.gamma);
        Tuner {
            tuning,
            weight: (tuning.sharpen as i32 * 256 + 50) / 100,
            lut_is_identity: lut.iter().enumerate().all(|(i, &v)| v as usize == i),
            lut,
        }
    }

    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// Applying this tuner changes nothing.
    pub fn is_identity(&self) -> bool {
        self.weight == 0 && self.lut_is_identity
    }

    pub fn lut(&self) -> &[u8; 256] {
        &self.lut
    }

    /// Tunes rows `y0..y1` of `raw` (the untuned grey picture, `w` pixels per row) into the same
    /// rows of `out`. Sharpen reads each row's neighbours from `raw`; beyond the picture's edge
    /// the edge pixel repeats. `out` may hold anything in those rows beforehand.
    pub fn rows(&self, raw: &[u8], w: usize, y0: usize, y1: usize, out: &mut [u8]) {
        assert_eq!(
            raw.len(),
            out.len(),
            "raw and tuned pictures differ in size"
        );
        if w == 0 || y0 >= y1 {
            return;
        }
        let h = raw.len() / w;
        assert!(y1 <= h, "rows {y0}..{y1} beyond a picture of {h} rows");
        for y in y0..y1 {
            let mid = &raw[y * w..(y + 1) * w];
            let dst = &mut out[y * w..(y + 1) * w];
            if self.weight == 0 {
                dst.copy_from_slice(mid);
            } else {
                let up = &raw[y.saturating_sub(1) * w..][..w];
                let down = &raw[(y + 1).min(h - 1) * w..][..w];
                sharpen_row(up, mid, down, self.weight, dst);
            }
            if !self.lut_is_identity {
                for p in dst.iter_mut() {
                    *p = self.lut[*p as usize];
                }
            }
        }
    }
}

/// `c + weight·(4c − up − down − left − right) / 256`, rounded down, clamped to 0..=255. The
/// inner loop has no edge cases so the compiler vectorises it.
fn sharpen_row(up: &[u8], mid: &[u8], down: &[u8], weight: i32, out: &mut [u8]) {
    let w = mid.len();
    let px = |x: usize, left: u8, right: u8| -> u8 {
        let c = mid[x] as i32;
        let lap = 4 * c - up[x] as i32 - down[x] as i32 - left as i32 - right as i32;
        (c + ((weight * lap + 128) >> 8)).clamp(0, 255) as u8
    };
    if w == 1 {
        out[0] = px(0, mid[0], mid[0]);
        return;
    }
    out[0] = px(0, mid[0], mid[1]);
    out[w - 1] = px(w - 1, mid[w - 2], mid[w - 1]);
    let (l, c, r) = (&mid[..w - 2], &mid[1..w - 1], &mid[2..]);
    let (u, d) = (&up[1..w - 1], &down[1..w - 1]);
    for (i, o) in out[1..w - 1].iter_mut().enumerate() {
        let cc = c[i] as i32;
        let lap = 4 * cc - u[i] as i32 - d[i] as i32 - l[i] as i32 - r[i] as i32;
        *o = (cc + ((weight * lap + 128) >> 8)).clamp(0, 255) as u8;
    }
}

/// Contrast around mid-grey, then gamma, as one table.
fn build_lut(contrast: u16, gamma: u16) -> [u8; 256] {
    let (k, inv_g) = (contrast as f64 / 100.0, 100.0 / gamma as f64);
    let mut lut = [0u8; 256];
    for (i, v) in lut.iter_mut().enumerate() {
        let c = ((i as f64 - 127.5) * k + 127.5).clamp(0.0, 255.0);
        *v = (255.0 * (c / 255.0).powf(inv_g)).round() as u8;
    }
    lut
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Sharpen then table, pixel by pixel with clamped coordinates: the definition, written
    /// without the row slicing of the real code.
    fn reference(raw: &[u8], w: usize, t: &Tuner) -> Vec<u8> {
        let h = raw.len() / w;
        let at = |x: isize, y: isize| {
            let x = x.clamp(0, w as isize - 1) as usize;
            let y = y.clamp(0, h as isize - 1) as usize;
            raw[y * w + x] as i32
        };
        let mut out = vec![0u8; raw.len()];
        for y in 0..h as isize {
            for x in 0..w as isize {
                let c = at(x, y);
                let lap = 4 * c - at(x, y - 1) - at(x, y + 1) - at(x - 1, y) - at(x + 1, y);
                let s = (c as f64 + (t.weight as f64 * lap as f64 / 256.0 + 0.5).floor())
                    .clamp(0.0, 255.0) as usize;
                out[y as usize * w + x as usize] = t.lut()[s];
            }
        }
        out
    }

    #[test]
    fn neutral_changes_nothing() {
        let t = Tuner::new(Tuning::NEUTRAL);
        assert!(t.is_identity());
        let raw: Vec<u8> = (0..=255u8).cycle().take(64 * 8).collect();
        let mut out = vec![1u8; raw.len()];
        t.rows(&raw, 64, 0, 8, &mut out);
        assert_eq!(out, raw);
    }

    #[test]
    fn table_follows_contrast_and_gamma() {
        let more = Tuner::new(Tuning {
            contrast: 200,
            ..Tuning::NEUTRAL
        });
        assert!(!more.is_identity());
        // Spread around mid-grey: dark goes darker, light goes lighter, ends clip.
        assert!(more.lut()[100] < 100 && more.lut()[160] > 160);
        assert_eq!((more.lut()[10], more.lut()[250]), (0, 255));
        let lighter = Tuner::new(Tuning {
            gamma: 200,
            ..Tuning::NEUTRAL
        });
        let darker = Tuner::new(Tuning {
            gamma: 50,
            ..Tuning::NEUTRAL
        });
        assert!(lighter.lut()[128] > 170 && darker.lut()[128] < 70);
        // Ends stay put and every table is monotonic.
        for t in [&more, &lighter, &darker] {
            assert_eq!((t.lut()[0], t.lut()[255]), (0, 255));
            assert!(t.lut().windows(2).all(|p| p[0] <= p[1]));
        }
    }

    #[test]
    fn sharpen_leaves_flat_areas_and_steepens_edges() {
        let t = Tuner::new(Tuning {
            sharpen: 100,
            ..Tuning::NEUTRAL
        });
        let w = 8;
        // A vertical step from 100 to 150 between columns 3 and 4.
        let raw: Vec<u8> = (0..w * 4)
            .map(|i| if i % w < 4 { 100 } else { 150 })
            .collect();
        let mut out = vec![0u8; raw.len()];
        t.rows(&raw, w, 0, 4, &mut out);
        let row = &out[w..2 * w];
        assert_eq!(row[..3], [100, 100, 100]);
        assert_eq!(row[5..], [150, 150, 150]);
        // Each side of the step overshoots by the step's height (amount 1).
        assert_eq!((row[3], row[4]), (50, 200));
    }

    #[test]
    fn settings_parse_with_ranges_and_print_back() {
        assert_eq!(Tuning::parse_setting("sharpen", "0.5"), Ok(50));
        assert_eq!(Tuning::parse_setting("gamma", "2.2"), Ok(220));
        assert!(Tuning::parse_setting("contrast", "9")
            .unwrap_err()
            .contains("from 0.25 to 4"));
        assert!(Tuning::parse_setting("sharpen", "lots").is_err());
        assert_eq!(
            Tuning::profile("CRISP").unwrap().to_string(),
            "sharpen=0.60 contrast=1.15 gamma=1.00"
        );
        assert_eq!(Tuning::NEUTRAL.profile_name(), Some("neutral"));
    }

    proptest! {
        #[test]
        fn rows_equal_the_reference(
            w in 1usize..24,
            h in 1usize..12,
            seed in any::<u64>(),
            sharpen in 0u16..=200,
            contrast in 25u16..=400,
            gamma in 20u16..=500,
        ) {
            let raw: Vec<u8> = (0..w * h).map(|i| (seed.wrapping_mul(i as u64 * 2 + 1) >> 23) as u8).collect();
            let t = Tuner::new(Tuning { sharpen, contrast, gamma });
            let mut out = vec![0u8; raw.len()];
            t.rows(&raw, w, 0, h, &mut out);
            prop_assert_eq!(out, reference(&raw, w, &t));
        }
    }
}
