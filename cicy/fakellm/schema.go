package fakellm

import (
	"encoding/json"
	"math"
	"strings"
)

const (
	schemaString   = "fake-llm" // the string filled in, cut to maxLength
	maxSchemaDepth = 8
)

// fillJSON is the smallest JSON value that fits a (simple) JSON schema, as
// text. An empty or unusable schema gets "{}".
func fillJSON(schema json.RawMessage) string {
	var s map[string]any
	_ = json.Unmarshal(schema, &s) // a bad schema is treated as no schema
	v := fillSchema(s, 0)
	if v == nil {
		return "{}"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// fillSchema is the smallest value that satisfies schema: const, the first
// enum value, the first anyOf/oneOf/allOf branch, objects with their
// required properties (all of them if none is marked required), arrays of
// minItems elements, strings cut to maxLength and padded to minLength, and
// numbers at their minimum. Anything else is null.
func fillSchema(schema map[string]any, depth int) any {
	if schema == nil || depth > maxSchemaDepth {
		return nil
	}
	if c, ok := schema["const"]; ok {
		return c
	}
	if enum, _ := schema["enum"].([]any); len(enum) > 0 {
		return enum[0]
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, _ := schema[key].([]any); len(alts) > 0 {
			sub, _ := alts[0].(map[string]any)
			return fillSchema(sub, depth+1)
		}
	}
	switch typeOf(schema) {
	case "object":
		return fillObject(schema, depth)
	case "array":
		item, _ := schema["items"].(map[string]any)
		out := make([]any, int(number(schema, "minItems", 0)))
		for i := range out {
			out[i] = fillSchema(item, depth+1)
		}
		return out
	case "string":
		return fillString(schema)
	case "integer":
		return int64(math.Ceil(fillNumber(schema)))
	case "number":
		return fillNumber(schema)
	case "boolean":
		return false
	}
	return nil
}

// typeOf is a schema's type: the first non-null one of a type list, and
// "object" for an untyped schema with properties.
func typeOf(schema map[string]any) string {
	switch t := schema["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok && s != "null" {
				return s
			}
		}
		return "null"
	}
	if _, ok := schema["properties"]; ok {
		return "object"
	}
	return ""
}

func fillObject(schema map[string]any, depth int) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	if req, ok := schema["required"].([]any); ok {
		for _, k := range req {
			if s, ok := k.(string); ok {
				keys = append(keys, s)
			}
		}
	} else {
		for k := range props {
			keys = append(keys, k)
		}
	}
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		sub, _ := props[k].(map[string]any)
		if sub == nil {
			sub = map[string]any{} // required but undeclared: any value, null
		}
		out[k] = fillSchema(sub, depth+1)
	}
	return out
}

func fillString(schema map[string]any) string {
	s := schemaString
	if maxLen := int(number(schema, "maxLength", -1)); maxLen >= 0 && maxLen < len(s) {
		s = s[:maxLen]
	}
	if minLen := int(number(schema, "minLength", 0)); minLen > len(s) {
		s += strings.Repeat("x", minLen-len(s))
	}
	return s
}

// fillNumber is 0 moved within the schema's bounds; an exclusive bound is
// stepped past by one.
func fillNumber(schema map[string]any) float64 {
	v := 0.0
	if lo, ok := schema["minimum"].(float64); ok && v < lo {
		v = lo
	}
	if lo, ok := schema["exclusiveMinimum"].(float64); ok && v <= lo {
		v = lo + 1
	}
	if hi, ok := schema["maximum"].(float64); ok && v > hi {
		v = hi
	}
	if hi, ok := schema["exclusiveMaximum"].(float64); ok && v >= hi {
		v = hi - 1
	}
	return v
}

// number is schema[key] as a number, or def.
func number(schema map[string]any, key string, def float64) float64 {
	if f, ok := schema[key].(float64); ok {
		return f
	}
	return def
}
