#!/usr/bin/env python3
"""One C++ namespace per library, matching its folder (issue 49, "One name per thing").

Before: base/, content/, coordination/, datapath/, formats/, topology/ and hal/ all declared their
names in `namespace hal`, and settings/ declared `Settings` in `namespace config` beside config/.
After: each library's names live in the namespace named as its folder (`base::Result`,
`formats::ImageStore`, `topology::match::...`, `settings::Settings`); `hal` is hal/'s alone and
`config` is config/'s alone. Sub-namespaces keep their last part (`hal::match` becomes
`topology::match`, `hal::le` `formats::le`, `hal::sysfs` `topology::sysfs`, `hal::lane_internal`
`datapath::lane_internal`).

Usage, from anywhere inside a checkout:   python3 scripts/dev/rename-namespaces.py [--no-format]

The lead replays it on any branch before merging that branch, so both sides carry the same edits:
- It is deterministic and idempotent: every step states what the tree must look like and edits only
  what differs, so a second run changes nothing, and a tree already renamed is left as it is.
- It reads the names each library declares from the tree it runs on (no fixed list to go stale): each
  `namespace hal {` / `namespace config {` block (or its renamed form) in a library's folder, its
  top-level declarations (classes, structs, enums, aliases, functions, variables, concepts,
  sub-namespaces; forward declarations do not make a library the owner). A file a branch added
  is scanned like any other.
- Files: what git lists (tracked and untracked-not-ignored) with a C/C++ or Markdown suffix, so
  nothing under .git or a build directory (ignored), and no third-party text (the repository holds
  none; `third_party/` and `debian/` would be skipped).

What it edits, per C/C++ file:
1. Each `namespace hal {` (or `hal::match {` ...) block: renamed after the library whose folder
   holds the file. A block of forward declarations only is renamed after the library owning the
   names it forward-declares (so `namespace hal { class RestoreChain; }` in a backend becomes
   `namespace formats { class RestoreChain; }`). Its `} // namespace hal` comment follows.
2. Qualified uses `hal::Name` / `::hal::Name` / `config::Name` in code and in comments (never in a
   string or character literal: no text the program writes changes) become `<owner>::Name`.
3. Unqualified cross-library uses, which compiled because every library was `hal`: the script adds
   using-declarations (`using base::Result;`) at the top of the block that uses the name, for each
   name another library owns that the file uses without a qualifier and can see (declared in a
   header the file includes, directly or not, or earlier in the file). Why using-declarations and
   not qualifying each use: a using-declaration gives every unqualified lookup in the block exactly
   the result it had when all the names shared `hal` (a local, a member or a parameter of the same
   name still hides it, as it did), so the script needs no knowledge of what each token means;
   qualifying each token would need that knowledge (a member called `read` or `Node` must not be
   qualified). Sub-namespace names used as qualifiers (`match::X` from hal/) are qualified in place
   (`topology::match::X`), since a namespace cannot be named by a using-declaration.
4. clang-format (14, the repository's .clang-format) on every C/C++ file it changed.
Markdown files get step 2, and the sentences of PROSE that described the old arrangement.

Hand edits after running it on main at 77a5109: none.
"""

import os
import re
import subprocess
import sys
from collections import defaultdict

FAMILIES = {
    "hal": ["base", "content", "coordination", "datapath", "formats", "topology", "hal"],
    "config": ["settings", "config"],
}
CODE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".c", ".inc")
DOC_SUFFIXES = (".md",)
SKIPPED_PREFIXES = ("third_party/", "debian/", "build")
THIS_SCRIPT = "scripts/dev/rename-namespaces.py"

# family member (old namespace or library) -> family's old namespace
FAMILY_OF = {m: old for old, members in FAMILIES.items() for m in members + [old]}


# ---------------------------------------------------------------------------------------------
# Lexer

TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\f\v]+|\\\n)
  | (?P<nl>\n)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<str>(?:u8|u|U|L)?R"(?P<delim>[^(\s"]*)\(.*?\)(?P=delim)"
           |(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*"
           |(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*')
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.']|'(?=\w))*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<punct>::|->|\.\.\.|[^\s])
    """,
    re.S | re.X,
)


class Tok:
    __slots__ = ("kind", "text", "start", "end", "pp")

    def __init__(self, kind, text, start, end, pp):
        self.kind, self.text, self.start, self.end, self.pp = kind, text, start, end, pp


def lex(text):
    """Tokens (no whitespace) with `pp` set inside preprocessor directives."""
    toks, pos, in_pp, line_start = [], 0, False, True
    while pos < len(text):
        m = TOKEN_RE.match(text, pos)
        if not m:
            raise ValueError(f"cannot lex at offset {pos}")
        kind = m.lastgroup
        if kind == "delim":
            kind = "str"
        s, e = m.start(), m.end()
        pos = e
        if kind == "ws":
            continue
        if kind == "nl":
            in_pp, line_start = False, True
            continue
        if line_start and kind == "punct" and m.group() == "#":
            in_pp = True
        if kind != "comment":
            line_start = False
        toks.append(Tok(kind, m.group(), s, e, in_pp))
    return toks


# ---------------------------------------------------------------------------------------------
# Structure: namespace blocks and their top-level declarations


class Block:
    def __init__(self, name, name_toks, open_tok, parent):
        self.name = name  # e.g. "hal" or "hal::match"
        self.name_toks = name_toks  # token indices of the name
        self.open_tok = open_tok  # index of "{"
        self.close_tok = None
        self.parent = parent
        self.decls = []  # (name, is_forward, kind) kind: "ns" | "other"
        self.forwards = []  # (name, first token, ";" token) of each forward declaration
        self.ns_tok = None  # index of the `namespace` keyword


def skip_balanced(toks, i, open_, close):
    depth = 0
    while i < len(toks):
        if toks[i] == open_:
            depth += 1
        elif toks[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def decl_of(stmt, ended_by):
    """(name, is_forward) of the namespace-scope declaration `stmt` (token texts), or None."""
    t = list(stmt)
    while t:
        if t[0] == "template" and len(t) > 1 and t[1] == "<":
            t = t[skip_balanced(t, 1, "<", ">"):]
        elif t[0] == "[" and len(t) > 1 and t[1] == "[":
            t = t[skip_balanced(t, 0, "[", "]"):]
        elif t[0] in ("inline", "constexpr", "consteval", "constinit", "static", "thread_local"):
            t = t[1:]
        elif t[0] == "extern" and len(t) > 1 and t[1].startswith('"'):
            return None
        else:
            break
    if not t or t[0] in ("static_assert", "friend", "namespace") or "operator" in t:
        return None
    if t[0] == "using":
        if len(t) >= 3 and t[2] == "=" and re.match(r"\w+$", t[1]):
            return (t[1], False)
        return None
    if t[0] == "typedef":
        ids = [x for x in t if re.match(r"[A-Za-z_]\w*$", x)]
        return (ids[-1], False) if ids else None
    if t[0] in ("class", "struct", "union", "enum"):
        j = 1
        if t[0] == "enum" and j < len(t) and t[j] in ("class", "struct"):
            j += 1
        while j < len(t) and t[j] == "[":
            j = skip_balanced(t, j, "[", "]")
        if j < len(t) and t[j] == "alignas":
            j = skip_balanced(t, j + 1, "(", ")")
        if j < len(t) and re.match(r"[A-Za-z_]\w*$", t[j]):
            name = t[j]
            rest = t[j + 1:]
            if ended_by == ";" and not rest:
                return (name, True)
            if rest and rest[0] == "::":
                return None
            if ended_by == "{" or (rest and rest[0] in (":", "final")):
                return (name, False)
            # `struct X* p;` and the like: a variable, not worth owning
            return None
        return None
    depth = 0
    t = t + [ended_by]
    for j, x in enumerate(t):
        if depth == 0 and x == "(" and t[j + 1:j + 2] in (["*"], ["&"]):
            # a pointer to function or array: `void (*hook)(int);`
            return (t[j + 2], False) if re.match(r"[A-Za-z_]\w*$", t[j + 2]) else None
        if depth == 0 and x in ("(", "[", "=", "{", ";"):
            prev = t[j - 1] if j >= 1 else None
            prev2 = t[j - 2] if j >= 2 else None
            if prev and re.match(r"[A-Za-z_]\w*$", prev) and prev2 != "::" and prev not in (
                    "const", "noexcept", "override", "final", "void", "auto"):
                return (prev, False)
            return None
        if x in ("<", "(", "["):
            depth += 1
        elif x in (">", ")", "]"):
            depth = max(0, depth - 1)
    return None


def structure(toks):
    """Family namespace blocks (outermost family namespaces and their top-level declarations)."""
    code = [i for i, t in enumerate(toks) if t.kind != "comment" and not t.pp]
    blocks = []
    stack = []  # frames: ("ns", Block|None) or ("brace", None)
    stmt = []
    stmt_first = None
    ending = False  # a braced part of a statement just closed
    k = 0

    def ns_frame():
        return stack and stack[-1][0] == "ns"

    def top_block():
        return stack[-1][1] if stack and stack[-1][0] == "ns" else None

    while k < len(code):
        i = code[k]
        tx = toks[i].text
        at_ns_scope = not stack or ns_frame()
        if ending and at_ns_scope:
            if tx in (",", "{", "(", ")", ".", "->", "=", ":", ";"):
                pass
            else:
                stmt = []
            ending = False
        if at_ns_scope and tx == "namespace" and not stmt:
            j = k + 1
            parts = []
            name_idx = []
            while j < len(code) and (toks[code[j]].kind == "id" or toks[code[j]].text == "::"):
                if toks[code[j]].kind == "id":
                    parts.append(toks[code[j]].text)
                name_idx.append(code[j])
                j += 1
            if j < len(code) and toks[code[j]].text == "{":
                name = "::".join(parts)
                parent = top_block()
                outer = next((f[1] for f in stack if f[0] == "ns" and f[1] is not None
                              and f[1].family_block), None)
                b = Block(name, name_idx, code[j], parent)
                b.ns_tok = i
                b.family_block = outer is None and bool(parts) and parts[0] in FAMILY_OF
                if parent is not None and parts:
                    parent.decls.append((parts[0], False, "ns"))
                if b.family_block:
                    blocks.append(b)
                stack.append(("ns", b))
                k = j + 1
                stmt = []
                continue
            # alias or using-directive: an ordinary statement
        if tx == "{":
            b = top_block()
            if at_ns_scope and b is not None and stmt:
                d = decl_of(stmt, "{")
                if d and not stmt_has_decl(stmt):
                    b.decls.append((d[0], d[1], "other"))
                stmt.append("\x00decl")
            stack.append(("brace", None))
        elif tx == "}":
            if stack:
                kind, b = stack.pop()
                if kind == "ns":
                    b.close_tok = i
                    stmt = []
                elif not stack or ns_frame():
                    ending = True
        elif at_ns_scope:
            if tx == ";":
                b = top_block()
                if b is not None and stmt and not stmt_has_decl(stmt):
                    d = decl_of(stmt, ";")
                    if d:
                        b.decls.append((d[0], d[1], "other"))
                        if d[1]:
                            b.forwards.append((d[0], stmt_first, i))
                stmt = []
            else:
                if not stmt:
                    stmt_first = i
                stmt.append(tx)
        k += 1
    return blocks


def stmt_has_decl(stmt):
    return "\x00decl" in stmt


# ---------------------------------------------------------------------------------------------
# Repository scan


def git_root():
    return subprocess.check_output(["git", "rev-parse", "--show-toplevel"], text=True).strip()


def listed_files():
    out = subprocess.check_output(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"])
    files = sorted({f for f in out.decode().split("\0") if f})
    return [f for f in files if os.path.isfile(f) and f != THIS_SCRIPT
            and not f.startswith(SKIPPED_PREFIXES) and not f.startswith(".git")
            and f.endswith(CODE_SUFFIXES + DOC_SUFFIXES)]


def lib_of_file(path):
    top = path.split("/", 1)[0]
    return top if top in FAMILY_OF else None


class Source:
    def __init__(self, path):
        self.path = path
        with open(path, encoding="utf-8") as f:
            self.text = f.read()
        self.toks = lex(self.text)
        self.blocks = structure(self.toks)
        self.includes = [m.group(1) for m in re.finditer(
            r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', self.text, re.M)]
        self.lib = lib_of_file(path)

    def family(self, block):
        return FAMILY_OF[block.name.split("::")[0]]


def build_table(sources):
    """owners[family][name] = set of libraries whose folder defines `name` in that family."""
    owners = defaultdict(lambda: defaultdict(set))
    for s in sources:
        if s.lib is None:
            continue
        for b in s.blocks:
            fam = s.family(b)
            if FAMILY_OF.get(s.lib) != fam:
                continue
            parts = b.name.split("::")
            if len(parts) > 1:
                owners[fam][parts[1]].add(s.lib)
                continue
            for name, forward, _ in b.decls:
                if not forward:
                    owners[fam][name].add(s.lib)
    return owners


def owner_of(owners, fam, name):
    libs = owners[fam].get(name)
    if not libs:
        return None
    if len(libs) > 1:
        raise SystemExit(f"rename-namespaces: {fam}::{name} is declared by several libraries: "
                         f"{sorted(libs)}; rename one of them first")
    return next(iter(libs))


def resolve_includes(sources):
    by_suffix = defaultdict(list)
    for s in sources:
        if s.path.endswith((".h", ".hpp", ".inc")):
            parts = s.path.split("/")
            for n in range(1, len(parts) + 1):
                by_suffix["/".join(parts[-n:])].append(s.path)
    graph = {}
    known = {s.path for s in sources}
    for s in sources:
        here = os.path.dirname(s.path)
        deps = []
        for inc in s.includes:
            local = os.path.normpath(os.path.join(here, inc))
            deps.extend([local] if local in known else by_suffix.get(inc, []))
        graph[s.path] = deps
    return graph


def closure(graph, path):
    seen, todo = set(), [path]
    while todo:
        p = todo.pop()
        for d in graph.get(p, []):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


# ---------------------------------------------------------------------------------------------
# Rewriting


def plan_block(s, b, owners):
    """(new name, forward declarations to move into a block of their owner's namespace)."""
    fam = s.family(b)
    parts = b.name.split("::")
    if len(parts) > 1:
        top = owner_of(owners, fam, parts[1]) or parts[0]
        return "::".join([top] + parts[1:]), []
    defined = {owner_of(owners, fam, n) for n, fwd, _ in b.decls if not fwd} - {None}
    forwards = [(owner_of(owners, fam, n), n, first, last) for n, first, last in b.forwards]
    forwards = [f for f in forwards if f[0] is not None]
    forward_owners = {f[0] for f in forwards}
    if not defined and len(forwards) == len(b.decls) and len(forward_owners) == 1:
        home = forwards[0][0]  # a block of forward declarations only, of one library's names
    elif s.lib is not None and FAMILY_OF.get(s.lib) == fam:
        home = s.lib
    elif defined:
        home = sorted(defined)[0]
    elif forwards:
        home = forwards[0][0]
    else:
        home = parts[0]
    if defined - {home}:
        raise SystemExit(f"rename-namespaces: {s.path}: a `namespace {b.name}` block defines "
                         f"names of {sorted(defined)}; split it by hand")
    return home, [f for f in forwards if f[0] != home]


# Prose that names the old arrangement, and what it says now (Markdown files; whitespace in the old
# text matches any run of blanks and line breaks, so a rewrapped paragraph still matches).
PROSE = [
    ("Every library of the HAL keeps the namespace `hal`.",
     "\nEach library's names are in the namespace named as its folder (`base::Result`,\n"
     "`formats::ImageStore`, `topology::match`, `settings::Settings`); `hal` is `hal/`'s alone."),
]


def rewrite_prose(text):
    for old, new in PROSE:
        pattern = r"\s+" + r"\s+".join(re.escape(w) for w in old.split())
        text = re.sub(pattern, lambda m: new, text)
    return text


QUALIFIED_IN_TEXT = re.compile(r"(?<![\w:])(::)?\b(hal|config)::(\w+)")


def rewrite_qualified_text(text, owners):
    def sub(m):
        fam, name = m.group(2), m.group(3)
        owner = owner_of(owners, fam, name)
        if owner is None or owner == fam:
            return m.group(0)
        return f"{m.group(1) or ''}{owner}::{name}"

    return QUALIFIED_IN_TEXT.sub(sub, text)


def declared_names_by_lib(s, owners, upto=None):
    """(lib, name) pairs declared (forward declarations included) in s's family blocks."""
    out = set()
    for b in s.blocks:
        if upto is not None and b.open_tok >= upto:
            continue
        fam = s.family(b)
        parts = b.name.split("::")
        if len(parts) > 1:
            continue
        for n, _, _ in b.decls:
            o = owner_of(owners, fam, n)
            if o is not None:
                out.add((fam, o, n))
    # sub-namespaces declared by `namespace hal::match {` blocks
    for b in s.blocks:
        parts = b.name.split("::")
        if len(parts) > 1:
            o = owner_of(owners, s.family(b), parts[1])
            if o:
                out.add((s.family(b), o, parts[1]))
    return out


def edit_source(s, owners, visible):
    toks, text = s.toks, s.text
    edits = []  # (start, end, replacement)
    block_new = {}
    moved_out = {}
    for b in s.blocks:
        new, moved = plan_block(s, b, owners)
        block_new[id(b)] = new
        moved_out[id(b)] = moved
        if moved:
            edits.extend(move_forwards(s, b, moved))
        start, end = toks[b.name_toks[0]].start, toks[b.name_toks[-1]].end
        if text[start:end] != new:
            edits.append((start, end, new))
        if b.close_tok is not None:
            line_end = text.find("\n", toks[b.close_tok].end)
            line_end = len(text) if line_end < 0 else line_end
            tail = text[toks[b.close_tok].end:line_end]
            m = re.match(r"(\s*//\s*namespace\s+)([\w:]+)\s*$", tail)
            if m and m.group(2) != new:
                s0 = toks[b.close_tok].end + m.start(2)
                edits.append((s0, s0 + len(m.group(2)), new))

    # qualified uses in code and comments
    n = len(toks)
    name_toks = {i for b in s.blocks for i in b.name_toks}
    for i, t in enumerate(toks):
        if i in name_toks:
            continue
        if t.kind == "comment":
            if re.match(r"//\s*namespace\s", t.text):
                continue
            new = rewrite_qualified_text(t.text, owners)
            if new != t.text:
                edits.append((t.start, t.end, new))
            continue
        if t.kind != "id" or t.text not in FAMILIES:
            continue
        if i + 2 >= n or toks[i + 1].text != "::" or toks[i + 2].kind != "id":
            continue
        if i > 0 and toks[i - 1].text == "::" and i > 1 and (
                toks[i - 2].kind == "id" or toks[i - 2].text == ">"):
            continue
        owner = owner_of(owners, t.text, toks[i + 2].text)
        if owner is None and s.lib is not None and FAMILY_OF.get(s.lib) == t.text:
            # a name of the file's own library the table does not hold (one in an anonymous
            # namespace, or made by a macro's ##): the file's library
            owner = s.lib
        if owner is None:
            UNKNOWN.add(f"{s.path}: {t.text}::{toks[i + 2].text}")
        if owner is not None and owner != t.text:
            edits.append((t.start, t.end, owner))

    # unqualified cross-library uses
    used_earlier = set()
    for b in s.blocks:
        if b.close_tok is None:
            continue
        fam = s.family(b)
        new = block_new[id(b)]
        my_lib = new.split("::")[0]
        if FAMILY_OF.get(my_lib) != fam:
            continue
        seen_here = visible | declared_names_by_lib(s, owners, upto=b.open_tok)
        seen_here |= {(fam, o, nm) for o, nm, _, _ in moved_out[id(b)]}
        existing = set()
        needed = set()
        i = b.open_tok + 1
        while i < b.close_tok:
            t = toks[i]
            if t.kind == "id" and t.text == "using" and not t.pp and i + 4 < n and \
                    toks[i + 2].text == "::" and toks[i + 4].text == ";":
                existing.add((toks[i + 1].text, toks[i + 3].text))
            if t.kind != "id" or t.pp:
                i += 1
                continue
            prev = toks[i - 1].text if i > 0 else ""
            if prev in ("::", ".", "->"):
                i += 1
                continue
            owner = owner_of(owners, fam, t.text)
            if owner is None or owner == my_lib:
                i += 1
                continue
            if (fam, owner, t.text) not in seen_here:
                i += 1
                continue
            nxt = toks[i + 1].text if i + 1 < n else ""
            if t.text in NS_NAMES[fam]:
                if nxt == "::":
                    edits.append((t.start, t.start, owner + "::"))
            else:
                needed.add((owner, t.text))
            i += 1
        needed -= existing
        needed -= used_earlier
        used_earlier |= needed | existing
        if needed:
            lines = "".join(f"using {o}::{nm};\n" for o, nm in sorted(needed))
            brace_end = toks[b.open_tok].end
            nl = text.find("\n", brace_end)
            nl = len(text) if nl < 0 else nl + 1
            after_blank = text[nl:nl + 1] == "\n"
            edits.append((nl, nl, "\n" + lines + ("" if after_blank else "\n")))
    return apply_edits(text, edits)


UNKNOWN = set()  # qualified uses of names no library of the family declares (reported)
NS_NAMES = defaultdict(set)  # family -> names that are sub-namespaces


def line_span(text, start, end):
    """[start, end) widened to whole lines when nothing else shares them."""
    ls = text.rfind("\n", 0, start) + 1
    le = text.find("\n", end)
    le = len(text) if le < 0 else le + 1
    if text[ls:start].strip() == "" and text[end:le].strip() == "":
        return ls, le
    return start, end


def move_forwards(s, b, moved):
    """Edits taking the forward declarations `moved` out of block b into blocks before it, one per
    owning library (`namespace datapath { class RestoreChain; }`)."""
    text, toks = s.text, s.toks
    edits, groups = [], defaultdict(list)
    for owner, _, first, last in moved:
        start, end = line_span(text, toks[first].start, toks[last].end)
        edits.append((start, end, ""))
        groups[owner].append(text[toks[first].start:toks[last].end])
    at = text.rfind("\n", 0, toks[b.ns_tok].start) + 1
    blocks = "".join(f"namespace {o} {{\n" + "".join(d + "\n" for d in decls) +
                     f"}} // namespace {o}\n\n" for o, decls in sorted(groups.items()))
    edits.append((at, at, blocks))
    return edits


def apply_edits(text, edits):
    edits = sorted(set(edits), key=lambda e: (e[0], e[1]))
    out, pos = [], 0
    for s0, e0, rep in edits:
        if s0 < pos:
            raise SystemExit(f"rename-namespaces: overlapping edits at {s0}")
        out.append(text[pos:s0])
        out.append(rep)
        pos = e0
    out.append(text[pos:])
    return "".join(out)


def main():
    os.chdir(git_root())
    fmt = "--no-format" not in sys.argv[1:]
    files = listed_files()
    code_files = [f for f in files if f.endswith(CODE_SUFFIXES)]
    doc_files = [f for f in files if f.endswith(DOC_SUFFIXES)]
    sources = [Source(f) for f in code_files]
    owners = build_table(sources)
    for s in sources:
        for b in s.blocks:
            parts = b.name.split("::")
            if len(parts) > 1:
                NS_NAMES[s.family(b)].add(parts[1])
            for nm, _, k in b.decls:
                if k == "ns":
                    NS_NAMES[s.family(b)].add(nm)
    graph = resolve_includes(sources)
    by_path = {s.path: s for s in sources}
    changed, results = [], {}
    for s in sources:
        visible = set()
        for dep in closure(graph, s.path):
            visible |= declared_names_by_lib(by_path[dep], owners)
        new = edit_source(s, owners, visible)
        if new != s.text:
            results[s.path] = new
    for path in doc_files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new = rewrite_prose(rewrite_qualified_text(text, owners))
        if new != text:
            results[path] = new
    for path, new in results.items():
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
        changed.append(path)
    to_format = [p for p in changed if p.endswith(CODE_SUFFIXES)]
    if fmt and to_format:
        clang_format = "clang-format-14" if subprocess.call(
            ["sh", "-c", "command -v clang-format-14 >/dev/null"]) == 0 else "clang-format"
        for i in range(0, len(to_format), 64):
            subprocess.check_call([clang_format, "-i", "--style=file"] + to_format[i:i + 64])
    for p in changed:
        print(p)
    for u in sorted(UNKNOWN):
        print(f"rename-namespaces: left as is (declared by no library): {u}", file=sys.stderr)
    print(f"rename-namespaces: {len(changed)} files changed", file=sys.stderr)


if __name__ == "__main__":
    main()
