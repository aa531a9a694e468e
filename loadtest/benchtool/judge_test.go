package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wrkOutput is wrk 4.1's --latency report, as make bench's runs print it.
const wrkOutput = `Running 8s test @ http://127.0.0.1:39017
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   812.35us  1.02ms  31.20ms   93.12%
    Req/Sec    41.23k     3.10k   48.90k    71.25%
  Latency Distribution
     50%  602.00us
     75%    0.91ms
     90%    1.40ms
     99%    5.12ms
  656432 requests in 8.00s, 98.51MB read
  Socket errors: connect 0, read 3, write 0, timeout 2
  Non-2xx or 3xx responses: 7
Requests/sec:  82052.11
Transfer/sec:     12.31MB
`

func TestParseWrkReadsRateLatenciesAndErrors(t *testing.T) {
	got, err := parseWrk(strings.NewReader(wrkOutput))
	require.NoError(t, err)

	assert.Equal(t, wrkResult{RPS: 82052.11, P50: 0.602, P99: 5.12, Requests: 656432, Errors: 12}, got)
}

func TestParseWrkRefusesAReportWithoutLatencies(t *testing.T) {
	noLatency := strings.ReplaceAll(strings.ReplaceAll(wrkOutput, "50%", "x"), "99%", "y")

	_, err := parseWrk(strings.NewReader(noLatency))

	assert.ErrorContains(t, err, "--latency")
}

func TestWrkMillis(t *testing.T) {
	tests := []struct {
		give string
		want float64
	}{
		{"456.00us", 0.456},
		{"1.23ms", 1.23},
		{"1.02s", 1020},
		{"2.00m", 120000},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, err := wrkMillis(tt.give)
			require.NoError(t, err)
			assert.InDelta(t, tt.want, got, 1e-9)
		})
	}
	_, err := wrkMillis("12")
	assert.Error(t, err, "a duration without a unit")
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		give []float64
		want float64
	}{
		{"none", nil, 0},
		{"odd count", []float64{0.9, 0.7, 0.8}, 0.8},
		{"even count", []float64{1, 4, 2, 3}, 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.want, median(tt.give), 1e-12)
		})
	}
}

func TestPerKIsCPUMillisecondsPerThousandRequests(t *testing.T) {
	// 50 ticks at 100 a second = 500 ms over 100,000 requests = 5 ms per 1,000
	got := perK([]float64{100, 10}, []float64{150, 10}, 100000, 100)

	assert.Equal(t, []float64{5, 0}, got)
}

// results is one round of every kind: the API at 0.9 of the bare server in the steady state,
// the queue drained, the API's CPU per impression twice the bare server's, no errors; with
// bad=true one degraded answer in the steady state, a queue that never drained and the API's CPU
// per impression eight times the bare server's.
func results(bad bool) string {
	d1, left, acT1 := "0", "0", "40"
	if bad {
		d1, left, acT1 = "1", "4", "10"
	}
	return strings.Join([]string{
		"meta clk=100 drain_target=5 zipf_users=1000 open_conns=64 open_duration=8s",
		"steady r=1 a_rps=1000 a_p99=1 a_reqs=8000 a_t0=0 a_t1=80 b_rps=900 b_p50=0.5 b_p99=2 b_reqs=7200 b_bad=0 d0=0 d1=" + d1 +
			" q0=10 q1=11 p0=0,0,0,0 p1=90,10,0,0",
		"impression r=1 ac_rps=1000 ac_reqs=8000 ac_t0=0 ac_t1=" + acT1 + " c_rps=500 c_p50=1 c_p99=3 c_reqs=4000 c_bad=0 d0=0 d1=0 p0=0,0,0,0 p1=40,20,10,10 backlog=12 drain_t0=1.0 drain_t1=1.5 left=" + left,
		"first r=1 c_rps=500 e_rps=450 e_p50=1 e_p99=3 e_reqs=3600 e_bad=0 d0=0 d1=0 l0=0 l1=0 p0=0,0,0,0 p1=36,18,9,9",
		"revisit r=1 a_rps=1000 f_rps=800 f_p50=1 f_p99=3 f_reqs=6400 f_bad=0 d0=0 d1=0 l0=0 l1=3",
		"open r=1 rate=450 oa_p99=1 ob_p99=1.2 ob_non2xx=0 ob_err=0 ob_deg=0 oa_late=0 ob_late=0",
	}, "\n")
}

