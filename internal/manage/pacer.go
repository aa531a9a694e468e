package manage

import (
	"context"
	"runtime"
	"time"
)

// pacer spreads a member upload's work over time at rate uids a second, so that the upload
// takes a bounded share of the CPU of the process (and of MySQL) that serves the public API
// beside it (POPUP_AUDIENCE_UPLOAD_RATE, docs/PERFORMANCE.md "Uploads and memory"). It is a
// token bucket of burst uids: work done faster than the rate is made to wait, and a stall (a slow
// client) lends at most a burst to catch up with.
type pacer struct {
	rate  int64 // uids a second; <= 0: unpaced
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	// due is when the work counted so far is paid for at the rate (zero: nothing counted yet).
	due time.Time
}

// paceBurst is the bucket, in time at the rate: short enough that the process's other
// goroutines and MySQL see the upload as a steady trickle, long enough that waits are a few
// timer wake-ups per burst at most.
const paceBurst = 20 * time.Millisecond

// newPacer returns a pacer of rate uids a second (<= 0: one that never waits).
func newPacer(rate int, now func() time.Time) *pacer {
	return &pacer{rate: int64(rate), now: now, sleep: sleepCtx}
}

// wait counts n uids of work done and waits, when the work is ahead of the rate, until it is
// not; it returns ctx's error if ctx ends first.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p.rate <= 0 {
		return nil
	}
	now := p.now()
	// A bucket full at most: time not spent working earns at most a burst.
	if floor := now.Add(-paceBurst); p.due.Before(floor) {
		p.due = floor
	}
	p.due = p.due.Add(time.Duration(int64(n) * int64(time.Second) / p.rate))
	if d := p.due.Sub(now); d > 0 {
		return p.sleep(ctx, d)
	}
	return nil
}

// sortPerUID is how many fingerprints a sort moves, or sorts in a run, for the work of one uid
// read and stored: a uid of a 20 M replace costs about 650 ns of CPU between popup-api, MySQL and
// the client (13 s in `make bench-upload`'s CPU table), a fingerprint moved or sorted in a small
// run well under a tenth of that.
const sortPerUID = 8

// sortPause is the pause of a sort of fingerprints (audience.Buffer.SortUnique) when the pacer
// paces, nil otherwise: the sort's work counts at sortPerUID fingerprints a uid, so that the
// sort of a 20,000,000-uid replace counts as about 8,000,000 uids (it moves each fingerprint
// twice and sorts it once in a short run). Every pause lets waiting requests run first: the
// pieces are a millisecond or two, where a preemption comes after 10 ms.
func (p *pacer) sortPause(ctx context.Context) func(int) error {
	if p.rate <= 0 {
		return nil
	}
	return func(n int) error {
		runtime.Gosched()
		return p.wait(ctx, n/sortPerUID)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
