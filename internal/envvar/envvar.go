// Package envvar is the ${VAR} reference of the controller config, one pattern for the config
// loader that expands it and the source kinds' blocks that let a value be one before it is
// expanded.
package envvar

import "regexp"

// Ref matches a ${VAR} reference; its first group is the variable's name.
var Ref = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
