package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
)

// rawClient is a minimal full-duplex pipelining client of one Redis: one connection, a writer
// that sends every command queued since its last write in one write(2) (without waiting for the
// replies of the last), a reader that hands each reply, in order, to the request waiting for it.
// No pool, no retries, no deadlines, no hooks, no command objects: floorserver -client raw
// measures the round trips' CPU without go-redis's machinery (its batching policy differs: go-redis
// keeps one batch in flight by default).
type rawClient struct {
	mu      sync.Mutex
	pending []*rawCall // queued, not yet written
	kick    chan struct{}
	sent    chan []*rawCall // batches written, in order, awaiting their replies
}

type rawCall struct {
	args  []string
	reply string // a bulk string's bytes, or an integer's digits
	isNil bool
	err   error
	done  chan struct{}
}

func dialRaw(addr string) (*rawClient, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &rawClient{kick: make(chan struct{}, 1), sent: make(chan []*rawCall, 1024)}
	go c.write(conn)
	go c.read(bufio.NewReaderSize(conn, 64<<10))
	return c, nil
}

// do sends args as one command and waits for its reply.
func (c *rawClient) do(args ...string) *rawCall {
	call := &rawCall{args: args, done: make(chan struct{})}
	c.mu.Lock()
	c.pending = append(c.pending, call)
	first := len(c.pending) == 1
	c.mu.Unlock()
	if first {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	<-call.done
	return call
}

func (c *rawClient) write(conn net.Conn) {
	var buf []byte
	for range c.kick {
		c.mu.Lock()
		batch := c.pending
		c.pending = make([]*rawCall, 0, len(batch)) // batch goes to the reader: no reuse
		c.mu.Unlock()
		if len(batch) == 0 { // taken with an earlier kick's batch
			continue
		}
		buf = buf[:0]
		for _, call := range batch {
			buf = append(buf, '*')
			buf = strconv.AppendInt(buf, int64(len(call.args)), 10)
			buf = append(buf, '\r', '\n')
			for _, a := range call.args {
				buf = append(buf, '$')
				buf = strconv.AppendInt(buf, int64(len(a)), 10)
				buf = append(buf, '\r', '\n')
				buf = append(buf, a...)
				buf = append(buf, '\r', '\n')
			}
		}
		if _, err := conn.Write(buf); err != nil {
			panic(err) // a benchmark's Redis on loopback: nothing to recover
		}
		c.sent <- batch // after the write: the reader wakes when there is something to read
	}
}

func (c *rawClient) read(br *bufio.Reader) {
	for batch := range c.sent {
		for _, call := range batch {
			readReply(br, call)
			close(call.done)
		}
	}
}

// readReply reads one reply (an integer, a status, an error or a bulk string) into call.
func readReply(br *bufio.Reader, call *rawCall) {
	line, err := br.ReadSlice('\n')
	if err != nil || len(line) < 3 {
		panic(errors.Join(errors.New("redis reply"), err))
	}
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case ':', '+':
		call.reply = body
	case '-':
		call.err = errors.New(body)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			panic(err)
		}
		if n < 0 {
			call.isNil = true
			return
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			panic(err)
		}
		call.reply = string(b[:n])
	default:
		panic("unexpected redis reply " + strconv.Quote(string(line)))
	}
}
