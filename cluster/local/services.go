package local

import (
	"context"
	"log/slog"
	"net/netip"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/podnet"
)

// runServiceProxy keeps every pod's ClusterIP rules in line with Services and
// their ready EndpointSlice addresses (the job kube-proxy does on a real node).
func runServiceProxy(ctx context.Context, client kubernetes.Interface, net *podnet.Network, log *slog.Logger) {
	f := informers.NewSharedInformerFactory(client, 10*time.Minute)
	svcInf := f.Core().V1().Services()
	epsInf := f.Discovery().V1().EndpointSlices()
	kick := make(chan struct{}, 1)
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify(kick) },
		UpdateFunc: func(any, any) { notify(kick) },
		DeleteFunc: func(any) { notify(kick) },
	}
	_, _ = svcInf.Informer().AddEventHandler(h)
	_, _ = epsInf.Informer().AddEventHandler(h)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	defer f.Shutdown()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		// Coalesce bursts (a rollout touches many objects at once).
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
		drain(kick)
		svcs, _ := svcInf.Lister().List(labels.Everything())
		slices, _ := epsInf.Lister().List(labels.Everything())
		rules := serviceRules(svcs, slices)
		if err := net.SetServices(ctx, rules); err != nil && ctx.Err() == nil {
			log.Error("cannot update Service rules", "err", err)
		}
	}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func drain(ch chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// serviceRules turns Services and EndpointSlices into ClusterIP proxy rules: one per
// Service port, with the ready IPv4 endpoints serving that port (matched by name).
func serviceRules(svcs []*corev1.Service, slices []*discoveryv1.EndpointSlice) []podnet.Service {
	bySvc := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range slices {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		key := s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]
		bySvc[key] = append(bySvc[key], s)
	}
	var out []podnet.Service
	for _, svc := range svcs {
		ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
		if err != nil || !ip.Is4() {
			continue // headless ("None") or not IPv4
		}
		for _, sp := range svc.Spec.Ports {
			proto := string(sp.Protocol)
			if proto == "" {
				proto = "TCP"
			}
			if proto != "TCP" && proto != "UDP" {
				continue
			}
			rule := podnet.Service{IP: ip, Port: uint16(sp.Port), Protocol: proto}
			seen := map[netip.AddrPort]bool{}
			for _, s := range bySvc[svc.Namespace+"/"+svc.Name] {
				var port int32 = -1
				for _, ep := range s.Ports {
					name := ""
					if ep.Name != nil {
						name = *ep.Name
					}
					epProto := corev1.ProtocolTCP
					if ep.Protocol != nil {
						epProto = *ep.Protocol
					}
					if name == sp.Name && string(epProto) == proto && ep.Port != nil {
						port = *ep.Port
					}
				}
				if port < 0 {
					continue
				}
				for _, e := range s.Endpoints {
					if e.Conditions.Ready != nil && !*e.Conditions.Ready {
						continue
					}
					for _, a := range e.Addresses {
						addr, err := netip.ParseAddr(a)
						if err != nil {
							continue
						}
						ap := netip.AddrPortFrom(addr, uint16(port))
						if !seen[ap] {
							seen[ap] = true
							rule.Endpoints = append(rule.Endpoints, ap)
						}
					}
				}
			}
			sort.Slice(rule.Endpoints, func(i, j int) bool { return rule.Endpoints[i].Compare(rule.Endpoints[j]) < 0 })
			out = append(out, rule)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if c := out[i].IP.Compare(out[j].IP); c != 0 {
			return c < 0
		}
		return out[i].Port < out[j].Port
	})
	return out
}
