//! A loopback HTTP endpoint for an operator's scraper and load balancer:
//! `GET /metrics` (Prometheus text) and `GET /ready` (200 or 503), one
//! request per connection, on a thread of its own. Enough for an example
//! and a test; a relay would mount the same two handlers on its own server.
#![allow(dead_code)]

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use relaystore::{Health, Store};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

/// Installs a Prometheus recorder as the process's `metrics` recorder and
/// returns its handle (for `/metrics`). Once per process.
/// The store's histograms get the buckets it documents
/// (`relaystore::metrics::HISTOGRAMS`), so they are exported as
/// Prometheus histograms, not summaries.
pub fn install_recorder() -> PrometheusHandle {
    let mut builder = PrometheusBuilder::new();
    for (name, buckets) in relaystore::metrics::HISTOGRAMS {
        builder = builder
            .set_buckets_for_metric(Matcher::Full(name.into()), buckets)
            .expect("buckets are given");
    }
    builder
        .install_recorder()
        .expect("no other metrics recorder is installed")
}

/// Serves `/metrics` and `/ready` on `127.0.0.1:port` (0: any free port);
/// returns the address it listens on.
pub fn serve(store: Store, metrics: PrometheusHandle, port: u16) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = answer(stream, &store, &metrics);
        }
    });
    Ok(addr)
}

fn answer(mut stream: TcpStream, store: &Store, metrics: &PrometheusHandle) -> std::io::Result<()> {
    let mut reader = BufReader::new(&stream);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // Read the headers through the blank line, so closing the connection
    // after the answer never discards unread bytes (which resets it).
    let mut header = String::new();
    while reader.read_line(&mut header)? > 0 && header != "\r\n" && header != "\n" {
        header.clear();
    }
    let path = request.split_whitespace().nth(1).unwrap_or("");
    let (status, body) = match path {
        "/metrics" => ("200 OK", metrics.render()),
        "/ready" => match store.health() {
            Health::Ready => ("200 OK", "ready\n".to_string()),
            other => ("503 Service Unavailable", format!("{other:?}\n")),
        },
        _ => ("404 Not Found", "not found\n".to_string()),
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// `GET path` from `addr`: the status code and the body.
pub fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr)?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    std::io::Read::read_to_string(&mut stream, &mut response)?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_string());
    Ok((status, body))
}

/// The value of the sample `name{labels}` in a Prometheus text body (0 if
/// absent): `labels` as the exposition writes them, e.g.
/// `collection="leases"`.
pub fn sample(body: &str, name: &str, labels: &[&str]) -> f64 {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(series, _)| {
            let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
            metric == name && labels.iter().all(|want| rest.contains(want))
        })
        .filter_map(|(_, value)| value.parse::<f64>().ok())
        .sum()
}
