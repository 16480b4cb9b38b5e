package machine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
	"github.com/gauntlet-dev/gauntlet/operator/internal/failover"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// fakeWorld is an API server, a StatefulSet controller, a kubelet and the Valkey
// servers of the pods, simulated in memory, deterministic.
type fakeWorld struct {
	objs    map[string]client.Object
	rv      int
	uid     int
	nextIP  int
	servers map[string]*fakeServer       // by IP
	backups map[string]map[string]string // snapshot data by claim name
	real    *realServers                 // when set, pods run real servers
	disks   map[string]fakeDisk          // by pod name (persistence)
	now     time.Time
	events  []Event
	// beforePass, when set, runs before every pass of converge (a client
	// writing, a process the API has forgotten).
	beforePass func(w *fakeWorld)
	// acked are keys acknowledged to a client during the run (by beforePass).
	acked []string
	// violations of invariants seen while executing requests
	violations []string
	// refuse, when set, is the API server's validation: a non-nil error
	// refuses the create or update.
	refuse func(req Request) error
}

type fakeDisk struct {
	data   map[string]string
	offset int64
}

type fakeServer struct {
	ip, pod       string
	up            bool
	role          string
	masterHost    string
	masterPort    int
	linkUp        bool
	data          map[string]string
	offset        int64
	replid, runid string
	priority      int
	config        map[string]string
	password      string
	extraPassword string
}

var knownConfig = map[string]string{
	"maxmemory": "0", "maxmemory-policy": "noeviction", "databases": "16", "io-threads": "1",
	"timeout": "0", "hz": "10", "appendonly": "no", "save": "", "repl-diskless-sync-delay": "5",
	"masterauth": "", "replica-priority": "100",
}

func newFakeWorld() *fakeWorld {
	return &fakeWorld{objs: map[string]client.Object{}, servers: map[string]*fakeServer{}, disks: map[string]fakeDisk{}, backups: map[string]map[string]string{},
		now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), nextIP: 10}
}

func kindOf(o any) string {
	t := reflect.TypeOf(o)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.TrimSuffix(t.Name(), "List")
}

func keyOf(o client.Object) string {
	return kindOf(o) + "/" + o.GetNamespace() + "/" + o.GetName()
}

func gr(o any) schema.GroupResource {
	return schema.GroupResource{Resource: strings.ToLower(kindOf(o)) + "s"}
}

func (w *fakeWorld) add(o client.Object) client.Object {
	o = o.DeepCopyObject().(client.Object)
	w.rv++
	o.SetResourceVersion(strconv.Itoa(w.rv))
	if o.GetUID() == "" {
		w.uid++
		o.SetUID(types.UID(fmt.Sprintf("uid-%d", w.uid)))
	}
	if ts := o.GetCreationTimestamp(); ts.IsZero() {
		o.SetCreationTimestamp(metav1.NewTime(w.now))
	}
	w.objs[keyOf(o)] = o
	return o.DeepCopyObject().(client.Object)
}

func (w *fakeWorld) cr(ns, name string) *v1alpha1.ValkeyCluster {
	o, ok := w.objs["ValkeyCluster/"+ns+"/"+name]
	if !ok {
		return nil
	}
	return o.DeepCopyObject().(*v1alpha1.ValkeyCluster)
}

func (w *fakeWorld) setSpec(ns, name string, f func(*v1alpha1.ValkeyClusterSpec)) {
	c := w.objs["ValkeyCluster/"+ns+"/"+name].(*v1alpha1.ValkeyCluster)
	f(&c.Spec)
	c.Generation++
	w.rv++
	c.ResourceVersion = strconv.Itoa(w.rv)
}

