package procid

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

func TestAlive(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.PID != os.Getpid() {
		t.Fatalf("Self().PID = %d, want %d", self.PID, os.Getpid())
	}
	t.Run("OK", func(t *testing.T) {
		if !Alive(self) {
			t.Fatalf("Alive(%v) = false for the running test", self)
		}
	})
	if runtime.GOOS != "linux" {
		return
	}
	t.Run("ReusedPID", func(t *testing.T) {
		if self.Start == "" {
			t.Fatal("no start time on linux")
		}
		other := ID{PID: self.PID, Start: self.Start + "0"}
		if Alive(other) {
			t.Fatalf("Alive(%v) = true although the pid now names a process started at %s", other, self.Start)
		}
	})
	t.Run("Exited", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		id := ID{PID: cmd.Process.Pid}
		id.Start, _ = Start(id.PID)
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if Alive(id) {
			t.Fatalf("Alive(%v) = true after the process was reaped", id)
		}
	})
	t.Run("NoPID", func(t *testing.T) {
		if Alive(ID{}) {
			t.Fatal("Alive(ID{}) = true")
		}
	})
}
