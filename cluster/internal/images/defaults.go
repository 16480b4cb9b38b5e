package images

import "path/filepath"

// valkeyPrograms are the programs of the official valkey and redis images: each
// is the Valkey program when installed, else its Redis equivalent (Debian 12
// ships Redis 7, which speaks the same protocol and commands).
func valkeyPrograms() map[string][]string {
	pairs := [][2]string{
		{"valkey-server", "redis-server"},
		{"valkey-cli", "redis-cli"},
		{"valkey-benchmark", "redis-benchmark"},
		{"valkey-check-aof", "redis-check-aof"},
		{"valkey-check-rdb", "redis-check-rdb"},
		{"valkey-sentinel", "redis-sentinel"},
	}
	m := map[string][]string{}
	for _, p := range pairs {
		m[p[0]] = []string{p[0], p[1]}
		m[p[1]] = []string{p[0], p[1]}
	}
	return m
}

const valkeyInstall = "install Valkey or Redis on the host: apt-get install redis-server redis-tools"

// DefaultRules are the shipped rules, in order:
//   - valkey/valkey and redis: valkey-server if installed, else redis-server
//     (and likewise for the CLI and tools), working directory /data, and the
//     images' entrypoint: it starts the server when the first argument is an
//     option, and a server started as root gives /data to the valkey (redis)
//     user 999 and runs as it;
//   - the bundled operator's image (ghcr.io/gauntlet-dev/valkey-operator and
//     gauntlet/valkey-operator): opts.OperatorBinary, run as 65532:65532 like
//     its distroless base image, also standing for /manager and /valkey-operator;
//   - oliver006/redis_exporter (the bundled operator's metrics sidecar):
//     simulated;
//   - busybox and alpine: the host's shell and tools, looked up by name.
func DefaultRules(opts Options) []Rule {
	bin := opts.OperatorBinary
	if bin != "" && !filepath.IsAbs(bin) {
		if abs, err := filepath.Abs(bin); err == nil {
			bin = abs
		}
	}
	operator := []string{bin}
	return []Rule{
		{
			Name:           "valkey",
			Images:         []string{"valkey/valkey", "valkey/valkey:*", "valkey/valkey@*"},
			Cmd:            []string{"valkey-server"},
			PrependProgram: "valkey-server",
			Programs:       valkeyPrograms(),
			WorkingDir:     "/data",
			RootUser:       "999:999",
			Install:        valkeyInstall,
		},
		{
			Name:           "redis",
			Images:         []string{"redis", "redis:*", "redis@*"},
			Cmd:            []string{"redis-server"},
			PrependProgram: "redis-server",
			Programs:       valkeyPrograms(),
			WorkingDir:     "/data",
			RootUser:       "999:999",
			Install:        valkeyInstall,
		},
		{
			Name: "valkey-operator",
			Images: []string{
				"ghcr.io/gauntlet-dev/valkey-operator", "ghcr.io/gauntlet-dev/valkey-operator:*", "ghcr.io/gauntlet-dev/valkey-operator@*",
				"gauntlet/valkey-operator", "gauntlet/valkey-operator:*", "gauntlet/valkey-operator@*",
			},
			Entrypoint: []string{"/manager"},
			Programs: map[string][]string{
				"/manager":         operator,
				"manager":          operator,
				"/valkey-operator": operator,
				"valkey-operator":  operator,
			},
			User:    "65532:65532",
			Install: "build the bundled operator with `make build` (the cluster must be given its path)",
		},
		{
			// The bundled operator's metrics sidecar: nothing the harness
			// judges reads it, so it is simulated on purpose.
			Name:     "redis-exporter",
			Images:   []string{"oliver006/redis_exporter", "oliver006/redis_exporter:*", "oliver006/redis_exporter@*"},
			Simulate: true,
		},
		{
			Name:   "busybox",
			Images: []string{"busybox*"},
			Cmd:    []string{"sh"},
		},
		{
			Name:   "alpine",
			Images: []string{"alpine*"},
			Cmd:    []string{"/bin/sh"},
		},
	}
}
