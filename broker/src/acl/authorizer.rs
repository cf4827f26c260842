//! The decision: may this principal, from this host, perform this operation on this resource?
//! The rules are Kafka's `StandardAuthorizer`'s:
//!
//! - a super user (`super.users`) may do everything;
//! - the ACLs that apply to a resource are its LITERAL ones, the LITERAL `*` ones of its type,
//!   and the PREFIXED ones whose name starts the resource's name;
//! - of those, an ACL matches when its principal is the caller's or `User:*`, its host the
//!   caller's or `*`, and its operation the one asked for or ALL. An ALLOW of READ, WRITE,
//!   DELETE or ALTER also allows DESCRIBE, and an ALLOW of ALTER_CONFIGS also allows
//!   DESCRIBE_CONFIGS; a DENY denies only what it names (a DENY of READ leaves DESCRIBE alone);
//! - one matching DENY denies, whatever ALLOWs match; otherwise one matching ALLOW allows;
//! - no match: allowed only when no ACL at all applies to the resource and
//!   `allow.everyone.if.no.acl.found` is true.
//!
//! The ACLs are the metadata image's: [`Authorizer::follow`] takes them from each image the
//! broker publishes. Lookups go through an index rebuilt when they change (changes are rare,
//! checks are on every request): literal names hash straight to their ACLs, and a PREFIXED
//! lookup probes the resource name's prefixes of the lengths that prefixed ACLs of its type
//! actually have.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use samsa_cluster::metadata::MetadataImage;

use super::{
    AclBinding, AclOperation, PatternType, PermissionType, ResourceType, WILDCARD,
    WILDCARD_PRINCIPAL,
};
use crate::config::BrokerConfig;

/// Resource types by code, for the index's arrays (codes 0-7).
const RESOURCE_TYPES: usize = 8;

/// The principal, host, operation and permission of one ACL (its resource is the index key).
#[derive(Debug)]
struct Entry {
    principal: String,
    host: String,
    operation: AclOperation,
    permission: PermissionType,
}

impl Entry {
    /// Kafka's `StandardAuthorizerData.findResult`: `None` when the ACL does not match.
    fn result(
        &self,
        principal: &str,
        host: &str,
        operation: AclOperation,
    ) -> Option<PermissionType> {
        if self.principal != principal && self.principal != WILDCARD_PRINCIPAL {
            return None;
        }
        if self.host != WILDCARD && self.host != host {
            return None;
        }
        if self.operation != AclOperation::All {
            let matches = if self.permission == PermissionType::Allow {
                match operation {
                    AclOperation::Describe => matches!(
                        self.operation,
                        AclOperation::Describe
                            | AclOperation::Read
                            | AclOperation::Write
                            | AclOperation::Delete
                            | AclOperation::Alter
                    ),
                    AclOperation::DescribeConfigs => matches!(
                        self.operation,
                        AclOperation::DescribeConfigs | AclOperation::AlterConfigs
                    ),
                    _ => operation == self.operation,
                }
            } else {
                operation == self.operation
            };
            if !matches {
                return None;
            }
        }
        Some(self.permission)
    }
}

/// The ACLs arranged for lookups by resource.
#[derive(Debug, Default)]
pub struct AclIndex {
    /// Per resource type code: LITERAL ACLs by resource name (`*` included).
    literal: [HashMap<String, Vec<Entry>>; RESOURCE_TYPES],
    /// Per resource type code: PREFIXED ACLs by prefix.
    prefixed: [HashMap<String, Vec<Entry>>; RESOURCE_TYPES],
    /// Per resource type code: the distinct byte lengths of the prefixes, ascending.
    prefix_lengths: [Vec<usize>; RESOURCE_TYPES],
}

