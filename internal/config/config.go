// Package config turns POPUP_* environment variables into one typed, validated Config.
package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/go-sql-driver/mysql"

	"popupsvc/internal/cors"
	"popupsvc/internal/operator"
	"popupsvc/internal/popup"
	"popupsvc/internal/privacy"
	"popupsvc/internal/uidauth"
)

// Config is every setting of both binaries. Defaults live in the envDefault tags and nowhere else;
// docs/CONFIGURATION.md describes every variable (a test keeps the two in step).
type Config struct {
	HTTPAddr   string `env:"HTTP_ADDR" envDefault:":8080"`
	AdminAddr  string `env:"ADMIN_ADDR" envDefault:"127.0.0.1:8081"`
	AdminToken string `env:"ADMIN_TOKEN" secret:"true"`
	WorkerAddr string `env:"WORKER_ADDR" envDefault:"127.0.0.1:8082"`

	// AdminTokens and AdminTokensFile name the operators (Operators): every admin write is
	// attributed to the operator whose token made it.
	AdminTokens     []string `env:"ADMIN_TOKENS" secret:"true"`
	AdminTokensFile string   `env:"ADMIN_TOKENS_FILE"`

	RedisAddr       string        `env:"REDIS_ADDR" envDefault:"127.0.0.1:6379"`
	RedisPassword   string        `env:"REDIS_PASSWORD" secret:"true"`
	RedisMasterName string        `env:"REDIS_MASTER_NAME"`
	RedisCluster    bool          `env:"REDIS_CLUSTER" envDefault:"false"`
	RedisPrefix     string        `env:"REDIS_PREFIX" envDefault:"popup"`
	RedisTimeout    time.Duration `env:"REDIS_TIMEOUT" envDefault:"50ms"`
	RequestBudget   time.Duration `env:"REQUEST_BUDGET" envDefault:"80ms"`
	RedisPipelining bool          `env:"REDIS_AUTOPIPELINE" envDefault:"true"`
	RedisPoolSize   int           `env:"REDIS_POOL_SIZE" envDefault:"64"`
	// RedisClusterReload and RedisAckReplicas are the high-availability settings (docs/RELIABILITY.md).
	RedisClusterReload time.Duration `env:"REDIS_CLUSTER_RELOAD" envDefault:"1s"`
	RedisAckReplicas   int           `env:"REDIS_ACK_REPLICAS" envDefault:"0"`

	MySQLDSN     string `env:"MYSQL_DSN" envDefault:"popup:popup@tcp(127.0.0.1:3306)/popup?parseTime=true" secret:"dsn"`
	MySQLMaxOpen int    `env:"MYSQL_MAX_OPEN" envDefault:"16"`

	UserDailyCap    int           `env:"USER_DAILY_CAP" envDefault:"0"`
	UserStateTTL    time.Duration `env:"USER_STATE_TTL" envDefault:"168h"`
	ConfigPoll      time.Duration `env:"CONFIG_POLL_INTERVAL" envDefault:"1s"`
	StateLoadLimit  int           `env:"STATE_LOAD_CONCURRENCY" envDefault:"32"`
	ActionRateLimit int           `env:"ACTION_RATE_LIMIT" envDefault:"0"`
	UIDHMACKeys     []string      `env:"UID_HMAC_KEYS" secret:"true"`
	UIDHMACMaxAge   time.Duration `env:"UID_HMAC_MAX_AGE" envDefault:"5m"`
	PrivacyKey      string        `env:"PRIVACY_KEY" secret:"true"`
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"15s"`
	LogLevel        string        `env:"LOG_LEVEL" envDefault:"info"`
	CORSOrigins     []string      `env:"CORS_ORIGINS"`
	LinkSchemes     []string      `env:"LINK_SCHEMES" envDefault:"http,https"`

	KnownUsers            int     `env:"KNOWN_USERS" envDefault:"10000000"`
	KnownUsersFP          float64 `env:"KNOWN_USERS_FP" envDefault:"0.01"`
	KnownUsersRebuildRate int     `env:"KNOWN_USERS_REBUILD_RATE" envDefault:"20000"`

	AudienceMemory      ByteSize      `env:"AUDIENCE_MEMORY" envDefault:"256MiB"`
	AudienceLoadTimeout time.Duration `env:"AUDIENCE_LOAD_TIMEOUT" envDefault:"60s"`
	AudienceUploadRate  int           `env:"AUDIENCE_UPLOAD_RATE" envDefault:"1000000"`

	LocalAnswerCacheSize int `env:"LOCAL_ANSWER_CACHE_SIZE" envDefault:"100000"`
	RecentStateCacheSize int `env:"RECENT_STATE_CACHE_SIZE" envDefault:"0"`

	QueueShards      int           `env:"QUEUE_SHARDS" envDefault:"0"`
	WorkerBatchSize  int           `env:"WORKER_BATCH_SIZE" envDefault:"500"`
	WorkerFlushEvery time.Duration `env:"WORKER_FLUSH_INTERVAL" envDefault:"200ms"`
	WorkerLease      time.Duration `env:"WORKER_LEASE" envDefault:"15s"`
	WarmInterval     time.Duration `env:"WARM_INTERVAL" envDefault:"30s"`
	// At least a day: the API's per-event de-duplication marker in Redis lives 24 hours, and the
	// action log's (uid, event_id) key must outlive it.
	ActionLogRetention time.Duration `env:"ACTION_LOG_RETENTION" envDefault:"720h"`
	// User state that no decision can use any more (mysqlstore.StatePurger): the rows of popups
	// archived or ended this long ago.
	StateRetention time.Duration `env:"STATE_RETENTION" envDefault:"2160h"`
}

// MinAudienceUploadRate is the slowest POPUP_AUDIENCE_UPLOAD_RATE other than 0: a replace of
// the most members a contract allows (20,000,000) is answered in 49 s at it (`make
// bench-upload`), well inside the admin listener's 2-minute timeout. It is also the default: the
// public GETs' p99 during such a replace read 1.38-1.59 times an idle instance's at this rate,
// 2.02-2.51 times at twice it (docs/PERFORMANCE.md, "Uploads and memory").
const MinAudienceUploadRate = 1_000_000

// Prefix is the environment prefix of every variable.
const Prefix = "POPUP_"

// Load reads the environment and validates the result.
func Load() (Config, error) {
	return Parse(nil)
}

// Parse reads the given environment (nil = the process environment) and validates it.
func Parse(environ map[string]string) (Config, error) {
	var c Config
	opts := env.Options{Prefix: Prefix}
	if environ != nil {
		opts.Environment = environ
	}
	if err := env.ParseWithOptions(&c, opts); err != nil {
		return Config{}, nameVars(err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate reports every invalid setting at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", Prefix, name, fmt.Sprintf(format, args...)))
	}
	for name, addr := range map[string]string{"HTTP_ADDR": c.HTTPAddr, "ADMIN_ADDR": c.AdminAddr, "WORKER_ADDR": c.WorkerAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			bad(name, "not a host:port: %v", err)
		}
	}
	if _, err := c.Operators(); err != nil {
		errs = append(errs, err)
	}
	if c.HTTPAddr == c.AdminAddr {
		bad("ADMIN_ADDR", "must differ from POPUP_HTTP_ADDR: the admin API never shares the public listener")
	}
	if len(c.RedisAddrs()) == 0 {
		bad("REDIS_ADDR", "empty")
	}
	if strings.Contains(c.RedisAddr, "://") {
		if _, err := url.Parse(c.RedisAddr); err != nil {
			bad("REDIS_ADDR", "bad URL: %v", err)
		}
	}
	if c.RedisPrefix == "" || strings.ContainsAny(c.RedisPrefix, "{} ") {
		bad("REDIS_PREFIX", "must be non-empty without braces or spaces")
	}
	if _, err := mysql.ParseDSN(c.MySQLDSN); err != nil {
		bad("MYSQL_DSN", "%v", err)
	}
	positive := map[string]int{"REDIS_POOL_SIZE": c.RedisPoolSize, "MYSQL_MAX_OPEN": c.MySQLMaxOpen,
		"STATE_LOAD_CONCURRENCY": c.StateLoadLimit, "WORKER_BATCH_SIZE": c.WorkerBatchSize}
	for name, v := range positive {
		if v <= 0 {
			bad(name, "must be > 0, got %d", v)
		}
	}
	if c.QueueShards < 0 || c.QueueShards > 1024 {
		bad("QUEUE_SHARDS", "must be 0 (automatic) to 1024, got %d", c.QueueShards)
	}
	if c.RedisAckReplicas < 0 || c.RedisAckReplicas > 16 {
		bad("REDIS_ACK_REPLICAS", "must be 0 (off) to 16, got %d", c.RedisAckReplicas)
	}
	if c.WorkerBatchSize > 5000 {
		bad("WORKER_BATCH_SIZE", "must be <= 5000 to stay well under max_allowed_packet, got %d", c.WorkerBatchSize)
	}
	if c.ActionRateLimit < 0 {
		bad("ACTION_RATE_LIMIT", "must be >= 0")
	}
	if c.KnownUsers < 0 {
		bad("KNOWN_USERS", "must be >= 0 (0 = off)")
	}
	if c.KnownUsersFP <= 0 || c.KnownUsersFP >= 0.5 {
		bad("KNOWN_USERS_FP", "must be in (0, 0.5), got %g", c.KnownUsersFP)
	}
	if c.KnownUsersRebuildRate <= 0 {
		bad("KNOWN_USERS_REBUILD_RATE", "must be > 0, got %d", c.KnownUsersRebuildRate)
	}
	if c.AudienceMemory <= 0 {
		bad("AUDIENCE_MEMORY", "must be > 0")
	}
	if c.AudienceLoadTimeout <= 0 {
		bad("AUDIENCE_LOAD_TIMEOUT", "must be > 0")
	}
	if c.AudienceUploadRate < 0 || c.AudienceUploadRate > 0 && c.AudienceUploadRate < MinAudienceUploadRate {
		bad("AUDIENCE_UPLOAD_RATE", "must be 0 (unpaced) or at least %d (the largest replace must fit the admin listener's timeout), got %d",
			MinAudienceUploadRate, c.AudienceUploadRate)
	}
	if c.LocalAnswerCacheSize < 0 {
		bad("LOCAL_ANSWER_CACHE_SIZE", "must be >= 0 (0 = off)")
	}
	if c.RecentStateCacheSize < 0 {
		bad("RECENT_STATE_CACHE_SIZE", "must be >= 0 (0 = off)")
	}
	if c.UserDailyCap < 0 {
		bad("USER_DAILY_CAP", "must be >= 0")
	}
	for i, k := range c.UIDHMACKeys {
		// A key itself is never printed: only its position and length.
		switch {
		case len(k) < uidauth.MinKeyLen:
			bad("UID_HMAC_KEYS", "key %d is %d bytes; each key must be at least %d (openssl rand -hex 32)", i+1, len(k), uidauth.MinKeyLen)
		case strings.TrimSpace(k) != k:
			bad("UID_HMAC_KEYS", "key %d has leading or trailing white space (separate keys with a bare comma)", i+1)
		}
	}
	switch {
	case c.PrivacyKey == "":
	case len(c.PrivacyKey) < privacy.MinKeyLen:
		bad("PRIVACY_KEY", "is %d bytes; it must be at least %d (openssl rand -hex 32)", len(c.PrivacyKey), privacy.MinKeyLen)
	case strings.TrimSpace(c.PrivacyKey) != c.PrivacyKey:
		bad("PRIVACY_KEY", "has leading or trailing white space")
	}
	if c.UIDHMACMaxAge < time.Second {
		bad("UID_HMAC_MAX_AGE", "must be at least 1s, got %s", c.UIDHMACMaxAge)
	}
	durations := map[string]time.Duration{"REDIS_TIMEOUT": c.RedisTimeout, "REQUEST_BUDGET": c.RequestBudget, "USER_STATE_TTL": c.UserStateTTL,
		"CONFIG_POLL_INTERVAL": c.ConfigPoll, "SHUTDOWN_TIMEOUT": c.ShutdownTimeout, "REDIS_CLUSTER_RELOAD": c.RedisClusterReload,
		"WORKER_FLUSH_INTERVAL": c.WorkerFlushEvery, "WORKER_LEASE": c.WorkerLease, "WARM_INTERVAL": c.WarmInterval}
	for name, d := range durations {
		if d <= 0 {
			bad(name, "must be a positive duration, got %s", d)
		}
	}
	if c.ActionLogRetention < 24*time.Hour {
		bad("ACTION_LOG_RETENTION", "must be at least 24h (the event de-duplication marker lives a day), got %s", c.ActionLogRetention)
	}
	if c.StateRetention < 24*time.Hour {
		bad("STATE_RETENTION", "must be at least 24h, got %s", c.StateRetention)
	}
	if _, err := cors.Parse(c.CORSOrigins); err != nil {
		bad("CORS_ORIGINS", "%v", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if _, err := popup.ParseLinkSchemes(c.LinkSchemes); err != nil {
		bad("LINK_SCHEMES", "%v", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("LOG_LEVEL", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	return errors.Join(errs...)
}

// nameVars rewrites the parser's errors to name the environment variable, not the Go field.
func nameVars(err error) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return fmt.Errorf("config: %w", err)
	}
	t := reflect.TypeOf(Config{})
	var out []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			if f, ok := t.FieldByName(pe.Name); ok {
				out = append(out, fmt.Errorf("%s%s: cannot parse as %s: %w", Prefix, f.Tag.Get("env"), pe.Type, pe.Err))
				continue
			}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// Operators returns every admin operator: those of ADMIN_TOKENS, then of ADMIN_TOKENS_FILE (read
// now), then "admin" (role admin) for ADMIN_TOKEN. An entry is name:token or name@role:token
// (operator.Parse; without a role, admin). Names must be 1-64 characters of [A-Za-z0-9_.-]
// and unique, roles known, tokens non-empty and unique; an error names the variable and the
// entry's position or the file's line, and the entry without its token, never a token.
func (c Config) Operators() ([]operator.Operator, error) {
	var (
		ops   []operator.Operator
		errs  []error
		check operator.Set
	)
	add := func(where, entry string) {
		op, err := operator.Parse(entry)
		if err == nil {
			err = check.Add(op)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			return
		}
		ops = append(ops, op)
	}
	for i, entry := range c.AdminTokens {
		add(fmt.Sprintf("%sADMIN_TOKENS: pair %d", Prefix, i+1), entry)
	}
	if c.AdminTokensFile != "" {
		raw, err := os.ReadFile(c.AdminTokensFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("%sADMIN_TOKENS_FILE: %w", Prefix, err))
		}
		for i, line := range strings.Split(string(raw), "\n") {
			if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			add(fmt.Sprintf("%sADMIN_TOKENS_FILE: %s line %d", Prefix, c.AdminTokensFile, i+1), line)
		}
	}
	if c.AdminToken != "" {
		add(Prefix+"ADMIN_TOKEN", operator.AdminName+"@"+popup.RoleAdmin.String()+":"+c.AdminToken)
	}
	return ops, errors.Join(errs...)
}

// Links returns the validated POPUP_LINK_SCHEMES allow-list.
// DefaultPacing is the pacing across campaigns of a config the team set none for
// (docs/CONTRACT.md §13): POPUP_USER_DAILY_CAP, which is the daily_cap setting's initial value,
// and no min gap.
func (c Config) DefaultPacing() popup.Pacing { return popup.Pacing{DailyCap: c.UserDailyCap} }

func (c Config) Links() popup.LinkSchemes {
	links, err := popup.ParseLinkSchemes(c.LinkSchemes)
	if err != nil {
		return popup.LinkSchemes{} // Validate refuses such a config: http and https only
	}
	return links
}

// CORS returns the validated POPUP_CORS_ORIGINS allow-list (empty: CORS off).
func (c Config) CORS() cors.Origins {
	o, err := cors.Parse(c.CORSOrigins)
	if err != nil {
		return cors.Origins{} // Validate refuses such a config: off
	}
	return o
}

// ClusterQueueShards is the queue shard count on a Redis Cluster when POPUP_QUEUE_SHARDS is 0:
// each shard's hash slot lands on some master, so 16 spread a three-master cluster's users about
// five shards to a master, and one master's failure degrades about a third of them instead of
// (with one shard) either nobody or everybody.
const ClusterQueueShards = 16

// IsCluster says whether REDIS_ADDR names a Redis Cluster: several seeds without a sentinel
// master name, or POPUP_REDIS_CLUSTER.
func (c Config) IsCluster() bool {
	return c.RedisMasterName == "" && (c.RedisCluster || len(c.RedisAddrs()) > 1)
}

// Shards is the number of queue shards in use: POPUP_QUEUE_SHARDS, or when it is 0,
// ClusterQueueShards on a Redis Cluster and 1 otherwise.
func (c Config) Shards() int {
	switch {
	case c.QueueShards > 0:
		return c.QueueShards
	case c.IsCluster():
		return ClusterQueueShards
	}
	return 1
}

// RedisAddrs splits REDIS_ADDR into its addresses (one for a URL or a single node).
func (c Config) RedisAddrs() []string {
	var out []string
	for _, a := range strings.Split(c.RedisAddr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// String prints every setting with secrets masked, for the start-up log line.
func (c Config) String() string {
	var b strings.Builder
	v := reflect.ValueOf(c)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		val := fmt.Sprint(v.Field(i).Interface())
		switch f.Tag.Get("secret") {
		case "true":
			switch fv := v.Field(i); {
			case fv.Kind() == reflect.Slice:
				// One *** per item: the count shows a rotation's progress; the items stay hidden.
				val = strings.TrimSuffix(strings.Repeat("***,", fv.Len()), ",")
			case val != "":
				val = "***"
			}
		case "dsn":
			val = MaskDSN(val)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s%s=%s", Prefix, f.Tag.Get("env"), val)
	}
	return b.String()
}

// MaskDSN hides the password of a go-sql-driver DSN.
func MaskDSN(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "<unparseable DSN>"
	}
	if cfg.Passwd != "" {
		cfg.Passwd = "***"
	}
	return cfg.FormatDSN()
}

// Vars lists every variable with its default (docs/CONFIGURATION.md's test checks the table
// against it).
func Vars() []Var {
	t := reflect.TypeOf(Config{})
	out := make([]Var, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		out = append(out, Var{Name: Prefix + f.Tag.Get("env"), Default: f.Tag.Get("envDefault")})
	}
	return out
}

// Var is one environment variable and its default ("" for none).
type Var struct{ Name, Default string }

// ByteSize is a memory size in bytes, written as a number of bytes or with a KiB, MiB or GiB
// suffix.
type ByteSize int64

// UnmarshalText reads "1073741824", "512MiB" or "1GiB".
func (b *ByteSize) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return fmt.Errorf("%q is not a size: want a number of bytes, or one with KiB, MiB or GiB", text)
	}
	*b = ByteSize(n * mult)
	return nil
}
