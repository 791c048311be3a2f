#!/usr/bin/env python3
"""Layering gate (issue 11 item 4, rewritten for issue 49 item 4), read-only.

Every path the code names is resolved the way rustc would, as far as a
script can: `use` declarations of every form (crate::, super::, self::,
a child module, an imported name, an extern workspace crate, groups,
renames, globs, `pub use` re-exports) and the bare paths written in
expressions and types (`crate::a::f()`, `child::g()`, `super::T`).
Comments, string literals and `#[cfg(test)]` / `#[test]` items are left out:
tests may reach anywhere. (The strings of `#[serde(with = "m")]`-like
attributes are paths the derive resolves, so they count.)

What is a dependency: using an item makes the file depend on the module
that defines it, and on every module whose `use` (usually a `pub use`) the
path went through; a child's `use super::X` depends on its parent. Merely
declaring `mod child;` or importing a module's name is not a dependency;
using something through that name is.

From the resolved uses it builds a graph of files (node = source file,
edge = the file uses an item of another file's module) and reports:

1. File circles: groups of files that reach one another (strongly
   connected components), with their edges.
2. Module circles: the same over top-level modules (`care`, `db`, ...;
   `main.rs` is `main`, `lib.rs` is the crate root and no node; a crate
   under crates/ is one module, named as the root crate re-exports it).
3. Floor violations: the fenced ```floors block of docs/architecture.md
   lists floors top first; a module may use its own floor or one below,
   never one above, and every module must be on a floor.
4. HTTP in rule files: resource files that hold no routes (and are not
   model.rs shapes) must not use `http`; a rule the floors cannot say,
   since `http` sits below the resource floors.

Exit status 1 when anything is listed under 1-4.
Usage: .ci/layering.py [--quiet] [--root DIR]
  --quiet  counts and violations only (no edge lists, no upward-edge table)
  --root   tree holding src/, docs/architecture.md and optionally crates/
"""

import argparse
import bisect
import os
import re
import sys
import tomllib
from collections import defaultdict

DEFAULT_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FLOORS_DOC = os.path.join("docs", "architecture.md")
RESOURCE_AREAS = ("auth", "identity", "household", "medicine", "care", "sync", "portable", "reminders")
# Binaries are entry points; they share one floor name whatever they are called.
BIN_MODULE = "main"
# The root package's crate name when it has no Cargo.toml (fixtures).
DEFAULT_CRATE = "pillbox"


# ---------------------------------------------------------------- lexing

# Comments and literals, found with one search so the code between them can
# be tokenised by a plain regex. The prefixes must not end an identifier.
LITERAL = re.compile(
    r"""(?P<line>//[^\n]*)
      | (?P<block>/\*)
      | (?<![A-Za-z0-9_])(?P<raw>[bc]?r\#*")
      | (?<![A-Za-z0-9_])(?P<str>[bc]?"(?:[^"\\]|\\.)*")
      | (?<![A-Za-z0-9_])(?P<char>b?'(?:[^'\\\n]|\\(?:x[0-9A-Fa-f]{2}|u\{[0-9A-Fa-f_]*\}|.))')
    """,
    re.VERBOSE | re.DOTALL,
)
TOKEN = re.compile(r"r#[A-Za-z_]\w*|[A-Za-z_]\w*|\$crate|::|=>|->|\d\w*|\S")


def block_comment_end(text, pos):
    """Offset just past the `*/` closing the comment opened before pos
    (Rust block comments nest)."""
    depth = 1
    while depth:
        close = text.find("*/", pos)
        if close < 0:
            return len(text)
        opening = text.find("/*", pos)
        if 0 <= opening < close:
            depth, pos = depth + 1, opening + 2
        else:
            depth, pos = depth - 1, close + 2
    return pos


def blank_literals(text):
    """The text with comments gone and each string or char literal reduced
    to one quote (its newlines kept, so lines still count), and the strings'
    contents by the offset of their quote (for `#[path = "..."]`)."""
    parts, strings, pos, length = [], {}, 0, 0
    while True:
        m = LITERAL.search(text, pos)
        if not m:
            parts.append(text[pos:])
            return "".join(parts), strings
        code = text[pos : m.start()]
        parts.append(code)
        length += len(code)
        kind, end, content = m.lastgroup, m.end(), None
        if kind == "block":
            end = block_comment_end(text, end)
        elif kind == "raw":
            closing = '"' + "#" * m.group().count("#")
            close = text.find(closing, end)
            close = len(text) if close < 0 else close
            content, end = text[m.end() : close], close + len(closing)
        elif kind == "str":
            content = m.group()[m.group().index('"') + 1 : -1]
        mark = {"line": " ", "block": " ", "char": "'"}.get(kind, '"')
        if content is not None:
            strings[length] = content
        replaced = mark + "\n" * text.count("\n", m.start(), end)
        parts.append(replaced)
        length += len(replaced)
        pos = end


