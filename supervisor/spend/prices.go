package spend

import (
	"strings"

	"github.com/cicy-ai/cicy-agent/cicy/liteconfig"
	"github.com/cicy-ai/cicy-agent/schema"
	"github.com/cicy-ai/cicy-agent/supervisor/gateway"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
}

// defaultPrices are the list prices of well-known models, matched by the
// longest prefix of the model name. lite-config.json's "prices" adds to
// and overrides them; a model matching none has no known cost.
var defaultPrices = map[string]Price{
	"claude-opus-4-5":   {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	"claude-opus-4":     {Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	"claude-sonnet-4":   {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-3-7-sonnet": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-haiku-4-5":  {Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
	"claude-3-5-haiku":  {Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1},
	"gpt-4o-mini":       {Input: 0.15, Output: 0.6, CacheRead: 0.075},
	"gpt-4o":            {Input: 2.5, Output: 10, CacheRead: 1.25},
	"gpt-4.1-mini":      {Input: 0.4, Output: 1.6, CacheRead: 0.1},
	"gpt-4.1":           {Input: 2, Output: 8, CacheRead: 0.5},
	"deepseek-chat":     {Input: 0.27, Output: 1.1, CacheRead: 0.07},
	// Gemini's prices for prompts up to 200k tokens.
	"gemini-2.5-pro":        {Input: 1.25, Output: 10, CacheRead: 0.31},
	"gemini-2.5-flash":      {Input: 0.3, Output: 2.5, CacheRead: 0.075},
	"gemini-2.5-flash-lite": {Input: 0.1, Output: 0.4, CacheRead: 0.025},
	// The scripted model of the demo and the tests costs nothing.
	"script": {},
}

// prices maps model-name prefixes to prices.
type prices map[string]Price

// loadPrices is the built-in table with lite-config.json's "prices" over it.
func loadPrices(home string) (prices, error) {
	out := prices{}
	for k, v := range defaultPrices {
		out[k] = v
	}
	var lc struct {
		Prices map[string]Price `json:"prices"`
	}
	if _, err := liteconfig.Read(home, &lc); err != nil {
		return out, err
	}
	for k, v := range lc.Prices {
		out[k] = v
	}
	return out, nil
}

// of returns the price of a model: the entry with the longest prefix of its
// name.
func (p prices) of(model string) (Price, bool) {
	best, found := "", false
	for k := range p {
		if strings.HasPrefix(model, k) && (!found || len(k) > len(best)) {
			best, found = k, true
		}
	}
	return p[best], found
}

// cost is what usage across models cost, and false when a model's price is
// unknown or there was no usage.
func (p prices) cost(byModel map[string]schema.UsageTotal) (float64, bool) {
	if len(byModel) == 0 {
		return 0, false
	}
	var usd float64
	for model, u := range byModel {
		c, ok := p.costOf(model, u)
		if !ok {
			return 0, false
		}
		usd += c
	}
	return usd, true
}

// costOf is what one model's usage cost, and false when its price is
// unknown.
func (p prices) costOf(model string, u schema.UsageTotal) (float64, bool) {
	pr, ok := p.of(model)
	if !ok {
		return 0, false
	}
	return (float64(u.InputTokens)*pr.Input + float64(u.OutputTokens)*pr.Output +
		float64(u.CacheRead)*pr.CacheRead + float64(u.CacheCreation)*pr.CacheWrite) / 1e6, true
}

// dearest is the dearest price, field by field, of the models served by
// the upstream of an API, and false when none has a price. A price-table
// entry is served by the upstream its name says: claude… by Anthropic's,
// gemini… by Google's, any other (gpt…, o3…, deepseek…, a name of
// lite-config.json's) by the OpenAI API's; the scripted model by none.
func (p prices) dearest(a gateway.API) (Price, bool) {
	want := upstreamOf(a)
	var out Price
	found := false
	for k, pr := range p {
		if k == "script" || upstreamOf(apiOfModel(k)) != want {
			continue
		}
		out, found = dearer(out, pr), true
	}
	return out, found && want != ""
}

// apiOfModel is the API whose upstream serves a model, by its name.
func apiOfModel(model string) gateway.API {
	switch {
	case strings.HasPrefix(model, "claude"):
		return gateway.Anthropic
	case strings.HasPrefix(model, "gemini"):
		return gateway.Gemini
	}
	return gateway.Chat
}

// upstreamOf names the upstream of an API: Anthropic, OpenAI (Chat
// Completions and Responses) or Gemini; "" for none (the scripted model).
func upstreamOf(a gateway.API) string {
	switch a {
	case gateway.Anthropic:
		return "Anthropic"
	case gateway.Chat, gateway.Responses:
		return "OpenAI"
	case gateway.Gemini:
		return "Gemini"
	}
	return ""
}
