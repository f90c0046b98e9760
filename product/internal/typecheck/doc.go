// Package typecheck answers questions about the Go code of a snapshot with
// go/types, never by matching strings alone: where a symbol subject is declared,
// where a flag, environment variable or configuration key is defined, and
// which functions a span of code calls. Needle's validators use it to judge
// what a model worker proposes. The package knows nothing about needs or
// artifacts.
//
// # Loading
//
// A Loader type-checks the packages holding the files a question cites,
// from a Source (the repository snapshot, read file by file so the caller
// can record every read as a dependency). It resolves imports itself rather
// than through the go command: the main module from its go.mod (and its
// vendor directory when vendor/modules.txt exists), dependencies by minimal
// version selection over the go.mod files in the module cache (a main
// module at go 1.17 or later lists them all), the standard library from the
// Go root. Build constraints and file-name suffixes are applied as the go
// command applies them for the configured GOOS/GOARCH, with cgo disabled.
// go/packages was measured and rejected: it runs the go command, which
// refuses to load anything at all when one module of the graph is not in
// the cache (cobra v1.9.1 with only pflag present: zero packages), and it
// keeps nothing between loads.
//
// A repository with no go.mod at all (code from before modules) is checked
// with its root as the main module, requiring nothing, under the import path
// its own files tell (an import comment, or an external test package
// importing the package it tests; ModulePathOf); its proofs depend on the
// root's listing, where a go.mod would appear.
//
// Tolerance is gopls-like: an import that cannot be read becomes an empty
// package (Program.Missing says which and why), every type error is
// recorded and none stops the check, and a question fails only when its
// answer depends on an invalid type — then with KindMissingTypes, naming
// the missing packages. A type error elsewhere never blocks a proof here.
//
// The packages asked about are checked with function bodies, together with
// their in-package tests (the test variant), and their external test
// package separately. Everything else is a dependency, checked without
// function bodies. Within one Load every import of an asked-about package
// resolves to its test variant, so the two never disagree about a type.
//
// # Caching
//
// Every checked package is cached under a key that covers its identity,
// the build context, its files (the digest of each repository file's
// content; the directory, immutable, for the Go root and the module cache)
// and the keys of its imports, so a change anywhere below a package changes
// its key. A later Load on an unchanged snapshot re-reads the repository
// files (to digest them) and checks nothing; after an edit only the edited
// packages and those above them are checked again. Asked-about packages
// (kept with syntax and types.Info) are bounded by Options.MaxRoots; past
// Options.MaxPackages in all, the next Load starts from an empty cache.
//
// # What counts
//
// Lookup: "Name" is the package-level object of that name in the cited
// file's package; "T.M" is the method M whose receiver's base type is T,
// declared in that package (value, pointer or generic receiver), or the
// method M of interface type T. A field M, a method promoted from an
// embedded type and a type named M are not T.M. A declaration's Span starts
// at its keyword (at the spec inside a parenthesized group) and Doc at its
// doc comment.
//
// FindOption: a definition is a site whose name evaluates as a Go
// constant (literal, named constant, constant expression; a rune for a
// short flag) to the option's name, or is written in a struct tag, in one
// of three forms (DefForm):
//
//   - a call of a definition function, chosen by the resolved types.Func's
//     package and its signature's parameter names (flag, pflag and so
//     cobra, getopt; kingpin's Flag(name, help), not its Command or Arg of
//     the same signature), listed by name (os.Getenv, os.LookupEnv,
//     syscall.Getenv; viper's SetDefault, BindEnv, BindPFlag), or, for any
//     other package, by meaning: a function whose own name, result type's
//     or receiver type's name says Flag or Option, or of a package named
//     …flag or …flags, taking a string name (name, long) and a usage
//     (usage, help, description), unless its name begins with a verb that
//     uses names (Get, Lookup, Set, Mark, Print, …). Calls chained on a
//     flag's result complete it (kingpin's .Short('v'), .Envar("X"));
//   - a flag literal: a composite literal of a named struct type (or an
//     alias of one, as urfave/cli v3's BoolFlag of FlagBase) of any package
//     whose name says Flag or Option, with a string field Name or Long and a
//     field saying what the flag is for (Usage, Help, Aliases, Short, …):
//     each of Name ("config, c" split), Aliases and Short is a definition,
//     and EnvVar, EnvVars, Envs and Sources' Env… calls define environment
//     variables; an embedded struct's literal counts (kong's
//     &Flag{Value: &Value{Name: "help"}});
//   - a field of a flags struct (one with a help, short, long, name, arg,
//     env, aliases or cmd tag), named as kong, jessevdk/go-flags or
//     alexflint/go-arg name it (tag.go): by name:, long:, arg:"--x", or the
//     field's name (kong: kebab case; go-arg: lower case); a subcommand
//     (cmd, command), a positional argument (arg:"", positional) or a
//     go-flags field without long or short is none; env:"X" and arg:"env"
//     define environment variables. Line is the field's.
//
// Any other string equal to the name is a use: a subcommand's name, a
// look-up such as Lookup("help") or GetBool("help"), a test passing
// "--help", a help text, a rune compared in a switch. Definitions in
// _test.go files are definitions too; File tells them apart (Needle never
// takes one for an option's implementation). A subject naming several
// names of one flag ("-h, --help") matches a site that carries them all
// (Definition.Aliases).
//
// ImplicitOptions: options implemented without a definition, as static
// candidates only — a comparison of a string or rune with a constant naming
// the option that guards a block (if a == "--help" {…}, case "help", "h":,
// strings.EqualFold), with the block's span, and a named constant equal to
// the name used as a map key or an argument, with its uses. A subcommand
// called help is compared the same way: only a run that executes the block
// when given the option shows a candidate deciding.
//
// Reads: where an option's value is read, in the defining package's
// non-test files — a use of the variable or field a definition binds
// (BoolVar(&v, …), v := Bool(…), the end of a chained definition, a flag
// literal's Destination, a flags struct's field), a look-up of the value by
// a constant name (a flag library's Get… and Changed, Lookup(name) followed
// by .Value or .Changed, viper's Get… and IsSet, and a method of the
// defining library's types taking a name first, as urfave/cli's c.Bool(
// "x")), the body of the Set method of a flag.Value, of the function a
// definition registers (a literal's Value or Action), or of a flags
// struct field's type's Set, Decode, UnmarshalFlag, UnmarshalText or kong
// hook, and an environment read itself (an environment variable a flag
// reads is read where the flag is). A write, the definition's own &v and a
// bare Lookup guard are not reads. A look-up by one of the flag's own
// names, taken from its definition, is a read: for _, n := range
// X.Names() { c.Bool(n) }, X.Names()[i], a slice literal of its names, or
// slices.ContainsFunc(X.Names(), c.Bool), where X holds the definition
// (the package variable its literal initializes, or a variable or field
// every assignment of which holds it). A read through names computed at
// run time (for _, f := range flags { … f.Names() … }) is not tied to the
// name statically: only execution decides it.
//
// DeclAt finds the declaration holding a line; MethodsNamed the methods of
// one name, for a bare name that is no package-level declaration.
//
// Calls: the callees of a span are the types.Func objects its calls and
// references resolve to — direct calls of functions and concrete methods,
// functions and method values used as values (t.Run(name, tc.test)), method
// expressions. A call on an interface names the interface's method and is
// marked Dynamic; a call through a function-typed variable or field is
// Unresolved. Links relate two spans by a callee declared in (or entered
// by) the second; an interface call never links. StaticPath chains resolved
// callees, following an interface call to every implementation among the
// checked packages (class hierarchy analysis), and is static reach only: it
// says nothing about what runs.
//
// # Files
//
//	source.go      Source, DirSource and file digests
//	module.go      go.mod reading and minimal version selection
//	moduleless.go  repositories without go.mod: their build and import path
//	loader.go      Loader, Load, import resolution, checking and the cache
//	program.go     Program, Package, File, Span, PackageOf
//	symbol.go      ParseSubject, Lookup, DeclAt, MethodsNamed and declaration spans
//	option.go      the definition-function rules, Definitions, FindOption, ParseOption
//	literal.go     flag struct literals of any library
//	tag.go         flags structs: kong, go-flags and go-arg tags and field names
//	implicit.go    ImplicitOptions: comparisons and constants that may implement an option
//	read.go        Reads: where an option's value is read
//	call.go        Calls, Links, StaticPath
//	errors.go      Error and its Kinds
package typecheck
