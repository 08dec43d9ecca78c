//! Input into the X server with XTest: the events look to every application like the real
//! mouse and keyboard.

use std::collections::HashMap;

use framewire_input::Action;
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    ConnectionExt as _, Keycode, Window, BUTTON_PRESS_EVENT, BUTTON_RELEASE_EVENT, KEY_PRESS_EVENT,
    KEY_RELEASE_EVENT, MOTION_NOTIFY_EVENT,
};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

use crate::display::{connect, X11Error};

/// X11 keysyms for Shift_L.
const XK_SHIFT_L: u32 = 0xffe1;

pub struct Injector {
    conn: RustConnection,
    root: Window,
    screen: usize,
    /// keysym → (keycode, needs shift), from the server's keyboard map.
    keys: HashMap<u32, (Keycode, bool)>,
    shift: Option<Keycode>,
    pub unknown_keysyms: u64,
}

impl Injector {
    pub fn open(display: Option<&str>) -> Result<Injector, X11Error> {
        let (conn, screen, name) = connect(display)?;
        conn.xtest_get_version(2, 2)
            .map_err(X11Error::request)?
            .reply()
            .map_err(|e| X11Error::Unsupported(name, format!("no XTEST extension: {e}")))?;
        let root = conn.setup().roots[screen].root;
        let (min, max) = (conn.setup().min_keycode, conn.setup().max_keycode);
        let map = conn
            .get_keyboard_mapping(min, max - min + 1)
            .map_err(X11Error::request)?
            .reply()
            .map_err(X11Error::request)?;
        let per = map.keysyms_per_keycode as usize;
        let mut keys = HashMap::new();
        for (i, syms) in map.keysyms.chunks(per.max(1)).enumerate() {
            let code = min + i as u8;
            for (col, &s) in syms.iter().take(2).enumerate() {
                if s != 0 {
                    keys.entry(s).or_insert((code, col == 1));
                }
            }
        }
        let shift = keys.get(&XK_SHIFT_L).map(|&(c, _)| c);
        Ok(Injector {
            conn,
            root,
            screen,
            keys,
            shift,
            unknown_keysyms: 0,
        })
    }

    fn fake(&self, kind: u8, detail: u8, x: i16, y: i16) -> Result<(), X11Error> {
        self.conn
            .xtest_fake_input(kind, detail, 0, self.root, x, y, 0)
            .map_err(X11Error::request)?;
        Ok(())
    }

    /// Performs one action. A key the keyboard map has no keycode for is counted and skipped.
    pub fn apply(&mut self, a: Action) -> Result<(), X11Error> {
        match a {
            Action::Move { x, y } => {
                let c = |v: i32| v.clamp(0, i16::MAX as i32) as i16;
                self.fake(MOTION_NOTIFY_EVENT, 0, c(x), c(y))?
            }
            Action::Button { button, down } => {
                let kind = if down {
                    BUTTON_PRESS_EVENT
                } else {
                    BUTTON_RELEASE_EVENT
                };
                self.fake(kind, button.clamp(1, 3), 0, 0)?
            }
            Action::Wheel { dx, dy } => {
                // Buttons 4/5 scroll up/down, 6/7 left/right: one press and release a notch.
                let b = match (dx.signum(), dy.signum()) {
                    (_, -1) => 4,
                    (_, 1) => 5,
                    (-1, _) => 6,
                    (1, _) => 7,
                    _ => return Ok(()),
                };
                self.fake(BUTTON_PRESS_EVENT, b, 0, 0)?;
                self.fake(BUTTON_RELEASE_EVENT, b, 0, 0)?;
            }
            Action::Key { keysym, down } => {
                let Some(&(code, shifted)) = self.keys.get(&keysym) else {
                    self.unknown_keysyms += 1;
                    return Ok(());
                };
                let kind = if down {
                    KEY_PRESS_EVENT
                } else {
                    KEY_RELEASE_EVENT
                };
                match (shifted, self.shift) {
                    (true, Some(s)) if down => {
                        self.fake(KEY_PRESS_EVENT, s, 0, 0)?;
                        self.fake(kind, code, 0, 0)?;
                    }
                    (true, Some(s)) => {
                        self.fake(kind, code, 0, 0)?;
                        self.fake(KEY_RELEASE_EVENT, s, 0, 0)?;
                    }
                    _ => self.fake(kind, code, 0, 0)?,
                }
            }
        }
        Ok(())
    }

    /// Sends what was queued; call after a batch of actions.
    pub fn flush(&self) -> Result<(), X11Error> {
        self.conn.flush().map_err(X11Error::request)
    }

    /// The screen's size in pixels.
    pub fn screen_size(&self) -> (u16, u16) {
        let s = &self.conn.setup().roots[self.screen];
        (s.width_in_pixels, s.height_in_pixels)
    }

    /// Where the pointer is now (root coordinates), for tests and diagnostics.
    pub fn pointer(&self) -> Result<(i32, i32), X11Error> {
        let r = self
            .conn
            .query_pointer(self.root)
            .map_err(X11Error::request)?
            .reply()
            .map_err(X11Error::request)?;
        Ok((r.root_x as i32, r.root_y as i32))
    }
}
