//! The X11 screen as a [`FrameSource`].
//!
//! - **Nothing is read while nothing changes.** XDamage reports every drawing operation as a
//!   rectangle (raw rectangles: no round trip to fetch a region). A capture with no damage and
//!   an unmoved cursor returns the previous picture with empty damage, so the pipeline neither
//!   converts nor encodes anything; it costs one poll of the event queue and one cursor query.
//! - **Only damaged rows are read,** with MIT-SHM `GetImage` straight into a shared segment at
//!   their offset: the picture handed to the pipeline *is* that segment, so a capture copies
//!   nothing and allocates nothing. Without MIT-SHM (a remote display) plain `GetImage` is used.
//! - **The cursor is drawn in** (XFixes cursor image), and the rows it left are read again.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use framewire_capture::{CaptureError, Captured, Damage, FrameSource};
use x11rb::connection::Connection;
use x11rb::protocol::damage::{self, ConnectionExt as _};
use x11rb::protocol::shm::ConnectionExt as _;
use x11rb::protocol::xfixes::ConnectionExt as _;
use x11rb::protocol::xproto::{ConnectionExt as _, ImageFormat, ImageOrder, Window};
use x11rb::protocol::Event;
use x11rb::rust_connection::RustConnection;

use crate::cursor::Cursor;
use crate::display::{connect, X11Error};
use crate::shm_image::ShmImage;

/// The part of the screen to capture: `WxH+X+Y` (or `WxH` at the origin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub x: i16,
    pub y: i16,
    pub width: u16,
    pub height: u16,
}

impl FromStr for Region {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("region {s:?}: expected WxH or WxH+X+Y, e.g. 1600x1200+0+0");
        let (size, pos) = match s.split_once('+') {
            Some((a, b)) => (a, Some(b)),
            None => (s, None),
        };
        let (w, h) = size.split_once(['x', 'X']).ok_or_else(bad)?;
        let (x, y) = match pos {
            Some(p) => p.split_once('+').ok_or_else(bad)?,
            None => ("0", "0"),
        };
        let r = Region {
            width: w.parse().map_err(|_| bad())?,
            height: h.parse().map_err(|_| bad())?,
            x: x.parse().map_err(|_| bad())?,
            y: y.parse().map_err(|_| bad())?,
        };
        if r.width == 0 || r.height == 0 || r.x < 0 || r.y < 0 {
            return Err(bad());
        }
        Ok(r)
    }
}

/// What the source did, for counters: idle polls cost nothing but the poll.
#[derive(Debug, Default)]
pub struct X11Stats {
    /// Captures asked for.
    pub polls: AtomicU64,
    /// Captures that found nothing changed and read nothing.
    pub idle: AtomicU64,
    /// GetImage requests made, and the rows they read.
    pub reads: AtomicU64,
    pub rows_read: AtomicU64,
    /// Damage rectangles reported by the server.
    pub damage_events: AtomicU64,
}

enum Backing {
    Shm(ShmImage),
    Plain(Vec<u8>),
}

pub struct X11Source {
    conn: RustConnection,
    root: Window,
    display: String,
    region: Region,
    backing: Backing,
    damage: damage::Damage,
    with_cursor: bool,
    cursor: Option<Cursor>,
    /// Rows where the cursor was drawn into the picture.
    cursor_rows: Option<(u32, u32)>,
    first: bool,
    pending: Vec<(u32, u32)>,
    stats: Arc<X11Stats>,
}

/// Above this share of the picture, one read of everything beats many bands.
const FULL_READ_SHARE: f64 = 0.6;

