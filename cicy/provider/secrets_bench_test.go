package provider_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
)

// BenchmarkScrubAnswer: the scrubber over an API answer that holds no
// secret (the common case): a 120×40 screen as JSON, with its rows'
// line breaks to look across.
func BenchmarkScrubAnswer(b *testing.B) {
	vars := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-api03-" + strings.Repeat("k", 90), "CICY_CLUSTER_TOKEN": "cluster-secret-0123456789"}
	s := provider.NewScrubber(func(k string) string { return vars[k] })
	row := strings.Repeat("some output of a command, ", 5)[:120]
	body, _ := json.Marshal(map[string]string{"id": "w-1", "screen": strings.Repeat(row+"\n", 40)})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		s.Bytes(body)
	}
}
