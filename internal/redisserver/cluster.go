package redisserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Cluster is a cluster of master servers without replicas.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts a cluster of masters (NewCluster) and registers its
// shutdown with t.Cleanup. It skips the test when no server binary or CLI is
// on PATH. Redis Cluster needs at least 3 masters.
func StartCluster(tb testing.TB, masters int) *Cluster {
	tb.Helper()
	return StartClusterWith(tb, masters, nil)
}

// StartClusterWith is StartCluster with options for every node (AppendOnly,
// Config, Binary).
func StartClusterWith(tb testing.TB, masters int, opts *Options) *Cluster {
	tb.Helper()
	c, err := NewClusterWith(tb.TempDir(), masters, opts)
	if errors.Is(err, ErrNotInstalled) || errors.Is(err, ErrNoCLI) {
		tb.Skip(err.Error())
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

// NewCluster starts masters servers with cluster mode on (their files in
// subdirectories of dir), joins them with
// "<cli> --cluster create ... --cluster-replicas 0 --cluster-yes" and waits
// until every node reports cluster_state:ok. The caller closes it.
func NewCluster(dir string, masters int) (*Cluster, error) {
	return NewClusterWith(dir, masters, nil)
}

// NewClusterWith is NewCluster with options for every node. A node killed
// and restarted keeps its identity and slots (nodes.conf is in its
// directory), and with AppendOnly its data.
func NewClusterWith(dir string, masters int, opts *Options) (*Cluster, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.cluster = true
	if _, ok := Binary(); !ok {
		return nil, ErrNotInstalled
	}
	cli, ok := CLI()
	if !ok {
		return nil, ErrNoCLI
	}
	c := &Cluster{}
	for i := range masters {
		d := filepath.Join(dir, fmt.Sprintf("node%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			c.Close()
			return nil, err
		}
		n, err := New(d, &o)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redisserver: cluster create: %w\n%s", err, out)
	}
	if err := c.WaitReady(readyTimeout); err != nil {
		c.Close()
		return nil, fmt.Errorf("redisserver: %w", err)
	}
	return c, nil
}

// Close kills every node.
func (c *Cluster) Close() {
	for _, n := range c.Nodes {
		_ = n.Kill()
	}
}

// Addrs lists the nodes' addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// WaitReady polls CLUSTER INFO on every node until all report
// cluster_state:ok and know every node, or the timeout passes.
func (c *Cluster) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	want := fmt.Sprintf("cluster_known_nodes:%d", len(c.Nodes))
	for {
		ready := true
		var last string
		for _, n := range c.Nodes {
			info, err := n.Do("CLUSTER", "INFO")
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, want) {
				ready = false
				last = fmt.Sprintf("%s: %v %s", n.Addr(), err, info)
				break
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster not ready within %v: %s", timeout, last)
		}
		pause()
	}
}
