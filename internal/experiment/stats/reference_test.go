package stats

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/testenv"
)

// referenceTolerance: every number agrees with scipy's within 1e-6, relative for the
// statistics larger than 1 (z, χ²).
const referenceTolerance = 1e-6

type refCase struct {
	Arms    []refArm `json:"arms"`
	Control int      `json:"control"`
	Alpha   float64  `json:"alpha"`
	Tau2    float64  `json:"tau2"`
}

type refArm struct {
	Weight  float64 `json:"weight"`
	Exposed int64   `json:"exposed"`
	Clicked int64   `json:"clicked"`
}

type refResult struct {
	Arms []struct {
		CTR   float64 `json:"ctr"`
		Lower float64 `json:"lower"`
		Upper float64 `json:"upper"`
	} `json:"arms"`
	Comparisons []struct {
		Arm        int      `json:"arm"`
		Difference float64  `json:"difference"`
		Z          float64  `json:"z"`
		P          float64  `json:"p"`
		PAdjusted  float64  `json:"p_adjusted"`
		DiffLower  float64  `json:"diff_lower"`
		DiffUpper  float64  `json:"diff_upper"`
		Lift       *float64 `json:"lift"`
		LiftLower  *float64 `json:"lift_lower"`
		LiftUpper  *float64 `json:"lift_upper"`
		SeqP       float64  `json:"seq_p"`
		SeqLower   float64  `json:"seq_lower"`
		SeqUpper   float64  `json:"seq_upper"`
	} `json:"comparisons"`
	SRM struct {
		ChiSquare float64 `json:"chi2"`
		DF        int     `json:"df"`
		P         float64 `json:"p"`
	} `json:"srm"`
}

// referenceCases cover two, three and nine arms, equal and unequal weights, small and large
// samples, a control without clicks (lift undefined, Fieller unbounded), an arm where everybody
// clicked, p-values from about 1 down to 1e-100, a sample-ratio mismatch and other α and τ².
var referenceCases = []refCase{
	{Control: 0, Alpha: 0.05, Tau2: 1e-4, Arms: []refArm{{0.5, 10000, 500}, {0.5, 10000, 560}}},
	{Control: 0, Alpha: 0.05, Tau2: 1e-4, Arms: []refArm{{0.34, 34000, 1700}, {0.33, 33100, 1820}, {0.33, 32900, 1640}}},
	{Control: 1, Alpha: 0.05, Tau2: 1e-4, Arms: []refArm{{0.1, 5000, 240}, {0.2, 10100, 480}, {0.1, 4950, 260}, {0.1, 5020, 300},
		{0.1, 4990, 250}, {0.1, 5010, 199}, {0.1, 4980, 251}, {0.1, 5003, 330}, {0.1, 4940, 245}}},
	{Control: 0, Alpha: 0.05, Tau2: 1e-4, Arms: []refArm{{0.5, 40, 3}, {0.5, 35, 0}}},
	{Control: 0, Alpha: 0.05, Tau2: 1e-4, Arms: []refArm{{0.5, 500, 0}, {0.5, 500, 4}}},
	{Control: 0, Alpha: 0.05, Tau2: 1e-4, Arms: []refArm{{0.5, 100, 100}, {0.5, 100, 97}}},
	{Control: 0, Alpha: 0.05, Tau2: 1e-4, Arms: []refArm{{0.5, 1000000, 20000}, {0.5, 1000000, 24000}}},
	{Control: 0, Alpha: 0.05, Tau2: 1e-4, Arms: []refArm{{1, 1234, 56}}},
	{Control: 2, Alpha: 0.05, Tau2: 1e-4, Arms: []refArm{{0.34, 34000, 1000}, {0.33, 31350, 940}, {0.33, 33000, 990}}},
	{Control: 0, Alpha: 0.1, Tau2: 1e-3, Arms: []refArm{{0.7, 7000, 700}, {0.3, 3050, 330}}},
	{Control: 0, Alpha: 0.01, Tau2: 2.5e-5, Arms: []refArm{{0.25, 2500, 50}, {0.75, 7400, 180}}},
}

