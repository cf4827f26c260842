//! `samsa quota ...`: client quotas (KIP-546), what `kafka-configs.sh --entity-type
//! users|clients|ips` manages, through DescribeClientQuotas and AlterClientQuotas.
//!
//! An entity is a user, a client id, a user with a client id, or an IP; each part is named or
//! is its type's default (`--user-default`, Kafka's `--entity-default`). `list` filters with
//! Kafka's three match types per entity type: a name (exact), the default, or the bare option
//! (`--user`: any entity with a user part, named or default), and `--strict` keeps only
//! entities with no parts beyond those filtered on (Kafka's `ClientQuotaFilter.containsOnly`).
//! `describe` is the strict form, printed as `kafka-configs --describe` prints it. Values are
//! checked by the broker, and its message is shown as it gave it: the CLI speaks only the
//! Kafka protocol, so it works against Apache Kafka too.

use clap::builder::PossibleValuesParser;
use clap::{Args, Subcommand};
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::{AlterClientQuotasRequest, DescribeClientQuotasRequest};
use kafka_protocol::protocol::StrBytes;
use samsa_cluster::controller::{
    CONNECTION_CREATION_RATE, CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE, ENTITY_CLIENT_ID,
    ENTITY_IP, ENTITY_USER, MATCH_TYPE_DEFAULT, MATCH_TYPE_EXACT, MATCH_TYPE_SPECIFIED,
    PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE,
};
use serde_json::{json, Map, Value};

use super::client::{refused, Client, Node};
use super::global::Global;
use super::output::{emit, Table};

/// The quota keys an entity may have (Kafka's `QuotaConfig`).
pub const QUOTA_KEYS: [&str; 5] = [
    PRODUCER_BYTE_RATE,
    CONSUMER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    CONTROLLER_MUTATION_RATE,
    CONNECTION_CREATION_RATE,
];

/// The entity types in the order Kafka's tools print them.
const ENTITY_TYPES: [&str; 3] = [ENTITY_USER, ENTITY_CLIENT_ID, ENTITY_IP];

#[derive(Debug, Subcommand)]
pub enum QuotaCommand {
    /// The entities matching a filter, with their quotas (every entity without one).
    List(ListArgs),
    /// The quotas of exactly the entities named, as `kafka-configs --describe` prints them.
    Describe(FilterArgs),
    /// Set quotas of one entity (other keys it has stay as they are).
    Set(SetArgs),
    /// Remove quotas of one entity.
    Delete(DeleteArgs),
}

/// A filter: per entity type a name, its default, or (the bare option) any.
#[derive(Debug, Clone, Default, Args)]
pub struct FilterArgs {
    /// Entities of this user; without a name, of any user (named or default).
    #[arg(long, value_name = "USER", conflicts_with = "user_default")]
    pub user: Option<Option<String>>,
    /// Entities of the default user.
    #[arg(long)]
    pub user_default: bool,
    /// Entities of this client id; without one, of any client id (named or default).
    #[arg(long, value_name = "CLIENT_ID", conflicts_with = "client_id_default")]
    pub client_id: Option<Option<String>>,
    /// Entities of the default client id.
    #[arg(long)]
    pub client_id_default: bool,
    /// Entities of this IP; without one, of any IP (named or default).
    #[arg(long, value_name = "IP", conflicts_with = "ip_default")]
    pub ip: Option<Option<String>>,
    /// Entities of the default IP.
    #[arg(long)]
    pub ip_default: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Only entities with no parts beyond the types filtered on.
    #[arg(long)]
    pub strict: bool,
}

/// One entity: each part named, or its type's default.
#[derive(Debug, Clone, Default, Args)]
#[group(required = true, multiple = true)]
pub struct EntityArgs {
    /// The user (principal name) the quotas are for.
    #[arg(long, value_name = "USER", conflicts_with = "user_default")]
    pub user: Option<String>,
    /// The default user: every user without quotas of its own.
    #[arg(long)]
    pub user_default: bool,
    /// The client id the quotas are for.
    #[arg(long, value_name = "CLIENT_ID", conflicts_with = "client_id_default")]
    pub client_id: Option<String>,
    /// The default client id.
    #[arg(long)]
    pub client_id_default: bool,
    /// The IP address (connection_creation_rate only).
    #[arg(long, value_name = "IP", conflicts_with = "ip_default")]
    pub ip: Option<String>,
    /// The default IP: every address without a quota of its own.
    #[arg(long)]
    pub ip_default: bool,
}

