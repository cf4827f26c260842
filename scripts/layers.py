#!/usr/bin/env python3
"""Layering figures for the broker crate (issue 40), from the source alone.

Usage:
    scripts/layers.py                    # the figures, each beside the issue's goal
    scripts/layers.py --json             # the same, machine-readable
    scripts/layers.py --circle           # files of the largest import circle, by top-level module
    scripts/layers.py --why A B          # an import path from file A to file B, with the lines
    scripts/layers.py --cuts [N]         # edges inside the largest circle, by how much removing
                                         # each shrinks it, and a greedy order of cuts
    scripts/layers.py --no-tests         # leave out #[cfg(test)] items and test-only files
    scripts/layers.py --rev REV          # read broker/src as of a git revision instead

Files are named relative to broker/src (`group/mod.rs`, `server.rs`). Standard library only.

Counting rules
--------------
* Nodes: every `*.rs` under `broker/src` (the lib crate's files, the test files it declares
  with `#[cfg(test)] mod x;` / `#[path]`, and the binary `main.rs`, whose `samsa_broker::`
  paths are read as `crate::`). Comments and string/char literals are blanked first, so
  doc comments and messages never count.
* Edges: file A -> file B when code in A names a path into B: `use` items (grouped
  `use crate::{a::b, c::{d, e}}`, multi-line blocks, `pub use` re-exports, `self::`/`super::`
  roots, and relative roots that are child modules or `use`d module names), and inline paths
  in code (`crate::x::y`, `super::x`, `$crate::x`, `child::f()`, `alias::f()` after
  `use crate::handlers;`). A path resolves to the deepest module that has a file
  (`foo.rs`, `foo/mod.rs`, or a `#[path]` file); an inline `mod x { }` counts as its file.
  `mod x;` declarations are not edges (a parent declaring a child does not depend on it).
  `use super::*` in a child (test) module is an edge to the parent file.
* "Files naming Broker": files whose code has the word `Broker` exactly (not
  `InterBroker`, `DynamicBroker`, ...). "Files importing Broker": files with a `use` that
  ends at `Broker` of the file that defines it (`server.rs` until the split of issue 40,
  `broker.rs` after). "Depending on Broker": files from which that file is reachable
  (transitively), the file itself not counted.
* "Broker parameters": in fn signatures (from `fn` to its body or `;`) under group/, txn/,
  share/: `&Broker`, `&mut Broker`, `Arc<Broker>` and `: Broker` (an optional
  `crate::server::` / `crate::broker::` prefix allowed); `&Arc<Broker>` counts once.
* `ctx.broker`: `ctx . broker` as a word pair in code, across line breaks (rustfmt splits
  long chains), so `ctx.broker()` would count too.
* Largest files: raw line counts (`wc -l`), comments and tests included.

Against the issue's figures
---------------------------
The issue says: one circle of about 100 files, 26 files importing `Broker`, 90 of 164 files
depending on it, `ctx.broker` used 135 times. Run on 9566b27 (2026-12-05, 170 files, of which
164 without the six test-only files), which is about when the issue was written:
* circle: 104 files (`--rev 9566b27`): "about 100" agrees. Counting only `use` items
  (`--use-only`) the largest circle is 6 files, so the issue's count must, like this script,
  include the paths in code: `handlers/mod.rs` dispatching to `produce::handle` etc. while
  every handler `use super::Ctx`, is what pulls the 65 handler files in.
* Broker: 26 files import `server::Broker` by `use` (exactly the issue's 26). "Files naming
  Broker" is one more (server.rs, which defines it); enum variants named `Broker`
  (`NodeRole::Broker`, `TokenListener::Broker`, `TopicValueSource::Broker`) are not counted.
* dependents of server.rs: 92 of 163 other files with `--use-only --no-tests` (the issue: 90
  of 164, the same counting up to a rule or two). With paths in code and tests (the default
  here) it is 120 of 169: once a file is in the circle it depends on server.rs.
* `ctx.broker`: 155 there (164 on one line + 17 split by rustfmt at HEAD, 181). The issue's
  135 is lower than any rule here gives; probably an older tree or `grep -c` (lines, not
  uses) over the handlers only. Counted here: every `ctx . broker` in code, comments excluded.
HEAD (8d078b9, 177 files) numbers are in docs/layering-plan.md.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = "broker/src"

GOALS = {
    "largest_circle_cross_module": "none across two top-level modules (at most a pair inside one)",
    "cross_module_sccs": "0",
    "files_naming_broker": "<= 12 (start-up, server, publisher, net, handler dispatch, tests)",
    "broker_params_group_txn_share": "0",
    "ctx_broker": "0",
    "largest_file": "< 1500 lines",
}

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


# ----------------------------------------------------------------------------------------------
# Reading files


def read_sources(rev):
    """{relative path under broker/src: text}"""
    out = {}
    if rev is None:
        base = os.path.join(ROOT, SRC)
        for d, _, names in os.walk(base):
            for n in names:
                if n.endswith(".rs"):
                    p = os.path.join(d, n)
                    with open(p, encoding="utf-8") as f:
                        out[os.path.relpath(p, base).replace(os.sep, "/")] = f.read()
    else:
        names = subprocess.run(
            ["git", "-C", ROOT, "ls-tree", "-r", "--name-only", rev, "--", SRC],
            check=True, capture_output=True, text=True).stdout.split()
        for n in names:
            if n.endswith(".rs"):
                text = subprocess.run(["git", "-C", ROOT, "show", f"{rev}:{n}"], check=True,
                                      capture_output=True, text=True).stdout
                out[n[len(SRC) + 1:]] = text
    return out


def strip(text):
    """Blank comments and the contents of string/char literals, keeping offsets and newlines."""
    out = list(text)
    n = len(text)
    i = 0

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c in "rb" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) and \
                re.match(r'(?:br|r)#*"', text[i:i + 300]):
            m = re.match(r'(?:br|r)(#*)"', text[i:])
            close = '"' + m.group(1)
            start = i + m.end()
            j = text.find(close, start)
            j = n if j < 0 else j
            blank(start, j)
            i = j + len(close)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, min(j, n))
            i = j + 1
        elif c == "'":
            # char literal or lifetime/label
            if i + 1 < n and text[i + 1] == "\\":
                j = text.find("'", i + 2)
                if text[i + 2:i + 3] == "'":  # '\''
                    j = i + 3
                j = n if j < 0 else j
                blank(i + 1, j)
                i = j + 1
            elif i + 2 < n and text[i + 2] == "'":
                blank(i + 1, i + 2)
                i += 3
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def find_close(code, open_idx):
    """Index of the brace matching code[open_idx] == '{' (or len)."""
    depth = 0
    for k in range(open_idx, len(code)):
        ch = code[k]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code)


CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")


def test_item_spans(code):
    """Spans of items under #[cfg(test)] (the attribute through the item's end)."""
    spans = []
    for m in CFG_TEST.finditer(code):
        k = m.end()
        # the item ends at the first ';' or at the matching '}' of its first '{'
        while k < len(code) and code[k] not in ";{":
            k += 1
        if k < len(code) and code[k] == "{":
            k = find_close(code, k)
        spans.append((m.start(), k + 1))
    return spans


