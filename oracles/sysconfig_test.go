package oracles

import "testing"

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"104857600", 104857600, true},
		{"1b", 1, true},
		{"1k", 1000, true},
		{"1kb", 1024, true},
		{"1K", 1000, true},
		{"1KB", 1024, true},
		{"100mb", 100 << 20, true},
		{"100MB", 100 << 20, true},
		{"100m", 100_000_000, true},
		{"1g", 1_000_000_000, true},
		{"1gb", 1 << 30, true},
		{"1Gb", 1 << 30, true},
		{"-1", -1, true},
		{" 64mb ", 64 << 20, true},
		{"8589934591gb", 9223372035781033984, true},
		{"8589934592gb", 0, false}, // 2^63 overflows int64
		{"9223372036854775807", 9223372036854775807, true},
		{"9223372036854775808", 0, false},
		{"1.5mb", 0, false},
		{"1tb", 0, false},
		{"1 mb", 0, false},
		{"mb", 0, false},
		{"", 0, false},
		{"-", 0, false},
		{"0x10", 0, false},
		{"10%", 0, false},
		{"1Gi", 0, false}, // Kubernetes quantities are not server sizes
	}
	for _, c := range cases {
		got, ok := ParseSize(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestConfigEquivalent(t *testing.T) {
	cases := []struct {
		key, want, got string
		eq             bool
	}{
		{"maxmemory", "100mb", "104857600", true},
		{"maxmemory", "1gb", "1073741824", true},
		{"maxmemory", "1g", "1000000000", true},
		{"maxmemory", "1g", "1073741824", false},
		{"maxmemory", "1gb", "1000000000", false},
		{"maxmemory", "100mb", "100mb", true},
		{"maxmemory", "0", "0", true},
		{"maxmemory", "100mb", "52428800", false},
		{"maxmemory-policy", "ALLKEYS-LRU", "allkeys-lru", true},
		{"maxmemory-policy", "allkeys-lru", "volatile-lru", false},
		{"appendonly", "YES", "yes", true},
		{"appendonly", "yes", "no", false},
		{"hz", "20", "20", true},
		{"hz", "20", "10", false},
		{"save", "3600 1 300 100", "3600 1 300 100", true},
		{"save", "3600 1  300 100", "3600 1 300 100", true},
		{"save", "3600 1", "3600 1 300 100", false},
		{"save", "", "", true},
		{"save", "", "3600 1", false},
		{"dbfilename", "dump.rdb", "DUMP.RDB", false}, // file names keep their case
		{"maxmemory-clients", "10%", "10%", true},
		{"lfu-log-factor", "10", "10.0", true},
		{"notify-keyspace-events", "Ex", "xE", true},
		{"notify-keyspace-events", "KEA", "AKE", true},
		{"notify-keyspace-events", "Ag$lshzxetd", "A", true},
		{"notify-keyspace-events", "Ex", "xe", false}, // e is "evicted", E "keyevent"
		{"notify-keyspace-events", "Kx", "xE", false},
		{"notify-keyspace-events", "", "", true},
		{"client-output-buffer-limit", "replica 256mb 64mb 60", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", true},
		{"client-output-buffer-limit", "pubsub 32mb 8mb 60 normal 0 0 0", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", true},
		{"client-output-buffer-limit", "replica 512mb 64mb 60", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", false},
		{"client-output-buffer-limit", "replica 256mb 64mb", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", false},
		{"Maxmemory", "100MB", "104857600", true},
	}
	for _, c := range cases {
		if got := configEquivalent(c.key, c.want, c.got); got != c.eq {
			t.Errorf("configEquivalent(%q, %q, %q) = %v, want %v", c.key, c.want, c.got, got, c.eq)
		}
	}
}