impl AclIndex {
    pub fn build<'a>(bindings: impl IntoIterator<Item = &'a AclBinding>) -> AclIndex {
        let mut index = AclIndex::default();
        for b in bindings {
            let t = b.resource_type.code() as usize;
            let by_name = match b.pattern_type {
                PatternType::Literal => &mut index.literal[t],
                PatternType::Prefixed => &mut index.prefixed[t],
                // The controller commits nothing else (validated on creation).
                _ => continue,
            };
            by_name
                .entry(b.resource_name.clone())
                .or_default()
                .push(Entry {
                    principal: b.principal.clone(),
                    host: b.host.clone(),
                    operation: b.operation,
                    permission: b.permission_type,
                });
        }
        for t in 0..RESOURCE_TYPES {
            let mut lengths: Vec<usize> = index.prefixed[t].keys().map(String::len).collect();
            lengths.sort_unstable();
            lengths.dedup();
            index.prefix_lengths[t] = lengths;
        }
        index
    }

    /// The decision from the ACLs alone (super users are the caller's business).
    fn allows(
        &self,
        principal: &str,
        host: &str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
        allow_if_no_acl: bool,
    ) -> bool {
        let t = resource_type.code() as usize;
        if t >= RESOURCE_TYPES {
            return false;
        }
        let literal = self.literal[t].get(name);
        let wildcard = if name == WILDCARD {
            None
        } else {
            self.literal[t].get(WILDCARD)
        };
        let prefixes = self.prefix_lengths[t]
            .iter()
            .take_while(|&&len| len <= name.len())
            .filter(|&&len| name.is_char_boundary(len))
            .filter_map(|&len| self.prefixed[t].get(&name[..len]));
        let mut applies = false;
        let mut allowed = false;
        for entries in literal.into_iter().chain(wildcard).chain(prefixes) {
            for e in entries {
                applies = true;
                match e.result(principal, host, operation) {
                    Some(PermissionType::Deny) => return false,
                    Some(PermissionType::Allow) => allowed = true,
                    _ => {}
                }
            }
        }
        allowed || (!applies && allow_if_no_acl)
    }
}

/// One consistent view of the ACLs: every binding, ordered by resource type, name and pattern
/// type, and the lookup index.
#[derive(Debug, Default)]
pub struct AclSet {
    pub bindings: BTreeSet<AclBinding>,
    index: AclIndex,
}

impl AclSet {
    pub fn new(bindings: BTreeSet<AclBinding>) -> AclSet {
        let index = AclIndex::build(&bindings);
        AclSet { bindings, index }
    }

    /// The ACLs of a metadata image. O(ACLs).
    pub fn from_image(image: &MetadataImage) -> AclSet {
        AclSet::new(image.acls().map(|(_, a)| AclBinding::from(&**a)).collect())
    }
}

/// The authorizer: its configuration and the ACLs it decides with.
pub struct Authorizer {
    super_users: HashSet<String>,
    allow_if_no_acl: bool,
    acls: RwLock<Arc<AclSet>>,
    /// The image the ACLs were last taken from, to tell whether a newer one changed them.
    followed: Mutex<Option<Arc<MetadataImage>>>,
}

impl Authorizer {
    /// The authorizer `authorizer.class.name` asks for, without ACLs until it follows an image;
    /// `None` when the key is empty (no authorization, as in Kafka).
    pub fn from_config(config: &BrokerConfig) -> Option<Authorizer> {
        let class = config.get("authorizer.class.name").unwrap_or_default();
        let class = class.trim();
        if class.is_empty() {
            return None;
        }
        let super_users = parse_super_users(&config.get("super.users").unwrap_or_default());
        let allow_if_no_acl = config.bool("allow.everyone.if.no.acl.found");
        tracing::info!(
            authorizer = class,
            super_users = ?super_users.iter().collect::<BTreeSet<_>>(),
            allow_everyone_if_no_acl_found = allow_if_no_acl,
            "authorizer enabled (Samsa's built-in, with Kafka's StandardAuthorizer rules; the ACLs of the metadata log)"
        );
        Some(Authorizer::new(super_users, allow_if_no_acl))
    }

    pub fn new(super_users: HashSet<String>, allow_if_no_acl: bool) -> Authorizer {
        Authorizer {
            super_users,
            allow_if_no_acl,
            acls: RwLock::new(Arc::default()),
            followed: Mutex::new(None),
        }
    }

    /// The ACLs decisions are made with now.
    pub fn acls(&self) -> Arc<AclSet> {
        self.acls.read().clone()
    }

    /// Decides with `acls` from now on.
    pub fn set_acls(&self, acls: AclSet) {
        *self.acls.write() = Arc::new(acls);
    }

    /// Takes the ACLs of `image` (Kafka's `AclPublisher`), rebuilding the index only when they
    /// changed since the image followed last.
    pub fn follow(&self, image: &Arc<MetadataImage>) {
        let mut followed = self.followed.lock();
        if !followed.as_ref().is_some_and(|f| f.same_acls(image)) {
            let acls = AclSet::from_image(image);
            tracing::debug!(
                acls = acls.bindings.len(),
                "ACLs of the metadata image in force"
            );
            self.set_acls(acls);
        }
        *followed = Some(image.clone());
    }

