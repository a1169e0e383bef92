#!/usr/bin/env python3
"""The layer rules of src/, checked against the code's own imports.

Every file of src/ belongs to one layer (LAYERS below, by path). A file may
import only files of its own layer or of a lower one; the two engines never
import each other; no file is part of an import circle (inside an engine as
well); the in-memory engine's protocol (src/store/protocol/) imports no file
of its record kinds (src/store/kinds/) or mechanisms (src/store/mechanisms/),
ADR 0076. docs/ARCHITECTURE.md states the same rules in words.

  python3 scripts/layers.py            # the graph's figures and every breach
  python3 scripts/layers.py --check    # the same; exits 1 on any breach (CI)
  python3 scripts/layers.py --edges    # every file -> file import, for reading
  python3 scripts/layers.py --self-test  # the check catches each kind of breach

What counts as an import: a `use crate::..`, `use super::..` or `use
self::..` tree, and a path written inline (`crate::a::B`, `super::c`),
each resolved to the deepest module file it names. `mod x;` lines are the
module tree, not imports, and comments are ignored.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (layer, rank, path prefixes under src/). Lower ranks are lower layers; a
# file may import only files whose rank is at most its own. The first prefix
# that matches a file places it, so list longer prefixes first.
LAYERS = [
    ("base", 0, ["base/"]),
    ("contract", 1, ["contract/"]),
    ("floors", 2, ["mem/"]),
    ("coordination", 3, ["coord/"]),
    ("engine:store", 4, ["store/"]),
    ("engine:redis", 4, ["redis/"]),
    ("top", 5, ["conformance/", "lib.rs", "model.rs"]),
]

# Narrower rules, each an absence docs/ARCHITECTURE.md states: (files of
# this prefix, may import files of these prefixes only, why).
ONLY = [
    # The Redis engine knows nothing of the in-memory floors except the two
    # hubs it reuses to deliver events and wakes inside one process.
    ("redis/", ["base/", "contract/", "redis/", "mem/events.rs", "mem/wake.rs"], "redis"),
    # The contract knows nothing of how an engine keeps it.
    ("contract/", ["base/", "contract/"], "contract"),
    # Conformance knows only the contract; its harness builds the in-memory
    # engine for the suite's own tests.
    ("conformance/harness.rs", ["base/", "contract/", "conformance/", "store/"], "conformance"),
    ("conformance/", ["base/", "contract/", "conformance/"], "conformance"),
]

# Absences inside the in-memory engine's folder: (files of this prefix,
# may import no file of these prefixes, why). The protocol every record
# kind follows knows no kind and no mechanism.
NOT = [
    ("store/protocol/", ["store/kinds/", "store/mechanisms/"], "protocol"),
]

# The files that may choose between std and loom (the seams at the edge);
# anywhere else the model-checking cfg may only gate tests in or out.
LOOM_SEAMS = ["base/sync.rs", "base/faults.rs", "base/words.rs", "mem/shard.rs"]
LOOM_CFG = "relaystore_loom"


def layer_of(rel):
    for name, rank, prefixes in LAYERS:
        for prefix in prefixes:
            if rel == prefix or rel.startswith(prefix):
                return name, rank
    return None, None


def module_path(rel):
    """src-relative file path -> module path (a tuple of names)."""
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


def strip_comments(text):
    out = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif text[i] == '"':
            # skip string literals (they may hold `crate::` in prose)
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif text.startswith("r#\"", i) or text.startswith('r"', i):
            hashes = 1 if text[i + 1] == "#" else 0
            end = '"' + "#" * hashes
            j = text.find(end, i + 2 + hashes)
            out.append('""')
            i = n if j < 0 else j + len(end)
        elif text[i] == "'" and i + 2 < n and (text[i + 2] == "'" or text[i + 1] == "\\"):
            # a char literal such as '"' or '\n'
            j = text.find("'", i + 2 if text[i + 1] == "\\" else i + 1)
            out.append("' '")
            i = n if j < 0 else j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def expand_use_tree(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (as lists of names)."""
    tree = re.sub(r"\s+", "", tree)
    results = []

    def walk(prefix, s):
        # s is one use tree
        depth = 0
        if "{" not in s:
            results.append(prefix + [p for p in s.split("::") if p])
            return
        brace = s.index("{")
        head = [p for p in s[:brace].split("::") if p]
        inner = s[brace + 1 : s.rindex("}")]
        items, cur = [], ""
        for ch in inner:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                items.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            items.append(cur)
        for item in items:
            if item:
                walk(prefix + head, item)

    walk([], tree)
    return results


