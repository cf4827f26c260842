//! The broker and controller registration records (api keys 0, 1, 7, 8, 17, 27), split out
//! of `records` for size; same conventions as its module doc.

use uuid::Uuid;

use super::super::codec::{Reader, RecordError, TaggedFields, UnknownTaggedFields, Writer};
use super::{not_in_version, Schema};

// ---------------------------------------------------------------------------------------------
// Brokers and controllers
// ---------------------------------------------------------------------------------------------

/// `RegisterBrokerRecord.EndPoints[]` / `RegisterControllerRecord.EndPoints[]`: a listener.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BrokerEndpoint {
    pub name: String,
    pub host: String,
    pub port: u16,
    pub security_protocol: i16,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

/// `RegisterControllerRecord.EndPoints[]` has the same fields as a broker's.
pub type ControllerEndpoint = BrokerEndpoint;

/// `Features[]`: the range of levels of one feature a node supports.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BrokerFeature {
    pub name: String,
    pub min_supported_version: i16,
    pub max_supported_version: i16,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

/// `RegisterControllerRecord.Features[]` has the same fields as a broker's.
pub type ControllerFeature = BrokerFeature;

/// Smallest encodings (empty strings, empty tag section): caps for array lengths.
const MIN_ENDPOINT_SIZE: usize = 1 + 1 + 2 + 2 + 1;
const MIN_FEATURE_SIZE: usize = 1 + 2 + 2 + 1;

fn write_endpoint(w: &mut Writer, e: &BrokerEndpoint) {
    w.string(&e.name);
    w.string(&e.host);
    w.u16(e.port);
    w.i16(e.security_protocol);
    TaggedFields::new().write(w, &e.unknown_tagged_fields);
}

fn read_endpoint(r: &mut Reader<'_>) -> Result<BrokerEndpoint, RecordError> {
    Ok(BrokerEndpoint {
        name: r.string("EndPoints.Name")?,
        host: r.string("EndPoints.Host")?,
        port: r.u16("EndPoints.Port")?,
        security_protocol: r.i16("EndPoints.SecurityProtocol")?,
        unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
    })
}

fn write_feature(w: &mut Writer, f: &BrokerFeature) {
    w.string(&f.name);
    w.i16(f.min_supported_version);
    w.i16(f.max_supported_version);
    TaggedFields::new().write(w, &f.unknown_tagged_fields);
}

fn read_feature(r: &mut Reader<'_>) -> Result<BrokerFeature, RecordError> {
    Ok(BrokerFeature {
        name: r.string("Features.Name")?,
        min_supported_version: r.i16("Features.MinSupportedVersion")?,
        max_supported_version: r.i16("Features.MaxSupportedVersion")?,
        unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
    })
}

/// `RegisterBrokerRecord` (api key 0, versions 0-3): a broker registered (or re-registered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterBrokerRecord {
    pub broker_id: i32,
    /// Version 2+. Always false in a KRaft-only cluster.
    pub is_migrating_zk_broker: bool,
    pub incarnation_id: Uuid,
    pub broker_epoch: i64,
    pub end_points: Vec<BrokerEndpoint>,
    pub features: Vec<BrokerFeature>,
    pub rack: Option<String>,
    /// Schema default: true (a broker registers fenced).
    pub fenced: bool,
    /// Version 1+.
    pub in_controlled_shutdown: bool,
    /// Version 3+, tag 0 (KIP-858): the broker's online log directories.
    pub log_dirs: Vec<Uuid>,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Default for RegisterBrokerRecord {
    fn default() -> Self {
        RegisterBrokerRecord {
            broker_id: 0,
            is_migrating_zk_broker: false,
            incarnation_id: Uuid::nil(),
            broker_epoch: 0,
            end_points: Vec::new(),
            features: Vec::new(),
            rack: None,
            fenced: true,
            in_controlled_shutdown: false,
            log_dirs: Vec::new(),
            unknown_tagged_fields: UnknownTaggedFields::new(),
        }
    }
}

impl Schema for RegisterBrokerRecord {
    const NAME: &'static str = "RegisterBrokerRecord";
    const API_KEY: u16 = 0;
    const LATEST_VERSION: u16 = 3;

