package bench

import (
	"fmt"
	"strings"
)

// Programs that parse a module's flags, for the cli_option truth and for
// command scenarios. A module with main packages has its own; a library
// that defines flags for its users' programs gets a driver here: the
// smallest program a user would write with it, built against the module
// version (in a directory of the module's copy) and run with arguments.
// The truth only observes them: a flag is recognised when the program
// behaves differently with it than with a flag nobody defines.

// cliDriver is a driver program and the argument prefixes (the path to a
// subcommand) under which its flags are tried.
type cliDriver struct {
	source   string // a main package; %s is the module path
	prefixes [][]string
}

// cliDrivers are the drivers by module path.
var cliDrivers = map[string]cliDriver{
	"github.com/spf13/cobra": {source: `package main

import (
	"fmt"
	"os"

	cobra %q
)

func main() {
	root := &cobra.Command{Use: "app", Version: "1.0.0", Run: func(*cobra.Command, []string) { fmt.Println("app ran") }}
	root.AddCommand(&cobra.Command{Use: "sub", Run: func(*cobra.Command, []string) { fmt.Println("sub ran") }})
	root.SetArgs(os.Args[1:])
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
`, prefixes: [][]string{nil, {"sub"}, {"completion", "bash"}, {"completion", "zsh"}, {"completion", "fish"}, {"completion", "powershell"}, {"__complete"}}},
	"github.com/urfave/cli/v2": {source: `package main

import (
	"fmt"
	"os"

	cli %q
)

func main() {
	app := &cli.App{
		Name: "app", Version: "1.0.0", EnableBashCompletion: true,
		Action:   func(*cli.Context) error { fmt.Println("app ran"); return nil },
		Commands: []*cli.Command{{Name: "sub", Action: func(*cli.Context) error { fmt.Println("sub ran"); return nil }}},
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`, prefixes: [][]string{nil, {"sub"}}},
}

// commandLineDriver imports a package that registers flags on
// flag.CommandLine when it is initialized, and parses the arguments.
const commandLineDriver = `package main

import (
	"flag"
	"fmt"

	_ %q
)

func main() {
	flag.Parse()
	fmt.Println("parsed", flag.NArg())
}
`

// driverDir is where a lab writes a driver program.
const driverDir = "needlebench_driver"

// driverSource returns the source of a program spec ("driver",
// "commandline:DIR") for module, or "" for a main package of the module.
func driverSource(module, program string) (string, bool) {
	switch {
	case program == "driver":
		d, ok := cliDrivers[module]
		if !ok {
			return "", false
		}
		return fmt.Sprintf(d.source, module), true
	case strings.HasPrefix(program, "commandline:"):
		dir := strings.TrimPrefix(program, "commandline:")
		imp := module
		if dir != "." {
			imp += "/" + dir
		}
		return fmt.Sprintf(commandLineDriver, imp), true
	}
	return "", false
}

// programDir is the package directory a program spec builds.
func programDir(program string) string {
	if d, ok := strings.CutPrefix(program, "main:"); ok {
		return d
	}
	return driverDir
}