func (w *fakeWorld) pods(ns string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range w.objs {
		if p, ok := o.(*corev1.Pod); ok && p.Namespace == ns && p.Labels[v1alpha1.LabelName] == v1alpha1.AppName {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (w *fakeWorld) exec(req Request) Response {
	w.events = append(w.events, req.Events...)
	if why := rbacCheck(req); why != "" { // as the API server would refuse it
		w.violations = append(w.violations, why)
		var o any = req.Object
		if req.Kind == List {
			o = req.List
		}
		return Response{Err: apierrors.NewForbidden(gr(o), "", errors.New(why))}
	}
	if w.refuse != nil && (req.Kind == Create || req.Kind == Update) {
		if err := w.refuse(req); err != nil {
			return Response{Err: err}
		}
	}
	switch req.Kind {
	case Get:
		o, ok := w.objs[keyOf(req.Object)]
		if !ok {
			return Response{Err: apierrors.NewNotFound(gr(req.Object), req.Object.GetName())}
		}
		return Response{Object: o.DeepCopyObject().(client.Object)}
	case List:
		return w.list(req)
	case Create:
		if _, ok := w.objs[keyOf(req.Object)]; ok {
			return Response{Err: apierrors.NewAlreadyExists(gr(req.Object), req.Object.GetName())}
		}
		if p, ok := req.Object.(*corev1.Pod); ok {
			return Response{Object: w.add(w.startHelperPod(p.DeepCopy()))}
		}
		if st, ok := req.Object.(*appsv1.StatefulSet); ok {
			st = st.DeepCopy()
			st.Generation = 1
			return Response{Object: w.add(st)}
		}
		return Response{Object: w.add(req.Object)}
	case Update, UpdateStatus:
		cur, ok := w.objs[keyOf(req.Object)]
		if !ok {
			return Response{Err: apierrors.NewNotFound(gr(req.Object), req.Object.GetName())}
		}
		if rv := req.Object.GetResourceVersion(); rv != "" && rv != cur.GetResourceVersion() {
			return Response{Err: apierrors.NewConflict(gr(req.Object), req.Object.GetName(), errors.New("resourceVersion changed"))}
		}
		next := req.Object.DeepCopyObject().(client.Object)
		if c, ok := cur.(*v1alpha1.ValkeyCluster); ok {
			n := next.(*v1alpha1.ValkeyCluster)
			if req.Kind == UpdateStatus {
				st := n.Status
				n = c.DeepCopy()
				n.Status = st
			} else {
				n.Status = c.Status
			}
			next = n
		}
		if p, ok := next.(*corev1.Pod); ok {
			w.checkLabel(cur.(*corev1.Pod), p)
			p.Status = cur.(*corev1.Pod).Status
		}
		if st, ok := next.(*appsv1.StatefulSet); ok {
			old := cur.(*appsv1.StatefulSet)
			st.Status = old.Status
			st.Generation = old.Generation
			if !reflect.DeepEqual(st.Spec, old.Spec) {
				st.Generation++
			}
		}
		next.SetUID(cur.GetUID())
		next.SetCreationTimestamp(cur.GetCreationTimestamp())
		return Response{Object: w.add(next)}
	case Delete:
		k := keyOf(req.Object)
		cur, ok := w.objs[k]
		if !ok {
			return Response{Err: apierrors.NewNotFound(gr(req.Object), req.Object.GetName())}
		}
		if uid := req.Object.GetUID(); uid != "" && uid != cur.GetUID() {
			return Response{Err: apierrors.NewConflict(gr(req.Object), req.Object.GetName(), errors.New("UID precondition"))}
		}
		delete(w.objs, k)
		if p, ok := cur.(*corev1.Pod); ok {
			w.killPod(p)
		}
		return Response{}
	case Valkey:
		return w.valkey(req.Valkey)
	}
	panic(fmt.Sprintf("unexpected request %v", req.Kind))
}

// checkLabel records a violation when a pod is labelled primary while its server
// does not report role master, or while another pod carries the label.
func (w *fakeWorld) checkLabel(old, next *corev1.Pod) {
	if next.Labels[v1alpha1.LabelRole] != v1alpha1.RolePrimary || old.Labels[v1alpha1.LabelRole] == v1alpha1.RolePrimary {
		return
	}
	if w.real != nil {
		if in, err := w.real.info(old.Status.PodIP); err != nil || in.Role != valkey.RoleMaster {
			w.violations = append(w.violations, fmt.Sprintf("%s labelled primary while its server does not report role master", next.Name))
		}
	} else if s := w.servers[old.Status.PodIP]; s == nil || !s.up || s.role != "master" {
		w.violations = append(w.violations, fmt.Sprintf("%s labelled primary while its server does not report role master", next.Name))
	}
	for _, p := range w.pods(next.Namespace) {
		if p.Name != next.Name && p.Labels[v1alpha1.LabelRole] == v1alpha1.RolePrimary {
			w.violations = append(w.violations, fmt.Sprintf("%s labelled primary while %s is", next.Name, p.Name))
		}
	}
}

func matches(l, sel map[string]string) bool {
	for k, v := range sel {
		if l[k] != v {
			return false
		}
	}
	return true
}

func (w *fakeWorld) list(req Request) Response {
	switch req.List.(type) {
	case *corev1.PodList:
		out := &corev1.PodList{}
		for _, p := range w.pods(req.Namespace) {
			if matches(p.Labels, req.Labels) {
				out.Items = append(out.Items, *p.DeepCopy())
			}
		}
		return Response{List: out}
	case *corev1.PersistentVolumeClaimList:
		out := &corev1.PersistentVolumeClaimList{}
		for _, o := range w.objs {
			if c, ok := o.(*corev1.PersistentVolumeClaim); ok && c.Namespace == req.Namespace && matches(c.Labels, req.Labels) {
				out.Items = append(out.Items, *c.DeepCopy())
			}
		}
		return Response{List: out}
	}
	panic("list of " + kindOf(req.List))
}

// startHelperPod plays the snapshot and restore pods: a snapshot copies the
// data of the server at $PRIMARY_IP into its claim and succeeds; a restore pod
// serves the data of its claim.
func (w *fakeWorld) startHelperPod(p *corev1.Pod) *corev1.Pod {
	claim := ""
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	switch p.Labels[v1alpha1.LabelComponent] {
	case "backup":
		src := w.servers[p.Spec.Containers[0].Env[0].Value]
		if src == nil {
			p.Status.Phase = corev1.PodFailed
			return p
		}
		w.backups[claim] = copyData(src.data)
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "snapshot", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Message: fmt.Sprintf("sha256:%064x %d\n", len(src.data), 100+len(src.data))}}}}
	case "restore":
		w.nextIP++
		ip := fmt.Sprintf("10.1.0.%d", w.nextIP)
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "valkey", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
		w.servers[ip] = &fakeServer{ip: ip, pod: p.Name, up: true, role: "master", data: copyData(w.backups[claim]), offset: 500,
			runid: "restore", replid: "restore", priority: 100, config: copyData(knownConfig)}
	}
	return p
}

