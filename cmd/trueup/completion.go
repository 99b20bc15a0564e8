package main

import "github.com/spf13/cobra"

// addCompletionCmd adds cobra's `completion` command with help texts of trueup's: where
// each script goes, and which of them the Debian package installs. cobra would add the
// command when the CLI runs; added here, the CLI page and the man pages, made from this
// tree, hold it too. PowerShell's works but is not listed.
func addCompletionCmd(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Short = "Print a shell completion script (bash, zsh or fish)"
		c.Long = `Prints a script that completes trueup's commands, flags and arguments in a shell. The
Debian package installs the bash, zsh and fish scripts where those shells look for them; with
the binary alone, load one as its subcommand's help shows.`
		for _, sh := range c.Commands() {
			switch sh.Name() {
			case "bash":
				sh.Short = "Print the bash completion script"
				sh.Long = `Prints the bash completion script; it needs the bash-completion package. The Debian
package installs it as /usr/share/bash-completion/completions/trueup. Otherwise:

    trueup completion bash > ~/.local/share/bash-completion/completions/trueup`
			case "zsh":
				sh.Short = "Print the zsh completion script"
				sh.Long = `Prints the zsh completion script. The Debian package installs it as
/usr/share/zsh/vendor-completions/_trueup. Otherwise write it as _trueup into a folder of
$fpath (compinit in ~/.zshrc loads it):

    trueup completion zsh > "${fpath[1]}/_trueup"`
			case "fish":
				sh.Short = "Print the fish completion script"
				sh.Long = `Prints the fish completion script. The Debian package installs it as
/usr/share/fish/vendor_completions.d/trueup.fish. Otherwise:

    trueup completion fish > ~/.config/fish/completions/trueup.fish`
			case "powershell":
				sh.Hidden = true
			}
		}
	}
}
