//! Field descriptions of the messages whose newest Kafka 4.4 version `kafka-protocol` 0.18
//! cannot read or write, written from Kafka 4.4's own schemas
//! (`common/message/*.json` in kafka-clients-4.4.0.jar). Each describes every version of its
//! message, so that a body can be read at the version the codec knows and written at the
//! newer one, or the other way. Field names are the schemas' own.

use super::codec::{Default, Field, Message, Type, Versions};

const V0: Versions = Versions::from(0);

const fn f(name: &'static str, ty: Type, versions: Versions) -> Field {
    Field::new(name, ty, versions)
}
const fn since(v: i16) -> Versions {
    Versions::from(v)
}

// ApiVersionsRequest: v5 adds ClusterId and NodeId (KIP-1242).
pub static API_VERSIONS_REQUEST: Message = Message {
    name: "ApiVersionsRequest",
    flexible: since(3),
    fields: &[
        f("ClientSoftwareName", Type::String, since(3)),
        f("ClientSoftwareVersion", Type::String, since(3)),
        f("ClusterId", Type::String, since(5))
            .nullable(since(5))
            .default(Default::Null),
        f("NodeId", Type::Int32, since(5)).default(Default::Int(-1)),
    ],
};

// DeleteGroupsResponse: v3 adds a per-group ErrorMessage.
pub static DELETE_GROUPS_RESPONSE: Message = Message {
    name: "DeleteGroupsResponse",
    flexible: since(2),
    fields: &[
        f("ThrottleTimeMs", Type::Int32, V0),
        f(
            "Results",
            Type::Array(&Type::Struct(&[
                f("GroupId", Type::String, V0),
                f("ErrorCode", Type::Int16, V0),
                f("ErrorMessage", Type::String, since(3))
                    .nullable(since(3))
                    .default(Default::Null),
            ])),
            V0,
        ),
    ],
};

// DescribeLogDirsResponse: v5 adds IsCordoned per log dir.
const DESCRIBE_LOG_DIRS_PARTITION: &[Field] = &[
    f("PartitionIndex", Type::Int32, V0),
    f("PartitionSize", Type::Int64, V0),
    f("OffsetLag", Type::Int64, V0),
    f("IsFutureKey", Type::Bool, V0),
];
const DESCRIBE_LOG_DIRS_TOPIC: &[Field] = &[
    f("Name", Type::String, V0),
    f(
        "Partitions",
        Type::Array(&Type::Struct(DESCRIBE_LOG_DIRS_PARTITION)),
        V0,
    ),
];
pub static DESCRIBE_LOG_DIRS_RESPONSE: Message = Message {
    name: "DescribeLogDirsResponse",
    flexible: since(2),
    fields: &[
        f("ThrottleTimeMs", Type::Int32, V0),
        f("ErrorCode", Type::Int16, since(3)),
        f(
            "Results",
            Type::Array(&Type::Struct(&[
                f("ErrorCode", Type::Int16, V0),
                f("LogDir", Type::String, V0),
                f(
                    "Topics",
                    Type::Array(&Type::Struct(DESCRIBE_LOG_DIRS_TOPIC)),
                    V0,
                ),
                f("TotalBytes", Type::Int64, since(4)).default(Default::Int(-1)),
                f("UsableBytes", Type::Int64, since(4)).default(Default::Int(-1)),
                f("IsCordoned", Type::Bool, since(5)).default(Default::Bool(false)),
            ])),
            V0,
        ),
    ],
};

// WriteTxnMarkersRequest: v2 adds TransactionVersion per marker (KIP-1228).
const WRITE_TXN_MARKERS_TOPIC: &[Field] = &[
    f("Name", Type::String, V0),
    f("PartitionIndexes", Type::Array(&Type::Int32), V0),
];
pub static WRITE_TXN_MARKERS_REQUEST: Message = Message {
    name: "WriteTxnMarkersRequest",
    flexible: since(1),
    fields: &[f(
        "Markers",
        Type::Array(&Type::Struct(&[
            f("ProducerId", Type::Int64, V0),
            f("ProducerEpoch", Type::Int16, V0),
            f("TransactionResult", Type::Bool, V0),
            f(
                "Topics",
                Type::Array(&Type::Struct(WRITE_TXN_MARKERS_TOPIC)),
                V0,
            ),
            f("CoordinatorEpoch", Type::Int32, V0),
            f("TransactionVersion", Type::Int8, since(2)),
        ])),
        V0,
    )],
};

