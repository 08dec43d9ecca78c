//! Touches become mouse actions: a touch that stays within the deadzone is a tap (a click
//! where it went down); one that leaves it is a drag (press at the start, moves, release).
//! Scrolls become wheel notches with acceleration: fast swipes move further per pixel, and
//! fractions of a notch carry over so slow scrolls are not lost.

use crate::action::Action;

#[derive(Debug, Clone, Copy)]
pub struct GestureConfig {
    /// How far (screen pixels) a touch may wander and still be a tap.
    pub deadzone_px: f64,
    /// Screen pixels of scroll per wheel notch at slow speed.
    pub pixels_per_notch: f64,
    /// Per-event scroll (pixels) at which the speed doubles, and the largest factor.
    pub accel_px: f64,
    pub max_accel: f64,
}

impl Default for GestureConfig {
    fn default() -> Self {
        GestureConfig {
            deadzone_px: 12.0,
            pixels_per_notch: 40.0,
            accel_px: 60.0,
            max_accel: 4.0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Idle,
    /// Down, not yet out of the deadzone: may still be a tap.
    Pending {
        x: i32,
        y: i32,
    },
    Dragging,
}

pub struct Gestures {
    cfg: GestureConfig,
    state: State,
    carry: (f64, f64),
}

impl Gestures {
    pub fn new(cfg: GestureConfig) -> Self {
        Gestures {
            cfg,
            state: State::Idle,
            carry: (0.0, 0.0),
        }
    }

    pub fn down(&mut self, x: i32, y: i32) -> Vec<Action> {
        let mut out = Vec::new();
        if self.state == State::Dragging {
            // A down without an up (a lost packet): finish the old drag first.
            out.push(Action::Button {
                button: 1,
                down: false,
            });
        }
        self.state = State::Pending { x, y };
        out
    }

    pub fn moved(&mut self, x: i32, y: i32) -> Vec<Action> {
        match self.state {
            State::Idle => vec![Action::Move { x, y }],
            State::Pending { x: x0, y: y0 } => {
                let d = ((x - x0) as f64).hypot((y - y0) as f64);
                if d <= self.cfg.deadzone_px {
                    return Vec::new();
                }
                self.state = State::Dragging;
                vec![
                    Action::Move { x: x0, y: y0 },
                    Action::Button {
                        button: 1,
                        down: true,
                    },
                    Action::Move { x, y },
                ]
            }
            State::Dragging => vec![Action::Move { x, y }],
        }
    }

    pub fn up(&mut self, x: i32, y: i32) -> Vec<Action> {
        let s = std::mem::replace(&mut self.state, State::Idle);
        match s {
            State::Idle => Vec::new(),
            State::Pending { x: x0, y: y0 } => vec![
                Action::Move { x: x0, y: y0 },
                Action::Button {
                    button: 1,
                    down: true,
                },
                Action::Button {
                    button: 1,
                    down: false,
                },
            ],
            State::Dragging => vec![
                Action::Move { x, y },
                Action::Button {
                    button: 1,
                    down: false,
                },
            ],
        }
    }

    /// A scroll of `(dx, dy)` screen pixels (positive: content moves left/up, i.e. the user
    /// scrolls right/down) becomes wheel notches.
    pub fn scroll(&mut self, dx: f64, dy: f64) -> Vec<Action> {
        let c = self.cfg;
        let speed = dx.hypot(dy);
        let accel = (1.0 + speed / c.accel_px).min(c.max_accel);
        self.carry.0 += dx * accel / c.pixels_per_notch;
        self.carry.1 += dy * accel / c.pixels_per_notch;
        let mut out = Vec::new();
        let (nx, ny) = (self.carry.0.trunc(), self.carry.1.trunc());
        self.carry.0 -= nx;
        self.carry.1 -= ny;
        for _ in 0..(ny.abs() as i64).min(50) {
            out.push(Action::Wheel {
                dx: 0,
                dy: ny.signum() as i8,
            });
        }
        for _ in 0..(nx.abs() as i64).min(50) {
            out.push(Action::Wheel {
                dx: nx.signum() as i8,
                dy: 0,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action::*;

    #[test]
    fn a_touch_inside_the_deadzone_is_a_click_where_it_went_down() {
        let mut g = Gestures::new(GestureConfig::default());
        assert!(g.down(100, 100).is_empty());
        assert!(g.moved(105, 108).is_empty()); // 9.4 px: still a tap
        assert_eq!(
            g.up(106, 108),
            [
                Move { x: 100, y: 100 },
                Button {
                    button: 1,
                    down: true
                },
                Button {
                    button: 1,
                    down: false
                }
            ]
        );
    }

    #[test]
    fn leaving_the_deadzone_is_a_drag_from_the_start() {
        let mut g = Gestures::new(GestureConfig::default());
        g.down(100, 100);
        assert_eq!(
            g.moved(100, 120),
            [
                Move { x: 100, y: 100 },
                Button {
                    button: 1,
                    down: true
                },
                Move { x: 100, y: 120 }
            ]
        );
        assert_eq!(g.moved(100, 125), [Move { x: 100, y: 125 }]);
        assert_eq!(
            g.up(100, 130),
            [
                Move { x: 100, y: 130 },
                Button {
                    button: 1,
                    down: false
                }
            ]
        );
        // Hover moves (no finger down) just move.
        assert_eq!(g.moved(5, 5), [Move { x: 5, y: 5 }]);
    }

    #[test]
    fn scrolling_accelerates_and_keeps_fractions() {
        let mut g = Gestures::new(GestureConfig::default());
        // Slow: 10 px events, factor 1.17: 4 events ≈ 1.17 notches → one notch.
        let slow: usize = (0..4).map(|_| g.scroll(0.0, 10.0).len()).sum();
        assert_eq!(slow, 1);
        // 120 px as twelve slow events: 12 × 10 × 1.17 / 40 = 3.5 → 3 notches (0.5 kept)...
        let mut g1 = Gestures::new(GestureConfig::default());
        let slow12: usize = (0..12).map(|_| g1.scroll(0.0, 10.0).len()).sum();
        assert_eq!(slow12, 3);
        // ...and as one fast swipe: factor 1 + 120/60 = 3 → 9 notches, all downwards.
        let mut g2 = Gestures::new(GestureConfig::default());
        let fast = g2.scroll(0.0, 120.0);
        assert_eq!(fast.len(), 9);
        assert!(fast.iter().all(|a| *a == Wheel { dx: 0, dy: 1 }));
        assert_eq!(g2.scroll(-80.0, 0.0).len(), 4); // 80 × (1 + 1.33) / 40 = 4.67 → 4 left
        assert_eq!(g2.scroll(-80.0, 0.0)[0], Wheel { dx: -1, dy: 0 });
    }
}
