package valkeyconn

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	vk "github.com/valkey-io/valkey-go"

	"github.com/gauntlet-dev/gauntlet/model"
)

// Probe reads one server's replication state (ROLE, INFO replication) and the
// effective value of each of configKeys (CONFIG GET) in one pipelined round trip,
// and fills m's Reachable, Error, Role, Follows, LinkUp, Offset, Replicas and
// Config. The caller bounds ctx. A server that answers ROLE is Reachable even if
// a later command fails (the failure is then in Error).
func Probe(ctx context.Context, c vk.Client, configKeys []string, m *model.Member) {
	cmds := vk.Commands{
		c.B().Role().Build(),
		c.B().Info().Section("replication").Build(),
	}
	if len(configKeys) > 0 {
		cmds = append(cmds, c.B().ConfigGet().Parameter(configKeys...).Build())
	}
	res := c.DoMulti(ctx, cmds...)

	role, err := parseRole(res[0])
	if err != nil {
		m.Reachable = false
		m.Error = Describe(fmt.Errorf("ROLE: %w", err)).Error()
		m.Unreachable = Unreachable(err)
		return
	}
	m.Reachable = true
	m.Role = role.role
	var errs []string

	info, err := res[1].ToString()
	if err != nil {
		errs = append(errs, fmt.Sprintf("INFO replication: %v", err))
	}
	fields := ParseInfo(info)
	switch role.role {
	case model.RolePrimary:
		m.Offset = atoi64(fields["master_repl_offset"], role.offset)
		m.Replicas = int(atoi64(fields["connected_slaves"], int64(role.replicas)))
	case model.RoleReplica:
		host, port := fields["master_host"], fields["master_port"]
		if host == "" {
			host, port = role.host, role.port
		}
		if host != "" {
			m.Follows = net.JoinHostPort(host, port)
		}
		if s, ok := fields["master_link_status"]; ok {
			m.LinkUp = s == "up"
		} else {
			m.LinkUp = role.state == "connected"
		}
		m.Offset = atoi64(fields["slave_repl_offset"], atoi64(fields["master_repl_offset"], role.offset))
	}

	if len(configKeys) > 0 {
		got, err := res[2].AsStrMap()
		if err != nil {
			errs = append(errs, fmt.Sprintf("CONFIG GET: %v", err))
		} else {
			m.Config = make(map[string]string, len(configKeys))
			for _, k := range configKeys {
				if v, ok := got[k]; ok {
					m.Config[k] = v
				}
			}
		}
	}
	if len(errs) > 0 {
		m.Error = strings.Join(errs, "; ")
	}
}

type roleReply struct {
	role       string // model.RolePrimary, model.RoleReplica or ""
	offset     int64
	replicas   int
	host, port string
	state      string
}

// parseRole reads a ROLE reply: ["master", offset, [[ip, port, offset], …]] or
// ["slave", host, port, state, offset] (or "sentinel").
func parseRole(r vk.ValkeyResult) (roleReply, error) {
	arr, err := r.ToArray()
	if err != nil {
		return roleReply{}, err
	}
	if len(arr) == 0 {
		return roleReply{}, fmt.Errorf("empty reply")
	}
	name, err := arr[0].ToString()
	if err != nil {
		return roleReply{}, fmt.Errorf("role name: %w", err)
	}
	var out roleReply
	switch name {
	case "master":
		out.role = model.RolePrimary
		if len(arr) > 1 {
			out.offset, _ = arr[1].AsInt64()
		}
		if len(arr) > 2 {
			if reps, err := arr[2].ToArray(); err == nil {
				out.replicas = len(reps)
			}
		}
	case "slave", "replica":
		out.role = model.RoleReplica
		if len(arr) >= 5 {
			out.host, _ = arr[1].ToString()
			if p, err := arr[2].AsInt64(); err == nil {
				out.port = strconv.FormatInt(p, 10)
			}
			out.state, _ = arr[3].ToString()
			out.offset, _ = arr[4].AsInt64()
		}
	}
	return out, nil
}

// ParseInfo parses an INFO reply ("key:value" lines, "# Section" headers) into a map.
// A RESP3 verbatim string's "txt:" format prefix is skipped.
func ParseInfo(s string) map[string]string {
	s = strings.TrimPrefix(s, "txt:")
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		out[k] = v
	}
	return out
}

func atoi64(s string, def int64) int64 {
	if s == "" {
		return def
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return def
	}
	return v
}
