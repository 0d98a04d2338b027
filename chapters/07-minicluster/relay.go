package main

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"

	"k8s.io/klog/v2"
)

// relay accepts connections on one listener and joins each to a new connection made by dial:
// from 127.0.0.1 on the host to a unix socket shared with the private network namespace, and
// from that socket to the apiserver inside it. TLS passes through untouched.
func relay(ctx context.Context, l net.Listener, dial func(context.Context) (net.Conn, error)) {
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
