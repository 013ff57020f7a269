package modelapi

import "time"

const (
	// defaultModel names the answer's model when neither the model nor
	// the client names one.
	defaultModel  = "fake-model"
	requestIDHdr  = "request-id"
	xRequestIDHdr = "x-request-id"
)

// modelList is the GET /v1/models answer, readable by OpenAI and Anthropic
// clients alike.
func modelList() obj {
	names := []string{defaultModel, "claude-sonnet-4-5", "claude-haiku-4-5", "gpt-5", "gpt-5-codex"}
	now := time.Now().Unix()
	data := make([]obj, 0, len(names))
	for _, m := range names {
		data = append(data, obj{
			"id": m, "object": "model", "created": now, "owned_by": "fake",
			"type": "model", "display_name": m, "created_at": "2025-01-01T00:00:00Z",
		})
	}
	return obj{
		"object": "list", "data": data, "has_more": false,
		"first_id": names[0], "last_id": names[len(names)-1],
	}
}