    fn check_version(&self, v: u16) -> Result<(), RecordError> {
        if v < 2 && self.is_migrating_zk_broker {
            return Err(not_in_version(Self::NAME, v, "IsMigratingZkBroker"));
        }
        if v < 1 && self.in_controlled_shutdown {
            return Err(not_in_version(Self::NAME, v, "InControlledShutdown"));
        }
        if v < 3 && !self.log_dirs.is_empty() {
            return Err(not_in_version(Self::NAME, v, "LogDirs"));
        }
        Ok(())
    }

    fn write(&self, w: &mut Writer, v: u16) {
        w.i32(self.broker_id);
        if v >= 2 {
            w.bool(self.is_migrating_zk_broker);
        }
        w.uuid(self.incarnation_id);
        w.i64(self.broker_epoch);
        w.array(&self.end_points, write_endpoint);
        w.array(&self.features, write_feature);
        w.nullable_string(self.rack.as_deref());
        w.bool(self.fenced);
        if v >= 1 {
            w.bool(self.in_controlled_shutdown);
        }
        let mut tags = TaggedFields::new();
        if v >= 3 && !self.log_dirs.is_empty() {
            tags.field(0, |w| w.uuid_array(&self.log_dirs));
        }
        tags.write(w, &self.unknown_tagged_fields);
    }

    fn read(r: &mut Reader<'_>, v: u16) -> Result<Self, RecordError> {
        let mut rec = RegisterBrokerRecord {
            broker_id: r.i32("BrokerId")?,
            ..Default::default()
        };
        if v >= 2 {
            rec.is_migrating_zk_broker = r.bool("IsMigratingZkBroker")?;
        }
        rec.incarnation_id = r.uuid("IncarnationId")?;
        rec.broker_epoch = r.i64("BrokerEpoch")?;
        rec.end_points = r.array("EndPoints", MIN_ENDPOINT_SIZE, read_endpoint)?;
        rec.features = r.array("Features", MIN_FEATURE_SIZE, read_feature)?;
        rec.rack = r.nullable_string("Rack")?;
        rec.fenced = r.bool("Fenced")?;
        if v >= 1 {
            rec.in_controlled_shutdown = r.bool("InControlledShutdown")?;
        }
        let mut log_dirs = Vec::new();
        rec.unknown_tagged_fields = r.tagged_fields(|tag, r| match tag {
            0 if v >= 3 => {
                log_dirs = r.uuid_array("LogDirs")?;
                Ok(true)
            }
            _ => Ok(false),
        })?;
        rec.log_dirs = log_dirs;
        Ok(rec)
    }
}