// AddRaftVoterRequest: v1 adds AckWhenCommitted.
const ADD_RAFT_VOTER_LISTENER: &[Field] = &[
    f("Name", Type::String, V0),
    f("Host", Type::String, V0),
    f("Port", Type::Uint16, V0),
];
pub static ADD_RAFT_VOTER_REQUEST: Message = Message {
    name: "AddRaftVoterRequest",
    flexible: V0,
    fields: &[
        f("ClusterId", Type::String, V0).nullable(V0),
        f("TimeoutMs", Type::Int32, V0),
        f("VoterId", Type::Int32, V0),
        f("VoterDirectoryId", Type::Uuid, V0),
        f(
            "Listeners",
            Type::Array(&Type::Struct(ADD_RAFT_VOTER_LISTENER)),
            V0,
        ),
        f("AckWhenCommitted", Type::Bool, since(1)).default(Default::Bool(true)),
    ],
};

// BrokerHeartbeatRequest: v2 adds the tagged CordonedLogDirs.
pub static BROKER_HEARTBEAT_REQUEST: Message = Message {
    name: "BrokerHeartbeatRequest",
    flexible: V0,
    fields: &[
        f("BrokerId", Type::Int32, V0),
        f("BrokerEpoch", Type::Int64, V0).default(Default::Int(-1)),
        f("CurrentMetadataOffset", Type::Int64, V0),
        f("WantFence", Type::Bool, V0),
        f("WantShutDown", Type::Bool, V0),
        f("OfflineLogDirs", Type::Array(&Type::Uuid), since(1)).tagged(0, since(1)),
        f("CordonedLogDirs", Type::Array(&Type::Uuid), since(2))
            .tagged(1, since(2))
            .nullable(since(2))
            .default(Default::Null),
    ],
};

// OffsetCommitRequest: v10 names topics by id (KIP-848).
const OFFSET_COMMIT_REQUEST_PARTITION: &[Field] = &[
    f("PartitionIndex", Type::Int32, V0),
    f("CommittedOffset", Type::Int64, V0),
    f("CommittedLeaderEpoch", Type::Int32, since(6)).default(Default::Int(-1)),
    f("CommittedMetadata", Type::String, V0).nullable(V0),
];
const OFFSET_COMMIT_REQUEST_TOPIC: &[Field] = &[
    f("Name", Type::String, Versions::range(0, 9)),
    f("TopicId", Type::Uuid, since(10)),
    f(
        "Partitions",
        Type::Array(&Type::Struct(OFFSET_COMMIT_REQUEST_PARTITION)),
        V0,
    ),
];
pub static OFFSET_COMMIT_REQUEST: Message = Message {
    name: "OffsetCommitRequest",
    flexible: since(8),
    fields: &[
        f("GroupId", Type::String, V0),
        f("GenerationIdOrMemberEpoch", Type::Int32, since(1)).default(Default::Int(-1)),
        f("MemberId", Type::String, since(1)),
        f("GroupInstanceId", Type::String, since(7))
            .nullable(since(7))
            .default(Default::Null),
        f("RetentionTimeMs", Type::Int64, Versions::range(2, 4)).default(Default::Int(-1)),
        f(
            "Topics",
            Type::Array(&Type::Struct(OFFSET_COMMIT_REQUEST_TOPIC)),
            V0,
        ),
    ],
};

// OffsetFetchRequest: v10 names topics by id (KIP-848).
const OFFSET_FETCH_REQUEST_TOPIC: &[Field] = &[
    f("Name", Type::String, Versions::range(0, 7)),
    f(
        "PartitionIndexes",
        Type::Array(&Type::Int32),
        Versions::range(0, 7),
    ),
];
const OFFSET_FETCH_REQUEST_TOPICS: &[Field] = &[
    f("Name", Type::String, Versions::range(8, 9)),
    f("TopicId", Type::Uuid, since(10)),
    f("PartitionIndexes", Type::Array(&Type::Int32), since(8)),
];
const OFFSET_FETCH_REQUEST_GROUP: &[Field] = &[
    f("GroupId", Type::String, since(8)),
    f("MemberId", Type::String, since(9))
        .nullable(since(9))
        .default(Default::Null),
    f("MemberEpoch", Type::Int32, since(9)).default(Default::Int(-1)),
    f(
        "Topics",
        Type::Array(&Type::Struct(OFFSET_FETCH_REQUEST_TOPICS)),
        since(8),
    )
    .nullable(since(8)),
];
pub static OFFSET_FETCH_REQUEST: Message = Message {
    name: "OffsetFetchRequest",
    flexible: since(6),
    fields: &[
        f("GroupId", Type::String, Versions::range(0, 7)),
        f(
            "Topics",
            Type::Array(&Type::Struct(OFFSET_FETCH_REQUEST_TOPIC)),
            Versions::range(0, 7),
        )
        .nullable(Versions::range(2, 7)),
        f(
            "Groups",
            Type::Array(&Type::Struct(OFFSET_FETCH_REQUEST_GROUP)),
            since(8),
        ),
        f("RequireStable", Type::Bool, since(7)),
    ],
};