// venvPython returns the project's venv python, or ends the test naming what to run.
func venvPython(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	venv := os.Getenv("POPUP_VENV")
	if venv == "" {
		venv = ".venv"
	}
	if !filepath.IsAbs(venv) {
		venv = filepath.Join(root, venv)
	}
	py := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(py); err != nil {
		testenv.Missing(t, py+" is missing: run scripts/venv.sh (the scipy reference needs the project's venv)")
	}
	return py
}

// runReference runs the scipy script testdata/script in the project's venv on cases (as JSON on
// its stdin) and returns its stdout.
func runReference(t *testing.T, script string, cases any) []byte {
	t.Helper()
	py := venvPython(t)
	in, err := json.Marshal(cases)
	require.NoError(t, err)
	cmd := exec.Command(py, filepath.Join("testdata", script))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && strings.Contains(stderr.String(), "ModuleNotFoundError") {
		// scipy (or numpy) is not in the venv: one interpreter start tells, importing scipy.stats
		// takes seconds.
		testenv.Missing(t, py+" cannot import scipy: run scripts/venv.sh ("+lastLine(stderr.String())+")")
	}
	require.NoError(t, err, "%s: %s", script, stderr.String())
	return out
}

// TestMatchesScipyReference compares every number Analyze computes with the independent
// computation of testdata/reference.py (scipy) on the same inputs.
func TestMatchesScipyReference(t *testing.T) {
	out := runReference(t, "reference.py", referenceCases)
	var refs []refResult
	require.NoError(t, json.Unmarshal(out, &refs))
	require.Len(t, refs, len(referenceCases))

	for ci, rc := range referenceCases {
		ref := refs[ci]
		arms := make([]Arm, len(rc.Arms))
		for i, a := range rc.Arms {
			arms[i] = Arm(a)
		}
		got, err := Analyze(Input{Arms: arms, Control: rc.Control, Options: Options{Alpha: rc.Alpha, MixingVariance: rc.Tau2}})
		require.NoError(t, err, "case %d", ci)
		near := func(name string, want, have float64) {
			t.Helper()
			tol := referenceTolerance * math.Max(1, math.Abs(want))
			assert.InDelta(t, want, have, tol, "case %d: %s", ci, name)
		}
		require.Len(t, got.Arms, len(ref.Arms), "case %d", ci)
		for i, ra := range ref.Arms {
			near("arms[].ctr", ra.CTR, got.Arms[i].CTR)
			near("arms[].ci.lower", ra.Lower, got.Arms[i].CI.Lower)
			near("arms[].ci.upper", ra.Upper, got.Arms[i].CI.Upper)
		}
		require.Len(t, got.Comparisons, len(ref.Comparisons), "case %d", ci)
		for i, rcmp := range ref.Comparisons {
			c := got.Comparisons[i]
			assert.Equal(t, rcmp.Arm, c.Arm, "case %d", ci)
			assert.True(t, c.Estimable, "case %d", ci)
			near("difference", rcmp.Difference, c.Difference)
			near("z", rcmp.Z, c.Z)
			near("p", rcmp.P, c.P)
			near("p_adjusted", rcmp.PAdjusted, c.PAdjusted)
			near("diff_ci.lower", rcmp.DiffLower, c.DiffCI.Lower)
			near("diff_ci.upper", rcmp.DiffUpper, c.DiffCI.Upper)
			assert.Equal(t, rcmp.Lift != nil, c.LiftDefined, "case %d: lift defined", ci)
			if rcmp.Lift != nil {
				near("lift", *rcmp.Lift, c.Lift)
			}
			assert.Equal(t, rcmp.LiftLower != nil, c.LiftBounded, "case %d: lift interval bounded", ci)
			if rcmp.LiftLower != nil {
				near("lift_ci.lower", *rcmp.LiftLower, c.LiftCI.Lower)
				near("lift_ci.upper", *rcmp.LiftUpper, c.LiftCI.Upper)
			}
			near("sequential.p", rcmp.SeqP, c.Sequential.P)
			near("sequential.ci.lower", rcmp.SeqLower, c.Sequential.CI.Lower)
			near("sequential.ci.upper", rcmp.SeqUpper, c.Sequential.CI.Upper)
		}
		near("srm.chi_square", ref.SRM.ChiSquare, got.SampleRatio.ChiSquare)
		assert.Equal(t, ref.SRM.DF, got.SampleRatio.DF, "case %d", ci)
		near("srm.p", ref.SRM.P, got.SampleRatio.P)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
