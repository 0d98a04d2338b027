// Package relay joins TCP connections: what a program uses to publish, on this machine's
// loopback, an apiserver that lives in a network namespace of its own (chapter 08's through a
// unix socket, chapter 12's node at its own address), as minikube's Docker driver publishes
// 8443 on macOS. TLS passes through untouched.
package relay

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"

	"k8s.io/klog/v2"
)

// Serve accepts connections on l until ctx ends or l is closed, and joins each to a new
// connection made by dial, half-closing each way as the other side does.
func Serve(ctx context.Context, l net.Listener, dial func(context.Context) (net.Conn, error)) {
	logger := klog.FromContext(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		<-ctx.Done()
		_ = l.Close()
	}()
	for {
		in, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				logger.Error(err, "Relay stopped accepting")
			}
			return
		}
		wg.Go(func() {
			defer func() { _ = in.Close() }()
			out, err := dial(ctx)
			if err != nil {
				logger.Error(err, "Relay could not reach the apiserver")
				return
			}
			defer func() { _ = out.Close() }()
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				if c, ok := dst.(interface{ CloseWrite() error }); ok {
					_ = c.CloseWrite()
				}
				done <- struct{}{}
			}
			go pipe(out, in)
			go pipe(in, out)
			select {
			case <-done:
				<-done
			case <-ctx.Done():
			}
		})
	}
}
