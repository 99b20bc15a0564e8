package pgembed

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The superuser's password. The server asks every connection for it (scram-sha-256, on the
// socket as on any host line), so another process of the server's user — postgres or nobody,
// which other software may share — is no longer a superuser of trueup's database by merely
// connecting. The password is kept in Dir/password, mode 0600 and owned by the user trueup
// runs as: the server never reads it (initdb gets it once through a scratch file), so it is
// kept from the server's user too. As root, Dir is root's (see prepare), so that user can
// neither replace nor remove the file; it is opened without following a symbolic link and
// refused unless it is a regular file of trueup's user.
const (
	passwordFile = "password"
	// passwordBytes of crypto/rand, base64url-encoded: 43 characters that need no escaping in
	// a URL, a pwfile line or an SQL string literal.
	passwordBytes = 32
	// hbaMethod is what the cluster asks of every connection.
	hbaMethod = "scram-sha-256"
)

func (c *Cluster) passwordPath() string { return filepath.Join(c.dir, passwordFile) }

func newPassword() string {
	b := make([]byte, passwordBytes)
	_, _ = rand.Read(b) // never fails: it panics rather than return short
	return base64.RawURLEncoding.EncodeToString(b)
}

// validPassword reports whether pw looks like one newPassword made, which keeps a damaged or
// edited file out of the URL and the ALTER ROLE literal.
func validPassword(pw string) bool {
	if len(pw) < 20 {
		return false
	}
	for _, r := range pw {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// readPassword returns the password from Dir/password; fs.ErrNotExist when there is none.
// The message never quotes the file's content.
func (c *Cluster) readPassword() (string, error) {
	path := c.passwordPath()
	f, err := openChecked(path, "password file", os.O_RDONLY, 0, uint32(os.Geteuid()))
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", err
	}
	pw := strings.TrimSpace(string(b))
	if !validPassword(pw) {
		return "", fmt.Errorf("password file %s is damaged (expected one line of base64url); restore it from a backup", path)
	}
	// The file is trueup's own: narrow its mode back if someone widened it.
	if err := takeFile(f, 0o600); err != nil {
		return "", err
	}
	return pw, nil
}

// writePassword stores pw in Dir/password (0600, owned by trueup's user), replacing the file
// in one rename so a crash leaves the old file or the new one, never half of one.
func (c *Cluster) writePassword(pw string) error {
	f, err := os.CreateTemp(c.dir, ".password-*")
	if err != nil {
		return fmt.Errorf("write the password file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	// CreateTemp makes the file 0600; the explicit Chmod documents it and survives a change.
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.WriteString(pw + "\n")
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, c.passwordPath())
	}
	if err != nil {
		return fmt.Errorf("write the password file: %w", err)
	}
	return nil
}

// loadPassword sets c.password for an existing cluster. A cluster made before passwords
// (its pg_hba.conf trusts) gets a new password here, which secure then sets; a cluster that
// asks for a password whose file is gone cannot be used, and the error says what to do.
func (c *Cluster) loadPassword(trusting bool) error {
	pw, err := c.readPassword()
	if errors.Is(err, fs.ErrNotExist) && trusting {
		pw = newPassword()
		err = c.writePassword(pw)
	} else if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the cluster asks for a password, but its password file %s is missing: "+
			"restore it from a backup, or move %s away to start over with an empty database", c.passwordPath(), c.dir)
	}
	if err != nil {
		return err
	}
	c.password = pw
	return nil
}

// writePwfile writes the scratch file initdb reads the password from: 0600 and owned by the
// server's user, in the cluster folder (0700, or root's 0711), removed by the returned
// function. It is created new (never through a symbolic link) and given away through its
// descriptor.
func (c *Cluster) writePwfile() (string, func(), error) {
	path := filepath.Join(c.dir, ".initdb-pwfile")
	_ = os.Remove(path) // left by a crash; removes a symbolic link itself, not its target
	uid, gid := os.Geteuid(), os.Getegid()
	if c.acc != nil {
		uid, gid = int(c.acc.uid), int(c.acc.gid)
	}
	f, err := createExclusive(path, 0o600, uid, gid)
	if err != nil {
		return "", nil, err
	}
	remove := func() { _ = os.Remove(path) }
	_, err = f.WriteString(c.password + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		remove()
		return "", nil, err
	}
	return path, remove, nil
}

func (c *Cluster) hbaPath() string { return filepath.Join(c.dataDir, "pg_hba.conf") }

