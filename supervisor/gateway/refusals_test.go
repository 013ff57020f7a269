package gateway

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// TestRefusalsSummed: per source, one line a minute; the next minute's
// line counts the refusals not logged.
func TestRefusalsSummed(t *testing.T) {
	var out bytes.Buffer
	l := logrus.New()
	l.SetOutput(&out)
	now := time.Unix(1000, 0)
	r := NewRefusals()
	r.now = func() time.Time { return now }
	for range 50 {
		r.Log(logrus.NewEntry(l), "a", "/x", "refused")
		r.Log(logrus.NewEntry(l), "b", "/y", "refused")
	}
	now = now.Add(refusalPeriod)
	r.Log(logrus.NewEntry(l), "a", "/"+strings.Repeat("z", 500), "refused")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], "more_refused_last_minute=49") || strings.Count(lines[2], "z") != 199 {
		t.Fatalf("log:\n%s", out.String())
	}
}
