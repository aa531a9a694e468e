package httpapi

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startServer runs NewServer on a loopback port until the test ends.
func startServer(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	srv := NewServer("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	go func() { done <- Serve(ctx, srv, time.Second, func(a net.Addr) { addr <- a.String() }) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	return <-addr
}

func TestServerRefusesOversizedHeaders(t *testing.T) {
	t.Parallel()
	addr := startServer(t)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 32<<10)+"\r\n\r\n")
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, res.StatusCode, "headers over 16 KiB are refused")
}

func TestServerCutsSlowHeaderClients(t *testing.T) {
	t.Parallel()
	addr := startServer(t)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	// Half a request, then silence (slowloris): the server must hang up, not wait for ever.
	_, err = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(15*time.Second)))
	n, err := conn.Read(make([]byte, 512))
	assert.Zero(t, n, "no answer to an unfinished request")
	require.Error(t, err)
	var ne net.Error
	assert.False(t, errors.As(err, &ne) && ne.Timeout(), "the client gave up first: the server kept the connection open")
}

// TestServeDrainsKeepAliveConnectionsBeforeShutdown: after the context ends, a keep-alive
// connection opened before it is still served once, told to close (Connection: close) and sees
// the draining flag (what /readyz answers 503 on); Serve returns once that connection has closed.
func TestServeDrainsKeepAliveConnectionsBeforeShutdown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	srv := NewServer("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining(r.Context()) {
			io.WriteString(w, "draining")
			return
		}
		io.WriteString(w, "serving")
	}))
	go func() { done <- Serve(ctx, srv, 10*time.Second, func(a net.Addr) { addr <- a.String() }) }()
	conn, err := net.Dial("tcp", <-addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	br := bufio.NewReader(conn)
	get := func() (*http.Response, string) {
		t.Helper()
		_, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		res, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		res.Body.Close()
		return res, string(body)
	}

	res, body := get()
	assert.Equal(t, "serving", body)
	assert.False(t, res.Close, "keep-alive before shutdown")

	cancel()
	// Until Serve notices the cancel the connection is served as before; then it is drained:
	// still open and served once more (bounded: 200 requests, 10 ms apart).
	for i := 0; i < 200 && body == "serving"; i++ {
		time.Sleep(10 * time.Millisecond)
		res, body = get()
	}
	assert.Equal(t, "draining", body)
	assert.True(t, res.Close, "the answer during the drain carries Connection: close")
	_, err = br.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "the server closes the connection after that answer")
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the drained connection closed")
	}
}
