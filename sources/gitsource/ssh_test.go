package gitsource

import (
	"bytes"
	"crypto/ed25519"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
)

// sshServer is a minimal Git-over-SSH server: public-key auth against one key, and
// `git-upload-pack '<path>'` exec requests served by the real git-upload-pack.
type sshServer struct {
	addr    string
	hostKey ssh.PublicKey
}

func startSSHServer(t *testing.T, clientKey ssh.PublicKey) *sshServer {
	t.Helper()
	_, hostPriv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), clientKey.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	config.AddHostKey(hostSigner)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serveSSHConn(conn, config) })
		}
	})
	return &sshServer{addr: ln.Addr().String(), hostKey: hostSigner.PublicKey()}
}

func serveSSHConn(conn net.Conn, config *ssh.ServerConfig) {
	defer func() { _ = conn.Close() }()
	_, chans, reqs, err := ssh.NewServerConn(conn, config)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for newCh := range chans {
		if newCh.ChannelType() != "session" {
			_ = newCh.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, chReqs, err := newCh.Accept()
		if err != nil {
			return
		}
		go serveSSHSession(ch, chReqs)
	}
}

func serveSSHSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer func() { _ = ch.Close() }()
	for req := range reqs {
		if req.Type != "exec" {
			_ = req.Reply(req.Type == "env", nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			return
		}
		service, arg, _ := strings.Cut(payload.Command, " ")
		if service != "git-upload-pack" {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		cmd := exec.Command("git-upload-pack", strings.Trim(arg, "'"))
		cmd.Env = append(os.Environ(), gitEnv...)
		cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return
		}
		status := uint32(0)
		if err := cmd.Start(); err != nil {
			return
		}
		go func() {
			_, _ = io.Copy(stdin, ch)
			_ = stdin.Close()
		}()
		if err := cmd.Wait(); err != nil {
			status = 1
		}
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		return
	}
}

// writeKey writes an OpenSSH private key file, encrypted when passphrase is set.
func writeKey(t *testing.T, dir, passphrase string) (path string, pub ssh.PublicKey) {
	t.Helper()
	pubKey, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	pub, err = ssh.NewPublicKey(pubKey)
	if err != nil {
		t.Fatal(err)
	}
	return path, pub
}

func writeKnownHosts(t *testing.T, dir, addr string, key ssh.PublicKey) string {
	t.Helper()
	path := filepath.Join(dir, "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSSH(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{"m/a.yaml": "a: 1\n"})
	keyDir := t.TempDir()
	const passphrase = "correct horse battery"
	keyFile, pub := writeKey(t, keyDir, passphrase)
	srv := startSSHServer(t, pub)
	url := "ssh://git@" + srv.addr + r.dir
	knownHosts := writeKnownHosts(t, keyDir, srv.addr, srv.hostKey)

	t.Run("key and known host", func(t *testing.T) {
		t.Parallel()
		s := newSource(t, Config{URL: url, Path: "m", Auth: Auth{
			SSHKeyFile: keyFile, SSHKeyPassphrase: passphrase, KnownHostsFile: knownHosts}})
		ctx := testContext(t)
		head, err := s.Head(ctx)
		if err != nil || head != rev {
			t.Fatalf("Head = %s, %v; want %s", head, err, rev)
		}
		snap, err := s.Fetch(ctx, head)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Revision != rev || len(snap.Files) != 1 || snap.Files[0].Path != "m/a.yaml" {
			t.Errorf("snapshot %+v", snap)
		}
	})

	t.Run("unknown host", func(t *testing.T) {
		t.Parallel()
		_, otherHost, _ := ed25519.GenerateKey(nil)
		otherSigner, _ := ssh.NewSignerFromKey(otherHost)
		empty := filepath.Join(t.TempDir(), "known_hosts")
		// Another host's key only.
		other := writeKnownHosts(t, t.TempDir(), "192.0.2.1:22", otherSigner.PublicKey())
		mismatch := writeKnownHosts(t, t.TempDir(), srv.addr, otherSigner.PublicKey())
		if err := os.WriteFile(empty, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		for file, want := range map[string]string{
			empty:    "unknown ssh host " + srv.addr,
			other:    "unknown ssh host " + srv.addr,
			mismatch: "ssh host key mismatch for " + srv.addr,
		} {
			s := newSource(t, Config{URL: url, Auth: Auth{
				SSHKeyFile: keyFile, SSHKeyPassphrase: passphrase, KnownHostsFile: file}})
			_, err := s.Head(testContext(t))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Head error = %v, want %q", err, want)
			}
			t.Log(err)
		}
	})

	t.Run("wrong key", func(t *testing.T) {
		t.Parallel()
		otherKey, _ := writeKey(t, t.TempDir(), "")
		s := newSource(t, Config{URL: url, Auth: Auth{SSHKeyFile: otherKey, KnownHostsFile: knownHosts}})
		_, err := s.Head(testContext(t))
		if err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
			t.Errorf("Head error = %v, want an authentication error", err)
		}
		t.Log(err)
	})

	t.Run("wrong passphrase", func(t *testing.T) {
		t.Parallel()
		_, err := New(Config{URL: url, Dir: t.TempDir(), Auth: Auth{
			SSHKeyFile: keyFile, SSHKeyPassphrase: "wrong " + passphrase, KnownHostsFile: knownHosts}}, nil)
		if err == nil || strings.Contains(err.Error(), passphrase) {
			t.Errorf("New error = %v, want an error without the passphrase", err)
		}
		t.Log(err)
	})
}
