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


def body_line(fn):
    """The first line of a def's body past its docstring: it runs only
    when the function is called. 0 when the body is the docstring alone."""
    stmts = fn.body
    if stmts and isinstance(stmts[0], ast.Expr) and isinstance(stmts[0].value, ast.Constant) and isinstance(stmts[0].value.value, str):
        stmts = stmts[1:]
    return stmts[0].lineno if stmts else 0


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
            else:
                d["body"] = body_line(node)
            out.append(d)
            walk(node.body, name + ".", "class" if is_class else "function", out)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and scope != "function":
            names = []
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names.extend(targets(t))
            alias = node.value.id if isinstance(node.value, ast.Name) and len(names) == 1 else None
            for n in names:
                d = {"name": prefix + n, "kind": "variable", "line": node.lineno,
                     "first": node.lineno, "end": node.end_lineno}
                if alias:
                    d["alias"] = alias  # X = Y: another name of what Y is bound to here
                out.append(d)
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


# Options and keys, known by meaning: the call or read that defines them,
# with the module's imports resolving the names (import click as c,
# from os import environ). Only a string constant names one.
CLICK_MODULES = {"click", "rich_click", "cloup", "asyncclick", "typer"}
# click's decorators that define an option with a name of their own.
CLICK_DEFAULTS = {"version_option": "--version", "help_option": "--help",
                  "password_option": "--password", "confirmation_option": "--yes"}
ENVIRON = ("os.environ", "os.environb")


class Imports:
    """What the module's absolute imports bind, anywhere in it."""

    def __init__(self, tree):
        self.names = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.names[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        self.names[top] = top
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for a in node.names:
                    self.names[a.asname or a.name] = node.module + "." + a.name

    def resolve(self, node):
        """The dotted name an expression refers to: click.option for
        c.option after import click as c; "" for anything else."""
        if isinstance(node, ast.Name):
            return self.names.get(node.id, "")
        if isinstance(node, ast.Attribute):
            head = self.resolve(node.value)
            return head + "." + node.attr if head else ""
        return ""


def string(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def strings(node):
    """The strings of a constant or a list or tuple of constants."""
    if string(node) is not None:
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.value for e in node.elts if string(e) is not None]
    return []


def flag_names(decls):
    """The flags among click's or argparse's parameter declarations:
    "--shout/--no-shout" is two, "name" (a parameter's name) none."""
    out = []
    for d in decls:
        parts = d.split("/") if "/" in d else [d]
        for p in parts:
            p = p.strip()
            if p.startswith("-") and p.strip("-"):
                out.append(p)
    return out


def keyword(call, name):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def first_line(node):
    return min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])


