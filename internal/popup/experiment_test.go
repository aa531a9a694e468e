package popup

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExperimentBucketsKnownAnswers pins the documented assignment hash: a change to it would
// silently move every running experiment's users between arms. The values come from the Python
// in CoverageBucket's doc comment, not from this code.
func TestExperimentBucketsKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		salt, uid     string
		coverage, arm int
	}{
		{"3f9a0c2b7d1e4a65", "user-1", 9813, 7857},
		{"3f9a0c2b7d1e4a65", "user-2", 2986, 8707},
		{"0000000000000000", "u1", 4090, 92},
		{"spring-sale_2026", "vip-3", 4738, 1263},
		{"a", "a:b.c", 2946, 1529},
	} {
		assert.Equal(t, tc.coverage, CoverageBucket(tc.salt, tc.uid), "coverage %q %q", tc.salt, tc.uid)
		assert.Equal(t, tc.arm, ArmBucket(tc.salt, tc.uid), "arm %q %q", tc.salt, tc.uid)
	}
}

func threeArms() *Experiment {
	return &Experiment{Status: ExperimentRunning, CoveragePercent: 100, Phase: 1, Salt: "5eed5eed5eed5eed",
		Variants: []Variant{{Key: "a", Weight: 34}, {Key: "b", Weight: 33}},
		Control:  &Control{Weight: 33, Mode: ControlNone}}
}

// TestAssignmentIndependentOfRollout is the failure peers shipped: with one hash for rollout and
// split, a 10% rollout skews an equal 3-way split to about 40/30/30. Among the users a 10% rollout
// lets in, each arm must get its share within one percentage point.
func TestAssignmentIndependentOfRollout(t *testing.T) {
	e := threeArms()
	e.Variants[0].Weight, e.Variants[1].Weight, e.Control.Weight = 34, 33, 33
	a := NewAssigner(e)
	counts := make([]int, 3)
	in := 0
	for i := range 300_000 {
		uid := "user-" + strconv.Itoa(i)
		if RolloutBucket("1", uid) >= 10 {
			continue
		}
		in++
		counts[a.Assign(uid)]++
	}
	require.Greater(t, in, 25_000)
	for i, w := range []float64{34, 33, 33} {
		got := 100 * float64(counts[i]) / float64(in)
		assert.InDelta(t, w, got, 1, "arm %d: %.2f%% of %d users", i, got, in)
	}
}

// TestRaisingCoverageMovesNobody: a user in coverage keeps the arm when coverage grows, and only
// users outside it are added.
func TestRaisingCoverageMovesNobody(t *testing.T) {
	low, high := threeArms(), threeArms()
	low.CoveragePercent, high.CoveragePercent = 20, 60
	al, ah := NewAssigner(low), NewAssigner(high)
	inLow, inHigh := 0, 0
	for i := range 20_000 {
		uid := "u" + strconv.Itoa(i)
		l, h := al.Assign(uid), ah.Assign(uid)
		if l >= 0 {
			inLow++
			assert.Equal(t, l, h, "uid %s moved from arm %d to %d", uid, l, h)
		}
		if h >= 0 {
			inHigh++
		}
	}
	assert.InDelta(t, 0.2, float64(inLow)/20_000, 0.015)
	assert.InDelta(t, 0.6, float64(inHigh)/20_000, 0.015)
}

func TestAssignerAssignsNobodyUnlessRunning(t *testing.T) {
	for _, st := range []ExperimentStatus{ExperimentDraft, ExperimentStopped, ExperimentConcluded} {
		e := threeArms()
		e.Status = st
		a := NewAssigner(e)
		assert.Equal(t, -1, a.Assign("user-1"), st)
	}
	var zero Assigner
	assert.Equal(t, -1, zero.Assign("user-1"))
	e := threeArms()
	e.CoveragePercent = 0
	a := NewAssigner(e)
	assert.Equal(t, -1, a.Assign("user-1"))
}

func TestAssignAllocatesNothing(t *testing.T) {
	a := NewAssigner(threeArms())
	allocs := testing.AllocsPerRun(100, func() { _ = a.Assign("user-12345") })
	assert.Zero(t, allocs)
}

func BenchmarkAssign(b *testing.B) {
	a := NewAssigner(threeArms())
	uid := "user-1234567"
	for b.Loop() {
		_ = a.Assign(uid)
	}
}

