// Package redisserver starts real Valkey or Redis servers for tests and
// benchmarks: a standalone server on a free loopback port in a temporary
// directory, and a cluster of masters built with the server's CLI.
//
// The server binary is valkey-server or redis-server from PATH (the CLI
// valkey-cli or redis-cli); Start and StartCluster skip the test, saying so,
// when none is installed. Servers are stopped by t.Cleanup. Readiness is
// awaited by polling PING (and CLUSTER INFO) until a deadline, never by
// fixed sleeps.
//
// Setting FLOWFABRIC_SERVER_CPUS (ServerCPUsEnv) to a CPU list runs every
// server this package (and the bench) starts under taskset on those CPUs,
// so a measurement can give the server cores the client does not use.
package redisserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readyTimeout bounds how long a server may take to accept commands.
const readyTimeout = 20 * time.Second

// Binary returns the server binary found on PATH (valkey-server preferred).
func Binary() (string, bool) { return lookPath("valkey-server", "redis-server") }

// Binaries returns every server binary found on PATH: valkey-server, then
// redis-server.
func Binaries() []string {
	var out []string
	for _, n := range []string{"valkey-server", "redis-server"} {
		if p, ok := lookPath(n); ok {
			out = append(out, p)
		}
	}
	return out
}

// Version returns the first line of "<bin> --version".
func Version(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

// CLI returns the command-line client found on PATH (valkey-cli preferred).
func CLI() (string, bool) { return lookPath("valkey-cli", "redis-cli") }

func lookPath(names ...string) (string, bool) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, true
		}
	}
	return "", false
}

// ServerCPUsEnv names the environment variable that pins the servers
// started here to a CPU list in taskset's syntax ("1", "2-3", "0,2"). Unset
// or empty, a server runs wherever the kernel schedules it. It exists for
// measurements: on a small host the server, the client's goroutines and
// the reader share the cores, and a benchmark can pin the server apart
// (run the client under "taskset -c" with the other CPUs).
const ServerCPUsEnv = "FLOWFABRIC_SERVER_CPUS"

// ServerCPUs returns ServerCPUsEnv's CPU list ("" when unset), or an error
// naming the variable when it is not a CPU list.
func ServerCPUs() (string, error) {
	v := strings.TrimSpace(os.Getenv(ServerCPUsEnv))
	if v == "" {
		return "", nil
	}
	for _, part := range strings.Split(v, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isCPUNumber(lo) || (isRange && !isCPUNumber(hi)) {
			return "", fmt.Errorf("redisserver: %s=%q is not a CPU list (\"1\", \"2-3\", \"0,2\")", ServerCPUsEnv, v)
		}
	}
	return v, nil
}

