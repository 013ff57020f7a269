package gateway

import (
	"strings"
	"testing"
)

// TestTokens: a pane's token names it, hashed; a new token of the pane
// replaces its old one; a pane forgotten has none; the stored ones count.
func TestTokens(t *testing.T) {
	t.Parallel()
	stored, storedHash, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stored, TokenPrefix) || len(stored) != len(TokenPrefix)+48 || storedHash != HashToken(stored) || storedHash == stored {
		t.Fatalf("token %q, hash %q", stored, storedHash)
	}
	tokens := NewTokens(map[string]string{storedHash: "w-1"})
	if id, ok := tokens.Pane(stored); !ok || id != "w-1" {
		t.Fatalf("stored token: %q %v", id, ok)
	}
	if _, ok := tokens.Pane(storedHash); ok {
		t.Fatal("the hash itself was taken for a token")
	}
	fresh, freshHash, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	tokens.Set("w-1", freshHash)
	if _, ok := tokens.Pane(stored); ok {
		t.Error("the pane's old token still names it")
	}
	if id, ok := tokens.Pane(fresh); !ok || id != "w-1" {
		t.Errorf("new token: %q %v", id, ok)
	}
	other, otherHash, _ := NewToken()
	tokens.Set("w-2", otherHash)
	tokens.Forget("w-1")
	if _, ok := tokens.Pane(fresh); ok {
		t.Error("a forgotten pane's token still names it")
	}
	if id, ok := tokens.Pane(other); !ok || id != "w-2" {
		t.Errorf("another pane's token after a forget: %q %v", id, ok)
	}
}
