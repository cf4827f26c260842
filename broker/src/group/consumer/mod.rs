//! The next-generation consumer group protocol (KIP-848, issue 41), beside the classic group
//! state machine, sans-IO: the coordinator decides each member's assignment, and members
//! converge to it one heartbeat at a time.
//!
//! - [`group`]: a consumer group (epochs, members, target assignment, static members, session
//!   and rebalance timeouts, regex subscriptions), every change returned as records;
//! - [`reconcile`]: one member's next state towards its target (revoke before assign);
//! - [`assignor`], [`uniform`], [`range`]: the server-side assignors;
//! - [`records`]: Kafka 4.4's consumer group records in `__consumer_offsets`, byte for byte;
//!   [`persist`]: between the group's records and those.
//!
//! The coordinator's shell (locks, writes, timers, loading) is `crate::group::modern`; the
//! handlers are ConsumerGroupHeartbeat and ConsumerGroupDescribe. What remains of the plan is
//! in `docs/kip848-plan.md`.

pub mod assignor;
pub mod group;
pub mod persist;
pub mod range;
pub mod reconcile;
pub mod records;
pub mod uniform;

#[cfg(test)]
mod sim_tests;
