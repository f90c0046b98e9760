package failpoint

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMain lets the test binary play the armed child: it passes the point
// "p" three times with the spec from the environment.
func TestMain(m *testing.M) {
	if spec, ok := os.LookupEnv("FAILPOINT_CHILD"); ok {
		if err := Arm(spec, os.Getenv("FAILPOINT_COUNT")); err != nil {
			os.Exit(3)
		}
		for i := 1; i <= 3; i++ {
			Hit("p")
			os.Stdout.WriteString("passed " + string(rune('0'+i)) + "\n")
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func child(t *testing.T, spec, count string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "FAILPOINT_CHILD="+spec, "FAILPOINT_COUNT="+count)
	out, err := cmd.Output()
	return string(out), err
}

func TestHit_KillsAtTheNthHit(t *testing.T) {
	out, err := child(t, "p:2", "")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v; want death by SIGKILL", err)
	}
	if out != "passed 1\n" {
		t.Fatalf("child printed %q; want only the first pass", out)
	}
}

func TestHit_Counts(t *testing.T) {
	count := filepath.Join(t.TempDir(), "count")
	out, err := child(t, "", count)
	if err != nil || strings.Count(out, "passed") != 3 {
		t.Fatalf("child: %q, %v", out, err)
	}
	data, err := os.ReadFile(count)
	if err != nil || string(data) != "p\np\np\n" {
		t.Fatalf("count file %q, %v", data, err)
	}
}

func TestArm_Malformed(t *testing.T) {
	for _, spec := range []string{"p", "p:0", ":1", "p:x"} {
		if err := Arm(spec, ""); err == nil {
			t.Errorf("Arm(%q) = nil", spec)
		}
	}
}

func TestHit_Unarmed(t *testing.T) {
	Hit("anything") // must return
}
