package sysctl

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"popupsvc/internal/testenv"
)

// helperEnv makes the test binary act as popup-sysctl (args split on \x1f):
// the netns test runs it with `ip netns exec`, so the real tool reads and
// writes the namespace's own /proc/sys.
const helperEnv = "POPUP_SYSCTL_TEST_ARGS"

func TestMain(m *testing.M) {
	if a, ok := os.LookupEnv(helperEnv); ok {
		code, msg := ExitStatus(Run(strings.Split(a, "\x1f"), os.Stdout))
		if msg != "" {
			fmt.Fprintf(os.Stderr, "popup-sysctl: %s\n", msg)
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

var nsSeq atomic.Int64

// newNetns creates a fresh network namespace, deleted at cleanup.
func newNetns(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("popup-sysctl-test-%d-%d", os.Getpid(), nsSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns delete %s: %v: %s", name, err, out)
		}
	})
	return name
}

// tool runs popup-sysctl inside ns; env entries are added to the environment.
func runTool(t *testing.T, ns string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, helperEnv+"="+strings.Join(args, "\x1f"), "GORACE=atexit_sleep_ms=0")...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v in %s: %v", args, ns, err)
	}
	return out.String(), 0
}

func readHost(key string) string {
	v, err := DirTree("/proc/sys").Read(key)
	if err != nil {
		return "(unreadable)"
	}
	return v
}

// TestNetnsApplyCheckRollback proves the tool for real in fresh network
// namespaces, for each profile: every key's scope matches the kernel, check
// reports DIFF (exit 1) on a fresh namespace, apply --netns-only sets every
// namespaced key and check then exits 0, global keys are MISSING (fatal only
// under --strict), rollback restores the namespace's defaults and removes the
// installed file, and the host's own values never change.
func TestNetnsApplyCheckRollback(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Missing(t, "needs root for ip netns; run go test as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		testenv.Missing(t, "needs iproute2 (ip) for network namespaces")
	}
	for _, prof := range []string{"api-host", "loadgen-host"} {
		t.Run(prof, func(t *testing.T) {
			text, _ := Profile(prof)
			all, err := Parse(prof, text, All)
			if err != nil {
				t.Fatal(err)
			}
			host := map[string]string{}
			for _, s := range all {
				if !DirTree("/proc/sys").Present(s.Key) {
					t.Errorf("%s is not on this kernel", s.Key)
				}
				host[s.Key] = readHost(s.Key)
			}
			t.Cleanup(func() {
				for _, s := range all {
					if got := readHost(s.Key); got != host[s.Key] {
						t.Errorf("host %s changed from %q to %q", s.Key, host[s.Key], got)
					}
				}
			})

			ns := newNetns(t)
			// Scope classification matches the kernel: a net.* key present in a
			// fresh namespace is netns, one absent there is global.
			for _, s := range all {
				if !strings.HasPrefix(s.Key, "net.") || !DirTree("/proc/sys").Present(s.Key) {
					continue
				}
				seen := "global"
				if exec.Command("ip", "netns", "exec", ns, "test", "-e", "/proc/sys/"+KeyPath(s.Key)).Run() == nil {
					seen = "netns"
				}
				if Scope(s.Key) != seen {
					t.Errorf("scope of %s: tool says %s, kernel behaves as %s", s.Key, Scope(s.Key), seen)
				}
			}

			dir := t.TempDir()
			env := []string{"POPUP_SYSCTL_DIR=" + filepath.Join(dir, "sysctl.d"), "POPUP_SYSCTL_BACKUP_DIR=" + filepath.Join(dir, "backup")}
			out, rc := runTool(t, ns, env, "check", "--netns-only", prof)
			if rc != 1 || !strings.Contains(out, " DIFF\n") {
				t.Errorf("check in a fresh netns: exit %d, want 1 with DIFF lines:\n%s", rc, out)
			}
			nsVals := map[string]string{}
			nsSet, _ := Parse(prof, text, NetNS)
			for _, s := range nsSet {
				nsVals[s.Key] = s.Value
			}

			out, rc = runTool(t, ns, env, "apply", "--netns-only", prof)
			if rc != 0 {
				t.Fatalf("apply --netns-only: exit %d:\n%s", rc, out)
			}
			installed := filepath.Join(dir, "sysctl.d", "90-popup-"+prof+".conf")
			inst, err := os.ReadFile(installed)
			if err != nil {
				t.Fatalf("installed file: %v", err)
			}
			for _, s := range all {
				if Scope(s.Key) == "global" && !strings.Contains(string(inst), "# [popup-sysctl: not selected by --netns-only] "+s.Key) {
					t.Errorf("installed file does not comment out global key %s", s.Key)
				}
			}
			out, rc = runTool(t, ns, env, "check", "--netns-only", prof)
			if rc != 0 {
				t.Errorf("check --netns-only after apply: exit %d:\n%s", rc, out)
			}
			for k := range nsVals {
				if !hasLine(out, k, "OK") {
					t.Errorf("check does not report OK for %s:\n%s", k, out)
				}
			}
			out, rc = runTool(t, ns, env, "check", prof)
			for _, s := range all {
				if strings.HasPrefix(s.Key, "net.") && Scope(s.Key) == "global" && !hasLine(out, s.Key, "MISSING") {
					t.Errorf("unfiltered check in netns: %s not MISSING:\n%s", s.Key, out)
				}
			}
			if rc != 0 {
				t.Errorf("unfiltered check in netns: exit %d, want 0 (global keys MISSING are not fatal)", rc)
			}
			if len(nsVals) < len(all) {
				if _, rc = runTool(t, ns, env, "--strict", "check", prof); rc != 1 {
					t.Errorf("--strict check with MISSING keys: exit %d, want 1", rc)
				}
			}

			// Rollback restores what a fresh namespace has.
			fresh := newNetns(t)
			want, _ := runTool(t, fresh, env, "check", "--netns-only", prof)
			out, rc = runTool(t, ns, env, "rollback", prof)
			if rc != 0 {
				t.Fatalf("rollback: exit %d:\n%s", rc, out)
			}
			got, _ := runTool(t, ns, env, "check", "--netns-only", prof)
			if got != want { // same profile and filter: same WANT column, so HAVE and STATUS must match
				t.Errorf("after rollback the namespace holds\n%s\nwant the fresh namespace's\n%s", got, want)
			}
			if _, err := os.Stat(installed); !os.IsNotExist(err) {
				t.Errorf("rollback left the installed file: %v", err)
			}
		})
	}
}

// hasLine reports whether a check report has a line for key with status.
func hasLine(out, key, status string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == key && f[len(f)-1] == status {
			return true
		}
	}
	return false
}
