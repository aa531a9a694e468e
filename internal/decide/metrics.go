package decide

import "github.com/prometheus/client_golang/prometheus"

// outcome is a label value of popup_decisions_total.
type outcome uint8

const (
	outPopup outcome = iota
	outNoneEligible
	outLocalNone
	outNoCandidate
	outConflict
	outClientGone
	outDegradedNoSnapshot
	outDegradedBreakerOpen
	outDegradedRedisError
	outDegradedMySQL
	outControl
	outHoldout
	outReservationPending
	numOutcomes
)

var outcomeNames = [numOutcomes]string{
	outPopup:               "popup",
	outNoneEligible:        "none_eligible",
	outLocalNone:           "none_eligible_local", // answered from LocalAnswers, no Redis call
	outNoCandidate:         "no_candidate",
	outConflict:            "conflict",
	outClientGone:          "client_gone",
	outDegradedNoSnapshot:  "degraded_no_snapshot",
	outDegradedBreakerOpen: "degraded_breaker_open",
	outDegradedRedisError:  "degraded_redis_error",
	outDegradedMySQL:       "degraded_mysql",           // loading a user's lost state from MySQL failed or missed the budget
	outControl:             "none_control",             // an experiment's control exposure, nothing shown (docs/CONTRACT.md §10)
	outHoldout:             "none_holdout",             // a held-out user's holdout exposure, nothing shown (docs/CONTRACT.md §15)
	outReservationPending:  "none_reservation_pending", // confirm mode: the user's last reservation is still pending (docs/CONTRACT.md §2)
}

// storeOp is a label value of popup_redis_errors_total.
type storeOp uint8

const (
	opGetState storeOp = iota
	opRecordImpression
	opRecordAction
	opRecordConversion
	opConfirmImpression
	numOps
)

var opNames = [numOps]string{opGetState: "get_state", opRecordImpression: "record_impression", opRecordAction: "record_action", opRecordConversion: "record_conversion", opConfirmImpression: "confirm_impression"}

func (o storeOp) String() string { return opNames[o] }

// Metrics are the decisions' Prometheus series. Every labelled child is made once, so that
// counting costs the hot path one atomic add and no label lookup. A nil *Metrics counts nothing.
type Metrics struct {
	decisions   [numOutcomes]prometheus.Counter
	degraded    prometheus.Counter
	redisErrors [numOps]prometheus.Counter
	mysqlErrors prometheus.Counter
}

// NewMetrics registers the series on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "popup_decisions_total", Help: "Homepage decisions by outcome.",
	}, []string{"outcome"})
	redisErrors := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "popup_redis_errors_total", Help: "Failed Redis operations by operation.",
	}, []string{"op"})
	m := &Metrics{
		degraded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "popup_degraded_responses_total", Help: "Answers given without Redis (no popup, X-Popup-Degraded).",
		}),
		mysqlErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "popup_mysql_errors_total", Help: "Failed MySQL operations.",
		}),
	}
	for i, name := range outcomeNames {
		m.decisions[i] = decisions.WithLabelValues(name)
	}
	for i, name := range opNames {
		m.redisErrors[i] = redisErrors.WithLabelValues(name)
	}
	if reg != nil {
		reg.MustRegister(decisions, redisErrors, m.degraded, m.mysqlErrors)
	}
	return m
}

func (m *Metrics) count(o outcome) {
	if m != nil {
		m.decisions[o].Inc()
	}
}

func (m *Metrics) degradedAnswer() {
	if m != nil {
		m.degraded.Inc()
	}
}

func (m *Metrics) redisError(op storeOp) {
	if m != nil {
		m.redisErrors[op].Inc()
	}
}

func (m *Metrics) mysqlError() {
	if m != nil {
		m.mysqlErrors.Inc()
	}
}
