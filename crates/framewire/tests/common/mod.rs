//! What the tests that start `framewire serve` share: free ports for its four listeners.

/// A port nobody listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Free ports for the v1, Daylight, sensor and HTTP listeners, and the options naming them.
pub fn listener_ports() -> ([u16; 4], Vec<String>) {
    let p = [free_port(), free_port(), free_port(), free_port()];
    let args = ["--port", "--daylight-port", "--sensor-port", "--http-port"]
        .iter()
        .zip(p)
        .flat_map(|(o, v)| [o.to_string(), v.to_string()])
        .collect();
    (p, args)
}
