package api

import (
	"net/http"
	"testing"
)

// TestErrorStatus: each kind of error is answered with its own status,
// and the constructors make the kind they name.
func TestErrorStatus(t *testing.T) {
	for _, tc := range []struct {
		err  *Error
		kind string
		code int
	}{
		{Usagef("bad %s", "flag"), KindUsage, http.StatusBadRequest},
		{PaneNotFound("w-9"), KindNotFound, http.StatusNotFound},
		{Failedf("refused"), KindFailed, http.StatusConflict},
		{&Error{Kind: "other"}, "other", http.StatusConflict},
	} {
		if tc.err.Kind != tc.kind || tc.err.Status() != tc.code {
			t.Errorf("%+v: kind %s status %d, want %s %d", tc.err, tc.err.Kind, tc.err.Status(), tc.kind, tc.code)
		}
	}
	if got := PaneNotFound("w-9").Message; got != "no pane w-9 (see 'cicy-agent ls')" {
		t.Errorf("not found: %q", got)
	}
}
