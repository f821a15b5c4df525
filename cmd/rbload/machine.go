package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// describeMachine names what the figures were measured on.
func describeMachine() map[string]string {
	m := map[string]string{
		"go":     runtime.Version(),
		"cpus":   strconv.Itoa(runtime.NumCPU()),
		"os":     runtime.GOOS + "/" + runtime.GOARCH,
		"cpu":    cpuModel(),
		"memory": memTotal(),
	}
	if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		m["commit"] = strings.TrimSpace(string(out))
		if err := exec.Command("git", "diff", "--quiet", "HEAD").Run(); err != nil {
			m["commit"] += " (with uncommitted changes)"
		}
	} else if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				m["commit"] = s.Value
			}
		}
	}
	return m
}

func cpuModel() string {
	return procField("/proc/cpuinfo", "model name")
}

func memTotal() string {
	return procField("/proc/meminfo", "MemTotal")
}

func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
