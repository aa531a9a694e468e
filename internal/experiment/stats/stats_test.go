package stats

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnalyzeRejectsInvalidInput(t *testing.T) {
	half := Arm{Weight: 0.5, Exposed: 10, Clicked: 1}
	tests := []struct {
		name      string
		give      Input
		wantField string
	}{
		{"no arms", Input{}, "arms"},
		{"control out of range", Input{Arms: []Arm{half, half}, Control: 2}, "control"},
		{"negative control", Input{Arms: []Arm{half, half}, Control: -1}, "control"},
		{"weights sum below 1", Input{Arms: []Arm{half, {Weight: 0.4}}}, "arms.weight"},
		{"weights sum above 1", Input{Arms: []Arm{half, {Weight: 0.6}}}, "arms.weight"},
		{"zero weight", Input{Arms: []Arm{{Weight: 1}, {Weight: 0}}}, "arms[1].weight"},
		{"negative weight", Input{Arms: []Arm{{Weight: 1.5}, {Weight: -0.5}}}, "arms[0].weight"},
		{"NaN weight", Input{Arms: []Arm{{Weight: math.NaN()}}}, "arms[0].weight"},
		{"negative exposed", Input{Arms: []Arm{half, {Weight: 0.5, Exposed: -1}}}, "arms[1].exposed"},
		{"negative clicked", Input{Arms: []Arm{half, {Weight: 0.5, Exposed: 3, Clicked: -1}}}, "arms[1].clicked"},
		{"clicked exceeds exposed", Input{Arms: []Arm{{Weight: 0.5, Exposed: 5, Clicked: 6}, half}}, "arms[0].clicked"},
		{"alpha of 1", Input{Arms: []Arm{{Weight: 1}}, Options: Options{Alpha: 1}}, "options.alpha"},
		{"negative srm alpha", Input{Arms: []Arm{{Weight: 1}}, Options: Options{SRMAlpha: -0.1}}, "options.srm_alpha"},
		{"negative mixing variance", Input{Arms: []Arm{{Weight: 1}}, Options: Options{MixingVariance: -1}}, "options.mixing_variance"},
		{"infinite mixing variance", Input{Arms: []Arm{{Weight: 1}}, Options: Options{MixingVariance: math.Inf(1)}}, "options.mixing_variance"},
		{"negative min exposed", Input{Arms: []Arm{{Weight: 1}}, Options: Options{MinExposed: -1}}, "options.min_exposed"},
		{"negative min clicks", Input{Arms: []Arm{{Weight: 1}}, Options: Options{MinClicks: -1}}, "options.min_clicks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Analyze(tt.give)
			var ie *InputError
			require.True(t, errors.As(err, &ie), "want an *InputError, got %v", err)
			assert.Equal(t, tt.wantField, ie.Field)
			assert.Contains(t, err.Error(), tt.wantField)
		})
	}
}

func TestAnalyzeAcceptsPercentWeights(t *testing.T) {
	// 0.34+0.33+0.33 is 1.0000000000000002 in floating point.
	_, err := Analyze(Input{Arms: []Arm{{Weight: 0.34}, {Weight: 0.33}, {Weight: 0.33}}})
	require.NoError(t, err)
}