def is_name(token):
    return token[0].isalpha() or token[0] == "_" or token == "$crate"


# ---------------------------------------------------------------- model


class Crate:
    def __init__(self, name, package_dir, floor_name):
        self.name = name  # Rust crate name (package name with - -> _)
        self.package_dir = package_dir
        # The module name on the floors; None for the root package's
        # library, whose top-level modules are each their own floor name.
        self.floor_name = floor_name
        self.root = None  # Module


class Module:
    """One Rust module; several may live in one file (inline `mod x { }`)."""

    def __init__(self, crate, path, file, parent, child_dir):
        self.crate = crate
        self.path = path  # names under the crate root
        self.file = file  # the file holding it, relative to the tree's root
        self.parent = parent
        self.child_dir = child_dir  # where its `mod x;` files live
        self.children = {}  # name -> Module
        self.declared = []  # (name, #[path] or None) of `mod x;`
        self.imports = {}  # name -> Import, module level
        self.local_imports = {}  # name -> Import, `use` inside a fn body
        self.globs = []  # module-level `use x::*`
        self.every_import = []  # all of them, for the edges
        self.items = set()  # names of items defined here
        # (segments, line, names a module?) of inline paths; only a path in
        # `#[serde(with = "m")]` may name a module and still use it.
        self.paths = []


class Import:
    def __init__(self, module, segments, line, glob):
        self.module, self.segments, self.line, self.glob = module, segments, line, glob


# ---------------------------------------------------------------- parsing

ITEM_KEYWORDS = {"fn", "struct", "enum", "trait", "type", "const", "static", "union"}
# Words that start an item, so a skipped test item ends at `;` or its body.
ITEM_START = ITEM_KEYWORDS | {"mod", "use", "impl", "extern", "async", "unsafe", "macro_rules", "pub"}
# Attribute keys whose string value is a path (serde, schemars, thiserror).
PATH_KEYS = {
    "with", "serialize_with", "deserialize_with", "skip_serializing_if", "default",
    "schema_with", "from", "into", "try_from", "remote", "crate",
}
STRING_PATH = re.compile(r"(?<![\w:.$])(?:[A-Za-z_]\w*::)+[A-Za-z_]\w*")
# A name after these is a field, method, macro variable or lifetime, not a path.
NOT_PATH_AFTER = {".", "$", "'", "::"}


def test_only_predicate(tokens):
    """Whether a cfg predicate holds only when compiling tests."""
    if tokens == ["test"]:
        return True
    if len(tokens) > 3 and tokens[0] in ("all", "any") and tokens[1] == "(" and tokens[-1] == ")":
        args, depth, current = [], 0, []
        for t in tokens[2:-1]:
            if t == "," and depth == 0:
                args.append(current)
                current = []
                continue
            depth += t == "("
            depth -= t == ")"
            current.append(t)
        args = [a for a in args + [current] if a]
        held = [test_only_predicate(a) for a in args]
        return any(held) if tokens[0] == "all" else bool(held) and all(held)
    return False


