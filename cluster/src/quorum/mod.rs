//! The KRaft metadata quorum (placeholder while the state machine lands).
mod batch;
pub use batch::{Batch, ControlType, Record, SnapshotId};
