//! Clusters and brokers (REST v3 `KafkaCluster`, `KafkaBroker`), from a Metadata request of
//! no topics: the brokers the requester's listener advertises and the active controller.

use axum::response::Response;
use kafka_protocol::messages::MetadataResponse;
use serde_json::{json, Value};

use super::{list_of, ApiError, Req};
use crate::cli::client::Client;

fn brokers_metadata(client: &mut Client) -> Result<MetadataResponse, ApiError> {
    Ok(client.metadata(Some(&[]))?)
}

fn cluster_json(r: &Req, meta: &MetadataResponse) -> Value {
    let controller = meta.controller_id.0;
    json!({
        "kind": "KafkaCluster",
        "metadata": r.metadata(&[], ""),
        "cluster_id": r.cluster_id(),
        "controller": (controller >= 0).then(|| r.related(&["brokers", &controller.to_string()])),
        "acls": r.related(&["acls"]),
        "brokers": r.related(&["brokers"]),
        "broker_configs": r.related(&["broker-configs"]),
        "consumer_groups": r.related(&["consumer-groups"]),
        "topics": r.related(&["topics"]),
        "partition_reassignments": r.related(&["topics", "-", "partitions", "-", "reassignment"]),
    })
}

fn broker_json(
    r: &Req,
    b: &kafka_protocol::messages::metadata_response::MetadataResponseBroker,
) -> Value {
    let id = b.node_id.0.to_string();
    json!({
        "kind": "KafkaBroker",
        "metadata": r.metadata(&["brokers", &id], &format!("/broker={id}")),
        "cluster_id": r.cluster_id(),
        "broker_id": b.node_id.0,
        "host": b.host.as_str(),
        "port": b.port,
        "rack": b.rack.as_ref().map(|s| s.as_str()),
        "configs": r.related(&["brokers", &id, "configs"]),
        "partition_replicas": r.related(&["brokers", &id, "partition-replicas"]),
    })
}

/// `GET /v3/clusters`: the one cluster this node belongs to.
pub async fn list(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[])?;
        let meta = brokers_metadata(client)?;
        let url = format!("{}/v3/clusters", r.base);
        Ok(list_of(
            "KafkaClusterList",
            url,
            None,
            vec![cluster_json(r, &meta)],
        ))
    })
    .await
}

/// `GET /v3/clusters/{id}`.
pub async fn get_one(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[])?;
        Ok(cluster_json(r, &brokers_metadata(client)?))
    })
    .await
}

/// `GET /v3/clusters/{id}/brokers`, by broker id.
pub async fn brokers(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[])?;
        let meta = brokers_metadata(client)?;
        let mut brokers: Vec<_> = meta.brokers.iter().collect();
        brokers.sort_by_key(|b| b.node_id.0);
        let data = brokers.iter().map(|b| broker_json(r, b)).collect();
        Ok(list_of("KafkaBrokerList", r.url(&["brokers"]), None, data))
    })
    .await
}

/// `GET /v3/clusters/{id}/brokers/{broker_id}`.
pub async fn broker(r: Req) -> Response {
    r.run(|client, r| {
        r.only_query(&[])?;
        let id = r.int_param("broker_id")?;
        let meta = brokers_metadata(client)?;
        let b = meta
            .brokers
            .iter()
            .find(|b| b.node_id.0 == id)
            .ok_or_else(|| ApiError::not_found(format!("broker {id} is not in this cluster")))?;
        Ok(broker_json(r, b))
    })
    .await
}
