package product

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runtimeCheck is needle doctor's runtime line for dataDir.
func runtimeCheck(t *testing.T, dataDir string) doctorCheck {
	t.Helper()
	d := &doctorRun{c: &cli{ctx: context.Background()}, dataDir: dataDir}
	d.runtime()
	if len(d.checks) != 1 {
		t.Fatalf("the runtime check made %d lines", len(d.checks))
	}
	return d.checks[0]
}

// TestDoctor_Runtime: the runtime line is ok while a runtime answers on
// the data directory's socket; once it stopped it warns, naming needle
// serve, and a socket a dead runtime left behind is told as such.
func TestDoctor_Runtime(t *testing.T) {
	data := shortDir(t)
	rt, err := startRuntime(context.Background(), runtimeConfig{DataDir: data, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if c := runtimeCheck(t, data); c.Status != doctorOK || !strings.Contains(c.Detail, "serves "+data) || c.Fix != "" {
		t.Errorf("with a runtime: %+v", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if c := runtimeCheck(t, data); c.Status != doctorWarn || !strings.Contains(c.Detail, "no runtime serves") || c.Fix != "needle serve --data-dir "+data {
		t.Errorf("after shutdown: %+v", c)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(data, socketFileName), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if c := runtimeCheck(t, data); c.Status != doctorWarn || !strings.Contains(c.Detail, "left from a runtime that stopped") {
		t.Errorf("with a stale socket: %+v", c)
	}
}
