package refdoc

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// CLIPage renders the command reference from the command tree under root: every available
// command, depth first in cobra's order, with its usage, descriptions, examples and flags.
func CLIPage(regenerate string, root *cobra.Command) string {
	var b strings.Builder
	b.WriteString(Header(regenerate))
	b.WriteString("# Command line\n\n")
	fmt.Fprintf(&b, "%s\n\n", Prose(sentence(root.Short)))
	b.WriteString("| Command | Description |\n|---|---|\n")
	var all []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		all = append(all, c)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(root)
	for _, c := range all[1:] {
		fmt.Fprintf(&b, "| [%s](#%s) | %s |\n", code(c.CommandPath()), anchor(c.CommandPath()), cell(Prose(sentence(c.Short))))
	}
	b.WriteString("\n")
	for _, c := range all {
		renderCommand(&b, c)
	}
	return b.String()
}

func renderCommand(b *strings.Builder, c *cobra.Command) {
	fmt.Fprintf(b, "## %s\n\n", c.CommandPath())
	if c.Short != "" {
		b.WriteString(Prose(sentence(c.Short)) + "\n\n")
	}
	if c.Runnable() {
		fmt.Fprintf(b, "```\n%s\n```\n\n", c.UseLine())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(b, "Aliases: %s.\n\n", strings.Join(c.Aliases, ", "))
	}
	if c.Long != "" {
		b.WriteString(LongText(c.Long) + "\n\n")
	}
	if c.Example != "" {
		fmt.Fprintf(b, "Examples:\n\n```\n%s\n```\n\n", strings.TrimRight(dedent(c.Example), "\n"))
	}
	var subs []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			subs = append(subs, "["+code(s.CommandPath())+"](#"+anchor(s.CommandPath())+")")
		}
	}
	if len(subs) > 0 {
		fmt.Fprintf(b, "Subcommands: %s.\n\n", strings.Join(subs, ", "))
	}
	if c.HasParent() {
		flagTable(b, "Flags", c.NonInheritedFlags())
		if c.HasAvailableInheritedFlags() {
			fmt.Fprintf(b, "Global flags (%s) apply as well.\n\n", globalNames(c.InheritedFlags()))
		}
		return
	}
	flagTable(b, "Global flags, for every command", c.PersistentFlags())
	flagTable(b, "Flags", c.LocalNonPersistentFlags())
}

func globalNames(fs *pflag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, code("--"+f.Name))
		}
	})
	return strings.Join(names, ", ")
}

func flagTable(b *strings.Builder, title string, fs *pflag.FlagSet) {
	if !fs.HasAvailableFlags() {
		return
	}
	fmt.Fprintf(b, "%s:\n\n| Flag | Type | Default | Description |\n|---|---|---|---|\n", title)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", " + name
		}
		_, usage := pflag.UnquoteUsage(f)
		if f.Deprecated != "" {
			usage += " (deprecated: " + f.Deprecated + ")"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", code(name), f.Value.Type(), code(FlagDefault(f)), cell(Prose(usage)))
	})
	b.WriteString("\n")
}

// FlagDefault is a flag's default as the reference shows it: empty for a default that
// means "not given" (false, "", 0, []).
func FlagDefault(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "[]", "false", "0", "0s":
		return ""
	}
	return f.DefValue
}

func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

// LongText renders a command's long description: plain paragraphs become Markdown
// paragraphs, and a paragraph with indented lines (a table, a sample of output) a code block.
func LongText(s string) string {
	var out []string
	for _, p := range strings.Split(strings.Trim(s, "\n"), "\n\n") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		indented := false
		for _, l := range strings.Split(p, "\n") {
			if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
				indented = true
			}
		}
		if indented {
			out = append(out, "```\n"+strings.TrimRight(dedent(p), "\n")+"\n```")
			continue
		}
		out = append(out, Prose(strings.Join(strings.Fields(p), " ")))
	}
	return strings.Join(out, "\n\n")
}

// dedent removes the indentation every non-blank line of s shares.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if common < 0 || n < common {
			common = n
		}
	}
	for i, l := range lines {
		if len(l) >= common && common > 0 {
			lines[i] = l[common:]
		}
	}
	return strings.Join(lines, "\n")
}

// Prose escapes what Markdown would read as markup in plain text (emphasis, HTML), leaving
// `code spans` as written.
func Prose(s string) string {
	return outsideCode(s, strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "<", "&lt;", ">", "&gt;"))
}

// NoHTML escapes what Markdown would read as an HTML tag (<listen>) outside code spans, for
// text that is Markdown already (OpenAPI descriptions).
func NoHTML(s string) string {
	return outsideCode(s, strings.NewReplacer("<", "&lt;"))
}

func outsideCode(s string, r *strings.Replacer) string {
	parts := strings.Split(s, "`")
	if len(parts)%2 == 0 {
		// An unpaired backtick opens no code span.
		return r.Replace(s)
	}
	for i := 0; i < len(parts); i += 2 {
		parts[i] = r.Replace(parts[i])
	}
	return strings.Join(parts, "`")
}
