package api_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const module = "github.com/cicy-ai/cicy-agent"

// TestClientsBuildWithoutTheDaemon: the dashboard depends on the API, not
// on the supervisor; the API itself on none of the daemon (supervisor,
// panes, the cicy runtime, the store); the cicy runtime reports its own
// status and knows nothing of terminal panes.
func TestClientsBuildWithoutTheDaemon(t *testing.T) {
	daemon := []string{module + "/supervisor", module + "/pane", module + "/cicy", module + "/schema"}
	for pkg, banned := range map[string][]string{
		module + "/cmd/cicy-agent/dashboard": {module + "/supervisor"},
		module + "/api":                      daemon,
		module + "/cicy":                     {module + "/pane"},
	} {
		for _, dep := range deps(t, pkg) {
			for _, b := range banned {
				if dep == b || strings.HasPrefix(dep, b+"/") {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}

// deps is `go list -deps pkg`: pkg and every package it imports, directly
// or not.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	list := strings.Fields(goList(t, "-deps", pkg))
	if len(list) == 0 || list[len(list)-1] != pkg {
		t.Fatalf("go list -deps %s listed %q", pkg, list)
	}
	return list
}

// goList is the output of `go list args...`.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list imports: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goBin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// cliagentMayUseOfCicy is all of cicy/ that supervisor/cliagent may depend
// on: the atomic writer of its seed files, and the reading of
// lite-config.json (its screen-rule overrides). The cicy runtime itself
// and its other parts (wire, provider, tools, memory, ...) are none of the
// CLI agents' business.
var cliagentMayUseOfCicy = []string{module + "/cicy/atomicfile", module + "/cicy/liteconfig"}

// TestCLIAgentsWithoutTheRuntime: the CLI agents (supervisor/cliagent)
// depend on nothing of cicy/ but cliagentMayUseOfCicy.
func TestCLIAgentsWithoutTheRuntime(t *testing.T) {
	t.Parallel()
	const pkg = module + "/supervisor/cliagent"
	for _, dep := range deps(t, pkg) {
		if (dep == module+"/cicy" || strings.HasPrefix(dep, module+"/cicy/")) && !slices.Contains(cliagentMayUseOfCicy, dep) {
			t.Errorf("%s depends on %s; of cicy/ it may use only %v", pkg, dep, cliagentMayUseOfCicy)
		}
	}
}

// gatewayImports is every package of the module the gateway may import:
// the model side (the conversation types, the provider's scrubber and usage
// shapes, the model APIs it serves its scripted model on, text clipping)
// and the CLI agents' registry, for the lookups in gatewayUsesOfCliagent.
var gatewayImports = []string{
	module + "/cicy/clip", module + "/cicy/provider", module + "/cicy/wire",
	module + "/supervisor/gateway/modelapi", module + "/supervisor/cliagent",
}

// gatewayUsesOfCliagent is all the gateway names of supervisor/cliagent:
// lookups over every registered agent that name none (AuxKind, with the
// Fingerprint it reads: which side call a request is, by each agent's
// fingerprints), and ShellQuote. What is one agent's stays in its file of
// cliagent; the gateway never looks an agent up by name (Lookup, Kind).
var gatewayUsesOfCliagent = []string{"AuxKind", "Fingerprint", "ShellQuote"}

// TestGatewayKnowsNoAgent: the gateway (supervisor/gateway) imports of the
// module only gatewayImports, depends on neither the daemon
// (supervisor), the store (schema) nor the cicy runtime, and of the CLI
// agents uses only the registry's lookups in gatewayUsesOfCliagent.
func TestGatewayKnowsNoAgent(t *testing.T) {
	t.Parallel()
	const pkg = module + "/supervisor/gateway"
	for _, imp := range strings.Fields(goList(t, "-f", `{{join .Imports " "}}`, pkg)) {
		if strings.HasPrefix(imp, module+"/") && !slices.Contains(gatewayImports, imp) {
			t.Errorf("%s imports %s; of the module it may import only %v", pkg, imp, gatewayImports)
		}
	}
	for _, dep := range deps(t, pkg) {
		if dep == module+"/supervisor" || dep == module+"/cicy" || dep == module+"/schema" || strings.HasPrefix(dep, module+"/schema/") {
			t.Errorf("%s depends on %s", pkg, dep)
		}
	}
	for _, use := range namesUsed(t, pkg, module+"/supervisor/cliagent") {
		if !slices.Contains(gatewayUsesOfCliagent, strings.TrimPrefix(use, "cliagent.")) {
			t.Errorf("%s uses %s; of the CLI agents it may use only %v", pkg, use, gatewayUsesOfCliagent)
		}
	}
}

// TestHTTPAPIKnowsNoRoom: the HTTP API (supervisor/httpapi) depends on
// no part of the supervisor but the web page's (for its session header):
// it asks the daemon through the Daemon it declares, and the rooms
// (spend, notifications, the web page's front) mount their routes or are
// reached through its small interfaces.
func TestHTTPAPIKnowsNoRoom(t *testing.T) {
	t.Parallel()
	const pkg = module + "/supervisor/httpapi"
	for _, dep := range deps(t, pkg) {
		if dep != pkg && dep != module+"/supervisor/web" && (dep == module+"/supervisor" || strings.HasPrefix(dep, module+"/supervisor/")) {
			t.Errorf("%s depends on %s", pkg, dep)
		}
	}
}

// TestRoomsKnowNotTheCore: no room of the supervisor (a package under
// supervisor/) depends on its core (package supervisor): each declares
// the small interfaces it needs of the daemon, the core implements them
// (its wiring files), so a room is read and tested apart from the registry.
func TestRoomsKnowNotTheCore(t *testing.T) {
	t.Parallel()
	const core = module + "/supervisor"
	list := strings.TrimSpace(goList(t, "-f", `{{.ImportPath}} {{join .Deps " "}}`, core+"/..."))
	for _, line := range strings.Split(list, "\n") {
		fields := strings.Fields(line)
		if len(fields) > 0 && fields[0] != core && slices.Contains(fields[1:], core) {
			t.Errorf("%s depends on %s", fields[0], core)
		}
	}
}

// namesUsed lists, as "name.X" at its place, each name of package imp the
// non-test files of pkg use; a dot or blank import is one entry too.
func namesUsed(t *testing.T, pkg, imp string) []string {
	t.Helper()
	fields := strings.Fields(goList(t, "-f", `{{.Dir}} {{join .GoFiles " "}}`, pkg))
	var used []string
	fset := token.NewFileSet()
	for _, name := range fields[1:] {
		f, err := parser.ParseFile(fset, filepath.Join(fields[0], name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		used = append(used, namesIn(f, imp)...)
	}
	return used
}

// namesIn is namesUsed for one file.
func namesIn(f *ast.File, imp string) []string {
	local := ""
	for _, spec := range f.Imports {
		if strings.Trim(spec.Path.Value, `"`) != imp {
			continue
		}
		local = path.Base(imp)
		if spec.Name != nil {
			local = spec.Name.Name
		}
	}
	if local == "" {
		return nil
	}
	if local == "." || local == "_" {
		return []string{local + " import of " + imp}
	}
	var used []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == local {
				used = append(used, path.Base(imp)+"."+sel.Sel.Name)
			}
		}
		return true
	})
	return used
}

// TestProductImportsNoTestHelper: the cicy-agent binary carries none of
// the test helpers: the fake LLM server (cicy/fakellm), the API and
// Postgres test harnesses (cicy/apitest, schema/pgtest), the reaper's
// test double (reaper/reapertest), nor any package named like one (a last
// path element ending in "test" or starting with "test" or "fake", or a
// package under a testdata or testutil folder).
func TestProductImportsNoTestHelper(t *testing.T) {
	const product = module + "/cmd/cicy-agent"
	for _, dep := range deps(t, product) {
		if !strings.HasPrefix(dep, module+"/") {
			continue // the standard library and third-party modules
		}
		if isTestHelper(strings.TrimPrefix(dep, module+"/")) {
			t.Errorf("%s imports the test helper %s", product, dep)
		}
	}
}

// isTestHelper reports whether the module package at path (relative to the
// module) is a test helper by its name or its folder.
func isTestHelper(path string) bool {
	elems := strings.Split(path, "/")
	last := elems[len(elems)-1]
	if strings.HasSuffix(last, "test") || strings.HasPrefix(last, "test") || strings.HasPrefix(last, "fake") {
		return true
	}
	for _, e := range elems {
		if e == "testdata" || e == "testutil" {
			return true
		}
	}
	return false
}

func TestIsTestHelper(t *testing.T) {
	for path, want := range map[string]bool{
		"cicy/fakellm": true, "cicy/apitest": true, "schema/pgtest": true, "reaper/reapertest": true,
		"scripts/testreport": true, "x/testdata/helper": true,
		"supervisor/gateway/modelapi": false, "supervisor/gateway": false, "cicy/provider": false, "reaper": false,
	} {
		if got := isTestHelper(path); got != want {
			t.Errorf("isTestHelper(%q) = %v, want %v", path, got, want)
		}
	}
}
