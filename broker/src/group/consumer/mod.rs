//! The next-generation consumer group protocol (KIP-848, issue 41), built beside the classic
//! group state machine as a sans-IO state machine: the coordinator decides each member's
//! assignment, and members converge to it one heartbeat at a time.
//!
//! Built so far: [`reconcile`], the per-member reconciliation engine, and the [`range`]
//! assignor (the plan is `docs/kip848-plan.md`). Not yet served: no handler answers
//! ConsumerGroupHeartbeat, and ApiVersions does not advertise it.

pub mod assignor;
pub mod group;
pub mod persist;
pub mod range;
pub mod reconcile;
pub mod records;
pub mod uniform;
