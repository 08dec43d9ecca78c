//! `framewire bench link`: one emulated link (two network namespaces, the seeded user-space
//! relay, tbf for the rate) held open for programs this binary does not drive itself, such as
//! the browser benchmark (`web/bench/browser-net.mjs`, headless Chromium in one namespace and
//! the server in the other). It prints one JSON line, `{"ns_a", "ns_b", "addr_a", "addr_b"}`,
//! then holds the link until its standard input closes, and takes it down.

use std::io::{BufRead, Write};

use framewire_netem::{Impairment, Link, LinkConfig};

use crate::args::BenchLinkArgs;

pub fn run(a: &BenchLinkArgs) -> anyhow::Result<()> {
    framewire_netem::available().map_err(|e| anyhow::anyhow!("emulated links: {e}"))?;
    let imp = Impairment {
        delay_us: (a.rtt_ms * 1000.0 / 2.0) as u64,
        loss: a.loss_pct / 100.0,
        seed: a.seed,
        rate_kbit: a.rate_mbit.map(|m| m * 1000),
        ..Impairment::default()
    };
    let link = Link::start(LinkConfig::unique("bench-link").both_ways(imp))?;
    let line = serde_json::json!({
        "ns_a": link.a(),
        "ns_b": link.b(),
        "addr_a": link.addr_a().to_string(),
        "addr_b": link.addr_b().to_string(),
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    // Held until whoever started us closes our input (or dies: the pipe closes then too).
    for l in std::io::stdin().lock().lines() {
        if l.is_err() {
            break;
        }
    }
    drop(link);
    Ok(())
}
