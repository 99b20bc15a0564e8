// Package sealedtest encrypts manifests with the SOPS Go packages, as `sops --encrypt
// --age RECIPIENT --encrypted-regex REGEX` does, for tests.
package sealedtest

import (
	"crypto/rand"
	"path"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	sopsconfig "github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
)

// Key is a new age key pair: Identity is the AGE-SECRET-KEY-1… line, Recipient the age1… one.
func Key() (identity, recipient string) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		panic(err)
	}
	return id.String(), id.Recipient().String()
}

type store interface {
	LoadPlainFile([]byte) (sops.TreeBranches, error)
	EmitEncryptedFile(sops.Tree) ([]byte, error)
}

// Encrypt encrypts plain (YAML, or JSON when file ends in .json) for the age recipients,
// encrypting the values of keys matching regex (every value when regex is empty).
func Encrypt(file string, plain []byte, regex string, recipients ...string) ([]byte, error) {
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, err
	}
	return EncryptWithKey(file, plain, regex, dataKey, recipients...)
}

// EncryptWithKey is Encrypt with a given data key, as `sops edit` keeps a file's: values get
// new IVs, the data key stays.
func EncryptWithKey(file string, plain []byte, regex string, dataKey []byte, recipients ...string) ([]byte, error) {
	var st store = sopsyaml.NewStore(&sopsconfig.YAMLStoreConfig{})
	if strings.EqualFold(path.Ext(file), ".json") {
		st = sopsjson.NewStore(&sopsconfig.JSONStoreConfig{})
	}
	branches, err := st.LoadPlainFile(plain)
	if err != nil {
		return nil, err
	}
	var group sops.KeyGroup
	for _, r := range recipients {
		mk, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, err
		}
		group = append(group, mk)
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{KeyGroups: []sops.KeyGroup{group}, EncryptedRegex: regex, Version: "3.13.3"}}
	if errs := tree.Metadata.UpdateMasterKeysWithKeyServices(dataKey, []keyservice.KeyServiceClient{keyservice.NewLocalClient()}); len(errs) > 0 {
		return nil, errs[0]
	}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, err
	}
	tree.Metadata.LastModified = time.Now().UTC()
	if tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339)); err != nil {
		return nil, err
	}
	return st.EmitEncryptedFile(tree)
}
