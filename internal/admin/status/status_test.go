package status

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The rules of the sections, on ports that answer what each case needs; the stores themselves are
// read for real in status_e2e_test.go.

var now = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

type dep struct{ up, down bool }

func (d dep) Up() bool   { return d.up }
func (d dep) Down() bool { return d.down }

type queue struct {
	b   Backlog
	err error
}

func (q queue) Backlog(ctx context.Context) (Backlog, error) { return q.b, q.err }

type days struct{ first, last time.Time }

func (d days) Days(context.Context) (time.Time, time.Time, error) { return d.first, d.last, nil }

type held struct{ failClosed []int64 }

func (h held) Held() int           { return 2 }
func (h held) FailClosed() []int64 { return h.failClosed }

type pending struct {
	n      int
	oldest time.Time
}

func (p pending) Pending(context.Context) (int, time.Time, error) { return p.n, p.oldest, nil }

type coverage struct {
	nodes []string
	at    time.Time
	err   error
}

func (c coverage) Last() ([]string, time.Time, error) { return c.nodes, c.at, c.err }

// hanging answers only when its context ends, as a store behind a dead link does.
type hanging struct{}

func (hanging) Backlog(ctx context.Context) (Backlog, error) {
	<-ctx.Done()
	return Backlog{}, ctx.Err()
}
func (hanging) Days(ctx context.Context) (time.Time, time.Time, error) {
	<-ctx.Done()
	return time.Time{}, time.Time{}, ctx.Err()
}
func (hanging) Pending(ctx context.Context) (int, time.Time, error) {
	<-ctx.Done()
	return 0, time.Time{}, ctx.Err()
}

func day(d int) time.Time { return now.Truncate(24*time.Hour).AddDate(0, 0, d) }

// healthy is every port answering as a healthy service does.
func healthy() Ports {
	return Ports{MySQL: dep{up: true}, Redis: dep{up: true}, Ready: func() bool { return true }, ConfigVersion: func() int64 { return 7 },
		Queue: queue{b: Backlog{Waiting: 3, OldestAt: now.Add(-time.Second)}}, Retention: days{day(-90), day(7)},
		LogRetention: 90 * 24 * time.Hour, Audiences: held{}, Erasures: pending{}}
}

func TestASectionWarnsPastItsAlertsThreshold(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		give    func(p *Ports)
		section func(s statusWire) string
		want    string
	}{
		{"healthy", func(*Ports) {}, func(s statusWire) string { return s.State }, StateOK},
		{"a backlog within its two minutes", func(p *Ports) { p.Queue = queue{b: Backlog{Waiting: 1, OldestAt: now.Add(-BacklogAgeLimit)}} },
			func(s statusWire) string { return s.Queue.State }, StateOK},
		{"a backlog past its two minutes", func(p *Ports) {
			p.Queue = queue{b: Backlog{Waiting: 1, OldestAt: now.Add(-BacklogAgeLimit - time.Second)}}
		}, func(s statusWire) string { return s.Queue.State }, StateWarning},
		{"a dead letter", func(p *Ports) { p.Queue = queue{b: Backlog{Dead: 1}} }, func(s statusWire) string { return s.Queue.State }, StateWarning},
		{"a queue that cannot be read", func(p *Ports) { p.Queue = queue{err: errors.New("boom")} },
			func(s statusWire) string { return s.Queue.State }, StateUnavailable},
		{"a queue while Redis is down", func(p *Ports) { p.Redis = dep{down: true} }, func(s statusWire) string { return s.Queue.State }, StateDown},
		// A retention of 90 days and 9 hours put day(-91) past it an hour ago (within the two
		// hours' slack); 90 days and 7 hours, three hours ago.
		{"the day past the retention kept within the slack", func(p *Ports) {
			p.Retention, p.LogRetention = days{day(-91), day(7)}, 90*24*time.Hour+9*time.Hour
		}, func(s statusWire) string { return s.Retention.State }, StateOK},
		{"the day past the retention kept past the slack", func(p *Ports) {
			p.Retention, p.LogRetention = days{day(-91), day(7)}, 90*24*time.Hour+7*time.Hour
		}, func(s statusWire) string { return s.Retention.State }, StateWarning},
		{"no partition for today", func(p *Ports) { p.Retention = days{day(-90), day(-1)} },
			func(s statusWire) string { return s.Retention.State }, StateWarning},
		{"a popup answered fail-closed", func(p *Ports) { p.Audiences = held{failClosed: []int64{4}} },
			func(s statusWire) string { return s.Audiences.State }, StateWarning},
		{"an erasure within its promise", func(p *Ports) { p.Erasures = pending{1, now.Add(-ErasurePromise)} },
			func(s statusWire) string { return s.Erasures.State }, StateOK},
		{"an erasure past its promise", func(p *Ports) { p.Erasures = pending{1, now.Add(-ErasurePromise - time.Second)} },
			func(s statusWire) string { return s.Erasures.State }, StateWarning},
		{"not a cluster", func(*Ports) {}, func(s statusWire) string { return s.RedisCluster.State }, StateOff},
		{"a cluster with every node's coverage setting no", func(p *Ports) { p.Coverage = coverage{at: now} },
			func(s statusWire) string { return s.RedisCluster.State }, StateOK},
		{"a cluster node with full coverage", func(p *Ports) { p.Coverage = coverage{nodes: []string{"10.0.0.1:6379"}, at: now} },
			func(s statusWire) string { return s.RedisCluster.State }, StateWarning},
		{"a cluster not checked yet", func(p *Ports) { p.Coverage = coverage{} },
			func(s statusWire) string { return s.RedisCluster.State }, StateUnchecked},
		{"a cluster whose setting could not be read", func(p *Ports) { p.Coverage = coverage{at: now, err: errors.New("CONFIG renamed")} },
			func(s statusWire) string { return s.RedisCluster.State }, StateUnavailable},
		{"an instance not ready", func(p *Ports) { p.Ready = func() bool { return false } },
			func(s statusWire) string { return s.Instance.State }, StateWarning},
		{"MySQL down", func(p *Ports) { p.MySQL = dep{down: true} }, func(s statusWire) string { return s.MySQL.State }, StateDown},
		{"MySQL not checked yet", func(p *Ports) { p.MySQL = dep{} }, func(s statusWire) string { return s.MySQL.State }, StateUnchecked},
		{"a warning section warns the whole", func(p *Ports) { p.Queue = queue{b: Backlog{Dead: 1}} },
			func(s statusWire) string { return s.State }, StateWarning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := healthy()
			tt.give(&p)
			a := &API{Ports: p}
			assert.Equal(t, tt.want, tt.section(a.read(context.Background(), now)))
		})
	}
}

func TestStoresThatDoNotAnswerAreUnavailableNotWaitedFor(t *testing.T) {
	t.Parallel()
	p := healthy()
	p.Queue, p.Retention, p.Erasures = hanging{}, hanging{}, hanging{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the limit has passed
	got := (&API{Ports: p}).read(ctx, now)
	assert.Equal(t, StateWarning, got.State)
	for _, s := range []struct{ state, err string }{{got.Queue.State, got.Queue.Error}, {got.Retention.State, got.Retention.Error},
		{got.Erasures.State, got.Erasures.Error}} {
		assert.Equal(t, StateUnavailable, s.state)
		assert.Equal(t, "no answer within 2s", s.err)
	}
}
