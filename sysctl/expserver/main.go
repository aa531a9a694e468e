// Command expserver is the HTTP server of the TIME_WAIT experiment (sysctl/experiment.sh): a bare
// net/http server that answers every request with a fixed JSON body of a popup answer's size.
//
// Which side of a TCP connection ends up in TIME_WAIT depends only on who closes first, so the
// server offers both cases:
//
//	/               net/http as is: a request with "Connection: close" is answered and then the
//	                server closes first, exactly as popup-api (Gin on net/http) does. TIME_WAIT
//	                lands on the server.
//	/client-closes  the answer says "Connection: close" but the server waits for the client to
//	                close first (up to 5 s). TIME_WAIT lands on the client: the load generator's
//	                case, and popup-api's own case towards Redis/MySQL when a pool churns.
//
// It is not popup-api: the experiment is about the kernel's connection handling, which is the
// same whatever the handler does, and a static handler keeps Redis and MySQL out of the figures.
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"strconv"
	"strings"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18080", "listen address")
	size := flag.Int("size", 320, "body size in bytes")
	flag.Parse()

	prefix := `{"popup":{"id":1,"title":"`
	suffix := `"},"decision_id":"0123456789abcdef-1","config_version":1}`
	body := []byte(prefix + strings.Repeat("x", max(*size-len(prefix)-len(suffix), 0)) + suffix)
	length := strconv.Itoa(len(body))
	clientClosesReply := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\n" +
		"Content-Length: " + length + "\r\nConnection: close\r\n\r\n" + string(body))

	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"application/json; charset=utf-8"}
		h["Content-Length"] = []string{length}
		w.Write(body) // a static experiment server; the client sees any failure
	})
	mux.HandleFunc("/client-closes", func(w http.ResponseWriter, _ *http.Request) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		if _, err := rw.Write(clientClosesReply); err != nil {
			return
		}
		if err := rw.Flush(); err != nil {
			return
		}
		// Wait for the client's FIN: reading hits EOF once the client has closed. Only then close
		// our side, so that the client is the one that closed first.
		conn.SetReadDeadline(time.Now().Add(5 * time.Second)) // best effort
		io.Copy(io.Discard, rw.Reader)                        // EOF or deadline
	})

	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 60 * time.Second}
	log.Printf("expserver on %s, body %d bytes", *addr, len(body))
	log.Fatal(srv.ListenAndServe())
}
