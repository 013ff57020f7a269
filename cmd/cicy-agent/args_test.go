package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestPermuteArgs(t *testing.T) {
	app := newApp(strings.NewReader(""), io.Discard, io.Discard)
	for in, want := range map[string]string{
		"x create t --type shell -- bash -l":       "x create --type shell -- t -- bash -l",
		"x --home h create t --type=shell -- bash": "x --home h create --type=shell -- t -- bash",
		"x create t":                           "x create -- t",
		"x send w-1 echo --no-enter hi":        "x send --no-enter -- w-1 echo hi",
		"x send w-1 -- --literal":              "x send -- w-1 -- --literal",
		"x screen w-1 -n 3":                    "x screen -n 3 -- w-1",
		"x ls --json":                          "x ls --json",
		"x memory ls w-1 --json":               "x memory ls --json -- w-1",
		"x create t --role ab --bogus -- bash": "x create --role ab --bogus -- t -- bash",
	} {
		got := strings.Join(permuteArgs(app, strings.Fields(in)), " ")
		if got != want {
			t.Errorf("permuteArgs(%s)\n got %s\nwant %s", in, got, want)
		}
	}
	if got := permuteArgs(app, []string{"x"}); !slices.Equal(got, []string{"x"}) {
		t.Errorf("no command: %v", got)
	}
}
