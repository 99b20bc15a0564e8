// Command mkimage builds trueup's container image without a Docker daemon (`make image`),
// with go-containerregistry: a distroless-style image made from scratch layers (an
// /etc/passwd with the nonroot user 65532, CA certificates, the config, the static binary),
// for linux/amd64 and linux/arm64, written as an OCI image layout and, for docker load or
// podman load, a tarball of one platform.
//
// The base is built here rather than pulled (gcr.io/distroless/static) because the build
// machines reach no registry; it holds what that image holds for a static Go binary.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	var (
		binDir    = fs.String("bin-dir", "dist/build", "folder with <os>_<arch>/trueup for each platform")
		platforms = fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
		cfgPath   = fs.String("config", "packaging/image/trueup.yaml", "config installed as /etc/trueup/trueup.yaml")
		caPath    = fs.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to install")
		version   = fs.String("version", "dev", "image version (label and tag)")
		revision  = fs.String("revision", "", "commit the binary was built from (label)")
		created   = fs.String("created", "", "creation time, RFC 3339 (default: the Unix epoch, for reproducible images)")
		layoutDir = fs.String("layout", "dist/image", "OCI image layout folder to write (replaced)")
		tarPath   = fs.String("tarball", "", "also write the first platform's image as a docker-loadable tarball")
		repo      = fs.String("repo", "trueup", "repository name in the tarball's tag and the layout's ref name")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	spec := Spec{Version: *version, Revision: *revision}
	if *created != "" {
		t, err := time.Parse(time.RFC3339, *created)
		if err != nil {
			return fmt.Errorf("-created: %w", err)
		}
		spec.Created = t
	}
	var err error
	if spec.Config, err = os.ReadFile(*cfgPath); err != nil {
		return err
	}
	if spec.CACerts, err = os.ReadFile(*caPath); err != nil {
		return fmt.Errorf("%w (install Debian's ca-certificates)", err)
	}
	for _, p := range strings.Split(*platforms, ",") {
		osName, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok {
			return fmt.Errorf("-platforms: %q is not os/arch", p)
		}
		spec.Platforms = append(spec.Platforms, Platform{
			OS: osName, Arch: arch,
			Binary: fmt.Sprintf("%s/%s_%s/trueup", *binDir, osName, arch),
		})
	}
	if len(spec.Platforms) == 0 {
		return errors.New("-platforms: none given")
	}
	idx, imgs, err := Build(spec)
	if err != nil {
		return err
	}
	tag := *repo + ":" + TagFor(*version)
	if err := WriteLayout(*layoutDir, idx, tag); err != nil {
		return err
	}
	if *tarPath != "" {
		if err := WriteTarball(*tarPath, imgs[0], tag); err != nil {
			return err
		}
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s (%s)\n", *layoutDir, tag, d)
	return nil
}
