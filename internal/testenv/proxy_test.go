package testenv

import "testing"

func TestAnnouncedPortReadsTheReplicasListeningPort(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		chunk string
		want  int
	}{
		{"*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n$5\r\n23456\r\n", 23456},
		{"*1\r\n$4\r\nPING\r\n", 0},
		{"*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n$5\r\n23", 0},
		{"*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n$3\r\nabc\r\n", 0},
	} {
		if got := announcedPort([]byte(c.chunk)); got != c.want {
			t.Errorf("announcedPort(%q) = %d, want %d", c.chunk, got, c.want)
		}
	}
}
