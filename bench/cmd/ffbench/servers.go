package main

// Server lifecycle: a standalone redis-server, a 3-master cluster and a
// throwaway PostgreSQL, each on free loopback ports in a temporary
// directory, stopped (and their files removed) by cleanup. Children get
// SIGKILL when the bench dies (Pdeathsig), so even a killed bench leaves
// no server behind.
//
// The Redis part shares the main module's internal/redisserver for talking
// to a server; it starts its own processes, with Pdeathsig and the
// -server choice.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowfabric/flowfabric/internal/redisserver"
)

const readyTimeout = 20 * time.Second

// errNotInstalled reports a missing server binary.
var errNotInstalled = errors.New("not installed")

// lookPath returns the first of names found on PATH.
func lookPath(names ...string) (string, bool) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, true
		}
	}
	return "", false
}

// serverFlavor picks the server binaries: "auto" (valkey-server when
// installed, else redis-server, as the main module's test harness does),
// "valkey" or "redis".
var serverFlavor = "auto"

func redisBinary() (string, bool) {
	switch serverFlavor {
	case "valkey":
		return lookPath("valkey-server")
	case "redis":
		return lookPath("redis-server")
	}
	return lookPath("valkey-server", "redis-server")
}

func redisCLI() (string, bool) {
	switch serverFlavor {
	case "valkey":
		return lookPath("valkey-cli")
	case "redis":
		return lookPath("redis-cli")
	}
	return lookPath("valkey-cli", "redis-cli")
}

