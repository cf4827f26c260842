//! KRaft metadata records and the metadata image.
//!
//! - [`records`]: the record types of `__cluster_metadata` and their exact Kafka encoding.
//! - [`image`]: the metadata image built by applying records in log order, cheap to share.
//! - [`pmap`]: the copy-on-write map the image's large collections live in.
//! - `codec` (private): the flexible-version primitives under the records, bounded on
//!   malformed input.

mod codec;
pub mod image;
pub mod pmap;
pub mod records;

pub use image::{ImageError, MetadataImage};
pub use records::{MetadataRecord, RecordError};

#[cfg(test)]
mod image_tests;
#[cfg(test)]
mod records_tests;