func (w *fakeWorld) killPod(p *corev1.Pod) {
	if w.real != nil {
		w.real.kill(p.Status.PodIP)
		return
	}
	if s := w.servers[p.Status.PodIP]; s != nil {
		delete(w.servers, p.Status.PodIP)
	}
}

// Valkey servers.

func (w *fakeWorld) valkey(cmd *ValkeyCommand) Response {
	if w.real != nil {
		return w.real.do(cmd)
	}
	host, _, _ := net.SplitHostPort(cmd.Endpoint.Addr)
	s := w.servers[host]
	if s == nil || !s.up {
		return Response{Err: fmt.Errorf("dial %s: connection refused", cmd.Endpoint.Addr)}
	}
	if s.password != "" && cmd.Endpoint.Password != s.password && cmd.Endpoint.Password != s.extraPassword &&
		cmd.Endpoint.AltPassword != s.password && cmd.Endpoint.AltPassword != s.extraPassword {
		return Response{Err: fmt.Errorf("connect to %s: WRONGPASS", cmd.Endpoint.Addr)}
	}
	a := cmd.Args
	ok := Response{Reply: valkey.Reply{Kind: valkey.KindString, Str: "OK"}}
	serr := func(msg string) Response { return Response{Err: &valkey.ServerError{Msg: msg}} }
	switch strings.ToUpper(a[0]) {
	case "PING":
		return Response{Reply: valkey.Reply{Kind: valkey.KindString, Str: "PONG"}}
	case "INFO":
		return Response{Reply: valkey.Reply{Kind: valkey.KindString, Str: w.info(s)}}
	case "REPLICAOF":
		if strings.ToUpper(a[1]) == "NO" {
			if s.role != "master" {
				s.role, s.masterHost, s.masterPort, s.linkUp = "master", "", 0, false
				s.replid = fmt.Sprintf("replid-%s-%d", s.pod, w.rv)
			}
			return ok
		}
		port, _ := strconv.Atoi(a[2])
		s.role, s.masterHost, s.masterPort, s.linkUp = "slave", a[1], port, false
		w.sync()
		return ok
	case "CONFIG":
		switch strings.ToUpper(a[1]) {
		case "GET":
			out := valkey.Reply{Kind: valkey.KindArray}
			for _, k := range a[2:] {
				if v, ok := s.config[k]; ok {
					out.Elems = append(out.Elems, valkey.Reply{Kind: valkey.KindString, Str: k}, valkey.Reply{Kind: valkey.KindString, Str: v})
				}
			}
			return Response{Reply: out}
		case "SET":
			next := map[string]string{}
			for i := 2; i+1 < len(a); i += 2 {
				k, v := a[i], a[i+1]
				if _, known := knownConfig[k]; !known {
					return serr("ERR Unknown option or number of arguments for CONFIG SET - '" + k + "'")
				}
				if k == "databases" || k == "io-threads" {
					return serr("ERR CONFIG SET failed (possibly related to argument '" + k + "') - can't set immutable config")
				}
				if k == "maxmemory-policy" && !strings.Contains("noeviction allkeys-lru volatile-lru", v) {
					return serr("ERR CONFIG SET failed (possibly related to argument '" + k + "') - argument(s) must be one of the following")
				}
				if k == "maxmemory" {
					v = strings.ReplaceAll(strings.ToLower(v), "mb", "000000")
				}
				next[k] = v
			}
			for k, v := range next {
				s.config[k] = v
			}
			return ok
		}
	case "FAILOVER":
		host, portS := a[2], a[3]
		port, _ := strconv.Atoi(portS)
		t := w.servers[host]
		if s.role != "master" || t == nil || !t.up || t.role != "slave" || t.masterHost != s.ip || t.masterPort != port || !t.linkUp {
			return serr("ERR FAILOVER target HOST and PORT is not a replica")
		}
		t.role, t.masterHost, t.masterPort, t.linkUp = "master", "", 0, false
		t.replid = fmt.Sprintf("replid-%s-%d", t.pod, w.rv)
		s.role, s.masterHost, s.masterPort = "slave", t.ip, conf.Port
		w.sync()
		return ok
	case "ACL":
		pw := a[3]
		switch {
		case pw == "nopass":
			s.password, s.extraPassword = "", ""
		case strings.HasPrefix(pw, ">"):
			switch {
			case s.password == "": // ends nopass
				s.password = pw[1:]
			case s.password != pw[1:]:
				s.extraPassword = pw[1:]
			}
		case strings.HasPrefix(pw, "<"):
			switch pw[1:] {
			case s.password:
				s.password, s.extraPassword = s.extraPassword, ""
			case s.extraPassword:
				s.extraPassword = ""
			default:
				return serr("ERR no such password")
			}
		}
		return ok
	}
	return serr("ERR unknown command '" + a[0] + "'")
}

