package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

const (
	alertRulesPath     = "prometheus/popup-alerts.yml"
	monitoringDir      = "k8s/monitoring"
	prometheusRulePath = "k8s/monitoring/prometheusrule.yaml"
	runbookPath        = "../docs/RUNBOOK.md"
)

// ruleGroups is a Prometheus rule file, and the spec of a PrometheusRule (decoded strictly: a
// misspelt field fails).
type ruleGroups struct {
	Groups []struct {
		Name     string `json:"name"`
		Interval string `json:"interval,omitempty"`
		Rules    []struct {
			Record      string            `json:"record,omitempty"`
			Alert       string            `json:"alert,omitempty"`
			Expr        string            `json:"expr"`
			For         string            `json:"for,omitempty"`
			Labels      map[string]string `json:"labels,omitempty"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"rules"`
	} `json:"groups"`
}

type prometheusRule struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       ruleGroups        `json:"spec"`
}

// alertTestsPaths are promtool's unit tests of the rules: minutes of series evaluated every
// minute, and the cases that need hours or days of series, evaluated every 10 minutes.
var alertTestsPaths = []string{"prometheus/popup-alerts.test.yml", "prometheus/popup-alerts.days.test.yml"}

// ruleTests is the part of promtool's unit-test file that says which alerts fire.
type ruleTests struct {
	RuleFiles          []string `json:"rule_files"`
	EvaluationInterval string   `json:"evaluation_interval"`
	GroupEvalOrder     []string `json:"group_eval_order"`
	Tests              []struct {
		Interval    string `json:"interval"`
		InputSeries []struct {
			Series string `json:"series"`
			Values string `json:"values"`
		} `json:"input_series"`
		AlertRuleTest []struct {
			EvalTime  string `json:"eval_time"`
			Alertname string `json:"alertname"`
			ExpAlerts []struct {
				ExpLabels      map[string]string `json:"exp_labels"`
				ExpAnnotations map[string]string `json:"exp_annotations"`
			} `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

func loadAlertRules(t *testing.T) ruleGroups {
	t.Helper()
	data, err := os.ReadFile(alertRulesPath)
	require.NoError(t, err)
	var rules ruleGroups
	require.NoError(t, sigsyaml.UnmarshalStrict(data, &rules), alertRulesPath)
	require.NotEmpty(t, rules.Groups)
	return rules
}

// alertedMetrics are the metrics the alerts must watch: issue 54's list (degraded answers, the
// public latency, the queue's age, growth and draining, dead letters, MySQL and Redis, audiences
// held fail-closed, erasures, retention, sample ratios, readiness, the Cluster's coverage).
var alertedMetrics = []string{
	"popup_decisions_total", "popup_http_request_duration_seconds_bucket", "popup_http_request_duration_seconds_count",
	"popup_queue_oldest_event_age_seconds", "popup_queue_length", "popup_worker_batches_total",
	"popup_queue_dead_letter_length", "popup_mysql_errors_total", "popup_redis_errors_total", "popup_dependency_up",
	"popup_audience_unbound_popups", "popup_erasure_oldest_pending_age_seconds",
	"popup_worker_action_log_maintained_timestamp_seconds", "popup_experiment_srm_alarm", "popup_ready",
	"popup_redis_cluster_full_coverage_nodes",
}

// TestAlertRulesWatchExportedMetricsAndNameARunbook: every rule queries only metrics the code
// registers (or the file records), every alert has a severity, a summary, a description and a
// runbook_url naming a section of docs/RUNBOOK.md that speaks of it.
func TestAlertRulesWatchExportedMetricsAndNameARunbook(t *testing.T) {
	t.Parallel()
	rules := loadAlertRules(t)
	registered := registeredMetrics(t)
	sections := runbookSections(t)
	recorded := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
		}
	}
	used := map[string]bool{}
	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			assert.True(t, (r.Alert == "") != (r.Record == ""), "group %s: a rule is an alert or a record", g.Name)
			names := promqlMetricNames(r.Expr)
			assert.NotEmpty(t, names, "%s: no metric in %s", name, r.Expr)
			for _, m := range names {
				used[m] = true
				assert.True(t, registered[m] || registered[histogramBase(m)] || recorded[m],
					"%s queries %s, which the code does not register nor the file record", name, m)
			}
			if r.Record != "" {
				assert.True(t, strings.HasPrefix(r.Record, "popup:"), "recording rule %s: name it popup:…", r.Record)
				continue
			}
			assert.False(t, alerts[r.Alert], "alert %s defined twice", r.Alert)
			alerts[r.Alert] = true
			assert.Contains(t, []string{"critical", "warning"}, r.Labels["severity"], "%s: severity", r.Alert)
			assert.NotEmpty(t, r.Annotations["summary"], "%s: summary", r.Alert)
			assert.NotEmpty(t, r.Annotations["description"], "%s: description", r.Alert)
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], "docs/RUNBOOK.md#")
			if assert.True(t, ok, "%s: runbook_url %q is not docs/RUNBOOK.md#section", r.Alert, r.Annotations["runbook_url"]) {
				section, ok := sections[anchor]
				if assert.True(t, ok, "%s: docs/RUNBOOK.md has no section #%s", r.Alert, anchor) {
					assert.Contains(t, section, r.Alert, "%s: its runbook section #%s does not name it", r.Alert, anchor)
					for _, part := range []string{"**What it means.**", "**How to confirm.**", "**What to do.**"} {
						assert.Contains(t, section, part, "%s: runbook section #%s", r.Alert, anchor)
					}
				}
			}
		}
	}
	// absent() of a metric the file queries elsewhere is fine; these must be watched.
	for _, m := range alertedMetrics {
		assert.True(t, used[m] || used[histogramBase(m)], "no rule watches %s", m)
	}
}

// runbookSections maps the GitHub anchor of each heading of docs/RUNBOOK.md to its section's
// text (up to the next heading of the same or a higher level).
func runbookSections(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(runbookPath)
	require.NoError(t, err)
	heading := regexp.MustCompile(`^(#+)\s+(.*)$`)
	type open struct {
		anchor string
		level  int
		start  int
	}
	lines := strings.Split(string(data), "\n")
	out := map[string]string{}
	var stack []open
	closeTo := func(level, end int) {
		for len(stack) > 0 && stack[len(stack)-1].level >= level {
			o := stack[len(stack)-1]
			out[o.anchor] = strings.Join(lines[o.start:end], "\n")
			stack = stack[:len(stack)-1]
		}
	}
	inFence := false
	for i, line := range lines {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		m := heading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		closeTo(len(m[1]), i)
		stack = append(stack, open{anchor: githubAnchor(m[2]), level: len(m[1]), start: i})
	}
	closeTo(0, len(lines))
	require.NotEmpty(t, out, "no headings in docs/RUNBOOK.md")
	return out
}

// githubAnchor is the id GitHub gives a heading: lower case, punctuation dropped, spaces to -.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestPrometheusRuleIsTheRuleFile: deploy/k8s/monitoring's PrometheusRule carries exactly the
// groups of deploy/prometheus/popup-alerts.yml, and is an optional component.
func TestPrometheusRuleIsTheRuleFile(t *testing.T) {
	t.Parallel()
	rules := loadAlertRules(t)
	data, err := os.ReadFile(prometheusRulePath)
	require.NoError(t, err)
	var pr prometheusRule
	require.NoError(t, sigsyaml.UnmarshalStrict(data, &pr), prometheusRulePath)
	assert.Equal(t, "monitoring.coreos.com/v1", pr.APIVersion)
	assert.Equal(t, "PrometheusRule", pr.Kind)
	assert.NotEmpty(t, pr.Metadata.Name)
	assert.Empty(t, pr.Metadata.Namespace, "leave the namespace to kustomize")
	assert.Equal(t, rules, pr.Spec, "%s's spec.groups differ from %s: copy its groups over", prometheusRulePath, alertRulesPath)

	data, err = os.ReadFile(filepath.Join(monitoringDir, "kustomization.yaml"))
	require.NoError(t, err)
	var k component
	require.NoError(t, sigsyaml.UnmarshalStrict(data, &k), monitoringDir)
	assert.Equal(t, "kustomize.config.k8s.io/v1alpha1", k.APIVersion)
	assert.Equal(t, "Component", k.Kind, "monitoring needs the Prometheus Operator's CRD: a Component, used only where it is named")
	assert.Equal(t, []string{filepath.Base(prometheusRulePath)}, k.Resources)

	data, err = os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	require.NoError(t, err)
	var base kustomization
	require.NoError(t, sigsyaml.UnmarshalStrict(data, &base))
	for _, r := range base.Resources {
		assert.False(t, strings.HasPrefix(r, "monitoring"), "deploy/k8s includes %s: monitoring is optional", r)
	}
}

// TestAlertRulesAreTestedBothWays: promtool's tests have, for every alert, a case where it fires
// and one where it must not.
func TestAlertRulesAreTestedBothWays(t *testing.T) {
	t.Parallel()
	rules := loadAlertRules(t)
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, path := range alertTestsPaths {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var tests ruleTests
		require.NoError(t, sigsyaml.UnmarshalStrict(data, &tests), path)
		assert.Equal(t, []string{filepath.Base(alertRulesPath)}, tests.RuleFiles, path)
		for _, tc := range tests.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else {
					quiet[a.Alertname] = true
				}
			}
		}
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			assert.True(t, fires[r.Alert], "%s: no test where it fires", r.Alert)
			assert.True(t, quiet[r.Alert], "%s: no test where it must not fire", r.Alert)
		}
	}
}