func TestReassigns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(e *Experiment)
		want   bool
	}{
		{"nothing", func(*Experiment) {}, false},
		{"coverage", func(e *Experiment) { e.CoveragePercent = 50 }, false},
		{"planned end", func(e *Experiment) { t := time.Unix(2e9, 0); e.PlannedEndAt = &t }, false},
		{"weights", func(e *Experiment) { e.Variants[0].Weight, e.Variants[1].Weight = 33, 34 }, true},
		{"content", func(e *Experiment) { e.Variants[1].Title = "new" }, true},
		{"key", func(e *Experiment) { e.Variants[1].Key = "c" }, true},
		{"control mode", func(e *Experiment) { e.Control.Mode = ControlFallThrough }, true},
		{"no control", func(e *Experiment) { e.Control = nil; e.Variants[1].Weight = 66 }, true},
		{"one more variant", func(e *Experiment) {
			e.Variants = append(e.Variants, Variant{Key: "c", Weight: 13})
			e.Control.Weight = 20
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := clone(threeArms())
			tc.change(next)
			assert.Equal(t, tc.want, Reassigns(threeArms(), next))
		})
	}
}

func clone(e *Experiment) *Experiment {
	c := *e
	c.Variants = append([]Variant(nil), e.Variants...)
	if e.Control != nil {
		ctl := *e.Control
		c.Control = &ctl
	}
	return &c
}

func TestKeepExperimentPhases(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	started := now.Add(-time.Hour)
	stored := threeArms()
	stored.PhaseStartedAt = &started

	// A new experiment: phase 1, a fresh salt, a draft whatever was sent.
	fresh := clone(threeArms())
	fresh.Salt, fresh.Phase = "", 9
	moved, err := KeepExperiment(fresh, nil, false, now)
	require.NoError(t, err)
	assert.False(t, moved)
	assert.Equal(t, ExperimentDraft, fresh.Status)
	assert.Equal(t, 1, fresh.Phase)
	assert.True(t, ValidBucketSeed(fresh.Salt))

	// Changes of a stored experiment; the server-managed fields sent are never taken.
	draft := clone(stored)
	draft.Status, draft.PhaseStartedAt = ExperimentDraft, nil
	newWeights := func(e *Experiment) { e.Variants[0].Weight, e.Variants[1].Weight = 40, 27 }
	for _, tc := range []struct {
		name      string
		stored    *Experiment
		change    func(e *Experiment)
		accept    bool
		wantMoved bool
		wantPhase int // 2: a new phase with a new salt, else the stored salt
	}{
		{name: "coverage only: same phase", stored: stored, change: func(e *Experiment) {
			e.CoveragePercent, e.Salt, e.Phase, e.Status = 50, "forged", 7, ExperimentConcluded
		}, wantPhase: 1},
		{name: "weights: a new phase, beginning now since it runs", stored: stored, change: newWeights, wantPhase: 2},
		{name: "weights, accepting that users move: the phase kept, the move reported", stored: stored,
			change: newWeights, accept: true, wantMoved: true, wantPhase: 1},
		{name: "weights of a phase that never ran: nobody was assigned, the phase kept", stored: draft,
			change: newWeights, wantPhase: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := clone(tc.stored)
			tc.change(next)
			moved, err := KeepExperiment(next, tc.stored, tc.accept, now)
			require.NoError(t, err)
			assert.Equal(t, tc.wantMoved, moved)
			assert.Equal(t, tc.stored.Status, next.Status)
			assert.Equal(t, tc.wantPhase, next.Phase)
			if tc.wantPhase == 1 {
				assert.Equal(t, tc.stored.Salt, next.Salt)
				assert.Equal(t, tc.stored.PhaseStartedAt, next.PhaseStartedAt)
				return
			}
			assert.NotEqual(t, tc.stored.Salt, next.Salt)
			require.NotNil(t, next.PhaseStartedAt)
			assert.Equal(t, now, *next.PhaseStartedAt)
		})
	}

	// A running experiment cannot be removed; a stopped one can.
	_, err = KeepExperiment(nil, stored, false, now)
	assert.ErrorIs(t, err, ErrExperimentRunning)
	stopped := clone(stored)
	require.NoError(t, stopped.Stop())
	_, err = KeepExperiment(nil, stopped, false, now)
	assert.NoError(t, err)

	// A concluded experiment is read-only, but may be sent back unchanged.
	concluded := clone(stored)
	concluded.Status, concluded.ConcludedVariant = ExperimentConcluded, "b"
	same := clone(concluded)
	same.Status = ExperimentDraft
	_, err = KeepExperiment(same, concluded, false, now)
	require.NoError(t, err)
	assert.Equal(t, ExperimentConcluded, same.Status)
	changed := clone(concluded)
	changed.CoveragePercent = 10
	_, err = KeepExperiment(changed, concluded, false, now)
	assert.ErrorIs(t, err, ErrExperimentConcluded)
}

