package status

import "time"

// statusWire is GET /admin/v1/status: State is ok when no section needs an operator, else
// warning; each section has its own State (the State* constants).
type statusWire struct {
	State        string        `json:"state"`
	CheckedAt    time.Time     `json:"checked_at"`
	MySQL        depWire       `json:"mysql"`
	Redis        depWire       `json:"redis"`
	Instance     instanceWire  `json:"instance"`
	Queue        queueWire     `json:"queue"`
	Retention    retentionWire `json:"retention"`
	Audiences    audiencesWire `json:"audiences"`
	Erasures     erasuresWire  `json:"erasures"`
	RedisCluster clusterWire   `json:"redis_cluster"`
}

// depWire is a dependency as its background check last saw it.
type depWire struct {
	State string `json:"state"`
}

// instanceWire is this instance's readiness (/readyz) and the config version it serves.
type instanceWire struct {
	State         string `json:"state"`
	Ready         bool   `json:"ready"`
	ConfigVersion int64  `json:"config_version"`
}

// queueWire is the event queue over every shard (PopupQueueBacklogOld, PopupDeadLetters).
type queueWire struct {
	State            string  `json:"state"`
	Waiting          int64   `json:"waiting"`
	Processing       int64   `json:"processing"`
	DeadLetters      int64   `json:"dead_letters"`
	OldestAgeSeconds float64 `json:"oldest_age_seconds"`
	LimitSeconds     float64 `json:"limit_seconds"`
	Error            string  `json:"error,omitempty"`
}

// retentionWire is the action log's days (PopupRetentionStalled): the first and last day with a
// partition, UTC dates; empty when the log has no day partition.
type retentionWire struct {
	State            string `json:"state"`
	KeepDays         int    `json:"keep_days"`
	DaysKept         int    `json:"days_kept"`
	OldestDay        string `json:"oldest_day,omitempty"`
	NewestDay        string `json:"newest_day,omitempty"`
	Overdue          bool   `json:"overdue"`
	DaysAheadMissing bool   `json:"days_ahead_missing"`
	Error            string `json:"error,omitempty"`
}

// audiencesWire is this instance's audience sets (PopupAudienceFailClosed).
type audiencesWire struct {
	State            string  `json:"state"`
	Held             int     `json:"held"`
	FailClosedPopups []int64 `json:"fail_closed_popups"`
}

// erasuresWire is the pending erasures (PopupErasureOverdue).
type erasuresWire struct {
	State            string  `json:"state"`
	Pending          int     `json:"pending"`
	OldestAgeSeconds float64 `json:"oldest_age_seconds"`
	PromiseSeconds   float64 `json:"promise_seconds"`
	Overdue          bool    `json:"overdue"`
	Error            string  `json:"error,omitempty"`
}

// clusterWire is the Redis Cluster's coverage setting (PopupRedisClusterFullCoverage): off unless
// Redis is a cluster.
type clusterWire struct {
	State             string     `json:"state"`
	FullCoverageNodes []string   `json:"full_coverage_nodes"`
	CheckedAt         *time.Time `json:"checked_at,omitempty"`
	Error             string     `json:"error,omitempty"`
}
