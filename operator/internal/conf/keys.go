// Package conf is the operator's handling of valkey.conf: which keys need a
// restart, which the operator owns, rendering the file, and planning how a change
// of spec.config reaches the servers (live with CONFIG SET, or by a rolling
// restart). Everything here is pure.
package conf

import (
	"fmt"
	"regexp"
	"strings"
)

// restartOnly are the parameters Valkey and Redis mark IMMUTABLE_CONFIG (CONFIG SET
// refuses them with "can't set immutable config"), plus the directives that only a
// configuration file can hold. Sources: the standardConfig table of src/config.c in
// valkey-io/valkey 8.x and redis/redis 7.0 (flag IMMUTABLE_CONFIG), and the
// "CONFIG SET" section of valkey.conf ("some configuration directives cannot be
// changed at runtime"). Keys missing here that a server reports as immutable are
// detected from its reply and handled the same way (IsImmutableReply).
var restartOnly = map[string]string{
	"databases":                "IMMUTABLE_CONFIG in config.c (Valkey 8, Redis 7)",
	"io-threads":               "IMMUTABLE_CONFIG in config.c (Redis 7; Valkey 8 too)",
	"io-threads-do-reads":      "IMMUTABLE_CONFIG in config.c (Redis 7)",
	"tcp-backlog":              "IMMUTABLE_CONFIG in config.c (listen() backlog is fixed at startup)",
	"aclfile":                  "IMMUTABLE_CONFIG in config.c",
	"unixsocketperm":           "IMMUTABLE_CONFIG in config.c",
	"unixsocketgroup":          "IMMUTABLE_CONFIG in config.c (Valkey 8)",
	"syslog-enabled":           "IMMUTABLE_CONFIG in config.c",
	"syslog-ident":             "IMMUTABLE_CONFIG in config.c",
	"syslog-facility":          "IMMUTABLE_CONFIG in config.c",
	"always-show-logo":         "IMMUTABLE_CONFIG in config.c",
	"set-proc-title":           "IMMUTABLE_CONFIG in config.c",
	"disable-thp":              "IMMUTABLE_CONFIG in config.c",
	"cluster-enabled":          "IMMUTABLE_CONFIG in config.c",
	"cluster-config-file":      "IMMUTABLE_CONFIG in config.c",
	"cluster-port":             "IMMUTABLE_CONFIG in config.c",
	"appendfilename":           "IMMUTABLE_CONFIG in config.c",
	"appenddirname":            "IMMUTABLE_CONFIG in config.c (Redis ≥ 7)",
	"enable-protected-configs": "IMMUTABLE_CONFIG in config.c",
	"enable-debug-command":     "IMMUTABLE_CONFIG in config.c",
	"enable-module-command":    "IMMUTABLE_CONFIG in config.c",
	"ignore-warnings":          "IMMUTABLE_CONFIG in config.c",
	"oom-score-adj":            "needs the process to be restarted to take effect on every child in older servers; treated as restart-only for both",
	// Directives, not CONFIG parameters: only a configuration file holds them.
	"loadmodule": "configuration-file directive (MODULE LOAD is not used by the operator)",
	"user":       "configuration-file ACL directive",
}

// fileOnly are directives that CONFIG GET does not know: their existence cannot
// be checked against a server.
var fileOnly = map[string]bool{"loadmodule": true, "user": true}

// reserved are keys the operator owns; spec.config may not set them. The CRD's CEL
// rule carries the same list (a test keeps them equal).
var reserved = []string{
	"port", "tls-port", "bind", "unixsocket", "dir", "daemonize", "supervised", "pidfile", "logfile",
	"include", "replicaof", "slaveof", "replica-announce-ip", "slave-announce-ip", "replica-announce-port",
	"slave-announce-port", "requirepass", "masterauth", "masteruser", "protected-mode", "rename-command",
	"tls-cert-file", "tls-key-file", "tls-ca-cert-file", "tls-ca-cert-dir", "tls-replication",
	"tls-client-cert-file", "tls-client-key-file",
}

// Reserved returns the keys the operator owns.
func Reserved() []string { return append([]string(nil), reserved...) }

// IsReserved reports whether the operator owns key.
func IsReserved(key string) bool {
	for _, r := range reserved {
		if r == key {
			return true
		}
	}
	return false
}

// RestartOnly reports whether key can only change by restarting the server.
func RestartOnly(key string) bool {
	_, ok := restartOnly[key]
	return ok
}

// RestartOnlySource says why key is restart-only ("" if it is not).
func RestartOnlySource(key string) string { return restartOnly[key] }

// FileOnly reports whether key is a configuration-file directive that CONFIG
// GET cannot read.
func FileOnly(key string) bool { return fileOnly[key] }

// IsImmutableReply reports whether a CONFIG SET error reply says the key can only
// be set at startup.
func IsImmutableReply(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "immutable")
}

// IsUnknownReply reports whether a CONFIG SET error reply says the key does not exist.
func IsUnknownReply(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "unknown option") || strings.Contains(m, "unsupported config") ||
		strings.Contains(m, "unknown parameter")
}

var keyRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)

// Validate checks a spec.config entry without a server: the name's shape, the
// keys the operator owns, and values that would inject other directives.
func Validate(key, value string) error {
	switch {
	case !keyRE.MatchString(key):
		return fmt.Errorf("%q is not a valkey.conf directive name (lowercase letters, digits, '-')", key)
	case IsReserved(key):
		return fmt.Errorf("%q is owned by the operator: use the ValkeyCluster's dedicated fields", key)
	case strings.ContainsAny(value, "\r\n\x00"):
		return fmt.Errorf("the value of %q contains a line break or NUL, which would inject directives", key)
	}
	return nil
}
