// The sandbox side of the egress proxy: listens on 127.0.0.1:<port> inside the container (which has
// no network) and pipes each connection to the hands worker's proxy through the unix socket mounted
// from the host. It holds no policy and no secret; the proxy on the host decides everything. The
// container's first process runs it, and starts it again a second after it stops.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

const proxyDown = "the egress proxy of this sandbox is not running right now (the hands worker restarts it); retry the command\n"

func forward(port, socket string) int {
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		fmt.Fprintf(os.Stderr, "agent-sandbox-tools forward: %q is not a port\n", port)
		return 2
	}
	listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent-sandbox-tools forward:", err)
		return 1
	}
	for {
		client, err := listener.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			// Out of file descriptors, say: wait a little instead of spinning.
			time.Sleep(100 * time.Millisecond)
			continue
		}
		go relayConnection(client.(*net.TCPConn), socket)
	}
}

func relayConnection(client *net.TCPConn, socket string) {
	conn, err := net.Dial("unix", socket)
	if err != nil {
		refuse(client)
		return
	}
	upstream := conn.(*net.UnixConn)
	done := make(chan struct{}, 2)
	// Each direction ends the other's writing at its end (a half-close, as the client or proxy
	// meant it); a failed direction ends both connections at once.
	pipe := func(to, from halfCloser) {
		if _, err := io.Copy(to, from); err != nil {
			client.Close()
			upstream.Close()
		} else {
			to.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(upstream, client)
	go pipe(client, upstream)
	<-done
	<-done
	client.Close()
	upstream.Close()
}

type halfCloser interface {
	io.ReadWriter
	CloseWrite() error
}

// refuse answers the connection's request with a 502 saying why, then closes it once the client has
// read the answer (closing with its request unread could reset the connection before it arrives).
func refuse(client *net.TCPConn) {
	defer client.Close()
	fmt.Fprintf(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		len(proxyDown), proxyDown)
	client.CloseWrite()
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.Copy(io.Discard, client)
}
