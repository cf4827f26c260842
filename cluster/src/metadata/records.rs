//! KRaft's metadata record types, encoded exactly as Kafka writes them as the values of
//! `__cluster_metadata` records.
//!
//! Framing (`AbstractApiMessageSerde` in Kafka's `server-common`): an unsigned varint frame
//! version (always 1; 0 was the 2.8 preview and is refused), an unsigned varint api key, an
//! unsigned varint record version (each must fit an `i16`, as Kafka checks), then the record's
//! body in the flexible-version encoding (compact strings and arrays, a tagged-field section
//! after every struct). Bytes left over after the body are an error, as in Kafka.
//!
//! Field sets and api keys follow the JSON schemas in Kafka's
//! `metadata/src/main/resources/common/metadata/`. Every struct holds the fields of its type's
//! latest version; [`MetadataRecord::decode`] accepts every valid version (fields a version lacks
//! take their schema defaults), [`MetadataRecord::encode`] writes the latest version, and
//! [`MetadataRecord::encode_version`] writes an older one, refusing (as Kafka's generated code
//! does) a non-default value the version cannot carry. Tagged fields a version does not know are
//! kept in `unknown_tagged_fields` and written back.
//!
//! Not supported (decoding them gives [`RecordError::UnknownRecordType`]): the delegation-token
//! records (10, 26), `ClientQuotaRecord` (14), `UnregisterControllerRecord` (29): Samsa's
//! controller does not write them yet.

use bytes::Bytes;
use uuid::Uuid;

use super::codec::{Reader, TaggedFields, Writer};

mod brokers;
pub use super::codec::{RecordError, UnknownTaggedFields};
pub use brokers::*;

/// The only frame version of `AbstractApiMessageSerde`.
pub const FRAME_VERSION: u32 = 1;
/// `PartitionRecord.Leader` / `PartitionChangeRecord.Leader`: there is no leader.
pub const NO_LEADER: i32 = -1;
/// `PartitionChangeRecord.Leader`'s default: the leader did not change.
pub const NO_LEADER_CHANGE: i32 = -2;
/// `PartitionChangeRecord.LeaderRecoveryState`'s default: it did not change.
pub const NO_LEADER_RECOVERY_STATE_CHANGE: i8 = -1;

