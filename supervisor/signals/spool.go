package signals

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
)

// Spool appends a signal of pane id to its spool file in dir, where
// `cicy-agent hook` keeps signals while no supervisor runs (one JSON
// line; a small O_APPEND write is atomic against other hooks).
func Spool(dir, id string, req api.HookRequest) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode the hook: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, id+".jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open the hook spool: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write the hook spool: %w", err)
	}
	return nil
}

// Replay applies with apply the signals spooled in dir while no
// supervisor ran, in order, and removes them.
func Replay(dir string, apply func(id string, req api.HookRequest) error, log *logrus.Entry) {
	files, _ := filepath.Glob(filepath.Join(dir, "w-*.jsonl"))
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		taken := f + ".replaying"
		if err := os.Rename(f, taken); err != nil {
			continue
		}
		fh, err := os.Open(taken)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		n := 0
		for sc.Scan() {
			var req api.HookRequest
			if json.Unmarshal(sc.Bytes(), &req) != nil {
				continue
			}
			if err := apply(id, req); err == nil {
				n++
			}
		}
		fh.Close()
		os.Remove(taken)
		log.WithFields(logrus.Fields{"pane": id, "hooks": n}).Info("Replayed the hooks spooled while no supervisor ran")
	}
}