def mask(code, spans):
    out = list(code)
    for a, b in spans:
        for k in range(a, min(b, len(out))):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)


# ----------------------------------------------------------------------------------------------
# Modules


def file_module(rel):
    parts = rel[:-3].split("/")
    if parts == ["lib"] or parts == ["main"]:
        return ()
    if parts[-1] == "mod":
        parts = parts[:-1]
    return tuple(parts)


MOD_DECL = re.compile(r"((?:#\s*\[[^\]]*\]\s*)*)(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*([;{])")
PATH_ATTR = re.compile(r'#\s*\[\s*path\s*=\s*"([^"]*)"\s*\]')


class Crate:
    def __init__(self, sources, no_tests):
        self.raw = sources
        self.code = {}      # rel -> stripped code (tests masked when no_tests)
        self.pathattr = {}  # rel -> code with string literals kept for #[path]
        self.modfile = {}   # module path tuple -> rel file
        self.inline = {}    # rel -> [(start, end, name)] inline module bodies
        self.test_files = set()
        for rel, text in sources.items():
            self.code[rel] = strip(text)
        # conventional mapping
        for rel in sources:
            if rel != "main.rs":
                self.modfile.setdefault(file_module(rel), rel)
        self.modfile[()] = "lib.rs"
        # declarations: #[path] files, test-only files, inline modules
        for rel, code in self.code.items():
            base_mod = file_module(rel)
            d = os.path.dirname(rel)
            inl = []
            for m in MOD_DECL.finditer(code):
                attrs_raw = sources[rel][m.start(1):m.end(1)]
                name = m.group(2)
                if m.group(3) == "{":
                    open_idx = m.end() - 1
                    inl.append((open_idx, find_close(code, open_idx), name))
                    continue
                enclosing = tuple(x[2] for x in inl if x[0] < m.start() < x[1])
                modpath = base_mod + enclosing + (name,)
                pa = PATH_ATTR.search(attrs_raw)
                if pa:
                    target = os.path.normpath(os.path.join(d, pa.group(1))).replace(os.sep, "/")
                    if target in sources:
                        self.modfile[modpath] = target
                if CFG_TEST.search(attrs_raw):
                    f = self.modfile.get(modpath)
                    if f:
                        self.test_files.add(f)
            self.inline[rel] = inl
        for rel, inl in self.inline.items():
            base_mod = file_module(rel)
            for (a, b, name) in inl:
                enclosing = tuple(x[2] for x in inl if x[0] < a < x[1])
                self.modfile.setdefault(base_mod + enclosing + (name,), rel)
        self.no_tests = no_tests
        if no_tests:
            for rel in list(self.code):
                self.code[rel] = mask(self.code[rel], test_item_spans(self.code[rel]))
        self.files = sorted(r for r in sources if not (no_tests and r in self.test_files))
        self.file_mods = {r: file_module(r) for r in sources}
        self.children = collections.defaultdict(set)
        for mp in self.modfile:
            if mp:
                self.children[mp[:-1]].add(mp[-1])

    def module_at(self, rel, pos):
        return self.file_mods[rel] + tuple(
            name for (a, b, name) in self.inline[rel] if a < pos < b)

    def resolve(self, rel, pos, segs, bindings):
        """Module path tuple a path resolves to (deepest module with a file), or None."""
        cur = self.module_at(rel, pos)
        segs = list(segs)
        if not segs:
            return None
        head = segs[0]
        if head in ("crate", "$crate") or (rel == "main.rs" and head == "samsa_broker"):
            mp, rest = (), segs[1:]
        elif head == "self":
            mp, rest = cur, segs[1:]
        elif head == "super":
            mp, rest = cur, segs
            while rest and rest[0] == "super":
                mp, rest = mp[:-1], rest[1:]
            if rest and rest[0] == "self":
                rest = rest[1:]
        elif head in self.children.get(cur, ()):
            mp, rest = cur, segs
        elif head in bindings:
            mp, rest = bindings[head], segs[1:]
        else:
            return None
        for s in rest:
            if mp + (s,) in self.modfile:
                mp = mp + (s,)
            else:
                break
        return mp

    def file_of(self, mp):
        while mp not in self.modfile:
            mp = mp[:-1]
        return self.modfile[mp]


