//! The tablet's display settings as the Daylight host keeps them: brightness (0 turns the
//! backlight off), the brightness to restore when it comes back on, and warmth. Each change
//! says which commands go to the viewers; the caller broadcasts them.
//!
//! The Daylight app ignores the backlight command (0x03), so, as the original host does, the
//! backlight goes off as brightness 0 and on again as the saved brightness.

use std::sync::Arc;

use framewire_session::ViewerCommand;

use crate::mirror::{Mirror, Settings};

/// The display settings of a running server, for code outside it (the `--adb` watcher).
pub struct DisplayHandle(pub Arc<Mirror>);

impl DisplayHandle {
    /// Takes the tablet's own brightness and amber rate as the current settings, without
    /// sending anything (what `--adb` reads from the device when it connects).
    pub fn adopt_device_display(&self, brightness: Option<i64>, amber_rate: Option<i64>) {
        self.0
            .update_settings(|s| s.adopt_device(brightness, amber_rate));
    }
}

/// `BACKLIGHT` arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backlight {
    On,
    Off,
    Toggle,
}

/// The original host's defaults: brightness and warmth 128, backlight on, capturing, no tuning.
impl Default for Settings {
    fn default() -> Self {
        Settings {
            brightness: 128,
            saved_brightness: 128,
            warmth: 128,
            backlight_on: true,
            running: true,
            tuning: Default::default(),
        }
    }
}

impl Settings {
    /// A new brightness, clamped to 0–255. Remembered for the backlight unless it is 0.
    pub fn set_brightness(&mut self, v: i64) -> ViewerCommand {
        let v = v.clamp(0, 255) as u8;
        self.brightness = v;
        self.saved_brightness = v.max(1);
        self.backlight_on = v > 0;
        ViewerCommand::Brightness(v)
    }

    /// A new warmth, clamped to 0–255.
    pub fn set_warmth(&mut self, v: i64) -> ViewerCommand {
        self.warmth = v.clamp(0, 255) as u8;
        ViewerCommand::Warmth(self.warmth)
    }

    /// What the tablet reports at start (`adb shell settings get system …`): taken as the
    /// current values without sending anything, as the original host does.
    pub fn adopt_device(&mut self, brightness: Option<i64>, amber_rate: Option<i64>) {
        if let Some(b) = brightness {
            let b = b.clamp(0, 255) as u8;
            self.brightness = b;
            self.saved_brightness = b.max(1);
            self.backlight_on = b > 0;
        }
        if let Some(a) = amber_rate {
            // The setting goes to 1023 but its effect stops at 255.
            self.warmth = a.clamp(0, 255) as u8;
        }
    }

    /// Turns the backlight on or off; the brightness command to send when it changed.
    pub fn set_backlight(&mut self, b: Backlight) -> Option<ViewerCommand> {
        let on = match b {
            Backlight::On => true,
            Backlight::Off => false,
            Backlight::Toggle => !self.backlight_on,
        };
        if on == self.backlight_on {
            return None;
        }
        self.backlight_on = on;
        if on {
            self.brightness = self.saved_brightness.max(1);
        } else {
            self.saved_brightness = self.brightness.max(1);
            self.brightness = 0;
        }
        Some(ViewerCommand::Brightness(self.brightness))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backlight_is_brightness_zero_then_the_saved_brightness() {
        let mut s = Settings::default();
        assert_eq!(s.set_brightness(200), ViewerCommand::Brightness(200));
        assert_eq!(
            s.set_backlight(Backlight::Off),
            Some(ViewerCommand::Brightness(0))
        );
        assert!(!s.backlight_on);
        assert_eq!(s.set_backlight(Backlight::Off), None, "already off");
        assert_eq!(
            s.set_backlight(Backlight::Toggle),
            Some(ViewerCommand::Brightness(200))
        );
        assert!(s.backlight_on);
        // Brightness 0 is the backlight off; turning it on again gives at least 1.
        s.set_brightness(0);
        assert!(!s.backlight_on);
        assert_eq!(
            s.set_backlight(Backlight::On),
            Some(ViewerCommand::Brightness(1))
        );
    }

    #[test]
    fn values_are_clamped_and_device_values_adopted() {
        let mut s = Settings::default();
        assert_eq!(s.set_brightness(300), ViewerCommand::Brightness(255));
        assert_eq!(s.set_brightness(-4), ViewerCommand::Brightness(0));
        assert_eq!(s.set_warmth(1023), ViewerCommand::Warmth(255));
        s.adopt_device(Some(77), Some(600));
        assert_eq!((s.brightness, s.saved_brightness, s.warmth), (77, 77, 255));
        s.set_backlight(Backlight::Off);
        assert_eq!(
            s.set_backlight(Backlight::On),
            Some(ViewerCommand::Brightness(77))
        );
    }
}