/// `UnregisterBrokerRecord` (api key 1): a broker's registration was removed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UnregisterBrokerRecord {
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for UnregisterBrokerRecord {
    const NAME: &'static str = "UnregisterBrokerRecord";
    const API_KEY: u16 = 1;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.i32(self.broker_id);
        w.i64(self.broker_epoch);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(UnregisterBrokerRecord {
            broker_id: r.i32("BrokerId")?,
            broker_epoch: r.i64("BrokerEpoch")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `FenceBrokerRecord` (api key 7): the broker is fenced (and leaves every ISR).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FenceBrokerRecord {
    pub id: i32,
    pub epoch: i64,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for FenceBrokerRecord {
    const NAME: &'static str = "FenceBrokerRecord";
    const API_KEY: u16 = 7;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.i32(self.id);
        w.i64(self.epoch);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(FenceBrokerRecord {
            id: r.i32("Id")?,
            epoch: r.i64("Epoch")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `UnfenceBrokerRecord` (api key 8): the broker is unfenced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UnfenceBrokerRecord {
    pub id: i32,
    pub epoch: i64,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for UnfenceBrokerRecord {
    const NAME: &'static str = "UnfenceBrokerRecord";
    const API_KEY: u16 = 8;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.i32(self.id);
        w.i64(self.epoch);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(UnfenceBrokerRecord {
            id: r.i32("Id")?,
            epoch: r.i64("Epoch")?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}

/// `BrokerRegistrationChangeRecord` (api key 17, versions 0-2).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BrokerRegistrationChangeRecord {
    pub broker_id: i32,
    pub broker_epoch: i64,
    /// Tag 0: -1 unfenced, 0 no change (default), 1 fenced.
    pub fenced: i8,
    /// Version 1+, tag 1: 0 no change (default), 1 in controlled shutdown.
    pub in_controlled_shutdown: i8,
    /// Version 2+, tag 2: the broker's online log directories; empty means no change.
    pub log_dirs: Vec<Uuid>,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for BrokerRegistrationChangeRecord {
    const NAME: &'static str = "BrokerRegistrationChangeRecord";
    const API_KEY: u16 = 17;
    const LATEST_VERSION: u16 = 2;

    fn check_version(&self, v: u16) -> Result<(), RecordError> {
        if v < 1 && self.in_controlled_shutdown != 0 {
            return Err(not_in_version(Self::NAME, v, "InControlledShutdown"));
        }
        if v < 2 && !self.log_dirs.is_empty() {
            return Err(not_in_version(Self::NAME, v, "LogDirs"));
        }
        Ok(())
    }

    fn write(&self, w: &mut Writer, v: u16) {
        w.i32(self.broker_id);
        w.i64(self.broker_epoch);
        let mut tags = TaggedFields::new();
        if self.fenced != 0 {
            tags.field(0, |w| w.i8(self.fenced));
        }
        if v >= 1 && self.in_controlled_shutdown != 0 {
            tags.field(1, |w| w.i8(self.in_controlled_shutdown));
        }
        if v >= 2 && !self.log_dirs.is_empty() {
            tags.field(2, |w| w.uuid_array(&self.log_dirs));
        }
        tags.write(w, &self.unknown_tagged_fields);
    }

    fn read(r: &mut Reader<'_>, v: u16) -> Result<Self, RecordError> {
        let broker_id = r.i32("BrokerId")?;
        let broker_epoch = r.i64("BrokerEpoch")?;
        let (mut fenced, mut in_controlled_shutdown, mut log_dirs) = (0, 0, Vec::new());
        let unknown_tagged_fields = r.tagged_fields(|tag, r| match tag {
            0 => {
                fenced = r.i8("Fenced")?;
                Ok(true)
            }
            1 if v >= 1 => {
                in_controlled_shutdown = r.i8("InControlledShutdown")?;
                Ok(true)
            }
            2 if v >= 2 => {
                log_dirs = r.uuid_array("LogDirs")?;
                Ok(true)
            }
            _ => Ok(false),
        })?;
        Ok(BrokerRegistrationChangeRecord {
            broker_id,
            broker_epoch,
            fenced,
            in_controlled_shutdown,
            log_dirs,
            unknown_tagged_fields,
        })
    }
}

/// `RegisterControllerRecord` (api key 27): a controller registered (KIP-919).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegisterControllerRecord {
    pub controller_id: i32,
    pub incarnation_id: Uuid,
    pub zk_migration_ready: bool,
    pub end_points: Vec<ControllerEndpoint>,
    pub features: Vec<ControllerFeature>,
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl Schema for RegisterControllerRecord {
    const NAME: &'static str = "RegisterControllerRecord";
    const API_KEY: u16 = 27;
    const LATEST_VERSION: u16 = 0;
    fn write(&self, w: &mut Writer, _: u16) {
        w.i32(self.controller_id);
        w.uuid(self.incarnation_id);
        w.bool(self.zk_migration_ready);
        w.array(&self.end_points, write_endpoint);
        w.array(&self.features, write_feature);
        TaggedFields::new().write(w, &self.unknown_tagged_fields);
    }
    fn read(r: &mut Reader<'_>, _: u16) -> Result<Self, RecordError> {
        Ok(RegisterControllerRecord {
            controller_id: r.i32("ControllerId")?,
            incarnation_id: r.uuid("IncarnationId")?,
            zk_migration_ready: r.bool("ZkMigrationReady")?,
            end_points: r.array("EndPoints", MIN_ENDPOINT_SIZE, read_endpoint)?,
            features: r.array("Features", MIN_FEATURE_SIZE, read_feature)?,
            unknown_tagged_fields: r.tagged_fields(|_, _| Ok(false))?,
        })
    }
}
