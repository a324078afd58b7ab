#!/usr/bin/env python3
"""check-structure.py [SRC]: the shape docs/design.md promises for src/.

    scripts/check-structure.py [src] [--max-file 1200] [--max-func 150]

Checks, and prints each breach on a line of its own:
  - layers: src/meson.build lists the stage folders in order; a file may
    include headers of its own folder and of folders listed before it,
    never after (util cannot include site, site cannot include http);
  - cycles: no include circle between modules (a module is a .c/.h pair;
    a private header X-int.h is a module of its own, so it must not include
    X.h: the files of X include X.h first; module A depends on B when a
    file of A includes B's header);
  - lengths: no file over --max-file lines, no function over --max-func
    lines (a function runs from its name at column 0 to the '}' at
    column 0 that closes it: the style the tree is written in);
  - map: docs/design.md's module map has a row for each stage folder and
    names each of its modules there, as `name`, `name.h`, or `-part` in
    the row of `base` for a module base-part (private -int headers aside),
    and names no folder the tree does not have.
Exit 0 when all hold, 1 when one does not. Run by `meson test structure`
(tests/meson.build).
Python 3 standard library only.
"""
import os
import re
import sys


def opt(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def folders(src):
    """The stage folders in the order src/meson.build visits them."""
    text = open(os.path.join(src, "meson.build")).read()
    return re.findall(r"^subdir\('([^']+)'\)", text, re.M)


def sources(src):
    out = []
    for root, _, names in os.walk(src):
        out += [os.path.join(root, n) for n in names if n.endswith((".c", ".h"))]
    return sorted(out)


def includes(path):
    text = open(path, errors="replace").read()
    return re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M)


def cycles(deps):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(deps.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(deps):
        if v not in index:
            visit(v)
    return found


def long_functions(path, limit):
    """(name, first line, length) of each function longer than limit lines."""
    out, name, start = [], None, 0
    lines = open(path, errors="replace").read().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"^[A-Za-z_][\w \*]*?\b(\w+)\(", line)
        if m and not line.rstrip().endswith(";") and name is None:
            # a definition when the next line that is not a continuation opens a body
            j = i
            while j < len(lines) and not lines[j].startswith("{") and not lines[j].rstrip().endswith(";"):
                j += 1
                if j - i > 8:
                    break
            if j < len(lines) and lines[j].startswith("{"):
                name, start = m.group(1), i
        elif line.startswith("}") and name is not None:
            if i - start + 1 > limit:
                out.append((name, start + 1, i - start + 1))
            name = None
    return out


def map_problems(src, order, files):
    """What docs/design.md's module map leaves out or names that is not there."""
    design = os.path.join(src, "..", "docs", "design.md")
    if not os.path.exists(design):
        return []
    rows = {}
    for line in open(design):
        m = re.match(r"^\| `([a-z]+)/` \|(.*)$", line)
        if m:
            rows[m.group(1)] = set(re.findall(r"`([^`]+)`", m.group(2)))
    out = ["map: docs/design.md names %s/, which src/ does not have" % f
           for f in sorted(rows) if f not in order]
    for f in order:
        if f not in rows:
            out.append("map: docs/design.md has no row for %s/" % f)
            continue
        names = rows[f]
        mods = sorted({os.path.splitext(os.path.basename(x))[0] for x in files
                       if os.path.relpath(x, src).split(os.sep)[0] == f})
        for mod in mods:
            if mod.endswith("-int") or mod in names or mod + ".h" in names:
                continue
            base, _, part = mod.rpartition("-")
            if base and base in names and "-" + part in names:
                continue
            out.append("map: docs/design.md's row for %s/ does not name %s" % (f, mod))
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    skip = {str(opt("--max-file", 0)), str(opt("--max-func", 0))}
    args = [a for a in args if a not in skip]
    src = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "src")
    max_file, max_func = opt("--max-file", 1200), opt("--max-func", 150)
    order = folders(src)
    rank = {f: i for i, f in enumerate(order)}
    files = sources(src)
    problems = []

    deps = {}
    for f in files:
        rel = os.path.relpath(f, src)
        folder = rel.split(os.sep)[0] if os.sep in rel else ""
        if folder not in rank:
            problems.append("layers: %s is in no stage folder listed in %s/meson.build" % (rel, src))
            continue
        me = os.path.splitext(rel)[0]
        for inc in includes(f):
            target = os.path.splitext(inc)[0]
            tfolder = inc.split("/")[0] if "/" in inc else ""
            if not os.path.exists(os.path.join(src, inc)):
                if "/" not in inc:
                    problems.append("layers: %s includes \"%s\": name its folder (\"stage/%s\")"
                                    % (rel, inc, inc))
                continue
            if tfolder in rank and rank[tfolder] > rank[folder]:
                problems.append("layers: %s (%s) includes %s, a later stage" % (rel, folder, inc))
            if target != me:
                deps.setdefault(me, set()).add(target)
    for c in cycles(deps):
        problems.append("cycle: " + " -> ".join(c))
    for f in files:
        rel = os.path.relpath(f, src)
        n = sum(1 for _ in open(f, errors="replace"))
        if n > max_file:
            problems.append("length: %s has %d lines (at most %d)" % (rel, n, max_file))
        if f.endswith(".c"):
            for name, line, length in long_functions(f, max_func):
                problems.append("length: %s() at %s:%d has %d lines (at most %d)"
                                % (name, rel, line, length, max_func))
    problems += map_problems(src, order, files)
    for p in problems:
        print(p)
    print("%d files in %d stages (%s): %s" % (len(files), len(order), ", ".join(order),
                                               "%d problems" % len(problems) if problems else "all hold"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
