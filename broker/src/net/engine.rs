//! Choosing the I/O engine: io_uring (tokio-uring) where the kernel lets us create a ring,
//! tokio's epoll driver otherwise. `tokio_uring::start` panics when the ring cannot be created
//! (seccomp profiles, gVisor, old kernels), so `auto` probes with a small ring first.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoEngine {
    Uring,
    Epoll,
}

impl fmt::Display for IoEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoEngine::Uring => "io_uring",
            IoEngine::Epoll => "epoll",
        })
    }
}

/// Resolves the `io.engine` setting. `Err` only when `uring` was asked for explicitly and the
/// kernel refuses it.
pub fn choose(setting: &str) -> Result<IoEngine, String> {
    match setting {
        "epoll" => Ok(IoEngine::Epoll),
        "uring" => probe_uring()
            .map(|()| IoEngine::Uring)
            .map_err(|e| format!("io.engine=uring: io_uring is unavailable: {e}")),
        _ => match probe_uring() {
            Ok(()) => Ok(IoEngine::Uring),
            Err(e) => {
                tracing::warn!("io_uring is unavailable ({e}); serving with the epoll engine");
                Ok(IoEngine::Epoll)
            }
        },
    }
}

fn probe_uring() -> Result<(), String> {
    io_uring::IoUring::new(8)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