/// The values to set: at least one.
#[derive(Debug, Clone, Default, Args)]
#[group(required = true, multiple = true)]
pub struct QuotaValues {
    /// Bytes per second the entity's producers may send to each broker.
    #[arg(long, value_name = "BYTES", allow_negative_numbers = true)]
    pub producer_byte_rate: Option<f64>,
    /// Bytes per second the entity's consumers may fetch from each broker.
    #[arg(long, value_name = "BYTES", allow_negative_numbers = true)]
    pub consumer_byte_rate: Option<f64>,
    /// Percentage of a broker thread's time the entity's requests may take.
    #[arg(long, value_name = "PERCENT", allow_negative_numbers = true)]
    pub request_percentage: Option<f64>,
    /// Partitions per second the entity may create or delete (KIP-599).
    #[arg(long, value_name = "RATE", allow_negative_numbers = true)]
    pub controller_mutation_rate: Option<f64>,
    /// New connections per second from an IP (KIP-612; --ip or --ip-default).
    #[arg(long, value_name = "RATE", allow_negative_numbers = true)]
    pub connection_creation_rate: Option<f64>,
}

#[derive(Debug, Args)]
pub struct SetArgs {
    #[command(flatten)]
    pub entity: EntityArgs,
    #[command(flatten)]
    pub values: QuotaValues,
    /// Have the broker check the change without making it.
    #[arg(long)]
    pub validate_only: bool,
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    #[command(flatten)]
    pub entity: EntityArgs,
    /// A quota key to remove (repeat for more).
    #[arg(long = "key", value_name = "KEY", required = true,
          value_parser = PossibleValuesParser::new(QUOTA_KEYS))]
    pub keys: Vec<String>,
    /// Have the broker check the change without making it.
    #[arg(long)]
    pub validate_only: bool,
}

/// How a filter matches one entity type (DescribeClientQuotas' `match_type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    Exact(String),
    Default,
    Any,
}

/// An entity's parts: type and name (`None`: the type's default), in [`ENTITY_TYPES`] order.
pub type Entity = Vec<(String, Option<String>)>;

/// One entity described, with its quotas by key.
#[derive(Debug, Clone, PartialEq)]
pub struct Described {
    pub entity: Entity,
    pub quotas: Vec<(String, f64)>,
}

impl FilterArgs {
    /// The filter's components, by entity type.
    pub fn components(&self) -> Vec<(&'static str, Match)> {
        let per_type = [
            (ENTITY_USER, &self.user, self.user_default),
            (ENTITY_CLIENT_ID, &self.client_id, self.client_id_default),
            (ENTITY_IP, &self.ip, self.ip_default),
        ];
        per_type
            .into_iter()
            .filter_map(|(t, name, default)| match (name, default) {
                (Some(Some(n)), _) => Some((t, Match::Exact(n.clone()))),
                (Some(None), _) => Some((t, Match::Any)),
                (None, true) => Some((t, Match::Default)),
                (None, false) => None,
            })
            .collect()
    }
}

impl EntityArgs {
    pub fn entity(&self) -> Entity {
        [
            (ENTITY_USER, &self.user, self.user_default),
            (ENTITY_CLIENT_ID, &self.client_id, self.client_id_default),
            (ENTITY_IP, &self.ip, self.ip_default),
        ]
        .into_iter()
        .filter(|(_, name, default)| name.is_some() || *default)
        .map(|(t, name, _)| (t.to_string(), name.clone()))
        .collect()
    }
}

