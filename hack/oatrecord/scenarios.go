package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

func idle(d time.Duration) func(c *cluster) error {
	return func(c *cluster) error { time.Sleep(d); return nil }
}

func scenarios() []scenario {
	base := map[string]string{"maxmemory": "100mb"}
	return []scenario{
		{
			// A planned change done right: replicas restarted one at a time, then a
			// switchover (FAILOVER TO: the primary's writes paused while the chosen
			// replica catches up, the primary demoted before the replica is
			// promoted), then the old primary restarted.
			name: "rolling-restart", required: 1, config: base, kind: model.StepApply, changed: []string{"spec.image"}, workload: true,
			play: func(c *cluster) error {
				time.Sleep(time.Second)
				for _, i := range []int{2, 1} {
					if err := c.restart(i); err != nil {
						return err
					}
					if err := c.replicaOf(i, 0); err != nil {
						return err
					}
					if err := c.waitLink(i); err != nil {
						return err
					}
					time.Sleep(700 * time.Millisecond)
				}
				// Switchover to cache-1, as the bundled operator does it: FAILOVER TO
				// makes cache-0 pause writes, wait until cache-1 has everything,
				// demote itself and only then have cache-1 promoted — never two
				// primaries. Once cache-1 reports the primary role the label moves
				// to it in one update.
				if _, err := c.srv[0].do("FAILOVER", "TO", c.srv[1].ip, strconv.Itoa(c.srv[1].port), "TIMEOUT", "3000"); err != nil {
					return err
				}
				if err := c.waitPrimary(1); err != nil {
					return err
				}
				c.setLabels("replica", "primary")
				if err := c.replicaOf(2, 1); err != nil {
					return err
				}
				if err := c.restart(0); err != nil {
					return err
				}
				if err := c.replicaOf(0, 1); err != nil {
					return err
				}
				time.Sleep(time.Second)
				return nil
			},
		},
		{
			// The primary freezes (SIGSTOP); after the detection delay the operator
			// moves the label, promotes the most advanced replica and repoints the
			// other; when the fault is removed the old primary is demoted at once.
			name: "clean-failover", required: 1, config: base, kind: model.StepFault, workload: true,
			play: func(c *cluster) error {
				time.Sleep(time.Second)
				c.freeze(0, "pod-failure")
				time.Sleep(time.Second) // downAfter
				c.label(0, "replica")
				next, other := 1, 2
				if c.offset(2) > c.offset(1) {
					next, other = 2, 1
				}
				if err := c.promote(next); err != nil {
					return err
				}
				c.label(next, "primary")
				if err := c.replicaOf(other, next); err != nil {
					return err
				}
				time.Sleep(time.Second)
				c.thaw(0)
				if err := c.replicaOf(0, next); err != nil {
					return err
				}
				time.Sleep(time.Second)
				return nil
			},
		},
		{
			// cache-2 lost its link before the step; the primary freezes and the
			// operator promotes cache-2 anyway: the writes cache-1 acknowledged are
			// wiped when cache-1 resynchronizes from it.
			name: "lost-acked-write", required: 1, config: base, kind: model.StepFault, workload: true,
			setup: func(c *cluster) error { return c.fence(2) },
			play:  stalePromotion,
		},
		{
			// The same, with the promise of two replicas: no write was acknowledged
			// by two, so none had to survive.
			name: "acked-below-required", required: 2, config: base, kind: model.StepFault, workload: true,
			setup: func(c *cluster) error { return c.fence(2) },
			play:  stalePromotion,
		},
		{
			// A switchover that promotes and labels cache-1 before demoting and
			// unlabelling cache-0: for a second both serve writes.
			name: "split-brain", required: 1, config: base, kind: model.StepApply, changed: []string{"spec.image"}, workload: true,
			play: func(c *cluster) error {
				time.Sleep(time.Second)
				if err := c.promote(1); err != nil {
					return err
				}
				c.label(1, "primary")
				time.Sleep(time.Second)
				c.label(0, "replica")
				if err := c.replicaOf(0, 1); err != nil {
					return err
				}
				if err := c.replicaOf(2, 1); err != nil {
					return err
				}
				time.Sleep(time.Second)
				return nil
			},
		},
		{
			// Values as users write them; the servers report them normalized.
			name: "converged", kind: model.StepApply, changed: []string{"spec.config.maxmemory-policy"},
			config: map[string]string{
				"maxmemory": "100mb", "maxmemory-policy": "ALLKEYS-LRU", "notify-keyspace-events": "Ex",
				"save": "3600 1 300 100", "client-output-buffer-limit": "replica 256mb 64mb 60",
				"lazyfree-lazy-eviction": "YES", "maxmemory-samples": "7",
			},
			play: idle(300 * time.Millisecond),
		},
		{
			name: "config-sizes", kind: model.StepApply, changed: []string{"spec.config.maxmemory"},
			config: map[string]string{"maxmemory": "1g", "client-query-buffer-limit": "1gb", "proto-max-bulk-len": "512MB"},
			play:   idle(300 * time.Millisecond),
		},
		{
			// cache-2 kept its old maxmemory; the image lacks a key the desired
			// state sets (cluster-databases is Valkey 9's: record with Valkey 8).
			name: "config-drift", kind: model.StepApply, changed: []string{"spec.config.maxmemory", "spec.config.cluster-databases"},
			config: map[string]string{"maxmemory": "100mb", "maxmemory-policy": "allkeys-lru", "cluster-databases": "4"},
			setup: func(c *cluster) error {
				r, err := c.srv[0].do("CONFIG", "GET", "cluster-databases")
				if l, _ := r.([]any); err != nil || len(l) != 0 {
					return fmt.Errorf("the server knows cluster-databases (%v, %v): record config-drift with a server older than Valkey 9, or give the scenario a key this one lacks", r, err)
				}
				_, err = c.srv[2].do("CONFIG", "SET", "maxmemory", "50mb")
				return err
			},
			play: idle(300 * time.Millisecond),
		},
		{
			name: "two-primaries", config: base, kind: model.StepApply, changed: []string{"spec.replicas"},
			play: func(c *cluster) error {
				if err := c.promote(2); err != nil {
					return err
				}
				time.Sleep(300 * time.Millisecond)
				return nil
			},
		},
		{
			// The servers now require a password (and the monitor is given it);
			// cache-2 was not told to use it for its link to the primary.
			name: "link-down", config: base, kind: model.StepApply, changed: []string{"spec.auth.enabled"},
			play: func(c *cluster) error {
				if _, err := c.srv[1].do("CONFIG", "SET", "masterauth", "s3cret"); err != nil {
					return err
				}
				for _, i := range []int{2, 1, 0} {
					if _, err := c.srv[i].do("CONFIG", "SET", "requirepass", "s3cret"); err != nil {
						return err
					}
					c.srv[i].auth = "s3cret"
				}
				c.mu.Lock()
				c.password = "s3cret"
				c.mu.Unlock()
				if _, err := c.srv[0].do("CLIENT", "KILL", "TYPE", "replica"); err != nil {
					return err
				}
				time.Sleep(500 * time.Millisecond)
				return c.waitLink(1)
			},
		},
		{
			// The role label went to a replica: the Service sends clients there.
			name: "service-selects-replica", config: base, kind: model.StepApply, changed: []string{"spec.service.type"},
			play: func(c *cluster) error {
				c.label(0, "replica")
				c.label(1, "primary")
				time.Sleep(300 * time.Millisecond)
				return nil
			},
		},
		{
			// The server of cache-2 crashed (a container-crash fault) and was never
			// brought back.
			name: "unreachable-after-fault", config: base, kind: model.StepFault,
			play: func(c *cluster) error {
				time.Sleep(200 * time.Millisecond)
				now := time.Now()
				c.srv[2].proc.Stop()
				c.mu.Lock()
				c.faults = append(c.faults, model.Fault{Kind: "container-crash", Targets: []string{"cache-2"}, Injected: now, Removed: now.Add(time.Millisecond)})
				c.mu.Unlock()
				time.Sleep(500 * time.Millisecond)
				return nil
			},
		},
	}
}