USE_ITEM = re.compile(r"(?<![\w$])use\s+([^;]*);")
CODE_PATH = re.compile(r"(?<![\w:$])((?:\$crate|crate|super|self|" + IDENT + r")(?:\s*::\s*" + IDENT + r")+)")


def expand_use(tree):
    """'crate::{a::b, c::{d as e, f}}' -> [(['crate','a','b'], alias-or-None), ...]"""
    tree = re.sub(r"\s+", " ", tree).strip()
    if tree.startswith("::"):
        tree = tree[2:]
    out = []

    def parse(s, prefix):
        s = s.strip()
        if not s:
            return
        # split top-level at the first '{'
        brace = s.find("{")
        if brace < 0:
            alias = None
            m = re.match(r"(.*?)\s+as\s+(" + IDENT + r")$", s)
            if m:
                s, alias = m.group(1), m.group(2)
            segs = [x.strip() for x in s.split("::") if x.strip()]
            out.append((prefix + segs, alias))
            return
        head = s[:brace].rstrip().rstrip(":").strip()
        segs = [x.strip() for x in head.split("::") if x.strip()]
        inner = s[brace + 1:s.rfind("}")]
        depth, start = 0, 0
        for k, ch in enumerate(inner):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parse(inner[start:k], prefix + segs)
                start = k + 1
        parse(inner[start:], prefix + segs)

    parse(tree, [])
    return out


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