func TestJudgeComputesEachTargetFromTheReadings(t *testing.T) {
	recs, err := parseRecords(strings.NewReader(results(false)))
	require.NoError(t, err)
	b, err := compute(recs)
	require.NoError(t, err)

	require.Len(t, b.steady, 1)
	s := b.steady[0]
	assert.InDelta(t, 0.9, s.ratio, 1e-9)
	assert.InDelta(t, 100, s.bareCPU, 1e-9, "80 ticks = 800 ms over 8,000 requests")
	assert.InDelta(t, 125, s.cpu[0], 1e-9, "90 ticks = 900 ms over 7,200 requests")
	assert.InDelta(t, 1.25, s.cpuRatio, 1e-9)
	assert.InDelta(t, 0, s.stmtsPerK, 1e-9, "the bench's own SHOW STATUS is not the API's")
	assert.InDelta(t, 0.5, b.impressions[0].drained, 1e-9)
	assert.InDelta(t, 50, b.impressions[0].bareCPU, 1e-9, "40 ticks = 400 ms over 8,000 requests")
	assert.InDelta(t, 2, b.impressions[0].cpuRatio, 1e-9, "the API's 40 ticks over 4,000 impressions: 100 ms per 1,000")
	assert.InDelta(t, 0.9, b.firsts[0].ratio, 1e-9)
	assert.InDelta(t, 0.8, b.revisits[0].ratio, 1e-9)
	assert.InDelta(t, 3000.0/6400, b.revisits[0].loadsPerK, 1e-9)
	assert.InDelta(t, 1.2, b.opens[0].ratio, 1e-9)
	assert.Equal(t, int64(450), b.halfBest())

	var out bytes.Buffer
	assert.True(t, b.report(&out), out.String())
	assert.Contains(t, out.String(), "| (a) steady-state req/s, api / bare | 0.900 (rounds: 0.900) | >= 0.8 | PASS |")
	assert.Contains(t, out.String(), "| (b) API CPU per impression / bare CPU per request of that answer | 2.000 (rounds: 2.000; CPU-ms per 1,000: api 100.0, bare 50.0) | <= 2 | PASS |")
	assert.NotContains(t, out.String(), "FAIL")
}

func TestJudgeLeavesOutTheOpenLoopTargetWhenNoOpenRoundRan(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"open rounds", results(false), "| (d) open-loop p99 at 450 req/s (half the API's best), api / bare | 1.200 (rounds: 1.200) | <= 1.5 | PASS |\n| (e) first-visit"},
		{"BENCH_OPEN_ROUNDS=0", results(false)[:strings.LastIndex(results(false), "\nopen ")], ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := parseRecords(strings.NewReader(tt.in))
			require.NoError(t, err)
			b, err := compute(recs)
			require.NoError(t, err)

			var out bytes.Buffer
			b.report(&out)
			if tt.want == "" {
				assert.NotContains(t, out.String(), "(d) open-loop", "no open-loop round, no verdict on it")
				assert.Contains(t, out.String(), "| (c) API CPU per steady-state request / bare CPU per request |")
			} else {
				assert.Contains(t, out.String(), tt.want, "(d) in its place, after (c)")
			}
		})
	}
}

func TestJudgeFailsADegradedAnswerAndAQueueThatNeverDrained(t *testing.T) {
	recs, err := parseRecords(strings.NewReader(results(true)))
	require.NoError(t, err)
	b, err := compute(recs)
	require.NoError(t, err)

	var out bytes.Buffer
	assert.False(t, b.report(&out))
	assert.True(t, math.IsInf(b.impressions[0].drained, 1))
	assert.Contains(t, out.String(), "| errors: non-2xx, socket errors, degraded answers (all API runs) | 1 | 0 | FAIL |")
	assert.Contains(t, out.String(), "12 events; inf s | <= 5 s | FAIL |")
	assert.Contains(t, out.String(), "| 8.000 (rounds: 8.000; CPU-ms per 1,000: api 100.0, bare 12.5) | <= 2 | FAIL |")
}

func TestJudgeRefusesARecordWithoutAReading(t *testing.T) {
	recs, err := parseRecords(strings.NewReader("meta clk=100\nsteady r=1 a_rps=1000"))
	require.NoError(t, err)

	_, err = compute(recs)

	assert.ErrorContains(t, err, "steady record without")
}

// audienceRound is one round of the audience case: bare 100k req/s, 78k with, 80k without.
const audienceRound = "audsteady r=1 order=on-off a_rps=100000 on_rps=78000 on_p99=2 on_reqs=624000 on_bad=0 on_d0=0 on_d1=0 fc0=5 fc1=5 on_p0=100 on_p1=600 " +
	"off_rps=80000 off_p99=2 off_reqs=640000 off_bad=0 off_d0=0 off_d1=0 off_p0=600 off_p1=1100\n"

