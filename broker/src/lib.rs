//! Samsa's broker: the network layer, one handler per Kafka API, and the state they share.
//! The `samsa` binary (src/main.rs) serves it and carries the admin CLI.
//!
//! # Layers, bottom to top
//!
//! Each layer uses only the layers below it (`scripts/layers.py --check`, run by
//! `tests/layering.rs`, keeps it so; `scripts/layers.py --why A B` shows what makes file A
//! depend on file B).
//!
//! 1. **Foundations**: [`util`], [`config`], [`topics`] and [`partition`] (the logs, over the
//!    storage crate), [`meta`], [`scram`], [`security`] (TLS, SASL), [`acl`] (the
//!    authorizer), [`fetch_session`], [`coordinator_write`], and the lower half of [`net`]:
//!    outbound connections ([`net::peer`]), the socket layer ([`net::transport`]) and the
//!    engine choice ([`net::engine`]).
//! 2. **The metadata quorum**: [`controller`] (KRaft, the active controller, the controller
//!    listener and its answers).
//! 3. **The node**: [`node::Node`] (identity, configuration, topics, the controller handle,
//!    membership, inter-broker client, metrics counters, shutdown) and the services that need
//!    only it: [`metadata_wait`], [`lifecycle`], [`cluster_view`], [`inter_broker`],
//!    [`internal_topics`], [`replication`], [`maintenance`], [`upgrade`], [`follow`].
//! 4. **Coordinators**, sans-IO state machines with their shells over a `Node`: [`share`],
//!    [`group`] (which loads share groups into the share coordinator: that way only), [`txn`]
//!    (built with the group coordinator, for the offsets' transaction markers).
//! 5. **The broker**: [`broker::Broker`], the `Node` and the services together.
//! 6. **Above it**: [`handlers`] (a [`handlers::ctx::Ctx`] per request, one file per Kafka API,
//!    dispatch in `handlers/mod.rs`), [`publisher`] (makes the services follow the metadata
//!    image), the metrics scrape ([`metrics::sample`], [`metrics::http`]), the client
//!    connections and shards ([`net`]), and start-up and running: [`start`], [`server`],
//!    [`cli`].

pub mod acl;
pub mod alloc_count;
pub mod broker;
pub mod cli;
pub mod cluster_view;
pub mod config;
pub mod console;
pub mod controller;
pub mod coordinator_write;
pub mod dev;
pub mod fetch_session;
pub mod follow;
pub mod group;
pub mod handlers;
pub mod inter_broker;
pub mod internal_topics;
pub mod lifecycle;
pub mod maintenance;
pub mod meta;
pub mod metadata_wait;
pub mod metrics;
pub mod net;
pub mod node;
pub mod partition;
pub mod publisher;
pub mod quota;
pub mod replication;
pub mod scram;
pub mod security;
pub mod server;
pub mod share;
pub mod start;
#[doc(hidden)]
pub mod testing;
pub mod topics;
pub mod txn;
pub mod upgrade;
pub mod util;
