package deploy_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/audience"
	"popupsvc/internal/config"
	"popupsvc/internal/popup"
)

// uploadPeaks are popup-api's measured peaks while it takes an audience replace: its VmHWM and
// the bytes of the sets it held afterwards (popup_audience_bytes), from the command given
// (docs/PERFORMANCE.md, "Audience uploads and memory"). Replace a row when the figure changes.
var uploadPeaks = []struct {
	members          int64
	peakMiB, setsMiB float64
	command          string
}{
	{20_000_000, 275.9, 161.2, "make bench-upload (BENCH_UPLOAD_N=20000000, BENCH_UPLOAD_INITIAL=1000000, BENCH_UPLOAD_REPEAT=3)"},
}

// TestMemoryLimitsHoldTheAudienceBudgetAndAReplace: wherever deploy/ caps popup-api's memory,
// the cap and GOMEMLIMIT hold the worst the measurements predict: every audience set the
// instance's POPUP_AUDIENCE_MEMORY allows, plus the largest replace's new set beside its old one,
// plus what the measured peak held over its sets (the upload's buffer or the load's garbage,
// and the rest of the process). A cap under it is an instance killed with the traffic it serves.
func TestMemoryLimitsHoldTheAudienceBudgetAndAReplace(t *testing.T) {
	t.Parallel()
	var over float64 // MiB over the sets, the most measured
	for _, m := range uploadPeaks {
		require.Greater(t, m.peakMiB, m.setsMiB, "%s", m.command)
		over = max(over, m.peakMiB-m.setsMiB)
	}
	const mib = 1 << 20
	replaceMiB := float64(popup.MaxReplaceMembers) * audience.BytesPerMember / mib
	check := func(t *testing.T, where string, env map[string]string, limit int64, goMemLimit string) {
		t.Helper()
		cfg, err := config.Parse(env)
		require.NoError(t, err, "%s: its POPUP_* settings", where)
		need := float64(cfg.AudienceMemory)/mib + replaceMiB + over
		require.NotZero(t, limit, "%s: no memory limit", where)
		assert.LessOrEqual(t, need, float64(limit)/mib, "%s: a memory limit of %d MiB, and the audiences may take %.0f MiB", where, limit/mib, need)
		require.NotEmpty(t, goMemLimit, "%s: no GOMEMLIMIT", where)
		assert.LessOrEqual(t, need, float64(parseGoBytes(t, goMemLimit))/mib,
			"%s: GOMEMLIMIT %s under the %.0f MiB the audiences may take: the collector would run back to back", where, goMemLimit, need)
	}

	o := loadK8s(t)
	popupConfig := map[string]string{}
	if cm := o.configMaps["popup-config"]; cm != nil {
		popupConfig = cm.Data
	}
	found := 0
	for _, ps := range o.podSpecs() {
		for _, c := range ps.spec.Containers {
			if len(c.Command) == 0 || c.Command[0] != "/usr/local/bin/popup-api" {
				continue
			}
			found++
			env := popupEnv(popupConfig)
			var goMemLimit string
			for _, e := range c.Env {
				if e.Name == "GOMEMLIMIT" {
					goMemLimit = e.Value
				} else if strings.HasPrefix(e.Name, "POPUP_") && e.Value != "" {
					env[e.Name] = e.Value
				}
			}
			check(t, ps.owner+"/"+c.Name, env, c.Resources.Limits.Memory().Value(), goMemLimit)
		}
	}
	require.NotZero(t, found, "no popup-api container in deploy/k8s")

	c, raw := loadCompose(t)
	api := raw["services"].(map[string]any)["api"].(map[string]any)
	limit, _ := api["mem_limit"].(string)
	require.NotEmpty(t, limit, "compose api: no mem_limit")
	check(t, "compose api", popupEnv(c.Services["api"].Environment), parseUnitBytes(t, limit), c.Services["api"].Environment["GOMEMLIMIT"])

	u := parseUnit(t, filepath.Join(systemdDir, "popup-api.service"))
	var goMemLimit string
	for _, e := range u["Service"]["Environment"] {
		if v, ok := strings.CutPrefix(e, "GOMEMLIMIT="); ok {
			goMemLimit = v
		}
	}
	memMax := u.get("Service", "MemoryMax")
	require.NotEmpty(t, memMax, "popup-api.service: no MemoryMax")
	check(t, "popup-api.service with popup.env.example", popupEnv(envFile(t, envExample)), parseUnitBytes(t, memMax), goMemLimit)
}

// popupEnv keeps the POPUP_AUDIENCE_* settings of env, which are what the memory check reads
// (the others are the deploy's own business and may name hosts config.Parse cannot check here).
func popupEnv(env map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		if strings.HasPrefix(k, "POPUP_AUDIENCE_") {
			out[k] = v
		}
	}
	return out
}

// envFile reads a KEY=VALUE file (comments and blank lines skipped).
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	require.NoError(t, sc.Err())
	return out
}