// TxnOffsetCommitRequest and Response: v6 names topics by id (KIP-1319).
const TXN_OFFSET_COMMIT_REQUEST_PARTITION: &[Field] = &[
    f("PartitionIndex", Type::Int32, V0),
    f("CommittedOffset", Type::Int64, V0),
    f("CommittedLeaderEpoch", Type::Int32, since(2)).default(Default::Int(-1)),
    f("CommittedMetadata", Type::String, V0).nullable(V0),
];
const TXN_OFFSET_COMMIT_REQUEST_TOPIC: &[Field] = &[
    f("Name", Type::String, Versions::range(0, 5)),
    f("TopicId", Type::Uuid, since(6)),
    f(
        "Partitions",
        Type::Array(&Type::Struct(TXN_OFFSET_COMMIT_REQUEST_PARTITION)),
        V0,
    ),
];
pub static TXN_OFFSET_COMMIT_REQUEST: Message = Message {
    name: "TxnOffsetCommitRequest",
    flexible: since(3),
    fields: &[
        f("TransactionalId", Type::String, V0),
        f("GroupId", Type::String, V0),
        f("ProducerId", Type::Int64, V0),
        f("ProducerEpoch", Type::Int16, V0),
        f("GenerationIdOrMemberEpoch", Type::Int32, since(3)).default(Default::Int(-1)),
        f("MemberId", Type::String, since(3)),
        f("GroupInstanceId", Type::String, since(3))
            .nullable(since(3))
            .default(Default::Null),
        f(
            "Topics",
            Type::Array(&Type::Struct(TXN_OFFSET_COMMIT_REQUEST_TOPIC)),
            V0,
        ),
    ],
};
const TXN_OFFSET_COMMIT_RESPONSE_PARTITION: &[Field] = &[
    f("PartitionIndex", Type::Int32, V0),
    f("ErrorCode", Type::Int16, V0),
];
pub static TXN_OFFSET_COMMIT_RESPONSE: Message = Message {
    name: "TxnOffsetCommitResponse",
    flexible: since(3),
    fields: &[
        f("ThrottleTimeMs", Type::Int32, V0),
        f(
            "Topics",
            Type::Array(&Type::Struct(&[
                f("Name", Type::String, Versions::range(0, 5)),
                f("TopicId", Type::Uuid, since(6)),
                f(
                    "Partitions",
                    Type::Array(&Type::Struct(TXN_OFFSET_COMMIT_RESPONSE_PARTITION)),
                    V0,
                ),
            ])),
            V0,
        ),
    ],
};

// DescribeShareGroupOffsetsResponse: v1 adds Lag per partition (KIP-1226).
const DESCRIBE_SHARE_GROUP_OFFSETS_PARTITION: &[Field] = &[
    f("PartitionIndex", Type::Int32, V0),
    f("StartOffset", Type::Int64, V0),
    f("LeaderEpoch", Type::Int32, V0),
    f("Lag", Type::Int64, since(1)).default(Default::Int(-1)),
    f("ErrorCode", Type::Int16, V0),
    f("ErrorMessage", Type::String, V0)
        .nullable(V0)
        .default(Default::Null),
];
const DESCRIBE_SHARE_GROUP_OFFSETS_TOPIC: &[Field] = &[
    f("TopicName", Type::String, V0),
    f("TopicId", Type::Uuid, V0),
    f(
        "Partitions",
        Type::Array(&Type::Struct(DESCRIBE_SHARE_GROUP_OFFSETS_PARTITION)),
        V0,
    ),
];
pub static DESCRIBE_SHARE_GROUP_OFFSETS_RESPONSE: Message = Message {
    name: "DescribeShareGroupOffsetsResponse",
    flexible: V0,
    fields: &[
        f("ThrottleTimeMs", Type::Int32, V0),
        f(
            "Groups",
            Type::Array(&Type::Struct(&[
                f("GroupId", Type::String, V0),
                f(
                    "Topics",
                    Type::Array(&Type::Struct(DESCRIBE_SHARE_GROUP_OFFSETS_TOPIC)),
                    V0,
                ),
                f("ErrorCode", Type::Int16, V0),
                f("ErrorMessage", Type::String, V0)
                    .nullable(V0)
                    .default(Default::Null),
            ])),
            V0,
        ),
    ],
};

