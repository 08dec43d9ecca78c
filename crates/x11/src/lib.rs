//! framewire on X11, through x11rb (pure Rust, no libX11 at build time):
//!
//! | file | what |
//! |---|---|
//! | `display.rs` | connecting, with the errors a user needs (no display, Wayland) |
//! | `shm_image.rs` | a System V shared-memory segment attached to the X server (MIT-SHM) |
//! | `capture.rs` | the screen as a `FrameSource`: XDamage decides what is read, the cursor drawn in |
//! | `cursor.rs` | blending the XFixes cursor image over a BGRA picture |
//! | `inject.rs` | pointer, wheel and key events into the X server with XTest |
//! | `window.rs` | a window that shows grey pictures (the native viewer) |
//! | `xvfb.rs` | a private Xvfb screen for tests and benchmarks |

pub mod capture;
pub mod cursor;
pub mod display;
pub mod inject;
mod shm_image;
pub mod window;
pub mod xvfb;

pub use capture::{Region, X11Source};
pub use display::{connect, X11Error};
pub use inject::Injector;
pub use window::ViewerWindow;
