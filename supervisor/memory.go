package supervisor

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/memory"
)

// nonNil is a list as the API carries it: never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *Supervisor) memoryOf(id string) (*cicy.Agent, *memory.Store, error) {
	_, a, err := s.agentOf(id)
	if err != nil {
		return nil, nil, err
	}
	return a, a.Memory(), nil
}

// Memories lists a cicy pane's memories.
func (s *Supervisor) Memories(id string) (api.MemoryList, error) {
	a, st, err := s.memoryOf(id)
	if err != nil {
		return api.MemoryList{}, err
	}
	ms, problems, err := st.List()
	if err != nil {
		return api.MemoryList{}, api.Failedf("%v", err)
	}
	return api.MemoryList{Pane: id, Memories: nonNil(ms), Problems: nonNil(problems), Buffered: a.BufferedTurns(), Dir: st.Dir}, nil
}

// MemoryGet returns one memory.
func (s *Supervisor) MemoryGet(id, memID string) (memory.Memory, error) {
	_, st, err := s.memoryOf(id)
	if err != nil {
		return memory.Memory{}, err
	}
	m, err := st.Get(memID)
	if errors.Is(err, memory.ErrNotFound) {
		return m, &api.Error{Kind: api.KindNotFound, Message: "pane " + id + " has no memory " + memID + " (see 'cicy-agent memory ls " + id + "')"}
	}
	if err != nil {
		return m, api.Usagef("%v", err)
	}
	return m, nil
}

// MemoryRemove moves a memory to _archive/.
func (s *Supervisor) MemoryRemove(id, memID string) error {
	if _, err := s.MemoryGet(id, memID); err != nil {
		return err
	}
	_, st, _ := s.memoryOf(id)
	if err := st.Remove(memID); err != nil {
		return api.Failedf("%v", err)
	}
	return nil
}

// MemoryReindex rebuilds a cicy pane's MEMORY.md from its memory files now,
// archiving the weakest first when there are more than the store keeps.
func (s *Supervisor) MemoryReindex(id string) (api.ReindexResult, error) {
	_, st, err := s.memoryOf(id)
	if err != nil {
		return api.ReindexResult{}, err
	}
	archived, problems, err := st.Reindex()
	if err != nil {
		return api.ReindexResult{}, api.Failedf("rebuild %s: %v", filepath.Join(st.Dir, memory.IndexFile), err)
	}
	ms, _, err := st.List()
	if err != nil {
		return api.ReindexResult{}, api.Failedf("%v", err)
	}
	return api.ReindexResult{Pane: id, Memories: len(ms), Archived: archived, Problems: nonNil(problems), Index: filepath.Join(st.Dir, memory.IndexFile)}, nil
}

// MemoryFlush recognises the buffered turns now and waits for it.
func (s *Supervisor) MemoryFlush(ctx context.Context, id string) (cicy.FlushResult, error) {
	a, _, err := s.memoryOf(id)
	if err != nil {
		return cicy.FlushResult{}, err
	}
	select {
	case r := <-a.FlushMemory(true):
		return r, nil
	case <-ctx.Done():
		return cicy.FlushResult{}, api.Failedf("the recognition is still running")
	}
}