class Options:
    def __init__(self, tree):
        self.imports = Imports(tree)
        self.out = []
        self.typer_params = set()  # typer.Option calls a parameter's default or annotation holds
        self.typer_commands = set()  # functions typer.run is given
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and self.click(node.func) == ("typer", "run") and node.args and isinstance(node.args[0], ast.Name):
                self.typer_commands.add(node.args[0].id)

    def click(self, func):
        """(module, attribute) of a click-like callee, else None."""
        r = self.imports.resolve(func)
        mod, _, attr = r.rpartition(".")
        if mod.split(".")[0] in CLICK_MODULES:
            return mod.split(".")[0], attr
        return None

    def add(self, kind, names, api, name_node, site, outer, flags=None, derived=False):
        o = {"kind": kind, "names": names, "api": api, "line": name_node.lineno,
             "start": min(site.lineno, name_node.lineno), "end": max(site.end_lineno, name_node.end_lineno),
             "outer": list(outer)}
        if flags:
            o["flags"] = flags
        if derived:
            o["derived"] = True
        self.out.append(o)

    def visit(self, node, outer):
        for child in ast.iter_child_nodes(node):
            o = outer
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) or isinstance(node, ast.Module):
                o = (first_line(child), child.end_lineno) if hasattr(child, "lineno") else outer
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.function(child, o)
            elif isinstance(child, ast.Call):
                self.call(child, o)
            elif isinstance(child, ast.Subscript):
                self.subscript(child, o)
            elif isinstance(child, ast.Compare):
                self.compare(child, o)
            self.visit(child, o)

    def call(self, call, outer):
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr in ("add_argument", "add_option"):
            args = [a for a in call.args if string(a) is not None]
            names = [a.value for a in args if a.value.startswith("-") and a.value.strip("-")]
            if names:
                api = "argparse" if f.attr == "add_argument" else "optparse"
                self.add("flag", names, api, next(a for a in args if a.value in names), call, outer)
            return
        if self.imports.resolve(f) == "optparse.OptionParser":
            # optparse gives a parser -h and --help unless
            # add_help_option=False, and --version when given a version.
            if not (isinstance(keyword(call, "add_help_option"), ast.Constant) and not keyword(call, "add_help_option").value):
                self.add("flag", ["-h", "--help"], "optparse", call, call, outer)
            v = keyword(call, "version")
            if v is not None and not (isinstance(v, ast.Constant) and v.value is None):
                self.add("flag", ["--version"], "optparse", v, call, outer)
            return
        if ((isinstance(f, ast.Attribute) and f.attr in ("ArgumentParser", "add_parser")) or self.imports.resolve(f) == "argparse.ArgumentParser") and not (
                isinstance(keyword(call, "add_help"), ast.Constant) and not keyword(call, "add_help").value):
            # argparse gives a parser -h and --help unless add_help=False.
            self.add("flag", ["-h", "--help"], "argparse", call, call, outer)
            return
        r = self.imports.resolve(f)
        if r in ("os.getenv", "os.getenvb") or (r.rpartition(".")[0] in ENVIRON and r.rpartition(".")[2] in ("get", "setdefault", "pop")):
            if call.args and string(call.args[0]) is not None:
                self.add("env", [call.args[0].value], "os", call.args[0], call, outer)
            return
        c = self.click(f)
        if c is None or id(call) in self.typer_params:
            return
        mod, attr = c
        decls, where = [], call
        if attr == "Option" and mod != "typer":
            pd = call.args[0] if call.args else keyword(call, "param_decls")
            decls, where = strings(pd) if pd is not None else [], pd
        elif attr in ("option", "Option") or attr in CLICK_DEFAULTS:
            args = [a for a in call.args if string(a) is not None]
            decls = [a.value for a in args]
            where = next((a for a in args if flag_names([a.value])), call)
        elif attr not in ("argument", "Argument"):
            return
        names = flag_names(decls) if attr not in ("argument", "Argument") else []
        if not names and attr in CLICK_DEFAULTS:
            names = [CLICK_DEFAULTS[attr]]
        if names:
            self.add("flag", names, mod, where, call, outer)
        self.envvars(call, mod, names, outer)

    def envvars(self, call, api, flags, outer):
        ev = keyword(call, "envvar")
        if ev is None:
            return
        for e in ([ev] if string(ev) is not None else getattr(ev, "elts", [])):
            if string(e) is not None and e.value:
                self.add("env", [e.value], api, e, call, outer, flags=flags)

    def subscript(self, node, outer):
        if isinstance(node.ctx, ast.Load) and self.imports.resolve(node.value) in ENVIRON and string(node.slice) is not None:
            self.add("env", [node.slice.value], "os", node.slice, node, outer)

    def compare(self, node, outer):
        if (string(node.left) is not None and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn))
                and self.imports.resolve(node.comparators[0]) in ENVIRON):
            self.add("env", [node.left.value], "os", node.left, node, outer)

    def function(self, fn, outer):
        """typer's parameters: an Option as a default or in Annotated, and
        in a command (a function typer.run is given, or one decorated by
        .command() or .callback() in a module that imports typer) every
        parameter with a default that is not an Argument."""
        command = fn.name in self.typer_commands or (any(v.split(".")[0] == "typer" for v in self.imports.names.values()) and any(
            isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in ("command", "callback")
            for d in fn.decorator_list))
        a = fn.args
        positional = a.posonlyargs + a.args
        defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
        for arg, default in list(zip(positional, defaults)) + list(zip(a.kwonlyargs, a.kw_defaults)):
            param = None
            for v in [default] + self.annotated(arg.annotation):
                if isinstance(v, ast.Call) and self.click(v.func) in (("typer", "Option"), ("typer", "Argument")):
                    param = v
                    break
            if param is None and not (command and default is not None):
                continue
            if param is not None:
                self.typer_params.add(id(param))
                if self.click(param.func)[1] == "Argument":
                    self.envvars(param, "typer", [], outer)
                    continue
            decls = flag_names([a.value for a in (param.args if param is not None else []) if string(a) is not None])
            derived = not decls
            if derived:
                decls = ["--" + arg.arg.replace("_", "-")]
                if self.is_bool(arg.annotation):
                    decls.append("--no-" + arg.arg.replace("_", "-"))
            self.add("flag", decls, "typer", arg, param if param is not None else arg, outer, derived=derived)
            if param is not None:
                self.envvars(param, "typer", decls, outer)

    def annotated(self, ann):
        """The metadata of Annotated[T, ...]."""
        if isinstance(ann, ast.Subscript) and isinstance(ann.slice, ast.Tuple):
            r = self.imports.resolve(ann.value)
            if r.endswith(".Annotated") or (isinstance(ann.value, ast.Name) and ann.value.id == "Annotated"):
                return list(ann.slice.elts[1:])
        return []

    def is_bool(self, ann):
        if isinstance(ann, ast.Name):
            return ann.id == "bool"
        if isinstance(ann, ast.Subscript) and isinstance(ann.slice, ast.Tuple) and self.annotated(ann):
            return self.is_bool(ann.slice.elts[0])
        return False


def from_imports(body, out, cond=False):
    """The module's `from X import name` statements, at its top level or
    under if, try or with there (cond): what a module re-exports."""
    for node in body:
        if isinstance(node, ast.ImportFrom):
            im = {"module": node.module or "", "level": node.level, "line": node.lineno,
                  "names": [[a.name, a.asname or ""] for a in node.names]}
            if cond:
                im["cond"] = True
            out.append(im)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(node, field, None)
                if isinstance(sub, list):
                    from_imports(sub, out, True)
            for h in getattr(node, "handlers", None) or []:
                from_imports(h.body, out, True)


def main():
    src = sys.stdin.buffer.read()
    res = {"python": "%d.%d.%d" % tuple(sys.version_info[:3]), "decls": [], "options": [], "imports": []}
    try:
        tree = ast.parse(src, filename="<snapshot>")
    except (SyntaxError, ValueError) as e:
        res["syntax_error"] = {"line": getattr(e, "lineno", None) or 0, "msg": str(getattr(e, "msg", e))}
    else:
        walk(tree.body, "", "module", res["decls"])
        opts = Options(tree)
        opts.visit(tree, (1, 1))
        res["options"] = opts.out
        from_imports(tree.body, res["imports"])
    sys.stdout.write(json.dumps(res))


main()
