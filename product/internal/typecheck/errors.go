package typecheck

import (
	"errors"
	"strings"
)

// Kind classifies why a question could not be answered. Callers turn each
// into a rejection reason; none of them is ever a proof.
type Kind int

// The kinds, append-only.
const (
	KindInternal       Kind = iota // a bug or an I/O failure
	KindGoMod                      // go.mod missing, unreadable or invalid
	KindNoModule                   // the file is not inside a Go module of the repository
	KindNotGo                      // the file is not a .go file
	KindNotInBuild                 // build constraints exclude the file, or it is in no package
	KindParse                      // the file does not parse
	KindSubject                    // the subject is not a Go symbol name
	KindNotDeclared                // no package-level declaration of that name
	KindFieldNotMethod             // T.M names a struct field, not a method
	KindPromoted                   // T.M is promoted from an embedded type, not declared on T
	KindNotAType                   // the T of T.M is not a type
	KindMissingTypes               // the answer depends on types from packages the snapshot lacks
)

var kindNames = [...]string{
	KindInternal:       "internal",
	KindGoMod:          "go_mod",
	KindNoModule:       "no_module",
	KindNotGo:          "not_go",
	KindNotInBuild:     "not_in_build",
	KindParse:          "parse",
	KindSubject:        "subject",
	KindNotDeclared:    "not_declared",
	KindFieldNotMethod: "field_not_method",
	KindPromoted:       "promoted",
	KindNotAType:       "not_a_type",
	KindMissingTypes:   "missing_types",
}

// enumName is the name of an enumeration's value k in names, "unknown"
// past them.
func enumName[K ~int](names []string, k K) string {
	if k >= 0 && int(k) < len(names) {
		return names[k]
	}
	return "unknown"
}

func (k Kind) String() string { return enumName(kindNames[:], k) }

// Error is the one error type of the package: a Kind, the file or subject
// it is about, the packages whose absence caused it (KindMissingTypes) and
// the underlying error.
type Error struct {
	Kind    Kind
	Path    string   // the file or directory concerned, "" if none
	Name    string   // the subject or identifier concerned, "" if none
	Missing []string // import paths of the missing packages, sorted
	Err     error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind.String())
	for _, s := range []string{e.Path, e.Name} {
		if s != "" {
			b.WriteString(" ")
			b.WriteString(s)
		}
	}
	if len(e.Missing) > 0 {
		b.WriteString(" (missing ")
		b.WriteString(strings.Join(e.Missing, ", "))
		b.WriteString(")")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of err, KindInternal if it is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}