class FileParser:
    """Reads one file's tokens into its module (and inline modules)."""

    def __init__(self, text):
        cleaned, self.strings = blank_literals(text)
        self.vals, self.offs = [], []
        for m in TOKEN.finditer(cleaned):
            t = m.group()
            self.vals.append(t[2:] if t.startswith("r#") else t)
            self.offs.append(m.start())
        self.newlines = [i for i, ch in enumerate(cleaned) if ch == "\n"]
        self.modules = []  # every module parsed from this file
        self.adapter = False  # holds `fn routes(` or a FromRequest impl

    def line(self, i):
        return bisect.bisect_right(self.newlines, self.offs[i]) + 1

    def at(self, i):
        return self.vals[i] if i < len(self.vals) else ""

    def matching(self, i):
        """Index of the bracket closing the one at i."""
        depth = 0
        for j in range(i, len(self.vals)):
            t = self.vals[j]
            if t in "([{":
                depth += 1
            elif t in ")]}":
                depth -= 1
                if depth == 0:
                    return j
        return len(self.vals) - 1

    def parse(self, module):
        self.block(0, module, nested=False)

    def block(self, i, module, nested):
        """Items of a module from token i; a nested (inline) module ends at
        its closing brace. Returns the index after it."""
        self.modules.append(module)
        vals, n = self.vals, len(self.vals)
        depth, path_attr = 0, None
        while i < n:
            t = vals[i]
            if t == "#":
                i, test_only, inner, attr_path = self.attribute(i, module)
                if test_only and inner:
                    return self.rest_of_block(i, depth, nested)
                if test_only:
                    i = self.skip_item(i)
                elif attr_path is not None:
                    path_attr = attr_path
                continue
            if t == "{":
                depth += 1
            elif t == "}":
                if depth == 0 and nested:
                    return i + 1
                depth = max(depth - 1, 0)
            elif t == "use":
                i = self.use_declaration(i + 1, module, local=depth > 0)
                continue
            elif t == "mod" and depth == 0 and is_name(self.at(i + 1)):
                name, after = vals[i + 1], self.at(i + 2)
                if after == ";":
                    module.declared.append((name, path_attr))
                    path_attr = None
                    i += 3
                    continue
                if after == "{":
                    child = Module(module.crate, module.path + (name,), module.file, module, os.path.join(module.child_dir, name))
                    module.children[name] = child
                    i = self.block(i + 3, child, nested=True)
                    continue
            elif t in ITEM_KEYWORDS and depth == 0 and is_name(self.at(i + 1)):
                module.items.add(vals[i + 1])
                if t == "fn" and vals[i + 1] == "routes" and self.at(i + 2) == "(":
                    self.adapter = True
            elif t == "macro_rules" and self.at(i + 1) == "!":
                module.items.add(self.at(i + 2))
            elif t == "extern" and self.at(i + 1) == "crate":
                i = self.extern_crate(i + 2, module)
                continue
            elif t == "pub" and self.at(i + 1) == "(":
                # pub(crate), pub(in crate::x): a visibility, not a use.
                i = self.matching(i + 1) + 1
                continue
            elif t in ("FromRequest", "FromRequestParts") and self.follows_impl(i):
                self.adapter = True
            elif t == "::" and i > 0 and not is_name(vals[i - 1]) and vals[i - 1] not in (">", ")", "]"):
                i = self.path(i, module)  # ::crate_name::x, a global path
                continue
            elif is_name(t) and self.at(i + 1) == "::" and (i == 0 or vals[i - 1] not in NOT_PATH_AFTER):
                i = self.path(i, module)
                continue
            i += 1
        return i

    def follows_impl(self, i):
        """`impl FromRequest<` or `impl<S> FromRequestParts<S>`."""
        if self.at(i + 1) != "<" or i == 0:
            return False
        j = i - 1
        if self.vals[j] == ">":
            while j > 0 and self.vals[j] != "<":
                j -= 1
            j -= 1
        return j >= 0 and self.vals[j] == "impl"

    def attribute(self, i, module=None):
        """An attribute at i: (index after it, test only?, inner?, #[path]).
        With a module, the paths its serde/schemars strings name are kept."""
        j = i + 1
        inner = self.at(j) == "!"
        j += inner
        if self.at(j) != "[":
            return i + 1, False, False, None
        close = self.matching(j)
        body = self.vals[j + 1 : close]
        test_only = body == ["test"] or (
            len(body) > 3 and body[:2] == ["cfg", "("] and body[-1] == ")" and test_only_predicate(body[2:-1])
        )
        attr_path = None
        if body[:3] == ["path", "=", '"']:
            attr_path = self.strings.get(self.offs[j + 3])
        if module is not None and not test_only:
            self.attribute_paths(j + 1, close, module)
            self.attribute_code(j + 1, close, module)
        return close + 1, test_only, inner, attr_path

    def attribute_code(self, start, end, module):
        """Paths written as code in an attribute, e.g. clap's
        `#[arg(default_value_t = crate::db::DEFAULT_READERS)]`."""
        k = start
        while k < end:
            if is_name(self.vals[k]) and self.vals[k + 1] == "::" and self.vals[k - 1] not in NOT_PATH_AFTER:
                k = self.path(k, module)
            else:
                k += 1

    def attribute_paths(self, start, end, module):
        """`#[serde(with = "a::b")]`, `#[schemars(with = "Option<m::T>")]`:
        the derive macro resolves the string as a path in this module, so
        it is a use like any other (unlike every other string)."""
        for k in range(start, end - 2):
            if self.vals[k] in PATH_KEYS and self.vals[k + 1] == "=" and self.vals[k + 2] == '"':
                content = self.strings.get(self.offs[k + 2], "")
                for m in STRING_PATH.finditer(content):
                    module.paths.append((tuple(m.group().split("::")), self.line(k + 2), True))

    def rest_of_block(self, i, depth, nested):
        """After `#![cfg(test)]`: the rest of the module is test code."""
        if not nested:
            return len(self.vals)
        while i < len(self.vals):
            if self.vals[i] == "{":
                depth += 1
            elif self.vals[i] == "}":
                if depth == 0:
                    return i + 1
                depth -= 1
            i += 1
        return i

    def skip_item(self, i):
        """Index after the item (or statement, field, match arm) that a test
        attribute ended at i applies to. Found by matching brackets, so the
        code after a `#[cfg(test)] mod tests { }` is still read."""
        vals, n = self.vals, len(self.vals)
        while self.at(i) == "#":
            i = self.attribute(i)[0]
        k = i
        if self.at(k) == "pub":
            k += 1
            if self.at(k) == "(":
                k = self.matching(k) + 1
        item = self.at(k) in ITEM_START
        depth, arm = 0, False
        while i < n:
            t = vals[i]
            if t == "{" and depth == 0:
                i = self.matching(i) + 1
                if item:
                    return i
                if arm:  # `Pat => { ... }` ends with its block
                    return i + (self.at(i) == ",")
                continue
            if t in "([{":
                depth += 1
            elif t in ")]}":
                if depth == 0:
                    return i  # the enclosing block ends here
                depth -= 1
            elif depth == 0 and (t == ";" or (t == "," and not item)):
                return i + 1
            elif t == "=>" and depth == 0:
                arm = True
            i += 1
        return n

    def path(self, i, module):
        """Read the path at i (`a::b::c`, `::a::b`); keep it when it has at
        least two segments, the only kind that can name another module."""
        segments = []
        if self.vals[i] == "::":
            segments.append("::")
            i += 1
        first = i
        while i < len(self.vals) and is_name(self.vals[i]):
            segments.append(self.vals[i])
            i += 1
            if self.at(i) == "::" and is_name(self.at(i + 1)):
                i += 1
                continue
            break
        if len(segments) >= 2:
            module.paths.append((tuple(segments), self.line(first), False))
        return max(i, first)

    def extern_crate(self, i, module):
        """`extern crate x as y;`: y names the crate x here."""
        name = self.at(i)
        alias = self.at(i + 2) if self.at(i + 1) == "as" else name
        if is_name(name):
            self.add_import(module, ["::", name], alias, False, self.line(i), local=False)
        while i < len(self.vals) and self.vals[i] != ";":
            i += 1
        return i + 1

    def use_declaration(self, i, module, local):
        i, leaves = self.use_tree(i, [])
        for segments, alias, glob, line in leaves:
            self.add_import(module, segments, alias, glob, line, local)
        while i < len(self.vals) and self.vals[i] != ";":
            i += 1
        return i + 1

    def use_tree(self, i, prefix):
        """Leaves of a use tree: (segments, `as` name, glob?, line), groups
        expanded (`a::{b, c::{d, e as f}}` -> a::b, a::c::d, a::c::e as f)."""
        segments = list(prefix)
        if self.at(i) == "::":
            if not segments:
                segments.append("::")
            i += 1
        while i < len(self.vals):
            t = self.vals[i]
            if t == "{":
                leaves, i = [], i + 1
                while i < len(self.vals) and self.vals[i] != "}":
                    if self.vals[i] == ",":
                        i += 1
                        continue
                    start = i
                    i, sub = self.use_tree(i, segments)
                    leaves.extend(sub)
                    if i == start:
                        break  # not a use tree: stop rather than loop
                return i + 1, leaves
            if t == "*":
                return i + 1, [(segments, None, True, self.line(i))]
            if not is_name(t):
                return i, []
            segments.append(t)
            line = self.line(i)
            i += 1
            if self.at(i) == "::":
                i += 1
                continue
            alias = None
            if self.at(i) == "as":
                alias, i = self.at(i + 1), i + 2
            return i, [(segments, alias, False, line)]
        return i, []

    @staticmethod
    def add_import(module, segments, alias, glob, line, local):
        if segments and segments[-1] == "self":  # `a::b::{self}` imports b
            segments = segments[:-1]
        if not segments:
            return
        imp = Import(module, tuple(segments), line, glob)
        module.every_import.append(imp)
        if glob:
            if not local:
                module.globs.append(imp)
            return
        name = alias or segments[-1]
        if name != "_":  # `use x::Trait as _;` still counts as a use
            table = module.local_imports if local else module.imports
            table.setdefault(name, imp)


