# needle: print the declarations of the Python source on stdin as JSON.
# Run by Needle with the repository's interpreter, in the sandbox, as
# python -I -S -B -c <this>: it imports nothing of the repository and
# executes none of the source; Python's own parser (ast) reads it.
import ast
import json
import sys


def dotted(node):
    """A decorator's or base's dotted name: property, x.setter, f (of f(...))."""
    if isinstance(node, ast.Call):
        return dotted(node.func)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return head + "." + node.attr if head else ""
    return ""


def targets(node):
    """The names an assignment target binds: a, (a, b), [a, *b]."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            yield from targets(elt)
    elif isinstance(node, ast.Starred):
        yield from targets(node.value)


def walk(body, prefix, scope, out):
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + node.name
            is_class = isinstance(node, ast.ClassDef)
            kind = "class" if is_class else ("method" if scope == "class" else "function")
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            d = {"name": name, "kind": kind, "line": node.lineno, "first": first,
                 "end": node.end_lineno, "decorators": [dotted(x) for x in node.decorator_list]}
            if is_class:
                d["bases"] = [dotted(b) for b in node.bases]
            out.append(d)
            walk(node.body, name + ".", "class" if is_class else "function", out)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and scope != "function":
            names = []
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names.extend(targets(t))
            for n in names:
                out.append({"name": prefix + n, "kind": "variable", "line": node.lineno,
                            "first": node.lineno, "end": node.end_lineno})
        else:
            # A definition under if, try or with (if TYPE_CHECKING:, try:
            # import ... except ImportError: def ...) belongs to the scope
            # the statement is in.
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(node, field, None)
                if isinstance(sub, list) and not isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                    walk(sub, prefix, scope, out)
            for h in getattr(node, "handlers", None) or []:
                walk(h.body, prefix, scope, out)


def main():
    src = sys.stdin.buffer.read()
    res = {"python": "%d.%d.%d" % tuple(sys.version_info[:3]), "decls": []}
    try:
        tree = ast.parse(src, filename="<snapshot>")
    except (SyntaxError, ValueError) as e:
        res["syntax_error"] = {"line": getattr(e, "lineno", None) or 0, "msg": str(getattr(e, "msg", e))}
    else:
        walk(tree.body, "", "module", res["decls"])
    sys.stdout.write(json.dumps(res))


main()
