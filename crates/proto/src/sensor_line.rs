//! The EmberEye-compatible sensor line protocol (listener port 9001), without I/O: a bounded
//! line splitter and a parser for every packet the reference lists
//! (`shared/reference/sensor-line-protocol.md`).
//!
//! A line is one packet: `#...!`, UTF-8, whitespace around it ignored, blank lines skipped. A
//! bad line is an error with a stable reason (for a per-reason counter); it never ends the
//! connection, which is the caller's rule.

use std::fmt;

/// Longest line accepted. The longest real packet is a thermal frame as 768 space-separated
/// 4-digit words with a location (≈3.9 KB) or an EEPROM dump (3328 hex digits).
pub const MAX_LINE: usize = 16 * 1024;
/// The longest location or serial number a device may give (bytes). Longer is refused, not
/// truncated: a cut name could make two devices' streams one, and every name is kept while its
/// stream lives. `thermal/` and the longest name still fit a v1 stream field (255 bytes).
pub const MAX_NAME: usize = 128;
/// The command that starts a real device's periodic readings, sent when it connects. A capture
/// of a real device and EmberEye's own servers send `PERIOD_ON\n`; only one of EmberEye's
/// simulators took `PERIODIC_ON` (and without a newline).
pub const START_COMMAND: &str = "PERIOD_ON";
pub const THERMAL_W: u32 = 32;
pub const THERMAL_H: u32 = 24;
pub const THERMAL_VALUES: usize = 768;
pub const CALIBRATION_WORDS: usize = 66;
pub const EEPROM_WORDS: usize = 832;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Packet {
    SerialNo(String),
    LocId(String),
    /// Readings in the order sent; `location` only when the packet names one.
    Sensor {
        location: Option<String>,
        readings: Vec<(String, Value)>,
    },
    /// A 32×24 frame of 16-bit values, row-major.
    Thermal {
        location: Option<String>,
        values: Vec<u16>,
        calibration: Option<Vec<u16>>,
    },
    Eeprom {
        id: String,
        words: Vec<u16>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    TooLong,
    NotUtf8,
    /// Does not start with `#`.
    NotAPacket,
    UnknownPacket,
    EmptyValue,
    BadReading,
    BadThermal(&'static str),
    BadEeprom(&'static str),
    /// A location or serial number longer than [`MAX_NAME`], or with control characters.
    BadName,
    /// More readings than a v1 Sample carries ([`crate::v1::MAX_READINGS`]), or a key longer
    /// than [`crate::v1::MAX_KEY`]: refused rather than cut on the way to subscribers.
    TooManyReadings,
}

impl LineError {
    /// A short stable name for counters (`sensor_lines_rejected{reason=...}`).
    pub fn reason(&self) -> &'static str {
        match self {
            LineError::TooLong => "too_long",
            LineError::NotUtf8 => "not_utf8",
            LineError::NotAPacket => "not_a_packet",
            LineError::UnknownPacket => "unknown_packet",
            LineError::EmptyValue => "empty_value",
            LineError::BadReading => "bad_reading",
            LineError::BadThermal(_) => "bad_thermal",
            LineError::BadEeprom(_) => "bad_eeprom",
            LineError::BadName => "bad_name",
            LineError::TooManyReadings => "too_many_readings",
        }
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::TooLong => write!(f, "line longer than {MAX_LINE} bytes"),
            LineError::NotUtf8 => write!(f, "line is not UTF-8"),
            LineError::NotAPacket => write!(f, "line does not start with '#'"),
            LineError::UnknownPacket => write!(f, "unknown packet"),
            LineError::EmptyValue => write!(f, "packet has an empty value"),
            LineError::BadReading => write!(f, "sensor reading is not key=number"),
            LineError::BadThermal(why) => write!(f, "thermal frame: {why}"),
            LineError::BadEeprom(why) => write!(f, "EEPROM packet: {why}"),
            LineError::TooManyReadings => write!(
                f,
                "more than {} readings, or a key longer than {} bytes",
                crate::v1::MAX_READINGS,
                crate::v1::MAX_KEY
            ),
            LineError::BadName => write!(
                f,
                "location or serial number longer than {MAX_NAME} bytes or with control characters"
            ),
        }
    }
}

impl std::error::Error for LineError {}

/// Splits a byte stream into lines, holding at most [`MAX_LINE`] bytes of a line. An over-long
/// line is reported once and skipped up to its end.
#[derive(Debug, Default)]
pub struct LineSplitter {
    buf: Vec<u8>,
    start: usize,
    skipping: bool,
}

impl LineSplitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes held (an incomplete line).
    pub fn pending(&self) -> usize {
        self.buf.len() - self.start
    }

    pub fn push(&mut self, data: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// The next complete line (without its `\n`), an over-long line's error, or `None` until
    /// more bytes arrive.
    pub fn next_line(&mut self) -> Option<Result<&[u8], LineError>> {
        loop {
            let rest = &self.buf[self.start..];
            match rest.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let (s, e) = (self.start, self.start + i);
                    self.start = e + 1;
                    if self.skipping {
                        self.skipping = false;
                        continue;
                    }
                    if i > MAX_LINE {
                        return Some(Err(LineError::TooLong));
                    }
                    return Some(Ok(&self.buf[s..e]));
                }
                None => {
                    if rest.len() > MAX_LINE {
                        // Drop what is held; report the line once.
                        self.buf.clear();
                        self.start = 0;
                        if !self.skipping {
                            self.skipping = true;
                            return Some(Err(LineError::TooLong));
                        }
                    } else if self.start > 0 {
                        self.buf.drain(..self.start);
                        self.start = 0;
                    }
                    return None;
                }
            }
        }
    }
}