// stalePromotion freezes the primary and promotes cache-2 (which lost its
// link), then repoints cache-1 and the thawed cache-0 at it.
func stalePromotion(c *cluster) error {
	time.Sleep(time.Second)
	c.freeze(0, "pod-failure")
	time.Sleep(500 * time.Millisecond)
	c.label(0, "replica")
	if err := c.promote(2); err != nil {
		return err
	}
	c.label(2, "primary")
	if err := c.replicaOf(1, 2); err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond)
	c.thaw(0)
	if err := c.replicaOf(0, 2); err != nil {
		return err
	}
	time.Sleep(time.Second)
	return nil
}

// restart ends server i and starts it again on the same port as a fenced
// replica (what the bundled operator's pods do at start), without data.
func (c *cluster) restart(i int) error {
	s := c.srv[i]
	s.proc.Stop()
	d, err := os.MkdirTemp("", "record-restart-")
	if err != nil {
		return err
	}
	c.dirs = append(c.dirs, d)
	p, err := launch(s, d, "--replicaof", "127.0.0.1", "1")
	if err != nil {
		return fmt.Errorf("restart %s: %w", s.pod, err)
	}
	s.proc, s.auth = p, ""
	for k, v := range c.desired {
		_, _ = s.do("CONFIG", "SET", k, v)
	}
	return nil
}

// waitLink waits until replica i's link is up.
func (c *cluster) waitLink(i int) error {
	for range 200 {
		r, err := c.srv[i].do("ROLE")
		if l, _ := r.([]any); err == nil && len(l) >= 4 && l[3] == "connected" {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s did not link", c.srv[i].pod)
}

// waitPrimary waits until server i reports the primary role (a FAILOVER TO it
// has completed).
func (c *cluster) waitPrimary(i int) error {
	for range 300 {
		r, err := c.srv[i].do("ROLE")
		if l, _ := r.([]any); err == nil && len(l) > 0 && l[0] == "master" {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s was not promoted", c.srv[i].pod)
}
