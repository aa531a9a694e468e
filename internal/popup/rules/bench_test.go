package rules

import (
	"strconv"
	"syscall"
	"testing"
	"time"
)

// benchAttrs is a request with 10 attributes, the benchmark's size: a condition looks its key up
// among them, then compares.
func benchAttrs() Attrs {
	ps := []Pair{{"plan", "pro"}, {"email", "ann@corp.com"}, {"spent", "1234.5"}, {"signup", "2026-03-01T10:00:00Z"},
		{"build", "8.10.2"}, {"country", "de"}, {"beta", "true"}, {"tier", "3"}, {"device", "pixel-9"}, {"cohort", "2026-w09"}}
	return NewAttrs(ps)
}

// BenchmarkCondition is one condition's cost per operator family: the targets are
// 50 ns for string and number operators and 300 ns for a bounded regular expression
// (docs/PERFORMANCE.md, "Rules").
func BenchmarkCondition(b *testing.B) {
	list := make([]Value, 20)
	for i := range list {
		list[i] = Str("c" + strconv.Itoa(i))
	}
	list[19] = Str("de")
	tests := []struct {
		name string
		give Condition
	}{
		{"eq_string", condOf("plan", OpEq, Str("pro"))},
		{"in_string_20", Condition{Attr: "country", Op: OpIn, Values: list}},
		{"ends_with", condOf("email", OpEndsWith, Str("@corp.com"))},
		{"gt_number", condOf("spent", OpGt, Num("100"))},
		{"eq_number", condOf("tier", OpEq, Num("3"))},
		{"gte_date", condOf("signup", OpGte, Str("2026-01-01T00:00:00Z"))},
		{"semver_gte", condOf("build", OpSemverGte, Str("8.2.0"))},
		{"exists", condOf("beta", OpExists)},
		{"matches", condOf("email", OpMatches, Str(`^[a-z0-9._%+-]+@(corp|staff)\.com$`))},
	}
	a := benchAttrs()
	for _, tt := range tests {
		s, err := Compile([]Rule{{Conditions: []Condition{tt.give}}})
		if err != nil {
			b.Fatal(err)
		}
		if !s.Match(&a) {
			b.Fatalf("%s does not hold", tt.name)
		}
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				s.Match(&a)
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process's CPU time so far: on a machine shared with other work, the CPU a
// benchmark takes per operation says more than the wall time it waited for a core.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
