//! `framewire`: argument parsing and wiring only; the work is in the library crates.

mod adb;
mod cli;
mod demo;
mod inspect;
mod publish;
mod record;
mod serve;
mod view;

use clap::Parser;
use framewire_bench::{
    codec as bench_codec, e2e as bench_e2e, ipc as bench_ipc, loadgen, net as bench_net,
    x11 as bench_x11,
};

/// mimalloc instead of glibc malloc: the sensor path allocates a few small objects per line
/// (the sample, its readings), and glibc's `_int_malloc` was 9 % of the server's profile at
/// 200 000 lines/s.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    // A server holds a descriptor per viewer, device and subscriber: take the hard limit.
    if let Err(e) = framewire_net::raise_nofile_limit() {
        eprintln!("warning: cannot raise the open-file limit to its hard limit: {e}");
    }
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("FRAMEWIRE_LOG").unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new(if cli.verbose { "info" } else { "warn" })
        });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
    take_realtime(match &cli.command {
        cli::Command::Serve(a) | cli::Command::Mirror(a) => a.sched.realtime,
        cli::Command::View(a) => a.sched.realtime,
        _ => None,
    });
    let rt = match cli.command {
        // A viewer is one chain of work: one thread (see `viewer::runtime`).
        cli::Command::View(_) => framewire_client::viewer::runtime(),
        _ => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            // Where `--realtime` was taken, the runtime's workers (the viewers' sessions and
            // sends) take it too, the first time they park; its blocking pool (keyframes for
            // one viewer, the metrics page, the status file) runs no park hook and keeps the
            // normal priority. Without `--realtime` this does nothing.
            .on_thread_park(framewire_sched::follow_once)
            .build(),
    };
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let r = rt.block_on(async move {
        match cli.command {
            cli::Command::Serve(a) => serve::run(a, false).await,
            cli::Command::Mirror(a) => serve::run(a, true).await,
            cli::Command::View(a) => view::run(a).await,
            cli::Command::Loadgen(a) => loadgen::run(a).await,
            cli::Command::Publish(a) => {
                tokio::task::spawn_blocking(move || publish::run(a)).await?
            }
            cli::Command::Record(a) => record::run(a).await,
            cli::Command::Demo(a) => demo::run(a).await,
            cli::Command::Latency(a) => inspect::latency(a).await,
            cli::Command::Ctl(a) => inspect::ctl(a).await,
            cli::Command::Bench(cli::Bench::Codec(a)) => bench_codec::run(a),
            cli::Command::Bench(cli::Bench::E2e(a)) => bench_e2e::run(a).await,
            cli::Command::Bench(cli::Bench::Net(a)) => bench_net::run(&a),
            cli::Command::Bench(cli::Bench::Link(a)) => framewire_bench::link::run(&a),
            cli::Command::Bench(cli::Bench::Ipc(a)) => bench_ipc::run(a),
            cli::Command::Bench(cli::Bench::X11(a)) => bench_x11::run(a).await,
            cli::Command::Bench(cli::Bench::IpcWorker(a)) => bench_ipc::worker(a),
        }
    });
    match r {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `--realtime`: this (the main) thread now; the threads that follow it as they start.
fn take_realtime(priority: Option<u8>) {
    let Some(p) = priority else { return };
    match framewire_sched::realtime(p) {
        Ok(()) => tracing::info!(
            priority = p,
            "the stream's threads run under realtime scheduling (SCHED_FIFO)"
        ),
        Err(e) => tracing::warn!("{e}; going on at normal priority"),
    }
}
