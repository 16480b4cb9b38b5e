// Package controlplane starts a real Kubernetes control plane — etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler built from pinned
// upstream modules — as child processes with TLS everywhere, RBAC and the Node
// authorizer, and service-account token signing.
package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gauntlet-dev/gauntlet/cluster/internal/deathsig"
	"github.com/gauntlet-dev/gauntlet/internal/pidfile"
	"github.com/gauntlet-dev/gauntlet/internal/pki"
)

// ErrComponentExited is reported when a control-plane process ends while the cluster runs.
var ErrComponentExited = errors.New("control-plane component exited")

// ErrPortInUse marks a start that failed because a component could not bind
// its port: a port FreePort found free was taken before the component bound it
// (an outgoing connection's ephemeral port, another cluster starting). Starting
// again with other ports succeeds; see StartFreshPorts.
var ErrPortInUse = errors.New("a control-plane port was taken before the component bound it")

// Config describes one control plane.
type Config struct {
	// Name is the cluster name (used in certificates and the kubeconfig context).
	Name string
	// Dir is the state folder: pki/, etcd/, logs/, pids/ and kubeconfigs go here.
	Dir string
	// Binaries are the programs to run.
	Binaries Binaries
	// Address is where the API server listens and what it advertises (the host's
	// address on the cluster bridge, reachable from pods).
	Address netip.Addr
	// APIServerPort, EtcdPort and EtcdPeerPort must be free (see FreePort).
	APIServerPort, EtcdPort, EtcdPeerPort int
	// ServiceCIDR is the Service ClusterIP range; its first address is the
	// kubernetes Service.
	ServiceCIDR netip.Prefix
	// EtcdFsync keeps etcd's fsync on; off by default because clusters are disposable.
	EtcdFsync bool
	// Log receives progress and component failures.
	Log *slog.Logger
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	cfg     Config
	ca      *pki.CA
	pkiDir  string
	admin   pki.Pair
	adminKC string

	mu     sync.Mutex
	procs  []*component
	failed chan error
	once   sync.Once
}

type component struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	pidPath string
	done    chan struct{}
	err     error
	stopped bool
}

