package valkey

import (
	"reflect"
	"testing"
)

func TestParseInfo(t *testing.T) {
	const valkey8Replica = "# Server\r\nredis_version:7.2.4\r\nvalkey_version:8.1.1\r\nrun_id:abc\r\nuptime_in_seconds:42\r\n" +
		"# Persistence\r\nloading:0\r\nrdb_last_save_time:1700000000\r\nrdb_bgsave_in_progress:0\r\nrdb_last_bgsave_status:ok\r\naof_enabled:1\r\n" +
		"# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6379\r\nmaster_link_status:up\r\nmaster_sync_in_progress:0\r\n" +
		"slave_repl_offset:1234\r\nmaster_link_down_since_seconds:-1\r\nreplica_priority:7\r\nmaster_failover_state:no-failover\r\n" +
		"master_replid:r1\r\nmaster_replid2:r0\r\nmaster_repl_offset:1234\r\n# Keyspace\r\ndb0:keys=3,expires=0,avg_ttl=0\r\ndb5:keys=4,expires=1,avg_ttl=9\r\n"
	in, err := ParseInfo(valkey8Replica)
	if err != nil {
		t.Fatal(err)
	}
	want := Info{Version: "8.1.1", RunID: "abc", UptimeSeconds: 42, Role: RoleSlave, MasterHost: "10.0.0.1", MasterPort: 6379,
		MasterLinkUp: true, MasterLinkDownSinceSeconds: -1, ReplicaOffset: 1234, MasterReplOffset: 1234, ReplID: "r1", ReplID2: "r0",
		ReplicaPriority: 7, FailoverState: "no-failover", RDBLastSaveTime: 1700000000, RDBLastBgsaveOK: true, AOFEnabled: true, Keys: 7}
	if in.Replicas != nil {
		t.Fatalf("replicas on a replica: %+v", in.Replicas)
	}
	if !reflect.DeepEqual(in, want) {
		t.Fatalf("got  %+v\nwant %+v", in, want)
	}
	if !in.ReplicatingFrom("10.0.0.1", 6379) || in.Offset() != 1234 {
		t.Fatal("helpers")
	}

	const primary = "role:master\r\nconnected_slaves:2\r\nslave0:ip=10.0.0.2,port=6379,state=online,offset=99,lag=0\r\n" +
		"replica1:ip=10.0.0.3,port=6379,state=wait_bgsave,offset=0,lag=1\r\nslave_read_only:1\r\nmaster_repl_offset:99\r\n"
	in, err = ParseInfo(primary)
	if err != nil {
		t.Fatal(err)
	}
	if in.Role != RoleMaster || len(in.Replicas) != 2 || in.Replicas[1].State != "wait_bgsave" || in.Replicas[0].Offset != 99 || in.Offset() != 99 || in.ReplicaPriority != 100 {
		t.Fatalf("primary: %+v", in)
	}
	if _, err := ParseInfo("# Server\r\nredis_version:7\r\n"); err == nil {
		t.Fatal("INFO without a role accepted")
	}
}