func (w *fakeWorld) info(s *fakeServer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Server\r\nredis_version:7.0.15\r\nrun_id:%s\r\nuptime_in_seconds:3\r\n", s.runid)
	fmt.Fprintf(&b, "# Persistence\r\nloading:0\r\n# Replication\r\nrole:%s\r\n", s.role)
	if s.role == "slave" {
		link := "down"
		if s.linkUp {
			link = "up"
		}
		fmt.Fprintf(&b, "master_host:%s\r\nmaster_port:%d\r\nmaster_link_status:%s\r\nmaster_sync_in_progress:0\r\nslave_repl_offset:%d\r\nmaster_link_down_since_seconds:-1\r\nslave_priority:%d\r\n",
			s.masterHost, s.masterPort, link, s.offset, s.priority)
	} else {
		n := 0
		for _, r := range w.servers {
			if r.up && r.role == "slave" && r.masterHost == s.ip && r.linkUp {
				fmt.Fprintf(&b, "slave%d:ip=%s,port=6379,state=online,offset=%d,lag=0\r\n", n, r.ip, r.offset)
				n++
			}
		}
		fmt.Fprintf(&b, "connected_slaves:%d\r\n", n)
	}
	fmt.Fprintf(&b, "master_failover_state:no-failover\r\nmaster_replid:%s\r\nmaster_repl_offset:%d\r\n", s.replid, s.offset)
	fmt.Fprintf(&b, "# Keyspace\r\n")
	if len(s.data) > 0 {
		fmt.Fprintf(&b, "db0:keys=%d,expires=0,avg_ttl=0\r\n", len(s.data))
	}
	return b.String()
}

// sync makes every replica whose primary serves a copy of it (replication is
// instantaneous in this world); a replica of a replica follows its source when
// that one is linked.
func (w *fakeWorld) sync() {
	for round := 0; round < 3; round++ {
		for _, s := range w.servers {
			if !s.up || s.role != "slave" {
				continue
			}
			m := w.servers[s.masterHost]
			if m == nil || !m.up || s.masterPort != conf.Port || (m.role == "slave" && !m.linkUp) || !authOK(m, s.config["masterauth"]) {
				s.linkUp = false
				continue
			}
			s.linkUp = true
			s.data = copyData(m.data)
			s.offset = m.offset
		}
	}
}

