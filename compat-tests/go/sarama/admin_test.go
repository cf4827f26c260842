package sarama_compat

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/IBM/sarama"
)

func str(s string) *string { return &s }

func configValue(t *testing.T, adm sarama.ClusterAdmin, topic, name string) (sarama.ConfigEntry, bool) {
	t.Helper()
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{name}})
	if err != nil {
		t.Fatalf("DescribeConfig %s: %v", name, err)
	}
	for _, e := range entries {
		if e.Name == name {
			return e, true
		}
	}
	return sarama.ConfigEntry{}, false
}

// A topic's life through the admin client: created with configs, listed and described, given
// more partitions, its configs altered (whole and incrementally), deleted.
func TestAdminTopicLifecycle(t *testing.T) {
	adm := newAdmin(t)
	topic := uniqueName(t, "sarama-admin")
	err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: rf(),
		ConfigEntries: map[string]*string{"retention.ms": str("3600000"), "cleanup.policy": str("compact")}}, false)
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	t.Cleanup(func() { _ = adm.DeleteTopic(topic) })
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: rf()}, false); !isErr(err, sarama.ErrTopicAlreadyExists) {
		t.Fatalf("CreateTopic again: want TOPIC_ALREADY_EXISTS, got %v", err)
	}
	var listed sarama.TopicDetail
	waitFor(t, "the topic listed", func() error {
		topics, err := adm.ListTopics()
		if err != nil {
			return err
		}
		d, ok := topics[topic]
		if !ok {
			return fmt.Errorf("not listed")
		}
		listed = d
		return nil
	})
	if listed.NumPartitions != 2 || listed.ReplicationFactor != rf() || listed.ConfigEntries["retention.ms"] == nil ||
		*listed.ConfigEntries["retention.ms"] != "3600000" {
		t.Fatalf("ListTopics: %d partitions, RF %d, configs %v", listed.NumPartitions, listed.ReplicationFactor, listed.ConfigEntries)
	}
	md, err := adm.DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != 2 {
		t.Fatalf("DescribeTopics: %v %+v", err, md)
	}
	for _, p := range md[0].Partitions {
		if len(p.Replicas) != int(rf()) || p.Leader < 0 {
			t.Fatalf("partition %d: leader %d replicas %v", p.ID, p.Leader, p.Replicas)
		}
	}

	if err := adm.CreatePartitions(topic, 4, nil, false); err != nil {
		t.Fatalf("CreatePartitions to 4: %v", err)
	}
	if err := adm.CreatePartitions(topic, 3, nil, false); !isErr(err, sarama.ErrInvalidPartitions) {
		t.Fatalf("CreatePartitions down to 3: want INVALID_PARTITIONS, got %v", err)
	}
	waitFor(t, "4 partitions described", func() error {
		md, err := adm.DescribeTopics([]string{topic})
		if err != nil {
			return err
		}
		if len(md) != 1 || len(md[0].Partitions) != 4 {
			return fmt.Errorf("%+v", md)
		}
		return nil
	})

	if e, ok := configValue(t, adm, topic, "retention.ms"); !ok || e.Value != "3600000" || e.Default || e.Source != sarama.SourceTopic {
		t.Fatalf("retention.ms described as %+v", e)
	}
	if e, ok := configValue(t, adm, topic, "segment.bytes"); !ok || !e.Default || e.Source != sarama.SourceDefault {
		t.Fatalf("segment.bytes (never set) described as %+v", e)
	}
	// AlterConfigs replaces the topic's whole set: cleanup.policy goes back to its default.
	if err := adm.AlterConfig(sarama.TopicResource, topic, map[string]*string{"retention.ms": str("7200000")}, false); err != nil {
		t.Fatalf("AlterConfig: %v", err)
	}
	if e, _ := configValue(t, adm, topic, "retention.ms"); e.Value != "7200000" {
		t.Fatalf("retention.ms after AlterConfig: %+v", e)
	}
	if e, _ := configValue(t, adm, topic, "cleanup.policy"); e.Value != "delete" || !e.Default {
		t.Fatalf("cleanup.policy after AlterConfig without it: %+v", e)
	}
	err = adm.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"max.message.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: str("2000000")},
		"retention.ms":      {Operation: sarama.IncrementalAlterConfigsOperationDelete},
	}, false)
	if err != nil {
		t.Fatalf("IncrementalAlterConfig: %v", err)
	}
	if e, _ := configValue(t, adm, topic, "max.message.bytes"); e.Value != "2000000" || e.Source != sarama.SourceTopic {
		t.Fatalf("max.message.bytes after IncrementalAlterConfig: %+v", e)
	}
	if e, _ := configValue(t, adm, topic, "retention.ms"); !e.Default || e.Value != "604800000" {
		t.Fatalf("retention.ms after its deletion: %+v", e)
	}
	err = adm.AlterConfig(sarama.TopicResource, topic, map[string]*string{"retention.ms": str("not-a-number")}, false)
	if !isErr(err, sarama.ErrInvalidConfig) {
		t.Fatalf("AlterConfig retention.ms=not-a-number: want INVALID_CONFIG, got %v", err)
	}

	if err := adm.DeleteTopic(topic); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	waitFor(t, "the topic gone", func() error {
		topics, err := adm.ListTopics()
		if err != nil {
			return err
		}
		if _, ok := topics[topic]; ok {
			return fmt.Errorf("still listed")
		}
		return nil
	})
	if err := adm.DeleteTopic(topic); !isErr(err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("DeleteTopic again: want UNKNOWN_TOPIC_OR_PARTITION, got %v", err)
	}
}