impl X11Source {
    /// Opens `display` (or `$DISPLAY`) and captures `region` (or the whole screen).
    pub fn open(
        display: Option<&str>,
        region: Option<Region>,
        with_cursor: bool,
    ) -> Result<X11Source, X11Error> {
        let (conn, screen_num, name) = connect(display)?;
        let setup = conn.setup();
        let screen = &setup.roots[screen_num];
        let (sw, sh) = (screen.width_in_pixels, screen.height_in_pixels);
        let bpp = setup
            .pixmap_formats
            .iter()
            .find(|f| f.depth == screen.root_depth)
            .map(|f| f.bits_per_pixel)
            .unwrap_or(0);
        if bpp != 32 || setup.image_byte_order != ImageOrder::LSB_FIRST {
            return Err(X11Error::Unsupported(
                name,
                format!(
                    "screen depth {} at {bpp} bits per pixel, {:?}: framewire captures 24/32-bit little-endian screens",
                    screen.root_depth, setup.image_byte_order
                ),
            ));
        }
        let region = region.unwrap_or(Region {
            x: 0,
            y: 0,
            width: sw,
            height: sh,
        });
        if region.x as u32 + region.width as u32 > sw as u32
            || region.y as u32 + region.height as u32 > sh as u32
        {
            return Err(X11Error::Unsupported(
                name,
                format!(
                    "region {}x{}+{}+{} is outside the {sw}x{sh} screen",
                    region.width, region.height, region.x, region.y
                ),
            ));
        }
        let root = screen.root;
        conn.damage_query_version(1, 1)
            .map_err(X11Error::request)?
            .reply()
            .map_err(|e| {
                X11Error::Unsupported(name.clone(), format!("no DAMAGE extension: {e}"))
            })?;
        conn.xfixes_query_version(4, 0)
            .map_err(X11Error::request)?
            .reply()
            .map_err(|e| {
                X11Error::Unsupported(name.clone(), format!("no XFIXES extension: {e}"))
            })?;
        let dmg = conn.generate_id().map_err(X11Error::request)?;
        conn.damage_create(dmg, root, damage::ReportLevel::RAW_RECTANGLES)
            .map_err(X11Error::request)?;
        let len = region.width as usize * region.height as usize * 4;
        let backing = match ShmImage::new(&conn, len)? {
            Some(s) => Backing::Shm(s),
            None => Backing::Plain(vec![0; len]),
        };
        conn.flush().map_err(X11Error::request)?;
        Ok(X11Source {
            conn,
            root,
            display: name,
            region,
            backing,
            damage: dmg,
            with_cursor,
            cursor: None,
            cursor_rows: None,
            first: true,
            pending: Vec::new(),
            stats: Arc::default(),
        })
    }

    /// The next capture reads the whole picture, as the first one does (benchmarks).
    pub fn force_full(&mut self) {
        self.first = true;
    }

    pub fn stats(&self) -> Arc<X11Stats> {
        self.stats.clone()
    }

    /// Whether captures go through MIT-SHM.
    pub fn uses_shm(&self) -> bool {
        matches!(self.backing, Backing::Shm(_))
    }

    fn err(e: impl std::fmt::Display) -> CaptureError {
        CaptureError::Failed(format!("X11: {e}"))
    }

    /// Collects damage reported since the last call, as row ranges of the region.
    fn drain_damage(&mut self) -> Result<(), CaptureError> {
        let r = self.region;
        let mut any = false;
        while let Some(ev) = self.conn.poll_for_event().map_err(Self::err)? {
            if let Event::DamageNotify(e) = ev {
                any = true;
                self.stats.damage_events.fetch_add(1, Ordering::Relaxed);
                let a = e.area;
                let (x0, x1) = (a.x as i32, a.x as i32 + a.width as i32);
                let (y0, y1) = (a.y as i32, a.y as i32 + a.height as i32);
                if x1 <= r.x as i32 || x0 >= r.x as i32 + r.width as i32 {
                    continue;
                }
                let y0 = (y0 - r.y as i32).clamp(0, r.height as i32) as u32;
                let y1 = (y1 - r.y as i32).clamp(0, r.height as i32) as u32;
                if y0 < y1 {
                    self.pending.push((y0, y1));
                }
            }
        }
        if any {
            // Raw rectangles still accumulate a region server-side: empty it.
            self.conn
                .damage_subtract(self.damage, x11rb::NONE, x11rb::NONE)
                .map_err(Self::err)?;
        }
        Ok(())
    }

    fn query_cursor(&mut self) -> Result<Option<Cursor>, CaptureError> {
        if !self.with_cursor {
            return Ok(None);
        }
        let c = self
            .conn
            .xfixes_get_cursor_image()
            .map_err(Self::err)?
            .reply()
            .map_err(Self::err)?;
        Ok(Some(Cursor {
            x: c.x as i32,
            y: c.y as i32,
            width: c.width as u32,
            height: c.height as u32,
            xhot: c.xhot as u32,
            yhot: c.yhot as u32,
            serial: c.cursor_serial,
            pixels: c.cursor_image,
        }))
    }

