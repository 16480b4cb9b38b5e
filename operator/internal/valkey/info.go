// Package valkey is the operator's view of a Valkey (or Redis ≥ 7) server: a small
// Client interface that sends one command to one server, the parsing of the replies
// the operator relies on (INFO, CONFIG GET), and an implementation over valkey-go
// that pools connections per server. Everything here works with Valkey 7/8 and
// with Redis 7.0.
package valkey

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// Role is the replication role a server reports.
type Role string

// Roles reported in INFO replication.
const (
	RoleMaster Role = "master"
	RoleSlave  Role = "slave"
)

// ReplicaEntry is one connected replica as its primary lists it.
type ReplicaEntry struct {
	IP     string
	Port   int
	State  string // "online", "wait_bgsave", "send_bulk", ...
	Offset int64
	Lag    int64
}

// Info is the part of INFO (server, replication, persistence, keyspace) the
// operator uses.
type Info struct {
	// Server.
	Version       string
	RunID         string
	UptimeSeconds int64
	// Replication.
	Role                 Role
	MasterHost           string
	MasterPort           int
	MasterLinkUp         bool
	MasterSyncInProgress bool
	// MasterLinkDownSinceSeconds is -1 when the link never came up (or is up).
	MasterLinkDownSinceSeconds int64
	// ReplicaOffset is slave_repl_offset on a replica (what it processed).
	ReplicaOffset int64
	// MasterReplOffset is master_repl_offset (the replication stream's offset).
	MasterReplOffset int64
	ReplID           string
	ReplID2          string
	// ReplicaPriority is slave_priority/replica_priority; 100 when not reported (a primary).
	ReplicaPriority int
	// FailoverState is master_failover_state ("no-failover", "waiting-for-sync", "failover-in-progress").
	FailoverState string
	Replicas      []ReplicaEntry
	// Persistence.
	Loading             bool
	RDBLastSaveTime     int64
	RDBBgsaveInProgress bool
	RDBLastBgsaveOK     bool
	AOFEnabled          bool
	// Keyspace.
	Keys int64
}

// Offset is the replication offset used to compare copies: slave_repl_offset on
// a replica, master_repl_offset on a primary.
func (i Info) Offset() int64 {
	if i.Role == RoleSlave {
		return i.ReplicaOffset
	}
	return i.MasterReplOffset
}

// ReplicatingFrom reports whether the server is a replica of host:port.
func (i Info) ReplicatingFrom(host string, port int) bool {
	return i.Role == RoleSlave && i.MasterHost == host && i.MasterPort == port
}

// ParseInfo parses the text of an INFO reply. Unknown fields are ignored; a reply
// without a role is an error (the operator cannot act on it).
func ParseInfo(text string) (Info, error) {
	in := Info{MasterLinkDownSinceSeconds: -1, ReplicaPriority: 100, RDBLastBgsaveOK: true}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case k == "redis_version" && in.Version == "":
			in.Version = v
		case k == "valkey_version":
			in.Version = v
		case k == "run_id":
			in.RunID = v
		case k == "uptime_in_seconds":
			in.UptimeSeconds = atoi64(v)
		case k == "role":
			in.Role = Role(v)
		case k == "master_host":
			in.MasterHost = v
		case k == "master_port":
			in.MasterPort = int(atoi64(v))
		case k == "master_link_status":
			in.MasterLinkUp = v == "up"
		case k == "master_sync_in_progress":
			in.MasterSyncInProgress = v == "1"
		case k == "master_link_down_since_seconds":
			in.MasterLinkDownSinceSeconds = atoi64(v)
		case k == "slave_repl_offset" || k == "replica_repl_offset":
			in.ReplicaOffset = atoi64(v)
		case k == "master_repl_offset":
			in.MasterReplOffset = atoi64(v)
		case k == "master_replid":
			in.ReplID = v
		case k == "master_replid2":
			in.ReplID2 = v
		case k == "slave_priority" || k == "replica_priority":
			in.ReplicaPriority = int(atoi64(v))
		case k == "master_failover_state":
			in.FailoverState = v
		case isReplicaLine(k, v):
			in.Replicas = append(in.Replicas, parseReplicaEntry(v))
		case k == "loading":
			in.Loading = v == "1"
		case k == "rdb_last_save_time":
			in.RDBLastSaveTime = atoi64(v)
		case k == "rdb_bgsave_in_progress":
			in.RDBBgsaveInProgress = v == "1"
		case k == "rdb_last_bgsave_status":
			in.RDBLastBgsaveOK = v == "ok"
		case k == "aof_enabled":
			in.AOFEnabled = v == "1"
		case strings.HasPrefix(k, "db") && isDigits(k[2:]):
			for _, f := range strings.Split(v, ",") {
				if n, ok := strings.CutPrefix(f, "keys="); ok {
					in.Keys += atoi64(n)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Info{}, fmt.Errorf("read INFO reply: %w", err)
	}
	if in.Role != RoleMaster && in.Role != RoleSlave {
		return Info{}, fmt.Errorf("INFO reply has no replication role (got %q): the server must be Valkey or Redis ≥ 7 in standalone mode", in.Role)
	}
	return in, nil
}

func parseReplicaEntry(v string) ReplicaEntry {
	var e ReplicaEntry
	for _, f := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(f, "=")
		switch k {
		case "ip":
			e.IP = val
		case "port":
			e.Port = int(atoi64(val))
		case "state":
			e.State = val
		case "offset":
			e.Offset = atoi64(val)
		case "lag":
			e.Lag = atoi64(val)
		}
	}
	return e
}

// isReplicaLine matches "slave0:ip=...,port=..." (and Valkey's "replica0:").
func isReplicaLine(k, v string) bool {
	for _, p := range []string{"slave", "replica"} {
		if n, ok := strings.CutPrefix(k, p); ok && isDigits(n) {
			return strings.HasPrefix(v, "ip=")
		}
	}
	return false
}

func atoi64(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