// authOK: a replica sending masterauth (AUTH <password>, the two-argument form)
// is accepted by m. Redis refuses that form when m has no password at all.
func authOK(m *fakeServer, masterauth string) bool {
	if m.password == "" {
		return masterauth == ""
	}
	return masterauth == m.password || (m.extraPassword != "" && masterauth == m.extraPassword)
}

func copyData(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// write stores n keys on the pod labelled primary, as a client through the
// Service would, and replicates. It returns the keys acknowledged.
func (w *fakeWorld) write(ns, prefix string, n int) []string {
	var prim *fakeServer
	for _, p := range w.pods(ns) {
		if p.Labels[v1alpha1.LabelRole] == v1alpha1.RolePrimary {
			prim = w.servers[p.Status.PodIP]
		}
	}
	if prim == nil || !prim.up || prim.role != "master" {
		return nil
	}
	var keys []string
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("%s-%d", prefix, i)
		prim.data[k] = "v"
		prim.offset += 10
		keys = append(keys, k)
	}
	w.sync()
	return keys
}

// writeTo writes key on the server at ip, as a client connected to that address
// would, and reports whether a replica acknowledged it (WAIT 1).
func (w *fakeWorld) writeTo(ip, key string) bool {
	s := w.servers[ip]
	if s == nil || !s.up || s.role != "master" {
		return false
	}
	s.data[key] = "v"
	s.offset += 10
	w.sync()
	for _, r := range w.servers {
		if r.up && r.role == "slave" && r.masterHost == ip && r.linkUp {
			return true
		}
	}
	return false
}

