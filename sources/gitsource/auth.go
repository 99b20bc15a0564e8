package gitsource

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"
)

// defaultTokenUser is sent as the user name when only a password (a token) is configured:
// GitHub requires exactly this for App tokens and accepts it for personal tokens; GitLab and
// Gitea accept any non-empty user with a personal token.
const defaultTokenUser = "x-access-token"

// buildAuth turns the configured credentials into a go-git AuthMethod for the endpoint.
// Credentials embedded in an http(s) URL are used when the config has none; the caller
// strips them from the URL handed to go-git.
func buildAuth(ep *transport.Endpoint, a Auth) (transport.AuthMethod, error) {
	hasBasic := a.Username != "" || a.Password != ""
	hasSSH := a.SSHKeyFile != "" || a.SSHKeyPassphrase != "" || a.KnownHostsFile != ""
	if a.TokenFunc != nil {
		// The token is fetched per operation (Source.authFor); only check the combination.
		switch {
		case ep.Protocol != "http" && ep.Protocol != "https":
			return nil, fmt.Errorf("token auth applies to https urls only, not %s", ep.Protocol)
		case hasBasic:
			return nil, errors.New("token auth excludes username and password")
		case hasSSH:
			return nil, errors.New("token auth excludes sshKeyFile, sshKeyPassphrase and knownHostsFile")
		case ep.User != "" || ep.Password != "":
			return nil, errors.New("token auth excludes credentials in the url")
		}
		return nil, nil
	}
	switch ep.Protocol {
	case "http", "https":
		if hasSSH {
			return nil, errors.New("sshKeyFile, sshKeyPassphrase and knownHostsFile apply to ssh urls only")
		}
		user, pass := a.Username, a.Password
		if !hasBasic {
			user, pass = ep.User, ep.Password
		}
		if user == "" && pass == "" {
			return nil, nil
		}
		if user == "" {
			user = defaultTokenUser
		}
		return &githttp.BasicAuth{Username: user, Password: pass}, nil
	case "ssh":
		if hasBasic {
			return nil, errors.New("username and password apply to https urls only; use sshKeyFile for ssh")
		}
		return buildSSHAuth(ep, a)
	default: // file, git
		if hasBasic || hasSSH {
			return nil, fmt.Errorf("auth is not supported for %s urls", ep.Protocol)
		}
		return nil, nil
	}
}

// buildSSHAuth returns public-key auth (from the key file, or the ssh agent) whose host key
// check is strict: the host must be in known_hosts (the configured file, else the usual
// ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts). There is no way to turn the check off.
func buildSSHAuth(ep *transport.Endpoint, a Auth) (transport.AuthMethod, error) {
	user := ep.User
	if user == "" {
		user = "git"
	}
	var files []string
	if a.KnownHostsFile != "" {
		files = []string{a.KnownHostsFile}
	}
	var db *knownhosts.HostKeyDB
	var err error
	if len(files) > 0 {
		db, err = knownhosts.NewDB(files...)
	} else {
		// go-git's defaults: $SSH_KNOWN_HOSTS, else ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts.
		db, err = gitssh.NewKnownHostsDb()
		files = []string{"the default known_hosts files"}
	}
	if err != nil {
		return nil, fmt.Errorf("read known_hosts: %w", err)
	}
	port := ep.Port
	if port <= 0 {
		port = 22
	}
	hostWithPort := net.JoinHostPort(ep.Host, strconv.Itoa(port))
	helper := gitssh.HostKeyCallbackHelper{
		HostKeyCallback:   strictHostKeyCallback(db.HostKeyCallback(), strings.Join(files, ", ")),
		HostKeyAlgorithms: db.HostKeyAlgorithms(hostWithPort),
	}

	if a.SSHKeyFile == "" {
		if a.SSHKeyPassphrase != "" {
			return nil, errors.New("sshKeyPassphrase is set without sshKeyFile")
		}
		agent, err := gitssh.NewSSHAgentAuth(user)
		if err != nil {
			return nil, fmt.Errorf("no sshKeyFile configured and no ssh agent: %w", err)
		}
		agent.HostKeyCallbackHelper = helper
		return agent, nil
	}
	keys, err := gitssh.NewPublicKeysFromFile(user, a.SSHKeyFile, a.SSHKeyPassphrase)
	if err != nil {
		return nil, fmt.Errorf("read ssh key %s: %w", a.SSHKeyFile, err)
	}
	keys.HostKeyCallbackHelper = helper
	return keys, nil
}

// strictHostKeyCallback replaces knownhosts' terse "key is unknown" with errors that name the
// host and say what to do.
func strictHostKeyCallback(cb ssh.HostKeyCallback, files string) ssh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := cb(hostname, remote, key)
		if err == nil {
			return nil
		}
		var keyErr *xknownhosts.KeyError
		var revoked *xknownhosts.RevokedError
		switch {
		case errors.As(err, &keyErr) && len(keyErr.Want) == 0:
			return fmt.Errorf("unknown ssh host %s: its key is not in %s (add it, e.g. with ssh-keyscan)", hostname, files)
		case errors.As(err, &keyErr):
			return fmt.Errorf("ssh host key mismatch for %s: the %s key offered is not the one in %s", hostname, key.Type(), files)
		case errors.As(err, &revoked):
			return fmt.Errorf("ssh host key of %s is revoked in %s", hostname, files)
		}
		return fmt.Errorf("check ssh host key of %s: %w", hostname, err)
	}
}
