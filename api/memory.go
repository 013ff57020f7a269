package api

import "time"

// MemoryList is `memory ls --json`: a cicy pane's memories in index order,
// the files that could not be read, and the turns waiting for recognition.
type MemoryList struct {
	Pane     string    `json:"pane"`
	Memories []Memory  `json:"memories"`
	Problems []Problem `json:"problems"`
	Buffered int       `json:"buffered"`
	Dir      string    `json:"dir"`
}

// Memory is one long-term memory of a cicy pane (one file of its memory
// folder): the type the memory store (cicy/memory) reads and writes, too.
type Memory struct {
	MemID    string    `json:"mem_id"`
	Type     string    `json:"type"`
	Title    string    `json:"title"`
	Content  string    `json:"content"`
	Salience int       `json:"salience"`
	Tags     []string  `json:"tags"`
	Updated  time.Time `json:"updated"`
	File     string    `json:"file"` // base name of its file
}

// Problem is a memory file that could not be read (it is skipped), or an
// entry the store refused (File is then the quoted mem_id).
type Problem struct {
	File string `json:"file"`
	Err  string `json:"error"`
}

// ReindexResult is `memory reindex --json`: MEMORY.md rebuilt from the
// memory files, how many it lists, how many were archived (more than 120
// go to _archive/ until 100 remain), and the files it skipped.
type ReindexResult struct {
	Pane     string    `json:"pane"`
	Memories int       `json:"memories"`
	Archived int       `json:"archived"`
	Problems []Problem `json:"problems"`
	Index    string    `json:"index"` // the path of MEMORY.md
}

// FlushResult is `memory flush --json`: the outcome of a recognition.
type FlushResult struct {
	Turns  int    `json:"turns"`  // turns recognised
	Stored int    `json:"stored"` // memories written
	Error  string `json:"error,omitempty"`
}
