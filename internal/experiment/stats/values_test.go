package stats

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValuesMatchScipyReference draws users' values (most users convert nothing, a few spend),
// gives AnalyzeValues only each arm's sums, and compares every number with testdata/values.py,
// which computes them from the users' values themselves with numpy and scipy.
func TestValuesMatchScipyReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 1))
	draw := func(n int, p, mean float64) []float64 {
		vs := make([]float64, n)
		for i := range vs {
			if rng.Float64() < p {
				vs[i] = mean * rng.ExpFloat64()
			}
		}
		return vs
	}
	users := [][]float64{draw(4000, 0.05, 30), draw(4100, 0.065, 30), draw(3900, 0.05, 45)}
	arms := make([]ValueArm, len(users))
	for i, vs := range users {
		arms[i].Exposed = int64(len(vs))
		for _, v := range vs {
			arms[i].Sum += v
			arms[i].SquareSum += v * v
		}
	}
	const alpha, control = 0.05, 0
	out := runReference(t, "values.py", map[string]any{"alpha": alpha, "control": control, "arms": users})
	var raw struct {
		Arms []struct {
			Mean  float64 `json:"mean"`
			Lower float64 `json:"lower"`
			Upper float64 `json:"upper"`
		} `json:"arms"`
		Comparisons []struct {
			Arm        int     `json:"arm"`
			Difference float64 `json:"difference"`
			Lower      float64 `json:"lower"`
			Upper      float64 `json:"upper"`
			P          float64 `json:"p"`
			PAdjusted  float64 `json:"p_adjusted"`
		} `json:"comparisons"`
	}
	require.NoError(t, json.Unmarshal(out, &raw))
	got, cmps := AnalyzeValues(arms, control, alpha)
	require.Len(t, got, len(raw.Arms))
	for i, r := range raw.Arms {
		assert.InEpsilon(t, r.Mean, got[i].Mean, referenceTolerance, "arm %d mean", i)
		assert.InEpsilon(t, r.Lower, got[i].CI.Lower, referenceTolerance, "arm %d lower", i)
		assert.InEpsilon(t, r.Upper, got[i].CI.Upper, referenceTolerance, "arm %d upper", i)
	}
	require.Len(t, cmps, len(raw.Comparisons))
	for k, r := range raw.Comparisons {
		c := cmps[k]
		assert.Equal(t, r.Arm, c.Arm)
		assert.True(t, c.Estimable)
		assert.InEpsilon(t, r.Difference, c.Difference, referenceTolerance, "arm %d difference", r.Arm)
		assert.InDelta(t, r.Lower, c.DiffCI.Lower, referenceTolerance, "arm %d lower", r.Arm)
		assert.InDelta(t, r.Upper, c.DiffCI.Upper, referenceTolerance, "arm %d upper", r.Arm)
		assert.InDelta(t, r.P, c.P, referenceTolerance, "arm %d p", r.Arm)
		assert.InDelta(t, r.PAdjusted, c.PAdjusted, referenceTolerance, "arm %d p adjusted", r.Arm)
	}
}

func TestValuesOfArmsWithoutUsers(t *testing.T) {
	t.Parallel()
	got, cmps := AnalyzeValues([]ValueArm{{Exposed: 0}, {Exposed: 1, Sum: 5, SquareSum: 25}, {Exposed: 10, Sum: 10, SquareSum: 10}}, 2, 0)
	assert.Equal(t, ValueResult{}, got[0], "no users: mean 0, interval [0, 0]")
	assert.Equal(t, 5.0, got[1].Mean)
	require.Len(t, cmps, 2)
	assert.False(t, cmps[0].Estimable)
	assert.False(t, cmps[1].Estimable, "one user has no variance")
	assert.Equal(t, 1.0, cmps[0].PAdjusted)
	assert.Equal(t, ValueComparison{Arm: 1, P: 1, PAdjusted: 1}, cmps[1])
}