func isCPUNumber(s string) bool {
	if s == "" || len(s) > 4 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Command returns the command that runs the server binary bin with args:
// directly, or under "taskset -c <cpus>" when ServerCPUsEnv is set. taskset
// executes the server in its own process, so the command's process is the
// server's.
func Command(bin string, args ...string) (*exec.Cmd, error) {
	cpus, err := ServerCPUs()
	if err != nil {
		return nil, err
	}
	if cpus == "" {
		return exec.Command(bin, args...), nil
	}
	ts, err := exec.LookPath("taskset")
	if err != nil {
		return nil, fmt.Errorf("redisserver: %s is set but taskset is not on PATH: %w", ServerCPUsEnv, err)
	}
	return exec.Command(ts, append([]string{"-c", cpus, bin}, args...)...), nil
}

// Options configures a server. The zero value is a server without
// persistence.
type Options struct {
	// AppendOnly turns on the append-only file with appendfsync always, so
	// every acknowledged write survives Kill and Restart.
	AppendOnly bool
	// Config holds extra configuration directives as name/value pairs
	// ("maxmemory", "64mb").
	Config [][2]string
	// Binary is the server binary to run (default: Binary()).
	Binary string

	cluster     bool
	clusterPort int
}

// Server is one running (or stopped) server process.
type Server struct {
	bin  string
	dir  string
	port int
	opts Options

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// ErrNotInstalled reports that no server binary (or CLI) is on PATH.
var ErrNotInstalled = errors.New("redisserver: neither valkey-server nor redis-server is on PATH")

// ErrNoCLI reports that no command-line client is on PATH.
var ErrNoCLI = errors.New("redisserver: neither valkey-cli nor redis-cli is on PATH")

// Start starts a server on a free loopback port, waits until it answers
// PING and registers its shutdown with t.Cleanup. It skips the test when no
// server binary is on PATH.
func Start(tb testing.TB, opts *Options) *Server {
	tb.Helper()
	s, err := New(tb.TempDir(), opts)
	if errors.Is(err, ErrNotInstalled) {
		tb.Skip(err.Error())
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Kill() })
	return s
}

// New starts a server on a free loopback port with its files in dir (which
// must exist) and waits until it answers PING. The caller stops it (Kill or
// Stop); Start is the testing form.
func New(dir string, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if _, err := ServerCPUs(); err != nil {
		return nil, err
	}
	bin, ok := o.Binary, o.Binary != ""
	if !ok {
		bin, ok = Binary()
	}
	if !ok {
		return nil, ErrNotInstalled
	}
	s := &Server{bin: bin, dir: dir, opts: o}
	// A free port can be taken between probing and binding; try a few.
	var err error
	for range 5 {
		if s.port, err = FreePort(); err != nil {
			break
		}
		if o.cluster {
			if s.opts.clusterPort, err = FreePort(); err != nil {
				break
			}
		}
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("redisserver: start: %w", err)
}

// Addr is the server's "host:port".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Port is the server's port.
func (s *Server) Port() int { return s.port }

// Dir is the server's working directory (its data and log).
func (s *Server) Dir() string { return s.dir }

func (s *Server) args() []string {
	a := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--daemonize", "no",
		"--protected-mode", "no",
		"--save", "",
		"--logfile", filepath.Join(s.dir, "server.log"),
		"--dbfilename", "dump.rdb",
	}
	if s.opts.AppendOnly {
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		a = append(a, "--appendonly", "no")
	}
	if s.opts.cluster {
		a = append(a,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, "nodes.conf"),
			"--cluster-node-timeout", "5000",
			"--cluster-port", strconv.Itoa(s.opts.clusterPort),
		)
	}
	for _, kv := range s.opts.Config {
		a = append(a, "--"+kv[0], kv[1])
	}
	return a
}

// start launches the process and waits for PING.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("already running")
	}
	cmd, err := Command(s.bin, s.args()...)
	if err != nil {
		return err
	}
	cmd.Dir = s.dir
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(readyTimeout)
	for {
		if _, err := s.Do("PING"); err == nil {
			return nil
		}
		select {
		case <-done:
			s.cmd = nil
			return fmt.Errorf("server exited at start: %s", s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			s.cmd = nil
			return fmt.Errorf("server did not answer PING within %v: %s", readyTimeout, s.logTail())
		}
		pause()
	}
}

// pause is the polling interval of the readiness loops.
func pause() { time.Sleep(20 * time.Millisecond) }

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// Stop shuts the server down gracefully (SIGTERM: with AppendOnly the
// file is complete) and waits for it to exit. Stopping a stopped server does
// nothing.
func (s *Server) Stop() error { return s.halt(os.Interrupt) }

// Kill kills the server (SIGKILL), as a crash would, and waits for it to
// exit. Killing a stopped server does nothing.
func (s *Server) Kill() error { return s.halt(os.Kill) }

func (s *Server) halt(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	if sig == os.Interrupt {
		sig = syscall.SIGTERM
	}
	err := s.cmd.Process.Signal(sig)
	<-s.done
	s.cmd = nil
	if errors.Is(err, os.ErrProcessDone) {
		err = nil
	}
	return err
}

// Restart stops the server if it runs and starts it again on the same port
// and directory, so it reloads its append-only file.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.start()
}

// Pause stops the server process (SIGSTOP) without ending it: clients'
// connections stay open and their commands wait, as under a long GC or VM
// pause. Resume continues it.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redisserver: not running")
	}
	return s.cmd.Process.Signal(sig)
}

// Running reports whether the process runs.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Do sends one command on a fresh connection and returns the reply as text:
// a status or bulk string, an integer in decimal, an array's elements one per
// line. An error reply is returned as an error.
func (s *Server) Do(args ...string) (string, error) { return Do(s.Addr(), args...) }

// Do sends one command to the server at addr on a fresh connection (no
// HELLO, no client library) and returns the reply as Server.Do does.
func Do(addr string, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	return readReply(bufio.NewReader(conn))
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		parts := make([]string, 0, max(n, 0))
		for range n {
			p, err := readReply(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "\n"), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