// proc is one child process.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startProc(cmd *exec.Cmd) (*proc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true // Ctrl-C reaches the bench only; it stops the children itself
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop sends sig, waits up to grace, then kills.
func (p *proc) stop(sig os.Signal, grace time.Duration) {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// redisServer is one redis-server process.
type redisServer struct {
	dir  string
	port int
	p    *proc
}

func (s *redisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// startRedis starts a server with persistence off on a free port.
func startRedis(dir string, cluster bool) (*redisServer, error) {
	bin, ok := redisBinary()
	if !ok {
		return nil, fmt.Errorf("redis-server/valkey-server: %w", errNotInstalled)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 { // a free port can be taken between probe and bind
		port, err := redisserver.FreePort()
		if err != nil {
			return nil, err
		}
		args := []string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--daemonize", "no", "--protected-mode", "no",
			"--save", "", "--appendonly", "no",
			"--logfile", filepath.Join(dir, "server.log"),
		}
		if cluster {
			cport, err := redisserver.FreePort()
			if err != nil {
				return nil, err
			}
			args = append(args, "--cluster-enabled", "yes",
				"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
				"--cluster-node-timeout", "5000", "--cluster-port", strconv.Itoa(cport))
		}
		cmd, err := redisserver.Command(bin, args...)
		if err != nil {
			return nil, err
		}
		cmd.Dir = dir
		p, err := startProc(cmd)
		if err != nil {
			return nil, err
		}
		s := &redisServer{dir: dir, port: port, p: p}
		if lastErr = s.waitPing(); lastErr == nil {
			return s, nil
		}
		p.stop(os.Kill, time.Second)
	}
	return nil, fmt.Errorf("redis-server: %w", lastErr)
}

func (s *redisServer) waitPing() error {
	deadline := time.Now().Add(readyTimeout)
	for {
		if _, err := redisDo(s.Addr(), "PING"); err == nil {
			return nil
		}
		if s.p.exited() {
			b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			return fmt.Errorf("exited at start: %s", tail(string(b), 1000))
		}
		if time.Now().After(deadline) {
			return errors.New("no PONG within " + readyTimeout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *redisServer) Close() {
	if s != nil {
		s.p.stop(os.Kill, 5*time.Second)
	}
}

// redisCluster is a cluster of masters without replicas.
type redisCluster struct{ nodes []*redisServer }

func (c *redisCluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr()
	}
	return out
}

func (c *redisCluster) Close() {
	for _, n := range c.nodes {
		n.Close()
	}
}

func startCluster(dir string, masters int) (*redisCluster, error) {
	cli, ok := redisCLI()
	if !ok {
		return nil, fmt.Errorf("redis-cli/valkey-cli: %w", errNotInstalled)
	}
	c := &redisCluster{}
	for i := range masters {
		n, err := startRedis(filepath.Join(dir, fmt.Sprintf("node%d", i)), true)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		c.Close()
		return nil, fmt.Errorf("cluster create: %w\n%s", err, out)
	}
	deadline := time.Now().Add(readyTimeout)
	want := fmt.Sprintf("cluster_known_nodes:%d", masters)
	for {
		ready := true
		for _, n := range c.nodes {
			info, err := redisDo(n.Addr(), "CLUSTER", "INFO")
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, want) {
				ready = false
				break
			}
		}
		if ready {
			return c, nil
		}
		if time.Now().After(deadline) {
			c.Close()
			return nil, errors.New("cluster not ready within " + readyTimeout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// redisDo sends one command on a fresh connection (no HELLO, no client
// library) and returns the reply as text. The bench uses it for INFO and
// admin commands, so its own traffic is easy to tell apart.
func redisDo(addr string, args ...string) (string, error) { return redisserver.Do(addr, args...) }

// postgres is a throwaway PostgreSQL cluster: initdb into a temporary
// directory, the postmaster run directly (not daemonised, so it dies with
// the bench), trust authentication on loopback.
type postgres struct {
	dir  string
	port int
	p    *proc
	URL  string
}

// pgCredential returns the credential to run PostgreSQL with: PostgreSQL
// refuses to run as root, so as root the "postgres" (or "nobody") user is
// used.
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and neither a postgres nor a nobody user exists")
}

// startPostgres initialises and starts a cluster. durable=false turns off
// fsync and synchronous commit, matching the Redis servers (persistence
// off).
func startPostgres(ctx context.Context, durable bool) (*postgres, error) {
	initdb, ok := lookPath("initdb")
	if !ok {
		return nil, fmt.Errorf("initdb: %w", errNotInstalled)
	}
	bin, ok := lookPath("postgres")
	if !ok {
		return nil, fmt.Errorf("postgres: %w", errNotInstalled)
	}
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ffbench-pg-")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	run := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(name, args...)
		c.Dir = dir
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		return c
	}
	if out, err := run(initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
		"--locale=C", "--no-sync").CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, tail(string(out), 1000))
	}
	var lastErr error
	for range 5 {
		port, err := redisserver.FreePort()
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		args := []string{"-D", data, "-p", strconv.Itoa(port),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir,
			"-c", "max_connections=200", "-c", "shared_buffers=256MB"}
		if !durable {
			args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
		}
		cmd, err := redisserver.Command(bin, args...) // pinned like the Redis servers when asked
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		logf, _ := os.Create(filepath.Join(dir, "postgres.log"))
		if logf != nil {
			cmd.Stdout, cmd.Stderr = logf, logf
		}
		p, err := startProc(cmd)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		pg := &postgres{dir: dir, port: port, p: p,
			URL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)}
		if lastErr = pg.waitReady(ctx); lastErr == nil {
			return pg, nil
		}
		p.stop(os.Kill, time.Second)
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("postgres: %w", lastErr)
}

func (pg *postgres) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(cctx, pg.URL)
		if err == nil {
			err = conn.Ping(cctx)
			_ = conn.Close(cctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		if pg.p.exited() {
			b, _ := os.ReadFile(filepath.Join(pg.dir, "postgres.log"))
			return fmt.Errorf("exited at start: %s", tail(string(b), 1000))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("not ready: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Close stops the postmaster (fast shutdown) and removes its files.
func (pg *postgres) Close() {
	if pg == nil {
		return
	}
	pg.p.stop(syscall.SIGINT, 10*time.Second)
	_ = os.RemoveAll(pg.dir)
}

// cleanups runs registered functions in reverse order, once.
type cleanups struct {
	mu  sync.Mutex
	fns []func()
}

func (c *cleanups) add(f func()) {
	c.mu.Lock()
	c.fns = append(c.fns, f)
	c.mu.Unlock()
}

func (c *cleanups) run() {
	c.mu.Lock()
	fns := c.fns
	c.fns = nil
	c.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}
