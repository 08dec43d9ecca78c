//! The native viewer's window, drawn with x11rb like the capture side: no second toolkit or
//! native library (minifb, SDL2 and softbuffer would each bring their own X or Wayland
//! loading), exact pixels (grey expanded to the window's 32-bit format, 1:1), and MIT-SHM
//! PutImage so a frame does not go through the socket. Stats go in the title.

use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::shm::ConnectionExt as _;
use x11rb::protocol::xproto::{
    AtomEnum, ChangeWindowAttributesAux, ConnectionExt as _, CreateGCAux, CreateWindowAux,
    EventMask, Gcontext, ImageFormat, PropMode, Window, WindowClass,
};
use x11rb::protocol::Event;
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

use crate::display::{connect, X11Error};
use crate::shm_image::ShmImage;

pub struct ViewerWindow {
    conn: RustConnection,
    win: Window,
    gc: Gcontext,
    width: u32,
    height: u32,
    depth: u8,
    shm: Option<ShmImage>,
    buf: Vec<u8>,
    delete: u32,
    closed: bool,
}

impl ViewerWindow {
    pub fn open(
        display: Option<&str>,
        width: u32,
        height: u32,
        title: &str,
    ) -> Result<Self, X11Error> {
        let (conn, screen_num, _) = connect(display)?;
        let screen = &conn.setup().roots[screen_num];
        let (root, visual, depth) = (screen.root, screen.root_visual, screen.root_depth);
        let win = conn.generate_id().map_err(X11Error::request)?;
        conn.create_window(
            depth,
            win,
            root,
            0,
            0,
            width as u16,
            height as u16,
            0,
            WindowClass::INPUT_OUTPUT,
            visual,
            &CreateWindowAux::new()
                .background_pixel(screen.black_pixel)
                .event_mask(EventMask::EXPOSURE | EventMask::STRUCTURE_NOTIFY),
        )
        .map_err(X11Error::request)?;
        let gc = conn.generate_id().map_err(X11Error::request)?;
        conn.create_gc(gc, win, &CreateGCAux::new().graphics_exposures(0))
            .map_err(X11Error::request)?;
        let protocols = conn
            .intern_atom(false, b"WM_PROTOCOLS")
            .map_err(X11Error::request)?
            .reply()
            .map_err(X11Error::request)?
            .atom;
        let delete = conn
            .intern_atom(false, b"WM_DELETE_WINDOW")
            .map_err(X11Error::request)?
            .reply()
            .map_err(X11Error::request)?
            .atom;
        conn.change_property32(PropMode::REPLACE, win, protocols, AtomEnum::ATOM, &[delete])
            .map_err(X11Error::request)?;
        conn.change_property8(
            PropMode::REPLACE,
            win,
            AtomEnum::WM_CLASS,
            AtomEnum::STRING,
            b"framewire\0framewire\0",
        )
        .map_err(X11Error::request)?;
        conn.map_window(win).map_err(X11Error::request)?;
        conn.flush().map_err(X11Error::request)?;
        let mut w = ViewerWindow {
            conn,
            win,
            gc,
            width: 0,
            height: 0,
            depth,
            shm: None,
            buf: Vec::new(),
            delete,
            closed: false,
        };
        w.set_title(title);
        w.resize(width, height)?;
        Ok(w)
    }

    pub fn window_id(&self) -> u32 {
        self.win
    }

    pub fn set_title(&self, title: &str) {
        let _ = self.conn.change_property8(
            PropMode::REPLACE,
            self.win,
            AtomEnum::WM_NAME,
            AtomEnum::STRING,
            title.as_bytes(),
        );
        let _ = self.conn.flush();
    }

    /// Makes the window and its image buffer fit a picture of this size.
    pub fn resize(&mut self, width: u32, height: u32) -> Result<(), X11Error> {
        if (width, height) == (self.width, self.height) {
            return Ok(());
        }
        self.width = width;
        self.height = height;
        let len = width as usize * height as usize * 4;
        self.shm = ShmImage::new(&self.conn, len)?;
        if self.shm.is_none() {
            self.buf = vec![0; len];
        }
        self.conn
            .configure_window(
                self.win,
                &x11rb::protocol::xproto::ConfigureWindowAux::new()
                    .width(width)
                    .height(height),
            )
            .map_err(X11Error::request)?;
        let _ = self
            .conn
            .change_window_attributes(self.win, &ChangeWindowAttributesAux::new());
        Ok(())
    }

    /// Draws a grey picture, given row by row (top first), 1:1 at the window's top left.
    pub fn show<'a>(
        &mut self,
        width: u32,
        height: u32,
        rows: impl Iterator<Item = &'a [u8]>,
    ) -> Result<(), X11Error> {
        self.draw(width, height, |buf| {
            let stride = width as usize * 4;
            for (y, row) in rows.enumerate().take(height as usize) {
                let out = &mut buf[y * stride..(y + 1) * stride];
                for (px, &g) in out.chunks_exact_mut(4).zip(row) {
                    px[0] = g;
                    px[1] = g;
                    px[2] = g;
                    px[3] = 255;
                }
            }
        })
    }

    /// Draws a colour picture: `fill` writes it, B G R A rows packed, into the image buffer.
    pub fn show_bgra(
        &mut self,
        width: u32,
        height: u32,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), X11Error> {
        self.draw(width, height, fill)
    }

    fn draw(
        &mut self,
        width: u32,
        height: u32,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), X11Error> {
        self.resize(width, height)?;
        let stride = width as usize * 4;
        let buf: &mut [u8] = match &mut self.shm {
            Some(s) => s.bytes_mut(),
            None => &mut self.buf,
        };
        fill(&mut buf[..stride * height as usize]);
        let (w, h) = (width as u16, height as u16);
        match &self.shm {
            Some(s) => {
                self.conn
                    .shm_put_image(
                        self.win,
                        self.gc,
                        w,
                        h,
                        0,
                        0,
                        w,
                        h,
                        0,
                        0,
                        self.depth,
                        ImageFormat::Z_PIXMAP.into(),
                        false,
                        s.seg,
                        0,
                    )
                    .map_err(X11Error::request)?;
                // The segment is rewritten by the next frame: wait until the server has read it.
                self.conn
                    .get_input_focus()
                    .map_err(X11Error::request)?
                    .reply()
                    .map_err(X11Error::request)?;
            }
            None => {
                // Without MIT-SHM, in bands that fit the request size limit.
                let max_rows = ((self.conn.maximum_request_bytes() - 64) / stride).max(1);
                for y0 in (0..height as usize).step_by(max_rows) {
                    let n = max_rows.min(height as usize - y0);
                    self.conn
                        .put_image(
                            ImageFormat::Z_PIXMAP,
                            self.win,
                            self.gc,
                            w,
                            n as u16,
                            0,
                            y0 as i16,
                            0,
                            self.depth,
                            &self.buf[y0 * stride..(y0 + n) * stride],
                        )
                        .map_err(X11Error::request)?;
                }
                self.conn.flush().map_err(X11Error::request)?;
            }
        }
        Ok(())
    }

    /// Handles window events; returns false once the user closed the window.
    pub fn pump(&mut self) -> bool {
        while let Ok(Some(ev)) = self.conn.poll_for_event() {
            match ev {
                Event::ClientMessage(m) if m.data.as_data32()[0] == self.delete => {
                    self.closed = true
                }
                Event::DestroyNotify(_) => self.closed = true,
                _ => {}
            }
        }
        !self.closed
    }
}
