//! A recording as a capture source (`--source file:PATH`): the pipeline captures from it as it
//! would from a screen, at its recorded pace or one recorded picture per capture.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use framewire_capture::{CaptureError, Captured, Damage, FrameSource};

use crate::format::RecordError;
use crate::reader::Reader;

/// How a replay keeps time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Each capture sees the picture that was on the screen at that moment of the recording,
    /// as a capture of the live screen would: pictures between two captures are merged (their
    /// damage too), and a capture before the next picture is due sees no change.
    Recorded,
    /// Each capture takes the next recorded picture, however fast the captures come.
    Fast,
}

/// Replays a recording, from the start again when it ends.
pub struct FileSource {
    path: PathBuf,
    pace: Pace,
    reader: Reader<BufReader<File>>,
    /// The picture handed out, and the damage gathered since the last capture.
    shown: Vec<u8>,
    damage: Damage,
    /// A picture read but not yet due (recorded pace), with its capture time.
    pending: Option<u64>,
    /// When the recording's time 0 was, on this run through it.
    start: Option<Instant>,
    /// The reader began the recording again: its next picture replaces every row.
    rewound: bool,
    replayed: u64,
    loops: u64,
}

fn open(path: &Path) -> Result<Reader<BufReader<File>>, CaptureError> {
    let f = File::open(path)
        .map_err(|e| CaptureError::Unavailable(format!("{}: {e}", path.display())))?;
    Reader::new(BufReader::with_capacity(1 << 20, f))
        .map_err(|e| CaptureError::Unavailable(format!("{}: {e}", path.display())))
}

impl FileSource {
    pub fn open(path: &Path, pace: Pace) -> Result<FileSource, CaptureError> {
        let reader = open(path)?;
        let h = reader.header();
        Ok(FileSource {
            path: path.to_path_buf(),
            pace,
            shown: vec![0; h.stride() * h.height as usize],
            reader,
            damage: Damage::All,
            pending: None,
            start: None,
            rewound: false,
            replayed: 0,
            loops: 0,
        })
    }

    /// Reads the next picture into the reader; at the end, starts the recording again.
    /// Returns its capture time.
    fn read_next(&mut self) -> Result<u64, CaptureError> {
        let failed = |e: RecordError| CaptureError::Failed(format!("{}: {e}", self.path.display()));
        match self.reader.next_frame() {
            Ok(Some(f)) => return Ok(f.capture_us),
            Ok(None) => {}
            Err(e) => {
                // A bad record: later ones would be applied to the wrong picture, so the
                // replay begins again from the start at the next capture.
                self.reader = open(&self.path)?;
                self.pending = None;
                self.start = None;
                self.rewound = true;
                return Err(failed(e));
            }
        }
        // The end: begin again, every row changes, and the clock restarts. The file may have
        // been recorded again meanwhile: it must still be a picture of this size.
        let reader = open(&self.path)?;
        if reader.header() != self.reader.header() {
            let (a, b) = (self.reader.header(), reader.header());
            return Err(CaptureError::Failed(format!(
                "{}: the recording changed size while it was replayed ({}x{} -> {}x{})",
                self.path.display(),
                a.width,
                a.height,
                b.width,
                b.height
            )));
        }
        self.reader = reader;
        self.loops += 1;
        self.start = None;
        self.rewound = true;
        match self.reader.next_frame().map_err(failed)? {
            Some(f) => Ok(f.capture_us),
            None => Err(CaptureError::Failed(format!(
                "{}: the recording has no pictures",
                self.path.display()
            ))),
        }
    }

    /// Makes the picture the reader holds the one shown, adding its damage. Returns whether
    /// it began the recording again.
    fn take_pending(&mut self) -> bool {
        let stride = self.reader.header().stride();
        let picture = self.reader.picture();
        let rewound = std::mem::take(&mut self.rewound);
        let damage = match rewound {
            true => None,
            false => self.reader.damage().merged(self.reader.header().height),
        };
        match damage {
            None => {
                self.shown.copy_from_slice(picture);
                self.damage = Damage::All;
            }
            Some(rows) => {
                for &(y0, y1) in &rows {
                    let (a, b) = (y0 as usize * stride, y1 as usize * stride);
                    self.shown[a..b].copy_from_slice(&picture[a..b]);
                }
                if let Damage::Rows(d) = &mut self.damage {
                    d.extend(rows);
                }
            }
        }
        self.pending = None;
        self.replayed += 1;
        rewound
    }
}

impl FrameSource for FileSource {
    fn name(&self) -> String {
        format!("file:{}", self.path.display())
    }

    fn size(&self) -> (u32, u32) {
        let h = self.reader.header();
        (h.width, h.height)
    }

    fn capture(&mut self) -> Result<Captured<'_>, CaptureError> {
        match self.pace {
            Pace::Fast => {
                self.read_next()?;
                self.take_pending();
            }
            Pace::Recorded => {
                let mut took = false;
                loop {
                    let at = match self.pending {
                        Some(at) => at,
                        None => {
                            let at = self.read_next()?;
                            self.pending = Some(at);
                            at
                        }
                    };
                    if self.rewound && took {
                        break; // the last picture stays for one capture at least
                    }
                    let start = *self.start.get_or_insert_with(|| {
                        // A first time beyond the machine's uptime (a bad file) starts now.
                        let now = Instant::now();
                        now.checked_sub(Duration::from_micros(at)).unwrap_or(now)
                    });
                    if start.elapsed().as_micros() < at as u128 {
                        break; // not due yet
                    }
                    took = true;
                    if self.take_pending() {
                        break; // one run through the recording per capture at most
                    }
                }
            }
        }
        let (width, height) = self.size();
        let damage = std::mem::replace(&mut self.damage, Damage::Rows(Vec::new()));
        Ok(Captured {
            width,
            height,
            bgra: &self.shown,
            damage,
        })
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("replay_pictures", self.replayed),
            ("replay_loops", self.loops),
        ]
    }
}