/// One record type's schema: its api key, versions and body codec.
trait Schema: Sized {
    const NAME: &'static str;
    const API_KEY: u16;
    const LATEST_VERSION: u16;
    /// Fails if this value holds something `version` cannot carry (only called for versions
    /// below the latest).
    fn check_version(&self, _version: u16) -> Result<(), RecordError> {
        Ok(())
    }
    fn write(&self, w: &mut Writer, version: u16);
    fn read(r: &mut Reader<'_>, version: u16) -> Result<Self, RecordError>;
}

fn not_in_version(record: &'static str, version: u16, field: &'static str) -> RecordError {
    RecordError::FieldNotInVersion {
        record,
        version,
        field,
    }
}

/// Declares the record enum and its dispatch from a list of `Variant(Type)`.
macro_rules! metadata_records {
    ($($variant:ident($ty:ident),)*) => {
        /// A KRaft metadata record, one variant per supported record type.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum MetadataRecord {
            $($variant($ty),)*
        }

        $(impl From<$ty> for MetadataRecord {
            fn from(r: $ty) -> Self {
                MetadataRecord::$variant(r)
            }
        })*

        impl MetadataRecord {
            /// The record type's api key (Kafka's `MetadataRecordType` id).
            pub fn api_key(&self) -> u16 {
                match self {
                    $(MetadataRecord::$variant(_) => <$ty as Schema>::API_KEY,)*
                }
            }

            /// The schema name, e.g. `"PartitionChangeRecord"`.
            pub fn name(&self) -> &'static str {
                match self {
                    $(MetadataRecord::$variant(_) => <$ty as Schema>::NAME,)*
                }
            }

            /// The latest version of this record's type, the one [`Self::encode`] writes.
            pub fn latest_version(&self) -> u16 {
                match self {
                    $(MetadataRecord::$variant(_) => <$ty as Schema>::LATEST_VERSION,)*
                }
            }

            fn write_body(&self, w: &mut Writer, version: u16) {
                match self {
                    $(MetadataRecord::$variant(r) => r.write(w, version),)*
                }
            }

            fn check_version(&self, version: u16) -> Result<(), RecordError> {
                match self {
                    $(MetadataRecord::$variant(r) => {
                        if version > <$ty as Schema>::LATEST_VERSION {
                            return Err(RecordError::UnsupportedVersion {
                                record: <$ty as Schema>::NAME,
                                version,
                                latest: <$ty as Schema>::LATEST_VERSION,
                            });
                        }
                        r.check_version(version)
                    })*
                }
            }

            fn read_body(api_key: u16, version: u16, r: &mut Reader<'_>)
                -> Result<(Self, &'static str), RecordError>
            {
                match api_key {
                    $(<$ty as Schema>::API_KEY => {
                        if version > <$ty as Schema>::LATEST_VERSION {
                            return Err(RecordError::UnsupportedVersion {
                                record: <$ty as Schema>::NAME,
                                version,
                                latest: <$ty as Schema>::LATEST_VERSION,
                            });
                        }
                        Ok((MetadataRecord::$variant(<$ty as Schema>::read(r, version)?),
                            <$ty as Schema>::NAME))
                    })*
                    other => Err(RecordError::UnknownRecordType(other)),
                }
            }
        }
    };
}

metadata_records! {
    RegisterBroker(RegisterBrokerRecord),
    UnregisterBroker(UnregisterBrokerRecord),
    Topic(TopicRecord),
    Partition(PartitionRecord),
    Config(ConfigRecord),
    PartitionChange(PartitionChangeRecord),
    FenceBroker(FenceBrokerRecord),
    UnfenceBroker(UnfenceBrokerRecord),
    RemoveTopic(RemoveTopicRecord),
    UserScramCredential(UserScramCredentialRecord),
    FeatureLevel(FeatureLevelRecord),
    ProducerIds(ProducerIdsRecord),
    BrokerRegistrationChange(BrokerRegistrationChangeRecord),
    AccessControlEntry(AccessControlEntryRecord),
    RemoveAccessControlEntry(RemoveAccessControlEntryRecord),
    NoOp(NoOpRecord),
    ZkMigrationState(ZkMigrationStateRecord),
    RemoveUserScramCredential(RemoveUserScramCredentialRecord),
    ClientQuota(ClientQuotaRecord),
    BeginTransaction(BeginTransactionRecord),
    EndTransaction(EndTransactionRecord),
    AbortTransaction(AbortTransactionRecord),
    RegisterController(RegisterControllerRecord),
    ClearElr(ClearElrRecord),
}

impl MetadataRecord {
    /// Encodes the record at its type's latest version, framed as Kafka frames a record value.
    pub fn encode(&self) -> Bytes {
        self.encode_unchecked(self.latest_version())
    }

    /// Encodes the record at `version`; fails if the version does not exist for this type or
    /// cannot carry a non-default value this record holds.
    pub fn encode_version(&self, version: u16) -> Result<Bytes, RecordError> {
        self.check_version(version)?;
        Ok(self.encode_unchecked(version))
    }

    fn encode_unchecked(&self, version: u16) -> Bytes {
        let mut w = Writer::new();
        w.uvarint(FRAME_VERSION);
        w.uvarint(self.api_key().into());
        w.uvarint(version.into());
        self.write_body(&mut w, version);
        w.freeze()
    }

    /// Decodes one framed record value. Never panics; never allocates more than the input's
    /// size justifies.
    pub fn decode(buf: &[u8]) -> Result<MetadataRecord, RecordError> {
        Self::decode_with_version(buf).map(|(r, _)| r)
    }

