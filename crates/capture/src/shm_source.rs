//! A screen handed to the server by a local process through shared memory
//! (`serve --source shm:NAME`, fed by `framewire publish --shm NAME` or any program that writes
//! `framewire_proto::shm_frame` BGRA messages to the route).
//!
//! Each capture takes the newest frame published since the last one (older ones are skipped,
//! as the pipeline only wants the current picture). Nothing new means no damage, so the
//! pipeline does no work. The picture is copied out of the route, so a slow pipeline never
//! holds the publisher's pool blocks.

use std::time::Duration;

use framewire_proto::shm_frame::{self, PixelFormat};
use framewire_shm::{Channel, Receiver, ShmError};

use crate::source::{CaptureError, Captured, Damage, FrameSource};

pub struct ShmSource {
    name: String,
    rx: Receiver,
    _ch: Channel,
    width: u32,
    height: u32,
    bgra: Vec<u8>,
    seen_any: bool,
    /// Messages that were not BGRA frames.
    pub rejected: u64,
}

impl ShmSource {
    /// Attaches to route `name` (the publisher must have created it).
    pub fn open(name: &str) -> Result<ShmSource, CaptureError> {
        let ch = Channel::attach(name, shm_frame::CAPTURE_TOPIC).map_err(|e| {
            CaptureError::Unavailable(format!(
                "shared-memory route {name}: {e} (start the publisher first, e.g. `framewire publish --shm {name}`)"
            ))
        })?;
        let rx = ch
            .receiver()
            .map_err(|e| CaptureError::Unavailable(e.to_string()))?;
        Ok(ShmSource {
            name: name.to_string(),
            rx,
            _ch: ch,
            width: 0,
            height: 0,
            bgra: Vec::new(),
            seen_any: false,
            rejected: 0,
        })
    }

    /// Takes one message; `Ok(true)` when it changed the picture.
    fn take(&mut self, wait: Duration) -> Result<Option<bool>, CaptureError> {
        let m = if wait.is_zero() {
            self.rx.try_recv()
        } else {
            self.rx.recv_timeout(wait).map(Some).or_else(|e| match e {
                ShmError::Timeout => Ok(None),
                e => Err(e),
            })
        }
        .map_err(|e| CaptureError::Failed(e.to_string()))?;
        let Some(m) = m else { return Ok(None) };
        match shm_frame::parse(&m) {
            Ok((h, px)) if h.format == PixelFormat::Bgra => {
                if h.unchanged {
                    return Ok(Some(false));
                }
                (self.width, self.height) = (h.width, h.height);
                self.bgra.clear();
                self.bgra.extend_from_slice(px);
                self.seen_any = true;
                Ok(Some(true))
            }
            _ => {
                self.rejected += 1;
                Ok(Some(false))
            }
        }
    }
}

impl FrameSource for ShmSource {
    fn name(&self) -> String {
        format!("shm:{}", self.name)
    }

    fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    fn capture(&mut self) -> Result<Captured<'_>, CaptureError> {
        let mut changed = false;
        if !self.seen_any {
            // The first picture: wait a little for it rather than fail at once.
            match self.take(Duration::from_secs(1))? {
                Some(c) => changed |= c,
                None => {
                    return Err(CaptureError::Unavailable(format!(
                        "no frames on shared-memory route {} yet",
                        self.name
                    )))
                }
            }
        }
        // Then everything published since: the newest picture wins.
        while let Some(c) = self.take(Duration::ZERO)? {
            changed |= c;
        }
        if !self.seen_any {
            return Err(CaptureError::Unavailable(format!(
                "no BGRA frames on shared-memory route {}",
                self.name
            )));
        }
        Ok(Captured {
            width: self.width,
            height: self.height,
            bgra: &self.bgra,
            damage: if changed {
                Damage::All
            } else {
                Damage::Rows(Vec::new())
            },
        })
    }
}

/// The other end: publishes BGRA pictures to a route a server takes as its screen. The route
/// drops the oldest frames for a server that is behind, and a publish never waits.
pub struct ShmPublisher {
    ch: Channel,
    tx: framewire_shm::Sender,
}

impl ShmPublisher {
    /// Creates route `name` for pictures of up to `max_pixels` pixels.
    pub fn open(name: &str, max_pixels: usize) -> Result<ShmPublisher, ShmError> {
        let ch = Channel::open(
            name,
            &framewire_shm::Options::route()
                .policy(framewire_shm::Policy::DropOldest)
                .pool(4, shm_frame::HEADER + max_pixels * 4)
                .topic(shm_frame::CAPTURE_TOPIC),
        )?;
        let tx = ch.sender()?;
        Ok(ShmPublisher { ch, tx })
    }

    pub fn channel(&self) -> &Channel {
        &self.ch
    }

    /// Publishes one picture (`None`: unchanged since the last). Returns false when it found
    /// no room (the server still reads every block) and was skipped.
    pub fn publish(
        &mut self,
        seq: u64,
        capture_us: u64,
        width: u32,
        height: u32,
        bgra: Option<&[u8]>,
    ) -> Result<bool, ShmError> {
        let h = shm_frame::FrameHeader {
            seq,
            capture_us,
            width,
            height,
            checksum: 0,
            unchanged: bgra.is_none(),
            format: PixelFormat::Bgra,
        };
        if let Some(px) = bgra {
            assert_eq!(px.len(), h.message_len() - shm_frame::HEADER, "BGRA size");
        }
        match self
            .tx
            .send_with(h.message_len(), Some(Duration::ZERO), |b| {
                h.write(b);
                if let Some(px) = bgra {
                    b[shm_frame::HEADER..].copy_from_slice(px);
                }
            }) {
            Ok(()) => Ok(true),
            Err(ShmError::Full) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
