package syncbuf

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBufferCollectsConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 800, strings.Count(b.String(), "x\n"))
}