# ----------------------------------------------------------------------------------------------
# Graph


def build_graph(crate, use_only=False):
    """edges: {a: {b: [(line, path text)]}}, plus per-file Broker imports."""
    edges = {f: {} for f in crate.files}
    broker_importers = set()
    fileset = set(crate.files)
    for rel in crate.files:
        code = crate.code[rel]
        bindings = {}
        use_spans = []
        uses = []
        for m in USE_ITEM.finditer(code):
            use_spans.append((m.start(), m.end()))
            for segs, alias in expand_use(m.group(1)):
                if segs and segs[-1] == "self":
                    segs = segs[:-1]
                uses.append((m.start(), segs, alias))
        # first pass: bindings of module names (for `alias::f()` in code)
        for pos, segs, alias in uses:
            if not segs or segs[-1] == "*":
                continue
            mp = crate.resolve(rel, pos, segs, bindings)
            if mp is not None and mp in crate.modfile and len(mp) and mp[-1] == segs[-1]:
                bindings[alias or segs[-1]] = mp
        found = []
        for pos, segs, alias in uses:
            s = [x for x in segs if x != "*"]
            mp = crate.resolve(rel, pos, s, bindings)
            if mp is not None:
                found.append((pos, mp, "use " + "::".join(segs)))
                if len(segs) >= 2 and segs[-1] == "Broker" and crate.file_of(mp) == broker_file(crate):
                    broker_importers.add(rel)
        masked = mask(code, use_spans)
        for m in ([] if use_only else CODE_PATH.finditer(masked)):
            segs = [x.strip() for x in m.group(1).split("::")]
            mp = crate.resolve(rel, m.start(), segs, bindings)
            if mp is not None:
                found.append((m.start(), mp, "::".join(segs)))
        for pos, mp, what in found:
            tgt = crate.file_of(mp)
            if tgt == rel or tgt not in fileset:
                continue
            edges[rel].setdefault(tgt, []).append((line_of(code, pos), what))
    return edges, broker_importers


def tarjan(nodes, succ):
    """Strongly connected components, iteratively. succ: node -> iterable."""
    index, low, on, stack, comps = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ(w))))
                    advanced = True
                    break
                elif w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(comp)
    return comps


def top(rel):
    mp = file_module(rel)
    if rel == "main.rs":
        return "(main)"
    return mp[0] if mp else "(lib)"


def largest_scc(nodes, adj, removed=frozenset()):
    comps = tarjan(sorted(nodes), lambda v: (w for w in sorted(adj[v]) if w in nodes and (v, w) not in removed))
    return max(comps, key=len) if comps else []


def cut_analysis(circle, adj, n_single=15, n_greedy=15):
    nodes = set(circle)
    inner = [(a, b) for a in sorted(nodes) for b in sorted(adj[a]) if b in nodes]
    base = len(circle)
    single = []
    for e in inner:
        s = len(largest_scc(nodes, adj, frozenset([e])))
        single.append((base - s, e))
    single.sort(key=lambda x: (-x[0], x[1]))
    # greedy: repeatedly remove the edge that shrinks the current largest circle most
    greedy, removed = [], set()
    cur = list(circle)
    for _ in range(n_greedy):
        curset = set(cur)
        best = None
        for a in sorted(curset):
            for b in sorted(adj[a]):
                if b in curset and (a, b) not in removed:
                    s = len(largest_scc(curset, adj, frozenset(removed | {(a, b)})))
                    if best is None or s < best[0]:
                        best = (s, (a, b))
        if best is None:
            break
        removed.add(best[1])
        greedy.append((len(cur), best[0], best[1]))
        cur = largest_scc(curset, adj, frozenset(removed))
        if len(cur) <= 1:
            break
    return len(inner), single[:n_single], greedy


