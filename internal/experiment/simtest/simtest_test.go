package simtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestBinomialUpper checks the bound against scipy.stats.binom.isf(tail, n, p) (the smallest k
// with P(X > k) ≤ tail).
func TestBinomialUpper(t *testing.T) {
	tests := []struct {
		n       int
		p, tail float64
		want    int
	}{
		{n: 100, p: 0.05, tail: 0.01, want: 11},
		{n: 2000, p: 0.05, tail: 0.01, want: 123},
		{n: 100, p: 0.001, tail: 0.01, want: 1},
		{n: 10, p: 0.5, tail: 0.5, want: 5},
		{n: 10, p: 0.5, tail: 0, want: 10},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, BinomialUpper(tt.n, tt.p, tt.tail), "n=%d p=%g tail=%g", tt.n, tt.p, tt.tail)
	}
}
