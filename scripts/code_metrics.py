#!/usr/bin/env python3
"""Code metrics for kernelhub: the figures issue 22 (the re-cut) reports before and after.

Usage: scripts/code_metrics.py [ROOT] [--append FILE ...]

ROOT defaults to the repository this script is in. Prints a Markdown report on stdout;
each --append FILE (a hand-measured appendix, Markdown) is copied to the end of it.

What is measured, and how (the same rules at every commit, so the numbers compare):

Scope. Product code is every top-level folder holding .cpp/.hpp files except tests/, fuzz/,
bench/, examples/, cmake/ (build support: the generated version header), build*/ and hidden
folders, so a new folder such as util/ or variant/ is picked up by itself. tests/ is measured
apart. Only .cpp and .hpp files count. The C++ text is read with comments blanked out (line
numbers kept); the conditions are read with string contents blanked too.

1. Files over 300 lines (physical lines, as `wc -l` counts them), longest first.
2. The 15 longest product functions, by lizard (lines = end line - start line + 1; nloc =
   lizard's non-comment lines). lizard is imported if it is importable, else run from $LIZARD
   (the path of the `lizard` executable, e.g. /work/tools-venv/bin/lizard), else from PATH;
   without it the section says so and the other figures are still printed.
3. Places that turn text into a repo id (product): calls of `RepoId::parse`, and calls of
   every other function declared as returning Result<RepoId> / std::optional<RepoId> from a
   std::string / std::string_view (found by declaration, so a new parser is found too), and
   RepoId objects built from pieces with `RepoId{...}` outside trust/repo_id.cpp.
4. Checks of "exactly one of version / revision" (product). Three patterns, hits less than
   4 lines apart in one file count as one site:
   C  a condition: one statement (text between ; { }) with the identifiers `version` and
      `revision` (or has_version/has_revision) on the two sides of == or != (the
      `a.has_value() == b.has_value()` / `(x == end) == (y == end)` shape), or joined by &&
      (a "both given" test);
   M  a message: a string literal (adjacent literals joined) naming version and revision
      with "exactly one", "one of", "either" or "not both";
   X  a CLI11 declaration that the --version and --revision options exclude each other
      (`version->excludes(revision)`, `add_option("--revision", ...)->excludes(version)`):
      "at most one", counted apart from C/M.
5. switch statements whose case labels are `ErrorCode::...` (product), and the early
   returns of the shape `if (!x) return fail(x.error());` (also `{ return ...; }` braced and
   `std::move(x).error()`; not inside macros), with KH_TRY uses beside them.
6. Headers (.hpp) and `#include "..."` edges between top-level folders: a matrix of include
   lines, from the including file's folder (row) to the included file's folder (column),
   resolved against the tree (a `kernelhub/...` public header resolves to the folder that
   holds it; a header generated from a `.in` file to that file's folder). Edges that the
   module table of docs/architecture.md (d141383) does not allow, and pairs of folders that
   include each other, are listed as upward includes.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

EXTS = (".cpp", ".hpp")
NOT_PRODUCT = {"tests", "fuzz", "bench", "examples", "cmake"}
LONG_FILE = 300
TOP_FUNCTIONS = 15

# Which top-level folder may include which, from the module table of docs/architecture.md at
# d141383 (sub-modules folded into their folder: hub/server and kh_variant into hub,
# trust/sigstore into trust, cache/bundle into cache, client/cli|attention|parallel into
# client). A folder not named here (a new one) is reported as such, never as allowed.
DOCUMENTED_USES = {
    "trust": set(),
    "proto": {"trust"},
    "cache": {"trust"},
    "hub": {"cache", "trust"},
    "daemon": {"proto", "hub", "cache", "trust", "cmake"},
    "client": {"proto", "hub", "cache", "trust", "loader", "cmake"},
    "loader": {"trust", "hub"},
}

# The same table at module level (a module is a folder or the sub-folder that is its own
# target). A use of a module allows its sub-modules' headers too (cache allows cache/bundle);
# cmake/ (the generated version header) is allowed everywhere.
DOCUMENTED_MODULE_USES = {
    "trust": set(),
    "trust/sigstore": {"trust"},
    "proto": {"trust"},
    "cache": {"trust"},
    "cache/bundle": {"cache", "trust"},
    "hub": {"cache", "trust", "trust/sigstore"},
    "hub/server": {"trust"},
    "daemon": {"proto", "hub", "hub/server", "cache", "trust"},
    "client": {"proto", "hub", "cache", "trust"},
    "client/cli": {"client", "proto", "hub", "hub/server", "cache", "trust"},
    "loader": {"trust", "hub"},  # hub: the kh_variant files only
    "client/attention": {"client", "loader", "trust"},
    "client/parallel": {"client/attention"},
}


# The rooms the re-cut made, at their d141383 home, so that the module table of d141383 still
# judges their includes: util/ came out of trust/ (and cache/fs_util), variant/ out of hub/,
# http/ out of hub/server/, cli/ attention/ parallel/ out of client/.
RECUT_HOME = {
    "util": "trust",
    "variant": "hub",
    "fetch": "hub",  # hub::FetchRequest's room; proto converting it is a new edge
    "http": "hub/server",
    "cli": "client/cli",
    "attention": "client/attention",
    "parallel": "client/parallel",
}


def module_allowed(frm: str, to: str) -> str | None:
    """None when the d141383 module table allows `frm` to include `to`, else why not."""
    frm, to = RECUT_HOME.get(frm, frm), RECUT_HOME.get(to, to)
    if to == frm or to.split("/", 1)[0] == "cmake":
        return None
    if frm not in DOCUMENTED_MODULE_USES:
        return f"`{frm}` is not in the d141383 module table"
    if any(to == use or to.startswith(use + "/") for use in DOCUMENTED_MODULE_USES[frm]):
        return None
    return "not a documented use"


# ---------------------------------------------------------------------------------------------
# Reading C++ text


def blank(text: str, keep_strings: bool) -> str:
    """Comments (and, unless keep_strings, the contents of string and char literals) replaced
    by spaces; newlines kept so that offsets and line numbers stay the same."""
    out = list(text)
    i, n = 0, len(text)

    def wipe(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            while j < n and text[j - 1] == "\\":  # a // comment continued by a backslash
                k = text.find("\n", j + 1)
                j = n if k < 0 else k
            wipe(i, j)
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif c == '"':
            # Raw string: R"delim( ... )delim", with an optional u8/u/U/L prefix before R.
            if i > 0 and text[i - 1] == "R" and (i < 2 or not (text[i - 2].isalnum() and
                                                              text[i - 2] not in "u8UL")):
                paren = text.find("(", i + 1)
                delim = text[i + 1:paren]
                end = text.find(")" + delim + '"', paren)
                end = n if end < 0 else end + len(delim) + 2
                if not keep_strings:
                    wipe(i + 1, end - 1)
                i = end
                continue
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if not keep_strings:
                wipe(i + 1, j)
            i = j + 1
        elif c == "'":
            # A digit separator (1'000'000) is not a char literal.
            k = i - 1
            while k >= 0 and (text[k].isalnum() or text[k] in "_."):
                k -= 1
            token = text[k + 1:i]
            if token and token[0].isdigit():
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if not keep_strings:
                wipe(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


@dataclass
class Source:
    rel: str  # path relative to ROOT, with /
    text: str
    code: str = ""  # comments blanked
    bare: str = ""  # comments and literal contents blanked
    starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.code = blank(self.text, keep_strings=True)
        self.bare = blank(self.text, keep_strings=False)
        self.starts = [0] + [m.end() for m in re.finditer("\n", self.text)]

    @property
    def folder(self) -> str:
        return self.rel.split("/", 1)[0]

    @property
    def lines(self) -> int:
        return self.text.count("\n") + (0 if self.text.endswith("\n") or not self.text else 1)

    def line_of(self, offset: int) -> int:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def line_text(self, line: int) -> str:
        a = self.starts[line - 1]
        b = self.text.find("\n", a)
        return self.text[a:b if b >= 0 else None].strip()

    def in_preprocessor(self, offset: int) -> bool:
        line = self.line_of(offset)
        while line > 1 and self.line_text(line - 1).endswith("\\"):
            line -= 1
        return self.line_text(line).startswith("#")


def balanced(text: str, open_at: int, open_ch: str = "(", close_ch: str = ")") -> int:
    """Offset just past the bracket that closes the one at open_at (len(text) if none)."""
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == open_ch:
            depth += 1
        elif text[k] == close_ch:
            depth -= 1
            if depth == 0:
                return k + 1
    return len(text)


def squash(s: str, limit: int = 90) -> str:
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------
# Collecting the files


def collect(root: Path) -> tuple[list[Source], list[Source], list[str]]:
    product: list[Source] = []
    tests: list[Source] = []
    folders: list[str] = []
    for top in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        name = top.name
        if name.startswith(".") or name.startswith("build"):
            continue
        files = []
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and
                                 not os.path.islink(os.path.join(dirpath, d)))
            for f in sorted(filenames):
                if f.endswith(EXTS):
                    files.append(Path(dirpath) / f)
        if not files:
            continue
        if name in NOT_PRODUCT and name != "tests":
            continue
        sources = [Source(p.relative_to(root).as_posix(),
                          p.read_text(encoding="utf-8", errors="replace")) for p in files]
        if name == "tests":
            tests.extend(sources)
        else:
            folders.append(name)
            product.extend(sources)
    return product, tests, folders


# ---------------------------------------------------------------------------------------------
# 1. Long files


def long_files(sources: list[Source]) -> list[tuple[str, int]]:
    rows = [(s.rel, s.lines) for s in sources if s.lines > LONG_FILE]
    return sorted(rows, key=lambda r: (-r[1], r[0]))


# ---------------------------------------------------------------------------------------------
# 2. Long functions (lizard)


@dataclass
class Function:
    rel: str
    line: int
    name: str
    length: int
    nloc: int


def short_name(name: str) -> str:
    return name[len("kernelhub::"):] if name.startswith("kernelhub::") else name


def functions(root: Path, sources: list[Source]) -> tuple[list[Function] | None, str]:
    paths = [str(root / s.rel) for s in sources]
    try:
        import lizard  # type: ignore

        out = []
        for p in paths:
            info = lizard.analyze_file(p)
            rel = Path(p).relative_to(root).as_posix()
            for f in info.function_list:
                out.append(Function(rel, f.start_line, short_name(f.name),
                                    f.end_line - f.start_line + 1, f.nloc))
        return out, f"lizard {getattr(lizard, 'version', '')} (imported)".replace("  ", " ")
    except ImportError:
        pass
    exe = os.environ.get("LIZARD") or shutil.which("lizard")
    if not exe or not os.access(exe, os.X_OK):
        why = ("$LIZARD is " + repr(os.environ["LIZARD"]) + ", not an executable"
               if os.environ.get("LIZARD") else "lizard is not importable, $LIZARD is unset "
               "and no lizard is on PATH")
        return None, why
    out = []
    for k in range(0, len(paths), 200):
        proc = subprocess.run([exe, "--csv", *paths[k:k + 200]], capture_output=True,
                              text=True, check=False)
        if proc.returncode not in (0, 1):
            return None, f"{exe} failed ({proc.returncode}): {proc.stderr.strip()[:200]}"
        # NLOC,CCN,token,PARAM,length,location,file,function,long_name,start,end
        for row in csv.reader(io.StringIO(proc.stdout)):
            if len(row) < 11 or not row[0].isdigit():
                continue
            rel = Path(row[6]).resolve().relative_to(root.resolve()).as_posix()
            start, end = int(row[9]), int(row[10])
            out.append(Function(rel, start, short_name(row[7]), end - start + 1, int(row[0])))
    version = subprocess.run([exe, "--version"], capture_output=True, text=True,
                             check=False).stdout.strip()
    return out, f"lizard {version} ({exe})"


# ---------------------------------------------------------------------------------------------
# 3. Repo-id parsing


PARSER_DECL = re.compile(
    r"(?:Result|std::optional|optional)\s*<\s*(?:(?:kernelhub::)?trust::)?RepoId\s*>\s+"
    r"((?:\w+::)*\w+)\s*\(\s*(?:const\s+)?std::string(?:_view)?\b")
REPO_PARSE = re.compile(r"\bRepoId::parse\s*\(")
REPO_BUILT = re.compile(r"(?<!struct )(?<!class )\bRepoId\s*(?:\w+\s*)?\{\s*[^}\s]")


@dataclass
class Site:
    rel: str
    line: int
    what: str
    detail: str = ""


def repo_id_sites(sources: list[Source]) -> tuple[list[Site], list[str]]:
    parsers: set[str] = set()
    for s in sources:
        for m in PARSER_DECL.finditer(s.code):
            name = m.group(1).split("::")[-1]
            if name != "parse":
                parsers.add(name)
    sites: list[Site] = []
    for s in sources:
        decl_lines = {s.line_of(m.start()) for m in PARSER_DECL.finditer(s.code)}
        for m in REPO_PARSE.finditer(s.code):
            if re.search(r"RepoId\s*>\s*(?:\w+::)*$", s.code[max(0, m.start() - 60):m.start()]):
                continue  # the definition
            end = balanced(s.code, m.end() - 1)
            sites.append(Site(s.rel, s.line_of(m.start()), "RepoId::parse",
                              squash(s.code[m.end():end - 1], 60)))
        for name in sorted(parsers):
            for m in re.finditer(r"\b" + re.escape(name) + r"\s*\(", s.code):
                line = s.line_of(m.start())
                if line in decl_lines:
                    continue
                end = balanced(s.code, m.end() - 1)
                sites.append(Site(s.rel, line, name, squash(s.code[m.end():end - 1], 60)))
        if s.rel != "trust/repo_id.cpp":
            for m in REPO_BUILT.finditer(s.code):
                sites.append(Site(s.rel, s.line_of(m.start()), "RepoId{...}",
                                  squash(s.line_text(s.line_of(m.start())), 60)))
    sites.sort(key=lambda x: (x.rel, x.line))
    return sites, sorted(parsers)


# ---------------------------------------------------------------------------------------------
# 4. "Exactly one of version / revision"

V = r"\b(?:has_)?version\b"
R = r"\b(?:has_)?revision\b"
COND_EQ = re.compile(rf"{V}[^;{{}}&|]*[!=]=[^;{{}}&|]*{R}|{R}[^;{{}}&|]*[!=]=[^;{{}}&|]*{V}")
COND_BOTH = re.compile(rf"{V}\s*(?:\.has_value\(\s*\))?\s*&&\s*[\w.>-]*?{R}"
                       rf"|{R}\s*(?:\.has_value\(\s*\))?\s*&&\s*[\w.>-]*?{V}")
MSG_WORDS = re.compile(r"exactly one|one of|either|not both", re.I)
LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"(?:\s*"(?:[^"\\\n]|\\.)*")*')
EXCLUDES = re.compile(r"excludes\s*\(\s*(version|revision)\s*\)")


def statements(text: str):
    start = 0
    for m in re.finditer(r"[;{}]", text):
        yield start, text[start:m.start()]
        start = m.end()
    yield start, text[start:]


def version_revision_sites(sources: list[Source]) -> list[Site]:
    raw: list[Site] = []
    for s in sources:
        for start, stmt in statements(s.bare):
            for m in (COND_EQ.search(stmt), COND_BOTH.search(stmt)):
                if m:
                    raw.append(Site(s.rel, s.line_of(start + m.start()), "C",
                                    squash(s.code[start + m.start():start + m.end()], 70)))
                    break
        for m in LITERAL.finditer(s.code):
            lit = m.group(0)
            if (re.search(r"\bversion\b", lit, re.I) and re.search(r"\brevision\b", lit, re.I)
                    and MSG_WORDS.search(lit)):
                raw.append(Site(s.rel, s.line_of(m.start()), "M", squash(lit, 70)))
        for start, stmt in statements(s.code):
            found = {x.group(1) for x in EXCLUDES.finditer(stmt)}
            if len(found) != 1:
                continue  # none, or an option that excludes both (e.g. --lockfile)
            other = "revision" if found == {"version"} else "version"
            if re.search(rf'(?:^|\W){other}\s*->\s*excludes|"--{other}"', stmt.strip()):
                raw.append(Site(s.rel, s.line_of(start + len(stmt) - len(stmt.lstrip())), "X",
                                squash(stmt, 70)))
    raw.sort(key=lambda x: (x.rel, x.line))
    merged: list[Site] = []
    for hit in raw:
        last = merged[-1] if merged else None
        if (last and last.rel == hit.rel and hit.line - last.line <= 3
                and (hit.what == "X") == (last.what == "X")):
            last.what = "".join(sorted(set(last.what + hit.what)))
            if hit.detail not in last.detail:
                last.detail += " / " + hit.detail
            continue
        merged.append(Site(hit.rel, hit.line, hit.what, hit.detail))
    return merged


# ---------------------------------------------------------------------------------------------
# 5. ErrorCode switches and early returns

EARLY = re.compile(
    r"\bif\s*\(\s*!\s*(\w+)\s*\)\s*(\{\s*)?return\s+(?:::)?(?:kernelhub::)?fail\s*\(\s*"
    r"(?:std::move\s*\(\s*\1\s*\)|\1)\s*\.\s*error\s*\(\s*\)\s*\)\s*;")


def error_code_switches(sources: list[Source]) -> list[Site]:
    out = []
    for s in sources:
        for m in re.finditer(r"\bswitch\s*\(", s.bare):
            close = balanced(s.bare, m.end() - 1)
            body_at = s.bare.find("{", close)
            if body_at < 0:
                continue
            body = s.bare[body_at:balanced(s.bare, body_at, "{", "}")]
            if re.search(r"\bcase\s+(?:[\w:]*::)?ErrorCode::", body):
                out.append(Site(s.rel, s.line_of(m.start()), "switch",
                                squash(s.bare[m.end():close - 1], 40)))
    return out


def early_returns(sources: list[Source]) -> tuple[list[Site], int]:
    out, tries = [], 0
    for s in sources:
        for m in EARLY.finditer(s.bare):
            if s.in_preprocessor(m.start()):
                continue
            if m.group(2) and not re.match(r"\s*\}", s.bare[m.end():]):
                continue  # braced, with more in the block
            out.append(Site(s.rel, s.line_of(m.start()), "early", m.group(1)))
        tries += sum(1 for m in re.finditer(r"\bKH_TRY\s*\(", s.bare)
                     if not s.in_preprocessor(m.start()))
    return out, tries


# ---------------------------------------------------------------------------------------------
# 6. Headers and includes

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


class Resolver:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.by_suffix: dict[str, set[str]] = defaultdict(set)
        self.tops = {p.name for p in root.iterdir() if p.is_dir()}
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and
                           not d.startswith("build") and
                           not os.path.islink(os.path.join(dirpath, d))]
            for f in filenames:
                rel = (Path(dirpath) / f).relative_to(root).as_posix()
                parts = rel.split("/")
                for k in range(len(parts)):
                    self.by_suffix["/".join(parts[k:])].add(rel)

    def resolve(self, including: str, inc: str) -> str | None:
        """The path (relative to ROOT) of the file an include names; None if not found or
        ambiguous."""
        first = inc.split("/", 1)[0]
        if "/" in inc and first in self.tops and (self.root / inc).is_file():
            return inc
        local = (Path(including).parent / inc).as_posix()
        if (self.root / local).is_file():
            return os.path.normpath(local)
        for name in (inc, inc + ".in"):
            owners = self.by_suffix.get(name)
            if owners and len(owners) == 1:
                return next(iter(owners))
            if owners:
                return None
        return None


def module_of(rel: str) -> str:
    """`folder/sub` for a file in a sub-folder, `folder` for a file at the folder's top; a public
    header (`<module>/include/kernelhub/...`) belongs to `<module>`."""
    parts = rel.split("/")
    if "include" in parts:
        parts = parts[: parts.index("include")] + ["x"]
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def include_edges(root: Path, sources: list[Source]):
    resolver = Resolver(root)
    edges: Counter = Counter()
    where: dict[tuple[str, str], list[str]] = defaultdict(list)
    modules: Counter = Counter()
    unresolved: Counter = Counter()
    for s in sources:
        for m in INCLUDE.finditer(s.code):
            inc = m.group(1)
            target = resolver.resolve(s.rel, inc)
            if target is None:
                unresolved[inc] += 1
                continue
            to = target.split("/", 1)[0]
            edges[(s.folder, to)] += 1
            where[(s.folder, to)].append(f"{s.rel}:{s.line_of(m.start())} \u2192 {inc}")
            if module_of(s.rel) != module_of(target):
                modules[(module_of(s.rel), module_of(target))] += 1
    return edges, where, modules, unresolved


# ---------------------------------------------------------------------------------------------
# The report


def git_head(root: Path) -> str:
    proc = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%h %s"],
                          capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else "(not a git checkout)"


def table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def report(root: Path) -> str:
    product, tests, folders = collect(root)
    L: list[str] = []
    head = git_head(root)
    L.append(f"# Code metrics: {head.split(' ', 1)[0]}")
    L.append("")
    L.append(f"Measured by `scripts/code_metrics.py` in `{root}` at `{head[:100]}`.")
    L.append(f"Product folders: {', '.join(f'`{f}/`' for f in folders)} "
             f"({len(product)} files); tests: `tests/` ({len(tests)} files). "
             "Only .cpp/.hpp files; the rules are in the script's header comment.")
    L.append("")

    lf_p, lf_t = long_files(product), long_files(tests)
    funcs, lizard_note = functions(root, product)
    repo_sites, parsers = repo_id_sites(product)
    vr = version_revision_sites(product)
    vr_checks = [x for x in vr if "X" not in x.what]
    vr_excl = [x for x in vr if "X" in x.what]
    switches = error_code_switches(product)
    early, tries = early_returns(product)
    early_t, tries_t = early_returns(tests)
    edges, where, modules, unresolved = include_edges(root, product)
    headers_p = sum(1 for s in product if s.rel.endswith(".hpp"))
    headers_t = sum(1 for s in tests if s.rel.endswith(".hpp"))
    cross = {k: v for k, v in edges.items() if k[0] != k[1]}
    upward = []
    for (a, b), n in sorted(cross.items()):
        home_a, home_b = (RECUT_HOME.get(x, x).split("/")[0] for x in (a, b))
        if home_a == home_b:
            continue  # both out of one d141383 folder (util and trust, cli and client)
        if home_a not in DOCUMENTED_USES:
            upward.append((a, b, n, f"`{a}/` is not in the d141383 module table"))
        elif home_b not in DOCUMENTED_USES[home_a]:
            upward.append((a, b, n, "not a documented use"))
    mutual = sorted({tuple(sorted(k)) for k in cross if (k[1], k[0]) in cross})
    lines_p = sum(s.lines for s in product)
    lines_t = sum(s.lines for s in tests)
    by_parser = Counter(x.what for x in repo_sites)

    L.append("## Headline")
    L.append("")
    rows = [
        ["product files / lines", f"{len(product)} / {lines_p}"],
        ["tests files / lines", f"{len(tests)} / {lines_t}"],
        [f"product files over {LONG_FILE} lines", len(lf_p)],
        [f"tests files over {LONG_FILE} lines", len(lf_t)],
        ["longest product function (lines)",
         f"{max(f.length for f in funcs)}" if funcs else "n/a (no lizard)"],
        ["product functions over 60 / 100 lines",
         f"{sum(f.length > 60 for f in funcs)} / {sum(f.length > 100 for f in funcs)}"
         if funcs else "n/a"],
        ["places that turn text into a repo id",
         f"{len(repo_sites)} (" + ", ".join(f"{k} {v}" for k, v in sorted(by_parser.items()))
         + ")"],
        ["'exactly one of version/revision' checks (C/M)", len(vr_checks)],
        ["  ...plus CLI11 'excludes' declarations (X)", len(vr_excl)],
        ["switches over ErrorCode", len(switches)],
        ["`if (!x) return fail(x.error());` early returns (product / tests)",
         f"{len(early)} / {len(early_t)}"],
        ["KH_TRY uses (product / tests)", f"{tries} / {tries_t}"],
        ["headers (.hpp), product / tests", f"{headers_p} / {headers_t}"],
        ["#include edges between product folders (lines / folder pairs)",
         f"{sum(cross.values())} / {len(cross)}"],
        ["upward includes (undocumented folder edges / mutual pairs)",
         f"{sum(n for _, _, n, _ in upward)} / {len(mutual)}"],
        ["include lines across modules not in the module table (lines / module pairs)",
         f"{sum(n for k, n in modules.items() if module_allowed(*k))} / "
         f"{sum(1 for k in modules if module_allowed(*k))}"],
    ]
    L += table(["figure", "value"], rows)
    L.append("")

    L.append(f"## 1. Files over {LONG_FILE} lines")
    L.append("")
    for title, rows_ in (("Product", lf_p), ("Tests", lf_t)):
        L.append(f"**{title}: {len(rows_)}.**")
        L.append("")
        if rows_:
            L += table(["lines", "file"], [[n, f"`{r}`"] for r, n in rows_])
            L.append("")

    L.append(f"## 2. The {TOP_FUNCTIONS} longest product functions")
    L.append("")
    if funcs is None:
        L.append(f"**Not measured: {lizard_note}.** Install it (`python3 -m venv "
                 "/work/tools-venv && /work/tools-venv/bin/pip install lizard`) and run with "
                 "`LIZARD=/work/tools-venv/bin/lizard`.")
        print(f"code_metrics.py: lizard missing: {lizard_note}", file=sys.stderr)
    else:
        L.append(f"By {lizard_note}; {len(funcs)} functions. Lines = end - start + 1 (a "
                 "lambda counts as part of the function that holds it).")
        L.append("")
        top = sorted(funcs, key=lambda f: (-f.length, f.rel, f.line))[:TOP_FUNCTIONS]
        L += table(["lines", "nloc", "where", "function"],
                   [[f.length, f.nloc, f"`{f.rel}:{f.line}`", f"`{f.name}`"] for f in top])
    L.append("")

    L.append("## 3. Places that turn text into a repo id (product)")
    L.append("")
    L.append("Parsers found by declaration (besides `RepoId::parse`): "
             + (", ".join(f"`{p}`" for p in parsers) or "none") + ". A wrapper's own call "
             "of `RepoId::parse` is one of the places.")
    L.append("")
    L += table(["#", "where", "by", "argument"],
               [[k + 1, f"`{x.rel}:{x.line}`", f"`{x.what}`", f"`{x.detail}`"]
                for k, x in enumerate(repo_sites)])
    L.append("")

    L.append("## 4. 'Exactly one of version / revision' (product)")
    L.append("")
    L.append("Patterns (see the header comment): **C** a condition with `version` and "
             "`revision` on the two sides of `==`/`!=` or joined by `&&`; **M** a message "
             "literal naming both with 'exactly one'/'one of'/'either'/'not both'; **X** a "
             "CLI11 `excludes` between the --version and --revision options (at most one, "
             "counted apart). Hits less than 4 lines apart in one file are one site.")
    L.append("")
    L.append(f"**Checks (C/M): {len(vr_checks)}.**")
    L.append("")
    L += table(["#", "where", "kind", "text"],
               [[k + 1, f"`{x.rel}:{x.line}`", x.what, f"`{x.detail}`"]
                for k, x in enumerate(vr_checks)])
    L.append("")
    L.append(f"**CLI11 declarations (X): {len(vr_excl)}.**")
    L.append("")
    L += table(["#", "where", "text"],
               [[k + 1, f"`{x.rel}:{x.line}`", f"`{x.detail}`"] for k, x in enumerate(vr_excl)])
    L.append("")

    L.append("## 5. Error handling (product)")
    L.append("")
    L.append(f"**Switches over ErrorCode: {len(switches)}** (a `switch` whose body has "
             "`case ErrorCode::...` labels).")
    L.append("")
    L += table(["where", "subject"], [[f"`{x.rel}:{x.line}`", f"`{x.detail}`"]
                                      for x in switches])
    L.append("")
    per_folder = Counter(x.rel.split("/", 1)[0] for x in early)
    L.append(f"**`if (!x) return fail(x.error());` early returns: {len(early)}** "
             "(one-line or braced, `std::move(x).error()` too; macro bodies not counted); "
             f"tests: {len(early_t)}. KH_TRY uses: {tries} (tests {tries_t}).")
    L.append("")
    L += table(["folder", "early returns"], [[f"`{f}/`", n]
                                             for f, n in sorted(per_folder.items())])
    L.append("")

    L.append("## 6. Headers and includes between folders (product)")
    L.append("")
    L.append(f"Headers: {headers_p} product, {headers_t} tests. Include lines from the row's "
             "folder to the column's folder (the diagonal is within a folder):")
    L.append("")
    cols = sorted({b for _, b in edges} | set(folders))
    L += table(["from \\ to"] + [f"`{c}`" for c in cols],
               [[f"`{a}`"] + [edges.get((a, b), "") or "." for b in cols] for a in folders])
    L.append("")
    L.append(f"**Upward includes: {sum(n for _, _, n, _ in upward)} include lines over "
             f"{len(upward)} folder edges not in the d141383 module table; {len(mutual)} "
             "pairs of folders that include each other.**")
    L.append("")
    if upward:
        L += table(["from", "to", "lines", "why", "first sites"],
                   [[f"`{a}`", f"`{b}`", n, why,
                     "<br>".join(f"`{w}`" for w in where[(a, b)][:4])]
                    for a, b, n, why in upward])
        L.append("")
    if mutual:
        L.append("Mutual: " + ", ".join(f"`{a}` \u2194 `{b}`" for a, b in mutual))
        L.append("")
    L.append("Between modules (a file in a sub-folder belongs to `folder/sub`), include "
             "lines across modules, each checked against the d141383 module table (a use of "
             "a module allows its sub-modules; `cmake` is the generated version header):")
    L.append("")
    L += table(["from", "to", "lines", "module table"],
               [[f"`{a}`", f"`{b}`", n, module_allowed(a, b) or "allowed"]
                for (a, b), n in sorted(modules.items())])
    L.append("")
    if unresolved:
        L.append("Not resolved in the tree (generated or outside headers): "
                 + ", ".join(f"`{k}` ({v})" for k, v in sorted(unresolved.items())))
        L.append("")
    return "\n".join(L)


def main() -> int:
    here = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("root", nargs="?", default=str(here),
                    help="repository root (default: %(default)s)")
    ap.add_argument("--append", action="append", default=[], metavar="FILE",
                    help="a Markdown file to copy to the end of the report (repeatable)")
    args = ap.parse_args()
    root = Path(args.root).resolve()
    if not root.is_dir():
        print(f"code_metrics.py: {root} is not a folder", file=sys.stderr)
        return 2
    text = report(root)
    for extra in args.append:
        text += "\n" + Path(extra).read_text(encoding="utf-8").rstrip("\n") + "\n"
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