def item_spans(code, syms):
    """Spans of the items defining `syms` in code: fn/struct/enum/const/static/type/trait/mod
    and `impl ... Sym ... { }` blocks."""
    spans = []
    for sym in syms:
        s = re.escape(sym)
        for m in re.finditer(r"(?<![\w])(?:fn|struct|enum|const|static|type|trait|mod|macro_rules!)\s+" + s + r"(?![\w])", code):
            k, depth = m.end(), 0
            const = code[m.start():m.start() + 6] in ("const ", "static")
            while k < len(code):
                ch = code[k]
                if ch in "([":
                    depth += 1
                elif ch in ")]":
                    depth -= 1
                elif ch == ";" and depth <= 0:
                    break
                elif ch == "{" and depth <= 0:
                    k = find_close(code, k)
                    if not const:
                        break
                k += 1
            spans.append((m.start(), k + 1))
        for m in re.finditer(r"(?<![\w])impl\b[^{;]*?(?<![\w])" + s + r"(?![\w])[^{;]*\{", code):
            spans.append((m.start(), find_close(code, m.end() - 1) + 1))
    return spans


def apply_moves(crate, edges, moves):
    """Simulate moving items: each move is (src, {symbols}, dst). Edges into src carried only by
    those symbols point at dst instead; src's out-edges whose lines lie inside the moved items
    go to dst. References from the moved code back to what stays in src are not seen (the
    simulation is an estimate; the real commit is measured by running the script again)."""
    for src, syms, dst in moves:
        if src not in edges:
            sys.exit(f"--move: unknown file {src}")
        code = crate.code[src]
        lines = set()
        for a, b in item_spans(code, syms):
            lines.update(range(line_of(code, a), line_of(code, b) + 1))
        out = edges.setdefault(dst, {})
        for b, ev in list(edges[src].items()):
            inside = [e for e in ev if e[0] in lines]
            outside = [e for e in ev if e[0] not in lines]
            if inside and b != dst:
                out.setdefault(b, []).extend(inside)
            if outside:
                edges[src][b] = outside
            else:
                del edges[src][b]
        modname = (file_module(src) or ("",))[-1]
        for a in list(edges):
            ev = edges[a].get(src)
            if not ev:
                continue
            segs = lambda w: set(re.split(r"[\s:]+", w))
            moved = [e for e in ev if segs(e[1]) & syms]
            keep = [e for e in ev if not segs(e[1]) & syms and e[1].split("::")[-1] != modname]
            if moved and a != dst:
                edges[a].setdefault(dst, []).extend(moved)
            if keep or not moved:
                edges[a][src] = keep or ev
            else:
                del edges[a][src]
    for f in edges:
        if f not in crate.files:
            crate.files.append(f)
            crate.raw.setdefault(f, "")
            crate.code.setdefault(f, "")
            crate.file_mods.setdefault(f, file_module(f))
    crate.files.sort()


# ----------------------------------------------------------------------------------------------
# Figures

SIG_PARAM = re.compile(
    r"&\s*(?:mut\s+)?(?:(?:crate|super|server|broker)\s*::\s*)*Broker\b"
    r"|(?<![&\w])Arc\s*<\s*(?:(?:crate|super|server|broker)\s*::\s*)*Broker\s*>"
    r"|:\s*(?:(?:crate|super|server|broker)\s*::\s*)*Broker\b")
FN = re.compile(r"(?<![\w])fn\s+" + IDENT)


def broker_params(code):
    hits = []
    for m in FN.finditer(code):
        k, depth = m.end(), 0
        while k < len(code):
            ch = code[k]
            if ch in "([<":
                depth += 1
            elif ch in ")]>" and not (ch == ">" and code[k - 1] == "-"):
                depth -= 1
            elif ch in "{;" and depth <= 0:
                break
            k += 1
        sig = code[m.start():k]
        for h in SIG_PARAM.finditer(sig):
            hits.append((line_of(code, m.start() + h.start()), re.sub(r"\s+", " ", h.group(0))))
    return hits


