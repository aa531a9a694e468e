// Package health tracks whether the service's dependencies (MySQL, Redis) can be reached, with
// background checks that retry on a capped exponential backoff with jitter, so that a binary can
// start and keep serving while one is down and heal by itself when it returns.
package health

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"popupsvc/internal/backoff"
)

// DefaultBackoff is the retry schedule of every dependency check: fast at first (a restart of a
// dependency takes a second or two), never slower than every 5 s.
var DefaultBackoff = backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}

// NewUpGauge registers popup_dependency_up{dependency}: 1 while the last check of a dependency
// succeeded, 0 otherwise.
func NewUpGauge(reg prometheus.Registerer) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "popup_dependency_up",
		Help: "1 while the last background check of the dependency succeeded, else 0.",
	}, []string{"dependency"})
	reg.MustRegister(g)
	return g
}

// Dep is one dependency watched in the background. Set the fields, then Run it.
type Dep struct {
	Name string
	// Check reaches the dependency once; nil means it is up.
	Check func(ctx context.Context) error
	// Fatal, when set, tells a check error that no retry can fix (a schema this binary cannot
	// use): Run returns it.
	Fatal func(error) bool
	// Every is the check interval while the dependency is up.
	Every   time.Duration
	Timeout time.Duration // bound of one check
	Backoff backoff.Backoff
	Log     *slog.Logger
	Gauge   *prometheus.GaugeVec // optional
	// OnUp, when set, is called each time the dependency comes up (after a failed or no check).
	OnUp func()

	up      atomic.Bool
	checked atomic.Bool
	once    sync.Once
	readyCh chan struct{}
	kick    chan struct{}
}

func (d *Dep) init() {
	d.once.Do(func() {
		d.readyCh = make(chan struct{})
		d.kick = make(chan struct{}, 1)
	})
}

// Up reports whether the last check succeeded (false before the first one).
func (d *Dep) Up() bool { return d.up.Load() }

// Down reports whether the dependency is known to be down: checked, and the last check (or a
// call since, see Failed) failed. Before the first check it is neither Up nor Down.
func (d *Dep) Down() bool { return d.checked.Load() && !d.up.Load() }

// FirstUp is closed once the dependency has been up once.
func (d *Dep) FirstUp() <-chan struct{} {
	d.init()
	return d.readyCh
}

// Failed tells the watcher that a call just found the dependency unreachable: it is marked down
// at once and checked again on the backoff schedule.
func (d *Dep) Failed() {
	d.init()
	if d.up.CompareAndSwap(true, false) {
		d.setGauge(false)
		select {
		case d.kick <- struct{}{}:
		default:
		}
	}
}

func (d *Dep) setGauge(up bool) {
	if d.Gauge == nil {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	d.Gauge.WithLabelValues(d.Name).Set(v)
}

// Run checks the dependency until ctx ends: every Every while it is up, on the backoff schedule
// while it is down. It logs each change once. It returns nil when ctx ends, or the first error
// Fatal accepts.
func (d *Dep) Run(ctx context.Context) error {
	d.init()
	d.setGauge(false)
	attempt := 0
	var lastErr string
	for {
		cctx, cancel := context.WithTimeout(ctx, d.Timeout)
		err := d.Check(cctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		var wait time.Duration
		switch {
		case err != nil && d.Fatal != nil && d.Fatal(err):
			d.up.Store(false)
			d.setGauge(false)
			return err
		case err != nil:
			if d.up.Swap(false) || err.Error() != lastErr {
				d.Log.Warn("dependency unavailable; retrying", "dependency", d.Name, "err", err)
			}
			lastErr = err.Error()
			d.setGauge(false)
			wait = d.Backoff.Delay(attempt)
			attempt++
		default:
			if !d.up.Swap(true) {
				d.Log.Info("dependency available", "dependency", d.Name)
				d.setGauge(true)
				select {
				case <-d.readyCh:
				default:
					close(d.readyCh)
				}
				if d.OnUp != nil {
					d.OnUp()
				}
			}
			lastErr, attempt, wait = "", 0, d.Every
		}
		d.checked.Store(true) // after up is set: Down never reports a dependency that is up
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-d.kick:
			t.Stop()
		case <-t.C:
		}
	}
}
