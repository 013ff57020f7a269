package supervisor

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
	"github.com/cicy-ai/cicy-agent/schema"
)

// hookOnStart is a store that, when a pane's start is recorded, runs a
// hook for it: the agent's first hook arriving while Create has started
// the process but not yet returned (the moment `cicy-agent hook` reached
// on a busy machine).
type hookOnStart struct {
	Store
	sup  **Supervisor
	errs chan error
}

func (h hookOnStart) SaveRuntime(ctx context.Context, id string, r schema.Runtime) error {
	if r.State.String == string(pane.Starting) && *h.sup != nil {
		_, err := (*h.sup).Hook(ctx, id, api.HookRequest{Agent: "claude", Event: "Notification", Payload: []byte(`{"notification_type":"idle_prompt"}`)})
		h.errs <- err
	}
	return h.Store.SaveRuntime(ctx, id, r)
}

// A hook that comes while Create is starting the pane is not lost: the
// pane is idle when Create returns (it used to stay "starting" for good,
// as "no such pane" went to the agent's stderr).
func TestHookDuringCreate(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte("#!/bin/sh\nexec sleep 100000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	h := Home{Root: filepath.Join(t.TempDir(), "home")}
	if err := h.Prepare(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store, err := schema.Open(ctx, h.DB())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l := logrus.New()
	l.SetOutput(io.Discard)
	var sup *Supervisor
	hs := hookOnStart{Store: store, sup: &sup, errs: make(chan error, 4)}
	s, err := New(ctx, Config{Home: h, Log: logrus.NewEntry(l)}, hs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sup = s
	p, err := s.Create(ctx, api.CreateRequest{Title: "c", Type: "claude", Backend: "pty"})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-hs.errs; err != nil {
		t.Errorf("the hook during Create: %v", err)
	}
	info, err := s.Get(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != string(pane.Idle) || info.Reason != "hook:Notification" {
		t.Errorf("after Create: %s (%s), want idle (hook:Notification)", info.State, info.Reason)
	}
}
