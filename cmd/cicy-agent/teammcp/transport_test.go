package teammcp

import (
	"reflect"
	"strings"
	"testing"
)

// eachLine keeps lines up to its limit, hands a longer one over as bad
// without keeping it, and goes on with the next; blank lines are skipped
// and a last line without a newline counts.
func TestEachLine(t *testing.T) {
	t.Parallel()
	in := "one\n\n  \r\n" + strings.Repeat("y", 300) + "\n" + strings.Repeat("z", 100) + "\r\ntwo"
	var got []string
	err := eachLine(strings.NewReader(in), 100, func(l lineOrErr) bool {
		got = append(got, string(l.line)+"|"+l.bad)
		return true
	})
	want := []string{"one|", "|the line is longer than 100 bytes, the most a message may be", strings.Repeat("z", 100) + "|", "two|"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("eachLine: %q, %v; want %q", got, err, want)
	}
}