/// Parses one line. `Ok(None)` for a blank line.
pub fn parse_line(line: &[u8]) -> Result<Option<Packet>, LineError> {
    let line = std::str::from_utf8(line).map_err(|_| LineError::NotUtf8)?;
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    let body = line.strip_prefix('#').ok_or(LineError::NotAPacket)?;
    let body = body.strip_suffix('!').unwrap_or(body).trim_end();
    parse_body(body).map(Some)
}

fn word(prefix: &str, body: &str) -> Option<usize> {
    let n = prefix.len();
    (body.len() >= n && body.is_char_boundary(n) && body[..n].eq_ignore_ascii_case(prefix))
        .then_some(n)
}

/// A location without its spaces and `<>`, `None` when empty; refused when too long.
fn clean_location(s: &str) -> Result<Option<String>, LineError> {
    let s = s.trim();
    let s = s
        .strip_prefix('<')
        .and_then(|x| x.strip_suffix('>'))
        .unwrap_or(s);
    if s.is_empty() {
        return Ok(None);
    }
    check_name(s).map(|s| Some(s.to_string()))
}

fn check_name(s: &str) -> Result<&str, LineError> {
    if s.len() > MAX_NAME || s.chars().any(char::is_control) {
        return Err(LineError::BadName);
    }
    Ok(s)
}

/// Splits `<loc>:<rest>` after a packet word: the location in the prefix
/// (`Sensorroom1:...`), or as a first field (`Sensor:room1:...`) when that field cannot be
/// part of the data (`is_data` says which).
fn split_location(
    after: &str,
    is_data: impl Fn(&str) -> bool,
) -> Result<(Option<String>, &str), LineError> {
    let (prefix, rest) = after.split_once(':').ok_or(LineError::UnknownPacket)?;
    if !prefix.trim().is_empty() {
        return Ok((clean_location(prefix)?, rest));
    }
    match rest.split_once(':') {
        // `ADC3:=905` is a key with a stray ':', not a location.
        Some((field, data)) if !is_data(field) && !data.starts_with('=') => {
            Ok((clean_location(field)?, data))
        }
        _ => Ok((None, rest)),
    }
}

fn parse_body(body: &str) -> Result<Packet, LineError> {
    if let Some(n) = word("serialno:", body) {
        let v = body[n..].trim();
        return if v.is_empty() {
            Err(LineError::EmptyValue)
        } else {
            Ok(Packet::SerialNo(check_name(v)?.to_string()))
        };
    }
    if let Some(n) = word("locid:", body) {
        return clean_location(&body[n..])?
            .map(Packet::LocId)
            .ok_or(LineError::EmptyValue);
    }
    if let Some(n) = word("sensor", body) {
        let (location, data) = split_location(&body[n..], |f| f.contains('='))?;
        return Ok(Packet::Sensor {
            location,
            readings: parse_readings(data)?,
        });
    }
    if let Some(n) = word("eeprom", body) {
        let (id, data) = body[n..].split_once(':').ok_or(LineError::UnknownPacket)?;
        let data = data.trim();
        if data.len() != EEPROM_WORDS * 4 {
            return Err(LineError::BadEeprom("expected 3328 hex digits"));
        }
        let words = hex_words(data).ok_or(LineError::BadEeprom("not hex"))?;
        return Ok(Packet::Eeprom {
            id: clean_location(id)?.unwrap_or_default(),
            words,
        });
    }
    if let Some(n) = word("frame", body) {
        let (location, data) = split_location(&body[n..], looks_thermal)?;
        let (values, calibration) = parse_thermal(data.trim())?;
        return Ok(Packet::Thermal {
            location,
            values,
            calibration,
        });
    }
    Err(LineError::UnknownPacket)
}