def broker_file(crate):
    """The file that defines `pub struct Broker` (server.rs before the split, broker.rs after)."""
    for f in sorted(crate.files):
        if re.search(r"pub\s+struct\s+Broker\b", crate.code[f]):
            return f
    return "server.rs"


def names_broker(code):
    """`Broker` as a word meaning server::Broker: not an enum variant (`NodeRole::Broker`,
    `TokenListener::Broker`, or `Broker,` declared inside an `enum { }`)."""
    enums = [(m.end() - 1, find_close(code, m.end() - 1))
             for m in re.finditer(r"(?<![\w])enum\s+" + IDENT + r"[^{;]*\{", code)]
    for m in re.finditer(r"(?<![\w])Broker(?![\w])", code):
        before = code[max(0, m.start() - 40):m.start()]
        q = re.search(r"(" + IDENT + r")\s*::\s*$", before)
        if q and q.group(1) not in ("server", "broker", "crate"):
            continue
        if any(a < m.start() < b for a, b in enums):
            continue
        return True
    return False


def reverse_reach(target, edges):
    rev = collections.defaultdict(set)
    for a, bs in edges.items():
        for b in bs:
            rev[b].add(a)
    seen, todo = set(), [target]
    while todo:
        v = todo.pop()
        for u in rev[v]:
            if u not in seen:
                seen.add(u)
                todo.append(u)
    seen.discard(target)
    return seen


def figures(crate, edges, broker_importers):
    adj = {a: set(bs) for a, bs in edges.items()}
    comps = tarjan(crate.files, lambda v: sorted(adj[v]))
    comps = [sorted(c) for c in comps]
    comps.sort(key=lambda c: (-len(c), c))
    circle = comps[0]
    cross = [c for c in comps if len({top(f) for f in c}) >= 2]
    multi = [c for c in comps if len(c) >= 2]
    naming = sorted(f for f in crate.files if names_broker(crate.code[f]))
    params = {}
    for f in crate.files:
        if top(f) in ("group", "txn", "share"):
            h = broker_params(crate.code[f])
            if h:
                params[f] = h
    ctx = {}
    for f in crate.files:
        n = len(re.findall(r"(?<![\w.])ctx\s*\.\s*broker(?![\w])", crate.code[f]))
        if n:
            ctx[f] = n
    lines = sorted(((crate.raw[f].count("\n") + (0 if crate.raw[f].endswith("\n") else 1), f)
                    for f in crate.files), key=lambda x: (-x[0], x[1]))
    bf = broker_file(crate)
    dependents = reverse_reach(bf, edges) if bf in edges else set()
    by_top = collections.Counter(top(f) for f in circle)
    return {
        "files": len(crate.files),
        "edges": sum(len(b) for b in edges.values()),
        "largest_circle": {
            "files": len(circle),
            "modules": dict(sorted(by_top.items(), key=lambda x: (-x[1], x[0]))),
            "goal": GOALS["largest_circle_cross_module"],
        },
        "cross_module_sccs": {"count": len(cross), "sizes": [len(c) for c in cross],
                              "goal": GOALS["cross_module_sccs"]},
        "sccs_with_2_or_more_files": [len(c) for c in multi],
        "cross_module_circles": cross,
        "circles": multi,
        "files_naming_broker": {"count": len(naming), "files": naming,
                                "goal": GOALS["files_naming_broker"]},
        "files_importing_broker": {"count": len(broker_importers),
                                   "files": sorted(broker_importers)},
        "files_depending_on_server": {"count": len(dependents), "of": len(crate.files) - 1,
                                      "files": sorted(dependents)},
        "broker_params_group_txn_share": {
            "count": sum(len(v) for v in params.values()),
            "by_file": {f: len(v) for f, v in sorted(params.items())},
            "goal": GOALS["broker_params_group_txn_share"]},
        "ctx_broker": {"count": sum(ctx.values()),
                       "by_file": dict(sorted(ctx.items(), key=lambda x: (-x[1], x[0]))),
                       "goal": GOALS["ctx_broker"]},
        "largest_files": {"top": [{"file": f, "lines": n} for n, f in lines[:10]],
                          "goal": GOALS["largest_file"]},
        "_circle": circle,
        "_adj": adj,
    }