// CreateTopic's refusals, as Kafka words them to Sarama; validateOnly creates nothing.
func TestAdminCreateTopicErrors(t *testing.T) {
	adm := newAdmin(t)
	name := uniqueName(t, "sarama-bad")
	for _, c := range []struct {
		what   string
		topic  string
		detail sarama.TopicDetail
		want   sarama.KError
	}{
		{"replication factor above the brokers", name, sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: int16(nodes() + 1)}, sarama.ErrInvalidReplicationFactor},
		{"zero partitions", name, sarama.TopicDetail{NumPartitions: 0, ReplicationFactor: rf()}, sarama.ErrInvalidPartitions},
		{"an invalid name", "bad/name", sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: rf()}, sarama.ErrInvalidTopic},
		{"an unknown config", name, sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: rf(), ConfigEntries: map[string]*string{"no.such.config": str("1")}}, sarama.ErrInvalidConfig},
	} {
		d := c.detail
		if err := adm.CreateTopic(c.topic, &d, false); !isErr(err, c.want) {
			t.Errorf("CreateTopic with %s: want %v, got %v", c.what, c.want, err)
		}
	}
	if err := adm.CreateTopic(name, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: rf()}, true); err != nil {
		t.Fatalf("CreateTopic validateOnly: %v", err)
	}
	topics, err := adm.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := topics[name]; ok {
		_ = adm.DeleteTopic(name)
		t.Fatalf("validateOnly created the topic")
	}
}

