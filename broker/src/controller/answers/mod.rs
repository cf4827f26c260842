//! Kafka API answers that the controller listener and the client listeners' handlers both give
//! (KIP-919, delegation tokens): here, below the handlers, so the controller names no handler.

pub mod api_versions;
pub mod delegation_tokens;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_quorum;
