//! Picture sizes: the Daylight presets and free `WxH`.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// (name, width, height), the 4:3 presets of the Daylight host.
pub const PRESETS: [(&str, u32, u32); 4] = [
    ("cozy", 800, 600),
    ("comfortable", 1024, 768),
    ("balanced", 1280, 960),
    ("sharp", 1600, 1200),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolution {
    pub width: u32,
    pub height: u32,
}

#[derive(Debug, Error, PartialEq, Eq)]
#[error("invalid resolution {input:?}: {why} (use a preset: cozy, comfortable, balanced, sharp; or WxH such as 1600x1200, each side 16..=4096)")]
pub struct ResolutionError {
    input: String,
    why: &'static str,
}

impl Resolution {
    pub const SHARP: Resolution = Resolution {
        width: 1600,
        height: 1200,
    };

    pub fn pixels(self) -> usize {
        self.width as usize * self.height as usize
    }

    /// The preset name for this size, if it is one.
    pub fn preset_name(self) -> Option<&'static str> {
        PRESETS
            .iter()
            .find(|p| p.1 == self.width && p.2 == self.height)
            .map(|p| p.0)
    }
}

impl FromStr for Resolution {
    type Err = ResolutionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        if let Some(p) = PRESETS.iter().find(|p| p.0 == t) {
            return Ok(Resolution {
                width: p.1,
                height: p.2,
            });
        }
        let err = |why| ResolutionError {
            input: s.to_string(),
            why,
        };
        let (w, h) = t
            .split_once(['x', '×'])
            .ok_or_else(|| err("not a preset and not WxH"))?;
        let w: u32 = w.trim().parse().map_err(|_| err("width is not a number"))?;
        let h: u32 = h
            .trim()
            .parse()
            .map_err(|_| err("height is not a number"))?;
        if !(16..=4096).contains(&w) || !(16..=4096).contains(&h) {
            return Err(err("side out of range"));
        }
        Ok(Resolution {
            width: w,
            height: h,
        })
    }
}

impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_presets_and_sizes() {
        assert_eq!(
            "sharp".parse::<Resolution>().unwrap(),
            Resolution {
                width: 1600,
                height: 1200
            }
        );
        assert_eq!(
            "Cozy".parse::<Resolution>().unwrap(),
            Resolution {
                width: 800,
                height: 600
            }
        );
        assert_eq!(
            "640x480".parse::<Resolution>().unwrap(),
            Resolution {
                width: 640,
                height: 480
            }
        );
        assert!("640".parse::<Resolution>().is_err());
        assert!("0x480".parse::<Resolution>().is_err());
        assert!("9000x480".parse::<Resolution>().is_err());
        assert!("axb".parse::<Resolution>().is_err());
    }
}
