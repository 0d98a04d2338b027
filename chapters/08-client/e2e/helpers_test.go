package e2e

import (
	"os"
	"strings"
)

func readFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	return strings.TrimSpace(string(data)), err
}