// The cluster as the admin client describes it: every broker, a controller among them,
// broker configs, log directories holding a topic's partitions; a preferred leader election
// of a partition already led by its preferred replica is ELECTION_NOT_NEEDED.
func TestAdminCluster(t *testing.T) {
	adm := newAdmin(t)
	topic := createTopic(t, 2, nil)
	produceValues(t, topic, 0, "x")
	bs, controller, err := adm.DescribeCluster()
	if err != nil || len(bs) != nodes() {
		t.Fatalf("DescribeCluster: %d brokers, %v", len(bs), err)
	}
	ids := []int32{}
	isBroker := false
	for _, b := range bs {
		ids = append(ids, b.ID())
		isBroker = isBroker || b.ID() == controller
	}
	if !isBroker {
		t.Fatalf("DescribeCluster's controller %d is none of the brokers %v", controller, ids)
	}
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource, Name: strconv.Itoa(int(ids[0]))})
	if err != nil {
		t.Fatalf("DescribeConfig of broker %d: %v", ids[0], err)
	}
	found := map[string]string{}
	for _, e := range entries {
		found[e.Name] = e.Value
	}
	if found["log.retention.hours"] != "168" || found["auto.create.topics.enable"] != "true" {
		t.Fatalf("broker configs: log.retention.hours=%q auto.create.topics.enable=%q (of %d)", found["log.retention.hours"],
			found["auto.create.topics.enable"], len(entries))
	}
	dirs, err := adm.DescribeLogDirs(ids)
	if err != nil || len(dirs) != nodes() {
		t.Fatalf("DescribeLogDirs: %v, %d brokers answered", err, len(dirs))
	}
	replicas := 0
	for _, ds := range dirs {
		for _, d := range ds {
			if d.ErrorCode != sarama.ErrNoError || d.Path == "" {
				t.Fatalf("log dir %+v", d)
			}
			for _, tp := range d.Topics {
				if tp.Topic == topic {
					replicas += len(tp.Partitions)
				}
			}
		}
	}
	if replicas != 2*int(rf()) {
		t.Fatalf("log dirs hold %d replicas of the topic, want %d", replicas, 2*int(rf()))
	}
	res, err := adm.ElectLeaders(sarama.PreferredElection, map[string][]int32{topic: {0}})
	if err != nil || res[topic][0] == nil || res[topic][0].ErrorCode != sarama.ErrElectionNotNeeded {
		t.Fatalf("ElectLeaders preferred: %v %+v", err, res[topic][0])
	}
}

// DeleteRecords moves a partition's start: the oldest offset and a consumer from the oldest
// begin there.
func TestAdminDeleteRecords(t *testing.T) {
	topic := createTopic(t, 1, nil)
	produceValues(t, topic, 0, seq("d", 0, 10)...)
	adm := newAdmin(t)
	if err := adm.DeleteRecords(topic, map[int32]int64{0: 6}); err != nil {
		t.Fatalf("DeleteRecords to 6: %v", err)
	}
	cl := newClient(t, nil)
	if off, err := cl.GetOffset(topic, 0, sarama.OffsetOldest); err != nil || off != 6 {
		t.Fatalf("oldest offset after DeleteRecords: %d %v", off, err)
	}
	got := consume(t, nil, topic, 0, sarama.OffsetOldest, 4)
	if got[0].Offset != 6 || !equalStrings(values(got), seq("d", 6, 4)) {
		t.Fatalf("read from the oldest: %v from %d", values(got), got[0].Offset)
	}
	if err := adm.DeleteRecords(topic, map[int32]int64{0: 20}); err == nil {
		t.Fatalf("DeleteRecords past the end succeeded")
	}
}

// ACLs through the admin client (the brokers run StandardAuthorizer, allowing where no ACL
// applies): created, listed by a filter, deleted.
func TestAdminACLs(t *testing.T) {
	if !authorizer() {
		t.Skip("the brokers run no authorizer (SARAMA_AUTHORIZER)")
	}
	adm := newAdmin(t)
	topic := uniqueName(t, "acl")
	res := sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: topic, ResourcePatternType: sarama.AclPatternLiteral}
	acl := sarama.Acl{Principal: "User:alice", Host: "*", Operation: sarama.AclOperationRead, PermissionType: sarama.AclPermissionAllow}
	if err := adm.CreateACL(res, acl); err != nil {
		t.Fatalf("CreateACL: %v", err)
	}
	filter := sarama.AclFilter{ResourceType: sarama.AclResourceTopic, ResourceName: &topic, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny}
	waitFor(t, "the ACL listed", func() error {
		got, err := adm.ListAcls(filter)
		if err != nil {
			return err
		}
		if len(got) != 1 || len(got[0].Acls) != 1 || got[0].Acls[0].Principal != "User:alice" || got[0].Acls[0].Operation != sarama.AclOperationRead {
			return fmt.Errorf("listed %+v", got)
		}
		return nil
	})
	matched, err := adm.DeleteACL(filter, false)
	if err != nil || len(matched) != 1 || matched[0].Principal != "User:alice" {
		t.Fatalf("DeleteACL: %v %+v", err, matched)
	}
	waitFor(t, "the ACL gone", func() error {
		got, err := adm.ListAcls(filter)
		if err != nil {
			return err
		}
		if len(got) != 0 {
			return fmt.Errorf("still listed: %+v", got)
		}
		return nil
	})
}

