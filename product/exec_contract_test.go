//go:build contract

package product

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/codextest"
	"github.com/needle-dev/needle/product/internal/fakemodel"
	"github.com/needle-dev/needle/product/internal/transcript"
)

// TestContractExec plays the needle exec scenarios (exec_scenarios_test.go)
// with the real codex app-server as the main thread and a loopback fake
// model as the main model. With NEEDLE_UPDATE=1 (make frozen-exec) it
// freezes each main thread into frozen/exec/<name>/main.jsonl, and the real
// worker sessions into frozen/exec/<name>/workers/, for the replay tier.
func TestContractExec(t *testing.T) {
	bin := contractCodex(t)
	update := os.Getenv("NEEDLE_UPDATE") == "1"
	for _, sc := range execScenarios {
		t.Run(sc.name, func(t *testing.T) {
			model, err := fakemodel.Start(sc.script)
			if err != nil {
				t.Fatal(err)
			}
			defer model.Close()
			home := t.TempDir()
			MustWriteFile(t, filepath.Join(home, "config.toml"), fakemodel.ConfigTOML(model.URL()))
			t.Setenv("CODEX_HOME", home)
			env := execEnv{command: []string{bin}}
			if sc.compact {
				exe, err := os.Executable()
				if err != nil {
					t.Fatal(err)
				}
				env.command = []string{exe, compactRelayArg, bin}
			}
			if update {
				env.recordDir = filepath.Join("..", "frozen", "exec", sc.name)
				if err := os.RemoveAll(env.recordDir); err != nil {
					t.Fatal(err)
				}
			}
			if sc.releaseOn != "" {
				env.onEvent = func(ev execEvent, _ *execRun) {
					if ev.Kind == sc.releaseOn {
						model.Release()
					}
				}
			}
			if sc.codexWorker {
				// The real codex worker with its own fake model: it answers with
				// the true location, or, in a cancel scenario, holds its answer
				// until the run is cancelled.
				answer := fakemodel.Script{Responses: []fakemodel.Response{heldResp(greetLocation)}}
				if !sc.cancel {
					if answer, err = fakemodel.LoadScript(bytes.NewReader(codextest.WorkerScript([]byte(greetLocation)))); err != nil {
						t.Fatal(err)
					}
				}
				wmodel, err := fakemodel.Start(answer)
				if err != nil {
					t.Fatal(err)
				}
				defer wmodel.Close()
				whome := t.TempDir()
				MustWriteFile(t, filepath.Join(whome, "config.toml"), fakemodel.ConfigTOML(wmodel.URL()))
				// The worker session is always recorded: the cancel scenario reads
				// it to see the worker's turn interrupted.
				env.workerCodex = &CodexConfig{Command: []string{bin}, Home: whome, Deadline: time.Minute, RecordDir: t.TempDir()}
				if update {
					env.workerCodex.RecordDir = filepath.Join(env.recordDir, "workers")
				}
				if sc.cancel {
					env.cancelCh = wmodel.Holding()
				}
			}
			start := time.Now()
			r := sc.run(t, env)
			sc.check(t, r)
			if sc.checkModel != nil {
				sc.checkModel(t, modelInputs(t, model))
			}
			if sc.cancel {
				checkWorkerInterrupted(t, env.workerCodex.RecordDir)
				checkWorkerGone(t, r.te.data)
				if took := time.Since(start); took > time.Minute {
					t.Errorf("cancellation took %v", took)
				}
			}
		})
	}
}

// checkWorkerGone checks that a cancelled worker left nothing: no checkout,
// no CODEX_HOME, and no process still working in a checkout (the process
// group was killed).
func checkWorkerGone(t *testing.T, data string) {
	t.Helper()
	for _, dir := range []string{"checkouts", "codex-homes"} {
		if entries, _ := os.ReadDir(filepath.Join(data, dir)); len(entries) != 0 {
			t.Errorf("left behind in %s: %v", dir, entries)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	checkouts := filepath.Join(data, "checkouts")
	for _, p := range procs {
		if cwd, err := os.Readlink(p); err == nil && strings.HasPrefix(cwd, checkouts) {
			t.Errorf("process %s still runs in %s", filepath.Base(filepath.Dir(p)), cwd)
		}
	}
}

// checkWorkerInterrupted checks the recorded worker session: Needle sent
// turn/interrupt for its turn, and codex ended the turn "interrupted".
func checkWorkerInterrupted(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("worker transcripts in %s: %v", dir, files)
	}
	tr, err := transcript.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	interrupt, interrupted := false, false
	for _, l := range tr.Lines {
		var m struct {
			Method string
			Params struct{ Turn struct{ Status string } }
		}
		json.Unmarshal(l.Msg, &m)
		interrupt = interrupt || l.Dir == transcript.ClientToServer && m.Method == "turn/interrupt"
		interrupted = interrupted || interrupt && m.Method == "turn/completed" && m.Params.Turn.Status == "interrupted"
	}
	if !interrupt || !interrupted {
		t.Errorf("worker session: turn/interrupt sent %v, turn interrupted %v", interrupt, interrupted)
	}
}