// TestAlertRulesPassPromtoolAndABrokenRuleFails runs promtool check rules and promtool test rules
// (Debian's prometheus package; scripts/services.sh install test) on the rules, then on copies
// broken on purpose, which must fail: the tests can tell a broken rule.
func TestAlertRulesPassPromtoolAndABrokenRuleFails(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("POPUP_TEST_STRICT") == "1" {
			t.Fatal("promtool is not on PATH (scripts/services.sh install test)")
		}
		t.Skip("promtool is not on PATH (scripts/services.sh install test)")
	}
	rules, err := os.ReadFile(alertRulesPath)
	require.NoError(t, err)
	// run copies the rules (edited by replace, old → new) beside the tests and runs promtool on them.
	run := func(t *testing.T, replace []string) (checkErr, testErr error, out string) {
		t.Helper()
		dir := t.TempDir()
		text := string(rules)
		for i := 0; i < len(replace); i += 2 {
			require.Equal(t, 1, strings.Count(text, replace[i]), "the rules hold %q once", replace[i])
			text = strings.Replace(text, replace[i], replace[i+1], 1)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(alertRulesPath)), []byte(text), 0o644))
		testArgs := []string{"test", "rules"}
		for _, path := range alertTestsPaths {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(path)), data, 0o644))
			testArgs = append(testArgs, filepath.Join(dir, filepath.Base(path)))
		}
		check, checkErr := exec.Command(promtool, "check", "rules", filepath.Join(dir, filepath.Base(alertRulesPath))).CombinedOutput()
		test, testErr := exec.Command(promtool, testArgs...).CombinedOutput()
		return checkErr, testErr, string(check) + string(test)
	}

	checkErr, testErr, out := run(t, nil)
	require.NoError(t, checkErr, out)
	require.NoError(t, testErr, out)

	mutations := []struct {
		name      string
		replace   []string
		checkFail bool // promtool check rules fails too (not only the unit tests)
	}{
		{name: "an expression that does not parse", replace: []string{"expr: popup_ready == 0", "expr: popup_ready == "}, checkFail: true},
		{name: "a threshold moved", replace: []string{"(popup_queue_oldest_event_age_seconds) > 120", "(popup_queue_oldest_event_age_seconds) > 7200"}},
	}
	for _, tt := range mutations {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkErr, testErr, out := run(t, tt.replace)
			assert.Error(t, testErr, "promtool test rules passed a broken rule:\n%s", out)
			assert.Equal(t, tt.checkFail, checkErr != nil, "promtool check rules: %v\n%s", checkErr, out)
		})
	}
}

// TestGrafanaShowsTheSLOs: the dashboard's SLO panels query the SLIs the alerts watch, in the
// recording rules' own words, so that a change of one shows in the other.
func TestGrafanaShowsTheSLOs(t *testing.T) {
	t.Parallel()
	rules := loadAlertRules(t)
	data, err := os.ReadFile(dashboardPath)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(data, &d))
	var exprs []string
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	shown := strings.Join(exprs, "\n")
	want := map[string]bool{
		"popup:degraded_ratio:rate5m": true, "popup:degraded_ratio:rate1h": true, "popup:degraded_ratio:rate6h": true, "popup:degraded_ratio:rate1d": true,
		"popup:slow_ratio:rate5m": true, "popup:slow_ratio:rate1h": true, "popup:slow_ratio:rate6h": true, "popup:slow_ratio:rate1d": true,
	}
	found := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if want[r.Record] {
				found++
				assert.Contains(t, shown, r.Expr, "the dashboard shows no panel of %s", r.Record)
			}
		}
	}
	assert.Equal(t, len(want), found, "recording rules missing from %s", alertRulesPath)
}
