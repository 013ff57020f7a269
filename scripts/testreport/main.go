// Command testreport reads `go test -json` on stdin, prints the test
// output as `go test` would, and ends with the ten slowest tests: how
// `make test` shows where the suite's time goes. It exits 1 when a test,
// a package or a build failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// timing is a finished test.
type timing struct {
	pkg, test string
	elapsed   time.Duration
}

func main() {
	failed, slow, err := report(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
	printSlowest(os.Stdout, slow, 10)
	if failed {
		os.Exit(1)
	}
}

// report prints what `go test` prints without -v: a failed test's
// output, the packages' lines, go's own messages. It returns whether
// anything failed and every finished test's time.
func report(in io.Reader, out io.Writer) (failed bool, slow []timing, err error) {
	held := map[string][]string{} // a running test's output, shown if it fails
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			fmt.Fprintln(out, sc.Text()) // not an event: go's own message
			continue
		}
		key := ev.Package + " " + ev.Test
		switch {
		case ev.Action == "output" && ev.Test != "":
			held[key] = append(held[key], ev.Output)
		case (ev.Action == "output" && ev.Output != "PASS\n") || ev.Action == "build-output":
			fmt.Fprint(out, ev.Output) // a package's line ("ok …", "FAIL …"), as without -v
		case ev.Action == "fail" || ev.Action == "build-fail":
			failed = true
		}
		if (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") && ev.Test != "" {
			if ev.Action == "fail" {
				fmt.Fprint(out, strings.Join(held[key], ""))
			}
			delete(held, key)
			slow = append(slow, timing{ev.Package, ev.Test, time.Duration(ev.Elapsed * float64(time.Second))})
		}
	}
	return failed, slow, sc.Err()
}

// printSlowest prints the n slowest tests; a test with subtests (a
// testscript's TestScripts) is left out, its subtests count.
func printSlowest(out io.Writer, all []timing, n int) {
	parents := map[string]bool{}
	for _, t := range all {
		for i := range len(t.test) {
			if t.test[i] == '/' {
				parents[t.pkg+" "+t.test[:i]] = true
			}
		}
	}
	all = slices.DeleteFunc(all, func(t timing) bool { return parents[t.pkg+" "+t.test] })
	slices.SortFunc(all, func(a, b timing) int { return int(b.elapsed - a.elapsed) })
	if len(all) > n {
		all = all[:n]
	}
	if len(all) == 0 {
		return
	}
	fmt.Fprintf(out, "\nThe %d slowest tests:\n", len(all))
	for _, t := range all {
		fmt.Fprintf(out, "  %8s  %s %s\n", t.elapsed.Round(100*time.Millisecond), t.pkg, t.test)
	}
}
