package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/topology"
)

func (e *env) diffCmd() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "print the change a task or a worker made on its worktree branch (git's own diff)",
		ArgsUsage: "<task|pane|branch>",
		Description: "For a task: the commits it left (base..head, as recorded when it ended done).\n" +
			"For a worker: everything on its branch cicy/<home-tag>/<pane> that the branch it came from\n" +
			"lacks (from where they fork). Workers get a worktree with 'create --worktree'.",
		Flags: []cli.Flag{jsonFlag, rawFlag, &cli.BoolFlag{Name: "stat", Usage: "the summary of files and lines only"}},
		Action: func(c *cli.Context) error {
			a, cl, err := connect(c, 1, 1, "<task|pane|branch>")
			if err != nil {
				return err
			}
			return present(e, c, func() (api.DiffResult, error) { return cl.Diff(c.Context, a[0], c.Bool("stat")) }, func(d api.DiffResult) error {
				for _, n := range d.Notes {
					fmt.Fprintln(e.stderr, "note: "+n)
				}
				if d.Diff == "" {
					fmt.Fprintf(e.stderr, "no change on %s\n", d.Work.Branch)
					return nil
				}
				_, err := io.WriteString(e.stdout, d.Diff)
				return err
			})
		},
	}
}

func (e *env) mergeCmd() *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "merge a task's commit or a worker's branch into the checkout its worktree came from",
		ArgsUsage: "<task|pane|branch>",
		Description: "Fast-forward when the branch merged into has not moved, else a merge commit. A merge\n" +
			"that would conflict changes nothing: it names the conflicting files and exits 1; with\n" +
			"--send-back it becomes a task for the same worker (rebase and resolve), tracked like\n" +
			"any other. A checkout with uncommitted changes to tracked files is refused. A killed\n" +
			"worker's kept branch is taken by its pane id or by its name (cicy/<home-tag>/w-N).",
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "into", Usage: "merge into `BRANCH` (default: the branch checked out in the repository)"},
			&cli.BoolFlag{Name: "send-back", Usage: "on a conflict, give the worker a task to rebase its branch and resolve it"},
		},
		Action: func(c *cli.Context) error {
			a, cl, err := connect(c, 1, 1, "<task|pane|branch>")
			if err != nil {
				return err
			}
			m, err := cl.Merge(c.Context, api.MergeRequest{Target: a[0], Into: c.String("into"), SendBack: c.Bool("send-back")})
			if err != nil {
				return err
			}
			return showThen(e, c, m, func(m api.MergeResult) {
				fmt.Fprintln(e.stdout, api.MergeText(m, "'cicy-agent merge "+a[0]+" --send-back'"))
			}, func(m api.MergeResult) error {
				if len(m.Conflicts) > 0 && m.SentBack == nil {
					return failf("the merge of %s into %s conflicts; nothing was changed", m.Branch, m.Into)
				}
				return nil
			})
		},
	}
}

func (e *env) worktreesCmd() *cli.Command {
	return &cli.Command{
		Name:  "worktrees",
		Usage: "list the workers' git worktrees: pane, branch, ahead/behind, merged, clean",
		Description: "Every worktree of this home's workers, also those of killed panes whose work was\n" +
			"kept (not merged, or not committed). --prune removes those of killed panes that are\n" +
			"clean and merged, with their branches, and lets git forget folders deleted by hand.",
		Flags: []cli.Flag{jsonFlag, &cli.BoolFlag{Name: "prune", Usage: "remove the clean, merged worktrees of panes that are gone"}},
		Action: func(c *cli.Context) error {
			_, cl, err := connect(c, 0, 0, "")
			if err != nil {
				return err
			}
			return present(e, c, func() ([]api.WorktreeInfo, error) { return cl.Worktrees(c.Context, c.Bool("prune")) }, func(ws []api.WorktreeInfo) error {
				if len(ws) == 0 {
					fmt.Fprintln(e.stderr, "no worktrees; a worker gets one with: cicy-agent create <title> --worktree --master <pane> …")
					return nil
				}
				return printWorktrees(e.stdout, ws)
			})
		},
	}
}

func printWorktrees(w io.Writer, ws []api.WorktreeInfo) error {
	return printTable(w, "PANE\tBRANCH\tINTO\tAHEAD\tBEHIND\tCHANGE\tSTATE\tPATH", ws, func(wi api.WorktreeInfo) string {
		pane := wi.Pane
		if wi.Gone {
			pane += " (gone)"
		}
		return fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s", pane, wi.Branch, wi.Target, wi.Ahead, wi.Behind,
			lines(wi.Files, wi.Added, wi.Deleted), worktreeState(wi), wi.Path)
	})
}

// worktreeState is a worktree's state in a few words.
func worktreeState(wi api.WorktreeInfo) string {
	var s []string
	switch {
	case wi.Error != "":
		return "error: " + wi.Error
	case wi.Missing:
		s = append(s, "folder deleted")
	case !wi.Clean:
		s = append(s, "uncommitted changes")
	}
	if wi.Merged {
		s = append(s, "merged")
	} else {
		s = append(s, "not merged")
	}
	return strings.Join(s, ", ")
}

// lines is a change's size: "3 files +42 −7", "-" for none.
func lines(files, added, deleted int) string {
	if files == 0 {
		return "-"
	}
	return api.Lines(files, added, deleted)
}

// workText is a task's change in one line, for tasks show: its stat,
// and its commits when it has some.
func workText(w *api.Work) string {
	if w.Base == w.Head {
		return w.Stat()
	}
	return fmt.Sprintf("%s (%d commits, %s..%s)", w.Stat(), w.Commits, api.ShortRev(w.Base), api.ShortRev(w.Head))
}

// workNote is a worker's unmerged work for status: "  cicy/w-3 2↑ +42 −7",
// "  cicy/w-3 merged"; "" for a worker in no worktree.
func workNote(w topology.Work) string {
	switch {
	case w.Branch == "":
		return ""
	case w.Ahead == 0:
		return "  " + w.Branch + " merged"
	}
	return "  " + w.Branch + " " + api.AheadLines(w.Ahead, w.Added, w.Deleted)
}