// ReadShareGroupStateSummaryResponse: v1 adds DeliveryCompleteCount (KIP-1226).
const READ_SHARE_GROUP_STATE_SUMMARY_PARTITION: &[Field] = &[
    f("Partition", Type::Int32, V0),
    f("ErrorCode", Type::Int16, V0),
    f("ErrorMessage", Type::String, V0)
        .nullable(V0)
        .default(Default::Null),
    f("StateEpoch", Type::Int32, V0),
    f("LeaderEpoch", Type::Int32, V0),
    f("StartOffset", Type::Int64, V0),
    f("DeliveryCompleteCount", Type::Int32, since(1)).default(Default::Int(-1)),
];
pub static READ_SHARE_GROUP_STATE_SUMMARY_RESPONSE: Message = Message {
    name: "ReadShareGroupStateSummaryResponse",
    flexible: V0,
    fields: &[f(
        "Results",
        Type::Array(&Type::Struct(&[
            f("TopicId", Type::Uuid, V0),
            f(
                "Partitions",
                Type::Array(&Type::Struct(READ_SHARE_GROUP_STATE_SUMMARY_PARTITION)),
                V0,
            ),
        ])),
        V0,
    )],
};

// WriteShareGroupStateRequest: v1 adds DeliveryCompleteCount per partition (KIP-1226).
const WRITE_SHARE_GROUP_STATE_BATCH: &[Field] = &[
    f("FirstOffset", Type::Int64, V0),
    f("LastOffset", Type::Int64, V0),
    f("DeliveryState", Type::Int8, V0),
    f("DeliveryCount", Type::Int16, V0),
];
const WRITE_SHARE_GROUP_STATE_PARTITION: &[Field] = &[
    f("Partition", Type::Int32, V0),
    f("StateEpoch", Type::Int32, V0),
    f("LeaderEpoch", Type::Int32, V0),
    f("StartOffset", Type::Int64, V0),
    f("DeliveryCompleteCount", Type::Int32, since(1)).default(Default::Int(-1)),
    f(
        "StateBatches",
        Type::Array(&Type::Struct(WRITE_SHARE_GROUP_STATE_BATCH)),
        V0,
    ),
];
pub static WRITE_SHARE_GROUP_STATE_REQUEST: Message = Message {
    name: "WriteShareGroupStateRequest",
    flexible: V0,
    fields: &[
        f("GroupId", Type::String, V0),
        f(
            "Topics",
            Type::Array(&Type::Struct(&[
                f("TopicId", Type::Uuid, V0),
                f(
                    "Partitions",
                    Type::Array(&Type::Struct(WRITE_SHARE_GROUP_STATE_PARTITION)),
                    V0,
                ),
            ])),
            V0,
        ),
    ],
};

