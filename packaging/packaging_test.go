package packaging

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/trueup-dev/trueup/internal/config"
)

// unit is a systemd unit file: section → key → values, in order (a key may repeat).
type unit map[string]map[string][]string

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u, section := unit{}, ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a key=value in a section: %q", path, n, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

// TestUnitHardening checks the keys the package promises (issue 14); systemd-analyze verify,
// where the machine has it, checks that systemd knows every key (TestUnitVerify).
func TestUnitHardening(t *testing.T) {
	t.Parallel()
	u := readUnit(t, "trueup.service")
	svc := u["Service"]
	for key, want := range map[string]string{
		"ExecStart":               "/usr/bin/trueup serve --config /etc/trueup/trueup.yaml",
		"ExecReload":              "/bin/kill -HUP $MAINPID",
		"DynamicUser":             "yes",
		"StateDirectory":          "trueup",
		"StateDirectoryMode":      "0700",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"NoNewPrivileges":         "yes",
		"Restart":                 "on-failure",
		"CapabilityBoundingSet":   "",
		"AmbientCapabilities":     "",
		"RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
		"RestrictNamespaces":      "yes",
		"RestrictSUIDSGID":        "yes",
		"SystemCallArchitectures": "native",
		"SystemCallFilter":        "@system-service",
		"LockPersonality":         "yes",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelModules":    "yes",
		"ProtectControlGroups":    "yes",
		"UMask":                   "0077",
	} {
		if got := svc[key]; !slices.Equal(got, []string{want}) {
			t.Errorf("[Service] %s = %q, want %q", key, got, want)
		}
	}
	// Never as root: postgres refuses it, and nothing here needs it.
	for _, key := range []string{"User", "Group"} {
		if v := svc[key]; len(v) > 0 {
			t.Errorf("[Service] %s = %q: DynamicUser allocates the user", key, v)
		}
	}
	// The private PostgreSQL keeps its cluster in dataDir: it must be the state directory.
	if got := svc["WorkingDirectory"]; !slices.Equal(got, []string{"/var/lib/trueup"}) {
		t.Errorf("[Service] WorkingDirectory = %q, want /var/lib/trueup", got)
	}
	if got := u["Install"]["WantedBy"]; !slices.Equal(got, []string{"multi-user.target"}) {
		t.Errorf("[Install] WantedBy = %q", got)
	}
}

// TestUnitVerify runs systemd-analyze verify on the unit, with ExecStart pointed at an
// executable that exists here; any warning fails (verify exits 0 on unknown keys).
func TestUnitVerify(t *testing.T) {
	t.Parallel()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed; TestUnitHardening checks the keys")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("trueup.service")
	if err != nil {
		t.Fatal(err)
	}
	unitPath := filepath.Join(t.TempDir(), "trueup.service")
	if err := os.WriteFile(unitPath, bytes.ReplaceAll(data, []byte("/usr/bin/trueup"), []byte(exe)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), sa, "verify", "--man=no", unitPath).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestDeployUnitIsPackaged: deploy/systemd's example is the packaged unit.
func TestDeployUnitIsPackaged(t *testing.T) {
	t.Parallel()
	a, err := os.ReadFile("trueup.service")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../deploy/systemd/trueup.service")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("deploy/systemd/trueup.service differs from packaging/trueup.service: copy it over")
	}
}

// TestDefaultConfig: the packaged /etc/trueup/trueup.yaml parses and validates, runs the
// private PostgreSQL under the state directory, and serve accepts its listen address.
func TestDefaultConfig(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("trueup.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(data, "/etc/trueup", func(string) string { return "" })
	if err != nil {
		t.Fatalf("packaging/trueup.yaml: %v", err)
	}
	if cfg.Database.URL != "" {
		t.Errorf("database.url = %q, want none (the private PostgreSQL)", cfg.Database.URL)
	}
	if cfg.DataDir != "/var/lib/trueup" {
		t.Errorf("dataDir = %q, want the unit's StateDirectory /var/lib/trueup", cfg.DataDir)
	}
	if cfg.Server.Listen != "127.0.0.1:8080" {
		t.Errorf("server.listen = %q, want loopback", cfg.Server.Listen)
	}
	if err := config.CheckExposure(cfg.Server.Listen, cfg.Auth); err != nil {
		t.Errorf("serve would refuse it: %v", err)
	}
}

// TestNFPM checks that the package installs what the unit and the docs name, and keeps
// the config as a conffile.
func TestNFPM(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Name       string   `yaml:"name"`
		Recommends []string `yaml:"recommends"`
		Depends    []string `yaml:"depends"`
		Contents   []struct {
			Src  string `yaml:"src"`
			Dst  string `yaml:"dst"`
			Type string `yaml:"type"`
		} `yaml:"contents"`
		Scripts map[string]string `yaml:"scripts"`
	}
	if err := yaml.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	dst := map[string]string{}
	for _, c := range pkg.Contents {
		dst[c.Dst] = c.Type
		if strings.HasPrefix(c.Src, "packaging/") {
			if _, err := os.Stat(filepath.Join("..", c.Src)); err != nil {
				t.Errorf("contents: %v", err)
			}
		}
	}
	for _, p := range []string{"/usr/bin/trueup", "/usr/lib/systemd/system/trueup.service"} {
		if _, ok := dst[p]; !ok {
			t.Errorf("contents: %s is not installed", p)
		}
	}
	if got := dst["/etc/trueup/trueup.yaml"]; got != "config|noreplace" {
		t.Errorf("/etc/trueup/trueup.yaml has type %q, want config|noreplace (a conffile)", got)
	}
	if !slices.Contains(append(pkg.Recommends, pkg.Depends...), "postgresql") {
		t.Error("neither depends nor recommends names postgresql (the private cluster's binaries)")
	}
	for _, s := range pkg.Scripts {
		fi, err := os.Stat(filepath.Join("..", s))
		if err != nil {
			t.Errorf("scripts: %v", err)
		} else if fi.Mode()&0o111 == 0 {
			t.Errorf("scripts: %s is not executable", s)
		}
	}
}
