//! Broker registration, heartbeats, fencing and controlled shutdown: Kafka's
//! `ClusterControlManager.registerBroker`, `BrokerHeartbeatManager` and
//! `ReplicationControlManager.processBrokerHeartbeat` / `handleBroker*`.
//!
//! A broker's state (Kafka's `BrokerControlState`) is FENCED or UNFENCED as the image says, or
//! CONTROLLED_SHUTDOWN once this controller granted one. A heartbeat moves it:
//! - FENCED: `want_shut_down` shuts it down at once; otherwise, unless `want_fence`, it is
//!   unfenced once its `current_metadata_offset` reaches the offset of its `RegisterBrokerRecord`
//!   (it has caught up with its own registration), unless it was shut down (then only a new
//!   incarnation comes back).
//! - UNFENCED: `want_fence` fences it (and shuts it down if it also wants that);
//!   `want_shut_down` starts a controlled shutdown if it leads any partition, else shuts it down.
//! - CONTROLLED_SHUTDOWN: it may shut down once it leads nothing and every active broker has
//!   reached the end of the batch that began the shutdown, so none still routes to it.
//!
//! A broker's epoch is the offset of the first record of the batch that registered it, so it is
//! unique and grows with every new incarnation. Re-registering the same incarnation amends the
//! registration and keeps the epoch and the fenced / shutdown flags.

use uuid::Uuid;

use super::partitions::{
    check_broker_epoch, elect_leaders_for_unfenced, has_leaderships, remove_broker_from_partitions,
};
use super::{
    BrokerSession, Controller, ControllerError, METADATA_VERSION_DIRECTORY_ASSIGNMENT,
    METADATA_VERSION_MINIMUM,
};
use crate::metadata::image::METADATA_VERSION_FEATURE;
use crate::metadata::records::{
    BrokerEndpoint, BrokerFeature, BrokerRegistrationChangeRecord, MetadataRecord,
    RegisterBrokerRecord, UnregisterBrokerRecord,
};
use crate::metadata::MetadataImage;
use crate::NodeId;

/// A BrokerRegistration request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRegistrationRequest {
    pub broker_id: NodeId,
    pub cluster_id: String,
    /// Random per process start: tells a restart from a retry.
    pub incarnation_id: Uuid,
    pub listeners: Vec<BrokerEndpoint>,
    /// The range of levels of each feature the broker supports.
    pub features: Vec<BrokerFeature>,
    pub rack: Option<String>,
    pub is_migrating_zk_broker: bool,
    /// The broker's online log directory ids (required from metadata.version 3.7-IV2).
    pub log_dirs: Vec<Uuid>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerRegistrationReply {
    pub broker_epoch: i64,
}

/// A BrokerHeartbeat request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerHeartbeatRequest {
    pub broker_id: NodeId,
    pub broker_epoch: i64,
    /// The highest metadata offset the broker has applied.
    pub current_metadata_offset: i64,
    pub want_fence: bool,
    pub want_shut_down: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerHeartbeatReply {
    /// The broker has applied its own registration.
    pub is_caught_up: bool,
    pub is_fenced: bool,
    /// Not on the wire: the broker is in a controlled shutdown that has not finished.
    pub in_controlled_shutdown: bool,
    pub should_shut_down: bool,
}

/// Kafka's `BrokerControlState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BrokerState {
    Fenced,
    Unfenced,
    ControlledShutdown,
    ShutdownNow,
}

impl BrokerState {
    fn fenced(self) -> bool {
        matches!(self, Self::Fenced | Self::ShutdownNow)
    }
}

/// Kafka's `DirectoryId.reserved`: the first 100 ids are markers (MIGRATING, UNASSIGNED, LOST).
fn reserved_directory(id: &Uuid) -> bool {
    let (hi, lo) = id.as_u64_pair();
    hi == 0 && lo < 100
}