# ---------------------------------------------------------------- the tree


class Project:
    def __init__(self, root):
        self.root = root
        self.crates = []
        self.externs = {}  # crate name -> Crate, the libraries a path can name
        self.modules = []
        self.files = {}  # relative file -> its file-level Module
        self.adapters = set()  # files holding routes or request extractors
        self.missing = []  # `mod x;` with no file
        self._targets = {}
        self.load()

    # -- discovery

    def load(self):
        root_name = self.package_name(self.root) or DEFAULT_CRATE
        self.add_package(self.root, root_name, lib_floor=None, bin_floor=BIN_MODULE)
        crates_dir = os.path.join(self.root, "crates")
        if os.path.isdir(crates_dir):
            for entry in sorted(os.listdir(crates_dir)):
                package_dir = os.path.join(crates_dir, entry)
                name = self.package_name(package_dir)
                if name:
                    self.add_package(package_dir, name, lib_floor=name, bin_floor=name)
        self.name_reexported_crates()

    @staticmethod
    def package_name(package_dir):
        """The crate name of Cargo.toml's [lib] or [package], `-` -> `_`."""
        manifest = os.path.join(package_dir, "Cargo.toml")
        if not os.path.isfile(manifest):
            return None
        with open(manifest, "rb") as f:
            data = tomllib.load(f)
        name = data.get("lib", {}).get("name") or data.get("package", {}).get("name")
        return name.replace("-", "_") if name else None

    def add_package(self, package_dir, name, lib_floor, bin_floor):
        src = os.path.join(package_dir, "src")
        lib = os.path.join(src, "lib.rs")
        if os.path.isfile(lib):
            crate = Crate(name, package_dir, lib_floor)
            self.externs[name] = crate
            self.add_crate(crate, lib)
        bins = [os.path.join(src, "main.rs")]
        bin_dir = os.path.join(src, "bin")
        if os.path.isdir(bin_dir):
            for entry in sorted(os.listdir(bin_dir)):
                path = os.path.join(bin_dir, entry)
                bins.append(path if entry.endswith(".rs") else os.path.join(path, "main.rs"))
        for path in bins:
            if os.path.isfile(path):
                self.add_crate(Crate(name, package_dir, bin_floor), path)

    def add_crate(self, crate, root_file):
        self.crates.append(crate)
        crate.root = self.load_file(crate, (), root_file, None, os.path.dirname(root_file))

    def load_file(self, crate, path, abs_file, parent, child_dir):
        """Parse one file into its module, then the files of the `mod x;`
        it declares (its inline modules' too)."""
        rel = os.path.relpath(abs_file, self.root)
        module = Module(crate, path, rel, parent, os.path.relpath(child_dir, self.root))
        with open(abs_file, encoding="utf-8") as f:
            parser = FileParser(f.read())
        parser.parse(module)
        self.files[rel] = module
        if parser.adapter:
            self.adapters.add(rel)
        for m in parser.modules:
            self.modules.append(m)
            for name, path_attr in m.declared:
                self.load_child(m, name, path_attr)
        return module

    def load_child(self, module, name, path_attr):
        base = os.path.join(self.root, module.child_dir)
        if path_attr is not None:
            # A #[path] file is read like a mod.rs: its children sit beside it.
            # Outside inline modules it is relative to the declaring file's directory.
            inline = module.parent is not None and module.parent.file == module.file
            at = base if inline else os.path.dirname(os.path.join(self.root, module.file))
            found = os.path.normpath(os.path.join(at, path_attr))
            candidates = [(found, os.path.dirname(found))]
        else:
            candidates = [
                (os.path.join(base, name + ".rs"), os.path.join(base, name)),
                (os.path.join(base, name, "mod.rs"), os.path.join(base, name)),
            ]
        for abs_file, child_dir in candidates:
            if os.path.isfile(abs_file):
                if os.path.relpath(abs_file, self.root) not in self.files:
                    module.children[name] = self.load_file(module.crate, module.path + (name,), abs_file, module, child_dir)
                return
        self.missing.append(f"{module.file}: mod {name}; has no file")

    def name_reexported_crates(self):
        """`pub use pillbox_db as db;` in the root library: the crate is the
        module `db` on the floors (a crate not re-exported keeps its name)."""
        root_lib = self.externs.get(self.crates[0].name) if self.crates else None
        if root_lib is None or root_lib.floor_name is not None:
            return
        for name, imp in root_lib.root.imports.items():
            segments = [s for s in imp.segments if s != "::"]
            crate = self.externs.get(segments[0]) if len(segments) == 1 else None
            if crate is not None and crate is not root_lib:
                crate.floor_name = name
                for other in self.crates:  # its binaries too
                    if other.package_dir == crate.package_dir:
                        other.floor_name = name

    # -- name resolution
    #
    # A result is (kind, module, via): kind "mod" (the path names the module
    # itself) or "item" (an item of that module); via lists the modules whose
    # `pub use` the path went through, since the importer depends on them as
    # well as on the module that defines the item.

    def import_target(self, imp):
        """Where an import lands; memoised, None while it is being resolved
        (a re-export chain that comes back to itself)."""
        known = self._targets.get(imp, ())
        if known != ():
            return known
        self._targets[imp] = None
        target = self.resolve(imp.module, imp.segments)
        self._targets[imp] = target
        return target

    def resolve(self, module, segments, value_last=False):
        """Resolve a path written in module (edition 2024 rules). A module
        and a function may share a name (`mod kept;` beside `pub use
        kept::kept;`); value_last says the last segment is the function or
        type (an expression), so items win over modules there."""
        first, rest = segments[0], segments[1:]
        if first == "::":  # only an extern crate can follow
            crate = self.externs.get(rest[0]) if rest else None
            if crate is None:
                return None
            current, via, rest = crate.root, (), rest[1:]
        elif first in ("crate", "$crate"):
            current, via = module.crate.root, ()
        elif first in ("self", "super"):
            current, via, rest = module, (), segments
            while rest and rest[0] in ("self", "super"):
                if rest[0] == "super":
                    current = current.parent
                    if current is None:
                        return None
                rest = rest[1:]
        else:
            found = self.in_scope(module, first)
            if found is None:
                return None
            kind, current, via = found
            if kind == "item":
                return found
        for k, name in enumerate(rest):
            if value_last and k == len(rest) - 1:
                found = self.find_item(current, name, frozenset([current]))
                if found is not None:
                    return found[0], found[1], via + found[2]
            kind, current, hop = self.member(current, name)
            via += hop
            if kind == "item":
                return kind, current, via
        return "mod", current, via

    def in_scope(self, module, name):
        """The first segment of a path: a child module, an imported name or
        an item of this module, else an extern crate (std, serde... are not
        in the tree and give None)."""
        if name in module.children:
            return "mod", module.children[name], ()
        imp = module.imports.get(name) or module.local_imports.get(name)
        if imp is not None:
            target = self.import_target(imp)
            if target is not None:
                return target
        if name in module.items:
            return "item", module, ()
        found = self.through_globs(module, name, frozenset([module]))
        if found is not None:
            return found
        crate = self.externs.get(name)
        if crate is not None:
            return "mod", crate.root, ()
        return None

    def member(self, module, name):
        """`module::name`: a name the module does not show is taken to be an
        item it defines (a macro may have made it)."""
        return self.find_member(module, name, frozenset()) or ("item", module, ())

    def find_member(self, module, name, seen):
        if name in module.children:
            return "mod", module.children[name], ()
        imp = module.imports.get(name)
        if imp is not None:
            target = self.import_target(imp)
            if target is not None:
                return self.reexported(module, target)
        if name in module.items:
            return "item", module, ()
        return self.through_globs(module, name, seen | {module})

    def find_item(self, module, name, seen):
        """`module::name` as a value or type only: modules are skipped."""
        imp = module.imports.get(name)
        if imp is not None:
            target = self.import_target(imp)
            if target is not None and target[0] == "item":
                return self.reexported(module, target)
        if name in module.items:
            return "item", module, ()
        for imp in module.globs:
            target = self.import_target(imp)
            if target is not None and target[0] == "mod" and target[1] not in seen:
                found = self.find_item(target[1], name, seen | {target[1]})
                if found is not None:
                    return self.reexported(module, found)
        return None

    def through_globs(self, module, name, seen):
        for imp in module.globs:
            target = self.import_target(imp)
            if target is None or target[0] != "mod" or target[1] in seen:
                continue
            found = self.find_member(target[1], name, seen)
            if found is not None:
                return self.reexported(module, found)
        return None

    @staticmethod
    def reexported(module, target):
        """An item reached through module's `use` depends on module too; a
        module alias is only a name and adds nothing."""
        kind, found, via = target
        return (kind, found, via + (module,)) if kind == "item" else target

    @staticmethod
    def dependencies(target, whole_module=False):
        """The modules a resolved path makes its file depend on: the item's
        module and the re-exporters on the way; a path that names a module
        only counts when whole_module (a glob, a serde `with` module)."""
        if target is None:
            return ()
        kind, found, via = target
        return via + (found,) if kind == "item" or whole_module else via

    # -- the graphs

    def file_edges(self):
        """file -> {used file: first line of a use}."""
        edges = defaultdict(dict)
        for module in self.modules:
            uses = []
            for imp in module.every_import:
                uses.append((self.dependencies(self.import_target(imp), imp.glob), imp.line))
                if not imp.glob:  # `use` brings a name's module and its value alike
                    uses.append((self.dependencies(self.resolve(imp.module, imp.segments, value_last=True)), imp.line))
            for segs, line, names_module in module.paths:
                uses.append((self.dependencies(self.resolve(module, segs, value_last=True), names_module), line))
            out = edges[module.file]
            for deps, line in uses:
                for dep in deps:
                    if dep.file != module.file and line < out.get(dep.file, sys.maxsize):
                        out[dep.file] = line
        for rel in self.files:
            edges.setdefault(rel, {})
        return edges

    def floor_module(self, rel):
        """The module a file belongs to on the floors (None: a crate root)."""
        module = self.files[rel]
        if module.crate.floor_name is not None:
            return module.crate.floor_name
        return module.path[0] if module.path else None

    def top_modules(self):
        return sorted({m for m in (self.floor_module(rel) for rel in self.files) if m is not None})

    def source_files(self):
        """Every .rs file under src/ and crates/*/src/, compiled or not."""
        out = []
        roots = [os.path.join(self.root, "src")]
        crates_dir = os.path.join(self.root, "crates")
        if os.path.isdir(crates_dir):
            roots += [os.path.join(crates_dir, d, "src") for d in sorted(os.listdir(crates_dir))]
        for top in roots:
            for dirpath, _, names in os.walk(top):
                out += [os.path.relpath(os.path.join(dirpath, n), self.root) for n in names if n.endswith(".rs")]
        return sorted(out)


