package manifest

import "strings"

// packChunk is how many resources share one block of packed strings (packResources).
const packChunk = 4096

// packResources moves what each resource of rs holds alone (its name, spec and spec hash)
// into a few blocks, one pair for packChunk resources. It serves the Set of a full load that
// the Loader keeps as the basis of incremental loads once the documents are dropped (past
// keepDocuments): the Go collector marks every object of that Set on every cycle, and three
// small objects a resource were half its work there (a forced collection with 200,000 kept
// resources: 35 ms, 18 ms packed), a cost that the reconciles' and the API's allocations pay
// again at every collection. The resources an incremental load builds later keep their own
// strings (a few files' worth) until the next full load packs again; a block lives while
// one of its resources does.
//
// The resources of files in skip (Options.Rewritten) are left as they are: their caller
// replaces their specs once loaded (sealed: decrypted values by markers), and a block would
// keep what it replaced for as long as the block lives. A packed Spec's capacity is its
// length, as a Resource's is (an append copies), and nothing writes into a Set's specs (see
// Resource).
func packResources(rs []Resource, skip map[string]bool) {
	parallel((len(rs)+packChunk-1)/packChunk, func(c int) {
		part := rs[c*packChunk : min(len(rs), (c+1)*packChunk)]
		var text, specs int
		for i := range part {
			if !skip[part[i].File] {
				text += len(part[i].Name) + len(part[i].SpecHash)
				specs += len(part[i].Spec)
			}
		}
		var b strings.Builder
		b.Grow(text)
		for i := range part {
			if !skip[part[i].File] {
				b.WriteString(part[i].Name)
				b.WriteString(part[i].SpecHash)
			}
		}
		block := b.String()
		spec := make([]byte, 0, specs)
		at := 0
		for i := range part {
			r := &part[i]
			if skip[r.File] {
				continue
			}
			n, h := len(r.Name), len(r.SpecHash)
			r.Name, r.SpecHash = block[at:at+n], block[at+n:at+n+h]
			at += n + h
			if r.Spec != nil {
				s := len(spec)
				spec = append(spec, r.Spec...)
				r.Spec = spec[s:len(spec):len(spec)]
			}
		}
	})
}
