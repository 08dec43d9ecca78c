/// One thing to do to the screen's input, in screen pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Move the pointer to an absolute position.
    Move { x: i32, y: i32 },
    /// Press or release button 1 (left), 2 (middle) or 3 (right).
    Button { button: u8, down: bool },
    /// One wheel notch: `dy` −1 up / +1 down, `dx` −1 left / +1 right.
    Wheel { dx: i8, dy: i8 },
    /// Press or release the key with this X11 keysym.
    Key { keysym: u32, down: bool },
}