def resolve(mod, names, modules):
    """A path as written in module `mod` -> the deepest module it names."""
    if not names:
        return None
    if names[0] == "crate":
        base, rest = (), names[1:]
    elif names[0] == "super":
        base = mod
        rest = names
        while rest and rest[0] == "super":
            base = base[:-1]
            rest = rest[1:]
    elif names[0] == "self":
        base, rest = mod, names[1:]
    else:
        return None
    path = base
    best = base if base in modules else None
    for name in rest:
        path = path + (name,)
        if path in modules:
            best = path
    return best


INLINE = re.compile(r"\b((?:crate|super|self)(?:::(?:super|[A-Za-z_][A-Za-z0-9_]*))+)")
USE = re.compile(r"\buse\s+((?:crate|super|self)\b[^;]*);", re.S)


INLINE_MOD = re.compile(r"\bmod\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{")


def inline_modules(text):
    """(start, end, name) of every `mod name { .. }` written inside a file."""
    spans = []
    for m in INLINE_MOD.finditer(text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        spans.append((m.end(), i, m.group(1)))
    return spans


def scope_at(mod, spans, pos):
    """The module a position of the file is in (inline modules included)."""
    inner = [name for start, end, name in spans if start <= pos < end]
    return mod + tuple(inner)


def imports_of(mod, text, modules):
    text = strip_comments(text)
    spans = inline_modules(text)
    found = set()
    for m in USE.finditer(text):
        tree = re.sub(r"\bas\s+\w+", "", m.group(1))
        for names in expand_use_tree(tree):
            target = resolve(scope_at(mod, spans, m.start()), names, modules)
            if target is not None:
                found.add(target)
    # inline paths, outside the use trees already read
    blanked = USE.sub(lambda m: " " * len(m.group(0)), text)
    for m in INLINE.finditer(blanked):
        names = m.group(1).split("::")
        target = resolve(scope_at(mod, spans, m.start()), names, modules)
        if target is not None:
            found.add(target)
    return found


def tarjan(nodes, edges):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
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
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


def breaches_of(root):
    """(figures line, breaches, edges) of the tree under `root`."""
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*.rs"))
    modules_by_file = {f: module_path(f) for f in files}
    file_by_module = {m: f for f, m in modules_by_file.items()}
    modules = set(file_by_module)
    modules.add(())

    edges = {}
    for rel in files:
        text = (root / rel).read_text()
        targets = imports_of(modules_by_file[rel], text, modules)
        tf = set()
        for t in targets:
            f = file_by_module.get(t)
            if f is not None and f != rel:
                tf.add(f)
        edges[rel] = tf

    breaches = []
    unplaced = [f for f in files if layer_of(f)[0] is None]
    for f in unplaced:
        breaches.append(f"unplaced: src/{f} belongs to no layer (add it to LAYERS)")

    upward = []
    for src in files:
        sl, sr = layer_of(src)
        if sl is None:
            continue
        for dst in sorted(edges[src]):
            dl, dr = layer_of(dst)
            if dl is None:
                continue
            if dr > sr:
                upward.append((src, dst))
                breaches.append(f"upward: src/{src} ({sl}) imports src/{dst} ({dl})")
            elif sl.startswith("engine:") and dl.startswith("engine:") and sl != dl:
                breaches.append(f"engines: src/{src} ({sl}) imports src/{dst} ({dl})")

    for src in files:
        rule = next((r for r in ONLY if src.startswith(r[0])), None)
        if rule is None:
            continue
        for dst in sorted(edges[src]):
            if not any(dst.startswith(p) for p in rule[1]):
                breaches.append(f"narrow: src/{src} imports src/{dst} ({rule[2]} rule)")

    for src in files:
        rule = next((r for r in NOT if src.startswith(r[0])), None)
        if rule is None:
            continue
        for dst in sorted(edges[src]):
            if any(dst.startswith(p) for p in rule[1]):
                breaches.append(f"narrow: src/{src} imports src/{dst} ({rule[2]} rule)")

    for rel in files:
        if rel in LOOM_SEAMS or rel.endswith("mod.rs") or rel in ("lib.rs", "model.rs"):
            continue
        for n, line in enumerate(strip_comments((root / rel).read_text()).splitlines(), 1):
            if LOOM_CFG in line and not (line.lstrip().startswith("#[cfg(") and "test" in line):
                breaches.append(f"loom: src/{rel}:{n} chooses by the model-checking cfg outside a seam")

    circles = tarjan(files, edges)
    for comp in circles:
        breaches.append(f"circle of {len(comp)} files: " + ", ".join(f"src/{f}" for f in comp))

    n_edges = sum(len(v) for v in edges.values())
    biggest = max((len(c) for c in circles), default=0)
    figures = (
        f"{len(files)} files, {n_edges} imports, {len(circles)} circles "
        f"(largest {biggest} files), "
        f"{len(upward)} upward imports, {len(breaches)} breaches"
    )
    return figures, breaches, edges


# Each breach the check must catch, as a tree of two or three files: a broken
# twin of the layout, run by --self-test (and so by CI) before the real check.
TWINS = {
    "upward": {
        "base/mod.rs": "pub mod time;",
        "base/time.rs": "use crate::contract::config::Limits;",
        "contract/config.rs": "pub struct Limits;",
    },
    "engines": {
        "redis/mod.rs": "use crate::store::Store;",
        "store/mod.rs": "pub struct Store;",
    },
    "circle": {
        "mem/a.rs": "use crate::mem::b::B; pub struct A;",
        "mem/b.rs": "use super::a::A; pub struct B;",
    },
    # Inside an engine's folder too (a protocol file importing a kind's);
    # a twin's name is its breach's first word, then "/" and what it varies.
    "circle/engine": {
        "store/protocol/attach.rs": "use crate::store::kinds::lease::Lease; pub struct Parent;",
        "store/kinds/lease.rs": "use crate::store::protocol::attach::Parent; pub struct Lease;",
    },
    "unplaced": {"elsewhere.rs": "pub struct X;"},
    "loom": {
        "mem/table.rs": "#[cfg(relaystore_loom)]\nconst BATCH: usize = 1;",
        "mem/slab.rs": "#[cfg(all(test, not(relaystore_loom)))]\nmod tests {}",
    },
    "narrow": {
        "redis/mod.rs": "use crate::mem::table::Table;",
        "mem/table.rs": "pub struct Table;",
    },
    # A protocol file that imports a kind's, with no circle.
    "narrow/protocol": {
        "store/protocol/retire.rs": "use crate::store::kinds::lease::Lease; pub struct Why;",
        "store/kinds/lease.rs": "pub struct Lease;",
    },
    # A test module's `super` is its file, not the file's parent: no breach.
    "clean": {
        "base/time.rs": "pub struct T;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}",
        "contract/config.rs": "use crate::base::time::T; // crate::store::Store",
    },
}


def self_test():
    import tempfile

    failures = []
    for kind, tree in TWINS.items():
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            for rel, text in tree.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text + "\n")
            _, breaches, _ = breaches_of(root)
            kinds = {b.split(":")[0].split(" ")[0] for b in breaches}
            caught = not kinds if kind == "clean" else kind.split("/")[0] in kinds
            if not caught:
                failures.append(f"{kind}: not judged so; found {breaches}")
    for f in failures:
        print("self-test failed: " + f)
    print(f"self-test: {len(TWINS) - len(failures)} of {len(TWINS)} twins judged right")
    return 1 if failures else 0


def main(argv):
    if "--self-test" in argv:
        return self_test()
    figures, breaches, edges = breaches_of(ROOT / "src")
    if "--edges" in argv:
        for src in sorted(edges):
            for dst in sorted(edges[src]):
                print(f"src/{src} -> src/{dst}")
    print(figures)
    for b in breaches:
        print("  " + b)
    if "--check" in argv and breaches:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
