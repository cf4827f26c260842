//! Quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-599, KIP-612, KIP-73): the sans-IO rate
//! arithmetic ([`rate`]) the client, connection, controller mutation and replication quotas
//! all measure with; the client quotas ([`client`]): which quota a request falls under and the
//! per-broker rates that throttle it; the connection quotas ([`connections`]) the accept loop
//! applies; and the replication quotas' state ([`replication`]).

pub mod client;
pub mod connections;
pub mod rate;
pub mod replication;