// Start issues the certificates, starts etcd and the API server together (the API
// server retries until etcd answers), waits for /readyz, then starts the
// controller-manager and the scheduler. On error everything started is stopped.
func Start(ctx context.Context, cfg Config) (_ *ControlPlane, err error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	// cp, not the result: "return nil, err" must not leave the cleanup a nil
	// control plane (it panicked, and leaked what had started).
	cp := &ControlPlane{cfg: cfg, pkiDir: filepath.Join(cfg.Dir, "pki"), failed: make(chan error, 4)}
	defer func() {
		if err != nil {
			_ = cp.Stop(context.Background())
			// A later start in the same folder begins afresh (etcd keeps the
			// member's peer URL in its data).
			_ = os.RemoveAll(filepath.Join(cfg.Dir, "etcd"))
		}
	}()
	files, err := cp.issue()
	if err != nil {
		return nil, err
	}
	host := cfg.Address.String()
	etcdURL := "https://127.0.0.1:" + strconv.Itoa(cfg.EtcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(cfg.EtcdPeerPort)
	etcdArgs := []string{
		"--name=gauntlet",
		"--data-dir=" + filepath.Join(cfg.Dir, "etcd"),
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=gauntlet=" + peerURL,
		"--cert-file=" + files["etcd.crt"], "--key-file=" + files["etcd.key"],
		"--client-cert-auth", "--trusted-ca-file=" + files["ca.crt"],
		"--log-level=warn",
	}
	if !cfg.EtcdFsync {
		etcdArgs = append(etcdArgs, "--unsafe-no-fsync")
	}
	if err := cp.run("etcd", cfg.Binaries.Etcd, etcdArgs); err != nil {
		return nil, err
	}
	apiArgs := []string{
		"--advertise-address=" + host,
		"--bind-address=" + host,
		"--secure-port=" + strconv.Itoa(cfg.APIServerPort),
		"--etcd-servers=" + etcdURL,
		"--etcd-cafile=" + files["ca.crt"], "--etcd-certfile=" + files["apiserver-etcd-client.crt"], "--etcd-keyfile=" + files["apiserver-etcd-client.key"],
		"--client-ca-file=" + files["ca.crt"],
		"--tls-cert-file=" + files["apiserver.crt"], "--tls-private-key-file=" + files["apiserver.key"],
		"--service-account-key-file=" + files["sa.pub"],
		"--service-account-signing-key-file=" + files["sa.key"],
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + cfg.ServiceCIDR.String(),
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--kubelet-client-certificate=" + files["apiserver-kubelet-client.crt"],
		"--kubelet-client-key=" + files["apiserver-kubelet-client.key"],
		"--kubelet-certificate-authority=" + files["ca.crt"],
		"--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true",
		"--profiling=false",
		"--enable-priority-and-fairness=false",
		// Admission webhooks and aggregated APIs are dialled at their Service's
		// endpoints (pod IPs, reachable from the host) instead of its ClusterIP,
		// which only pods' Service proxies know.
		"--enable-aggregator-routing=true",
		"--event-ttl=1h",
		"--v=1",
	}
	if err := cp.run("kube-apiserver", cfg.Binaries.APIServer, apiArgs); err != nil {
		return nil, err
	}
	if err := cp.waitReady(ctx); err != nil {
		return nil, err
	}
	cmKC, err := cp.writeKubeconfig("controller-manager", "system:kube-controller-manager")
	if err != nil {
		return nil, err
	}
	schedKC, err := cp.writeKubeconfig("scheduler", "system:kube-scheduler")
	if err != nil {
		return nil, err
	}
	cmArgs := []string{
		"--kubeconfig=" + cmKC,
		"--secure-port=0",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + files["sa.key"],
		"--root-ca-file=" + files["ca.crt"],
		"--cluster-signing-cert-file=" + files["ca.crt"],
		"--cluster-signing-key-file=" + files["ca.key"],
		"--cluster-name=gauntlet-" + cfg.Name,
		"--allocate-node-cidrs=false",
		"--profiling=false",
		"--v=1",
	}
	if err := cp.run("kube-controller-manager", cfg.Binaries.ControllerManager, cmArgs); err != nil {
		return nil, err
	}
	schedArgs := []string{"--kubeconfig=" + schedKC, "--secure-port=0", "--leader-elect=false", "--profiling=false", "--v=1"}
	if err := cp.run("kube-scheduler", cfg.Binaries.Scheduler, schedArgs); err != nil {
		return nil, err
	}
	return cp, nil
}

// issue creates the CA and every certificate the components need and returns the file paths by name.
func (cp *ControlPlane) issue() (map[string]string, error) {
	ca, err := pki.NewCA("gauntlet-" + cp.cfg.Name + "-ca")
	if err != nil {
		return nil, err
	}
	cp.ca = ca
	files := map[string]string{}
	caCrt, err := ca.Write(cp.pkiDir)
	if err != nil {
		return nil, err
	}
	files["ca.crt"], files["ca.key"] = caCrt, filepath.Join(cp.pkiDir, "ca.key")
	svcIP := firstAddr(cp.cfg.ServiceCIDR)
	reqs := map[string]pki.Request{
		"etcd": {CommonName: "etcd", IPs: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}, Server: true, Client: true},
		"apiserver": {CommonName: "kube-apiserver", Server: true,
			IPs:      []net.IP{net.ParseIP("127.0.0.1"), cp.cfg.Address.AsSlice(), svcIP.AsSlice()},
			DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
		"apiserver-etcd-client":    {CommonName: "kube-apiserver-etcd-client", Client: true},
		"apiserver-kubelet-client": {CommonName: KubeletClientCN, Organizations: []string{"system:masters"}, Client: true},
		"admin":                    {CommonName: "gauntlet-admin", Organizations: []string{"system:masters"}, Client: true},
	}
	for name, req := range reqs {
		p, err := ca.Issue(req)
		if err != nil {
			return nil, err
		}
		c, k, err := p.Write(cp.pkiDir, name)
		if err != nil {
			return nil, err
		}
		files[name+".crt"], files[name+".key"] = c, k
		if name == "admin" {
			cp.admin = p
		}
	}
	priv, pub, err := pki.NewSigningKey(cp.pkiDir)
	if err != nil {
		return nil, err
	}
	files["sa.key"], files["sa.pub"] = priv, pub
	cp.adminKC, err = cp.writeKubeconfigPair("admin", cp.admin)
	return files, err
}

// KubeletClientCN is the user the API server presents to kubelets.
const KubeletClientCN = "kube-apiserver-kubelet-client"

// CA is the cluster's certificate authority.
func (cp *ControlPlane) CA() *pki.CA { return cp.ca }

// Server is the API server's URL.
func (cp *ControlPlane) Server() string {
	return "https://" + net.JoinHostPort(cp.cfg.Address.String(), strconv.Itoa(cp.cfg.APIServerPort))
}

// AdminKubeconfig is the path of the cluster-admin kubeconfig.
func (cp *ControlPlane) AdminKubeconfig() string { return cp.adminKC }

// RESTConfig returns a client configuration authenticated with pair.
func (cp *ControlPlane) RESTConfig(pair pki.Pair) *rest.Config {
	return &rest.Config{
		Host:            cp.Server(),
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.ca.CertPEM, CertData: pair.CertPEM, KeyData: pair.KeyPEM},
		QPS:             200,
		Burst:           400,
	}
}