func TestAnalyzeEdgeCases(t *testing.T) {
	// Wilson bounds to 6 decimals, from scipy (norm.ppf) and the formula in the package doc.
	type armWant struct {
		ctr    float64
		lo, hi float64
	}
	type cmpWant struct {
		estimable   bool
		difference  float64
		p           float64
		liftDefined bool
		liftBounded bool
	}
	tests := []struct {
		name        string
		give        []Arm
		wantArms    []armWant
		wantCmp     []cmpWant
		wantSRMP    float64
		wantVerdict Verdict
	}{
		{
			name:        "zero users everywhere",
			give:        []Arm{{Weight: 0.5}, {Weight: 0.5}},
			wantArms:    []armWant{{0, 0, 1}, {0, 0, 1}},
			wantCmp:     []cmpWant{{estimable: false, p: 1}},
			wantSRMP:    1,
			wantVerdict: Verdict{Winner: -1, Reason: ReasonMinSample},
		},
		{
			name:        "one arm without users",
			give:        []Arm{{Weight: 0.5, Exposed: 2000, Clicked: 100}, {Weight: 0.5}},
			wantArms:    []armWant{{0.05, 0.041281, 0.060444}, {0, 0, 1}},
			wantCmp:     []cmpWant{{estimable: false, p: 1}},
			wantSRMP:    0,
			wantVerdict: Verdict{Winner: -1, Reason: ReasonSRM},
		},
		{
			name:        "zero clicks in both arms",
			give:        []Arm{{Weight: 0.5, Exposed: 5000}, {Weight: 0.5, Exposed: 5000}},
			wantArms:    []armWant{{0, 0, 0.000768}, {0, 0, 0.000768}},
			wantCmp:     []cmpWant{{estimable: true, difference: 0, p: 1}},
			wantSRMP:    1,
			wantVerdict: Verdict{Winner: -1, Reason: ReasonMinSample},
		},
		{
			name:        "everybody clicked in both arms",
			give:        []Arm{{Weight: 0.5, Exposed: 100, Clicked: 100}, {Weight: 0.5, Exposed: 100, Clicked: 100}},
			wantArms:    []armWant{{1, 0.963007, 1}, {1, 0.963007, 1}},
			wantCmp:     []cmpWant{{estimable: true, difference: 0, p: 1, liftDefined: true, liftBounded: true}},
			wantSRMP:    1,
			wantVerdict: Verdict{Winner: -1, Reason: ReasonMinSample},
		},
		{
			name:        "control without clicks: lift undefined, unbounded",
			give:        []Arm{{Weight: 0.5, Exposed: 500}, {Weight: 0.5, Exposed: 500, Clicked: 4}},
			wantArms:    []armWant{{0, 0, 0.007624}, {0.008, 0.003115, 0.020387}},
			wantCmp:     []cmpWant{{estimable: true, difference: 0.008, p: 0.044638, liftDefined: false, liftBounded: false}},
			wantSRMP:    1,
			wantVerdict: Verdict{Winner: -1, Reason: ReasonMinSample},
		},
		{
			name:        "one arm: no comparison, no SRM test",
			give:        []Arm{{Weight: 1, Exposed: 5000, Clicked: 250}},
			wantArms:    []armWant{{0.05, 0.044297, 0.056394}},
			wantSRMP:    1,
			wantVerdict: Verdict{Winner: -1, Reason: ReasonSingleArm},
		},
		{
			name:        "unequal weights matched: no SRM",
			give:        []Arm{{Weight: 0.8, Exposed: 8000, Clicked: 400}, {Weight: 0.2, Exposed: 2000, Clicked: 100}},
			wantArms:    []armWant{{0.05, 0.045436, 0.054996}, {0.05, 0.041281, 0.060444}},
			wantCmp:     []cmpWant{{estimable: true, difference: 0, p: 1, liftDefined: true, liftBounded: true}},
			wantSRMP:    1,
			wantVerdict: Verdict{Winner: -1, Reason: ReasonNoDifference},
		},
		{
			name:        "unequal weights observed equal: SRM",
			give:        []Arm{{Weight: 0.8, Exposed: 5000, Clicked: 250}, {Weight: 0.2, Exposed: 5000, Clicked: 400}},
			wantArms:    []armWant{{0.05, 0.044297, 0.056394}, {0.08, 0.072799, 0.087846}},
			wantCmp:     []cmpWant{{estimable: true, difference: 0.03, p: 0, liftDefined: true, liftBounded: true}},
			wantSRMP:    0,
			wantVerdict: Verdict{Winner: -1, Reason: ReasonSRM},
		},
		{
			name:        "clear winner at the minimum sample",
			give:        []Arm{{Weight: 0.5, Exposed: 5000, Clicked: 250}, {Weight: 0.5, Exposed: 5000, Clicked: 400}},
			wantArms:    []armWant{{0.05, 0.044297, 0.056394}, {0.08, 0.072799, 0.087846}},
			wantCmp:     []cmpWant{{estimable: true, difference: 0.03, p: 0, liftDefined: true, liftBounded: true}},
			wantSRMP:    1,
			wantVerdict: Verdict{Winner: 1, Reason: ReasonSequential},
		},
		{
			name:        "big difference below the minimum clicks",
			give:        []Arm{{Weight: 0.5, Exposed: 1000, Clicked: 5}, {Weight: 0.5, Exposed: 1000, Clicked: 60}},
			wantArms:    []armWant{{0.005, 0.002138, 0.011651}, {0.06, 0.046896, 0.076471}},
			wantCmp:     []cmpWant{{estimable: true, difference: 0.055, p: 0, liftDefined: true, liftBounded: true}},
			wantSRMP:    1,
			wantVerdict: Verdict{Winner: -1, Reason: ReasonMinSample},
		},
		{
			name: "every treatment worse: the control wins",
			give: []Arm{{Weight: 0.5, Exposed: 5000, Clicked: 400},
				{Weight: 0.25, Exposed: 2500, Clicked: 100}, {Weight: 0.25, Exposed: 2500, Clicked: 90}},
			wantArms: []armWant{{0.08, 0.072799, 0.087846}, {0.04, 0.032998, 0.048414}, {0.036, 0.02938, 0.044043}},
			wantCmp: []cmpWant{{estimable: true, difference: -0.04, p: 0, liftDefined: true, liftBounded: true},
				{estimable: true, difference: -0.044, p: 0, liftDefined: true, liftBounded: true}},
			wantSRMP:    1,
			wantVerdict: Verdict{Winner: 0, Reason: ReasonSequential},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Analyze(Input{Arms: tt.give})
			require.NoError(t, err)
			require.Len(t, got.Arms, len(tt.wantArms))
			for i, w := range tt.wantArms {
				assert.InDelta(t, w.ctr, got.Arms[i].CTR, 1e-12, "arms[%d].ctr", i)
				assert.InDelta(t, w.lo, got.Arms[i].CI.Lower, 1e-6, "arms[%d].ci.lower", i)
				assert.InDelta(t, w.hi, got.Arms[i].CI.Upper, 1e-6, "arms[%d].ci.upper", i)
				assert.True(t, got.Arms[i].CI.Lower >= 0 && got.Arms[i].CI.Upper <= 1, "arms[%d].ci inside [0, 1]", i)
			}
			require.Len(t, got.Comparisons, len(tt.wantCmp))
			for i, w := range tt.wantCmp {
				c := got.Comparisons[i]
				assert.Equal(t, w.estimable, c.Estimable, "comparisons[%d].estimable", i)
				assert.InDelta(t, w.difference, c.Difference, 1e-12, "comparisons[%d].difference", i)
				assert.InDelta(t, w.p, c.P, 1e-4, "comparisons[%d].p", i)
				assert.Equal(t, w.liftDefined, c.LiftDefined, "comparisons[%d].lift_defined", i)
				assert.Equal(t, w.liftBounded, c.LiftBounded, "comparisons[%d].lift_bounded", i)
				assert.Equal(t, c.PAdjusted < DefaultAlpha, c.DiffCI.Excludes(0), "comparisons[%d]: adjusted p and interval agree", i)
				if c.LiftBounded {
					assert.Equal(t, c.DiffCI.Excludes(0), c.LiftCI.Excludes(0), "comparisons[%d]: lift and difference intervals agree", i)
				}
			}
			assert.InDelta(t, tt.wantSRMP, got.SampleRatio.P, 1e-6, "srm p")
			assert.Equal(t, tt.wantVerdict, got.Verdict)
		})
	}
}

