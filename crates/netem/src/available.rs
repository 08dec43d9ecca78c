//! Can a link be built here? A yes, or the first reason not, in words a user can act on.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::cmd;
use crate::link::TUN_NAME;
use crate::namespace::{in_namespace, Namespace};
use crate::shaper;
use crate::tun::Tun;

/// Checks, in order: root, `/dev/net/tun`, iproute2's `ip` and `tc`, and then does the real
/// thing once in a throw-away namespace: create it, create a TUN device in it, put a `tbf`
/// qdisc on its loopback, delete it.
pub fn available() -> Result<(), String> {
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Err(format!(
            "not root (euid {euid}): network namespaces and TUN devices need root"
        ));
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err(
            "/dev/net/tun is missing (no TUN support in this kernel or container; \
                    `modprobe tun`, or give the container the device)"
                .into(),
        );
    }
    for tool in ["ip", "tc"] {
        cmd::run(tool, &["-V"]).map_err(|e| format!("iproute2's {tool}: {e}"))?;
    }

    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "fw-probe-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let ns =
        Namespace::create(&name).map_err(|e| format!("cannot create a network namespace: {e}"))?;
    in_namespace(ns.name(), || Tun::create(TUN_NAME))
        .and_then(|r| r)
        .map_err(|e| format!("cannot create a TUN device in a namespace: {e}"))?;
    let args = shaper::tbf_args(ns.name(), "lo", 10_000);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cmd::run("tc", &args).map_err(|e| format!("cannot set a tbf qdisc (rate limits): {e}"))?;
    Ok(())
}
