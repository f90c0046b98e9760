package product

import (
	"path/filepath"
	"testing"
	"time"
)

// TestExec_Replay plays the needle exec scenarios against the main threads
// the real codex recorded (frozen/exec/<name>/main.jsonl, make
// frozen-exec): the replay server matches every message Needle sends —
// the delivery's method (turn/steer or turn/start), its turn and its text
// — and serves what codex answered, refusals included. Where the scenario's
// worker was the real codex, its frozen session
// (frozen/exec/<name>/workers) is replayed too; the cancel scenario's
// worker is the gated stub, cancelled while it waits.
func TestExec_Replay(t *testing.T) {
	for _, sc := range execScenarios {
		t.Run(sc.name, func(t *testing.T) {
			main, err := filepath.Abs(filepath.Join("..", "frozen", "exec", sc.name, "main.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("CODEX_HOME", t.TempDir())
			env := execEnv{command: MustReplayCommand(t, main)}
			if sc.codexWorker && !sc.cancel {
				workers, err := filepath.Abs(filepath.Join("..", "frozen", "exec", sc.name, "workers"))
				if err != nil {
					t.Fatal(err)
				}
				env.workerCodex = &CodexConfig{Command: MustReplayCommand(t, workers), Deadline: time.Minute}
			}
			r := sc.run(t, env)
			sc.check(t, r)
		})
	}
}
