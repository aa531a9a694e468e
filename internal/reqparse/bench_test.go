package reqparse

// The standard library only, no testify (the package comment says why).

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkScanQueryWhere is a homepage query's parsing as the API does it, ScanQuery then
// Where (then Release, where the API has answered): the plain query, and the same with the two attributes of make bench's run K (the
// "rules" case of httpapi's BenchmarkGetPopupSteadyState). Their ratio is what the attributes add
// to the parsing (docs/PERFORMANCE.md, "Rules").
func BenchmarkScanQueryWhere(b *testing.B) {
	const plain = "uid=user-1234&platform=ios&app_version=8.10.0&region=us&lang=en"
	for _, bc := range []struct{ name, raw string }{
		{"plain", plain},
		{"attrs", plain + "&attr.plan=pro&attr.build=9.2.0"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				q, perr := ScanQuery(bc.raw)
				if perr != nil {
					b.Fatal(perr)
				}
				if _, perr := q.Where(); perr != nil {
					b.Fatal(perr)
				}
				q.Release()
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process's CPU time so far (user and system): per operation, what a benchmark
// cost, where the wall clock's ns/op also counts the time other processes held the cores.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
