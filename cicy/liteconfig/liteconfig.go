// Package liteconfig reads $CICY_HOME/db/lite-config.json, the one file of
// hand-written settings several parts of cicy-agent share: the cicy
// runtime reads its tool groups, the CLI agents their screen-rule
// overrides, the supervisor its model prices. Each reader decodes only the
// part it wants ([Read] into its own struct), so the file's parts stay
// independent. The package imports nothing of the module: a reader of one
// part depends on none of the others (supervisor/cliagent does not pull
// in the cicy runtime to read its screen rules).
package liteconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Path is $CICY_HOME/db/lite-config.json.
func Path(home string) string { return filepath.Join(home, "db", "lite-config.json") }

// Read decodes lite-config.json into v, which names the part its reader
// wants (tool groups, screen rules, prices). A missing file, or one
// holding nothing but white space, leaves v as it is and reports false.
func Read(home string, v any) (bool, error) {
	path := Path(home)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s is not valid JSON: %v", path, err)
	}
	return true, nil
}
