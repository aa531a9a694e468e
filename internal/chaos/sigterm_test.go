//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAPISIGTERMUnderLoad: popup-api gets SIGTERM while keep-alive clients hammer it, without
// pauses (GETs and actions). No established keep-alive connection may fail under a request (reset,
// closed), and every request in flight at SIGTERM must be answered. The clients here reconnect at
// once, straight to the instance; their connections opened after SIGTERM may go unserved
// (refused, reset in the accept queue, dropped by net/http once Shutdown began): never processed,
// safe to retry, and in a deployment a load balancer has stopped routing to the instance by then
// (/readyz fails from SIGTERM on; Kubernetes' preStop sleep). They are counted apart.
func TestAPISIGTERMUnderLoad(t *testing.T) {
	s := newStack(t, "api-sigterm", "everysec")
	s.startWorker()
	s.startAPI(s.redis.Addr())
	s.seed()
	rec := newRecorder()
	l := load{getters: 8, actors: 8, users: 4}
	s.warm(rec, l)

	// Each client runs until its connection is refused (the API is gone) or 30 s pass.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	bounded := time.AfterFunc(30*time.Second, func() { close(stop) })
	defer bounded.Stop()
	refusedAfterExit := func(o outcome) bool { return o.status == 0 && o.errKind == "refused" }
	for cl := range l.getters + l.actors {
		wg.Go(func() {
			c := newClient(s.public, s.popupID)
			defer c.close()
			for i := 0; i < 1_000_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var o outcome
				if cl < l.getters {
					o = c.get(context.Background(), rec, l.uid(kindGet, cl, i))
				} else {
					o = c.act(context.Background(), rec, l.uid(kindAction, cl-l.getters, i), "click", fmt.Sprintf("sigterm-%d-%d", cl, i))
				}
				rec.add(o)
				if refusedAfterExit(o) {
					return
				}
			}
		})
	}
	time.Sleep(h.plan.steady)
	termAt := rec.now()
	sent := time.Now()
	s.api.signal(syscall.SIGTERM)
	s.api.waitExit(t, 30*time.Second)
	exitAfter := time.Since(sent)
	wg.Wait()
	require.True(t, s.api.cmd.ProcessState.Success(), "popup-api exit status after SIGTERM: %v", s.api.err)

	all := rec.all()
	var before, inflight, inflightOK, afterTerm, afterOK, newConnFailed, dropped int
	errs := map[string]int{}
	for _, o := range all {
		switch {
		case o.at < termAt && o.at+o.took >= termAt:
			inflight++
			if o.status != 0 {
				inflightOK++
			}
		case o.at < termAt:
			before++
		default:
			afterTerm++
			if o.status != 0 {
				afterOK++
			}
		}
		if o.status == 0 {
			if o.reused {
				// A keep-alive connection that had served requests failed under a request.
				errs[o.errKind+"/established"]++
				dropped++
			} else {
				// A connection opened after SIGTERM that the server never served: refused once
				// the listener is closed, reset while still in the kernel's accept queue, or closed
				// unanswered because it was read after Shutdown began (net/http drops those).
				errs[o.errKind+"/new"]++
				newConnFailed++
			}
		}
	}
	gets := tallyOf(rec.window(kindGet, 0, rec.now()))
	acts := tallyOf(rec.window(kindAction, 0, rec.now()))
	retried := gets.retried + acts.retried
	drain := s.waitDrained(h.plan.drainDeadline)
	c := s.verify(rec)
	summary(t, "api-sigterm",
		"clients", l.getters+l.actors, "requests", len(all), "before_sigterm", before, "inflight_at_sigterm", inflight,
		"inflight_answered", inflightOK, "after_sigterm", afterTerm, "after_sigterm_answered", afterOK,
		"exit_ms", exitAfter.Milliseconds(), "last_answer_ms_after_sigterm", lastAnswer(all, termAt).Milliseconds(),
		"errors_on_established_connections", dropped, "unserved_new_connections", newConnFailed, "error_kinds", countList(errs, "0"),
		"transport_retries", retried, "get_status", gets.statusList(), "action_status", acts.statusList(),
		"acked", c.acked, "lost", c.lost, "drain_ms", drain.Milliseconds())

	assert.Positive(t, inflight, "no request was in flight at SIGTERM: the scenario proved nothing")
	assert.Equal(t, inflight, inflightOK, "in-flight requests not answered")
	assert.Zero(t, dropped, "requests failed on established connections (reset or closed under them): %v", errs)
	assert.Zero(t, retried, "the client transport had to retry requests on a new connection")
	assert.Equal(t, gets.n-gets.transportErr, gets.statuses[http.StatusOK], "GETs not answered 200")
	assert.Equal(t, acts.n-acts.transportErr, acts.statuses[http.StatusAccepted], "actions not answered 202")
	c.requireNoLoss(t)
}

// lastAnswer is when the last response arrived, relative to at.
func lastAnswer(all []outcome, at time.Duration) time.Duration {
	var last time.Duration
	for _, o := range all {
		if o.status != 0 && o.at+o.took-at > last {
			last = o.at + o.took - at
		}
	}
	return last
}
