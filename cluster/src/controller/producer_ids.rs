//! AllocateProducerIds: Kafka's `ProducerIdControlManager`. Blocks of
//! [`PRODUCER_ID_BLOCK_SIZE`] ids are handed out in order; the image's `next_producer_id` is the
//! first id of the next block, so ids are never handed out twice, also across controllers.

use super::partitions::check_broker_epoch;
use super::{Controller, ControllerError};
use crate::metadata::records::{MetadataRecord, ProducerIdsRecord};
use crate::metadata::MetadataImage;
use crate::NodeId;

/// Kafka's `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`.
pub const PRODUCER_ID_BLOCK_SIZE: i32 = 1000;

/// A block of producer ids: `first_producer_id .. first_producer_id + size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdsBlock {
    pub first_producer_id: i64,
    pub size: i32,
}

impl Controller {
    /// AllocateProducerIds for `broker_id`, which must be registered at `broker_epoch`
    /// (STALE_BROKER_EPOCH otherwise). One `ProducerIdsRecord`.
    pub fn allocate_producer_ids(
        &self,
        image: &MetadataImage,
        broker_id: NodeId,
        broker_epoch: i64,
    ) -> Result<(Vec<MetadataRecord>, ProducerIdsBlock), ControllerError> {
        self.check_active()?;
        check_broker_epoch(image, broker_id, broker_epoch)?;
        // -1 before the first block: Kafka's empty block starts at 0.
        let first = image.next_producer_id().max(0);
        let next = first
            .checked_add(i64::from(PRODUCER_ID_BLOCK_SIZE))
            .ok_or(ControllerError::ProducerIdsExhausted)?;
        let record = ProducerIdsRecord {
            broker_id,
            broker_epoch,
            next_producer_id: next,
            ..Default::default()
        };
        Ok((
            vec![record.into()],
            ProducerIdsBlock {
                first_producer_id: first,
                size: PRODUCER_ID_BLOCK_SIZE,
            },
        ))
    }
}
