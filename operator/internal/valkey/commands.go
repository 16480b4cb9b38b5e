package valkey

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Commands the operator sends; each returns the argument list for Client.Do.
// They are the ones Valkey and Redis ≥ 6.2 share.

// CmdPing checks liveness.
func CmdPing() []string { return []string{"PING"} }

// CmdInfo asks for every default INFO section (server, replication, persistence, keyspace, ...).
func CmdInfo() []string { return []string{"INFO"} }

// CmdReplicaOf makes the server a replica of host:port.
func CmdReplicaOf(host string, port int) []string {
	return []string{"REPLICAOF", host, strconv.Itoa(port)}
}

// CmdPromote makes the server a primary (REPLICAOF NO ONE).
func CmdPromote() []string { return []string{"REPLICAOF", "NO", "ONE"} }

// CmdConfigGet reads configuration parameters (several at once: Valkey, Redis ≥ 7).
func CmdConfigGet(keys ...string) []string {
	return append([]string{"CONFIG", "GET"}, keys...)
}

// CmdConfigSet sets parameters at runtime; with several, the server applies all or none.
func CmdConfigSet(kv map[string]string) []string {
	keys := slices.Sorted(maps.Keys(kv))
	out := []string{"CONFIG", "SET"}
	for _, k := range keys {
		out = append(out, k, kv[k])
	}
	return out
}

// CmdFailover hands the primary role to the replica at host:port: the primary
// pauses writes, waits until the target caught up (at most timeout), then the two
// swap roles (Valkey, Redis ≥ 6.2).
func CmdFailover(host string, port int, timeout time.Duration) []string {
	return []string{"FAILOVER", "TO", host, strconv.Itoa(port), "TIMEOUT", strconv.FormatInt(timeout.Milliseconds(), 10)}
}

// CmdFailoverAbort aborts a FAILOVER in progress.
func CmdFailoverAbort() []string { return []string{"FAILOVER", "ABORT"} }

// CmdBgsave starts a background RDB save.
func CmdBgsave() []string { return []string{"BGSAVE"} }

// CmdLastSave returns the UNIX time of the last successful save.
func CmdLastSave() []string { return []string{"LASTSAVE"} }

// IsUnknownConfig reports whether a CONFIG SET/GET error reply says the
// parameter does not exist.
func IsUnknownConfig(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "unknown option") || strings.Contains(m, "unsupported config parameter") ||
		strings.Contains(m, "unsupported parameter")
}

// IsImmutableConfig reports whether a CONFIG SET error reply says the parameter
// can only be set at startup.
func IsImmutableConfig(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "immutable")
}