# ---------------------------------------------------------------- reports


def strongly_connected(graph):
    """Components of more than one node (Tarjan's algorithm, iterative so a
    long chain of files cannot overflow the stack)."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(graph[start])))]
        while work:
            v, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return sorted(components, key=lambda c: (len(c), c))


def read_floors(root):
    """module -> (floor index, floor name), top floor 0; and the errors of
    the block itself."""
    path = os.path.join(root, FLOORS_DOC)
    if not os.path.isfile(path):
        return {}, [f"{FLOORS_DOC} is missing: no floors to check against"]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^```floors[ \t]*\n(.*?)^```", text, flags=re.M | re.S)
    if not m:
        return {}, [f"{FLOORS_DOC} has no ```floors block"]
    floors, errors = {}, []
    lines = [line.strip() for line in m.group(1).splitlines()]
    for number, line in enumerate(line for line in lines if line and not line.startswith("#")):
        floor, _, names = line.partition(":")
        for name in names.split():
            if name in floors:
                errors.append(f"{FLOORS_DOC}: {name} is on two floors ({floors[name][1]}, {floor.strip()})")
            else:
                floors[name] = (number, floor.strip())
    return floors, errors


class Report:
    """Everything the gate finds, computed once so the CLI and the tests
    read the same thing."""

    def __init__(self, root):
        self.project = Project(root)
        self.edges = self.project.file_edges()
        self.module_of = {rel: self.project.floor_module(rel) for rel in self.project.files}
        self.file_circles = strongly_connected({f: set(t) for f, t in self.edges.items()})
        self.module_edges = self.find_module_edges()
        self.module_circles = strongly_connected(self.module_graph())
        self.floors, floor_errors = read_floors(root)
        self.modules = self.project.top_modules()
        # With no floors block at all, that one error says it; no need to
        # name every module as missing.
        no_block = not self.floors and floor_errors
        self.unnamed = [] if no_block else [m for m in self.modules if m not in self.floors]
        self.floor_errors = floor_errors + [f"module {m} is on no floor of {FLOORS_DOC}" for m in self.unnamed]
        self.upward = self.find_upward()
        self.http_rules, self.http_shapes, self.http_adapters = self.find_http_uses()

    def find_module_edges(self):
        """(module A, module B) -> sorted [(file, line, used file)]."""
        pairs = defaultdict(list)
        for rel, targets in self.edges.items():
            a = self.module_of[rel]
            for target, line in targets.items():
                b = self.module_of[target]
                if a is not None and b is not None and a != b:
                    pairs[(a, b)].append((rel, line, target))
        return {pair: sorted(sites) for pair, sites in pairs.items()}

    def module_graph(self):
        graph = defaultdict(set)
        for a, b in self.module_edges:
            graph[a].add(b)
            graph[b]
        return graph

    def find_upward(self):
        """(A, B) -> [(file, first line)] for each use of a module B on a
        floor above A's."""
        upward = {}
        for (a, b), sites in self.module_edges.items():
            if a in self.floors and b in self.floors and self.floors[b][0] < self.floors[a][0]:
                first = {}
                for rel, line, _ in sites:
                    first[rel] = min(line, first.get(rel, line))
                upward[(a, b)] = sorted(first.items())
        return upward

    def floor_violations(self):
        out = list(self.floor_errors)
        uses = sorted((rel, line, b, a) for (a, b), sites in self.upward.items() for rel, line in sites)
        for rel, line, b, a in uses:
            out.append(f"{rel}:{line}: uses {b} (floor {self.floors[b][1]} above floor {self.floors[a][1]})")
        return out

    def find_http_uses(self):
        """Uses of `http` by resource files: rule files (counted), model.rs
        shapes and route/extractor files (listed apart, not counted)."""
        rules, shapes, adapters = [], [], []
        for rel, targets in sorted(self.edges.items()):
            if self.module_of[rel] not in RESOURCE_AREAS or self.project.files[rel].crate.floor_name is not None:
                continue
            for target, line in sorted(targets.items()):
                # `http` is a module of the root crate or of a workspace
                # crate (crates/toolkit/src/http/...): the rule is the same.
                in_http = self.module_of[target] == "http" or (
                    target.startswith("crates" + os.sep) and (os.sep + "src" + os.sep + "http") in target
                )
                if not in_http:
                    continue
                named = f"{rel}:{line}: uses {target}"
                if rel in self.project.adapters or rel.endswith("routes.rs"):
                    adapters.append(named)
                elif rel.endswith("model.rs"):
                    shapes.append(named)
                else:
                    rules.append(named)
        return rules, shapes, adapters

    def failed(self, allow_file_circles=0, allow_http_rules=0):
        # Module circles and floor violations always fail; file circles and
        # HTTP uses in rule files are held to a ratchet that only goes down.
        return bool(
            len(self.file_circles) > allow_file_circles
            or self.module_circles
            or self.floor_violations()
            or len(self.http_rules) > allow_http_rules
        )