// AdminRESTConfig is a cluster-admin client configuration.
func (cp *ControlPlane) AdminRESTConfig() *rest.Config { return cp.RESTConfig(cp.admin) }

// Failed delivers an error when a component exits while the control plane runs.
func (cp *ControlPlane) Failed() <-chan error { return cp.failed }

// writeKubeconfig issues a client certificate for user and writes a kubeconfig for it.
func (cp *ControlPlane) writeKubeconfig(name, user string, groups ...string) (string, error) {
	p, err := cp.ca.Issue(pki.Request{CommonName: user, Organizations: groups, Client: true})
	if err != nil {
		return "", err
	}
	return cp.writeKubeconfigPair(name, p)
}

func (cp *ControlPlane) writeKubeconfigPair(name string, p pki.Pair) (string, error) {
	ctxName := "gauntlet-" + cp.cfg.Name
	kc := clientcmdapi.NewConfig()
	kc.Clusters[ctxName] = &clientcmdapi.Cluster{Server: cp.Server(), CertificateAuthorityData: cp.ca.CertPEM}
	kc.AuthInfos[ctxName] = &clientcmdapi.AuthInfo{ClientCertificateData: p.CertPEM, ClientKeyData: p.KeyPEM}
	kc.Contexts[ctxName] = &clientcmdapi.Context{Cluster: ctxName, AuthInfo: ctxName}
	kc.CurrentContext = ctxName
	path := filepath.Join(cp.cfg.Dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("controlplane: write kubeconfig %s: %w", path, err)
	}
	return path, nil
}

