// Package sysctl checks, applies and rolls back the popup service's kernel
// network profiles (api-host.conf, loadgen-host.conf, embedded here). The
// parsing, scoping and check/apply logic work over a Tree, so they are tested
// without touching /proc/sys; cmd/popup-sysctl is the command-line tool.
package sysctl

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

//go:embed api-host.conf loadgen-host.conf
var profiles embed.FS

// Tree reads and writes sysctl keys (a /proc/sys tree or a fake one).
type Tree interface {
	Present(key string) bool
	Read(key string) (string, error)
	Write(key, value string) error
}

// DirTree is a sysctl tree rooted at a directory such as /proc/sys.
type DirTree string

// KeyPath is the path of key relative to the tree. Like sysctl.d: if the key
// contains a '/', slashes separate components; otherwise dots do.
func KeyPath(key string) string {
	if strings.Contains(key, "/") {
		return strings.TrimPrefix(key, "/")
	}
	return strings.ReplaceAll(key, ".", "/")
}

func (d DirTree) file(key string) string { return filepath.Join(string(d), KeyPath(key)) }

// Present reports whether the key exists in the tree.
func (d DirTree) Present(key string) bool {
	_, err := os.Stat(d.file(key))
	return err == nil
}

// Read returns the key's normalised value.
func (d DirTree) Read(key string) (string, error) {
	b, err := os.ReadFile(d.file(key))
	if err != nil {
		return "", err
	}
	return Norm(string(b)), nil
}

