//go:build !linux

package oncrpc

import "os"

// sinkPipe is Linux only; elsewhere reply data is copied (copyToFile).
type sinkPipe struct{}

func (c *Client) closeSinkPipe() {}

func (c *Client) spliceToFile(f *os.File, off int64, n int) (int, error, error) {
	return c.copyToFile(f, off, n)
}
