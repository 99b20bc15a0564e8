package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// certReloader serves the certificate of server.tls and loads it again when either file
// changes, so that a renewed certificate (cert-manager, certbot, a mounted secret) is used
// without a restart. It looks at the files' modification times at most once a second, on a
// handshake: no watcher goroutine to own. One handshake checks while the others go on with
// the current certificate (no handshake waits on file I/O), and a half-written pair that
// fails to load keeps the previous certificate until a later check loads it.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	cert    atomic.Pointer[tls.Certificate]
	checked atomic.Int64 // unix nanoseconds of the last look at the files
	reload  sync.Mutex   // held by the one handshake that looks; guards stamp
	stamp   string       // the files' modification times and sizes when cert was loaded
}

func newCertReloader(certFile, keyFile string, logger *slog.Logger) (*certReloader, error) {
	c := &certReloader{certFile: certFile, keyFile: keyFile, log: logger}
	stamp, err := c.stampNow()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("server.tls: %w", err)
	}
	c.cert.Store(&cert)
	c.stamp = stamp
	c.checked.Store(time.Now().UnixNano())
	return c, nil
}

func (c *certReloader) stampNow() (string, error) {
	var stamp string
	for _, f := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("server.tls: %w", err)
		}
		stamp += fmt.Sprintf("%d/%d;", fi.ModTime().UnixNano(), fi.Size())
	}
	return stamp, nil
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	now := time.Now()
	if now.UnixNano()-c.checked.Load() >= int64(time.Second) && c.reload.TryLock() {
		defer c.reload.Unlock()
		c.checked.Store(now.UnixNano())
		if stamp, err := c.stampNow(); err == nil && stamp != c.stamp {
			cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
			if err != nil {
				c.log.Warn("reload the TLS certificate: keeping the previous one", "err", err)
			} else {
				c.cert.Store(&cert)
				c.stamp = stamp
				c.log.Info("reloaded the TLS certificate", "cert_file", c.certFile)
			}
		}
	}
	return c.cert.Load(), nil
}