# The layers of broker/src, bottom to top (the crate docs in lib.rs draw the same picture).
# Files matching ABOVE sit above the services: they may name `Broker` and depend on one
# another; no other file may name `Broker` or depend on one of them.
ABOVE = (
    "broker.rs",            # Broker: the Node and the services, for handlers and net
    "handlers/",            # Ctx, one file per Kafka API, dispatch
    "publisher.rs",         # makes the services follow the metadata image
    "metrics/sample.rs",    # the scrape, which samples the coordinators
    "metrics/http.rs",
    "net/mod.rs",           # shards and client connections (net/peer, engine, transport
    "net/connection.rs",    # are below: outbound connections and the socket layer)
    "start.rs", "server.rs", "main.rs", "cli/", "testing.rs",
    "console/",             # the console's HTTP API: a Kafka client (cli/client) per request
)
MAX_LINES = 1500


def above(f):
    return any(f == a or (a.endswith("/") and f.startswith(a)) for a in ABOVE)


def check(crate, edges, fig):
    """The layering guard: what must stay true (run by broker/tests/layering.rs)."""
    problems = []
    for f in fig["files_naming_broker"]["files"]:
        if not above(f):
            problems.append(f"{f} names Broker, but it is below the handlers: take the Node "
                            "or the service it needs")
    for a in sorted(edges):
        if above(a):
            continue
        for b in sorted(edges[a]):
            if above(b):
                ln, what = edges[a][b][0]
                problems.append(f"{a}:{ln} depends on {b} ({what}), which is above it")
    for c in fig["cross_module_circles"]:
        problems.append("an import circle across top-level modules: " + ", ".join(c))
    for x in fig["largest_files"]["top"]:
        if x["lines"] > MAX_LINES:
            problems.append(f"{x['file']} has {x['lines']} lines (more than {MAX_LINES}): split it")
    return problems


def report(fig):
    p = print
    lc = fig["largest_circle"]
    p(f"broker/src: {fig['files']} files, {fig['edges']} file-level import edges")
    p()
    p(f"largest import circle      {lc['files']} files across {len(lc['modules'])} top-level modules"
      f"   (goal: {lc['goal']})")
    p("    " + ", ".join(f"{m} {n}" for m, n in lc["modules"].items()))
    c = fig["cross_module_sccs"]
    p(f"circles across 2+ modules  {c['count']} (sizes {c['sizes']})   (goal: {c['goal']})")
    p(f"all circles (2+ files)     sizes {fig['sccs_with_2_or_more_files']}")
    b = fig["files_naming_broker"]
    p(f"files naming Broker        {b['count']}   (goal: {b['goal']})")
    p(f"files importing Broker     {fig['files_importing_broker']['count']}  (by `use ...::Broker` of its file)")
    d = fig["files_depending_on_server"]
    p(f"files depending on Broker  {d['count']} of {d['of']}  (reaching the file that defines it)")
    bp = fig["broker_params_group_txn_share"]
    p(f"Broker params group/txn/share  {bp['count']}   (goal: {bp['goal']})")
    for f, n in bp["by_file"].items():
        p(f"    {n:4}  {f}")
    cb = fig["ctx_broker"]
    p(f"ctx.broker uses            {cb['count']} in {len(cb['by_file'])} files   (goal: {cb['goal']})")
    lf = fig["largest_files"]
    big = lf["top"][0]
    p(f"largest file               {big['lines']} lines, {big['file']}   (goal: {lf['goal']})")
    for x in lf["top"]:
        mark = "  over" if x["lines"] >= 1500 else ""
        p(f"    {x['lines']:5}  {x['file']}{mark}")


