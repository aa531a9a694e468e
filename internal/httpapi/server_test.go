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
