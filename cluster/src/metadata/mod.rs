//! KRaft metadata records and the metadata image.
//!
//! - [`records`]: the record types of `__cluster_metadata` and their exact Kafka encoding.
//! - `codec` (private): the flexible-version primitives under them, bounded on malformed input.

mod codec;
pub mod records;

pub use records::{MetadataRecord, RecordError};

#[cfg(test)]
mod records_tests;