impl QuotaValues {
    /// The keys given, with their values.
    pub fn ops(&self) -> Vec<(&'static str, f64)> {
        [
            (PRODUCER_BYTE_RATE, self.producer_byte_rate),
            (CONSUMER_BYTE_RATE, self.consumer_byte_rate),
            (REQUEST_PERCENTAGE, self.request_percentage),
            (CONTROLLER_MUTATION_RATE, self.controller_mutation_rate),
            (CONNECTION_CREATION_RATE, self.connection_creation_rate),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

pub fn run(global: &Global, cmd: &QuotaCommand) -> anyhow::Result<()> {
    if let QuotaCommand::Describe(f) = cmd {
        if f.components().is_empty() {
            anyhow::bail!(
                "name an entity to describe: --user, --client-id or --ip (with a name, or bare \
                 for any), or their -default forms; `samsa quota list` shows every entity"
            );
        }
    }
    let mut client = global.connect()?;
    match cmd {
        QuotaCommand::List(a) => {
            let found = describe(&mut client, &a.filter.components(), a.strict)?;
            emit(global.format, &to_json(&found), || list_table(&found));
        }
        QuotaCommand::Describe(f) => {
            let found = describe(&mut client, &f.components(), true)?;
            emit(global.format, &to_json(&found), || {
                kafka_configs_text(&found)
            });
        }
        QuotaCommand::Set(a) => {
            let entity = a.entity.entity();
            let ops: Vec<(&str, Option<f64>)> = a
                .values
                .ops()
                .into_iter()
                .map(|(k, v)| (k, Some(v)))
                .collect();
            alter(&mut client, &entity, &ops, a.validate_only)?;
            let set: Map<String, Value> =
                ops.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
            let text = ops
                .iter()
                .map(|(k, v)| format!("{k}={}", number(v.unwrap_or_default())))
                .collect::<Vec<_>>()
                .join(", ");
            emit(
                global.format,
                &json!({"entity": entity_json(&entity), "set": set, "validate_only": a.validate_only}),
                || {
                    done(
                        a.validate_only,
                        &format!("set {text} for {}", entity_text(&entity)),
                    )
                },
            );
        }
        QuotaCommand::Delete(a) => {
            let entity = a.entity.entity();
            let ops: Vec<(&str, Option<f64>)> = a.keys.iter().map(|k| (k.as_str(), None)).collect();
            alter(&mut client, &entity, &ops, a.validate_only)?;
            emit(
                global.format,
                &json!({"entity": entity_json(&entity), "deleted": a.keys, "validate_only": a.validate_only}),
                || {
                    let what = format!("deleted {} of {}", a.keys.join(", "), entity_text(&entity));
                    done(a.validate_only, &what)
                },
            );
        }
    }
    Ok(())
}

/// The line reporting a change, or that it was only checked.
fn done(validate_only: bool, what: &str) -> String {
    if validate_only {
        format!("valid, not applied (--validate-only): {what}\n")
    } else {
        format!("{what}\n")
    }
}

/// A DescribeClientQuotas request for `components`.
pub fn describe_request(components: &[(&str, Match)], strict: bool) -> DescribeClientQuotasRequest {
    let mut req = DescribeClientQuotasRequest::default();
    req.strict = strict;
    req.components = components
        .iter()
        .map(|(t, m)| {
            let mut c = ComponentData::default();
            c.entity_type = StrBytes::from_string(t.to_string());
            (c.match_type, c._match) = match m {
                Match::Exact(n) => (MATCH_TYPE_EXACT, Some(StrBytes::from_string(n.clone()))),
                Match::Default => (MATCH_TYPE_DEFAULT, None),
                Match::Any => (MATCH_TYPE_SPECIFIED, None),
            };
            c
        })
        .collect();
    req
}

/// An AlterClientQuotas request changing one entity: each key set to its value, or removed.
pub fn alter_request(
    entity: &Entity,
    ops: &[(&str, Option<f64>)],
    validate_only: bool,
) -> AlterClientQuotasRequest {
    let mut e = EntryData::default();
    e.entity = entity
        .iter()
        .map(|(t, n)| {
            let mut d = EntityData::default();
            d.entity_type = StrBytes::from_string(t.clone());
            d.entity_name = n.clone().map(StrBytes::from_string);
            d
        })
        .collect();
    e.ops = ops
        .iter()
        .map(|(k, v)| {
            let mut o = OpData::default();
            o.key = StrBytes::from_string(k.to_string());
            o.value = v.unwrap_or_default();
            o.remove = v.is_none();
            o
        })
        .collect();
    let mut req = AlterClientQuotasRequest::default();
    req.entries = vec![e];
    req.validate_only = validate_only;
    req
}

/// The entities matching the filter, sorted, each with its quotas sorted by key.
fn describe(
    client: &mut Client,
    components: &[(&str, Match)],
    strict: bool,
) -> anyhow::Result<Vec<Described>> {
    let (_, resp) = client.call(Node::Any, |_| describe_request(components, strict))?;
    if resp.error_code != 0 {
        let what = "describing client quotas";
        return Err(refused(resp.error_code, what, resp.error_message.as_ref()));
    }
    let mut found: Vec<Described> = resp
        .entries
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            let mut entity: Entity = e
                .entity
                .iter()
                .map(|d| {
                    let name = d.entity_name.as_ref().map(|n| n.to_string());
                    (d.entity_type.to_string(), name)
                })
                .collect();
            entity.sort_by_key(|(t, _)| type_order(t));
            let mut quotas: Vec<(String, f64)> = e
                .values
                .iter()
                .map(|v| (v.key.to_string(), v.value))
                .collect();
            quotas.sort_by(|a, b| a.0.cmp(&b.0));
            Described { entity, quotas }
        })
        .collect();
    found.sort_by(|a, b| {
        let key = |d: &Described| {
            d.entity
                .iter()
                .map(|(t, n)| (type_order(t), n.clone()))
                .collect::<Vec<_>>()
        };
        key(a).cmp(&key(b))
    });
    Ok(found)
}

/// Sends one alteration and checks the broker's answer for the entity.
fn alter(
    client: &mut Client,
    entity: &Entity,
    ops: &[(&str, Option<f64>)],
    validate_only: bool,
) -> anyhow::Result<()> {
    let (_, resp) = client.call(Node::Any, |_| alter_request(entity, ops, validate_only))?;
    let what = format!("quotas of {}", entity_text(entity));
    let r = resp
        .entries
        .first()
        .ok_or_else(|| anyhow::anyhow!("AlterClientQuotas answered nothing for the {what}"))?;
    if r.error_code != 0 {
        return Err(refused(r.error_code, &what, r.error_message.as_ref()));
    }
    Ok(())
}

fn type_order(t: &str) -> usize {
    ENTITY_TYPES
        .iter()
        .position(|x| *x == t)
        .unwrap_or(ENTITY_TYPES.len())
}

/// `user 'alice', the default client-id`.
pub fn entity_text(entity: &Entity) -> String {
    entity_words(entity, ENTITY_USER)
}

/// The entity in words, with `user` for the word for the user type (Kafka's tools say
/// `user-principal`).
fn entity_words(entity: &Entity, user: &str) -> String {
    entity
        .iter()
        .map(|(t, n)| {
            let t = if t == ENTITY_USER { user } else { t };
            match n {
                Some(n) => format!("{t} '{n}'"),
                None => format!("the default {t}"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `user=alice,client-id=<default>`, as the table's entity column shows it.
fn entity_cell(entity: &Entity) -> String {
    entity
        .iter()
        .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("<default>")))
        .collect::<Vec<_>>()
        .join(",")
}

/// `{"user": "alice", "client-id": null}`: a default is null, as in Kafka's protocol.
fn entity_json(entity: &Entity) -> Value {
    Value::Object(entity.iter().map(|(t, n)| (t.clone(), json!(n))).collect())
}

fn to_json(found: &[Described]) -> Value {
    json!(found
        .iter()
        .map(|d| json!({
            "entity": entity_json(&d.entity),
            "quotas": d.quotas.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<Map<_, _>>(),
        }))
        .collect::<Vec<_>>())
}

fn list_table(found: &[Described]) -> String {
    let mut t = Table::new(&["ENTITY", "KEY", "VALUE"]);
    for d in found {
        for (k, v) in &d.quotas {
            t.row(vec![entity_cell(&d.entity), k.clone(), number(*v)]);
        }
    }
    t.render()
}

/// What `kafka-configs --describe` prints for quota entities (its `describeQuotaConfigs`):
/// `Quota configs for user-principal 'alice' are producer_byte_rate=1024.0`.
pub fn kafka_configs_text(found: &[Described]) -> String {
    let mut out = String::new();
    for d in found {
        let entity = entity_words(&d.entity, "user-principal");
        let entries = d
            .quotas
            .iter()
            .map(|(k, v)| format!("{k}={}", java_double(*v)))
            .collect::<Vec<_>>()
            .join(", ");
        out.push_str(&format!("Quota configs for {entity} are {entries}\n"));
    }
    out
}

/// A value for people: whole numbers without a fraction (`1048576`, `12.5`).
pub fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// A value as Java's `Double.toString` writes it, which is how Kafka's tools print quotas:
/// `1024.0`, `0.5`, and from 10^7 (or below 10^-3) `1.0E7`.
pub fn java_double(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let a = v.abs();
    if a == 0.0 || (1e-3..1e7).contains(&a) {
        // Debug is the shortest round-trip form with a fraction, as Java's is.
        return format!("{v:?}");
    }
    let e = format!("{v:e}");
    let (mantissa, exponent) = e.split_once('e').expect("{:e} has an exponent");
    if mantissa.contains('.') {
        format!("{mantissa}E{exponent}")
    } else {
        format!("{mantissa}.0E{exponent}")
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("samsa").chain(args.iter().copied()))
    }

    fn quota(args: &[&str]) -> QuotaCommand {
        let all: Vec<&str> = std::iter::once("quota")
            .chain(args.iter().copied())
            .collect();
        match parse(&all)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .command
        {
            Command::Quota(q) => q,
            other => panic!("{other:?}"),
        }
    }

    fn filter(args: &[&str]) -> (Vec<(&'static str, Match)>, bool) {
        match quota(args) {
            QuotaCommand::List(a) => (a.filter.components(), a.strict),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn list_options_map_to_kafkas_three_match_types() {
        assert_eq!(filter(&["list"]), (vec![], false));
        assert_eq!(
            filter(&["list", "--user", "alice", "--client-id-default", "--strict"]),
            (
                vec![
                    ("user", Match::Exact("alice".into())),
                    ("client-id", Match::Default)
                ],
                true
            )
        );
        // A bare option asks for any entity with that part, named or default.
        assert_eq!(
            filter(&["list", "--user", "--ip-default"]).0,
            vec![("user", Match::Any), ("ip", Match::Default)]
        );
        assert!(parse(&["quota", "list", "--user", "a", "--user-default"]).is_err());
        assert!(parse(&["quota", "list", "--ip", "--ip-default"]).is_err());

        let req = describe_request(&filter(&["list", "--user", "a", "--client-id"]).0, false);
        let parts: Vec<(String, i8, Option<String>)> = req
            .components
            .iter()
            .map(|c| {
                let m = c._match.as_ref().map(|m| m.to_string());
                (c.entity_type.to_string(), c.match_type, m)
            })
            .collect();
        assert_eq!(
            parts,
            vec![
                ("user".into(), MATCH_TYPE_EXACT, Some("a".into())),
                ("client-id".into(), MATCH_TYPE_SPECIFIED, None)
            ]
        );
        assert!(!req.strict);
    }

    #[test]
    fn set_needs_an_entity_and_a_value_and_takes_negative_numbers_to_the_broker() {
        let QuotaCommand::Set(a) = quota(&[
            "set",
            "--user",
            "alice",
            "--client-id-default",
            "--producer-byte-rate",
            "-5",
            "--request-percentage",
            "12.5",
            "--validate-only",
        ]) else {
            panic!()
        };
        assert_eq!(
            a.entity.entity(),
            vec![
                ("user".to_string(), Some("alice".to_string())),
                ("client-id".to_string(), None)
            ]
        );
        assert_eq!(
            a.values.ops(),
            vec![(PRODUCER_BYTE_RATE, -5.0), (REQUEST_PERCENTAGE, 12.5)]
        );
        assert!(a.validate_only);
        let req = alter_request(
            &a.entity.entity(),
            &[(PRODUCER_BYTE_RATE, Some(-5.0)), (CONSUMER_BYTE_RATE, None)],
            true,
        );
        let e = &req.entries[0];
        assert_eq!(e.entity[1].entity_name, None, "a default is a null name");
        assert_eq!(
            (e.ops[0].value, e.ops[0].remove, e.ops[1].remove),
            (-5.0, false, true)
        );
        assert!(req.validate_only);

        // No entity, no value, a name and its default together, a bare --user: refused.
        assert!(parse(&["quota", "set", "--producer-byte-rate", "1"]).is_err());
        assert!(parse(&["quota", "set", "--user", "a"]).is_err());
        assert!(parse(&["quota", "set", "--user", "--producer-byte-rate", "1"]).is_err());
        assert!(parse(&[
            "quota",
            "set",
            "--ip",
            "1.2.3.4",
            "--ip-default",
            "--connection-creation-rate",
            "1"
        ])
        .is_err());
        assert!(parse(&["quota", "set", "--user", "a", "--producer-byte-rate", "x"]).is_err());
    }

    #[test]
    fn delete_takes_known_keys_only() {
        let QuotaCommand::Delete(a) = quota(&[
            "delete",
            "--ip-default",
            "--key",
            "connection_creation_rate",
            "--key",
            "producer_byte_rate",
        ]) else {
            panic!()
        };
        assert_eq!(a.entity.entity(), vec![("ip".to_string(), None)]);
        assert_eq!(a.keys, ["connection_creation_rate", "producer_byte_rate"]);
        assert!(parse(&["quota", "delete", "--user", "a"]).is_err());
        assert!(parse(&["quota", "delete", "--user", "a", "--key", "producer_rate"]).is_err());
        assert!(super::super::is_command(&["quota".into()]));
    }

    #[test]
    fn describe_prints_what_kafka_configs_prints() {
        let found = vec![
            Described {
                entity: vec![("user".into(), Some("alice".into()))],
                quotas: vec![
                    ("consumer_byte_rate".into(), 20_000_000.0),
                    ("producer_byte_rate".into(), 1024.0),
                ],
            },
            Described {
                entity: vec![
                    ("user".into(), None),
                    ("client-id".into(), Some("app".into())),
                ],
                quotas: vec![("request_percentage".into(), 12.5)],
            },
        ];
        assert_eq!(
            kafka_configs_text(&found),
            "Quota configs for user-principal 'alice' are consumer_byte_rate=2.0E7, \
             producer_byte_rate=1024.0\n\
             Quota configs for the default user-principal, client-id 'app' are \
             request_percentage=12.5\n"
        );
        let table = list_table(&found);
        assert!(table.contains("user=alice"), "{table}");
        assert!(table.contains("user=<default>,client-id=app"), "{table}");
        assert!(table.contains("20000000"), "{table}");
        assert_eq!(
            to_json(&found)[1]["entity"],
            json!({"user": null, "client-id": "app"})
        );
    }

    #[test]
    fn values_print_as_java_does_for_kafka_configs_and_plainly_otherwise() {
        for (v, java) in [
            (1024.0, "1024.0"),
            (0.5, "0.5"),
            (9_999_999.0, "9999999.0"),
            (1e7, "1.0E7"),
            (12_345_678.0, "1.2345678E7"),
            (0.0001, "1.0E-4"),
            (0.0, "0.0"),
        ] {
            assert_eq!(java_double(v), java, "{v}");
        }
        assert_eq!(number(1_048_576.0), "1048576");
        assert_eq!(number(12.5), "12.5");
    }
}
