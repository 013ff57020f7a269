package api

import "testing"

// TestWorkStat: a change's stat is one text wherever it is printed: its
// files and lines on its branch, "no change" when it has no commit, no
// " on" without a branch.
func TestWorkStat(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		w    Work
		want string
	}{
		{Work{Branch: "cicy/w-2", Base: "a", Head: "b", Commits: 1, Files: 3, Added: 42, Deleted: 7}, "3 files +42 −7 on cicy/w-2"},
		{Work{Branch: "cicy/w-2", Base: "a", Head: "b", Commits: 2, Files: 1, Added: 1}, "1 file +1 −0 on cicy/w-2"},
		{Work{Branch: "cicy/w-2", Base: "a", Head: "b", Commits: 1}, "0 files +0 −0 on cicy/w-2"},
		{Work{Branch: "cicy/w-2", Base: "a", Head: "a"}, "no change on cicy/w-2"},
		{Work{Base: "a", Head: "b", Files: 2, Added: 5, Deleted: 1}, "2 files +5 −1"},
		{Work{Base: "a", Head: "a"}, "no change"},
		{Work{}, "no change"},
	} {
		if got := c.w.Stat(); got != c.want {
			t.Errorf("%+v: Stat() = %q, want %q", c.w, got, c.want)
		}
	}
}

// TestDiffTextHead: a diff for a master starts with the change's stat,
// its commits and its range.
func TestDiffTextHead(t *testing.T) {
	t.Parallel()
	d := DiffResult{Work: Work{Branch: "cicy/w-2", Base: "0123456789abc", Head: "abcdef0123456", Commits: 1, Files: 2, Added: 18, Deleted: 3}, Diff: "diff --git a/x b/x\n"}
	want := "2 files +18 −3 on cicy/w-2 in 1 commits (0123456789..abcdef0123)\ndiff --git a/x b/x\n"
	if got := DiffText(d, 0); got != want {
		t.Errorf("DiffText = %q, want %q", got, want)
	}
}
