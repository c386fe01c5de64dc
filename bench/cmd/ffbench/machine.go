package main

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/flowfabric/flowfabric/internal/redisserver"
)

// Machine describes where the bench ran.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	// BenchCPUs is the bench process's CPU affinity (Cpus_allowed_list),
	// ServerCPUs the list the servers were pinned to (FLOWFABRIC_SERVER_CPUS;
	// empty: not pinned).
	BenchCPUs  string            `json:"bench_cpus,omitempty"`
	ServerCPUs string            `json:"server_cpus,omitempty"`
	Memory     string            `json:"memory"`
	OS         string            `json:"os"`
	Kernel     string            `json:"kernel"`
	Go         string            `json:"go"`
	Redis      string            `json:"server"`
	Postgres   string            `json:"postgres"`
	LoadAvg    string            `json:"loadavg_at_start"`
	Modules    map[string]string `json:"modules"`
	Note       string            `json:"note"`
}

func machineInfo() Machine {
	m := Machine{
		Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Modules: map[string]string{},
		Note: "every server runs on this host on loopback, sharing its cores with the bench process",
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				m.BenchCPUs = strings.TrimSpace(v)
				break
			}
		}
	}
	if cpus, err := redisserver.ServerCPUs(); err == nil && cpus != "" {
		m.ServerCPUs = cpus
		m.Note = "every server runs on this host on loopback, pinned to CPUs " + cpus + " (" + redisserver.ServerCPUsEnv +
			"); the bench process may use CPUs " + m.BenchCPUs
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				m.Memory = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.TrimSpace(string(b))
	}
	if bin, ok := redisBinary(); ok {
		if out, err := exec.Command(bin, "--version").Output(); err == nil {
			m.Redis = strings.TrimSpace(string(out))
		}
	} else {
		m.Redis = "not installed"
	}
	if bin, ok := lookPath("postgres"); ok {
		if out, err := exec.Command(bin, "--version").Output(); err == nil {
			m.Postgres = strings.TrimSpace(string(out))
		}
	} else {
		m.Postgres = "not installed"
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/valkey-io/valkey-go", "github.com/hibiken/asynq", "github.com/riverqueue/river",
				"github.com/jackc/pgx/v5", "github.com/redis/go-redis/v9":
				m.Modules[d.Path] = d.Version
			}
		}
	}
	return m
}