func TestJudgeAudienceLossIsTheRatioWithoutMinusWith(t *testing.T) {
	recs, err := parseRecords(strings.NewReader("meta clk=100\n" + audienceRound))
	require.NoError(t, err)

	b, err := compute(recs)
	require.NoError(t, err)

	require.Len(t, b.audiences, 1)
	assert.InDelta(t, 0.78, b.audiences[0].onRatio, 1e-9)
	assert.InDelta(t, 0.02, b.audiences[0].loss, 1e-9)
	assert.InDelta(t, 5000/624.0, b.audiences[0].onCPU, 1e-9) // 500 ticks = 5 s over 624k requests
	var out bytes.Buffer
	assert.True(t, b.report(&out), out.String())
	assert.Contains(t, out.String(), "| 0.020 (rounds: 0.020; mean of on-off rounds 0.020) | <= 0.03 | PASS |")
}

func TestJudgeCountsAFailClosedAudienceCheckAsAnError(t *testing.T) {
	recs, err := parseRecords(strings.NewReader("meta clk=100\n" + strings.Replace(audienceRound, "fc1=5", "fc1=9", 1)))
	require.NoError(t, err)

	b, err := compute(recs)
	require.NoError(t, err)

	assert.Equal(t, 4.0, b.errs)
	assert.False(t, b.report(io.Discard))
}

func TestJudgePropagationTimesFromThe200(t *testing.T) {
	const line = "propagate action=replace n=10000000 version=3 size=10000000 t0=1000000000 t200=13000000000 t1=14000000000 t2=14500000000 " +
		"members1=10000000 bytes1=80625000 rss1_before=100 rss1=200 members2=10000000 bytes2=80625000 rss2_before=100 rss2=200\n"
	recs, err := parseRecords(strings.NewReader("meta clk=100\n" + line))
	require.NoError(t, err)

	b, err := compute(recs)
	require.NoError(t, err)

	require.Len(t, b.propagates, 1)
	p := b.propagates[0]
	assert.InDelta(t, 12.0, p.upload, 1e-9)
	assert.InDelta(t, 1.0, p.served1, 1e-9)
	assert.InDelta(t, 1.5, p.served2, 1e-9)
	assert.InDelta(t, 8.0625, p.perMember2, 1e-9)
	var out bytes.Buffer
	assert.True(t, b.report(&out), out.String())
	assert.NotContains(t, out.String(), "(a) steady-state", "a propagation alone judges no load target")
}

// ingestRound is one round of the ingest case: click actions at 10,000 req/s, single conversions at
// 12,000; the batch route, 100 conversions a request at 100 requests a second (the actions' rate)
// for 8 s, answered all 800 requests in 8.05 s.
const ingestRound = "ingest r=1 batch=100 act_rps=10000 act_p99=4 act_reqs=80000 act_bad=0 act_p0=0 act_p1=400 " +
	"conv_rps=12000 conv_p99=3 conv_reqs=96000 conv_bad=0 conv_p0=400 conv_p1=784 " +
	"b_rate=100 b_duration=8 b_completed=800 b_elapsed=8.05 b_p99=12 b_non2xx=0 b_err=0 b_late=0\n"

func TestJudgeIngestComparesConversionsWithTheActionPath(t *testing.T) {
	recs, err := parseRecords(strings.NewReader("meta clk=100\n" + ingestRound))
	require.NoError(t, err)

	b, err := compute(recs)
	require.NoError(t, err)

	require.Len(t, b.ingests, 1)
	s := b.ingests[0]
	assert.InDelta(t, 1.2, s.ratio, 1e-9)
	assert.InDelta(t, 10000, s.batchOffered, 1e-9)
	assert.InDelta(t, 80000/8.05, s.batchDone, 1e-9)
	assert.InDelta(t, 8/8.05, s.batchRatio, 1e-9)
	assert.InDelta(t, 50, s.actCPU, 1e-9, "400 ticks = 4 s over 80,000 requests")
	assert.InDelta(t, 40, s.convCPU, 1e-9, "384 ticks = 3.84 s over 96,000 requests")
	var out bytes.Buffer
	assert.True(t, b.report(&out), out.String())
	assert.Contains(t, out.String(), "| (i) conversion ingest req/s (POST /api/v1/conversions) / action-path req/s (click actions), same load | 1.200 (rounds: 1.200) | >= 1 | PASS |")
	assert.Contains(t, out.String(), "| 0.994 (rounds: 0.994) | >= 0.98 | PASS |")
}