// TestVerdictNeedsTheEndForFixedHorizon: a difference the Bonferroni interval calls but the
// sequential one does not yet is a winner only once the planned end has passed.
func TestVerdictNeedsTheEndForFixedHorizon(t *testing.T) {
	end := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	arms := []Arm{{Weight: 0.5, Exposed: 10000, Clicked: 500}, {Weight: 0.5, Exposed: 10000, Clicked: 580}}
	tests := []struct {
		name string
		give Input
		want Verdict
	}{
		{"no planned end", Input{Arms: arms}, Verdict{Winner: -1, Reason: ReasonNoDifference}},
		{"before the end", Input{Arms: arms, Now: end.Add(-time.Second), PlannedEnd: end}, Verdict{Winner: -1, Reason: ReasonNoDifference}},
		{"at the end", Input{Arms: arms, Now: end, PlannedEnd: end}, Verdict{Winner: 1, Reason: ReasonFixedHorizon}},
		{"after the end", Input{Arms: arms, Now: end.Add(time.Hour), PlannedEnd: end}, Verdict{Winner: 1, Reason: ReasonFixedHorizon}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Analyze(tt.give)
			require.NoError(t, err)
			c := got.Comparisons[0]
			require.True(t, c.DiffCI.Excludes(0), "the fixed-horizon interval excludes 0: %+v", c.DiffCI)
			require.False(t, c.Sequential.CI.Excludes(0), "the sequential interval does not: %+v", c.Sequential.CI)
			assert.Equal(t, tt.want, got.Verdict)
		})
	}
}

