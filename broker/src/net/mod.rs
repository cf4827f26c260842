//! The network layer: shards (one OS thread and event loop each) accepting connections from
//! the listeners and serving them with [`connection::serve`].
//!
//! All shards accept from the same listening sockets (duplicated descriptors): the kernel
//! hands each new connection to one of them, and the connection then stays on that shard.
//! Partitions are not pinned to shards; see DESIGN.md ("Runtime") for why a short per-partition
//! lock was measured to beat a cross-shard hop on this kind of machine.

pub mod connection;
pub mod engine;
pub mod peer;
pub mod quotas;
pub mod request_memory;
pub mod transport;

use std::net::{SocketAddr, TcpListener};
use std::rc::Rc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use engine::IoEngine;

use crate::broker::Broker;
use crate::security::ListenerSecurity;

/// How long a client may take over its TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long shutdown waits for connections to finish their in-flight request.
const SHUTDOWN_DRAIN: Duration = Duration::from_secs(10);

/// Binds a listener (no SO_REUSEPORT: a second broker on the same port must fail loudly,
/// not silently share it).
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Starts `shards` threads serving `listeners` on `engine`.
pub fn start_shards(
    broker: Arc<Broker>,
    engine: IoEngine,
    shards: usize,
    listeners: &[(TcpListener, Arc<ListenerSecurity>)],
) -> std::io::Result<Vec<JoinHandle<()>>> {
    let mut handles = Vec::with_capacity(shards);
    for shard in 0..shards {
        let ls: Vec<(TcpListener, Arc<ListenerSecurity>)> = listeners
            .iter()
            .map(|(l, sec)| Ok((l.try_clone()?, sec.clone())))
            .collect::<std::io::Result<_>>()?;
        let broker = broker.clone();
        let handle = std::thread::Builder::new()
            .name(format!("samsa-shard-{shard}"))
            .spawn(move || match engine {
                IoEngine::Uring => run_uring(broker, ls),
                IoEngine::Epoll => run_epoll(broker, ls),
            })?;
        handles.push(handle);
    }
    Ok(handles)
}

fn run_epoll(broker: Arc<Broker>, listeners: Vec<(TcpListener, Arc<ListenerSecurity>)>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        tokio::task::spawn_local(crate::alloc_count::give_back_memory_when_idle());
        let loops: Vec<_> = listeners
            .into_iter()
            .map(|(l, sec)| {
                let l = tokio::net::TcpListener::from_std(l).expect("register listener with tokio");
                tokio::task::spawn_local(accept_loop(broker.clone(), EpollListener(l), sec))
            })
            .collect();
        for l in loops {
            let _ = l.await;
        }
    });
}

fn run_uring(broker: Arc<Broker>, listeners: Vec<(TcpListener, Arc<ListenerSecurity>)>) {
    let rt = match tokio_uring::Runtime::new(&tokio_uring::builder()) {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(
                "cannot create an io_uring runtime on this shard ({e}); serving it with epoll"
            );
            return run_epoll(broker, listeners);
        }
    };
    rt.block_on(async move {
        tokio_uring::spawn(crate::alloc_count::give_back_memory_when_idle());
        let loops: Vec<_> = listeners
            .into_iter()
            .map(|(l, sec)| {
                tokio_uring::spawn(accept_loop(
                    broker.clone(),
                    UringListener(tokio_uring::net::TcpListener::from_std(l)),
                    sec,
                ))
            })
            .collect();
        for l in loops {
            let _ = l.await;
        }
    });
}

/// A listening socket on one engine.
trait Listen {
    type R: transport::SocketRead + 'static;
    type W: transport::SocketWrite + 'static;
    async fn accept(&self) -> std::io::Result<(Self::R, Self::W, SocketAddr)>;
}

struct EpollListener(tokio::net::TcpListener);
struct UringListener(tokio_uring::net::TcpListener);

impl Listen for EpollListener {
    type R = transport::EpollRead;
    type W = transport::EpollWrite;
    async fn accept(&self) -> std::io::Result<(Self::R, Self::W, SocketAddr)> {
        let (stream, peer) = self.0.accept().await?;
        let _ = stream.set_nodelay(true);
        let (r, w) = stream.into_split();
        Ok((transport::EpollRead(r), transport::EpollWrite(w), peer))
    }
}

impl Listen for UringListener {
    type R = transport::UringRead;
    type W = transport::UringWrite;
    async fn accept(&self) -> std::io::Result<(Self::R, Self::W, SocketAddr)> {
        let (stream, peer) = self.0.accept().await?;
        let _ = stream.set_nodelay(true);
        let stream = Rc::new(stream);
        Ok((
            transport::UringRead(stream.clone()),
            transport::UringWrite::new(stream),
            peer,
        ))
    }
}

/// Accepts until shutdown, serving each connection on this shard, then drains them.
async fn accept_loop<L: Listen>(broker: Arc<Broker>, listener: L, security: Arc<ListenerSecurity>) {
    let tasks = Rc::new(std::cell::Cell::new(0usize));
    let mut shutdown = broker.node.shutdown_signal();
    loop {
        // A shutdown begun before this shard subscribed is not a change it would see: a
        // SIGTERM the moment the node serves left the shard accepting and shutdown waiting
        // for it forever.
        if *shutdown.borrow_and_update() {
            break;
        }
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = shutdown.changed() => break,
        };
        let (r, w, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        // Kafka's connection quotas: a held connection holds this shard's accepts on this
        // listener too, as Kafka's acceptor waits.
        let slot = match broker
            .connections
            .admit(&broker.node, peer, &security.name, &mut shutdown)
            .await
        {
            quotas::Admission::Serve(slot) => slot,
            quotas::Admission::Close => continue,
            quotas::Admission::CloseAfter(delay) => {
                // Never served: the client sees no answer until the close (Kafka's delayed
                // close of a throttled connection).
                tokio::task::spawn_local(async move {
                    tokio::time::sleep(delay).await;
                    drop((r, w));
                });
                continue;
            }
            quotas::Admission::Shutdown => break,
        };
        let broker = broker.clone();
        let tasks = tasks.clone();
        tasks.set(tasks.get() + 1);
        let security = security.clone();
        tokio::task::spawn_local(async move {
            match &security.tls {
                None => {
                    let principal = crate::acl::ANONYMOUS.to_string();
                    connection::serve(broker, peer, security.clone(), principal, r, w).await;
                }
                Some(tls) => {
                    match crate::security::tls::accept(&tls.get(), r, w, TLS_HANDSHAKE_TIMEOUT)
                        .await
                    {
                        Ok((r, w, principal)) => {
                            connection::serve(broker, peer, security.clone(), principal, r, w).await
                        }
                        Err(e) => {
                            tracing::info!(%peer, listener = %security.name, "TLS handshake failed: {e}");
                            broker
                                .node
                                .metrics
                                .authentication(&security.name, "tls_failure");
                        }
                    }
                }
            }
            drop(slot);
            tasks.set(tasks.get() - 1);
        });
    }
    drain(&tasks).await;
}

/// Waits (bounded) for this shard's connections to finish their in-flight requests.
async fn drain(tasks: &Rc<std::cell::Cell<usize>>) {
    let deadline = tokio::time::Instant::now() + SHUTDOWN_DRAIN;
    while tasks.get() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
