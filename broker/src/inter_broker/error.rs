//! Why a request to another broker has no answer ([`SendError`]). A file of its own: the
//! connections, which know addresses only, fail with it too, and depending on
//! [`super::send`]'s file, which knows the cluster, would close an import circle.

use crate::net::peer::PeerError;

/// Why a request to another broker has no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SendError {
    /// The metadata image has no live registration of the broker.
    #[error("broker {0} is not live")]
    NotLive(i32),
    /// The broker's registered host does not resolve.
    #[error("broker {broker} at {host}:{port}: cannot resolve the address")]
    Unresolvable {
        broker: i32,
        host: String,
        port: i32,
    },
    /// Sent, or meant to be, but not answered.
    #[error(transparent)]
    Peer(#[from] PeerError),
    /// The connection's task ended without answering.
    #[error("the connection to broker {0} is gone")]
    ConnectionGone(i32),
    /// The answer is not the response to the request sent.
    #[error("an answer of the wrong type")]
    WrongAnswer,
}
