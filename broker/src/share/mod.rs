//! Share groups (KIP-932).

pub mod partition;
