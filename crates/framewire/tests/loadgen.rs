//! `framewire loadgen` against a real server: the original tool's JSON schema, every reading
//! accounted for at its end-to-end subscriber, the server's CPU and RSS found by port, and a
//! clear failure when the subscriber cannot connect.

use std::net::SocketAddr;
use std::process::Command;

use framewire_capture::{Resolution, Scene};
use framewire_server::{Server, ServerConfig, SourceSpec};

async fn server() -> framewire_server::ServerHandle {
    Server::start(ServerConfig {
        source: SourceSpec::Synthetic(Scene::Idle),
        resolution: Resolution {
            width: 64,
            height: 48,
        },
        v1_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        daylight_addr: None,
        sensor_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        ..ServerConfig::default()
    })
    .await
    .unwrap()
}

fn loadgen(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_framewire"))
        .arg("loadgen")
        .args(args)
        .output()
        .expect("running framewire loadgen")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_reading_is_counted_and_reported_in_the_original_schema() {
    let server = server().await;
    let (sensor, v1) = (
        server.sensor_addr.unwrap().port().to_string(),
        server.v1_addr.unwrap().port().to_string(),
    );
    let stats = std::env::temp_dir().join(format!("fw-loadgen-{}.json", std::process::id()));
    let out = tokio::task::spawn_blocking({
        let stats = stats.clone();
        move || {
            loadgen(&[
                "--clients",
                "20",
                "--packets",
                "200",
                "--rate",
                "400",
                "--write-every-ms",
                "10",
                "--include-frames",
                "--port",
                &sensor,
                "--subscribe-port",
                &v1,
                "--report-interval",
                "0.2",
                "--stats-file",
                stats.to_str().unwrap(),
            ])
        }
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "loadgen failed: {stderr}");
    assert!(
        stderr.contains("delivered to the subscriber"),
        "no progress lines: {stderr}"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let _ = std::fs::remove_file(&stats);
    // The original tool's top-level keys and per-client entries.
    for key in ["test_config", "per_client", "aggregate", "system_metrics"] {
        assert!(j.get(key).is_some(), "no {key} in {j}");
    }
    assert_eq!(j["test_config"]["clients"], 20);
    assert_eq!(j["per_client"].as_array().unwrap().len(), 20);
    assert_eq!(j["aggregate"]["total_packets"], 4000);
    assert_eq!(j["aggregate"]["total_errors"], 0);
    // Every client connected before any sent.
    assert_eq!(j["connect"]["connected"], 20);
    assert!(
        stderr.contains("20 of 20 clients connected"),
        "no connect line: {stderr}"
    );
    // Half the packets are thermal frames, half sensor readings; every reading arrived.
    let e2e = &j["end_to_end"];
    assert_eq!(e2e["samples_sent"], 2000);
    assert_eq!(e2e["delivered"], 2000);
    assert_eq!(e2e["lost"], 0);
    let (p50, p99, max) = (
        e2e["p50_ms"].as_f64().unwrap(),
        e2e["p99_ms"].as_f64().unwrap(),
        e2e["max_ms"].as_f64().unwrap(),
    );
    assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{e2e}");
    // The server (this test process, found by its listening port) was measured.
    assert!(j["server_process"]["rss_mb"].as_f64().unwrap() > 1.0, "{j}");
    // And the server agrees on what it accepted.
    assert_eq!(server.counter("sensor_samples_accepted"), 2000);
    assert_eq!(server.counter("sensor_thermal_accepted"), 2000);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_cannot_connect_is_a_clear_error() {
    let server = server().await;
    let sensor = server.sensor_addr.unwrap().port().to_string();
    // A port nobody listens on: bind one, then free it.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let unused = free.local_addr().unwrap().port().to_string();
    drop(free);
    let out = tokio::task::spawn_blocking(move || {
        loadgen(&[
            "--clients",
            "2",
            "--packets",
            "5",
            "--port",
            &sensor,
            "--subscribe-port",
            &unused,
        ])
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("subscriber") && stderr.contains("--no-subscriber"),
        "unclear error: {stderr}"
    );
    server.shutdown().await;
}

#[test]
fn clients_that_cannot_connect_end_the_run_with_a_clear_error() {
    // A port nobody listens on: bind one, then free it.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let unused = free.local_addr().unwrap().port().to_string();
    drop(free);
    let out = loadgen(&[
        "--clients",
        "3",
        "--duration",
        "0.5",
        "--port",
        &unused,
        "--no-subscriber",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Each client still reached the start line (nothing waits for them forever), and the
    // run says why nothing was sent.
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("0 of 3 clients connected"), "{stderr}");
    assert!(
        stderr.contains("3 of 3 clients stopped early: connect:"),
        "{stderr}"
    );
    assert!(stderr.contains("no client could connect"), "{stderr}");
}
