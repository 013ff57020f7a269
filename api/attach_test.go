package api

import (
	"bytes"
	"testing"
)

// TestFrames: what the client writes, the server reads back; a payload
// over the frame limit is refused, not cut.
func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	if err := writeFrame(&buf, FrameInput, []byte("ls\r")); err != nil {
		t.Fatal(err)
	}
	if err := writeFrame(&buf, FrameResize, resizePayload(40, 300)); err != nil {
		t.Fatal(err)
	}
	if err := writeFrame(&buf, FrameInput, make([]byte, maxFrame+1)); err == nil {
		t.Fatal("an oversized frame was written")
	}
	typ, p, err := ReadFrame(&buf)
	if err != nil || typ != FrameInput || string(p) != "ls\r" {
		t.Fatalf("first frame = %c %q %v", typ, p, err)
	}
	typ, p, err = ReadFrame(&buf)
	if err != nil || typ != FrameResize || !bytes.Equal(p, []byte{0, 40, 1, 44}) {
		t.Fatalf("second frame = %c %v %v", typ, p, err)
	}
	if _, _, err := ReadFrame(&buf); err == nil {
		t.Fatal("a frame was read from an empty stream")
	}
}