// ShareFetchRequest: v2 adds ShareAcquireMode (KIP-1206) and IsRenewAck (KIP-1222). The
// response's v2 is v1's bytes.
const SHARE_ACKNOWLEDGEMENT_BATCH: &[Field] = &[
    f("FirstOffset", Type::Int64, V0),
    f("LastOffset", Type::Int64, V0),
    f("AcknowledgeTypes", Type::Array(&Type::Int8), V0),
];
const SHARE_FETCH_REQUEST_PARTITION: &[Field] = &[
    f("PartitionIndex", Type::Int32, V0),
    f("PartitionMaxBytes", Type::Int32, Versions::range(0, 0)),
    f(
        "AcknowledgementBatches",
        Type::Array(&Type::Struct(SHARE_ACKNOWLEDGEMENT_BATCH)),
        V0,
    ),
];
pub static SHARE_FETCH_REQUEST: Message = Message {
    name: "ShareFetchRequest",
    flexible: V0,
    fields: &[
        f("GroupId", Type::String, V0)
            .nullable(V0)
            .default(Default::Null),
        f("MemberId", Type::String, V0).nullable(V0),
        f("ShareSessionEpoch", Type::Int32, V0),
        f("MaxWaitMs", Type::Int32, V0),
        f("MinBytes", Type::Int32, V0),
        f("MaxBytes", Type::Int32, V0).default(Default::Int(0x7fff_ffff)),
        f("MaxRecords", Type::Int32, since(1)),
        f("BatchSize", Type::Int32, since(1)),
        f("ShareAcquireMode", Type::Int8, since(2)).default(Default::Int(0)),
        f("IsRenewAck", Type::Bool, since(2)).default(Default::Bool(false)),
        f(
            "Topics",
            Type::Array(&Type::Struct(&[
                f("TopicId", Type::Uuid, V0),
                f(
                    "Partitions",
                    Type::Array(&Type::Struct(SHARE_FETCH_REQUEST_PARTITION)),
                    V0,
                ),
            ])),
            V0,
        ),
        f(
            "ForgottenTopicsData",
            Type::Array(&Type::Struct(&[
                f("TopicId", Type::Uuid, V0),
                f("Partitions", Type::Array(&Type::Int32), V0),
            ])),
            V0,
        ),
    ],
};

// ShareAcknowledgeRequest and Response: v2 adds IsRenewAck to the request (KIP-1222) and
// AcquisitionLockTimeoutMs to the response.
const SHARE_ACKNOWLEDGE_REQUEST_PARTITION: &[Field] = &[
    f("PartitionIndex", Type::Int32, V0),
    f(
        "AcknowledgementBatches",
        Type::Array(&Type::Struct(SHARE_ACKNOWLEDGEMENT_BATCH)),
        V0,
    ),
];
pub static SHARE_ACKNOWLEDGE_REQUEST: Message = Message {
    name: "ShareAcknowledgeRequest",
    flexible: V0,
    fields: &[
        f("GroupId", Type::String, V0)
            .nullable(V0)
            .default(Default::Null),
        f("MemberId", Type::String, V0).nullable(V0),
        f("ShareSessionEpoch", Type::Int32, V0),
        f("IsRenewAck", Type::Bool, since(2)).default(Default::Bool(false)),
        f(
            "Topics",
            Type::Array(&Type::Struct(&[
                f("TopicId", Type::Uuid, V0),
                f(
                    "Partitions",
                    Type::Array(&Type::Struct(SHARE_ACKNOWLEDGE_REQUEST_PARTITION)),
                    V0,
                ),
            ])),
            V0,
        ),
    ],
};
const SHARE_ACKNOWLEDGE_RESPONSE_PARTITION: &[Field] = &[
    f("PartitionIndex", Type::Int32, V0),
    f("ErrorCode", Type::Int16, V0),
    f("ErrorMessage", Type::String, V0)
        .nullable(V0)
        .default(Default::Null),
    f(
        "CurrentLeader",
        Type::Struct(&[
            f("LeaderId", Type::Int32, V0),
            f("LeaderEpoch", Type::Int32, V0),
        ]),
        V0,
    ),
];
pub static SHARE_ACKNOWLEDGE_RESPONSE: Message = Message {
    name: "ShareAcknowledgeResponse",
    flexible: V0,
    fields: &[
        f("ThrottleTimeMs", Type::Int32, V0),
        f("ErrorCode", Type::Int16, V0),
        f("ErrorMessage", Type::String, V0)
            .nullable(V0)
            .default(Default::Null),
        f("AcquisitionLockTimeoutMs", Type::Int32, since(2)),
        f(
            "Responses",
            Type::Array(&Type::Struct(&[
                f("TopicId", Type::Uuid, V0),
                f(
                    "Partitions",
                    Type::Array(&Type::Struct(SHARE_ACKNOWLEDGE_RESPONSE_PARTITION)),
                    V0,
                ),
            ])),
            V0,
        ),
        f(
            "NodeEndpoints",
            Type::Array(&Type::Struct(&[
                f("NodeId", Type::Int32, V0),
                f("Host", Type::String, V0),
                f("Port", Type::Int32, V0),
                f("Rack", Type::String, V0)
                    .nullable(V0)
                    .default(Default::Null),
            ])),
            V0,
        ),
    ],
};
