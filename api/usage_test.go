package api

import (
	"errors"
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 10, 15, 30, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2h":                        now.Add(-2 * time.Hour),
		"90m":                       now.Add(-90 * time.Minute),
		"1h30m":                     now.Add(-90 * time.Minute),
		"7d":                        time.Date(2026, 12, 3, 15, 30, 0, 0, time.UTC),
		"2w":                        time.Date(2026, 11, 26, 15, 30, 0, 0, time.UTC),
		"2026-12-01":                time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		"2026-12-01T08:00:00+02:00": time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC),
	} {
		got, err := ParseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yesterday", "-2h", "0s", "0d", "7", "2026-13-01", "7days", "1.5d"} {
		_, err := ParseSince(in, now)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindUsage {
			t.Errorf("ParseSince(%q) = %v; want a usage error", in, err)
		}
	}
}

func TestCheckUsageBy(t *testing.T) {
	for in, want := range map[string]string{"": "pane", "pane": "pane", "model": "model", "day": "day"} {
		if got, err := CheckUsageBy(in); err != nil || got != want {
			t.Errorf("CheckUsageBy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := CheckUsageBy("week"); err == nil {
		t.Error("--by week was accepted")
	}
}
