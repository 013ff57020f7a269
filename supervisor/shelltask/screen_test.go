package shelltask

import "testing"

func TestOutputAfter(t *testing.T) {
	cases := []struct{ screen, typed, want string }{
		// The output repeats the command's argument: it is not the typed line.
		{"$ echo from-master-tok123456789\nfrom-master-tok123456789\n$", "echo from-master-tok123456789", "from-master-tok123456789"},
		// An earlier, identical command does not hide the latest one.
		{"$ ls\na\n$ ls\nb\n$", "ls", "b"},
		// A long typed line wraps; the output starts after its end.
		{"$ echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\naaaaaaaaaaaaa-end\nout\n$", "echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-end", "out"},
		// Its start scrolled away: the end marks it.
		{"xx-the-end-marker\nresult\n$", "some very long command that is gone now ... xx-the-end-marker", "result"},
		// ... and the output repeats the end.
		{"; echo shell-ok-done\nwaiting\nshell-ok-done\n$", "while sleep 1; do echo waiting; done; echo shell-ok-done", "waiting\nshell-ok-done"},
	}
	for _, c := range cases {
		if got := OutputAfter(c.screen, c.typed); got != c.want {
			t.Errorf("OutputAfter(%q, %q) = %q, want %q", c.screen, c.typed, got, c.want)
		}
	}
}
