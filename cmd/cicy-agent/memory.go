package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/clip"
	"github.com/cicy-ai/cicy-agent/cicy/memory"
)

// memoryCmd is `memory ls/show/flush/reindex/rm`: a cicy pane's long-term memory,
// plain files under <workspace>/.cicy/memory/.
func (e *env) memoryCmd() *cli.Command {
	return &cli.Command{
		Name:  "memory",
		Usage: "a cicy pane's long-term memory: ls, show, flush, reindex, rm",
		Subcommands: []*cli.Command{
			{
				Name:      "ls",
				Usage:     "list the memories (index order), unreadable files, and turns waiting for recognition",
				ArgsUsage: "<pane>",
				Flags:     []cli.Flag{jsonFlag},
				Action:    paneAction(e, (*api.Client).Memories, e.printMemories),
			},
			{
				Name:      "show",
				Usage:     "print one memory",
				ArgsUsage: "<pane> <mem_id>",
				Flags:     []cli.Flag{jsonFlag},
				Action: func(c *cli.Context) error {
					return withMemory(c, func(cl *api.Client, id, memID string) error {
						return present(e, c, func() (api.Memory, error) { return cl.Memory(c.Context, id, memID) }, e.printMemory)
					})
				},
			},
			{
				Name:      "flush",
				Usage:     "recognise the buffered turns now (one aux call) and wait for it",
				ArgsUsage: "<pane>",
				Flags:     []cli.Flag{jsonFlag},
				Action: func(c *cli.Context) error {
					return withPane(c, func(cl *api.Client, id string) error {
						r, err := cl.MemoryFlush(c.Context, id)
						if err != nil {
							return err
						}
						return showThen(e, c, r, func(r api.FlushResult) {
							if r.Error == "" {
								fmt.Fprintf(e.stdout, "%d turns recognised, %d memories stored\n", r.Turns, r.Stored)
							}
						}, func(r api.FlushResult) error {
							if r.Error != "" {
								return failf("memory recognition failed (the turns are kept for a retry): %s", r.Error)
							}
							return nil
						})
					})
				},
			},
			{
				Name:  "reindex",
				Usage: "rebuild MEMORY.md (the index every request carries) from the memory files now; hand edits are also picked up by themselves before the next request",
				Description: fmt.Sprintf("More than %d memory files (added by hand, say) are brought down to %d first, as a\n"+
					"write does: the weakest (lowest salience, then oldest) move to %s/, never deleted.",
					memory.MaxMemories, memory.KeepMemories, memory.ArchiveDir),
				ArgsUsage: "<pane>",
				Flags:     []cli.Flag{jsonFlag},
				Action:    paneAction(e, (*api.Client).MemoryReindex, e.printReindex),
			},
			{
				Name:      "rm",
				Usage:     "move a memory to _archive/ (never deleted)",
				ArgsUsage: "<pane> <mem_id>",
				Action: func(c *cli.Context) error {
					return withMemory(c, func(cl *api.Client, id, memID string) error {
						return cl.MemoryRemove(c.Context, id, memID)
					})
				},
			},
		},
	}
}

// withMemory parses the two arguments <pane> <mem_id>, connects (starting
// the supervisor if needed) and runs f.
func withMemory(c *cli.Context, f func(cl *api.Client, id, memID string) error) error {
	a := c.Args().Slice()
	if len(a) != 2 {
		return usagef("usage: cicy-agent memory %s <pane> <mem_id>", c.Command.Name)
	}
	id, err := paneRef(a[0])
	if err != nil {
		return err
	}
	return withClient(c, func(cl *api.Client) error { return f(cl, id, a[1]) })
}

// printMemories is memory ls as text: the table, then what was skipped
// and the count on stderr.
func (e *env) printMemories(l api.MemoryList) error {
	_ = printTable(e.stdout, "MEM_ID\tTYPE\tSAL\tUPDATED\tTITLE", l.Memories, func(m api.Memory) string {
		return fmt.Sprintf("%s\t%s\t%d\t%s\t%s", m.MemID, m.Type, m.Salience, m.Updated.Local().Format("2006-01-02 15:04"), clip.Runes(m.Title, 40))
	})
	for _, p := range l.Problems {
		fmt.Fprintf(e.stderr, "skipped %s: %s\n", p.File, p.Err)
	}
	fmt.Fprintf(e.stderr, "%d memories in %s; %d turns waiting for recognition\n", len(l.Memories), l.Dir, l.Buffered)
	return nil
}

// printMemory is memory show as text.
func (e *env) printMemory(m api.Memory) error {
	fmt.Fprintf(e.stdout, "%s  [%s★%d]  %s\nupdated %s", m.MemID, m.Type, m.Salience, m.Title, m.Updated.Local().Format("2006-01-02 15:04:05"))
	if len(m.Tags) > 0 {
		fmt.Fprintf(e.stdout, "  tags %s", strings.Join(m.Tags, ", "))
	}
	fmt.Fprintf(e.stdout, "\n\n%s\n", m.Content)
	return nil
}

// printReindex is memory reindex as text.
func (e *env) printReindex(r api.ReindexResult) error {
	for _, p := range r.Problems {
		fmt.Fprintf(e.stderr, "skipped %s: %s\n", p.File, p.Err)
	}
	noun := "memories"
	if r.Memories == 1 {
		noun = "memory"
	}
	fmt.Fprintf(e.stdout, "%s rebuilt: it lists %d %s\n", r.Index, r.Memories, noun)
	if r.Archived > 0 {
		fmt.Fprintf(e.stdout, "%d archived to %s: more than %d memories, so the weakest moved until %d remain\n",
			r.Archived, filepath.Join(filepath.Dir(r.Index), memory.ArchiveDir), memory.MaxMemories, memory.KeepMemories)
	}
	return nil
}