fn looks_thermal(field: &str) -> bool {
    field.len() >= 3 * THERMAL_VALUES / 2
}

fn parse_readings(data: &str) -> Result<Vec<(String, Value)>, LineError> {
    let mut out = Vec::new();
    for part in data.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (k, v) = part.split_once('=').ok_or(LineError::BadReading)?;
        // Firmware sometimes sends `ADC3:=905`: a stray ':' belongs to no one.
        let k = k.trim().trim_end_matches(':').trim();
        let v = v.trim();
        if k.is_empty() || v.is_empty() {
            return Err(LineError::BadReading);
        }
        if k.len() > crate::v1::MAX_KEY || out.len() == crate::v1::MAX_READINGS {
            return Err(LineError::TooManyReadings);
        }
        let value = if v.contains('.') {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .map(Value::Float)
        } else {
            v.parse::<i64>().ok().map(Value::Int)
        }
        .ok_or(LineError::BadReading)?;
        out.push((k.to_string(), value));
    }
    if out.is_empty() {
        return Err(LineError::BadReading);
    }
    // Kept while queued (and counted by capacity): no room for readings that never came.
    out.shrink_to_fit();
    Ok(out)
}

/// Hex digit values (0xFF: not a hex digit). Thermal frames are 3 KB of hex each, at
/// thousands per second: a table lookup per digit instead of `from_str_radix` per word.
const HEX: [u8; 256] = {
    let mut t = [0xFFu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// One word of 1–4 hex digits.
fn hex_word(w: &[u8]) -> Option<u16> {
    if w.is_empty() || w.len() > 4 {
        return None;
    }
    let mut v = 0u16;
    for &b in w {
        let d = HEX[b as usize];
        if d == 0xFF {
            return None;
        }
        v = v << 4 | d as u16;
    }
    Some(v)
}

fn hex_words(s: &str) -> Option<Vec<u16>> {
    if !s.len().is_multiple_of(4) {
        return None;
    }
    s.as_bytes().chunks_exact(4).map(hex_word).collect()
}

type Thermal = (Vec<u16>, Option<Vec<u16>>);

/// The three payload forms: 768 space-separated hex words; 3072 hex digits; or 3336 (3072 plus
/// a 66-word calibration block).
fn parse_thermal(data: &str) -> Result<Thermal, LineError> {
    if data.contains(char::is_whitespace) {
        let values: Option<Vec<u16>> = data
            .as_bytes()
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
            .map(hex_word)
            .collect();
        let values = values.ok_or(LineError::BadThermal("a word is not 1–4 hex digits"))?;
        if values.len() != THERMAL_VALUES {
            return Err(LineError::BadThermal("expected 768 words"));
        }
        return Ok((values, None));
    }
    match data.len() {
        3072 => Ok((
            hex_words(data).ok_or(LineError::BadThermal("not hex"))?,
            None,
        )),
        3336 => {
            let all = hex_words(data).ok_or(LineError::BadThermal("not hex"))?;
            let (v, c) = all.split_at(THERMAL_VALUES);
            Ok((v.to_vec(), Some(c.to_vec())))
        }
        _ => Err(LineError::BadThermal(
            "expected 768 words, 3072 or 3336 hex digits",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> Result<Option<Packet>, LineError> {
        parse_line(s.as_bytes())
    }

    fn sensor(loc: Option<&str>, r: &[(&str, Value)]) -> Packet {
        Packet::Sensor {
            location: loc.map(str::to_string),
            readings: r.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn every_packet_of_the_reference() {
        use Value::*;
        assert_eq!(
            p("#serialno:SIM409534!").unwrap(),
            Some(Packet::SerialNo("SIM409534".into()))
        );
        assert_eq!(
            p("#locid:room_0!\r").unwrap(),
            Some(Packet::LocId("room_0".into()))
        );
        let plain = sensor(
            None,
            &[("ADC1", Int(592)), ("ADC2", Int(894)), ("ADC3", Int(905))],
        );
        assert_eq!(
            p("#Sensor:ADC1=592,ADC2=894,ADC3=905!").unwrap(),
            Some(plain.clone())
        );
        assert_eq!(
            p("  #Sensor:ADC1=592,ADC2=894,ADC3:=905!  ").unwrap(),
            Some(plain)
        );
        assert_eq!(
            p("#Sensor:T=21.5,N=-3!").unwrap(),
            Some(sensor(None, &[("T", Float(21.5)), ("N", Int(-3))]))
        );
        let located = sensor(Some("kitchen"), &[("ADC1", Int(1))]);
        assert_eq!(p("#Sensorkitchen:ADC1=1!").unwrap(), Some(located.clone()));
        assert_eq!(
            p("#Sensor<kitchen>:ADC1=1!").unwrap(),
            Some(located.clone())
        );
        assert_eq!(p("#Sensor:kitchen:ADC1=1!").unwrap(), Some(located));
        // The `!` is a terminator to strip, not a delimiter: a line without one still parses.
        assert_eq!(
            p("#Sensor:ADC1=7").unwrap(),
            Some(sensor(None, &[("ADC1", Int(7))]))
        );
        assert_eq!(p("").unwrap(), None);
        assert_eq!(p("   \r").unwrap(), None);
    }

    #[test]
    fn names_beyond_the_limit_are_refused_not_truncated() {
        let at = "a".repeat(MAX_NAME);
        let over = "a".repeat(MAX_NAME + 1);
        assert_eq!(
            p(&format!("#locid:{at}!")).unwrap(),
            Some(Packet::LocId(at.clone()))
        );
        for line in [
            format!("#locid:{over}!"),
            format!("#serialno:{over}!"),
            format!("#Sensor{over}:ADC1=1!"),
            format!("#Sensor:{over}:ADC1=1!"),
            "#locid:room\u{7}!".to_string(),
            "#locid:ro\tom!".to_string(),
        ] {
            assert_eq!(p(&line), Err(LineError::BadName), "{line:?}");
        }
        assert_eq!(LineError::BadName.reason(), "bad_name");
        // Readings a v1 Sample could not carry whole are refused, not cut.
        let readings = |n: usize| {
            (0..n)
                .map(|i| format!("K{i}=1"))
                .collect::<Vec<_>>()
                .join(",")
        };
        assert!(p(&format!("#Sensor:{}!", readings(32))).is_ok());
        assert_eq!(
            p(&format!("#Sensor:{}!", readings(33))),
            Err(LineError::TooManyReadings)
        );
        let key = "k".repeat(33);
        assert_eq!(
            p(&format!("#Sensor:{key}=1!")),
            Err(LineError::TooManyReadings)
        );
        // The longest name a device may give still fits a v1 stream field whole.
        assert!("thermal/".len() + MAX_NAME <= 255);
    }

    #[test]
    fn thermal_payloads_in_all_three_forms() {
        let values: Vec<u16> = (0..768).map(|i| (i * 85) as u16).collect();
        let words = values
            .iter()
            .map(|v| format!("{v:x}"))
            .collect::<Vec<_>>()
            .join(" ");
        let packed: String = values.iter().map(|v| format!("{v:04X}")).collect();
        let cal: Vec<u16> = (0..66).map(|i| 0xC000 + i).collect();
        let with_cal = packed.clone() + &cal.iter().map(|v| format!("{v:04x}")).collect::<String>();
        for (line, loc, c) in [
            (format!("#frame:{words}!"), None, None),
            (format!("#frame:{packed}!"), None, None),
            (format!("#framecam2:{packed}!"), Some("cam2"), None),
            (
                format!("#frame:cam2:{with_cal}!"),
                Some("cam2"),
                Some(cal.clone()),
            ),
        ] {
            assert_eq!(
                p(&line).unwrap(),
                Some(Packet::Thermal {
                    location: loc.map(str::to_string),
                    values: values.clone(),
                    calibration: c
                }),
                "{}",
                &line[..30]
            );
        }
        let eeprom: String = (0..832).map(|i| format!("{:04x}", i * 3)).collect();
        match p(&format!("#EEPROM7:{eeprom}!")).unwrap() {
            Some(Packet::Eeprom { id, words }) => {
                assert_eq!(id, "7");
                assert_eq!(words.len(), 832);
                assert_eq!(words[831], 831 * 3);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_lines_are_rejected_with_a_reason() {
        let cases = [
            ("Sensor:ADC1=5!", "not_a_packet"),
            ("#hello:1!", "unknown_packet"),
            ("#Sensor:ADC1!", "bad_reading"),
            ("#Sensor:ADC1=abc!", "bad_reading"),
            ("#Sensor:=5!", "bad_reading"),
            ("#Sensor:!", "bad_reading"),
            ("#Sensor:T=1.2.3!", "bad_reading"),
            ("#locid:!", "empty_value"),
            ("#serialno:!", "empty_value"),
            ("#frame:0102!", "bad_thermal"),
            ("#frame:1 2 3!", "bad_thermal"),
            ("#EEPROM1:00!", "bad_eeprom"),
        ];
        for (line, reason) in cases {
            assert_eq!(p(line).unwrap_err().reason(), reason, "{line}");
        }
        let mut bad = "#frame:".to_string();
        bad.push_str(&"zz00".repeat(768));
        assert_eq!(p(&bad).unwrap_err().reason(), "bad_thermal");
        assert_eq!(
            parse_line(&[b'#', 0xFF, b'!']).unwrap_err(),
            LineError::NotUtf8
        );
    }

    #[test]
    fn splitter_handles_any_split_and_skips_over_long_lines() {
        let mut s = LineSplitter::new();
        s.push(b"#locid:a!\r\n#Sens");
        assert_eq!(s.next_line().unwrap().unwrap(), b"#locid:a!\r");
        assert!(s.next_line().is_none());
        s.push(b"or:X=1!\n");
        assert_eq!(s.next_line().unwrap().unwrap(), b"#Sensor:X=1!");
        // An over-long line: one error, then the line after it.
        s.push(&vec![b'x'; MAX_LINE + 10]);
        assert_eq!(s.next_line().unwrap().unwrap_err(), LineError::TooLong);
        assert!(s.next_line().is_none());
        assert!(s.pending() <= MAX_LINE);
        s.push(b"more\n#locid:b!\n");
        assert_eq!(s.next_line().unwrap().unwrap(), b"#locid:b!");
        assert!(s.next_line().is_none());
    }

    proptest! {
        /// Lines split anywhere come out the same; nothing panics on any bytes.
        #[test]
        fn splitting_is_invisible(lines in proptest::collection::vec("[#a-zA-Z0-9:=,.! <>]{0,60}", 0..20), cuts in proptest::collection::vec(0usize..2000, 0..10)) {
            let stream: Vec<u8> = lines.iter().flat_map(|l| l.bytes().chain([b'\n'])).collect();
            let mut cuts = cuts.into_iter().map(|c| c % (stream.len() + 1)).collect::<Vec<_>>();
            cuts.push(0);
            cuts.push(stream.len());
            cuts.sort_unstable();
            let mut s = LineSplitter::new();
            let mut got = Vec::new();
            for w in cuts.windows(2) {
                s.push(&stream[w[0]..w[1]]);
                while let Some(l) = s.next_line() {
                    got.push(String::from_utf8(l.unwrap().to_vec()).unwrap());
                }
            }
            prop_assert_eq!(got, lines.clone());
            for l in &lines {
                let _ = parse_line(l.as_bytes());
            }
        }

        #[test]
        fn hex_words_match_the_standard_parser(w in "[0-9a-fA-FgGxX+ -]{0,5}") {
            let std = (!w.is_empty() && w.len() <= 4 && w.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| u16::from_str_radix(&w, 16).ok())
                .flatten();
            prop_assert_eq!(hex_word(w.as_bytes()), std);
        }

        #[test]
        fn any_bytes_parse_or_fail_cleanly(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = parse_line(&b);
        }

        #[test]
        fn sensor_readings_roundtrip(r in proptest::collection::vec(("[A-Z][A-Z0-9]{0,5}", any::<i32>()), 1..8), loc in proptest::option::of("[a-z][a-z0-9_]{0,8}")) {
            let body = r.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",");
            let line = match &loc { Some(l) => format!("#Sensor:{l}:{body}!"), None => format!("#Sensor:{body}!") };
            let got = parse_line(line.as_bytes()).unwrap().unwrap();
            let want = Packet::Sensor {
                location: loc.clone(),
                readings: r.iter().map(|(k, v)| (k.clone(), Value::Int(*v as i64))).collect(),
            };
            prop_assert_eq!(got, want);
        }
    }
}