// SCRAM credentials through the admin client (KIP-554): upserted, described with their
// mechanism and iterations, deleted; too few iterations are UNACCEPTABLE_CREDENTIAL and a user
// without credentials RESOURCE_NOT_FOUND. (Sarama sends the salt it is given; without one
// its request has a null salt, which Kafka and Samsa alike refuse to decode: they close the
// connection.)
func TestAdminScramCredentials(t *testing.T) {
	adm := newAdmin(t)
	user := uniqueName(t, "user")
	// One user once per request: Kafka refuses a user named twice (DUPLICATE_RESOURCE).
	for _, u := range []sarama.AlterUserScramCredentialsUpsert{
		{Name: user, Mechanism: sarama.SCRAM_MECHANISM_SHA_256, Iterations: 8192, Salt: []byte("a-salt-of-sarama"), Password: []byte("secret")},
		{Name: user, Mechanism: sarama.SCRAM_MECHANISM_SHA_512, Iterations: 4096, Salt: []byte("a-salt-of-sarama"), Password: []byte("secret")},
	} {
		res, err := adm.UpsertUserScramCredentials([]sarama.AlterUserScramCredentialsUpsert{u})
		if err != nil || len(res) != 1 || res[0].ErrorCode != sarama.ErrNoError {
			t.Fatalf("UpsertUserScramCredentials %v: %v %s", u.Mechanism, err, scramResults(res))
		}
	}
	t.Cleanup(func() {
		_, _ = adm.DeleteUserScramCredentials([]sarama.AlterUserScramCredentialsDelete{{Name: user, Mechanism: sarama.SCRAM_MECHANISM_SHA_512}})
	})
	var described []*sarama.DescribeUserScramCredentialsResult
	waitFor(t, "the credentials described", func() error {
		var err error
		described, err = adm.DescribeUserScramCredentials([]string{user})
		if err != nil {
			return err
		}
		if len(described) != 1 || described[0].ErrorCode != sarama.ErrNoError || len(described[0].CredentialInfos) != 2 {
			return fmt.Errorf("%+v", described)
		}
		return nil
	})
	iterations := map[sarama.ScramMechanismType]int32{}
	for _, c := range described[0].CredentialInfos {
		iterations[c.Mechanism] = c.Iterations
	}
	if iterations[sarama.SCRAM_MECHANISM_SHA_256] != 8192 || iterations[sarama.SCRAM_MECHANISM_SHA_512] != 4096 {
		t.Fatalf("described iterations: %v", iterations)
	}
	res, err := adm.UpsertUserScramCredentials([]sarama.AlterUserScramCredentialsUpsert{
		{Name: user + "-weak", Mechanism: sarama.SCRAM_MECHANISM_SHA_256, Iterations: 1000, Salt: []byte("a-salt-of-sarama"), Password: []byte("secret")}})
	if err != nil || len(res) != 1 || res[0].ErrorCode != sarama.KError(93) {
		t.Fatalf("1000 iterations: want UNACCEPTABLE_CREDENTIAL (93), got %v %s", err, scramResults(res))
	}
	res, err = adm.DeleteUserScramCredentials([]sarama.AlterUserScramCredentialsDelete{{Name: user, Mechanism: sarama.SCRAM_MECHANISM_SHA_256}})
	if err != nil || len(res) != 1 || res[0].ErrorCode != sarama.ErrNoError {
		t.Fatalf("DeleteUserScramCredentials: %v %s", err, scramResults(res))
	}
	nobody := user + "-nobody"
	described, err = adm.DescribeUserScramCredentials([]string{nobody})
	if err != nil || len(described) != 1 || described[0].ErrorCode != sarama.KError(91) {
		t.Fatalf("a user without credentials: want RESOURCE_NOT_FOUND (91), got %v %+v", err, described)
	}
}

func scramResults(res []*sarama.AlterUserScramCredentialsResult) string {
	var out []string
	for _, r := range res {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		out = append(out, fmt.Sprintf("%s: %v %q", r.User, r.ErrorCode, msg))
	}
	return strings.Join(out, "; ")
}