def print_report(report, quiet):
    project = report.project
    outside = [f for f in project.source_files() if f not in project.files]
    print(f"== files: {len(project.files)} in the module tree, {len(outside)} outside it (test-only or not declared)")
    if not quiet:
        for line in project.missing:
            print("  warning: " + line)
        for rel in outside:
            print("  (outside) " + rel)
        missing_floors = sorted(set(report.floors) - set(report.modules))
        if missing_floors:
            print("-- named on the floors but not in the tree: " + ", ".join(missing_floors))

    print(f"== HTTP in rule files (resource files with no routes, not model.rs): {len(report.http_rules)}")
    for line in report.http_rules:
        print("  " + line)
    if not quiet:
        print(f"-- (not counted) shape files using the HTTP contract (schemas, PUT bodies): {len(report.http_shapes)}")
        for line in report.http_shapes:
            print("  " + line)
        print(f"-- (not counted) files that hold routes or request extractors: {len(report.http_adapters)}")
        for line in report.http_adapters:
            print("  " + line)

    print(f"== file circles (groups of files that import one another): {len(report.file_circles)}")
    for circle in report.file_circles:
        print(f"  -- {len(circle)} files: " + ", ".join(circle))
        if not quiet:
            members = set(circle)
            for rel in circle:
                for target, line in sorted(report.edges[rel].items()):
                    if target in members:
                        print(f"       {rel}:{line} -> {target}")

    print(f"== module circles (top-level modules that reach one another): {len(report.module_circles)}")
    for circle in report.module_circles:
        print(f"  -- {len(circle)} modules: " + ", ".join(circle))
        if not quiet:
            members = set(circle)
            for (a, b), sites in sorted(report.module_edges.items()):
                if a in members and b in members:
                    rel, line, target = sites[0]
                    print(f"       {a} -> {b}: {rel}:{line} -> {target}")

    violations = report.floor_violations()
    print(f"== floor violations (a use of a module on a higher floor, or a module on no floor): {len(violations)}")
    for line in violations:
        print("  " + line)
    if not quiet:
        print_upward(report)

    largest_file = max((len(c) for c in report.file_circles), default=0)
    largest_module = max((len(c) for c in report.module_circles), default=0)
    print(
        f"== summary: files {len(project.files)}; file circles {len(report.file_circles)} (largest {largest_file} files); "
        f"module circles {len(report.module_circles)} (largest {largest_module} modules); "
        f"floor violations {len(violations)}; http uses in rule files {len(report.http_rules)}"
    )


