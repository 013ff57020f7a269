package liteconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// prices is one part a reader may want.
type prices struct {
	Prices map[string]float64 `json:"prices"`
}

func write(t *testing.T, home, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(Path(home)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path(home), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPath(t *testing.T) {
	t.Parallel()
	if got, want := Path("/h"), filepath.Join("/h", "db", "lite-config.json"); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
}

// Every reader of lite-config.json (prices, screen rules, tool groups)
// takes a missing file, a 0-byte one or one of white space as no file:
// its part stays as it was.
func TestReadNoFile(t *testing.T) {
	t.Parallel()
	for name, text := range map[string]string{"missing": "", "0 bytes": "", "white space": " \n\t"} {
		home := t.TempDir()
		if name != "missing" {
			write(t, home, text)
		}
		v := prices{Prices: map[string]float64{"kept": 1}}
		found, err := Read(home, &v)
		if err != nil || found || len(v.Prices) != 1 || v.Prices["kept"] != 1 {
			t.Errorf("Read of a %s file = %v, %v (%v), want not found and v untouched", name, found, err, v)
		}
	}
}

// A file is decoded into the part asked for; the other parts are left alone.
func TestReadOnePart(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	write(t, home, `{"toolGroups": {"core": ["shell"]}, "prices": {"m": 2}}`)
	var v prices
	found, err := Read(home, &v)
	if err != nil || !found || v.Prices["m"] != 2 || len(v.Prices) != 1 {
		t.Fatalf("Read = %v, %v (%v), want found with prices {m: 2}", found, err, v)
	}
}

// A file that is not JSON is an error that names the file.
func TestReadBadJSON(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	write(t, home, `{"prices": `)
	var v prices
	found, err := Read(home, &v)
	if err == nil || found || !strings.Contains(err.Error(), Path(home)+" is not valid JSON") {
		t.Fatalf("Read of bad JSON = %v, %v, want an error naming %s", found, err, Path(home))
	}
}

// A file that cannot be read is an error, not an absent file.
func TestReadUnreadable(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := os.MkdirAll(Path(home), 0o755); err != nil { // a folder where the file should be
		t.Fatal(err)
	}
	var v prices
	if found, err := Read(home, &v); err == nil || found || !strings.Contains(err.Error(), "read "+Path(home)) {
		t.Fatalf("Read of a folder = %v, %v, want a read error", found, err)
	}
}
