package supervisor

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"
)

// TestServeStoppedWhileStarting: a supervisor told to stop (SIGTERM: its
// context cancelled) before its start is over stops gracefully — no
// error, its socket gone — rather than failing on the start it cut short.
func TestServeStoppedWhileStarting(t *testing.T) {
	t.Parallel()
	h := Home{Root: filepath.Join(t.TempDir(), "home")}
	l := logrus.New()
	l.SetOutput(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Serve(ctx, Config{Home: h, Version: "test", Log: logrus.NewEntry(l)}); err != nil {
		t.Fatalf("a supervisor stopped while starting: %v", err)
	}
	if _, err := os.Stat(h.Socket()); !os.IsNotExist(err) {
		t.Errorf("its socket is left (%v)", err)
	}
}
