package sysctl

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// mapTree is an in-memory Tree: absent keys are missing, "!"-valued ones unreadable.
type mapTree map[string]string

func (m mapTree) Present(k string) bool { _, ok := m[k]; return ok }
func (m mapTree) Read(k string) (string, error) {
	v, ok := m[k]
	if !ok || v == "!" {
		return "", errors.New("unreadable")
	}
	return Norm(v), nil
}
func (m mapTree) Write(k, v string) error {
	if m[k] == "!" {
		return errors.New("read-only")
	}
	m[k] = v
	return nil
}

func TestNormCollapsesBlanks(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1024\t65000\n": "1024 65000", "  a   b ": "a b", "": "", "4096\t131072\t6291456": "4096 131072 6291456",
	} {
		if got := Norm(in); got != want {
			t.Errorf("Norm(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKeyPathUsesDotsUnlessSlashed(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"net.ipv4.tcp_tw_reuse": "net/ipv4/tcp_tw_reuse", "net/ipv4/conf/eth0.1/rp_filter": "net/ipv4/conf/eth0.1/rp_filter",
		"/net/core/somaxconn": "net/core/somaxconn",
	} {
		if got := KeyPath(in); got != want {
			t.Errorf("KeyPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidKeyRejectsTraversal(t *testing.T) {
	t.Parallel()
	for k, want := range map[string]bool{
		"net.core.somaxconn": true, "net/ipv4/conf/eth0.1/rp_filter": true, "net..core": false,
		"net//core": false, "../etc": false, "": false, "net core": false, ".net": false,
	} {
		if got := ValidKey(k); got != want {
			t.Errorf("ValidKey(%q) = %v, want %v", k, got, want)
		}
	}
}

func TestScopeAndKubernetesClass(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ key, scope, k8s string }{
		{"net.ipv4.ip_local_port_range", "netns", "safe"},
		{"net.ipv4.tcp_tw_reuse", "netns", "unsafe"},
		{"net.core.somaxconn", "netns", "unsafe"},
		{"net.core.netdev_max_backlog", "global", "node"},
		{"net.core.bpf_jit_enable", "global", "node"},
		{"net.ipv4.inet_peer_threshold", "global", "node"},
		{"net.ipv4.tcp_mem", "global", "node"},
		{"net.ipv4.tcp_rmem", "netns", "safe"},
		{"fs.file-max", "global", "node"},
		{"kernel.shm_rmid_forced", "global", "safe"},
	} {
		if s, k := Scope(c.key), K8s(c.key); s != c.scope || k != c.k8s {
			t.Errorf("%s: scope %s k8s %s, want %s %s", c.key, s, k, c.scope, c.k8s)
		}
	}
}

func TestParseRejectsMalformedProfiles(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, text, err string }{
		{"no equals", "net.core.somaxconn 4096\n", "p:1: expected 'key = value'"},
		{"bad key", "# c\nnet..core = 1\n", "p:2: invalid key: net..core"},
		{"empty value", "net.core.somaxconn =  \n", "p:1: empty value for net.core.somaxconn"},
		{"duplicate", "a.b = 1\n-a.b = 2\n", "p:2: duplicate key: a.b"},
	} {
		_, err := Parse("p", c.text, All)
		if err == nil || !strings.HasPrefix(err.Error(), c.err) {
			t.Errorf("%s: err %v, want prefix %q", c.name, err, c.err)
		}
	}
}

func TestParseFiltersByScopeInFileOrder(t *testing.T) {
	t.Parallel()
	text := "; comment\n# c\n\nnet.core.somaxconn = 4096\n-fs.file-max=1000\nnet.ipv4.ip_local_port_range =\t10240   65535\nnet.core.netdev_max_backlog = 5000"
	for f, want := range map[Filter]string{
		All:    "net.core.somaxconn=4096 fs.file-max=1000 net.ipv4.ip_local_port_range=10240 65535 net.core.netdev_max_backlog=5000",
		NetNS:  "net.core.somaxconn=4096 net.ipv4.ip_local_port_range=10240 65535",
		Global: "fs.file-max=1000 net.core.netdev_max_backlog=5000",
	} {
		set, err := Parse("p", text, f)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range set {
			got = append(got, s.Key+"="+s.Value)
		}
		if g := strings.Join(got, " "); g != want {
			t.Errorf("%s: got %q, want %q", f, g, want)
		}
	}
}

func TestCheckStatuses(t *testing.T) {
	t.Parallel()
	tree := mapTree{"a.ok": "1024\t65000\n", "a.diff": "1", "a.bad": "!"}
	set := []Setting{{"a.ok", "1024 65000"}, {"a.diff", "2"}, {"a.bad", "3"}, {"a.gone", "4"}}
	want := []Result{
		{"a.ok", "1024 65000", "1024 65000", OK}, {"a.diff", "2", "1", Diff},
		{"a.bad", "3", "(unreadable)", Diff}, {"a.gone", "4", "-", Missing},
	}
	got := Check(tree, set)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if ok, d, m := Count(got); ok != 1 || d != 2 || m != 1 {
		t.Errorf("Count = %d %d %d", ok, d, m)
	}
}

func TestFailedOnDiffOrStrictMissing(t *testing.T) {
	t.Parallel()
	ok, diff, miss := Result{Status: OK}, Result{Status: Diff}, Result{Status: Missing}
	for _, c := range []struct {
		rs     []Result
		strict bool
		want   bool
	}{
		{[]Result{ok}, false, false}, {[]Result{ok, diff}, false, true},
		{[]Result{ok, miss}, false, false}, {[]Result{ok, miss}, true, true},
	} {
		if got := Failed(c.rs, c.strict); got != c.want {
			t.Errorf("Failed(%v, %v) = %v", c.rs, c.strict, got)
		}
	}
}

func TestLoadSkipsMissingAndReportsFailedWrites(t *testing.T) {
	t.Parallel()
	tree := mapTree{"a.x": "0", "a.ro": "!"}
	failed, err := Load(tree, []Setting{{"a.x", "1"}, {"a.ro", "2"}, {"a.gone", "3"}})
	if tree["a.x"] != "1" || len(failed) != 1 || failed[0].Key != "a.ro" || err == nil {
		t.Errorf("tree %v failed %v err %v", tree, failed, err)
	}
	if tree.Present("a.gone") {
		t.Error("Load created a missing key")
	}
}

func TestRenderInstallCommentsOutUnselectedKeys(t *testing.T) {
	t.Parallel()
	text := "# why\nnet.core.somaxconn = 4096\nfs.file-max = 1000\n"
	set, _ := Parse("p", text, NetNS)
	got := RenderInstall(text, "src", "T", NetNS, set)
	want := "# Installed by popup-sysctl from src on T\n# why\nnet.core.somaxconn = 4096\n# [popup-sysctl: not selected by --netns-only] fs.file-max = 1000\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestProfileNameStripsInstallPrefix(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"api-host": "api-host", "/etc/sysctl.d/90-popup-api-host.conf": "api-host", "x/loadgen-host.conf": "loadgen-host", "a b": "",
	} {
		got, err := ProfileName(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("ProfileName(%q) = %q, %v", in, got, err)
		}
	}
}

// TestProfilesLint is the profile lint sysctl/test.sh ran: every key has Why:
// and Cost: in the comment block directly above it, no tcp_tw_recycle,
// tcp_max_tw_buckets >= 100000, and a port range that starts >= 10240 with
// bounds of different parity.
func TestProfilesLint(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"api-host", "loadgen-host"} {
		text, ok := Profile(name)
		if !ok {
			t.Fatalf("%s not embedded", name)
		}
		set, err := Parse(name, text, All)
		if err != nil || len(set) == 0 {
			t.Fatalf("%s: %v (%d keys)", name, err, len(set))
		}
		var comment []string
		for _, line := range strings.Split(text, "\n") {
			k, _, isSet, _ := lineKey(line)
			switch {
			case strings.HasPrefix(line, "#"):
				comment = append(comment, line)
			case isSet:
				c := strings.Join(comment, "\n")
				if !strings.Contains(c, "Why:") || !strings.Contains(c, "Cost:") {
					t.Errorf("%s: %s lacks a Why:/Cost: comment directly above", name, k)
				}
				comment = nil
			default:
				comment = nil
			}
		}
		vals := map[string]string{}
		for _, s := range set {
			vals[s.Key] = s.Value
		}
		if _, bad := vals["net.ipv4.tcp_tw_recycle"]; bad {
			t.Errorf("%s sets tcp_tw_recycle", name)
		}
		var buckets, lo, hi int
		if _, err := fmtSscan(vals["net.ipv4.tcp_max_tw_buckets"], &buckets); err != nil || buckets < 100000 {
			t.Errorf("%s: tcp_max_tw_buckets %q, want >= 100000", name, vals["net.ipv4.tcp_max_tw_buckets"])
		}
		if r, ok := vals["net.ipv4.ip_local_port_range"]; ok {
			if _, err := fmtSscan(r, &lo, &hi); err != nil || lo < 10240 || lo%2 == hi%2 {
				t.Errorf("%s: ip_local_port_range %q", name, r)
			}
		}
	}
}

var fmtSscan = fmt.Sscan