impl Controller {
    /// BrokerRegistration. The records (one atomic batch) are the `RegisterBrokerRecord`,
    /// preceded for a new incarnation of a registered broker by the `PartitionChangeRecord`s that
    /// take it out of leadership and ISRs as fencing would (Kafka's `handleBrokerShutdown`
    /// without ELR): the restarted process may have lost what the old one had.
    ///
    /// Refused (Kafka's checks, in its order): another cluster's id (INCONSISTENT_CLUSTER_ID); a
    /// different incarnation while the registered one's session is live
    /// (DUPLICATE_BROKER_REGISTRATION; after the session expires the new one replaces it); a ZK
    /// broker (BROKER_ID_NOT_REGISTERED); missing, reserved, repeated or another broker's log
    /// directories (INVALID_REGISTRATION); a finalized feature level outside the broker's range
    /// (UNSUPPORTED_VERSION; no `metadata.version` range means only 3.3-IV3).
    pub fn register_broker(
        &mut self,
        now_ms: u64,
        image: &MetadataImage,
        next_offset: i64,
        req: BrokerRegistrationRequest,
    ) -> Result<(Vec<MetadataRecord>, BrokerRegistrationReply), ControllerError> {
        self.check_active()?;
        self.sync(now_ms, image);
        self.note_offset(next_offset);
        let broker_id = req.broker_id;
        if req.cluster_id != self.cfg.cluster_id {
            return Err(ControllerError::InconsistentClusterId {
                expected: self.cfg.cluster_id.clone(),
                got: req.cluster_id,
            });
        }
        let existing = image.broker(broker_id);
        if let Some(existing) = existing {
            // A restarted combined node's broker: its former incarnation ran in the process
            // this controller replaced, so its session, restarted at this controller's
            // activation, belongs to no live broker.
            let former_self = self.cfg.local_broker && broker_id == self.cfg.node_id;
            if existing.incarnation_id != req.incarnation_id
                && !former_self
                && self.has_valid_session(now_ms, broker_id)
            {
                return Err(ControllerError::DuplicateBrokerRegistration {
                    broker_id,
                    registered: existing.incarnation_id,
                    requested: req.incarnation_id,
                });
            }
        }
        if req.is_migrating_zk_broker {
            return Err(ControllerError::BrokerIdNotRegistered {
                broker_id,
                reason: "the controller does not support registering ZooKeeper brokers",
            });
        }
        let metadata_version = image.metadata_version().unwrap_or(1);
        let directories = metadata_version >= METADATA_VERSION_DIRECTORY_ASSIGNMENT;
        if directories {
            validate_log_dirs(image, broker_id, &req.log_dirs)?;
        }
        let features = registered_features(image, broker_id, req.features)?;

        let mut records = Vec::new();
        let new_incarnation = existing.is_none_or(|e| e.incarnation_id != req.incarnation_id);
        let (broker_epoch, fenced, in_controlled_shutdown) = match existing {
            Some(e) if !new_incarnation => (e.epoch, e.fenced, e.in_controlled_shutdown),
            _ => {
                remove_broker_from_partitions(image, &self.cfg, broker_id, false, &mut records);
                (next_offset, true, false)
            }
        };
        let register_record_offset = next_offset + records.len() as i64;
        records.push(
            RegisterBrokerRecord {
                broker_id,
                is_migrating_zk_broker: false,
                incarnation_id: req.incarnation_id,
                broker_epoch,
                end_points: req.listeners,
                features,
                rack: req.rack,
                fenced,
                in_controlled_shutdown,
                log_dirs: if directories {
                    req.log_dirs
                } else {
                    Vec::new()
                },
                unknown_tagged_fields: Default::default(),
            }
            .into(),
        );
        // Replaying a RegisterBrokerRecord restarts the broker's session in Kafka, amendments too.
        self.sessions.insert(
            broker_id,
            BrokerSession::new(now_ms, register_record_offset, fenced),
        );
        self.note_elections(image, &records, false);
        Ok((records, BrokerRegistrationReply { broker_epoch }))
    }

