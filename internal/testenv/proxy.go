package testenv

import (
	"bytes"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Proxy is a loopback TCP proxy for fault tests: it can refuse service (drop every connection)
// and add latency in both directions, then heal.
type Proxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	down    bool
	delay   time.Duration
	conns   map[net.Conn]struct{}
	closed  bool
	refused int // connections refused while down
	// replicaDelay: the replication stream to the Redis replica listening on the key's port is
	// this late (see SetReplicaDelay).
	replicaDelay map[int]time.Duration
}

// NewProxy listens on 127.0.0.1 and forwards to target until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDown drops every open connection and refuses new ones (true), or serves again (false).
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			c.Close()
		}
	}
}

// SetDelay adds d before every chunk forwarded in either direction.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// SetReplicaDelay makes the replication stream that the proxied Redis primary sends to the
// replica listening on port d late (data towards the replica only; the replica's acknowledgements
// go back at once). The proxy recognises a replica's connection by the port it announces
// (REPLCONF listening-port): a Sentinel keeps every replica pointed at the one address it
// monitors, so one proxy in front of the primary must serve the sentinels, the clients and every
// replica, each replica's link late by its own amount.
func (p *Proxy) SetReplicaDelay(port int, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.replicaDelay == nil {
		p.replicaDelay = map[int]time.Duration{}
	}
	p.replicaDelay[port] = d
}

func (p *Proxy) delayOf(replicaPort int) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.delay
	if replicaPort != 0 {
		d = max(d, p.replicaDelay[replicaPort])
	}
	return d
}

// announcedPort is the port in a replica's "REPLCONF listening-port N" within chunk (RESP), or 0.
func announcedPort(chunk []byte) int {
	i := bytes.Index(bytes.ToLower(chunk), []byte("listening-port\r\n$"))
	if i < 0 {
		return 0
	}
	rest := chunk[i+len("listening-port\r\n$"):]
	j := bytes.Index(rest, []byte("\r\n"))
	if j < 0 {
		return 0
	}
	rest = rest[j+2:]
	k := bytes.Index(rest, []byte("\r\n"))
	if k < 0 {
		return 0
	}
	port, err := strconv.Atoi(string(rest[:k]))
	if err != nil {
		return 0
	}
	return port
}

// Refused is how many connections the proxy has refused while down: a test waits for a client's
// retries with it instead of sleeping.
func (p *Proxy) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// Close stops the proxy and its connections.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.SetDown(true)
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down || p.closed {
		if p.down && !p.closed {
			p.refused++
		}
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) currentDelay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	var replica atomic.Int64 // the port a replica announced on this connection, 0 = none
	pump := func(dst, src net.Conn, toServer bool) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if toServer && replica.Load() == 0 {
					replica.Store(int64(announcedPort(buf[:n])))
				}
				d := p.currentDelay()
				if !toServer {
					d = p.delayOf(int(replica.Load()))
				}
				if d > 0 {
					time.Sleep(d)
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go pump(server, client, true)
	go pump(client, server, false)
	<-done
}