def why(edges, a, b):
    prev, todo = {a: None}, collections.deque([a])
    while todo:
        v = todo.popleft()
        if v == b:
            break
        for w in sorted(edges[v]):
            if w not in prev:
                prev[w] = v
                todo.append(w)
    if b not in prev:
        print(f"no import path from {a} to {b}")
        return 1
    path = [b]
    while prev[path[-1]] is not None:
        path.append(prev[path[-1]])
    path.reverse()
    print(" -> ".join(path))
    for x, y in zip(path, path[1:]):
        ev = edges[x][y]
        print(f"  {x} -> {y}")
        for line, what in ev[:4]:
            print(f"      {x}:{line}: {what}")
        if len(ev) > 4:
            print(f"      ... and {len(ev) - 4} more")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--circle", action="store_true")
    ap.add_argument("--why", nargs=2, metavar=("A", "B"))
    ap.add_argument("--cuts", nargs="?", const=15, type=int, metavar="N")
    ap.add_argument("--no-tests", action="store_true")
    ap.add_argument("--rev")
    ap.add_argument("--move", action="append", default=[], metavar="FILE:SYM[,SYM]=DEST",
                    help="simulate moving items before counting (repeatable, applied in order)")
    ap.add_argument("--check", action="store_true",
                    help="the layering guard: exit 1 and say why when a rule is broken")
    ap.add_argument("--use-only", action="store_true",
                    help="edges from `use` items only, not from paths in code")
    args = ap.parse_args()

    crate = Crate(read_sources(args.rev), args.no_tests)
    edges, importers = build_graph(crate, args.use_only)
    moves = []
    for mv in args.move:
        m = re.match(r"([^:=]+):([^=]+)=(.+)$", mv)
        if not m:
            sys.exit(f"--move wants FILE:SYM[,SYM]=DEST, not {mv}")
        moves.append((m.group(1).replace("broker/src/", ""), set(m.group(2).split(",")),
                      m.group(3).replace("broker/src/", "")))
    apply_moves(crate, edges, moves)

    def norm(f):
        f = f.replace("broker/src/", "")
        if f not in edges:
            sys.exit(f"unknown file {f} (name it relative to broker/src, e.g. group/mod.rs)")
        return f

    if args.why:
        return why(edges, norm(args.why[0]), norm(args.why[1]))
    fig = figures(crate, edges, importers)
    circle, adj = fig.pop("_circle"), fig.pop("_adj")
    if args.check:
        problems = check(crate, edges, fig)
        for pr in problems:
            print("layering: " + pr)
        if not problems:
            print(f"layering: ok ({fig['files']} files; largest circle {len(circle)} files, "
                  f"inside {', '.join(fig['largest_circle']['modules'])})")
        return 1 if problems else 0
    if args.cuts is not None:
        n_inner, single, greedy = cut_analysis(circle, adj, args.cuts, args.cuts)
        fig["cuts"] = {
            "edges_inside_circle": n_inner,
            "single": [{"from": a, "to": b, "shrinks_by": s,
                        "lines": [f"{a}:{ln}: {w}" for ln, w in edges[a][b][:3]]}
                       for s, (a, b) in single],
            "greedy": [{"from": a, "to": b, "circle_before": before, "circle_after": after,
                        "lines": [f"{a}:{ln}: {w}" for ln, w in edges[a][b][:3]]}
                       for before, after, (a, b) in greedy],
        }
    if args.circle:
        fig["circle_files"] = {m: [f for f in circle if top(f) == m]
                               for m in fig["largest_circle"]["modules"]}
    if args.json:
        json.dump(fig, sys.stdout, indent=2)
        print()
        return 0
    report(fig)
    if args.circle:
        print()
        print(f"largest circle, {len(circle)} files:")
        for m, fs in fig["circle_files"].items():
            print(f"  {m} ({len(fs)}): " + ", ".join(fs))
    if args.cuts is not None:
        cu = fig["cuts"]
        print()
        print(f"{cu['edges_inside_circle']} edges inside the largest circle; removing one alone shrinks it by:")
        for x in cu["single"]:
            print(f"  -{x['shrinks_by']:3}  {x['from']} -> {x['to']}")
            for ln in x["lines"]:
                print(f"          {ln}")
        print()
        print("greedy order (each step removes the edge that shrinks the remaining circle most):")
        for k, x in enumerate(cu["greedy"], 1):
            print(f"  {k:2}. {x['circle_before']:3} -> {x['circle_after']:3}  {x['from']} -> {x['to']}")
            for ln in x["lines"]:
                print(f"          {ln}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
