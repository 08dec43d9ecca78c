//! The two screen protocols a connection may speak.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// framewire v1 (`spec/PROTOCOL.md`).
    V1,
    /// The Daylight Mirror app's wire format.
    Daylight,
}

impl Protocol {
    /// The name in logs and counters.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::V1 => "framewire",
            Protocol::Daylight => "daylight",
        }
    }
}
