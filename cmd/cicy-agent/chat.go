package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy"
	"github.com/cicy-ai/cicy-agent/cicy/clip"
)

// chat attaches to a cicy pane: each input line is sent as a message, and
// the pane's events are printed as they come — text as it streams, one line
// per tool call with the first line of its result. EOF (Ctrl-D) or /exit
// detaches; the pane goes on.
func chat(c *cli.Context, cl *api.Client, id string, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	stream, err := cl.Events(ctx, id)
	if err != nil {
		return err
	}
	defer stream.Close()
	fmt.Fprintf(out, "attached to %s; type a message and Enter, Ctrl-D detaches\n", id)
	if sc, err := cl.Screen(ctx, id, 0); err == nil && sc.Screen != "" {
		fmt.Fprintf(out, "last reply:\n%s\n", sc.Screen)
	}
	// The printer tells when the turn carrying the last line sent has
	// ended, so piped input (echo hi | cicy-agent attach w-1) gets its
	// answer before the detach.
	var mu sync.Mutex
	lastSent, seen := "", false
	answered := make(chan struct{}, 1)
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		dec := json.NewDecoder(stream)
		for {
			var ev cicy.Event
			if dec.Decode(&ev) != nil {
				return
			}
			printEvent(out, ev)
			mu.Lock()
			switch {
			case ev.Kind == "user" && lastSent != "" && strings.Contains(ev.Text, lastSent):
				seen = true
			case ev.Kind == "turn_end" && seen:
				seen, lastSent = false, ""
				select {
				case answered <- struct{}{}:
				default:
				}
			}
			mu.Unlock()
		}
	}()
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 64<<10), 4<<20)
	for lines.Scan() {
		text := strings.TrimSpace(lines.Text())
		if text == "" {
			continue
		}
		if text == "/exit" {
			break
		}
		mu.Lock()
		lastSent, seen = text, false
		mu.Unlock()
		select { // forget an answer to an earlier line
		case <-answered:
		default:
		}
		if _, err := cl.Send(ctx, id, api.SendRequest{Text: text}); err != nil {
			fmt.Fprintf(out, "[not sent: %v]\n", err)
			mu.Lock()
			lastSent = ""
			mu.Unlock()
		}
	}
	mu.Lock()
	pending := lastSent != ""
	mu.Unlock()
	if pending {
		select {
		case <-answered:
		case <-printed:
		case <-ctx.Done():
		}
	}
	cancel()
	stream.Close()
	<-printed
	fmt.Fprintf(out, "[detached from %s]\n", id)
	return nil
}

func printEvent(out io.Writer, ev cicy.Event) {
	switch ev.Kind {
	case "user":
		fmt.Fprintf(out, "\n› %s\n", ev.Text)
	case "text":
		fmt.Fprint(out, ev.Text)
	case "tool":
		fmt.Fprintf(out, "\n  ⚙ %s %s → %s\n", ev.Name, clip.Runes(ev.Text, 80), ev.Result)
	case "turn_end":
		switch ev.Status {
		case "completed":
			fmt.Fprintln(out)
		default:
			fmt.Fprintf(out, "\n[turn %s]\n", ev.Status)
		}
	case "queued":
		fmt.Fprintf(out, "  (queued: %s)\n", clip.Runes(ev.Text, 80))
	case "system":
		fmt.Fprintf(out, "[%s]\n", ev.Text)
	}
}
