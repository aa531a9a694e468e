package stats

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/experiment/simtest"
)

// aaRepetitions is the number of A/A experiments of TestSimulatedAAPeeking; docs/EXPERIMENTS.md
// quotes a run with -aa-reps=2000 for tighter figures.
var aaRepetitions = flag.Int("aa-reps", 100, "repetitions of the A/A peeking simulation")

// simArm is an arm of a simulated experiment: its configured weight, the true click-through
// rate of its users, and the share of its users lost before they are counted (an SRM bug).
type simArm struct {
	weight, ctr, lost float64
}

// simulate assigns users one by one to arms by weight and draws each one's click, adding to
// counts. The service assigns by a hash of the user id, which for distinct ids behaves as this
// independent draw.
func simulate(rng *rand.Rand, arms []simArm, users int, counts []Arm) {
	for range users {
		u, i := rng.Float64(), 0
		for ; i < len(arms)-1 && u >= arms[i].weight; i++ {
			u -= arms[i].weight
		}
		if arms[i].lost > 0 && rng.Float64() < arms[i].lost {
			continue
		}
		counts[i].Exposed++
		if rng.Float64() < arms[i].ctr {
			counts[i].Clicked++
		}
	}
}

func newCounts(arms []simArm) []Arm {
	counts := make([]Arm, len(arms))
	for i, a := range arms {
		counts[i].Weight = a.weight
	}
	return counts
}

// TestSimulatedThreeArms: 100,000 users, 34/33/33, true CTRs 5% (control), 6% and 5.5%: the
// split is within ±1 point of the configuration, no SRM, and the 6% arm is called the winner.
func TestSimulatedThreeArms(t *testing.T) {
	arms := []simArm{{weight: 0.34, ctr: 0.05}, {weight: 0.33, ctr: 0.06}, {weight: 0.33, ctr: 0.055}}
	counts := newCounts(arms)
	simulate(rand.New(rand.NewPCG(23, 1)), arms, 100_000, counts)

	got, err := Analyze(Input{Arms: counts, Control: 0})
	require.NoError(t, err)
	for i, c := range counts {
		share := float64(c.Exposed) / 100_000
		assert.InDelta(t, arms[i].weight, share, 0.01, "arm %d share", i)
		t.Logf("arm %d: %d users (%.2f%%), %d clicked, CTR %.4f [%.4f, %.4f]", i, c.Exposed, 100*share,
			c.Clicked, got.Arms[i].CTR, got.Arms[i].CI.Lower, got.Arms[i].CI.Upper)
	}
	for _, c := range got.Comparisons {
		t.Logf("arm %d vs control: lift %+.3f [%+.3f, %+.3f], p %.2g (adjusted %.2g), sequential p %.2g",
			c.Arm, c.Lift, c.LiftCI.Lower, c.LiftCI.Upper, c.P, c.PAdjusted, c.Sequential.P)
	}
	t.Logf("SRM χ²=%.3f p=%.3f; verdict %+v", got.SampleRatio.ChiSquare, got.SampleRatio.P, got.Verdict)
	assert.False(t, got.SampleRatio.SRM)
	assert.Equal(t, Verdict{Winner: 1, Reason: ReasonSequential}, got.Verdict)
}

// TestSimulatedSRM: the same experiment where arm 1 loses 5% of its users before they are
// counted is flagged, and no winner is called.
func TestSimulatedSRM(t *testing.T) {
	arms := []simArm{{weight: 0.34, ctr: 0.05}, {weight: 0.33, ctr: 0.06, lost: 0.05}, {weight: 0.33, ctr: 0.055}}
	counts := newCounts(arms)
	simulate(rand.New(rand.NewPCG(23, 2)), arms, 100_000, counts)

	got, err := Analyze(Input{Arms: counts, Control: 0})
	require.NoError(t, err)
	t.Logf("users %d/%d/%d: SRM χ²=%.1f p=%.3g", counts[0].Exposed, counts[1].Exposed, counts[2].Exposed,
		got.SampleRatio.ChiSquare, got.SampleRatio.P)
	assert.True(t, got.SampleRatio.SRM)
	assert.Equal(t, Verdict{Winner: -1, Reason: ReasonSRM}, got.Verdict)
}

// TestSimulatedAAPeeking: A/A experiments (two identical arms, 5% CTR, 2,000 users a day) looked
// at daily for 14 days and stopped at the first look that calls a winner. Every winner is false.
// The sequential rule must call at most 5% of them; the fixed-horizon interval read at every
// look (peeking) is the failure it prevents, and must show here (≥ 10%), or the simulation has
// no power to tell the two apart.
func TestSimulatedAAPeeking(t *testing.T) {
	const looks, usersPerDay = 14, 2000
	arms := []simArm{{weight: 0.5, ctr: 0.05}, {weight: 0.5, ctr: 0.05}}
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 0, looks)
	reps := *aaRepetitions

	rng := rand.New(rand.NewPCG(23, 3))
	var sequential, withEnd, peeking int
	for range reps {
		counts := newCounts(arms)
		var seqDone, endDone, peekDone bool
		for day := 1; day <= looks; day++ {
			simulate(rng, arms, usersPerDay, counts)
			now := start.AddDate(0, 0, day)
			// The sequential rule alone (no planned end), the full rule (the planned end is the
			// last look), and the fixed-horizon test at α read at every look as if it were the end.
			seq, err := Analyze(Input{Arms: counts})
			require.NoError(t, err)
			full, err := Analyze(Input{Arms: counts, Now: now, PlannedEnd: end})
			require.NoError(t, err)
			seqDone = seqDone || seq.Verdict.Winner >= 0
			endDone = endDone || full.Verdict.Winner >= 0
			peekDone = peekDone || seq.Comparisons[0].PAdjusted < DefaultAlpha
		}
		sequential += b2i(seqDone)
		withEnd += b2i(endDone)
		peeking += b2i(peekDone)
	}
	// A rule whose true false-winner rate is 5% calls more than limit of the reps with probability
	// ≤ 1% (binomial upper tail): above it, the rule's rate is very likely above 5%.
	limit := simtest.BinomialUpper(reps, 0.05, 0.01)
	share := func(n int) float64 { return float64(n) / float64(reps) }
	t.Logf("A/A, %d repetitions × %d daily looks × %d users: false winners sequential %d (%.1f%%), "+
		"sequential + fixed horizon at the planned end %d (%.1f%%), fixed-horizon peeking %d (%.1f%%); limit %d",
		reps, looks, usersPerDay, sequential, 100*share(sequential), withEnd, 100*share(withEnd),
		peeking, 100*share(peeking), limit)
	assert.LessOrEqual(t, sequential, limit, "sequential false winners")
	assert.LessOrEqual(t, withEnd, limit, "false winners of the full rule (sequential, and fixed horizon at the end)")
	assert.GreaterOrEqual(t, share(peeking), 0.10, "fixed-horizon peeking false winners")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
