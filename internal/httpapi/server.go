package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// NewServer wraps h in an http.Server hardened for the public internet: slow-header clients are
// cut, bodies and idle connections time out, headers are bounded; keep-alive stays on.
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 2 * time.Second,
		ReadTimeout:       5 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
}

// Serve listens on s.Addr and serves until ctx ends, then shuts down gracefully, in two steps.
// First it drains (up to drainWait): /readyz fails, every answer carries "Connection: close" so
// that keep-alive clients close their connection after it, and Serve waits until every
// connection opened before the drain has closed. Then the listener closes and in-flight requests finish (all within grace).
// Shutting down at once would close idle keep-alive connections under requests their clients
// were just sending: those clients would see resets (measured by `make chaos`,
// docs/RELIABILITY.md). ready, if not nil, is called once the listener is bound (tests and ports
// chosen by the kernel).
func Serve(ctx context.Context, s *http.Server, grace time.Duration, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(ln.Addr())
	}
	d := watchConns(s)
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	deadline := time.Now().Add(grace)
	d.drain(min(drainWait, grace/2))
	sctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	err = s.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

// drainWait bounds the drain before shutdown: long enough for every busy keep-alive connection to
// carry one more request (and its "Connection: close" answer), short enough not to hold up a
// deploy. A connection idle for all of it is closed by Shutdown.
const drainWait = 500 * time.Millisecond

// connWatch drains a server's keep-alive connections before it shuts down.
type connWatch struct {
	draining atomic.Bool
	mu       sync.Mutex
	old      map[net.Conn]struct{} // open connections opened before the drain began
}

type drainingKey struct{}

// watchConns hooks s: the handler marks answers "Connection: close" once draining, the
// connection-state hook keeps the set of open connections (on open and close only, not per
// request), and every request's context carries the draining flag (see draining).
func watchConns(s *http.Server) *connWatch {
	w := &connWatch{old: map[net.Conn]struct{}{}}
	next, prevState, prevBase := s.Handler, s.ConnState, s.BaseContext
	s.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if w.draining.Load() {
			rw.Header().Set("Connection", "close")
		}
		next.ServeHTTP(rw, r)
	})
	s.ConnState = func(c net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			if !w.draining.Load() {
				w.mu.Lock()
				w.old[c] = struct{}{}
				w.mu.Unlock()
			}
		case http.StateClosed, http.StateHijacked:
			w.mu.Lock()
			delete(w.old, c)
			w.mu.Unlock()
		}
		if prevState != nil {
			prevState(c, st)
		}
	}
	s.BaseContext = func(l net.Listener) context.Context {
		base := context.Background()
		if prevBase != nil {
			base = prevBase(l)
		}
		return context.WithValue(base, drainingKey{}, &w.draining)
	}
	return w
}

// drain starts draining and waits until every connection opened before it has closed (each
// after its next answer), or for at most max. Connections opened meanwhile serve one request each.
func (w *connWatch) drain(max time.Duration) {
	w.draining.Store(true)
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) && w.open() > 0 {
		time.Sleep(5 * time.Millisecond)
	}
}

// open counts the connections opened before the drain began that are still open.
func (w *connWatch) open() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.old)
}

// draining reports whether the server of the request behind ctx is shutting down.
func draining(ctx context.Context) bool {
	b, _ := ctx.Value(drainingKey{}).(*atomic.Bool)
	return b != nil && b.Load()
}
