package httpapi

import (
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are popup-api's Prometheus series (popup_ prefix, base units).
// The decisions' own series (outcomes, degraded answers, store errors, local answers) are
// decide's.
type Metrics struct {
	Requests *prometheus.HistogramVec
	Version  prometheus.Gauge
	BuiltAt  prometheus.Gauge

	mu        sync.RWMutex
	observers map[observerKey]prometheus.Observer
}

// NewMetrics registers the series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "popup_http_request_duration_seconds", Help: "HTTP request duration by route and status.",
			Buckets: []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"route", "status"}),
		Version: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "popup_snapshot_version", Help: "Config version of the served snapshot.",
		}),
		BuiltAt: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "popup_snapshot_built_timestamp_seconds", Help: "When the served snapshot was built (age = time() - this).",
		}),
	}
	reg.MustRegister(m.Requests, m.Version, m.BuiltAt)
	return m
}

// observe is the middleware timing every request by its route pattern (bounded label values).
func (m *Metrics) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	m.observer(route, c.Writer.Status()).Observe(time.Since(start).Seconds())
}

// observerKey names one series of Requests.
type observerKey struct {
	route  string
	status int
}

// observer returns the series of route and status, looked up once: the label hashing and the
// status's decimal text cost every request otherwise. Routes and statuses are few, so the map
// stays small.
func (m *Metrics) observer(route string, status int) prometheus.Observer {
	k := observerKey{route, status}
	m.mu.RLock()
	o, ok := m.observers[k]
	m.mu.RUnlock()
	if ok {
		return o
	}
	o = m.Requests.WithLabelValues(route, strconv.Itoa(status))
	m.mu.Lock()
	if m.observers == nil {
		m.observers = make(map[observerKey]prometheus.Observer)
	}
	m.observers[k] = o
	m.mu.Unlock()
	return o
}