// hbaTrusts reports whether the cluster's pg_hba.conf lets any connection in without a
// password: the mark of a cluster created before passwords.
func (c *Cluster) hbaTrusts() (bool, error) {
	b, err := c.readHBA()
	if err != nil {
		return false, err
	}
	_, changed := requirePasswordInHBA(string(b))
	return changed, nil
}

// requirePasswordInHBA turns every trust rule of a pg_hba.conf into a scram-sha-256 rule
// and reports whether there was one; comments and the other rules stay as they are.
func requirePasswordInHBA(conf string) (string, bool) {
	lines := strings.Split(conf, "\n")
	changed := false
	for i, line := range lines {
		rule, comment, hasComment := strings.Cut(line, "#")
		fields := strings.Fields(rule)
		// The method follows the type, database, user and (for host lines) address; a
		// database or user named trust comes before index 3.
		found := false
		for j := 3; j < len(fields); j++ {
			if fields[j] == "trust" {
				fields[j] = hbaMethod
				found = true
			}
		}
		if !found {
			continue
		}
		changed = true
		lines[i] = strings.Join(fields, " ")
		if hasComment {
			lines[i] += " #" + comment
		}
	}
	return strings.Join(lines, "\n"), changed
}

// secure makes a cluster created before passwords ask for one: it sets the superuser's
// password over the still trusting socket, rewrites pg_hba.conf and reloads it. Each step
// can be repeated, so a crash half-way is finished by the next start. c.mu is held and the
// server runs.
func (c *Cluster) secure(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	old, err := c.readHBA()
	if err != nil {
		return fmt.Errorf("require a password: %w", err)
	}
	conf, _ := requirePasswordInHBA(string(old))
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("require a password: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// The server gets the verifier, not the password: a statement log (log_statement) keeps
	// nothing that lets anyone in. ALTER ROLE takes no parameters; the verifier is base64
	// and punctuation that needs no quoting.
	if _, err := conn.Exec(ctx, "ALTER ROLE "+pgx.Identifier{superuser}.Sanitize()+" PASSWORD '"+scramVerifier(c.password)+"'"); err != nil {
		return fmt.Errorf("require a password: set the password of %s: %w", superuser, err)
	}
	if err := c.writeHBA([]byte(conf)); err != nil {
		return fmt.Errorf("require a password: %w", err)
	}
	var bad int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_hba_file_rules WHERE error IS NOT NULL").Scan(&bad); err != nil || bad > 0 {
		_ = c.writeHBA(old) // a file the server rejects would lock trueup out at the next start
		return fmt.Errorf("require a password: the rewritten pg_hba.conf has %d bad lines (%v); it was put back", bad, err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("require a password: reload pg_hba.conf: %w", err)
	}
	c.log.Info("postgres cluster made before passwords now asks for one", "password_file", c.passwordPath())
	return nil
}

// scramVerifier returns what PostgreSQL stores for password under scram-sha-256 (RFC 5802
// and 7677, in the text form of pg_authid.rolpassword), with a new random salt and
// PostgreSQL's default 4096 iterations. pgx implements only the client side of SCRAM, so
// this is written here; SASLprep is the identity for the base64url passwords of newPassword.
func scramVerifier(password string) string {
	const iterations = 4096
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		panic(err) // only for parameters outside FIPS limits, which these are not
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	stored := sha256.Sum256(mac(salted, "Client Key"))
	server := mac(salted, "Server Key")
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(stored[:]), b64(server))
}

// readHBA reads pg_hba.conf, which the server's user owns, without following a symbolic
// link: root must not copy another file into the data folder.
func (c *Cluster) readHBA() ([]byte, error) {
	return readChecked(c.hbaPath(), "server configuration file")
}

// writeHBA replaces pg_hba.conf in one rename, owned by the server's user like the rest of
// the data folder. The data folder is that user's, so the scratch file is created new with
// O_EXCL|O_NOFOLLOW (a symbolic link planted in its place makes the create fail, and is
// removed, not followed, first) and given away through its descriptor.
func (c *Cluster) writeHBA(conf []byte) error {
	tmp := c.hbaPath() + ".trueup-new"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	uid, gid := os.Geteuid(), os.Getegid()
	if c.acc != nil {
		uid, gid = int(c.acc.uid), int(c.acc.gid)
	}
	f, err := createExclusive(tmp, 0o600, uid, gid)
	if err != nil {
		return err
	}
	_, err = f.Write(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, c.hbaPath())
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
