//! `samsa-discard-sink`: a Kafka-speaking server that stores nothing (see `samsa_bench::sink`).
//!
//! One OS thread per connection with blocking sockets: the load generator opens one connection
//! per broker, so this is the cheapest server shape there is, which is the point of a ceiling.
//! Pipelined requests already read are answered back to back with one write.
//!
//! Usage: samsa-discard-sink --listen 127.0.0.1:PORT [--partitions N]
//!        [--fetch-record-bytes B] [--fetch-batch-records R]
//! Prints `listening on HOST:PORT` once it accepts connections (port 0 picks a free one).

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::Context;
use bytes::BytesMut;
use samsa_bench::sink::{Sink, SinkConfig};
use samsa_protocol::frame::FrameStatus;
use samsa_protocol::FrameDecoder;

/// Connections served at once; more are closed on accept.
const CONNECTIONS_MAX: usize = 1024;
/// Largest request frame (the broker's `socket.request.max.bytes` default).
const REQUEST_BYTES_MAX: usize = 100 << 20;
/// Bytes asked of each read when the buffer has no frame size to go by.
const READ_CHUNK_BYTES: usize = 1 << 20;

fn main() -> anyhow::Result<()> {
    let mut listen = "127.0.0.1:9092".to_string();
    let mut config = SinkConfig::default();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--listen" => listen = value()?,
            "--partitions" => config.default_partitions = value()?.parse()?,
            "--fetch-record-bytes" => config.fetch_record_bytes = value()?.parse()?,
            "--fetch-batch-records" => config.fetch_batch_records = value()?.parse()?,
            "-h" | "--help" => {
                println!("usage: samsa-discard-sink --listen HOST:PORT [--partitions N] [--fetch-record-bytes B] [--fetch-batch-records R]");
                return Ok(());
            }
            other => anyhow::bail!("unknown argument {other} (see --help)"),
        }
    }
    let listener = TcpListener::bind(&listen).with_context(|| format!("bind {listen}"))?;
    let local = listener.local_addr()?;
    config.advertised_host = local.ip().to_string();
    config.advertised_port = local.port() as i32;
    let sink = Arc::new(Sink::new(config)?);
    println!("listening on {local}");
    std::io::stdout().flush()?;

    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if open.fetch_add(1, Ordering::SeqCst) >= CONNECTIONS_MAX {
            open.fetch_sub(1, Ordering::SeqCst);
            eprintln!("samsa-discard-sink: {CONNECTIONS_MAX} connections open, refusing one more");
            continue;
        }
        let sink = sink.clone();
        let open = open.clone();
        std::thread::spawn(move || {
            if let Err(e) = serve(&sink, stream) {
                eprintln!("samsa-discard-sink: connection closed: {e:#}");
            }
            open.fetch_sub(1, Ordering::SeqCst);
        });
    }
    Ok(())
}

fn serve(sink: &Sink, mut stream: TcpStream) -> anyhow::Result<()> {
    stream.set_nodelay(true)?;
    let decoder = FrameDecoder::new(REQUEST_BYTES_MAX);
    let mut input = BytesMut::with_capacity(READ_CHUNK_BYTES);
    let mut output = BytesMut::with_capacity(64 << 10);
    loop {
        while let Some(frame) = decoder.decode(&mut input)? {
            sink.handle(frame, &mut output)?;
        }
        if !output.is_empty() {
            stream.write_all(&output)?;
            output.clear();
        }
        // Room for the whole pending frame, so a large produce is read in a few big reads.
        let want = match decoder.check(&input)? {
            FrameStatus::Incomplete { total_bytes } => total_bytes.max(READ_CHUNK_BYTES),
            FrameStatus::Complete(_) => READ_CHUNK_BYTES,
        };
        input.reserve(want.saturating_sub(input.len()));
        if read_some(&stream, &mut input)? == 0 {
            return Ok(());
        }
    }
}

/// Reads into the buffer's spare capacity without zeroing it first.
fn read_some(stream: &TcpStream, buf: &mut BytesMut) -> std::io::Result<usize> {
    let spare = buf.spare_capacity_mut();
    loop {
        // SAFETY: `spare` is writable memory of `spare.len()` bytes owned by `buf`; read(2)
        // writes at most that many and reports how many, which is all we then expose.
        let n = unsafe {
            libc::read(
                stream.as_raw_fd(),
                spare.as_mut_ptr().cast::<libc::c_void>(),
                spare.len(),
            )
        };
        if n >= 0 {
            let n = n as usize;
            // SAFETY: the first `n` spare bytes were just initialised by read(2).
            unsafe { buf.set_len(buf.len() + n) };
            return Ok(n);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
