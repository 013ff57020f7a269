package httpapi

import (
	"net/http"

	"github.com/cicy-ai/cicy-agent/api"
)

// memoryRoutes are a cicy pane's memories.
func (a *handler) memoryRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/panes/{id}/memory", func(w http.ResponseWriter, r *http.Request) {
		l, err := a.cfg.Cicy.Memories(r.PathValue("id"))
		Respond(w, l, err)
	})
	mux.HandleFunc("GET /api/panes/{id}/memory/{mem}", func(w http.ResponseWriter, r *http.Request) {
		m, err := a.cfg.Cicy.MemoryGet(r.PathValue("id"), r.PathValue("mem"))
		Respond(w, api.Memory(m), err)
	})
	mux.HandleFunc("DELETE /api/panes/{id}/memory/{mem}", func(w http.ResponseWriter, r *http.Request) {
		err := a.cfg.Cicy.MemoryRemove(r.PathValue("id"), r.PathValue("mem"))
		Respond(w, map[string]bool{"archived": err == nil}, err)
	})
	mux.HandleFunc("POST /api/panes/{id}/memory/flush", func(w http.ResponseWriter, r *http.Request) {
		res, err := a.cfg.Cicy.MemoryFlush(r.Context(), r.PathValue("id"))
		Respond(w, api.FlushResult(res), err)
	})
	mux.HandleFunc("POST /api/panes/{id}/memory/reindex", func(w http.ResponseWriter, r *http.Request) {
		res, err := a.cfg.Cicy.MemoryReindex(r.PathValue("id"))
		Respond(w, res, err)
	})
}
