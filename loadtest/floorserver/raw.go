package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
)

// rawClient is the least a client can do to pipeline concurrent requests' commands to one Redis:
// one connection, a writer that sends every command queued since its last write in one write(2),
// a reader that hands each reply, in order, to the request waiting for it. No pool, no retries,
// no deadlines, no hooks, no command objects: floorserver -client raw measures what is left of
// the round trips' CPU without go-redis's machinery.
type rawClient struct {
	mu      sync.Mutex
	pending []*rawCall // queued, not yet written
	kick    chan struct{}
	sent    chan *rawCall // written, in order, awaiting their replies
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
	c := &rawClient{kick: make(chan struct{}, 1), sent: make(chan *rawCall, 4096)}
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
	var batch []*rawCall
	var buf []byte
	for range c.kick {
		c.mu.Lock()
		batch, c.pending = c.pending, batch[:0]
		c.mu.Unlock()
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
			c.sent <- call
		}
		if _, err := conn.Write(buf); err != nil {
			panic(err) // a benchmark's Redis on loopback: nothing to recover
		}
	}
}

func (c *rawClient) read(br *bufio.Reader) {
	for call := range c.sent {
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
			n, _ := strconv.Atoi(body)
			if n < 0 {
				call.isNil = true
				break
			}
			b := make([]byte, n+2)
			if _, err := io.ReadFull(br, b); err != nil {
				panic(err)
			}
			call.reply = string(b[:n])
		default:
			panic("unexpected redis reply " + strconv.Quote(string(line)))
		}
		close(call.done)
	}
}
