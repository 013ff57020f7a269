package spend

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/schema"
)

// The ledger's queue: a usage row the store does not take (a full disk, a
// database gone for a moment) waits in memory, in order, and is written
// again every ledgerRetry until the store takes it; a new row waits behind
// the queued ones. At most ledgerMax rows wait: beyond that a row is
// refused (the call's error and the log say so), so a store that never
// comes back cannot take all the memory. The shutdown tries once more; a
// kill -9 loses the rows still waiting, none of which was acknowledged.
const (
	ledgerRetry = 2 * time.Second
	ledgerMax   = 100_000
)

// usageStore is what the ledger needs of the database.
type usageStore interface {
	AddUsage(ctx context.Context, u schema.UsageRow) error
}

// ledger writes usage rows, queueing those the store refuses.
type ledger struct {
	store usageStore
	log   *logrus.Entry
	every time.Duration
	// wrote is told how each write went (the home's disk watch).
	wrote func(error)

	mu      sync.Mutex // held while writing: rows go in in order
	waiting []schema.UsageRow

	kick chan struct{}
	quit chan struct{}
	done chan struct{}
}

func newLedger(store usageStore, log *logrus.Entry, every time.Duration, wrote func(error)) *ledger {
	if every <= 0 {
		every = ledgerRetry
	}
	l := &ledger{store: store, log: log, every: every, wrote: wrote,
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l
}

// add writes row, after the rows waiting; when the store refuses, row
// waits too and the error says so (the call is not in the ledger yet).
func (l *ledger) add(ctx context.Context, row schema.UsageRow) error {
	if row.CreatedAt == "" {
		row.CreatedAt = schema.Now() // the call's time, whenever it is written
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.flushLocked(ctx)
	if err == nil {
		err = l.store.AddUsage(ctx, row)
		l.wrote(err)
	}
	if err == nil {
		return nil
	}
	if len(l.waiting) >= ledgerMax {
		l.log.WithError(err).WithFields(rowFields(row)).Error("The ledger's queue is full: this model call is not recorded")
		return fmt.Errorf("the ledger could not record the call, and %d calls already wait to be written: this one is not recorded: %w", len(l.waiting), err)
	}
	if len(l.waiting) == 0 {
		l.log.WithError(err).Warn("Could not write to the ledger: usage rows wait in memory and are written again")
	}
	l.waiting = append(l.waiting, row)
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return fmt.Errorf("%w; the call waits in memory (%d in all) and is written again", err, len(l.waiting))
}

// flushLocked writes the waiting rows in order, up to the first the store
// refuses. l.mu is held.
func (l *ledger) flushLocked(ctx context.Context) error {
	n := len(l.waiting)
	for len(l.waiting) > 0 {
		err := l.store.AddUsage(ctx, l.waiting[0])
		l.wrote(err)
		if err != nil {
			return err
		}
		l.waiting = l.waiting[1:]
	}
	if n > 0 {
		l.waiting = nil
		l.log.WithField("rows", n).Info("The ledger took the usage rows that waited")
	}
	return nil
}

// flush writes the waiting rows; it returns how many still wait.
func (l *ledger) flush(ctx context.Context) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.flushLocked(ctx)
	return len(l.waiting), err
}

// pending is how many rows wait.
func (l *ledger) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiting)
}

// run writes the waiting rows again every l.every while some wait.
func (l *ledger) run() {
	defer close(l.done)
	t := time.NewTimer(l.every)
	t.Stop()
	for {
		select {
		case <-l.quit:
			t.Stop()
			return
		case <-l.kick:
			t.Reset(l.every)
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			left, _ := l.flush(ctx)
			cancel()
			if left > 0 {
				t.Reset(l.every)
			}
		}
	}
}

// close stops the retries and tries the waiting rows once more; what the
// store still refuses is lost, and logged with its numbers.
func (l *ledger) close() {
	select {
	case <-l.quit:
		return
	default:
		close(l.quit)
	}
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	left, err := l.flush(ctx)
	if left == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, row := range l.waiting {
		l.log.WithFields(rowFields(row)).Error("A model call's usage could not be written to the ledger before the stop: lost")
	}
	l.log.WithError(err).WithField("rows", left).Error("The ledger could not take the usage rows that waited")
}

func rowFields(r schema.UsageRow) logrus.Fields {
	return logrus.Fields{"pane": r.PaneID, "turn": r.TurnID, "aux": r.Aux, "model": r.Model, "at": r.CreatedAt,
		"input_tokens": r.InputTokens, "output_tokens": r.OutputTokens, "cache_read": r.CacheRead, "cache_creation": r.CacheCreation}
}
