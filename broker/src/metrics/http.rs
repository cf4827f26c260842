//! The `/metrics` endpoint: just enough HTTP/1.1 for Prometheus (and curl) to scrape.
//! One request per connection, answered and closed.
//!
//! Limits: a request head of at most [`REQUEST_HEAD_BYTES_MAX`] read within
//! [`REQUEST_TIMEOUT`], at most [`CONNECTIONS_MAX`] scrapes at once; anything else is
//! refused without reading further.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::broker::Broker;

const REQUEST_HEAD_BYTES_MAX: usize = 8 * 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECTIONS_MAX: usize = 16;
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serves scrapes until the task is dropped.
pub async fn serve(listener: std::net::TcpListener, broker: Arc<Broker>) {
    let listener = match listener
        .set_nonblocking(true)
        .and_then(|()| TcpListener::from_std(listener))
    {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("metrics listener unusable: {e}; /metrics is not served");
            return;
        }
    };
    let permits = Arc::new(Semaphore::new(CONNECTIONS_MAX));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!("metrics accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tracing::debug!(%peer, "too many metrics scrapes at once; closing");
            continue;
        };
        let broker = broker.clone();
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(e) = tokio::time::timeout(REQUEST_TIMEOUT, answer(stream, &broker)).await {
                tracing::debug!(%peer, "metrics scrape timed out: {e}");
            }
        });
    }
}

async fn answer(mut stream: TcpStream, broker: &Broker) {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > REQUEST_HEAD_BYTES_MAX {
            let _ = respond(
                &mut stream,
                "431 Request Header Fields Too Large",
                "text/plain",
                "",
            )
            .await;
            return;
        }
    }
    let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let body = super::sample::render(broker);
            let body = if method == "HEAD" {
                String::new()
            } else {
                body
            };
            let _ = respond(&mut stream, "200 OK", CONTENT_TYPE, &body).await;
        }
        ("GET" | "HEAD", _) => {
            let _ = respond(
                &mut stream,
                "404 Not Found",
                "text/plain",
                "metrics are at /metrics\n",
            )
            .await;
        }
        _ => {
            let _ = respond(&mut stream, "405 Method Not Allowed", "text/plain", "").await;
        }
    }
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &str,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}