    pub fn authorize(
        &self,
        principal: &str,
        host: &str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        if self.super_users.contains(principal) {
            return true;
        }
        self.acls().index.allows(
            principal,
            host,
            operation,
            resource_type,
            name,
            self.allow_if_no_acl,
        )
    }

    /// Whether the principal may perform `operation` on at least one resource of the type: the
    /// default `Authorizer.authorizeByResourceType` of Kafka (KIP-679). Allowed when a resource
    /// no ACL names would be allowed (super users, `allow.everyone.if.no.acl.found`), or when an
    /// ALLOW of the operation (or ALL) for the principal on some literal or prefix is not
    /// overridden by a DENY of the same literal, a DENY of one of its prefixes, or a DENY of
    /// `*`. Implied operations do not count here.
    pub fn authorize_by_resource_type(
        &self,
        principal: &str,
        host: &str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        // Kafka checks a made-up resource name first, so that super users and the
        // no-ACL default get in regardless of DENY ACLs on real names.
        if self.authorize(principal, host, operation, resource_type, "hardcode") {
            return true;
        }
        let acls = self.acls();
        let mut deny_literals: HashSet<&str> = HashSet::new();
        let mut deny_prefixes: HashSet<&str> = HashSet::new();
        let mut allows: Vec<(&str, PatternType)> = Vec::new();
        for b in acls.bindings.iter().filter(|b| {
            b.resource_type == resource_type
                && (b.host == WILDCARD || b.host == host)
                && (b.principal == principal || b.principal == WILDCARD_PRINCIPAL)
                && (b.operation == operation || b.operation == AclOperation::All)
        }) {
            match (b.permission_type, b.pattern_type) {
                (PermissionType::Deny, PatternType::Literal) if b.resource_name == WILDCARD => {
                    return false;
                }
                (PermissionType::Deny, PatternType::Literal) => {
                    deny_literals.insert(&b.resource_name);
                }
                (PermissionType::Deny, PatternType::Prefixed) => {
                    deny_prefixes.insert(&b.resource_name);
                }
                (PermissionType::Allow, PatternType::Literal) if b.resource_name == WILDCARD => {
                    return true;
                }
                (PermissionType::Allow, pattern) => allows.push((&b.resource_name, pattern)),
                _ => {}
            }
        }
        allows.iter().any(|(name, pattern)| {
            let denied_literal = *pattern == PatternType::Literal && deny_literals.contains(name);
            let denied_prefix = name
                .char_indices()
                .map(|(i, c)| &name[..i + c.len_utf8()])
                .any(|prefix| deny_prefixes.contains(prefix));
            !denied_literal && !denied_prefix
        })
    }
}

