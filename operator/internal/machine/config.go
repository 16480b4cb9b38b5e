package machine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
	"github.com/gauntlet-dev/gauntlet/operator/internal/resources"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// config brings spec.config into effect while a primary serves:
//   - restart-only keys (checked to exist on the server) go to the ConfigMap, and
//     the changed restart hash rolls the pods;
//   - every other key is set live, on the primary first (which validates it),
//     then on the replicas, and only then written to the ConfigMap; a key the
//     server refuses is reported, not written; a key the server calls immutable
//     is handled as restart-only from then on;
//   - keys removed from spec.config get back the value they had before;
//   - live values that drifted on a server (a pod restarted with an older file, a
//     manual CONFIG SET) are set again.
func (p *pass) config() {
	primary := p.findPod(p.w.status.Primary)
	image := p.c.Spec.Image
	ch := conf.Diff(p.c.Spec.Config, p.w.applied, image)
	reject := map[string]string{}
	for k, why := range ch.Invalid {
		reject[k] = why
	}
	for k, why := range ch.Rejected {
		reject[k] = why
	}
	applied := p.w.applied.Clone()
	dirty := false
	for _, k := range ch.StaleRejections {
		applied = applied.WithoutRejected(k)
		dirty = true
	}
	refuse := func(k, v, why string) {
		reject[k] = why
		applied = applied.WithRejected(k, v, why, image)
		dirty = true
	}

	if len(ch.Restart) > 0 || len(ch.RemoveRestart) > 0 {
		var check []string
		for _, k := range slices.Sorted(maps.Keys(ch.Restart)) {
			if !conf.FileOnly(k) {
				check = append(check, k)
			}
		}
		if len(check) > 0 {
			reply, err := p.valkeyCmd("cfg:exists", *primary, "check restart-only keys exist", valkey.CmdConfigGet(check...)...)
			if err != nil {
				p.valkeyFailed("CONFIG GET on "+primary.name, err)
			}
			known, _ := reply.StringMap()
			for _, k := range check {
				if _, ok := known[k]; !ok {
					refuse(k, ch.Restart[k], "the server has no such parameter")
					delete(ch.Restart, k)
				}
			}
		}
		if len(ch.Restart) > 0 || len(ch.RemoveRestart) > 0 {
			applied = applied.WithRestartChanges(ch)
			dirty = true
			// The StatefulSet's template follows in the next pass, then the roll.
			p.w.cfgRestart = true
			p.w.wantRequeue(100 * time.Millisecond)
		}
	}

	for _, k := range slices.Sorted(maps.Keys(ch.Live)) {
		v := ch.Live[k]
		prevReply, err := p.valkeyCmd("cfg:prev:"+k, *primary, "value before "+k, valkey.CmdConfigGet(k)...)
		if err != nil {
			p.valkeyFailed("CONFIG GET "+k+" on "+primary.name, err)
		}
		prevMap, _ := prevReply.StringMap()
		prev, known := prevMap[k]
		if !known {
			refuse(k, v, "the server has no such parameter")
			continue
		}
		_, err = p.valkeyCmd("cfg:set:"+k, *primary, "apply "+k, valkey.CmdConfigSet(map[string]string{k: v})...)
		if se, ok := valkey.IsServerError(err); ok {
			if conf.IsImmutableReply(se.Msg) {
				applied = applied.WithRestartKey(k, v)
				dirty = true
				p.w.cfgRestart = true
				p.w.wantRequeue(100 * time.Millisecond)
				continue
			}
			refuse(k, v, se.Msg)
			continue
		} else if err != nil {
			p.valkeyFailed("CONFIG SET "+k+" on "+primary.name, err)
		}
		effReply, err := p.valkeyCmd("cfg:eff:"+k, *primary, "effective "+k, valkey.CmdConfigGet(k)...)
		if err != nil {
			p.valkeyFailed("CONFIG GET "+k+" on "+primary.name, err)
		}
		effMap, _ := effReply.StringMap()
		refused := ""
		for _, r := range p.w.pods {
			if r.name == primary.name || !r.observed || r.pod.DeletionTimestamp != nil {
				continue
			}
			_, err := p.valkeyCmd("cfg:set:"+k+":"+r.name, *r, "apply "+k, valkey.CmdConfigSet(map[string]string{k: v})...)
			if se, ok := valkey.IsServerError(err); ok {
				refused = fmt.Sprintf("%s refused it: %s", r.name, se.Msg)
				break
			} else if err != nil {
				p.valkeyFailed("CONFIG SET "+k+" on "+r.name, err)
			}
		}
		if refused != "" {
			// Put the primary back; the key stays out of the file.
			if _, err := p.valkeyCmd("cfg:revert:"+k, *primary, "revert "+k, valkey.CmdConfigSet(map[string]string{k: prev})...); err != nil {
				p.valkeyFailed("revert "+k+" on "+primary.name, err)
			}
			refuse(k, v, refused)
			continue
		}
		applied = applied.WithLive(k, v, effMap[k], prev)
		dirty = true
		p.emit("cfg:"+k+"="+v, corev1.EventTypeNormal, "ConfigApplied", fmt.Sprintf("%s set to %q on every pod", k, v))
	}

	for _, k := range ch.RemoveLive {
		if def, ok := applied.Defaults[k]; ok {
			for _, r := range p.w.pods {
				if !r.observed || r.pod.DeletionTimestamp != nil {
					continue
				}
				_, err := p.valkeyCmd("cfg:reset:"+k+":"+r.name, *r, "restore "+k, valkey.CmdConfigSet(map[string]string{k: def})...)
				if err != nil {
					if _, ok := valkey.IsServerError(err); !ok {
						p.valkeyFailed("restore "+k+" on "+r.name, err)
					}
				}
			}
		}
		applied = applied.WithoutLive(k)
		dirty = true
	}

	if dirty {
		p.w.applied = applied
		next, changed := resources.UpdateConfigMap(p.desired(), p.w.cm)
		if changed {
			obj, err := p.write("cfg:configmap", Update, next, "record the accepted configuration")
			if err != nil {
				p.apiErr("write the ConfigMap", err)
			}
			p.w.cm = obj.(*corev1.ConfigMap)
		}
	}

	// Drift of live keys.
	if keys := p.w.applied.LiveKeys(); len(keys) > 0 {
		for _, r := range p.w.pods {
			if !r.observed || r.pod.DeletionTimestamp != nil {
				continue
			}
			reply, err := p.valkeyCmd("cfg:drift:"+r.name, *r, "check live configuration", valkey.CmdConfigGet(keys...)...)
			if err != nil {
				p.valkeyFailed("CONFIG GET on "+r.name, err)
			}
			got, _ := reply.StringMap()
			drift := p.w.applied.Drift(got)
			if len(drift) == 0 {
				continue
			}
			set := map[string]string{}
			for _, k := range drift {
				set[k] = p.w.applied.Config[k]
			}
			_, err = p.valkeyCmd("cfg:fix:"+r.name, *r, "fix drifted "+strings.Join(drift, ","), valkey.CmdConfigSet(set)...)
			if se, ok := valkey.IsServerError(err); ok {
				reject[strings.Join(drift, ",")] = fmt.Sprintf("%s refused the recorded value: %s", r.name, se.Msg)
			} else if err != nil {
				p.valkeyFailed("CONFIG SET on "+r.name, err)
			}
			p.emit("cfg:drift:"+r.name, corev1.EventTypeNormal, "ConfigDriftCorrected", fmt.Sprintf("%s had drifted on %s: set again", strings.Join(drift, ", "), r.name))
		}
	}

	p.w.cfgReject = reject
	rest := conf.Diff(p.c.Spec.Config, p.w.applied, image)
	for _, k := range slices.Sorted(maps.Keys(rest.Live)) {
		if _, bad := reject[k]; !bad {
			p.w.cfgPending = append(p.w.cfgPending, k)
		}
	}
	if len(p.w.cfgPending) > 0 {
		p.w.wantRequeue(time.Second)
	}
	if len(reject) > 0 {
		p.w.wantRequeue(30 * time.Second)
	}
}
