package campaign

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/monitors"
)

// sampleEvery is the system monitor's sampling period while a transition runs.
const sampleEvery = 250 * time.Millisecond

// maxSamples bounds the samples kept for one transition (the first and the last
// are always kept; in between, every other one is dropped when full).
const maxSamples = 1200

// monitorEnv is what the target's monitor and workload see of the session.
func (s *session) monitorEnv(d model.Object) monitors.Env {
	return monitors.Env{Kube: s.env.kube.cs, Namespace: s.ns, CR: s.crObject(d), Logger: s.r.cfg.Logger}
}

// sampleSystem takes one reading of the system monitor, marking the members an
// injected partition isolates (the host still reaches them; their peers do not).
func (s *session) sampleSystem(ctx context.Context, d model.Object) *model.SystemSample {
	mon := s.r.target.SystemMonitor
	if mon == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	smp, err := mon.Sample(sctx, s.monitorEnv(d))
	if err != nil || smp == nil {
		if err != nil {
			s.r.cfg.Logger.Debug("system monitor", "monitor", mon.Name(), "err", err)
		}
		return nil
	}
	s.isoMu.Lock()
	iso := maps.Clone(s.isolated)
	s.isoMu.Unlock()
	for i := range smp.Members {
		m := &smp.Members[i]
		if why, ok := iso[m.Pod]; ok && m.Reachable {
			m.Reachable = false
			m.Error = why
		}
	}
	return smp
}

// isolate records that pod is cut off from its peers by a fault (why), or, with
// why empty, that it no longer is.
func (s *session) isolate(pods []string, why string) {
	s.isoMu.Lock()
	defer s.isoMu.Unlock()
	if s.isolated == nil {
		s.isolated = map[string]string{}
	}
	for _, p := range pods {
		if why == "" {
			delete(s.isolated, p)
		} else {
			s.isolated[p] = why
		}
	}
}

// sampler reads the system monitor in the background while a transition runs.
type sampler struct {
	mu      sync.Mutex
	samples []model.SystemSample
	stop    chan struct{}
	done    chan struct{}
}

// startSampling samples every sampleEvery until finish is called; without a
// system monitor it records nothing.
func (s *session) startSampling(ctx context.Context, d model.Object) *sampler {
	sp := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	if s.r.target.SystemMonitor == nil {
		close(sp.done)
		return sp
	}
	go func() {
		defer close(sp.done)
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			if smp := s.sampleSystem(ctx, d); smp != nil {
				sp.add(*smp)
			}
			select {
			case <-ctx.Done():
				return
			case <-sp.stop:
				return
			case <-t.C:
			}
		}
	}()
	return sp
}

func (sp *sampler) add(smp model.SystemSample) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if len(sp.samples) >= maxSamples {
		kept := sp.samples[:1]
		for i := 1; i < len(sp.samples); i += 2 {
			kept = append(kept, sp.samples[i])
		}
		sp.samples = kept
	}
	sp.samples = append(sp.samples, smp)
}

// finish stops sampling and returns the samples.
func (sp *sampler) finish() []model.SystemSample {
	select {
	case <-sp.stop:
	default:
		close(sp.stop)
	}
	<-sp.done
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return slices.Clone(sp.samples)
}

// fingerprint is what must stay put for the system to count as settled: roles,
// replication links, reachability, the Service's selection and effective config.
func fingerprint(smp *model.SystemSample) string {
	if smp == nil {
		return ""
	}
	type m struct {
		Pod, Role, Follows string
		LinkUp, Reachable  bool
		Config             map[string]string
	}
	v := struct {
		Members  []m
		Selected []string
	}{Selected: smp.Selected}
	for _, x := range smp.Members {
		v.Members = append(v.Members, m{x.Pod, x.Role, x.Follows, x.LinkUp, x.Reachable, x.Config})
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// settleSystem samples the system until its fingerprint has not changed for the
// quiet window (objects may stop changing while a replica still resyncs or a
// returning primary is not yet demoted), at most for limit. It returns the last
// sample and whether the system settled.
//
// prior are the readings taken while the step ran (the sampler's, every
// sampleEvery): those taken after the objects' last change (after) count as
// the start of the window, so a system that has kept its fingerprint since
// then through the quiet window settles at the first fresh reading that still
// shows it, instead of being watched for the quiet window anew.
func (s *session) settleSystem(ctx context.Context, d model.Object, quiet, limit time.Duration, prior []model.SystemSample, after time.Time) (*model.SystemSample, bool) {
	if s.r.target.SystemMonitor == nil {
		return nil, true
	}
	deadline := time.Now().Add(limit)
	last, since := trailingRun(prior, after)
	for {
		smp := s.sampleSystem(ctx, d)
		now := time.Now()
		if smp != nil {
			if last == nil || fingerprint(smp) != fingerprint(last) {
				since = now
			}
			last = smp
			if now.Sub(since) >= quiet {
				return last, true
			}
		}
		if now.After(deadline) || ctx.Err() != nil {
			return last, false
		}
		select {
		case <-ctx.Done():
		case <-time.After(sampleEvery):
		}
	}
}

// trailingRun is the last of samples and when the run of readings with its
// fingerprint that ends the list began, counting only readings taken after
// after (nil when there is none).
func trailingRun(samples []model.SystemSample, after time.Time) (*model.SystemSample, time.Time) {
	var last *model.SystemSample
	var since time.Time
	var fp string
	for i := len(samples) - 1; i >= 0; i-- {
		smp := &samples[i]
		if smp.Taken.IsZero() || smp.Taken.Before(after) {
			break
		}
		if last == nil {
			last, fp = smp, fingerprint(smp)
		} else if fingerprint(smp) != fp {
			break
		}
		since = smp.Taken
	}
	return last, since
}

// startWorkload starts the target's workload once the session's system exists.
func (s *session) startWorkload(ctx context.Context, d model.Object) {
	if s.wl != nil || s.r.target.Workload == nil {
		return
	}
	run, err := s.r.target.Workload.Start(ctx, s.monitorEnv(d))
	if err != nil {
		s.r.cfg.Logger.Warn("start the workload", "workload", s.r.target.Workload.Name(), "err", err)
		return
	}
	s.wl = run
}

// history takes the workload's requests since the previous step and reads back
// every acknowledged write (the durability check judges the read-backs).
func (s *session) history(ctx context.Context) *model.History {
	if s.wl == nil {
		return nil
	}
	h := &model.History{Workload: s.r.target.Workload.Name(), Required: s.wl.Required(), Ops: s.wl.Take()}
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	verify, err := s.wl.Verify(vctx)
	if err != nil {
		s.r.cfg.Logger.Debug("workload read-back", "err", err)
	}
	h.Ops = append(h.Ops, verify...)
	return h
}

// stopWorkload ends the session's workload.
func (s *session) stopWorkload(ctx context.Context) {
	if s.wl == nil {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.wl.Stop(sctx); err != nil {
		s.r.cfg.Logger.Debug("stop the workload", "err", err)
	}
	s.wl = nil
}