// TestBonferroniWidensWithArms: the same pair of counts is less significant among more arms.
func TestBonferroniWidensWithArms(t *testing.T) {
	pair := []Arm{{Exposed: 10000, Clicked: 500}, {Exposed: 10000, Clicked: 580}}
	var widths, pAdj []float64
	for _, arms := range []int{2, 3, 5, 9} {
		in := Input{Arms: make([]Arm, arms)}
		for i := range in.Arms {
			in.Arms[i] = pair[min(i, 1)]
			in.Arms[i].Weight = 1 / float64(arms)
		}
		got, err := Analyze(in)
		require.NoError(t, err)
		c := got.Comparisons[0]
		widths = append(widths, c.DiffCI.Upper-c.DiffCI.Lower)
		pAdj = append(pAdj, c.PAdjusted)
		assert.InDelta(t, math.Min(1, float64(arms-1)*c.P), c.PAdjusted, 1e-15)
	}
	assert.IsIncreasing(t, widths)
	assert.IsIncreasing(t, pAdj)
}

func TestChiSquareSFKnownValues(t *testing.T) {
	// Textbook critical values: the upper tail at the 5% and 0.1% points of χ²(df).
	tests := []struct {
		x    float64
		df   int
		want float64
	}{
		{3.841458820694124, 1, 0.05},
		{5.991464547107979, 2, 0.05},
		{10.827566170662733, 1, 0.001},
		{13.815510557964274, 2, 0.001},
		{26.124481558376143, 8, 0.001},
		{0.5, 8, 0.999866630349486},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, chiSquareSF(tt.x, tt.df), 1e-7, "χ²(%d) at %v", tt.df, tt.x)
	}
}

// Needed is the fixed-horizon sample size of the difference seen (docs/EXPERIMENTS.md): known
// answers worked by hand, and no estimate where there is nothing to estimate.
func TestNeeded(t *testing.T) {
	t.Parallel()
	// 5% against 6%, two arms at 50%: n = (1.959964 + 0.841621)² · (0.05·0.95 + 0.06·0.94) / 0.01²
	// = 7.848879 · 0.1039 / 0.0001 = 8154.99 → 8155 per arm, 16310 users in all
	arms := func(ea, ca, eb, cb int64) []Arm {
		return []Arm{{Weight: 0.5, Exposed: ea, Clicked: ca}, {Weight: 0.5, Exposed: eb, Clicked: cb}}
	}
	tests := []struct {
		name       string
		arms       []Arm
		wantOK     bool
		wantPerArm int64
		wantMore   int64
	}{
		{"5% against 6% after 2,000 users", arms(1000, 50, 1000, 60), true, 8155, 16310 - 2000},
		{"the minimum sample binds a large difference", arms(400, 20, 400, 80), true, 1000, 2000 - 800},
		{"nobody yet: nothing to estimate", arms(0, 0, 0, 0), false, 0, 0},
		{"no difference so far: unbounded", arms(500, 25, 500, 25), false, 0, 0},
		{"a winner already", arms(20000, 1000, 20000, 1400), false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Arms: tt.arms, Now: time.Unix(0, 0)}
			res, err := Analyze(in)
			require.NoError(t, err)
			need, ok := Needed(in, res)
			require.Equal(t, tt.wantOK, ok, "verdict %+v", res.Verdict)
			assert.Equal(t, tt.wantPerArm, need.PerArm)
			assert.Equal(t, tt.wantMore, need.More)
		})
	}
}
