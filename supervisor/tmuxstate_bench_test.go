package supervisor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/pane"
)

// tmuxTrialCmd is typed into a pane for one trial: 20 lines 0.1 s apart,
// then the time of the last one is written to %[1]s (the prompt follows
// within a millisecond).
const tmuxTrialCmd = `for i in $(seq 20); do [ $i = 1 ] || sleep 0.1; echo x; done; date +%%s%%N > %[1]s.tmp; mv %[1]s.tmp %[1]s`

// stateSeen is a pane's state as the team's event stream told it, with the
// time it reached the client.
type stateSeen struct {
	id, state string
	since     time.Time
	got       time.Time
}

// BenchmarkTmuxOutputState measures tmux shell panes with output typed
// straight into them (tmux send-keys, as a person attached would type), on
// 1 and 10 panes: from the typing to the busy event on the team's stream,
// and from the last line of output to the idle event; and counts the
// pane-trials where idle was shown while the output still ran. Each b.Loop
// iteration is one trial; in the 10-pane case every pane is typed into.
// A random pause of 0–5 s before each trial gives the poller a random
// phase, as a person's typing would. CICY_BENCH_DEBUG=1 logs every state
// event of a trial.
func BenchmarkTmuxOutputState(b *testing.B) {
	if !pane.TmuxAvailable() {
		b.Skip("needs tmux")
	}
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("panes=%d", n), func(b *testing.B) { benchOutputState(b, n) })
	}
}

// outputBench is one run of BenchmarkTmuxOutputState.
type outputBench struct {
	b      *testing.B
	c      *api.Client
	sock   string
	ids    []string
	dir    string
	events chan stateSeen
	busy   []time.Duration
	idle   []time.Duration
	early  int
}

func benchOutputState(b *testing.B, n int) {
	b.Setenv("HOME", b.TempDir())
	c := startServer(b)
	ob := &outputBench{b: b, c: c, dir: b.TempDir(), events: make(chan stateSeen, 256)}
	ob.follow()
	ob.create(n)
	for b.Loop() {
		time.Sleep(time.Duration(rand.Int64N(int64(5 * time.Second))))
		ob.trial()
	}
	ob.report()
}

// follow reads the team's event stream into ob.events until cleanup.
func (ob *outputBench) follow() {
	ctx, cancel := context.WithCancel(context.Background())
	es, err := ob.c.TeamEvents(ctx)
	if err != nil {
		ob.b.Fatal(err)
	}
	done := make(chan struct{})
	ob.b.Cleanup(func() { cancel(); _ = es.Close(); <-done })
	go func() {
		defer close(done)
		for {
			ev, err := es.Next()
			if err != nil {
				return
			}
			got := time.Now()
			var s stateSeen
			switch {
			case ev.Type == "state" && ev.State != nil:
				s = stateSeen{id: ev.ID, state: ev.State.State, since: ev.State.Since, got: got}
			case ev.Type == "pane" && ev.Pane != nil:
				s = stateSeen{id: ev.Pane.ID, state: ev.Pane.State, since: ev.Pane.Since, got: got}
			default:
				continue
			}
			select {
			case ob.events <- s:
			case <-ctx.Done():
				return
			}
		}
	}()
}

// create starts n bash panes in tmux and waits until all are idle.
func (ob *outputBench) create(n int) {
	ctx := context.Background()
	idle := map[string]bool{}
	for i := range n {
		p, err := ob.c.Create(ctx, api.CreateRequest{Title: fmt.Sprintf("sh%d", i), Type: "shell", Backend: "tmux",
			Command: []string{"bash", "--norc", "--noprofile"}})
		if err != nil {
			ob.b.Fatal(err)
		}
		ob.ids = append(ob.ids, p.ID)
		idle[p.ID] = false
	}
	pi, err := ob.c.Get(ctx, ob.ids[0])
	if err != nil || len(pi.Attach) < 3 {
		ob.b.Fatalf("no tmux socket for %s: %v %v", ob.ids[0], pi.Attach, err)
	}
	ob.sock = pi.Attach[2]
	ob.b.Cleanup(func() {
		for _, id := range ob.ids {
			_ = ob.c.Kill(context.Background(), id)
		}
		_ = exec.Command("tmux", "-L", ob.sock, "kill-server").Run()
	})
	for _, id := range ob.ids {
		if pi, _ := ob.c.Get(ctx, id); pi.State == "idle" {
			idle[id] = true
		}
	}
	deadline := time.After(60 * time.Second)
	for countFalse(idle) > 0 {
		select {
		case s := <-ob.events:
			if _, ok := idle[s.id]; ok {
				idle[s.id] = s.state == "idle"
			}
		case <-deadline:
			ob.b.Fatalf("panes never all idle: %v", idle)
		}
	}
}

func countFalse(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if !v {
			n++
		}
	}
	return n
}

// paneTrial is one pane's progress through a trial.
type paneTrial struct {
	mark         string
	typed, busy  time.Time
	idleDone     bool
	sawEarlyIdle bool
}

// trial types the command into every pane, then waits for each pane's busy
// event and its idle event after the last output.
func (ob *outputBench) trial() {
	trials := map[string]*paneTrial{}
	for i, id := range ob.ids {
		t := &paneTrial{mark: filepath.Join(ob.dir, "end"+strconv.Itoa(i))}
		_ = os.Remove(t.mark)
		cmd := fmt.Sprintf(tmuxTrialCmd, t.mark)
		if out, err := exec.Command("tmux", "-L", ob.sock, "send-keys", "-t", "="+id+":main.0", cmd, "Enter").CombinedOutput(); err != nil {
			ob.b.Fatalf("send-keys: %v: %s", err, out)
		}
		t.typed = time.Now()
		trials[id] = t
	}
	left := len(trials)
	deadline := time.After(60 * time.Second)
	for left > 0 {
		select {
		case s := <-ob.events:
			if t := trials[s.id]; t != nil && !t.idleDone && ob.seen(t, s) {
				left--
			}
		case <-deadline:
			ob.b.Fatalf("trial did not end: %d panes without busy then idle", left)
		}
	}
}