/// `super.users`: principals separated by semicolons, as Kafka reads it.
fn parse_super_users(value: &str) -> HashSet<String> {
    value
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use AclOperation::*;
    use PatternType::{Literal, Prefixed};
    use PermissionType::{Allow, Deny};
    use ResourceType::{Cluster, Group, Topic};

    fn acl(
        resource_type: ResourceType,
        name: &str,
        pattern_type: PatternType,
        principal: &str,
        host: &str,
        operation: AclOperation,
        permission_type: PermissionType,
    ) -> AclBinding {
        AclBinding {
            resource_type,
            resource_name: name.into(),
            pattern_type,
            principal: principal.into(),
            host: host.into(),
            operation,
            permission_type,
        }
    }

    const ALICE: &str = "User:alice";
    const BOB: &str = "User:bob";
    const HOST: &str = "10.0.0.1";

    struct Fixture {
        authorizer: Authorizer,
    }

    fn authorizer(super_users: &str, allow_if_no_acl: bool, acls: Vec<AclBinding>) -> Fixture {
        let authorizer = Authorizer::new(parse_super_users(super_users), allow_if_no_acl);
        authorizer.set_acls(AclSet::new(acls.into_iter().collect()));
        Fixture { authorizer }
    }

    impl Fixture {
        fn may(&self, principal: &str, op: AclOperation, rt: ResourceType, name: &str) -> bool {
            self.authorizer.authorize(principal, HOST, op, rt, name)
        }
    }

    #[test]
    fn the_acls_follow_the_metadata_image() {
        use samsa_cluster::metadata::records::RemoveAccessControlEntryRecord;
        let a = Authorizer::new(HashSet::new(), false);
        let id = uuid::Uuid::from_u64_pair(1, 2);
        let allow = acl(Topic, "t", Literal, ALICE, "*", Read, Allow).to_record(id);
        let image = Arc::new(MetadataImage::new().with_records(&[allow.into()]).unwrap());
        assert!(!a.authorize(ALICE, HOST, Read, Topic, "t"));
        a.follow(&image);
        assert!(a.authorize(ALICE, HOST, Read, Topic, "t"));
        let removed = RemoveAccessControlEntryRecord {
            id,
            ..Default::default()
        };
        let image = Arc::new(image.with_records(&[removed.into()]).unwrap());
        a.follow(&image);
        assert!(!a.authorize(ALICE, HOST, Read, Topic, "t"));
        assert!(a.acls().bindings.is_empty());
    }

    #[test]
    fn super_users_may_do_everything_even_against_a_deny() {
        let f = authorizer(
            " User:admin ; User:ops",
            false,
            vec![acl(Topic, "*", Literal, "User:*", "*", All, Deny)],
        );
        assert!(f.may("User:admin", Write, Topic, "orders"));
        assert!(f.may("User:ops", Alter, Cluster, "kafka-cluster"));
        assert!(!f.may(ALICE, Write, Topic, "orders"));
    }

    #[test]
    fn without_a_matching_acl_the_default_decides_only_where_no_acl_applies() {
        let f = authorizer("", false, vec![]);
        assert!(!f.may(ALICE, Read, Topic, "orders"));
        let f = authorizer(
            "",
            true,
            vec![acl(Topic, "orders", Literal, BOB, "*", Read, Allow)],
        );
        assert!(f.may(ALICE, Read, Topic, "payments"), "no ACL applies");
        assert!(
            !f.may(ALICE, Read, Topic, "orders"),
            "an ACL applies to orders (for bob), so alice is denied"
        );
        assert!(f.may(BOB, Read, Topic, "orders"));
    }

    #[test]
    fn deny_beats_allow_wherever_they_come_from() {
        let f = authorizer(
            "",
            false,
            vec![
                acl(Topic, "orders", Literal, ALICE, "*", Write, Allow),
                acl(Topic, "ord", Prefixed, ALICE, "*", Write, Deny),
            ],
        );
        assert!(!f.may(ALICE, Write, Topic, "orders"));
        let f = authorizer(
            "",
            false,
            vec![
                acl(Topic, "*", Literal, "User:*", "*", All, Allow),
                acl(Topic, "orders", Literal, ALICE, HOST, Read, Deny),
            ],
        );
        assert!(!f.may(ALICE, Read, Topic, "orders"));
        assert!(f.may(ALICE, Write, Topic, "orders"));
        assert!(f.may(BOB, Read, Topic, "orders"));
    }

    #[test]
    fn allows_of_read_write_delete_alter_imply_describe_and_alter_configs_implies_describe_configs()
    {
        for op in [Read, Write, Delete, Alter] {
            let f = authorizer(
                "",
                false,
                vec![acl(Topic, "t", Literal, ALICE, "*", op, Allow)],
            );
            assert!(
                f.may(ALICE, Describe, Topic, "t"),
                "{op:?} implies DESCRIBE"
            );
            assert!(!f.may(ALICE, DescribeConfigs, Topic, "t"));
        }
        for op in [Create, DescribeConfigs, AlterConfigs] {
            let f = authorizer(
                "",
                false,
                vec![acl(Topic, "t", Literal, ALICE, "*", op, Allow)],
            );
            assert!(
                !f.may(ALICE, Describe, Topic, "t"),
                "{op:?} does not imply DESCRIBE"
            );
        }
        let f = authorizer(
            "",
            false,
            vec![acl(Topic, "t", Literal, ALICE, "*", AlterConfigs, Allow)],
        );
        assert!(f.may(ALICE, DescribeConfigs, Topic, "t"));
        assert!(!f.may(ALICE, Alter, Topic, "t"));
    }

    #[test]
    fn a_deny_denies_only_the_operation_it_names() {
        let f = authorizer(
            "",
            false,
            vec![
                acl(Topic, "t", Literal, ALICE, "*", All, Allow),
                acl(Topic, "t", Literal, ALICE, "*", Read, Deny),
            ],
        );
        assert!(!f.may(ALICE, Read, Topic, "t"));
        assert!(
            f.may(ALICE, Describe, Topic, "t"),
            "DENY READ leaves DESCRIBE"
        );
        assert!(f.may(ALICE, Write, Topic, "t"));
    }

    #[test]
    fn all_matches_every_operation() {
        let f = authorizer(
            "",
            false,
            vec![acl(Group, "g", Literal, ALICE, "*", All, Allow)],
        );
        for op in [Read, Describe, Delete, DescribeConfigs, AlterConfigs] {
            assert!(f.may(ALICE, op, Group, "g"));
        }
        assert!(!f.may(ALICE, Read, Topic, "g"), "another resource type");
    }

    #[test]
    fn principals_and_hosts_match_exactly_or_by_wildcard() {
        let f = authorizer(
            "",
            false,
            vec![
                acl(Topic, "a", Literal, "User:*", "*", Read, Allow),
                acl(Topic, "b", Literal, ALICE, "10.0.0.2", Read, Allow),
                acl(Topic, "c", Literal, "Group:alice", "*", Read, Allow),
            ],
        );
        assert!(f.may(BOB, Read, Topic, "a"));
        assert!(!f.may(ALICE, Read, Topic, "b"), "other host");
        assert!(f.authorizer.authorize(ALICE, "10.0.0.2", Read, Topic, "b"));
        assert!(!f.may(ALICE, Read, Topic, "c"), "principal types differ");
    }

    #[test]
    fn literal_wildcard_and_prefixed_patterns_apply_to_their_names_only() {
        let f = authorizer(
            "",
            false,
            vec![
                acl(Topic, "orders", Literal, ALICE, "*", Read, Allow),
                acl(Topic, "pay", Prefixed, ALICE, "*", Read, Allow),
                acl(Topic, "*", Literal, BOB, "*", Read, Allow),
                acl(Topic, "é", Prefixed, ALICE, "*", Read, Allow),
            ],
        );
        assert!(f.may(ALICE, Read, Topic, "orders"));
        assert!(!f.may(ALICE, Read, Topic, "orders-2"), "a literal is exact");
        assert!(!f.may(ALICE, Read, Topic, "order"));
        assert!(f.may(ALICE, Read, Topic, "pay"));
        assert!(f.may(ALICE, Read, Topic, "payments"));
        assert!(!f.may(ALICE, Read, Topic, "pa"));
        assert!(f.may(BOB, Read, Topic, "anything"));
        assert!(f.may(ALICE, Read, Topic, "éclair"));
        assert!(!f.may(ALICE, Read, Topic, "e"));
    }

    #[test]
    fn idempotent_producers_need_write_on_some_topic_not_overridden_by_a_deny() {
        let by_type = |acls: Vec<AclBinding>| {
            authorizer("", false, acls)
                .authorizer
                .authorize_by_resource_type(ALICE, HOST, Write, Topic)
        };
        assert!(!by_type(vec![]));
        assert!(by_type(vec![acl(
            Topic, "t", Literal, ALICE, "*", Write, Allow
        )]));
        assert!(by_type(vec![acl(
            Topic, "t", Prefixed, ALICE, "*", All, Allow
        )]));
        assert!(!by_type(vec![acl(
            Topic, "t", Literal, ALICE, "*", Read, Allow
        )]));
        assert!(!by_type(vec![
            acl(Topic, "t", Literal, ALICE, "*", Write, Allow),
            acl(Topic, "t", Literal, ALICE, "*", Write, Deny),
        ]));
        assert!(!by_type(vec![
            acl(Topic, "tx", Literal, ALICE, "*", Write, Allow),
            acl(Topic, "t", Prefixed, ALICE, "*", Write, Deny),
        ]));
        assert!(!by_type(vec![
            acl(Topic, "tx", Literal, ALICE, "*", Write, Allow),
            acl(Topic, "*", Literal, "User:*", "*", Write, Deny),
        ]));
        assert!(by_type(vec![
            acl(Topic, "tx", Literal, ALICE, "*", Write, Allow),
            acl(Topic, "ty", Literal, ALICE, "*", Write, Deny),
        ]));
        assert!(by_type(vec![acl(
            Topic, "*", Literal, "User:*", "*", Write, Allow
        )]));
        let f = authorizer("User:alice", false, vec![]);
        assert!(f
            .authorizer
            .authorize_by_resource_type(ALICE, HOST, Write, Topic));
        let f = authorizer("", true, vec![]);
        assert!(f
            .authorizer
            .authorize_by_resource_type(ALICE, HOST, Write, Topic));
    }
}
