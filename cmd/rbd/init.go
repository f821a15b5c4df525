package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/runbookdev/runbook/cmd/internal/cli"
)

const initUsage = `Usage: rbd init [flags]

Makes what a daemon needs to be reached safely: an API token and a webhook
secret, each in a file only you can read, under the data directory (which
git ignores). Files that exist are kept. It prints the commands that use
them.
`

// The files rbd init writes under the data directory.
const (
	tokenFileName  = "api-tokens"
	secretFileName = "webhook-secret"
)

func runInit(args []string, stdout, stderr io.Writer) int {
	flags := cli.NewEnvFlags("rbd init", initUsage, stderr)
	dataDir := flags.String("data-dir", ".rbd", "where rbd keeps its data; the files go here")
	flags.Env("data-dir", "RBD_DATA_DIR")
	if status, ok := parseNoArgs(flags, args, "init", stderr); !ok {
		return status
	}
	if err := os.MkdirAll(*dataDir, 0o700); err != nil {
		return cantRun(stderr, "%v", err)
	}
	tokens := filepath.Join(*dataDir, tokenFileName)
	secret := filepath.Join(*dataDir, secretFileName)
	for _, f := range []struct{ path, prefix string }{{tokens, "rbt_"}, {secret, "whsec_"}} {
		wrote, err := writeSecretFile(f.path, f.prefix)
		if err != nil {
			return cantRun(stderr, "%v", err)
		}
		if wrote {
			fmt.Fprintf(stdout, "wrote %s (mode 0600)\n", f.path)
		} else {
			fmt.Fprintf(stdout, "kept %s, which exists\n", f.path)
		}
	}
	fmt.Fprintf(stdout, `
Start the daemon:
  rbd serve --verbs DIR --api-token-file %[1]s --webhook-secret-file %[2]s
Then, in another shell, the client:
  export RBD_TOKEN=$(head -1 %[1]s) RBD_WEBHOOK_SECRET_FILE=%[2]s
`, tokens, secret)
	return exitOK
}

// writeSecretFile writes a new random value, with its prefix, to path,
// readable by its owner only, unless path exists; it says whether it
// wrote. O_EXCL makes the check and the creation one step: a file made
// meanwhile is kept, never overwritten.
func writeSecretFile(path, prefix string) (bool, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := fmt.Fprintln(f, prefix+hex.EncodeToString(b[:])); err != nil {
		f.Close()
		return false, err
	}
	return true, f.Close()
}