// Write writes value to the key's file, as `sysctl -w` does.
func (d DirTree) Write(key, value string) error {
	f, err := os.OpenFile(d.file(key), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(value + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// Norm collapses runs of blanks and newlines to one space and trims, so that
// "1024\t65000" from /proc equals "1024 65000" from a profile.
func Norm(v string) string { return strings.Join(strings.Fields(v), " ") }

var keyRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:/@+-]*$`)

// ValidKey reports whether key is a well-formed sysctl key.
func ValidKey(key string) bool {
	return keyRE.MatchString(key) && !strings.Contains(key, "..") && !strings.Contains(key, "//")
}

// Filter selects keys by scope.
type Filter string

// Filters.
const (
	All    Filter = "all"
	NetNS  Filter = "netns"
	Global Filter = "global"
)

// Selects reports whether the filter selects key.
func (f Filter) Selects(key string) bool { return f == All || f == "" || string(f) == Scope(key) }

// globalNet are net.* keys the kernel registers only in the initial network
// namespace; a trailing '*' matches a prefix.
var globalNet = []string{
	"net.core.netdev_max_backlog", "net.core.netdev_budget", "net.core.netdev_budget_usecs",
	"net.core.dev_weight", "net.core.dev_weight_rx_bias", "net.core.dev_weight_tx_bias",
	"net.core.default_qdisc", "net.core.busy_poll", "net.core.busy_read",
	"net.core.rps_sock_flow_entries", "net.core.flow_limit_cpu_bitmap",
	"net.core.flow_limit_table_len", "net.core.netdev_tstamp_prequeue",
	"net.core.message_cost", "net.core.message_burst", "net.core.max_skb_frags",
	"net.core.bpf_jit_*", "net.core.warnings", "net.core.high_order_alloc_disable",
	"net.core.gro_normal_batch", "net.core.skb_defer_max",
	"net.core.netdev_unregister_timeout_secs", "net.core.mem_pcpu_rsv",
	"net.ipv4.tcp_mem", "net.ipv4.udp_mem", "net.ipv4.tcp_max_orphans",
	"net.ipv4.inet_peer_*", "net.ipv4.route.max_size",
	"net.netfilter.nf_conntrack_max", "net.nf_conntrack_max",
	"net.netfilter.nf_conntrack_buckets",
}

// Scope is "netns" for a key that lives in each network namespace, "global"
// for a host-wide one (everything outside net.* and the net.* keys the kernel
// keeps only in the initial namespace).
func Scope(key string) string {
	for _, g := range globalNet {
		if p, ok := strings.CutSuffix(g, "*"); ok && strings.HasPrefix(key, p) || key == g {
			return "global"
		}
	}
	if strings.HasPrefix(key, "net.") {
		return "netns"
	}
	return "global"
}

var k8sSafe = map[string]bool{
	"net.ipv4.ip_local_port_range": true, "net.ipv4.tcp_syncookies": true, "net.ipv4.ping_group_range": true,
	"net.ipv4.ip_unprivileged_port_start": true, "net.ipv4.ip_local_reserved_ports": true,
	"net.ipv4.tcp_keepalive_time": true, "net.ipv4.tcp_keepalive_intvl": true,
	"net.ipv4.tcp_keepalive_probes": true, "net.ipv4.tcp_fin_timeout": true,
	"net.ipv4.tcp_rmem": true, "net.ipv4.tcp_wmem": true, "kernel.shm_rmid_forced": true,
}

// K8s is the key's Kubernetes class: "safe" (kubelet default safe set),
// "unsafe" (namespaced, needs --allowed-unsafe-sysctls) or "node" (not
// namespaced: set it on the node).
func K8s(key string) string {
	switch {
	case k8sSafe[key]:
		return "safe"
	case Scope(key) == "netns":
		return "unsafe"
	}
	return "node"
}

// Setting is one key = value line of a profile.
type Setting struct{ Key, Value string }

// SyntaxError is a malformed profile line.
type SyntaxError struct {
	File string
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// lineKey returns the key of a setting line, or "" for blanks and comments.
func lineKey(line string) (key, val string, isSetting bool, err error) {
	t := Norm(line)
	if t == "" || t[0] == '#' || t[0] == ';' {
		return "", "", false, nil
	}
	k, v, ok := strings.Cut(t, "=")
	if !ok {
		return "", "", false, fmt.Errorf("expected 'key = value': %s", t)
	}
	return strings.TrimPrefix(Norm(k), "-"), Norm(v), true, nil
}

// Parse parses a sysctl.d-format profile and returns the settings f selects,
// in file order. name is used in error messages.
func Parse(name, text string, f Filter) ([]Setting, error) {
	var out []Setting
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		k, v, ok, err := lineKey(line)
		if err != nil {
			return nil, &SyntaxError{name, i + 1, err.Error()}
		}
		if !ok {
			continue
		}
		switch {
		case !ValidKey(k):
			return nil, &SyntaxError{name, i + 1, "invalid key: " + k}
		case v == "":
			return nil, &SyntaxError{name, i + 1, "empty value for " + k}
		case seen[k]:
			return nil, &SyntaxError{name, i + 1, "duplicate key: " + k}
		}
		seen[k] = true
		if f.Selects(k) {
			out = append(out, Setting{k, v})
		}
	}
	return out, nil
}

// Status of one key in a check.
type Status string

// Statuses.
const (
	OK      Status = "OK"
	Diff    Status = "DIFF"
	Missing Status = "MISSING"
)

// Result is one checked key.
type Result struct {
	Key, Want, Have string
	Status          Status
}

// Check compares the live values in t with the settings.
func Check(t Tree, settings []Setting) []Result {
	out := make([]Result, 0, len(settings))
	for _, s := range settings {
		r := Result{Key: s.Key, Want: s.Value}
		switch have, err := t.Read(s.Key); {
		case !t.Present(s.Key):
			r.Have, r.Status = "-", Missing
		case err != nil:
			r.Have, r.Status = "(unreadable)", Diff
		case have == s.Value:
			r.Have, r.Status = have, OK
		default:
			r.Have, r.Status = have, Diff
		}
		out = append(out, r)
	}
	return out
}

// Count tallies the statuses.
func Count(rs []Result) (ok, diff, missing int) {
	for _, r := range rs {
		switch r.Status {
		case OK:
			ok++
		case Diff:
			diff++
		default:
			missing++
		}
	}
	return
}

// Failed reports whether a check fails: any DIFF, or with strict any MISSING.
func Failed(rs []Result, strict bool) bool {
	_, d, m := Count(rs)
	return d > 0 || strict && m > 0
}

// Load writes every setting present in t; it returns the settings whose write
// failed (missing keys are skipped, as `sysctl -e -p` does).
func Load(t Tree, settings []Setting) (failed []Setting, errs error) {
	for _, s := range settings {
		if !t.Present(s.Key) {
			continue
		}
		if err := t.Write(s.Key, s.Value); err != nil {
			failed = append(failed, s)
			errs = errors.Join(errs, fmt.Errorf("write failed: %s = %s", s.Key, s.Value))
		}
	}
	return failed, errs
}

// RenderInstall renders the file apply installs: the profile verbatim, except
// that keys not in selected are commented out so that loading it (now or at
// boot) cannot touch them.
func RenderInstall(text, source, stamp string, f Filter, selected []Setting) string {
	want := map[string]bool{}
	for _, s := range selected {
		want[s.Key] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Installed by popup-sysctl from %s on %s\n", source, stamp)
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if k, _, ok, _ := lineKey(line); ok && !want[k] {
			fmt.Fprintf(&b, "# [popup-sysctl: not selected by --%s-only] %s\n", f, line)
			continue
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// Profile returns an embedded profile's text by name ("api-host").
func Profile(name string) (string, bool) {
	b, err := profiles.ReadFile(path.Clean(name) + ".conf")
	return string(b), err == nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// ProfileName is the profile name of a file or argument: base name without
// .conf and without the 90-popup- install prefix.
func ProfileName(p string) (string, error) {
	n := strings.TrimPrefix(strings.TrimSuffix(filepath.Base(p), ".conf"), "90-popup-")
	if !nameRE.MatchString(n) {
		return "", fmt.Errorf("bad profile name: %s", n)
	}
	return n, nil
}

// BackupHeader returns the value of the first "# name: value" line.
func BackupHeader(text, name string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, "# "+name+": "); ok {
			return v
		}
	}
	return ""
}
