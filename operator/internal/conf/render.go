package conf

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Paths and ports inside a Valkey pod.
const (
	Port          = 6379
	DataDir       = "/data"
	ConfigDir     = "/etc/valkey"
	ConfigFile    = ConfigDir + "/valkey.conf"
	AuthDir       = "/etc/valkey-auth"
	AuthFile      = AuthDir + "/auth.conf"
	TLSDir        = "/etc/valkey-tls"
	ConfigMapKey  = "valkey.conf"
	AppliedKey    = "applied.json"
	AuthSecretKey = "auth.conf"
	// PasswordKey in the auth Secret holds the bare password (for probes and the exporter).
	PasswordKey  = "password"
	PasswordFile = AuthDir + "/" + PasswordKey
)

// FenceHost and FencePort are where every server points at startup: a closed port
// on the pod's own loopback. A server that (re)starts is thus a replica whose link
// is down: it rejects writes, and it refuses to feed other replicas
// (-NOMASTERLINK), so a restarted primary that lost its data can never overwrite
// the replicas' copies. Only the operator, which sees every pod, decides whom to
// promote (REPLICAOF NO ONE) and where the others replicate from.
const (
	FenceHost = "127.0.0.1"
	FencePort = 1
)

// Base is what the operator itself puts in valkey.conf.
type Base struct {
	TLS         bool
	Auth        bool
	Persistence bool
}

// defaults are overridable defaults the operator prefers to the server's (they
// come before the user's keys; a later line wins in valkey.conf).
func (b Base) defaults() [][2]string {
	d := [][2]string{
		// Replicas joining or re-syncing should not wait 5s for company.
		{"repl-diskless-sync-delay", "1"},
	}
	if b.Persistence {
		d = append(d, [2]string{"appendonly", "yes"})
	} else {
		// /data is an emptyDir: snapshots cost a fork and survive only container restarts.
		d = append(d, [2]string{"save", `""`}, [2]string{"appendonly", "no"})
	}
	return d
}

// Render produces valkey.conf from the operator's settings and the accepted user
// keys (spec.config entries the servers accepted, and restart-only ones).
func Render(b Base, user map[string]string) string {
	var s strings.Builder
	s.WriteString("# Managed by valkey-operator: edit spec.config of the ValkeyCluster instead.\n")
	s.WriteString("# Settings the operator owns.\n")
	if b.TLS {
		fmt.Fprintf(&s, "port 0\ntls-port %d\n", Port)
		fmt.Fprintf(&s, "tls-cert-file %s/tls.crt\ntls-key-file %s/tls.key\ntls-ca-cert-file %s/ca.crt\n", TLSDir, TLSDir, TLSDir)
		s.WriteString("tls-replication yes\n")
	} else {
		fmt.Fprintf(&s, "port %d\n", Port)
	}
	s.WriteString("bind * -::*\nprotected-mode no\n")
	fmt.Fprintf(&s, "dir %s\n", DataDir)
	s.WriteString("daemonize no\nlogfile \"\"\n")
	fmt.Fprintf(&s, "replicaof %s %d\n", FenceHost, FencePort)
	if b.Auth {
		fmt.Fprintf(&s, "include %s\n", AuthFile)
	}
	s.WriteString("# Operator defaults (spec.config overrides them).\n")
	if b.TLS {
		s.WriteString("tls-auth-clients optional\n")
	}
	for _, kv := range b.defaults() {
		fmt.Fprintf(&s, "%s %s\n", kv[0], kv[1])
	}
	if len(user) > 0 {
		s.WriteString("# spec.config (accepted keys).\n")
		for _, k := range slices.Sorted(maps.Keys(user)) {
			fmt.Fprintf(&s, "%s %s\n", k, fileValue(user[k]))
		}
	}
	return s.String()
}

// fileValue writes a value as valkey.conf expects: verbatim (so "save 900 1 300
// 10" keeps its several arguments, as CONFIG SET takes them in one string), and ""
// for an empty value.
func fileValue(v string) string {
	if strings.TrimSpace(v) == "" {
		return `""`
	}
	return v
}

// RestartHash fingerprints the restart-only keys of a configuration: pods whose
// template carries another hash must restart to apply it.
func RestartHash(user map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(user)) {
		if RestartOnly(k) {
			fmt.Fprintf(h, "%s=%s\n", k, user[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// AuthFileContent is the auth.conf included by valkey.conf: the server's password
// and the one it uses towards its primary.
func AuthFileContent(password string) string {
	q := quote(password)
	return "requirepass " + q + "\nmasterauth " + q + "\n"
}

// quote writes a valkey.conf double-quoted string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