// settle plays the StatefulSet controller and the kubelet until the pods match
// the StatefulSet, with their servers, readiness and revisions.
func (w *fakeWorld) settle(ns string) {
	var all []*appsv1.StatefulSet
	for _, o := range w.objs {
		if s, ok := o.(*appsv1.StatefulSet); ok && s.Namespace == ns {
			all = append(all, s)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	for _, sts := range all {
		w.settleSTS(ns, sts)
	}
}

func (w *fakeWorld) settleSTS(ns string, sts *appsv1.StatefulSet) {
	b, _ := json.Marshal(sts.Spec.Template)
	sum := sha256.Sum256(b)
	rev := sts.Name + "-" + hex.EncodeToString(sum[:])[:8]
	sts.Status.UpdateRevision = rev
	sts.Status.Replicas = *sts.Spec.Replicas
	sts.Status.ObservedGeneration = sts.Generation
	persistence := len(sts.Spec.VolumeClaimTemplates) > 0
	want := int(*sts.Spec.Replicas)
	existing := map[string]*corev1.Pod{}
	for _, p := range w.pods(ns) {
		if p.Labels[v1alpha1.LabelInstance] == sts.Name {
			existing[p.Name] = p
		}
	}
	for name, p := range existing {
		ord, _ := strconv.Atoi(name[strings.LastIndex(name, "-")+1:])
		if ord >= want {
			delete(w.objs, keyOf(p))
			w.killPod(p)
		}
	}
	password := ""
	if o, ok := w.objs["Secret/"+ns+"/"+sts.Name+"-auth"]; ok {
		password = string(o.(*corev1.Secret).Data[conf.PasswordKey])
	}
	for ord := 0; ord < want; ord++ {
		name := fmt.Sprintf("%s-%d", sts.Name, ord)
		if _, ok := existing[name]; ok && ord < want {
			continue
		}
		w.nextIP++
		ip := fmt.Sprintf("10.1.0.%d", w.nextIP)
		if w.real != nil {
			ip = fmt.Sprintf("127.77.0.%d", w.nextIP)
		}
		labels := map[string]string{}
		for k, v := range sts.Spec.Template.Labels {
			labels[k] = v
		}
		labels[appsv1.ControllerRevisionHashLabelKey] = rev
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "valkey", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
		}
		w.add(pod)
		if w.real != nil {
			cm := w.objs["ConfigMap/"+ns+"/"+sts.Name+"-config"].(*corev1.ConfigMap)
			w.real.start(ip, name, cm.Data[conf.ConfigMapKey])
			continue
		}
		srv := &fakeServer{ip: ip, pod: name, up: true, role: "slave", masterHost: conf.FenceHost, masterPort: conf.FencePort,
			data: map[string]string{}, runid: fmt.Sprintf("%040x", w.nextIP*7919%1000003), priority: 100,
			config: copyData(knownConfig), replid: "fresh-" + name, password: password}
		srv.config["masterauth"] = password // auth.conf: requirepass and masterauth
		// The file's settings.
		if cm, ok := w.objs["ConfigMap/"+ns+"/"+sts.Name+"-config"]; ok {
			a, _ := conf.ParseApplied(cm.(*corev1.ConfigMap).Data[conf.AppliedKey])
			for k, v := range a.Config {
				if _, known := srv.config[k]; known {
					srv.config[k] = strings.ReplaceAll(strings.ToLower(v), "mb", "000000")
				}
			}
		}
		if d, ok := w.disks[name]; ok && persistence {
			srv.data, srv.offset = copyData(d.data), d.offset
		}
		w.servers[ip] = srv
	}
	w.sync()
	for _, p := range w.pods(ns) {
		if p.Labels[v1alpha1.LabelInstance] != sts.Name {
			continue
		}
		s := w.servers[p.Status.PodIP]
		ready := s != nil && s.up && (s.role == "master" || s.linkUp)
		if w.real != nil {
			ready = w.real.ready(p.Status.PodIP)
		}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
		if s != nil && persistence {
			w.disks[p.Name] = fakeDisk{data: copyData(s.data), offset: s.offset}
		}
	}
}

// health is what the operator's health checks would report now.
func (w *fakeWorld) health(ns string) map[string]failover.Health {
	out := map[string]failover.Health{}
	for _, p := range w.pods(ns) {
		if p.Status.PodIP == "" {
			continue
		}
		addr := net.JoinHostPort(p.Status.PodIP, "6379")
		h := failover.NewHealth(addr, w.now.Add(-time.Hour))
		if w.real != nil {
			if w.real.alive(p.Status.PodIP) {
				h = h.Record(failover.Check{At: w.now, OK: true})
			} else {
				h = h.Record(failover.Check{At: w.now, OK: false, Err: "refused"})
			}
		} else if s := w.servers[p.Status.PodIP]; s != nil && s.up {
			h = h.Record(failover.Check{At: w.now, OK: true})
		} else {
			h = h.Record(failover.Check{At: w.now, OK: false, Err: "refused"})
		}
		out[p.Name] = h
	}
	return out
}

// runPass runs one pass; crashAfter > 0 abandons it after that many executed
// requests. It returns the number of requests executed and the final request.
func (w *fakeWorld) runPass(ns, name string, crashAfter int) (int, Request) {
	in := Input{Cluster: w.cr(ns, name), Health: w.health(ns), Now: w.now}
	var s State
	var resp Response
	steps := 0
	for {
		var req Request
		s, req = Step(in, resp, s)
		if req.Kind == Done {
			w.events = append(w.events, req.Events...)
			return steps, req
		}
		resp = w.exec(req)
		steps++
		if crashAfter > 0 && steps >= crashAfter {
			return steps, Request{Kind: Done, Why: "crashed"}
		}
	}
}

// pass runs one pass and counts its mutating requests; crashAfter > 0 abandons
// it after that many executed requests (the operator crashed).
func (w *fakeWorld) pass(ns, name string, crashAfter int) (mutations, requests int, last Request) {
	in := Input{Cluster: w.cr(ns, name), Health: w.health(ns), Now: w.now}
	var s State
	var resp Response
	for {
		var req Request
		s, req = Step(in, resp, s)
		if req.Kind == Done {
			w.events = append(w.events, req.Events...)
			return mutations, requests, req
		}
		if isMutation(req) {
			mutations++
		}
		resp = w.exec(req)
		requests++
		if crashAfter > 0 && requests >= crashAfter {
			return mutations, requests, Request{Kind: Done, Why: "crashed"}
		}
	}
}

func isMutation(req Request) bool {
	switch req.Kind {
	case Create, Update, Delete, UpdateStatus:
		return true
	case Valkey:
		switch strings.ToUpper(req.Valkey.Args[0]) {
		case "INFO", "PING":
			return false
		case "CONFIG":
			return strings.ToUpper(req.Valkey.Args[1]) != "GET"
		}
		return true
	}
	return false
}

func mutatingCount(w *fakeWorld, ns, name string) (int, Request) {
	n, _, req := w.pass(ns, name, 0)
	return n, req
}

// crashPoint says where converge abandons a pass: pass number (from 0) and the
// number of requests executed before the crash; pass < 0 never crashes.
type crashPoint struct{ pass, after int }

var noCrash = crashPoint{pass: -1}

// converge alternates settling and passes until a pass changes nothing and the
// cluster is Ready; it fails after max rounds. It returns the number of
// requests of each pass.
func (w *fakeWorld) converge(ns, name string, max int) error {
	_, err := w.convergeCrash(ns, name, max, noCrash)
	return err
}

func (w *fakeWorld) convergeCrash(ns, name string, max int, crash crashPoint) ([]int, error) {
	var perPass []int
	for i := 0; i < max; i++ {
		w.settle(ns)
		if w.beforePass != nil {
			w.beforePass(w)
		}
		after := 0
		if crash.pass == len(perPass) {
			after = crash.after
		}
		n, reqs, _ := w.pass(ns, name, after)
		perPass = append(perPass, reqs)
		w.settle(ns)
		w.now = w.now.Add(time.Second)
		c := w.cr(ns, name)
		if n == 0 && after == 0 && c.Status.Phase == v1alpha1.PhaseReady {
			return perPass, nil
		}
	}
	c := w.cr(ns, name)
	return perPass, fmt.Errorf("no convergence after %d rounds: phase %s, conditions %+v", max, c.Status.Phase, c.Status.Conditions)
}

// topologyErrors checks the converged topology: one primary, labelled, master;
// every other pod a linked replica of it, labelled replica.
func (w *fakeWorld) topologyErrors(ns, name string) []string {
	c := w.cr(ns, name)
	var pods []*corev1.Pod
	for _, p := range w.pods(ns) {
		if p.Labels[v1alpha1.LabelInstance] == name {
			pods = append(pods, p)
		}
	}
	prim, errs := labelledPrimary(pods)
	if prim == nil {
		return errs
	}
	if c.Status.Primary != prim.Name {
		errs = append(errs, fmt.Sprintf("status.primary %s, labelled %s", c.Status.Primary, prim.Name))
	}
	ps := w.servers[prim.Status.PodIP]
	if ps == nil || ps.role != "master" {
		errs = append(errs, prim.Name+" is labelled primary but is not master")
	}
	for _, p := range pods {
		if p.Name == prim.Name {
			continue
		}
		s := w.servers[p.Status.PodIP]
		if s == nil || s.role != "slave" || s.masterHost != prim.Status.PodIP || !s.linkUp {
			errs = append(errs, p.Name+" is not a linked replica of the primary")
		}
		if p.Labels[v1alpha1.LabelRole] != v1alpha1.RoleReplica {
			errs = append(errs, p.Name+" is not labelled replica")
		}
	}
	if len(pods) != int(c.Spec.Replicas) {
		errs = append(errs, fmt.Sprintf("%d pods, want %d", len(pods), c.Spec.Replicas))
	}
	return errs
}

// labelledPrimary returns the pod labelled primary, and an error for two such
// pods or for none (then the pod is nil).
func labelledPrimary(pods []*corev1.Pod) (*corev1.Pod, []string) {
	var errs []string
	var prim *corev1.Pod
	for _, p := range pods {
		if p.Labels[v1alpha1.LabelRole] == v1alpha1.RolePrimary {
			if prim != nil {
				errs = append(errs, "two pods labelled primary")
			}
			prim = p
		}
	}
	if prim == nil {
		errs = append(errs, "no pod labelled primary")
	}
	return prim, errs
}

func (w *fakeWorld) clone() *fakeWorld {
	out := newFakeWorld()
	out.rv, out.uid, out.nextIP, out.now, out.beforePass = w.rv, w.uid, w.nextIP, w.now, w.beforePass
	out.acked = append([]string(nil), w.acked...)
	for k, o := range w.objs {
		out.objs[k] = o.DeepCopyObject().(client.Object)
	}
	for k, s := range w.servers {
		c := *s
		c.data = copyData(s.data)
		c.config = copyData(s.config)
		out.servers[k] = &c
	}
	for k, d := range w.disks {
		out.disks[k] = fakeDisk{data: copyData(d.data), offset: d.offset}
	}
	for k, d := range w.backups {
		out.backups[k] = copyData(d)
	}
	return out
}

var _ = policyv1.PodDisruptionBudget{}