    /// Reads rows `[y0, y1)` of the region into the picture at their place.
    fn read_rows(&mut self, y0: u32, y1: u32) -> Result<(), CaptureError> {
        let r = self.region;
        let stride = r.width as usize * 4;
        let (x, y, w, h) = (r.x, r.y + y0 as i16, r.width, (y1 - y0) as u16);
        match &mut self.backing {
            Backing::Shm(s) => {
                self.conn
                    .shm_get_image(
                        self.root,
                        x,
                        y,
                        w,
                        h,
                        !0,
                        ImageFormat::Z_PIXMAP.into(),
                        s.seg,
                        (y0 as usize * stride) as u32,
                    )
                    .map_err(Self::err)?
                    .reply()
                    .map_err(Self::err)?;
            }
            Backing::Plain(buf) => {
                let img = self
                    .conn
                    .get_image(ImageFormat::Z_PIXMAP, self.root, x, y, w, h, !0)
                    .map_err(Self::err)?
                    .reply()
                    .map_err(Self::err)?;
                let n = (y1 - y0) as usize * stride;
                if img.data.len() < n {
                    return Err(Self::err("short GetImage reply"));
                }
                buf[y0 as usize * stride..y0 as usize * stride + n].copy_from_slice(&img.data[..n]);
            }
        }
        self.stats.reads.fetch_add(1, Ordering::Relaxed);
        self.stats
            .rows_read
            .fetch_add((y1 - y0) as u64, Ordering::Relaxed);
        Ok(())
    }

    fn picture_mut(&mut self) -> &mut [u8] {
        match &mut self.backing {
            Backing::Shm(s) => s.bytes_mut(),
            Backing::Plain(v) => v,
        }
    }

    fn picture(&self) -> &[u8] {
        match &self.backing {
            Backing::Shm(s) => s.bytes(),
            Backing::Plain(v) => v,
        }
    }
}

/// Sorts and merges row ranges.
fn merge(mut v: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    v.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(l) if a <= l.1 => l.1 = l.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

impl FrameSource for X11Source {
    fn name(&self) -> String {
        format!("x11:{}", self.display)
    }

    fn size(&self) -> (u32, u32) {
        (self.region.width as u32, self.region.height as u32)
    }

    fn capture(&mut self) -> Result<Captured<'_>, CaptureError> {
        self.stats.polls.fetch_add(1, Ordering::Relaxed);
        let (w, h) = self.size();
        self.drain_damage()?;
        let cursor = self.query_cursor()?;
        let cursor_changed = cursor != self.cursor;
        let full = std::mem::take(&mut self.first);
        if !full && self.pending.is_empty() && !cursor_changed {
            self.stats.idle.fetch_add(1, Ordering::Relaxed);
            return Ok(Captured {
                width: w,
                height: h,
                bgra: self.picture(),
                damage: Damage::Rows(Vec::new()),
            });
        }
        let mut bands = std::mem::take(&mut self.pending);
        // The rows the old cursor covered are read again, clean; so are the new cursor's rows,
        // so it is drawn over what is there now and not over an older cursor.
        bands.extend(self.cursor_rows.take());
        let (ox, oy) = (self.region.x as i32, self.region.y as i32);
        let new_rows = cursor.as_ref().and_then(|c| c.rows(oy, h));
        bands.extend(new_rows);
        let bands = if full { vec![(0, h)] } else { merge(bands) };
        let total: u32 = bands.iter().map(|(a, b)| b - a).sum();
        // Many bands are read in one request, but only the damaged ones are reported: the
        // pipeline converts, hashes and compares just those (rows read beyond them are the
        // same pixels as before).
        if total as f64 > FULL_READ_SHARE * h as f64 {
            self.read_rows(0, h)?;
        } else {
            for &(a, b) in &bands {
                self.read_rows(a, b)?;
            }
        }
        if let Some(c) = &cursor {
            let c = c.clone();
            c.draw(self.picture_mut(), w, h, ox, oy);
            self.cursor_rows = new_rows;
        }
        self.cursor = cursor;
        Ok(Captured {
            width: w,
            height: h,
            bgra: self.picture(),
            damage: if full {
                Damage::All
            } else {
                Damage::Rows(bands)
            },
        })
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("x11_polls", s.polls.load(Ordering::Relaxed)),
            ("x11_idle_polls", s.idle.load(Ordering::Relaxed)),
            ("x11_image_reads", s.reads.load(Ordering::Relaxed)),
            ("x11_rows_read", s.rows_read.load(Ordering::Relaxed)),
            ("x11_damage_events", s.damage_events.load(Ordering::Relaxed)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_parse_and_bad_ones_are_explained() {
        assert_eq!(
            "1600x1200+10+20".parse::<Region>().unwrap(),
            Region {
                x: 10,
                y: 20,
                width: 1600,
                height: 1200
            }
        );
        assert_eq!("800x600".parse::<Region>().unwrap().x, 0);
        for bad in ["", "0x10", "10x", "axb", "10x10+1", "10x10+-1+0"] {
            assert!(bad.parse::<Region>().unwrap_err().contains("WxH"), "{bad}");
        }
    }

    #[test]
    fn row_ranges_merge() {
        assert_eq!(
            merge(vec![(5, 9), (0, 2), (1, 3), (9, 10)]),
            [(0, 3), (5, 10)]
        );
    }
}
