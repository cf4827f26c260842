//! A TCP proxy between Kafka clients and a broker that loses Produce responses: it forwards
//! bytes both ways, reads the client's stream as Kafka frames (4-byte size, then api key),
//! and after forwarding every `every`-th Produce request it cuts the client's connection, so
//! the broker appends the batch but the client never hears back and retries it on a new
//! connection. That is the situation idempotence exists for.
//!
//! The broker must advertise the proxy's address (`advertised.listeners`), or clients would
//! go around it after their first Metadata request: bind the proxy first ([`DroppingProxy::bind`]),
//! start the broker advertising [`DroppingProxy::port`], then [`DroppingProxy::forward_to`] it.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const PRODUCE: i16 = 0;
/// Frames larger than this are not Kafka requests a test sends; the proxy gives up on them.
const FRAME_BYTES_MAX: usize = 64 << 20;

struct Shared {
    every: u64,
    max_drops: u64,
    produces: AtomicU64,
    drops: AtomicU64,
    stopped: AtomicBool,
}

pub struct DroppingProxy {
    listener: Option<TcpListener>,
    pub port: u16,
    shared: Arc<Shared>,
}

impl DroppingProxy {
    /// Binds a free local port. `every`: cut the connection after every that-many Produce
    /// requests; at most `max_drops` times, after which it forwards faithfully.
    pub fn bind(every: u64, max_drops: u64) -> DroppingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().unwrap().port();
        DroppingProxy {
            listener: Some(listener),
            port,
            shared: Arc::new(Shared {
                every: every.max(1),
                max_drops,
                produces: AtomicU64::new(0),
                drops: AtomicU64::new(0),
                stopped: AtomicBool::new(false),
            }),
        }
    }

    /// Starts forwarding every accepted connection to the broker on `broker_port`.
    pub fn forward_to(&mut self, broker_port: u16) {
        let listener = self.listener.take().expect("forward_to is called once");
        let shared = self.shared.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if shared.stopped.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(client) = client else { continue };
                let shared = shared.clone();
                std::thread::spawn(move || {
                    let upstream = SocketAddr::from(([127, 0, 0, 1], broker_port));
                    if let Ok(broker) = TcpStream::connect(upstream) {
                        pipe(client, broker, shared);
                    }
                });
            }
        });
    }

    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Connections cut after a Produce so far.
    pub fn drops(&self) -> u64 {
        self.shared.drops.load(Ordering::Relaxed)
    }

    /// Produce requests forwarded so far.
    pub fn produces(&self) -> u64 {
        self.shared.produces.load(Ordering::Relaxed)
    }
}

impl Drop for DroppingProxy {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees `stopped`.
        let _ = TcpStream::connect_timeout(
            &SocketAddr::from(([127, 0, 0, 1], self.port)),
            Duration::from_millis(100),
        );
    }
}

fn pipe(client: TcpStream, broker: TcpStream, shared: Arc<Shared>) {
    let _ = client.set_nodelay(true);
    let _ = broker.set_nodelay(true);
    let (Ok(client_w), Ok(broker_r)) = (client.try_clone(), broker.try_clone()) else {
        return;
    };
    // A response that never comes (acks=0) must not keep the copy thread forever.
    let _ = broker_r.set_read_timeout(Some(Duration::from_secs(60)));
    // Broker to client: a plain copy until either side closes.
    let back = std::thread::spawn(move || {
        let mut broker_r = broker_r;
        let mut client_w = client_w;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match broker_r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if client_w.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = client_w.shutdown(Shutdown::Both);
        let _ = broker_r.shutdown(Shutdown::Both);
    });
    // Client to broker, frame by frame.
    let mut client_r = client;
    let mut broker_w = broker;
    let mut dropped = false;
    loop {
        let mut size = [0u8; 4];
        if client_r.read_exact(&mut size).is_err() {
            break;
        }
        let len = i32::from_be_bytes(size);
        if len < 2 || len as usize > FRAME_BYTES_MAX {
            break;
        }
        let mut frame = vec![0u8; len as usize];
        if client_r.read_exact(&mut frame).is_err() {
            break;
        }
        if broker_w.write_all(&size).is_err() || broker_w.write_all(&frame).is_err() {
            break;
        }
        let api_key = i16::from_be_bytes([frame[0], frame[1]]);
        if api_key == PRODUCE {
            let n = shared.produces.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_multiple_of(shared.every)
                && shared.drops.load(Ordering::Relaxed) < shared.max_drops
            {
                shared.drops.fetch_add(1, Ordering::Relaxed);
                // The broker got the request and will append it; the client loses the answer.
                // The broker side stays open until its response arrives (the copy thread then
                // fails to deliver it and closes both ends).
                let _ = client_r.shutdown(Shutdown::Both);
                dropped = true;
                break;
            }
        }
    }
    if !dropped {
        // The client went away: so does its broker connection.
        let _ = broker_w.shutdown(Shutdown::Both);
    }
    let _ = back.join();
}
