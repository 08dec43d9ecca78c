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

/// Largest side the Daylight app accepts (it reallocates its picture up to this).
pub const MAX_SIDE: u32 = 4096;

#[derive(Debug, Error, PartialEq, Eq)]
#[error("invalid resolution {input:?}: {why} (use a preset: cozy, comfortable, balanced, sharp, or portrait-NAME for each; or WxH such as 1600x1200, each side 1..=4096)")]
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

    /// The preset name for this size, if it is one (landscape presets only).
    pub fn preset_name(self) -> Option<&'static str> {
        PRESETS
            .iter()
            .find(|p| p.1 == self.width && p.2 == self.height)
            .map(|p| p.0)
    }

    /// The name the Daylight host's control socket uses for this size: `comfortable`,
    /// `portrait comfortable` for its portrait orientation (the original's label, lowercased),
    /// else `WxH`.
    pub fn label(self) -> String {
        if let Some(name) = self.preset_name() {
            return name.to_string();
        }
        match PRESETS
            .iter()
            .find(|p| p.2 == self.width && p.1 == self.height)
        {
            Some(p) => format!("portrait {}", p.0),
            None => self.to_string(),
        }
    }

    /// Every preset name the control socket accepts, landscape then portrait.
    pub fn preset_names() -> Vec<String> {
        let land = PRESETS.iter().map(|p| p.0.to_string());
        let port = PRESETS.iter().map(|p| format!("portrait-{}", p.0));
        land.chain(port).collect()
    }

    /// A preset by name: `sharp`, or `portrait-sharp` / `portrait sharp` (case-insensitive).
    pub fn preset(name: &str) -> Option<Resolution> {
        let t = name.trim().to_ascii_lowercase().replace(['-', '_'], " ");
        let (portrait, base) = match t.strip_prefix("portrait") {
            Some(rest) => (true, rest.trim()),
            None => (false, t.as_str()),
        };
        let p = PRESETS.iter().find(|p| p.0 == base)?;
        let (width, height) = if portrait { (p.2, p.1) } else { (p.1, p.2) };
        Some(Resolution { width, height })
    }
}

impl FromStr for Resolution {
    type Err = ResolutionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(r) = Resolution::preset(s) {
            return Ok(r);
        }
        let t = s.trim().to_ascii_lowercase();
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
        if !(1..=MAX_SIDE).contains(&w) || !(1..=MAX_SIDE).contains(&h) {
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
        assert_eq!(
            "portrait-comfortable".parse::<Resolution>().unwrap(),
            Resolution {
                width: 768,
                height: 1024
            }
        );
        assert_eq!(
            Resolution::preset("Portrait Sharp").map(|r| r.label()),
            Some("portrait sharp".into())
        );
        assert_eq!("1x1".parse::<Resolution>().unwrap().label(), "1x1");
        assert_eq!(
            Resolution::preset("comfortable").unwrap().label(),
            "comfortable"
        );
        assert!(Resolution::preset("portrait").is_none());
        assert!(Resolution::preset("huge").is_none());
        assert!("640".parse::<Resolution>().is_err());
        assert!("0x480".parse::<Resolution>().is_err());
        assert!("9000x480".parse::<Resolution>().is_err());
        assert!("axb".parse::<Resolution>().is_err());
    }
}
