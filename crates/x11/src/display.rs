//! Connecting to an X display, and saying clearly why not.

use thiserror::Error;
use x11rb::rust_connection::RustConnection;

#[derive(Debug, Error)]
pub enum X11Error {
    #[error("no X display; try `framewire demo` or --source demo")]
    NoDisplay,
    #[error(
        "this is a Wayland session (WAYLAND_DISPLAY={0}) without an X display: framewire captures \
         X11 screens. Run it in an X11 session, or set DISPLAY to an Xwayland display (which shows \
         X11 windows only), or try `framewire demo`"
    )]
    Wayland(String),
    #[error("cannot connect to X display {display}: {why}")]
    Connect { display: String, why: String },
    #[error("X display {0}: {1}")]
    Unsupported(String, String),
    #[error("X request failed: {0}")]
    Request(String),
}

impl X11Error {
    pub fn request(e: impl std::fmt::Display) -> Self {
        X11Error::Request(e.to_string())
    }
}

/// The display to use: the one given, else `$DISPLAY`.
pub fn display_name(given: Option<&str>) -> Result<String, X11Error> {
    if let Some(d) = given.filter(|d| !d.is_empty()) {
        return Ok(d.to_string());
    }
    match std::env::var("DISPLAY") {
        Ok(d) if !d.is_empty() => Ok(d),
        _ => match std::env::var("WAYLAND_DISPLAY") {
            Ok(w) if !w.is_empty() => Err(X11Error::Wayland(w)),
            _ => Err(X11Error::NoDisplay),
        },
    }
}

/// Connects to `display` (or `$DISPLAY`); returns the connection and its default screen.
pub fn connect(display: Option<&str>) -> Result<(RustConnection, usize, String), X11Error> {
    let name = display_name(display)?;
    let (conn, screen) = x11rb::connect(Some(&name)).map_err(|e| X11Error::Connect {
        display: name.clone(),
        why: e.to_string(),
    })?;
    Ok((conn, screen, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_display_wins_and_a_missing_one_is_explained() {
        assert_eq!(display_name(Some(":7")).unwrap(), ":7");
        // Connecting to a display nobody serves is an error that names it.
        let e = connect(Some(":54321")).err().unwrap().to_string();
        assert!(e.contains(":54321"), "{e}");
        assert!(X11Error::NoDisplay.to_string().contains("framewire demo"));
        assert!(X11Error::Wayland("wayland-0".into())
            .to_string()
            .contains("Wayland"));
    }
}