def print_upward(report):
    """The upward module edges, most files first: what to untangle first."""
    rows = sorted(report.upward.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    print(f"-- upward edges by module pair: {len(rows)} (files using it; two example sites)")
    for (a, b), sites in rows:
        examples = ", ".join(f"{rel}:{line}" for rel, line in sites[:2])
        print(f"  {a} -> {b}: {len(sites)} file(s), floor {report.floors[a][1]} -> {report.floors[b][1]}; e.g. {examples}")


def main(argv=None):
    parser = argparse.ArgumentParser(description="Layering gate: import circles and floor order.")
    parser.add_argument("--quiet", action="store_true", help="counts and violations only")
    parser.add_argument("--root", default=DEFAULT_ROOT, help="tree holding src/ and docs/architecture.md")
    parser.add_argument("--allow-file-circles", type=int, default=0, help="file circles tolerated (a ratchet: lower it as circles go)")
    parser.add_argument("--allow-http-rules", type=int, default=0, help="HTTP uses in rule files tolerated (a ratchet)")
    args = parser.parse_args(argv)
    report = Report(os.path.abspath(args.root))
    print_report(report, args.quiet)
    return 1 if report.failed(args.allow_file_circles, args.allow_http_rules) else 0


if __name__ == "__main__":
    sys.exit(main())