    /// BrokerHeartbeat: renews the broker's session and moves it between states (see the module
    /// doc). The records need not be one atomic batch. A broker that is not registered, or is
    /// registered at another epoch, gets STALE_BROKER_EPOCH, as from Kafka.
    pub fn broker_heartbeat(
        &mut self,
        now_ms: u64,
        image: &MetadataImage,
        next_offset: i64,
        req: BrokerHeartbeatRequest,
    ) -> Result<(Vec<MetadataRecord>, BrokerHeartbeatReply), ControllerError> {
        self.check_active()?;
        self.sync(now_ms, image);
        self.note_offset(next_offset);
        let broker_id = req.broker_id;
        check_broker_epoch(image, broker_id, req.broker_epoch)?;
        let registration = image.broker(broker_id).expect("checked above");
        let session = self.sessions[&broker_id].clone();
        let current = if session.controlled_shutdown_offset.is_some() {
            BrokerState::ControlledShutdown
        } else if registration.fenced {
            BrokerState::Fenced
        } else {
            BrokerState::Unfenced
        };
        let next = match current {
            BrokerState::Fenced if req.want_shut_down => BrokerState::ShutdownNow,
            // A broker that was shut down stays in controlled shutdown until a new
            // incarnation registers (the record cannot clear the flag); Kafka would unfence
            // it, and then elect it where it is the last ISR member though it is not active.
            BrokerState::Fenced
                if !req.want_fence
                    && !registration.in_controlled_shutdown
                    && req.current_metadata_offset >= session.register_record_offset =>
            {
                BrokerState::Unfenced
            }
            BrokerState::Fenced => BrokerState::Fenced,
            BrokerState::Unfenced if req.want_fence && req.want_shut_down => {
                BrokerState::ShutdownNow
            }
            BrokerState::Unfenced if req.want_fence => BrokerState::Fenced,
            BrokerState::Unfenced if req.want_shut_down => {
                if has_leaderships(image, broker_id) {
                    BrokerState::ControlledShutdown
                } else {
                    BrokerState::ShutdownNow
                }
            }
            BrokerState::Unfenced => BrokerState::Unfenced,
            BrokerState::ControlledShutdown => {
                let offset = session
                    .controlled_shutdown_offset
                    .expect("in controlled shutdown");
                if !has_leaderships(image, broker_id) && offset <= self.lowest_active_offset() {
                    BrokerState::ShutdownNow
                } else {
                    BrokerState::ControlledShutdown
                }
            }
            BrokerState::ShutdownNow => unreachable!("not a current state"),
        };

        let mut records = Vec::new();
        if current != next {
            match next {
                BrokerState::Fenced | BrokerState::ShutdownNow => {
                    records = self.fence_records(image, broker_id);
                }
                BrokerState::Unfenced => {
                    records.push(
                        BrokerRegistrationChangeRecord {
                            broker_id,
                            broker_epoch: req.broker_epoch,
                            fenced: -1,
                            ..Default::default()
                        }
                        .into(),
                    );
                    elect_leaders_for_unfenced(image, &self.cfg, broker_id, &mut records);
                }
                BrokerState::ControlledShutdown => {
                    if !registration.in_controlled_shutdown {
                        records.push(
                            BrokerRegistrationChangeRecord {
                                broker_id,
                                broker_epoch: req.broker_epoch,
                                in_controlled_shutdown: 1,
                                ..Default::default()
                            }
                            .into(),
                        );
                    }
                    remove_broker_from_partitions(image, &self.cfg, broker_id, true, &mut records);
                }
            }
        }

        let s = self.sessions.get_mut(&broker_id).expect("synced");
        s.last_contact_ms = now_ms;
        s.metadata_offset = req.current_metadata_offset;
        s.fenced = next.fenced();
        if next.fenced() {
            // A fenced broker leaves controlled shutdown; its next heartbeat shuts it down.
            s.controlled_shutdown_offset = None;
        }
        if next == BrokerState::ControlledShutdown && s.controlled_shutdown_offset.is_none() {
            // The end of this batch (Kafka's `processBatchEndOffset`).
            s.controlled_shutdown_offset = Some(next_offset + records.len() as i64 - 1);
        }
        let reply = BrokerHeartbeatReply {
            is_caught_up: req.current_metadata_offset >= session.register_record_offset,
            is_fenced: next.fenced(),
            in_controlled_shutdown: next == BrokerState::ControlledShutdown,
            should_shut_down: next == BrokerState::ShutdownNow,
        };
        self.note_elections(image, &records, false);
        Ok((records, reply))
    }

