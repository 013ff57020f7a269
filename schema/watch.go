package schema

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// TaskNote is what the database says of a task change.
type TaskNote struct {
	ID       int64  `json:"id"`
	ToNode   string `json:"to"`
	FromNode string `json:"from"`
	// Joined names a node that registered (RegisterNode): ID is 0.
	Joined string `json:"-"`
}

// taskChannel is the channel the tasks trigger notifies (migration 0007).
const taskChannel = "cicy_tasks"

// nodeChannel carries the name of each node that registers.
const nodeChannel = "cicy_nodes"

// watchApp is the application_name of the listening connection, to tell
// it apart in pg_stat_activity.
const watchApp = "cicy-agent watch"

// Backoff between attempts to connect again.
const (
	watchRetryMin = 100 * time.Millisecond
	watchRetryMax = 5 * time.Second
)

// WatchTasks listens for task notes until ctx ends, on a connection of its
// own, calling fn for each on its own goroutine (the caller's, it blocks
// until ctx ends). After every (re)connect it calls fn(TaskNote{}) (ID 0:
// "you may have missed some, look"). A lost connection is reported to
// onErr once per outage and retried with a backoff (100 ms doubling to
// 5 s). On SQLite it returns at once (nil). It returns nil when ctx ends.
func (s *Store) WatchTasks(ctx context.Context, fn func(TaskNote), onErr func(error)) error {
	if s.db.dialect != Postgres {
		return nil
	}
	cfg, err := pgx.ParseConfig(s.url)
	if err != nil {
		return fmt.Errorf("watch tasks on %s: %w", RedactURL(s.url), err)
	}
	cfg.RuntimeParams["application_name"] = watchApp
	retry, reported := watchRetryMin, false
	for ctx.Err() == nil {
		connected, err := s.listen(ctx, cfg, fn)
		if ctx.Err() != nil {
			break
		}
		if connected {
			retry, reported = watchRetryMin, false
		}
		if !reported {
			onErr(fmt.Errorf("watch tasks: %w", err))
			reported = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(retry):
		}
		retry = min(2*retry, watchRetryMax)
	}
	return nil
}

// listen connects, listens and calls fn for each note until the
// connection fails or ctx ends; connected reports whether it got as far
// as listening.
func (s *Store) listen(ctx context.Context, cfg *pgx.ConnConfig, fn func(TaskNote)) (connected bool, err error) {
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer func() {
		// The connection may be broken: do not wait long to say goodbye.
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Close(cctx)
	}()
	if _, err := c.Exec(ctx, "LISTEN "+taskChannel+"; LISTEN "+nodeChannel); err != nil {
		return false, err
	}
	fn(TaskNote{})
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		if n.Channel == nodeChannel {
			fn(TaskNote{Joined: n.Payload})
			continue
		}
		var note TaskNote
		if err := json.Unmarshal([]byte(n.Payload), &note); err != nil || note.ID == 0 {
			// Not one of ours: look at everything instead.
			note = TaskNote{}
		}
		fn(note)
	}
}