    /// [`Self::decode`], also returning the version the record was written at.
    pub fn decode_with_version(buf: &[u8]) -> Result<(MetadataRecord, u16), RecordError> {
        let mut r = Reader::new(buf);
        let frame = r.uvarint("frame version")?;
        if frame != FRAME_VERSION {
            return Err(RecordError::UnsupportedFrameVersion(frame));
        }
        let api_key = r.uvarint_u16("api key")?;
        let version = r.uvarint_u16("version")?;
        let (record, name) = Self::read_body(api_key, version, &mut r)?;
        r.finish(name)?;
        Ok((record, version))
    }
}

// ---------------------------------------------------------------------------------------------
// Topics and partitions
// ---------------------------------------------------------------------------------------------

/// `TopicRecord` (api key 2): a topic was created (its partitions follow as `PartitionRecord`s).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicRecord {
    pub name: String,
    pub topic_id: Uuid,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for TopicRecord {
    const NAME: &'static str = "TopicRecord";
    const API_KEY: u16 = 2;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.string(&self.name);
        w.uuid(self.topic_id);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(TopicRecord {
            name: r.string("Name")?,
            topic_id: r.uuid("TopicId")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `RemoveTopicRecord` (api key 9): a topic, its partitions and its configs were deleted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoveTopicRecord {
    pub topic_id: Uuid,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for RemoveTopicRecord {
    const NAME: &'static str = "RemoveTopicRecord";
    const API_KEY: u16 = 9;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.uuid(self.topic_id);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(RemoveTopicRecord {
            topic_id: r.uuid("TopicId")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `PartitionRecord` (api key 3, versions 0-2): the full state of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionRecord {
    pub partition_id: i32,
    pub topic_id: Uuid,
    /// In preferred order.
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub removing_replicas: Vec<i32>,
    pub adding_replicas: Vec<i32>,
    /// [`NO_LEADER`] if there is none.
    pub leader: i32,
    /// Tag 0: 1 while recovering from an unclean leader election, else 0 (default).
    pub leader_recovery_state: i8,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    /// Version 1+ (KIP-858): each replica's log directory, in `replicas` order.
    pub directories: Vec<Uuid>,
    /// Version 2+, tag 1 (KIP-966).
    pub eligible_leader_replicas: Option<Vec<i32>>,
    /// Version 2+, tag 2 (KIP-966).
    pub last_known_elr: Option<Vec<i32>>,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Default for PartitionRecord {
    fn default() -> Self {
        PartitionRecord {
            partition_id: -1,
            topic_id: Uuid::nil(),
            replicas: Vec::new(),
            isr: Vec::new(),
            removing_replicas: Vec::new(),
            adding_replicas: Vec::new(),
            leader: NO_LEADER,
            leader_recovery_state: 0,
            leader_epoch: -1,
            partition_epoch: -1,
            directories: Vec::new(),
            eligible_leader_replicas: None,
            last_known_elr: None,
            unknown_tagged_fields: UnknownTaggedFields::new(),
        }
    }
}

impl Schema for PartitionRecord {
    const NAME: &'static str = "PartitionRecord";
    const API_KEY: u16 = 3;
    const LATEST_VERSION: u16 = 2;

    fn check_version(&self, v: u16) -> Result<(), RecordError> {
        if v < 1 && !self.directories.is_empty() {
            return Err(not_in_version(Self::NAME, v, "Directories"));
        }
        if v < 2 && self.eligible_leader_replicas.is_some() {
            return Err(not_in_version(Self::NAME, v, "EligibleLeaderReplicas"));
        }
        if v < 2 && self.last_known_elr.is_some() {
            return Err(not_in_version(Self::NAME, v, "LastKnownElr"));
        }
        Ok(())
    }

    fn write(&self, w: &mut Writer, v: u16) {
        w.i32(self.partition_id);
        w.uuid(self.topic_id);
        w.i32_array(&self.replicas);
        w.i32_array(&self.isr);
        w.i32_array(&self.removing_replicas);
        w.i32_array(&self.adding_replicas);
        w.i32(self.leader);
        w.i32(self.leader_epoch);
        w.i32(self.partition_epoch);
        if v >= 1 {
            w.uuid_array(&self.directories);
        }
        let mut tags = TaggedFields::new();
        if self.leader_recovery_state != 0 {
            tags.field(0, |w| w.i8(self.leader_recovery_state));
        }
        if v >= 2 {
            if let Some(elr) = &self.eligible_leader_replicas {
                tags.field(1, |w| w.i32_array(elr));
            }
            if let Some(lke) = &self.last_known_elr {
                tags.field(2, |w| w.i32_array(lke));
            }
        }
        tags.write(w, &self.unknown_tagged_fields);
    }

    fn read(r: &mut Reader<'_>, v: u16) -> Result<Self, RecordError> {
        let mut rec = PartitionRecord {
            partition_id: r.i32("PartitionId")?,
            topic_id: r.uuid("TopicId")?,
            replicas: r.i32_array("Replicas")?,
            isr: r.i32_array("Isr")?,
            removing_replicas: r.i32_array("RemovingReplicas")?,
            adding_replicas: r.i32_array("AddingReplicas")?,
            leader: r.i32("Leader")?,
            leader_epoch: r.i32("LeaderEpoch")?,
            partition_epoch: r.i32("PartitionEpoch")?,
            ..Default::default()
        };
        if v >= 1 {
            rec.directories = r.uuid_array("Directories")?;
        }
        let (mut lrs, mut elr, mut lke) = (0, None, None);
        rec.unknown_tagged_fields = r.tagged_fields(|tag, r| match tag {
            0 => {
                lrs = r.i8("LeaderRecoveryState")?;
                Ok(true)
            }
            1 if v >= 2 => {
                elr = r.nullable_i32_array("EligibleLeaderReplicas")?;
                Ok(true)
            }
            2 if v >= 2 => {
                lke = r.nullable_i32_array("LastKnownElr")?;
                Ok(true)
            }
            _ => Ok(false),
        })?;
        rec.leader_recovery_state = lrs;
        rec.eligible_leader_replicas = elr;
        rec.last_known_elr = lke;
        Ok(rec)
    }
}

/// `PartitionChangeRecord` (api key 5, versions 0-2): a change to one partition. Every field
/// but the ids is optional: `None` (or [`NO_LEADER_CHANGE`] /
/// [`NO_LEADER_RECOVERY_STATE_CHANGE`]) means "unchanged".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionChangeRecord {
    pub partition_id: i32,
    pub topic_id: Uuid,
    /// Tag 0.
    pub isr: Option<Vec<i32>>,
    /// Tag 1: [`NO_LEADER_CHANGE`] (default), [`NO_LEADER`], or the new leader.
    pub leader: i32,
    /// Tag 2.
    pub replicas: Option<Vec<i32>>,
    /// Tag 3.
    pub removing_replicas: Option<Vec<i32>>,
    /// Tag 4.
    pub adding_replicas: Option<Vec<i32>>,
    /// Tag 5: [`NO_LEADER_RECOVERY_STATE_CHANGE`] (default), 0 or 1.
    pub leader_recovery_state: i8,
    /// Version 1+, tag 8 (KIP-858).
    pub directories: Option<Vec<Uuid>>,
    /// Version 2+, tag 6 (KIP-966).
    pub eligible_leader_replicas: Option<Vec<i32>>,
    /// Version 2+, tag 7 (KIP-966).
    pub last_known_elr: Option<Vec<i32>>,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Default for PartitionChangeRecord {
    fn default() -> Self {
        PartitionChangeRecord {
            partition_id: -1,
            topic_id: Uuid::nil(),
            isr: None,
            leader: NO_LEADER_CHANGE,
            replicas: None,
            removing_replicas: None,
            adding_replicas: None,
            leader_recovery_state: NO_LEADER_RECOVERY_STATE_CHANGE,
            directories: None,
            eligible_leader_replicas: None,
            last_known_elr: None,
            unknown_tagged_fields: UnknownTaggedFields::new(),
        }
    }
}

impl Schema for PartitionChangeRecord {
    const NAME: &'static str = "PartitionChangeRecord";
    const API_KEY: u16 = 5;
    const LATEST_VERSION: u16 = 2;

    fn check_version(&self, v: u16) -> Result<(), RecordError> {
        if v < 1 && self.directories.is_some() {
            return Err(not_in_version(Self::NAME, v, "Directories"));
        }
        if v < 2 && self.eligible_leader_replicas.is_some() {
            return Err(not_in_version(Self::NAME, v, "EligibleLeaderReplicas"));
        }
        if v < 2 && self.last_known_elr.is_some() {
            return Err(not_in_version(Self::NAME, v, "LastKnownElr"));
        }
        Ok(())
    }

    fn write(&self, w: &mut Writer, v: u16) {
        w.i32(self.partition_id);
        w.uuid(self.topic_id);
        let mut tags = TaggedFields::new();
        if let Some(isr) = &self.isr {
            tags.field(0, |w| w.i32_array(isr));
        }
        if self.leader != NO_LEADER_CHANGE {
            tags.field(1, |w| w.i32(self.leader));
        }
        if let Some(x) = &self.replicas {
            tags.field(2, |w| w.i32_array(x));
        }
        if let Some(x) = &self.removing_replicas {
            tags.field(3, |w| w.i32_array(x));
        }
        if let Some(x) = &self.adding_replicas {
            tags.field(4, |w| w.i32_array(x));
        }
        if self.leader_recovery_state != NO_LEADER_RECOVERY_STATE_CHANGE {
            tags.field(5, |w| w.i8(self.leader_recovery_state));
        }
        if v >= 2 {
            if let Some(x) = &self.eligible_leader_replicas {
                tags.field(6, |w| w.i32_array(x));
            }
            if let Some(x) = &self.last_known_elr {
                tags.field(7, |w| w.i32_array(x));
            }
        }
        if v >= 1 {
            if let Some(x) = &self.directories {
                tags.field(8, |w| w.uuid_array(x));
            }
        }
        tags.write(w, &self.unknown_tagged_fields);
    }

    fn read(r: &mut Reader<'_>, v: u16) -> Result<Self, RecordError> {
        let mut rec = PartitionChangeRecord {
            partition_id: r.i32("PartitionId")?,
            topic_id: r.uuid("TopicId")?,
            ..Default::default()
        };
        let mut f = PartitionChangeRecord::default();
        let unknown = r.tagged_fields(|tag, r| {
            match tag {
                0 => f.isr = r.nullable_i32_array("Isr")?,
                1 => f.leader = r.i32("Leader")?,
                2 => f.replicas = r.nullable_i32_array("Replicas")?,
                3 => f.removing_replicas = r.nullable_i32_array("RemovingReplicas")?,
                4 => f.adding_replicas = r.nullable_i32_array("AddingReplicas")?,
                5 => f.leader_recovery_state = r.i8("LeaderRecoveryState")?,
                6 if v >= 2 => {
                    f.eligible_leader_replicas = r.nullable_i32_array("EligibleLeaderReplicas")?
                }
                7 if v >= 2 => f.last_known_elr = r.nullable_i32_array("LastKnownElr")?,
                8 if v >= 1 => f.directories = r.nullable_uuid_array("Directories")?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        rec.isr = f.isr;
        rec.leader = f.leader;
        rec.replicas = f.replicas;
        rec.removing_replicas = f.removing_replicas;
        rec.adding_replicas = f.adding_replicas;
        rec.leader_recovery_state = f.leader_recovery_state;
        rec.directories = f.directories;
        rec.eligible_leader_replicas = f.eligible_leader_replicas;
        rec.last_known_elr = f.last_known_elr;
        rec.unknown_tagged_fields = unknown;
        Ok(rec)
    }
}

/// `ClearElrRecord` (api key 28, KIP-966): clear the ELR and last-known ELR of every partition
/// of `topic_name`, or of every topic if it is empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClearElrRecord {
    pub topic_name: String,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for ClearElrRecord {
    const NAME: &'static str = "ClearElrRecord";
    const API_KEY: u16 = 28;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.string(&self.topic_name);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(ClearElrRecord {
            topic_name: r.string("TopicName")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Configs, ACLs, SCRAM, features, producer ids
// ---------------------------------------------------------------------------------------------

/// `ConfigRecord` (api key 4): one config key of one resource was set, or (value `None`)
/// deleted. `resource_type` is Kafka's `ConfigResource.Type` id (2 topic, 4 broker; broker
/// name "" is the cluster-wide default).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConfigRecord {
    pub resource_type: i8,
    pub resource_name: String,
    pub name: String,
    pub value: Option<String>,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for ConfigRecord {
    const NAME: &'static str = "ConfigRecord";
    const API_KEY: u16 = 4;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.i8(self.resource_type);
        w.string(&self.resource_name);
        w.string(&self.name);
        w.nullable_string(self.value.as_deref());
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(ConfigRecord {
            resource_type: r.i8("ResourceType")?,
            resource_name: r.string("ResourceName")?,
            name: r.string("Name")?,
            value: r.nullable_string("Value")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `AccessControlEntryRecord` (api key 18): an ACL was created. The byte fields are Kafka's
/// `ResourceType`, `PatternType`, `AclOperation` and `AclPermissionType` codes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AccessControlEntryRecord {
    pub id: Uuid,
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission_type: i8,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for AccessControlEntryRecord {
    const NAME: &'static str = "AccessControlEntryRecord";
    const API_KEY: u16 = 18;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.uuid(self.id);
        w.i8(self.resource_type);
        w.string(&self.resource_name);
        w.i8(self.pattern_type);
        w.string(&self.principal);
        w.string(&self.host);
        w.i8(self.operation);
        w.i8(self.permission_type);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(AccessControlEntryRecord {
            id: r.uuid("Id")?,
            resource_type: r.i8("ResourceType")?,
            resource_name: r.string("ResourceName")?,
            pattern_type: r.i8("PatternType")?,
            principal: r.string("Principal")?,
            host: r.string("Host")?,
            operation: r.i8("Operation")?,
            permission_type: r.i8("PermissionType")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `RemoveAccessControlEntryRecord` (api key 19): the ACL with this id was deleted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoveAccessControlEntryRecord {
    pub id: Uuid,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for RemoveAccessControlEntryRecord {
    const NAME: &'static str = "RemoveAccessControlEntryRecord";
    const API_KEY: u16 = 19;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.uuid(self.id);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(RemoveAccessControlEntryRecord {
            id: r.uuid("Id")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `UserScramCredentialRecord` (api key 11): a user's SCRAM credential for one mechanism
/// (1 SCRAM-SHA-256, 2 SCRAM-SHA-512) was set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserScramCredentialRecord {
    pub name: String,
    pub mechanism: i8,
    pub salt: Bytes,
    pub stored_key: Bytes,
    pub server_key: Bytes,
    pub iterations: i32,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for UserScramCredentialRecord {
    const NAME: &'static str = "UserScramCredentialRecord";
    const API_KEY: u16 = 11;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.string(&self.name);
        w.i8(self.mechanism);
        w.bytes(&self.salt);
        w.bytes(&self.stored_key);
        w.bytes(&self.server_key);
        w.i32(self.iterations);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(UserScramCredentialRecord {
            name: r.string("Name")?,
            mechanism: r.i8("Mechanism")?,
            salt: r.bytes("Salt")?,
            stored_key: r.bytes("StoredKey")?,
            server_key: r.bytes("ServerKey")?,
            iterations: r.i32("Iterations")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// One part of a client quota entity: `user`, `client-id` or `ip`, and its name (`None` for
/// the entity type's default).
#[derive(Debug, Clone, PartialEq, Eq, Default, PartialOrd, Ord, Hash)]
pub struct ClientQuotaEntityData {
    pub entity_type: String,
    pub entity_name: Option<String>,
}

/// `ClientQuotaRecord` (api key 14): a quota of a client quota entity (KIP-546) was set to
/// `value`, or removed.
#[derive(Debug, Clone, Default)]
pub struct ClientQuotaRecord {
    pub entity: Vec<ClientQuotaEntityData>,
    pub key: String,
    pub value: f64,
    pub remove: bool,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

// By the value's bits, so that a record equals its decoded copy (NaN included).
impl PartialEq for ClientQuotaRecord {
    fn eq(&self, other: &Self) -> bool {
        self.entity == other.entity
            && self.key == other.key
            && self.value.to_bits() == other.value.to_bits()
            && self.remove == other.remove
            && self.unknown_tagged_fields == other.unknown_tagged_fields
    }
}
impl Eq for ClientQuotaRecord {}

impl Schema for ClientQuotaRecord {
    const NAME: &'static str = "ClientQuotaRecord";
    const API_KEY: u16 = 14;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.array(&self.entity, |w, e| {
            w.string(&e.entity_type);
            w.nullable_string(e.entity_name.as_deref());
            TaggedFields::new().write(w, &UnknownTaggedFields::default());
        });
        w.string(&self.key);
        w.f64(self.value);
        w.bool(self.remove);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(ClientQuotaRecord {
            // An element is at least a type, a null name and an empty tag section.
            entity: r.array("Entity", 3, |r| {
                let entity_type = r.string("EntityType")?;
                let entity_name = r.nullable_string("EntityName")?;
                r.tagged_fields(|_, _| Ok(false))?;
                Ok(ClientQuotaEntityData {
                    entity_type,
                    entity_name,
                })
            })?,
            key: r.string("Key")?,
            value: r.f64("Value")?,
            remove: r.bool("Remove")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `RemoveUserScramCredentialRecord` (api key 22).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoveUserScramCredentialRecord {
    pub name: String,
    pub mechanism: i8,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for RemoveUserScramCredentialRecord {
    const NAME: &'static str = "RemoveUserScramCredentialRecord";
    const API_KEY: u16 = 22;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.string(&self.name);
        w.i8(self.mechanism);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(RemoveUserScramCredentialRecord {
            name: r.string("Name")?,
            mechanism: r.i8("Mechanism")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `FeatureLevelRecord` (api key 12; its version stays 0 forever because a log's first record
/// is one and must be readable by every reader): a finalized feature level. Level 0 removes a
/// feature other than `metadata.version`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FeatureLevelRecord {
    pub name: String,
    pub feature_level: i16,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for FeatureLevelRecord {
    const NAME: &'static str = "FeatureLevelRecord";
    const API_KEY: u16 = 12;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.string(&self.name);
        w.i16(self.feature_level);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(FeatureLevelRecord {
            name: r.string("Name")?,
            feature_level: r.i16("FeatureLevel")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `ProducerIdsRecord` (api key 15): a block of producer ids was handed to a broker;
/// `next_producer_id` is the first id of the next block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerIdsRecord {
    pub broker_id: i32,
    /// Schema default -1.
    pub broker_epoch: i64,
    pub next_producer_id: i64,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Default for ProducerIdsRecord {
    fn default() -> Self {
        ProducerIdsRecord {
            broker_id: 0,
            broker_epoch: -1,
            next_producer_id: 0,
            unknown_tagged_fields: UnknownTaggedFields::new(),
        }
    }
}

impl Schema for ProducerIdsRecord {
    const NAME: &'static str = "ProducerIdsRecord";
    const API_KEY: u16 = 15;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.i32(self.broker_id);
        w.i64(self.broker_epoch);
        w.i64(self.next_producer_id);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(ProducerIdsRecord {
            broker_id: r.i32("BrokerId")?,
            broker_epoch: r.i64("BrokerEpoch")?,
            next_producer_id: r.i64("NextProducerId")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `ZkMigrationStateRecord` (api key 21): decoded so that logs from migrated clusters load;
/// it has no effect on the image.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ZkMigrationStateRecord {
    pub zk_migration_state: i8,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for ZkMigrationStateRecord {
    const NAME: &'static str = "ZkMigrationStateRecord";
    const API_KEY: u16 = 21;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.i8(self.zk_migration_state);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(ZkMigrationStateRecord {
            zk_migration_state: r.i8("ZkMigrationState")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Control: no-op and metadata transactions (KIP-868)
// ---------------------------------------------------------------------------------------------

/// `NoOpRecord` (api key 20): written by the active controller to advance the high watermark
/// (KIP-835).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NoOpRecord {
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for NoOpRecord {
    const NAME: &'static str = "NoOpRecord";
    const API_KEY: u16 = 20;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(NoOpRecord {
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `BeginTransactionRecord` (api key 23, KIP-868): the records up to the matching end or abort
/// apply atomically.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BeginTransactionRecord {
    /// Tag 0.
    pub name: Option<String>,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for BeginTransactionRecord {
    const NAME: &'static str = "BeginTransactionRecord";
    const API_KEY: u16 = 23;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        let mut tags = TaggedFields::new();
        if let Some(name) = &self.name {
            tags.field(0, |w| w.string(name));
        }
        tags.write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        let mut name = None;
        let unknown_tagged_fields = r.tagged_fields(|tag, r| match tag {
            0 => {
                name = r.nullable_string("Name")?;
                Ok(true)
            }
            _ => Ok(false),
        })?;
        Ok(BeginTransactionRecord {
            name,
            unknown_tagged_fields,
        })
    }
}

/// `EndTransactionRecord` (api key 24, KIP-868).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EndTransactionRecord {
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for EndTransactionRecord {
    const NAME: &'static str = "EndTransactionRecord";
    const API_KEY: u16 = 24;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(EndTransactionRecord {
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `AbortTransactionRecord` (api key 25, KIP-868): the open transaction's records are void.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AbortTransactionRecord {
    /// Tag 0.
    pub reason: Option<String>,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for AbortTransactionRecord {
    const NAME: &'static str = "AbortTransactionRecord";
    const API_KEY: u16 = 25;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        let mut tags = TaggedFields::new();
        if let Some(reason) = &self.reason {
            tags.field(0, |w| w.string(reason));
        }
        tags.write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        let mut reason = None;
        let unknown_tagged_fields = r.tagged_fields(|tag, r| match tag {
            0 => {
                reason = r.nullable_string("Reason")?;
                Ok(true)
            }
            _ => Ok(false),
        })?;
        Ok(AbortTransactionRecord {
            reason,
            unknown_tagged_fields,
        })
    }
}