    /// UnregisterBroker: takes the broker out of leadership and ISRs as fencing does, then an
    /// `UnregisterBrokerRecord` (Kafka's `handleBrokerUnregistered`); its session ends.
    /// BROKER_ID_NOT_REGISTERED if it is not registered. A live broker is unregistered too, as
    /// Kafka does (its next heartbeat is STALE_BROKER_EPOCH).
    pub fn unregister_broker(
        &mut self,
        image: &MetadataImage,
        broker_id: NodeId,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        self.check_active()?;
        let Some(registration) = image.broker(broker_id) else {
            return Err(ControllerError::NotRegistered(broker_id));
        };
        let mut records = Vec::new();
        remove_broker_from_partitions(image, &self.cfg, broker_id, false, &mut records);
        records.push(
            UnregisterBrokerRecord {
                broker_id,
                broker_epoch: registration.epoch,
                ..Default::default()
            }
            .into(),
        );
        self.sessions.remove(&broker_id);
        self.note_elections(image, &records, false);
        Ok(records)
    }

    /// Kafka's `handleBrokerFenced`: leadership and ISR changes, then the fencing record.
    pub(super) fn fence_records(
        &self,
        image: &MetadataImage,
        broker_id: NodeId,
    ) -> Vec<MetadataRecord> {
        let registration = image
            .broker(broker_id)
            .expect("only registered brokers are fenced");
        let mut records = Vec::new();
        remove_broker_from_partitions(image, &self.cfg, broker_id, false, &mut records);
        records.push(
            BrokerRegistrationChangeRecord {
                broker_id,
                broker_epoch: registration.epoch,
                fenced: 1,
                ..Default::default()
            }
            .into(),
        );
        records
    }

    /// The lowest metadata offset reported by an active broker (unfenced, not shutting down);
    /// `i64::MAX` if there is none.
    fn lowest_active_offset(&self) -> i64 {
        self.sessions
            .values()
            .filter(|s| !s.fenced && s.controlled_shutdown_offset.is_none())
            .map(|s| s.metadata_offset)
            .min()
            .unwrap_or(i64::MAX)
    }
}

fn validate_log_dirs(
    image: &MetadataImage,
    broker_id: NodeId,
    log_dirs: &[Uuid],
) -> Result<(), ControllerError> {
    let invalid = |reason: String| ControllerError::InvalidRegistration { broker_id, reason };
    if log_dirs.is_empty() {
        return Err(invalid("no log directories specified".into()));
    }
    for (i, d) in log_dirs.iter().enumerate() {
        if reserved_directory(d) {
            return Err(invalid(format!("reserved log directory id {d}")));
        }
        if log_dirs[..i].contains(d) {
            return Err(invalid(format!("log directory id {d} is listed twice")));
        }
    }
    for other in image.brokers().values().filter(|b| b.id != broker_id) {
        if let Some(d) = log_dirs.iter().find(|d| other.directories.contains(d)) {
            return Err(invalid(format!(
                "broker {} is already registered with log directory {d}",
                other.id
            )));
        }
    }
    Ok(())
}

/// Kafka's `processRegistrationFeature` over the request: every finalized feature level must
/// be in the broker's range (a feature it does not list counts as supporting only level 0, and
/// `metadata.version` as only the minimum). Returns the features to record.
fn registered_features(
    image: &MetadataImage,
    broker_id: NodeId,
    mut features: Vec<BrokerFeature>,
) -> Result<Vec<BrokerFeature>, ControllerError> {
    let finalized = |name: &str| {
        if name == METADATA_VERSION_FEATURE {
            image.metadata_version().unwrap_or(1)
        } else {
            image.features().get(name).copied().unwrap_or(0)
        }
    };
    let check = |f: &BrokerFeature| {
        let level = finalized(&f.name);
        if (f.min_supported_version..=f.max_supported_version).contains(&level) {
            Ok(())
        } else {
            Err(ControllerError::UnsupportedFeatureLevel {
                broker_id,
                feature: f.name.clone(),
                finalized: level,
                min: f.min_supported_version,
                max: f.max_supported_version,
            })
        }
    };
    if !features.iter().any(|f| f.name == METADATA_VERSION_FEATURE) {
        features.push(BrokerFeature {
            name: METADATA_VERSION_FEATURE.into(),
            min_supported_version: METADATA_VERSION_MINIMUM,
            max_supported_version: METADATA_VERSION_MINIMUM,
            ..Default::default()
        });
    }
    for f in &features {
        check(f)?;
    }
    for (name, &level) in image.features() {
        if level != 0 && !features.iter().any(|f| &f.name == name) {
            check(&BrokerFeature {
                name: name.clone(),
                ..Default::default()
            })?;
        }
    }
    Ok(features)
}