func TestJudgeIngestFailsABatchRouteThatFallsBehindOrErrs(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"slower single conversions", "conv_rps=12000", "conv_rps=9000", "| 0.900 (rounds: 0.900) | >= 1 | FAIL |"},
		{"a batch route 20% behind the schedule", "b_elapsed=8.05", "b_elapsed=10", "| 0.800 (rounds: 0.800) | >= 0.98 | FAIL |"},
		{"refused batches", "b_non2xx=0", "b_non2xx=3", "| errors: non-2xx, socket errors, degraded answers (all API runs) | 3 | 0 | FAIL |"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := parseRecords(strings.NewReader("meta clk=100\n" + strings.Replace(ingestRound, tt.from, tt.to, 1)))
			require.NoError(t, err)
			b, err := compute(recs)
			require.NoError(t, err)

			var out bytes.Buffer
			assert.False(t, b.report(&out))
			assert.Contains(t, out.String(), tt.want)
		})
	}
}

func TestJudgeIngestReadsTheBatchRateOverTheScheduleAtLeast(t *testing.T) {
	// The last request is due one interval before the schedule's end: answered before it, the run
	// still offered no more than its rate.
	recs, err := parseRecords(strings.NewReader("meta clk=100\n" + strings.Replace(ingestRound, "b_elapsed=8.05", "b_elapsed=7.99", 1)))
	require.NoError(t, err)

	b, err := compute(recs)
	require.NoError(t, err)

	assert.InDelta(t, 10000, b.ingests[0].batchDone, 1e-9)
}

// mixRound is one round of the revisit mix: the bare server at 30,000 req/s on 2,000 ticks over
// 240,000 requests (83.3 CPU-ms per 1,000), the API at 28,500 req/s on 100 CPU-ms per 1,000.
const mixRound = "mix r=1 a_rps=30000 a_reqs=240000 a_t0=0 a_t1=2000 j_rps=28500 j_p50=1 j_p99=4 j_reqs=228000 j_bad=0 " +
	"d0=0 d1=0 l0=0 l1=0 p0=0,0,0,0 p1=2280,400,100,100\n"

func TestJudgeMixComparesTheAPIWithTheBareServer(t *testing.T) {
	tests := []struct {
		name, from, to string
		wantRatio      float64
		want           string
		pass           bool
	}{
		{"at 0.95 of the bare server", "", "", 0.95, "| 0.950 (rounds: 0.950; API CPU per request / bare: 1.200) | >= 0.4 | PASS |", true},
		{"below the previous release's level", "j_rps=28500", "j_rps=10500", 0.35, "| 0.350 (rounds: 0.350; API CPU per request / bare: 1.200) | >= 0.4 | FAIL |", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := parseRecords(strings.NewReader("meta clk=100 mix_configs=1000 mix_users=200000\n" + strings.Replace(mixRound, tt.from, tt.to, 1)))
			require.NoError(t, err)
			b, err := compute(recs)
			require.NoError(t, err)

			require.Len(t, b.mixes, 1)
			assert.InDelta(t, tt.wantRatio, b.mixes[0].ratio, 1e-9)
			assert.InDelta(t, 100, b.mixes[0].cpu[0], 1e-9, "2,280 ticks = 22.8 s over 228,000 requests")
			var out bytes.Buffer
			assert.Equal(t, tt.pass, b.report(&out), out.String())
			assert.Contains(t, out.String(), "| (j) revisit mix req/s (1000 popups more, daily cap 2, Zipf over 200000 users) / bare "+tt.want)
		})
	}
}

// ruleRound is one round of the rules case on a load (kind rulesteady or rulemix): each API run's
// bare run 100k req/s, 81k with the rules (and the attributes), 82k without.
func ruleRound(kind string, round int, order string) string {
	return fmt.Sprintf("%s r=%d order=%s on_bare=100000 on_rps=81000 on_p99=2 on_reqs=648000 on_bad=0 on_d0=0 on_d1=0 on_p0=0 on_p1=648 "+
		"off_bare=100000 off_rps=82000 off_p99=2 off_reqs=640000 off_bad=0 off_d0=0 off_d1=0 off_p0=648 off_p1=1224\n", kind, round, order)
}

