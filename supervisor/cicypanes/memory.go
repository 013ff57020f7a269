package cicypanes

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

// memoryOf is a cicy pane's turn loop and its memory store.
func (p *Panes) memoryOf(id string) (*cicy.Agent, *memory.Store, error) {
	a, err := p.core.Agent(id)
	if err != nil {
		return nil, nil, err
	}
	return a, a.Memory(), nil
}

// Memories lists a cicy pane's memories.
func (p *Panes) Memories(id string) (api.MemoryList, error) {
	a, st, err := p.memoryOf(id)
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
func (p *Panes) MemoryGet(id, memID string) (memory.Memory, error) {
	_, st, err := p.memoryOf(id)
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
func (p *Panes) MemoryRemove(id, memID string) error {
	if _, err := p.MemoryGet(id, memID); err != nil {
		return err
	}
	_, st, _ := p.memoryOf(id)
	if err := st.Remove(memID); err != nil {
		return api.Failedf("%v", err)
	}
	return nil
}

// MemoryReindex rebuilds a cicy pane's MEMORY.md from its memory files now,
// archiving the weakest first when there are more than the store keeps.
func (p *Panes) MemoryReindex(id string) (api.ReindexResult, error) {
	_, st, err := p.memoryOf(id)
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
func (p *Panes) MemoryFlush(ctx context.Context, id string) (cicy.FlushResult, error) {
	a, _, err := p.memoryOf(id)
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
