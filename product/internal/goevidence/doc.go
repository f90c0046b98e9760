// Package goevidence checks facts about Go source files with code, never with
// a model. Needle's validators use it to confirm what a model worker proposes
// about a snapshot — "flag --crlf is defined at search.go:40-52", "TestCRLF
// exercises it", "step 2 calls step 3" — and reject the proposal when the
// fact does not hold. The package knows nothing about needs or artifacts; it
// answers questions about source text.
//
// # Conventions
//
// Line numbers are 1-based and a Span is an inclusive range of lines. Every
// Go check parses with go/parser (without object resolution); a file that
// does not parse is an error, which the caller turns into a rejection. The
// Lexical* functions and LineCount are the fallback for files in other
// languages and give weaker, purely textual evidence.
//
// # What counts
//
// Declarations and Declared look at package-level declarations only: funcs,
// methods ("Type.Method", with value, pointer or generic receivers), and the
// individual specs of type, var and const declarations. A declaration's span
// starts at its keyword when it stands alone and at the spec when it is part
// of a parenthesized group; Declared asks where the name identifier is, so a
// span that covers a body but not the name does not count.
//
// StringLiteral matches the unquoted value of string literals outside import
// declarations: an import path is not a flag name or a configuration key.
//
// TestFunc applies the rules go test applies: the file name ends in _test.go
// and does not start with "_" or "."; the name is "Test" or "Test" followed by
// a character that is not lower case; the function is not a method, has no
// type parameters and no results, and takes exactly one parameter of type
// *X.T where X is the file's name for the "testing" import (or *T under a dot
// import). Build constraints are not evaluated.
//
// # Calls without types
//
// Reaches and Calls resolve calls by name, without type checking. A bare call
// f() can only reach a function f; a selector call x.f() may reach a method f
// of any type, or a function f (a package-qualified call). This over-
// approximates when a local variable shadows a function name or two types
// share a method name; it never misses a direct call by name. Calls through
// function values that are not called by name (t.Run(name, helper)) are not
// followed.
//
// Reaches treats every file in the map it is given as one namespace of
// top-level functions, whatever each file's package clause says: an external
// test package (x_test) is linked to package x exactly when the caller puts
// both in the map. Calls, which compares two single files, links a bare call
// only when both files have the same package clause or the calling file has a
// dot import.
package goevidence
