package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestReport: a passing test's output is held back and a failing one's
// shown; a failure of a test or a build fails the report; the slowest
// list leaves out a test that has subtests.
func TestReport(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"output","Package":"a/p","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Action":"pass","Package":"a/p","Test":"TestOK","Elapsed":0.5}`,
		`{"Action":"output","Package":"a/p","Test":"TestBad","Output":"    bad_test.go:9: boom\n"}`,
		`{"Action":"fail","Package":"a/p","Test":"TestBad","Elapsed":0.2}`,
		`{"Action":"pass","Package":"a/p","Test":"TestScripts/x","Elapsed":9}`,
		`{"Action":"pass","Package":"a/p","Test":"TestScripts","Elapsed":19}`,
		`{"Action":"output","Package":"a/p","Output":"FAIL\ta/p\t20s\n"}`,
		`{"Action":"fail","Package":"a/p","Elapsed":20}`,
	}, "\n")
	var out bytes.Buffer
	failed, slow, err := report(strings.NewReader(in), &out)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v", failed, err)
	}
	if got := out.String(); strings.Contains(got, "=== RUN   TestOK") || !strings.Contains(got, "boom") || !strings.Contains(got, "FAIL\ta/p") {
		t.Fatalf("output:\n%s", got)
	}
	out.Reset()
	printSlowest(&out, slow, 2)
	if got := out.String(); !strings.Contains(got, "9s  a/p TestScripts/x") || strings.Contains(got, "TestScripts\n") || !strings.Contains(got, "TestOK") {
		t.Fatalf("slowest:\n%s", got)
	}
	if failed, _, _ := report(strings.NewReader(`{"Action":"build-fail","ImportPath":"a/q"}`), &out); !failed {
		t.Fatal("a build failure passed")
	}
}
