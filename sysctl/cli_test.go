package sysctl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRoot builds ROOT/proc/sys holding every key of profile with an old
// value (the port range TAB-separated, as /proc prints it), except skip.
func fakeRoot(t *testing.T, profile, skip string) (string, []Setting) {
	t.Helper()
	root := t.TempDir()
	text, _ := Profile(profile)
	set, err := Parse(profile, text, All)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range set {
		if s.Key == skip {
			continue
		}
		p := filepath.Join(root, "proc/sys", KeyPath(s.Key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(oldValue(s.Key)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, set
}

func oldValue(key string) string {
	if key == "net.ipv4.ip_local_port_range" {
		return "32768\t60999"
	}
	return "7"
}

func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code, msg := ExitStatus(Run(args, &out))
	return out.String() + msg, code
}

func treeHolds(t *testing.T, root string, set []Setting, skip string, profileValues bool) {
	t.Helper()
	tree := DirTree(filepath.Join(root, "proc/sys"))
	for _, s := range set {
		if s.Key == skip {
			continue
		}
		want := Norm(oldValue(s.Key))
		if profileValues {
			want = s.Value
		}
		if got, err := tree.Read(s.Key); err != nil || got != want {
			t.Errorf("%s = %q (%v), want %q", s.Key, got, err, want)
		}
	}
}

// TestApplyRollbackOnFakeTree is section (c) of the old test.sh: backups,
// installed file, skipped missing key, whitespace-insensitive check, DIFF,
// stacked apply/rollback, refusal to roll back into another tree.
func TestApplyRollbackOnFakeTree(t *testing.T) {
	t.Parallel()
	const skip = "net.core.netdev_max_backlog"
	root, set := fakeRoot(t, "api-host", skip)
	out, rc := run(t, "--root", root, "apply", "api-host")
	if rc != 0 || !strings.Contains(out, "\nskip: "+skip) {
		t.Fatalf("apply: exit %d, want 0 with %s skipped:\n%s", rc, skip, out)
	}
	treeHolds(t, root, set, skip, true)
	backups, _ := filepath.Glob(filepath.Join(root, "var/lib/popup-sysctl/backup-*-api-host.conf"))
	if len(backups) != 1 {
		t.Fatalf("backups %v, want one", backups)
	}
	b, _ := os.ReadFile(backups[0])
	if !strings.Contains(string(b), "\nnet.ipv4.ip_local_port_range = 32768 60999\n") || !strings.Contains(string(b), "# missing-on-this-kernel: "+skip+"\n") {
		t.Errorf("backup lacks the normalised old range or the missing key:\n%s", b)
	}
	installed := filepath.Join(root, "etc/sysctl.d/90-popup-api-host.conf")
	inst, _ := os.ReadFile(installed)
	text, _ := Profile("api-host")
	if _, body, _ := strings.Cut(string(inst), "\n"); body != text {
		t.Errorf("installed file is not the profile after one header line:\n%s", inst)
	}
	if out, rc = run(t, "--root", root, "check", "api-host"); rc != 0 {
		t.Errorf("check after apply: exit %d:\n%s", rc, out)
	}
	range_ := filepath.Join(root, "proc/sys/net/ipv4/ip_local_port_range")
	if err := os.WriteFile(range_, []byte("10240\t 60999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, rc = run(t, "--root", root, "check", "api-host"); rc != 0 {
		t.Errorf("check with a TAB-separated range: exit %d:\n%s", rc, out)
	}
	if _, rc = run(t, "--root", root, "--strict", "check", "api-host"); rc != 1 {
		t.Errorf("--strict check with a missing key: exit %d, want 1", rc)
	}
	if err := os.WriteFile(range_, []byte("1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, rc = run(t, "--root", root, "check", "api-host"); rc != 1 || !hasLine(out, "net.ipv4.ip_local_port_range", "DIFF") {
		t.Errorf("check with a changed value: exit %d, want 1 with DIFF:\n%s", rc, out)
	}
	if err := os.WriteFile(range_, []byte("10240 60999\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// A second apply stacks a backup; rollbacks unwind one at a time.
	if out, rc = run(t, "--root", root, "apply", "api-host"); rc != 0 {
		t.Fatalf("second apply: exit %d:\n%s", rc, out)
	}
	if out, rc = run(t, "--root", root, "rollback", "api-host"); rc != 0 || !strings.Contains(out, "reinstated previous") {
		t.Fatalf("first rollback: exit %d:\n%s", rc, out)
	}
	treeHolds(t, root, set, skip, true)
	if again, _ := os.ReadFile(installed); !bytes.Equal(again, inst) {
		t.Error("first rollback did not reinstate the earlier install")
	}

	// Rollback refuses a backup taken from another tree, and leaves it alone.
	other, _ := fakeRoot(t, "api-host", skip)
	latest, _ := filepath.Glob(filepath.Join(root, "var/lib/popup-sysctl/backup-*-api-host.conf"))
	copied := filepath.Join(other, "var/lib/popup-sysctl", filepath.Base(latest[0]))
	if err := os.MkdirAll(filepath.Dir(copied), 0o755); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(latest[0]); err != nil || os.WriteFile(copied, data, 0o600) != nil {
		t.Fatal(err)
	}
	if out, rc = run(t, "--root", other, "rollback", "api-host"); rc != 2 {
		t.Errorf("rollback of a backup from another tree: exit %d, want 2:\n%s", rc, out)
	}
	treeHolds(t, other, set, skip, false)

	if out, rc = run(t, "--root", root, "rollback", "api-host"); rc != 0 {
		t.Fatalf("second rollback: exit %d:\n%s", rc, out)
	}
	treeHolds(t, root, set, skip, false)
	if _, err := os.Stat(installed); !os.IsNotExist(err) {
		t.Errorf("rollback left the installed file: %v", err)
	}
	if out, rc = run(t, "--root", root, "rollback"); rc != 1 || !strings.Contains(out, "no backup") {
		t.Errorf("rollback with nothing left: exit %d, want 1 saying no backup:\n%s", rc, out)
	}
}

// A fake proc tree with the real sysctl.d would install a file the next boot
// applies to the real kernel: apply refuses (exit 2) and installs nothing.
func TestApplyRefusesFakeTreeWithRealSysctlDir(t *testing.T) {
	root, _ := fakeRoot(t, "loadgen-host", "")
	t.Setenv("POPUP_SYSCTL_PROC", filepath.Join(root, "proc/sys"))
	t.Setenv("POPUP_SYSCTL_DIR", "")
	t.Setenv("POPUP_SYSCTL_BACKUP_DIR", filepath.Join(root, "backup"))
	out, rc := run(t, "apply", "loadgen-host")
	if rc != 2 || !strings.Contains(out, "refusing") {
		t.Errorf("apply: exit %d, want 2 refusing:\n%s", rc, out)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"check"}, {"bogus"}, {"--nope", "keys", "api-host"}, {"keys", "no-such-profile"}, {"--root"}} {
		if out, rc := run(t, args...); rc != 2 {
			t.Errorf("%v: exit %d, want 2:\n%s", args, rc, out)
		}
	}
}