// seen applies one state event to t; it reports whether t is done.
func (ob *outputBench) seen(t *paneTrial, s stateSeen) bool {
	if os.Getenv("CICY_BENCH_DEBUG") != "" {
		ob.b.Logf("%s %s since %+.3fs got %+.3fs", s.id, s.state, s.since.Sub(t.typed).Seconds(), s.got.Sub(t.typed).Seconds())
	}
	switch {
	case s.state == "busy" && t.busy.IsZero():
		t.busy = s.got
		ob.busy = append(ob.busy, s.got.Sub(t.typed))
	case s.state == "idle" && !t.busy.IsZero():
		end, ok := lastOutput(t.mark)
		if !ok || s.since.Before(end) {
			if !t.sawEarlyIdle {
				ob.early++
			}
			t.sawEarlyIdle = true
			return false
		}
		ob.idle = append(ob.idle, s.got.Sub(end))
		t.idleDone = true
		return true
	}
	return false
}

// lastOutput is the time the trial's command wrote after its last line.
func lastOutput(mark string) (time.Time, bool) {
	raw, err := os.ReadFile(mark)
	if err != nil {
		return time.Time{}, false
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

func (ob *outputBench) report() {
	b := ob.b
	if len(ob.busy) == 0 || len(ob.idle) == 0 {
		b.Fatal("no trial measured")
	}
	busy, idle := slices.Sorted(slices.Values(ob.busy)), slices.Sorted(slices.Values(ob.idle))
	b.ReportMetric(ms(busy[len(busy)/2]), "busy-p50-ms")
	b.ReportMetric(ms(busy[len(busy)-1]), "busy-max-ms")
	b.ReportMetric(ms(idle[len(idle)/2]), "idle-p50-ms")
	b.ReportMetric(ms(idle[len(idle)-1]), "idle-max-ms")
	b.ReportMetric(float64(ob.early), "idle-while-printing")
	b.ReportMetric(float64(len(idle)), "samples")
}

// BenchmarkTmuxFlood measures what a tmux shell pane printing as fast as it
// can (`yes`) costs: this process's CPU (the supervisor, with its control
// client's reader) and the tmux server's, over 10 s per b.N, and what
// `yes` wrote meanwhile. Run with -benchtime 1x.
func BenchmarkTmuxFlood(b *testing.B) {
	if !pane.TmuxAvailable() {
		b.Skip("needs tmux")
	}
	b.Setenv("HOME", b.TempDir())
	c := startServer(b)
	id := benchCreate(b, c, api.CreateRequest{Title: "flood", Type: "shell", Backend: "tmux", Command: []string{"yes"}})
	b.Cleanup(func() { _ = c.Kill(context.Background(), id) })
	pi, err := c.Get(context.Background(), id)
	if err != nil || len(pi.Attach) < 3 {
		b.Fatalf("no tmux socket for %s: %v %v", id, pi.Attach, err)
	}
	sock := pi.Attach[2]
	b.Cleanup(func() { _ = exec.Command("tmux", "-L", sock, "kill-server").Run() })
	out, err := exec.Command("tmux", "-L", sock, "display-message", "-p", "#{pid}").Output()
	if err != nil {
		b.Fatalf("tmux server pid: %v", err)
	}
	server, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	for deadline := time.Now().Add(10 * time.Second); ; {
		if pi, _ = c.Get(context.Background(), id); pi.PID != 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the flood pane never started: %+v", pi)
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitFor(b, "the control client attached and the pane's window linked to it", func() bool {
		cl, _ := exec.Command("tmux", "-L", sock, "list-clients", "-F", "#{client_control_mode}").Output()
		ws, _ := exec.Command("tmux", "-L", sock, "list-windows", "-t", "=cicy-watch", "-F", "#{pane_pid}").Output()
		return slices.Contains(strings.Fields(string(cl)), "1") && slices.Contains(strings.Fields(string(ws)), strconv.Itoa(pi.PID))
	})
	yes := pi.PID
	if kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", yes, yes)); err == nil && len(strings.Fields(string(kids))) > 0 {
		yes, _ = strconv.Atoi(strings.Fields(string(kids))[0]) // under the sh wrapper
	}
	var self, srv time.Duration
	var wrote int64
	var wall time.Duration
	for b.Loop() {
		cpu0, s0, w0, t0 := processCPU(), procCPU(b, server), writtenBytes(b, yes), time.Now()
		time.Sleep(10 * time.Second)
		self += processCPU() - cpu0
		srv += procCPU(b, server) - s0
		wrote += writtenBytes(b, yes) - w0
		wall += time.Since(t0)
	}
	// A program printing from its start is starting until its first quiet.
	if pi, _ = c.Get(context.Background(), id); pi.State != "starting" && pi.State != "busy" {
		b.Errorf("the flood pane is %s, want starting or busy", pi.State)
	}
	b.ReportMetric(100*self.Seconds()/wall.Seconds(), "supervisor-cpu-%")
	b.ReportMetric(100*srv.Seconds()/wall.Seconds(), "tmux-cpu-%")
	b.ReportMetric(float64(wrote)/wall.Seconds()/1e6, "flood-MB/s")
}

// procCPU is the user and system time of process pid.
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
}