func TestExperimentTransitions(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	e := threeArms()
	e.Status = ExperimentDraft
	require.NoError(t, e.Start(now))
	assert.Equal(t, ExperimentRunning, e.Status)
	assert.Equal(t, now, *e.PhaseStartedAt)
	assert.ErrorIs(t, e.Start(now), ErrExperimentState)
	require.NoError(t, e.Stop())
	assert.ErrorIs(t, e.Stop(), ErrExperimentState)
	require.NoError(t, e.Start(now.Add(time.Hour)))
	assert.Equal(t, now, *e.PhaseStartedAt, "running again keeps the phase and its start")

	p := Popup{Experiment: e, Creative: Creative{Title: "own"}}
	e.Variants[1].Creative = Creative{Title: "B wins", Buttons: []Button{{Text: "Go"}}}
	assert.ErrorIs(t, p.Conclude("control"), ErrUnknownVariant)
	assert.ErrorIs(t, p.Conclude("zz"), ErrUnknownVariant)
	require.NoError(t, p.Conclude("b"))
	assert.Equal(t, "B wins", p.Title)
	assert.Equal(t, ExperimentConcluded, e.Status)
	assert.Equal(t, "b", e.ConcludedVariant)
	assert.ErrorIs(t, p.Conclude("b"), ErrExperimentConcluded)
	assert.ErrorIs(t, e.Start(now), ErrExperimentConcluded)

	var none *Experiment
	assert.ErrorIs(t, none.Start(now), ErrExperimentMissing)
	assert.True(t, errors.Is((&Popup{}).Conclude("a"), ErrExperimentMissing))
}

func TestExperimentValidation(t *testing.T) {
	base := func() *Experiment {
		e := threeArms()
		e.Status = ExperimentDraft
		return e
	}
	for _, tc := range []struct {
		name   string
		change func(e *Experiment)
		fields []string
	}{
		{"valid", func(*Experiment) {}, nil},
		{"no variants", func(e *Experiment) { e.Variants = nil; e.Control.Weight = 100 }, []string{"experiment.variants", "experiment.control.weight"}},
		{"one arm", func(e *Experiment) { e.Control = nil; e.Variants = e.Variants[:1]; e.Variants[0].Weight = 100 }, []string{"experiment.variants"}},
		{"weights", func(e *Experiment) { e.Variants[0].Weight = 30 }, []string{"experiment.variants"}},
		{"zero weight", func(e *Experiment) { e.Variants[0].Weight = 0; e.Control.Weight = 67 }, []string{"experiment.variants[0].weight"}},
		{"key control", func(e *Experiment) { e.Variants[0].Key = "control" }, []string{"experiment.variants[0].key"}},
		{"key case", func(e *Experiment) { e.Variants[0].Key = "A" }, []string{"experiment.variants[0].key"}},
		{"key twice", func(e *Experiment) { e.Variants[1].Key = "a" }, []string{"experiment.variants[1].key"}},
		{"coverage", func(e *Experiment) { e.CoveragePercent = 101 }, []string{"experiment.coverage_percent"}},
		{"mode", func(e *Experiment) { e.Control.Mode = "hide" }, []string{"experiment.control.mode"}},
		{"variant content", func(e *Experiment) {
			e.Variants[1].LinkURL = "javascript:alert(1)"
			e.Variants[1].Buttons = []Button{{Text: " "}}
		}, []string{"experiment.variants[1].link_url", "experiment.variants[1].buttons[0].text"}},
		{"variant ext", func(e *Experiment) { e.Variants[0].Ext = []byte(`[1]`) }, []string{"experiment.variants[0].ext"}},
		{"planned end", func(e *Experiment) { t := time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC); e.PlannedEndAt = &t }, []string{"experiment.planned_end_at"}},
		{"nine variants", func(e *Experiment) {
			e.Control = nil
			e.Variants = nil
			for i := range 9 {
				e.Variants = append(e.Variants, Variant{Key: "v" + strconv.Itoa(i), Weight: 11})
			}
			e.Variants[0].Weight = 12
		}, []string{"experiment.variants"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := base()
			tc.change(e)
			in := Input{Name: "n", Experiment: e}
			_, err := in.BuildWith(LinkSchemes{})
			if tc.fields == nil {
				require.NoError(t, err)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			var got []string
			for _, f := range ve.Fields {
				got = append(got, f.Field)
			}
			assert.Equal(t, tc.fields, got)
		})
	}
}

// TestArmShareMatchesWeights: over many users the arms take their weights' shares.
func TestArmShareMatchesWeights(t *testing.T) {
	e := threeArms()
	e.Variants[0].Weight, e.Variants[1].Weight, e.Control.Weight = 50, 30, 20
	a := NewAssigner(e)
	counts := make([]int, 3)
	const n = 100_000
	for i := range n {
		counts[a.Assign("x"+strconv.Itoa(i))]++
	}
	for i, w := range []float64{50, 30, 20} {
		share := 100 * float64(counts[i]) / n
		assert.LessOrEqual(t, math.Abs(share-w), 0.6, "arm %d: %.2f%%", i, share)
	}
}