// run starts one component with its output in logs/NAME.log and a PID record.
func (cp *ControlPlane) run(name, bin string, args []string) error {
	logDir := filepath.Join(cp.cfg.Dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = cp.cfg.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Dies with this process, even a SIGKILLed one (a killed test binary left
	// etcd and kube-apiserver running for half an hour).
	if err := deathsig.Start(cmd); err != nil {
		return fmt.Errorf("controlplane: start %s (%s): %w", name, bin, err)
	}
	c := &component{name: name, cmd: cmd, logPath: logPath, pidPath: filepath.Join(cp.cfg.Dir, "pids", name+pidfile.Suffix), done: make(chan struct{})}
	if err := pidfile.Write(c.pidPath, cmd.Process.Pid); err != nil {
		cp.cfg.Log.Warn("cannot record component PID", "component", name, "err", err)
	}
	cp.mu.Lock()
	cp.procs = append(cp.procs, c)
	cp.mu.Unlock()
	cp.cfg.Log.Debug("started", "component", name, "pid", cmd.Process.Pid)
	go func() {
		c.err = cmd.Wait()
		close(c.done)
		_ = os.Remove(c.pidPath)
		cp.mu.Lock()
		stopped := c.stopped
		cp.mu.Unlock()
		if !stopped {
			last := tail(logPath, 15)
			err := fmt.Errorf("%w: %s (%v); last log lines from %s:\n%s", ErrComponentExited, name, c.err, logPath, last)
			if strings.Contains(last, "address already in use") {
				err = fmt.Errorf("%w: %w", ErrPortInUse, err)
			}
			cp.cfg.Log.Error("control-plane component exited", "component", name, "err", c.err, "log", logPath)
			select {
			case cp.failed <- err:
			default:
			}
		}
	}()
	return nil
}

// waitReady polls the API server's /readyz until it answers ok.
func (cp *ControlPlane) waitReady(ctx context.Context) error {
	cert, err := cp.admin.TLSCertificate()
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: cp.ca.Pool(), Certificates: []tls.Certificate{cert}},
	}}
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for {
		resp, err := client.Get(cp.Server() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case err := <-cp.failed:
			return fmt.Errorf("controlplane: API server never became ready: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("controlplane: waiting for API server: %w", ctx.Err())
		case <-time.After(40 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("controlplane: API server not ready after 90s (last answer: %s); see %s", last, filepath.Join(cp.cfg.Dir, "logs"))
		}
	}
}

// Stop ends every component, newest first: SIGTERM, then SIGKILL after a short grace.
func (cp *ControlPlane) Stop(ctx context.Context) error {
	cp.mu.Lock()
	procs := append([]*component(nil), cp.procs...)
	for _, c := range procs {
		c.stopped = true
	}
	cp.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		c := procs[i]
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			select {
			case <-c.done:
			case <-time.After(5 * time.Second):
				errs = append(errs, fmt.Errorf("controlplane: %s (pid %d) did not exit after SIGKILL", c.name, c.cmd.Process.Pid))
			}
		case <-ctx.Done():
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
	}
	return errors.Join(errs...)
}

// PIDs returns the running components' process IDs by name.
func (cp *ControlPlane) PIDs() map[string]int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	m := map[string]int{}
	for _, c := range cp.procs {
		select {
		case <-c.done:
		default:
			m[c.name] = c.cmd.Process.Pid
		}
	}
	return m
}

// StartFreshPorts starts a control plane as Start does, with ports ports
// chooses (API server, etcd client, etcd peer), and chooses again and retries,
// up to three starts in all, when one was taken before its component bound it
// (ErrPortInUse).
func StartFreshPorts(ctx context.Context, cfg Config, ports func() ([3]int, error)) (*ControlPlane, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	for attempt := 1; ; attempt++ {
		p, err := ports()
		if err != nil {
			return nil, err
		}
		cfg.APIServerPort, cfg.EtcdPort, cfg.EtcdPeerPort = p[0], p[1], p[2]
		cp, err := Start(ctx, cfg)
		if err == nil || !errors.Is(err, ErrPortInUse) || attempt == 3 || ctx.Err() != nil {
			return cp, err
		}
		cfg.Log.Warn("a control-plane port was taken before its component bound it; starting again on other ports", "attempt", attempt, "err", err)
	}
}

// FreePort returns a TCP port on which nothing listens at addr now.
func FreePort(addr string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0, fmt.Errorf("controlplane: find a free port on %s: %w", addr, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// CheckPortFree fails with a clear error when something already listens on addr:port.
func CheckPortFree(addr string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %d on %s is in use (%v): stop what listens there (ss -ltnp 'sport = :%d') or choose another port", port, addr, err, port)
	}
	return l.Close()
}

func firstAddr(p netip.Prefix) netip.Addr { return p.Masked().Addr().Next() }

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