func TestJudgeRulesLossIsTheRatioWithoutMinusWithOnEachLoad(t *testing.T) {
	tests := []struct {
		name, kind, from, to string
		wantLoss             float64
		want                 string
		pass                 bool
	}{
		{"steady state within 0.02", "rulesteady", "", "", 0.01,
			"| (k) steady-state ratio without rules − with two rules and a second placement on half the popups | 0.010 (rounds: 0.010; API CPU-ms/1k with 10.0, without 9.0; mean of on-off rounds 0.010) | <= 0.02 | PASS |", true},
		{"steady state 0.03 behind", "rulesteady", "on_rps=81000", "on_rps=79000", 0.03,
			"| (k) steady-state ratio without rules − with two rules and a second placement on half the popups | 0.030 (rounds: 0.030; API CPU-ms/1k with 10.0, without 9.0; mean of on-off rounds 0.030) | <= 0.02 | FAIL |", false},
		{"each run against its own bare run", "rulesteady", "on_bare=100000", "on_bare=90000", -0.08,
			"| (k) steady-state ratio without rules − with two rules and a second placement on half the popups | -0.080 (rounds: -0.080; API CPU-ms/1k with 10.0, without 9.0; mean of on-off rounds -0.080) | <= 0.02 | PASS |", true},
		{"an older results file, one bare run a round", "rulesteady", "on_bare=100000", "a_rps=100000", 0.01,
			"| (k) steady-state ratio without rules − with two rules and a second placement on half the popups | 0.010 (rounds: 0.010;", true},
		{"the mix within 0.02", "rulemix", "", "", 0.01,
			"| (k) revisit-mix ratio without rules − with two rules and a second placement on half the mix's popups | 0.010 (rounds: 0.010; API CPU-ms/1k with 10.0, without 9.0; mean of on-off rounds 0.010) | <= 0.02 | PASS |", true},
		{"the mix with a degraded answer", "rulemix", "on_d1=0", "on_d1=2", 0.01,
			"| errors: non-2xx, socket errors, degraded answers (all API runs) | 2 | 0 | FAIL |", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := parseRecords(strings.NewReader("meta clk=100\n" + strings.Replace(ruleRound(tt.kind, 1, "on-off"), tt.from, tt.to, 1)))
			require.NoError(t, err)

			b, err := compute(recs)
			require.NoError(t, err)

			rows := b.ruleSteady
			if tt.kind == "rulemix" {
				rows = b.ruleMix
			}
			require.Len(t, rows, 1)
			assert.InDelta(t, tt.wantLoss, rows[0].loss, 1e-9)
			assert.InDelta(t, 10, rows[0].onCPU, 1e-9, "648 ticks = 6.48 s over 648,000 requests")
			assert.InDelta(t, 9, rows[0].offCPU, 1e-9, "576 ticks = 5.76 s over 640,000 requests")
			var out bytes.Buffer
			assert.Equal(t, tt.pass, b.report(&out), out.String())
			assert.Contains(t, out.String(), tt.want)
		})
	}
}

func TestJudgeRulesTakesTheMedianOverRoundsAndShowsEachOrder(t *testing.T) {
	// losses 0.01 (on-off), 0.03 (off-on), 0.016 (on-off): median 0.016
	in := "meta clk=100\n" + ruleRound("rulesteady", 1, "on-off") +
		strings.Replace(ruleRound("rulesteady", 2, "off-on"), "on_rps=81000", "on_rps=79000", 1) +
		strings.Replace(ruleRound("rulesteady", 3, "on-off"), "on_rps=81000", "on_rps=80400", 1)
	recs, err := parseRecords(strings.NewReader(in))
	require.NoError(t, err)

	b, err := compute(recs)
	require.NoError(t, err)

	var out bytes.Buffer
	assert.True(t, b.report(&out), out.String())
	assert.Contains(t, out.String(), "| 0.016 (rounds: 0.010 0.030 0.016; API CPU-ms/1k with 10.0, without 9.0; mean of on-off rounds 0.013; mean of off-on rounds 0.030) | <= 0.02 | PASS |")
	assert.Contains(t, out.String(), "| 2 | off-on | 100000 | 79000 | 2 | 0.790 | 10.0 | 82000 | 2 | 0.820 | 9.0 | 0.030 | 0 |")
	assert.Equal(t, "round 3 rules and placements, steady state (on-off): bare 100000 req/s | with 80400 req/s p99 2 ms (ratio 0.804, CPU-ms/1k 10.0) | "+
		"without 82000 req/s p99 2 ms (ratio 0.820, CPU-ms/1k 9.0) | loss 0.016 | errors 0", b.roundLine(recs))
}

func TestJudgeRefusesARulesRecordWithoutARun(t *testing.T) {
	recs, err := parseRecords(strings.NewReader("meta clk=100\nrulemix r=1 order=on-off on_bare=1000 on_rps=900"))
	require.NoError(t, err)

	_, err = compute(recs)

	assert.ErrorContains(t, err, "rulemix record without on_p99")
}
