//! CreatePartitions: grow a topic to a new total. Partitions can only be added; explicit
//! assignments must give one replica list per added partition, naming this broker (a single
//! node has no other). ACLs: ALTER on the topic, else TOPIC_AUTHORIZATION_FAILED.

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::Ctx;
use crate::acl::{AclOperation, ResourceType};

pub fn handle(ctx: &Ctx<'_>, req: CreatePartitionsRequest) -> CreatePartitionsResponse {
    let broker = ctx.broker;
    let mut resp = CreatePartitionsResponse::default();
    for t in req.topics {
        let mut r = CreatePartitionsTopicResult::default();
        r.name = t.name.clone();
        // Kafka checks the topic and the new total first (add_partitions reports those), then
        // that there is one assignment per added partition, then the brokers named.
        let current = broker
            .topics
            .get(t.name.as_str())
            .map(|topic| topic.partitions.len() as i32);
        let bad_assignment = match (&t.assignments, current) {
            (Some(a), Some(current)) if t.count > current => {
                let added = (t.count - current) as usize;
                if a.len() != added {
                    Some(format!(
                        "{added} partitions would be added but {} assignments were given",
                        a.len()
                    ))
                } else {
                    a.iter()
                        .find(|x| x.broker_ids.len() != 1 || x.broker_ids[0].0 != broker.node_id)
                        .map(|x| {
                            format!(
                                "assignment {:?} names brokers this cluster does not have (only {})",
                                x.broker_ids.iter().map(|b| b.0).collect::<Vec<_>>(),
                                broker.node_id
                            )
                        })
                }
            }
            _ => None,
        };
        let result = match bad_assignment {
            _ if !ctx.authorize(AclOperation::Alter, ResourceType::Topic, &t.name) => Err((
                ResponseError::TopicAuthorizationFailed,
                ctx.denied(AclOperation::Alter, ResourceType::Topic, &t.name),
            )),
            Some(m) => Err((ResponseError::InvalidReplicaAssignment, m)),
            None => broker
                .topics
                .add_partitions(t.name.as_str(), t.count, req.validate_only)
                .map_err(|e| {
                    (
                        ResponseError::try_from_code(e.code())
                            .unwrap_or(ResponseError::UnknownServerError),
                        e.to_string(),
                    )
                }),
        };
        if let Err((code, message)) = result {
            r.error_code = code.code();
            r.error_message = Some(StrBytes::from_string(message));
        }
        resp.results.push(r);
    }
    resp
}
