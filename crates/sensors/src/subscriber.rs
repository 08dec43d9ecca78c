//! A framewire v1 subscriber connection (Hello with role Subscriber; its stream field is the
//! filter: a name, a prefix ending in `/` or `*`, or `*`): Sample, Thermal and Missed packets,
//! in the order the hub delivers them, batched into as few writes as possible.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::BytesMut;
use framewire_hub::{Delivery, Filter, Item};
use framewire_proto::v1::{self, caps, Packet};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing::{info, warn};

use crate::streams::{Streams, Subscription, DEFAULT_SUBSCRIBER_CAPACITY};
use framewire_telemetry::clock::now_us;
use framewire_telemetry::observe_us;
use tokio::io::{AsyncRead, AsyncWrite};

/// Bytes gathered before a write when more deliveries are waiting.
const BATCH: usize = 64 * 1024;
/// Deliveries taken from the hub under one lock (256 grids are about 400 KB).
const TAKE: usize = 256;
/// How long a subscriber that was cut off has to take its last packets.
const CUT_OFF_WRITE: std::time::Duration = std::time::Duration::from_secs(1);

/// Appends `d` to `out`; returns when its item was accepted (µs), for the delivery histogram.
fn encode(d: Delivery, out: &mut BytesMut) -> Option<u64> {
    let accepted = match &d {
        Delivery::Item(i) => Some(i.accepted_us()),
        Delivery::Missed { .. } | Delivery::CutOff { .. } => None,
    };
    match d {
        Delivery::Missed { samples } => Packet::Missed { samples }.encode(out),
        // The last delivery: what it lost, then why it is being disconnected.
        Delivery::CutOff { samples, reason } => {
            Packet::Missed { samples }.encode(out);
            Packet::Goodbye {
                code: v1::goodbye::TOO_SLOW,
                reason: reason.to_string(),
            }
            .encode(out);
        }
        Delivery::Item(Item::Sample(s)) => v1::encode_sample(
            out,
            &s.stream,
            &s.device,
            s.device_seq,
            s.accepted_us,
            s.readings.iter().map(|(k, v)| (k.as_str(), *v)),
        ),
        Delivery::Item(Item::Thermal(t)) => Packet::Thermal {
            stream: t.stream.to_string(),
            device: t.device.to_string(),
            device_seq: t.device_seq,
            accepted_us: t.accepted_us,
            width: t.width.min(u16::MAX as u32) as u16,
            height: t.height.min(u16::MAX as u32) as u16,
            values: t.values.clone(),
        }
        .encode(out),
    }
    accepted
}

/// A subscriber whose Hello was accepted, on a connection split into its two halves: welcomes
/// it, then delivers what its filter matches until it leaves. `dec` holds whatever it sent
/// after its Hello.
pub async fn serve<R, W>(
    (mut rd, mut wr): (R, W),
    mut dec: v1::Decoder,
    peer: SocketAddr,
    streams: &Arc<Streams>,
    filter: &str,
    delivery: &prometheus::Histogram,
) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let sub = streams.subscribe(Filter::parse(filter), DEFAULT_SUBSCRIBER_CAPACITY);
    wr.write_all(
        &Packet::Welcome {
            version: v1::VERSION,
            caps: caps::ALL,
            session: 0,
        }
        .to_bytes(),
    )
    .await?;
    streams.counters.subscribers_connected.inc();
    info!(%peer, filter, "subscriber connected");
    let reader = async {
        loop {
            while let Some(p) = dec.next_packet()? {
                match p {
                    Packet::Goodbye { .. } => return Ok::<(), anyhow::Error>(()),
                    // Pings and anything else a subscriber may send are not needed here.
                    _ => streams.counters.subscriber_packets_ignored.inc(),
                }
            }
            if rd.read_buf(dec.buffer_mut()).await? == 0 {
                return Ok(());
            }
        }
    };
    // The writer runs on the hub thread (see `streams.rs`); this task keeps the reader. The
    // writer ends with this task however it ends (the guard aborts it, which unsubscribes).
    let mut writer = Writer(streams.spawn_writer(write_deliveries(sub, wr, delivery.clone())));
    let r = tokio::select! {
        r = reader => r,
        r = &mut writer.0 => match r {
            Ok(r) => r,
            Err(e) => Err(anyhow::anyhow!("the subscriber's writer stopped: {e}")),
        },
    };
    drop(writer);
    if let Err(e) = &r {
        warn!(%peer, error = %e, "subscriber connection ended");
    }
    streams.counters.subscribers_disconnected.inc();
    r
}

/// A subscriber's writer task, aborted when its connection's task ends.
struct Writer(tokio::task::JoinHandle<anyhow::Result<()>>);

impl Drop for Writer {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Writes `buf`. If the hub cuts the subscriber off meanwhile (the write is blocked: its peer is
/// not reading), the write gets [`CUT_OFF_WRITE`] more to finish, so a subscriber that is
/// still reading can take its last packets; one that is not is disconnected then.
async fn write_unless_cut<W: tokio::io::AsyncWrite + Unpin>(
    sub: &Subscription,
    wr: &mut W,
    buf: &[u8],
) -> anyhow::Result<()> {
    let mut write = std::pin::pin!(wr.write_all(buf));
    tokio::select! {
        r = &mut write => return Ok(r?),
        _ = sub.cut_off() => {}
    }
    match tokio::time::timeout(CUT_OFF_WRITE, write).await {
        Ok(r) => Ok(r?),
        Err(_) => anyhow::bail!("cut off, and not reading: closed without its last packets"),
    }
}

/// Takes deliveries from the hub, encodes them and writes them, batched into as few writes as
/// there are wake-ups; records each item's accepted → written time. Returns on error, or
/// after the Goodbye of a subscriber the hub cut off.
async fn write_deliveries<W: tokio::io::AsyncWrite + Unpin>(
    sub: Subscription,
    mut wr: W,
    delivery: prometheus::Histogram,
) -> anyhow::Result<()> {
    let mut buf = BytesMut::with_capacity(BATCH);
    let mut accepted = Vec::with_capacity(1024);
    let mut taken = Vec::with_capacity(TAKE);
    loop {
        sub.next_batch(TAKE, &mut taken).await;
        buf.clear();
        accepted.clear();
        let mut cut = None;
        loop {
            for d in taken.drain(..) {
                if let Delivery::CutOff { reason, .. } = &d {
                    cut = Some(*reason);
                }
                accepted.extend(encode(d, &mut buf));
            }
            if buf.len() >= BATCH || cut.is_some() || sub.take(TAKE, &mut taken) == 0 {
                break;
            }
        }
        // A subscriber cut off gets what it lost and the Goodbye, after what it already had
        // waiting in the socket; its connection ends (bounded: it may not read at all).
        if let Some(reason) = cut {
            let _ = tokio::time::timeout(CUT_OFF_WRITE, wr.write_all(&buf)).await;
            let _ = tokio::time::timeout(CUT_OFF_WRITE, wr.shutdown()).await;
            anyhow::bail!("cut off: {reason}");
        }
        write_unless_cut(&sub, &mut wr, &buf).await?;
        let now = now_us();
        for &a in &accepted {
            observe_us(&delivery, now.saturating_sub(a));
        }
    }
}
