package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
)

func TestUnreachableTellsANodeThatCannotBeReachedFromAnAnswer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{redis.Nil, false},
		{context.Canceled, false},
		{context.DeadlineExceeded, true},
		{errors.New("ERR unknown command"), false},
		{fmt.Errorf("dial: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), true},
		{syscall.ECONNRESET, true},
		{io.EOF, true},
		{redis.ErrClosed, true},
		{fmt.Errorf("wrapped: %w", io.ErrUnexpectedEOF), true},
	} {
		assert.Equal(t, c.want, unreachable(c.err), "%v", c.err)
	}
}
