package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
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

// Serve listens on s.Addr and serves until ctx ends, then shuts down gracefully: the listener
// closes at once, in-flight requests finish (up to grace). ready, if not nil, is called once the
// listener is bound (tests and ports chosen by the kernel).
func Serve(ctx context.Context, s *http.Server, grace time.Duration, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err = s.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
