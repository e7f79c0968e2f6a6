#!/usr/bin/env python3
"""Check the house rules of CONTRIBUTING.md that a machine can check.

    python3 scripts/check_rules.py [--root DIR] [--rule NAME]...

Rules (each prints one line, then what breaks it):

- `circles`: no file-level import circle in any crate target (lib, bins, tests, benches,
  examples; the `benches` crate's targets and fuzz/ included). An edge runs from a file to
  the file of the module a path names: `use crate::…`, `super::…`, `self::…`, a path that
  starts with a child module, and the same paths inline in code. A file's edge to one of its
  ancestors (a child module's `super::`, anything of the crate root) is not counted: the
  parent owns the child. Inline modules (`mod tests { … }`) belong to their file; `#[path]`
  is followed.
- `dates`: civil-date arithmetic lives in `codec::datetime` only: its marker constants
  (719 468, the days from 0000-03-01 to 1970-01-01, and 146 097, the days of a 400-year
  era) occur in exactly one file, crates/codec/src/datetime.rs.
- `long`: no Rust or Python file over 700 lines unless the allow-list says why.
- `units`: every `unit = "…"` line of benches/units.toml is under 200 characters (the prose
  goes to bench-history/notes/<group>.md).
- `links`: every relative Markdown link in the docs (`*.md` outside target/ and
  node_modules/) and every `docs/…`, `spec/…` or `*.md` path the Rust sources name in a
  comment names a file or folder that exists (`#anchor` parts aside).

Exceptions live in scripts/check_rules.allow, one a line, each with its reason after `: `:

    long <path>: <why this file is long>
    circle <path> <path> [<path>…]: <why, and which issue removes it>

An exception that no longer matches anything is itself an error (the list stays true).
Exit status 0 when every rule holds, 1 otherwise. Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import bisect
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
ALLOW_FILE = "scripts/check_rules.allow"
MAX_LINES = 700
MAX_UNIT_LINE = 200
DATE_OWNER = "crates/codec/src/datetime.rs"
DATE_MARKERS = (re.compile(r"\b719_?468\b"), re.compile(r"\b146_?097\b"))
SKIP_DIRS = {"target", "node_modules", ".git", "bench-artifacts"}
PACKAGE_GLOBS = ("crates/*", "benches", "fuzz")
RULES = ("circles", "dates", "long", "units", "links")


# --- source text -------------------------------------------------------------------------


def strip_rust(text: str) -> str:
    """`text` with comments, string and char literals blanked (newlines kept), so paths are
    only seen where they are code."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}'), not a lifetime ('a).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


# --- the module tree -------------------------------------------------------------------


@dataclass
class Module:
    path: tuple[str, ...]  # from the crate root
    file: Path
    children: dict[str, "Module"] = field(default_factory=dict)


@dataclass
class Crate:
    root: Path
    modules: dict[tuple[str, ...], Module] = field(default_factory=dict)

    def files(self) -> set[Path]:
        return {m.file for m in self.modules.values()}


MOD_DECL = re.compile(r"(?P<attrs>(?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(?P<name>r#)?(?P<ident>\w+)\s*(?P<end>[;{])")
PATH_ATTR = re.compile(r'#\[path\s*=\s*"(?P<path>[^"]+)"\s*\]')


def _child_dir(file: Path) -> Path:
    """The folder a file's `mod x;` children live in."""
    if file.name in ("mod.rs", "lib.rs", "main.rs"):
        return file.parent
    return file.parent / file.stem


def load_crate(root_file: Path) -> Crate:
    crate = Crate(root_file)
    _load_module(crate, (), root_file, is_root=True)
    return crate


def _load_module(crate: Crate, path: tuple[str, ...], file: Path, is_root: bool = False) -> None:
    if path in crate.modules or not file.is_file():
        return
    module = Module(path, file)
    crate.modules[path] = module
    raw = file.read_text(encoding="utf-8", errors="replace")
    code = strip_rust(raw)
    base = file.parent if is_root or file.name == "mod.rs" else _child_dir(file)
    # Inline modules: track `mod x {` nesting so a `mod y;` inside resolves under it.
    for inline_path, decl_file in _declared(code, raw, file, base, path):
        if decl_file is None:
            crate.modules.setdefault(inline_path, Module(inline_path, file))
        else:
            _load_module(crate, inline_path, decl_file)


def _declared(code: str, raw: str, file: Path, base: Path, path: tuple[str, ...]):
    """(module path, its file or None for an inline module) of each `mod` in the file."""
    stack: list[tuple[str, int]] = []  # (inline module name, brace depth at its `{`)
    depth = 0
    events = sorted(
        [(m.start(), "mod", m) for m in MOD_DECL.finditer(code)]
        + [(m.start(), m.group(0), None) for m in re.finditer(r"[{}]", code)]
    )
    skip_brace_at = -1
    for position, kind, match in events:
        if kind == "{":
            if position == skip_brace_at:
                continue
            depth += 1
        elif kind == "}":
            depth -= 1
            while stack and stack[-1][1] > depth:
                stack.pop()
        else:
            name = match.group("ident")
            inner = path + tuple(n for n, _ in stack) + (name,)
            if match.group("end") == "{":
                depth += 1
                stack.append((name, depth))
                skip_brace_at = match.end() - 1
                yield inner, None
                continue
            attrs = raw[match.start("attrs"):match.end("attrs")]
            explicit = PATH_ATTR.search(attrs)
            folder = base.joinpath(*(n for n, _ in stack))
            if explicit:
                yield inner, (file.parent.joinpath(*(n for n, _ in stack)) / explicit.group("path")).resolve()
            else:
                flat, nested = folder / f"{name}.rs", folder / name / "mod.rs"
                yield inner, (flat if flat.is_file() else nested)


# --- edges ---------------------------------------------------------------------------------


PATH_RE = re.compile(r"(?<![\w:])(?P<path>(?:crate|super|self|\w+)(?:\s*::\s*(?:super|\w+|\{))+)")
USE_RE = re.compile(r"\buse\s+(?P<tree>[^;]+);")


def _expand_use(tree: str) -> list[list[str]]:
    """`a::{b, c::{d, e}}` -> [[a, b], [a, c, d], [a, c, e]] (`self` in a group = the prefix)."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))

    def parse(s: str, prefix: list[str]) -> list[list[str]]:
        out: list[list[str]] = []
        parts, depth, start = [], 0, 0
        for i, c in enumerate(s):
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            elif c == "," and depth == 0:
                parts.append(s[start:i])
                start = i + 1
        parts.append(s[start:])
        for part in filter(None, parts):
            if "{" in part:
                head, _, rest = part.partition("{")
                segments = [x for x in head.split("::") if x]
                out += parse(rest[:-1] if rest.endswith("}") else rest, prefix + segments)
            else:
                segments = [x for x in part.split("::") if x]
                segments = [s for s in segments if s != "self"] if prefix else segments
                out.append(prefix + segments)
        return out

    return parse(tree, [])


def inline_spans(code: str) -> list[tuple[int, tuple[str, ...]]]:
    """(position, the inline modules open from there on), in order: where a `mod x {` opens
    or its `}` closes."""
    stack: list[tuple[str, int]] = []
    depth = 0
    out: list[tuple[int, tuple[str, ...]]] = [(0, ())]
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{|[{}]", code):
        token = m.group(0)
        if token == "}":
            depth -= 1
            if stack and stack[-1][1] > depth:
                while stack and stack[-1][1] > depth:
                    stack.pop()
                out.append((m.end(), tuple(n for n, _ in stack)))
        elif token == "{":
            depth += 1
        else:
            depth += 1
            stack.append((m.group(1), depth))
            out.append((m.end(), tuple(n for n, _ in stack)))
    return out


def _open_at(spans: list[tuple[int, tuple[str, ...]]], position: int) -> tuple[str, ...]:
    return spans[bisect.bisect_right([p for p, _ in spans], position) - 1][1]


def resolve(crate: Crate, here: tuple[str, ...], segments: list[str]) -> Path | None:
    """The file of the module a path names from module `here`, or None (an outside crate,
    a local item)."""
    if not segments:
        return None
    if segments[0] == "crate":
        absolute, rest = [], segments[1:]
    elif segments[0] in ("super", "self"):
        absolute, rest = list(here), segments
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                if not absolute:
                    return None
                absolute.pop()
            rest = rest[1:]
    elif tuple(here) + (segments[0],) in crate.modules:
        absolute, rest = list(here), segments
    else:
        return None
    target = tuple(absolute)
    for segment in rest:
        if target + (segment,) in crate.modules:
            target = target + (segment,)
        else:
            break
    return crate.modules[target].file


def edges(crate: Crate) -> dict[Path, set[Path]]:
    """file -> files it reaches, ancestors left out."""
    out: dict[Path, set[Path]] = {}
    by_file: dict[Path, tuple[str, ...]] = {}
    for module in crate.modules.values():
        if module.file not in by_file or len(module.path) < len(by_file[module.file]):
            by_file[module.file] = module.path
    for file, file_path in by_file.items():
        code = strip_rust(file.read_text(encoding="utf-8", errors="replace"))
        ancestors = {crate.modules[file_path[:k]].file for k in range(len(file_path)) if file_path[:k] in crate.modules}
        found: set[Path] = set()
        paths: list[tuple[int, list[str]]] = []
        for m in USE_RE.finditer(code):
            paths += [(m.start(), p) for p in _expand_use(m.group("tree"))]
        code_no_use = USE_RE.sub(lambda m: " " * len(m.group(0)), code)
        for m in PATH_RE.finditer(code_no_use):
            segments = [s for s in re.split(r"\s*::\s*", m.group("path")) if s and s != "{"]
            paths.append((m.start(), segments))
        spans = inline_spans(code)
        for position, segments in paths:
            here = file_path + _open_at(spans, position)
            target = resolve(crate, here, segments)
            if target is not None and target != file and target not in ancestors:
                found.add(target)
        out[file] = found
    return out


def cycles(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """The strongly connected components with more than one file (Tarjan), each sorted."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    result: list[list[Path]] = []
    counter = [0]

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return result


def crate_roots(root: Path) -> list[Path]:
    """Every target root file of the workspace's packages (and fuzz/)."""
    roots: set[Path] = set()
    for pattern in PACKAGE_GLOBS:
        for package in sorted(root.glob(pattern)):
            manifest = package / "Cargo.toml"
            if not manifest.is_file():
                continue
            candidates = [package / "src" / "lib.rs", package / "src" / "main.rs"]
            for folder in ("src/bin", "benches", "tests", "examples", "fuzz_targets"):
                candidates += sorted((package / folder).glob("*.rs")) + sorted((package / folder).glob("*/main.rs"))
            for line in manifest.read_text(encoding="utf-8").splitlines():
                m = re.match(r'\s*path\s*=\s*"([^"]+\.rs)"', line)
                if m:
                    candidates.append(package / m.group(1))
            roots.update(c.resolve() for c in candidates if c.is_file())
    return sorted(roots)


# --- the allow-list ---------------------------------------------------------------------------


@dataclass
class Allow:
    long: dict[str, str] = field(default_factory=dict)
    circles: dict[frozenset[str], str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def load_allow(path: Path) -> Allow:
    allow = Allow()
    if not path.is_file():
        return allow
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        head, sep, reason = line.partition(": ")
        words = head.split()
        if not sep or not reason.strip() or not words:
            allow.errors.append(f"{path.name}:{number}: no reason after ': '")
        elif words[0] == "long" and len(words) == 2:
            allow.long[words[1]] = reason
        elif words[0] == "circle" and len(words) >= 3:
            allow.circles[frozenset(words[1:])] = reason
        else:
            allow.errors.append(f"{path.name}:{number}: not `long PATH: why` or `circle PATH PATH…: why`")
    return allow


# --- the rules ------------------------------------------------------------------------------


def _rel(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _walk(root: Path, suffixes: tuple[str, ...]):
    for path in sorted(root.rglob("*")):
        if path.suffix in suffixes and path.is_file() and not SKIP_DIRS & set(path.relative_to(root).parts):
            yield path


def check_circles(root: Path, allow: Allow) -> tuple[list[str], list[str]]:
    """(problems, the circles found, allowed ones included)."""
    found: dict[frozenset[str], list[str]] = {}
    for root_file in crate_roots(root):
        crate = load_crate(root_file)
        for component in cycles(edges(crate)):
            names = [_rel(root, p) for p in component]
            found.setdefault(frozenset(names), names)
    problems, listed = [], []
    for key, names in sorted(found.items(), key=lambda kv: kv[1]):
        reason = allow.circles.get(key)
        listed.append(" <-> ".join(names) + (f" (allowed: {reason})" if reason else ""))
        if reason is None:
            problems.append("import circle: " + " <-> ".join(names))
    for key in allow.circles:
        if key not in found:
            problems.append(f"{ALLOW_FILE}: circle {' '.join(sorted(key))} is gone: remove its line")
    return problems, listed


def check_dates(root: Path) -> list[str]:
    problems = []
    for marker in DATE_MARKERS:
        holders = [_rel(root, p) for p in _walk(root, (".rs",)) if marker.search(strip_rust(p.read_text(encoding="utf-8", errors="replace")))]
        if holders != [DATE_OWNER]:
            others = [h for h in holders if h != DATE_OWNER]
            where = ", ".join(others) if others else f"not in {DATE_OWNER}"
            problems.append(f"civil-date arithmetic outside codec::datetime (marker {marker.pattern}): {where}")
    return problems


def check_long(root: Path, allow: Allow) -> list[str]:
    problems = []
    long_files = set()
    for path in _walk(root, (".rs", ".py")):
        lines = path.read_text(encoding="utf-8", errors="replace").count("\n")
        name = _rel(root, path)
        if lines > MAX_LINES:
            long_files.add(name)
            if name not in allow.long:
                problems.append(f"{name}: {lines} lines (over {MAX_LINES}): split it, or say why in {ALLOW_FILE}")
    for name in sorted(set(allow.long) - long_files):
        problems.append(f"{ALLOW_FILE}: long {name} is no longer over {MAX_LINES} lines (or gone): remove its line")
    return problems


def check_units(root: Path) -> list[str]:
    path = root / "benches" / "units.toml"
    if not path.is_file():
        return []
    problems = []
    group = "?"
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = re.match(r'\[groups\."([^"]+)"\]', line)
        if m:
            group = m.group(1)
        if line.startswith("unit =") and len(line) >= MAX_UNIT_LINE:
            problems.append(
                f"benches/units.toml:{number} ({group}): unit line of {len(line)} characters "
                f"(under {MAX_UNIT_LINE}; the prose goes to bench-history/notes/{group}.md)"
            )
    return problems


SPEC_PATH = re.compile(r"(?<![\w/.-])(?:\.\./)*(?:shared/)?spec/[\w-]+\.md")
MD_LINK = re.compile(r"\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_DOC_PATH = re.compile(r"(?<![\w/.-])(?P<path>(?:\.\./)*(?:docs|spec)/[\w./-]+\.md|[\w./-]*[\w-]+/[\w-]+\.md|(?:README|CONTRIBUTING)\.md)")


def _exists(base: Path, target: str, root: Path) -> bool:
    target = target.split("#", 1)[0]
    if not target:
        return True
    candidate = (base / target) if not target.startswith("/") else (root / target.lstrip("/"))
    return candidate.exists()


def check_links(root: Path) -> list[str]:
    problems = []
    for path in _walk(root, (".md",)):
        rel = _rel(root, path)
        text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8", errors="replace"), flags=re.S)
        for m in SPEC_PATH.finditer(text):
            problems.append(f"{rel}: `{m.group(0)}` is not in the repository: point at docs/design/")
        for m in MD_LINK.finditer(text):
            target = m.group("target")
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            if not (path.parent / target.split("#", 1)[0]).resolve().is_relative_to(root):
                problems.append(f"{rel}: link outside the repository: {target}")
            elif not _exists(path.parent, target, root):
                problems.append(f"{rel}: link to a missing file: {target}")
    for path in _walk(root, (".rs",)):
        rel = _rel(root, path)
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            comment = line.split("//", 1)
            if len(comment) < 2:
                continue
            for m in CODE_DOC_PATH.finditer(comment[1]):
                target = m.group("path").rstrip(".")
                if target.startswith("spec/"):
                    problems.append(f"{rel}:{number}: `{target}` is not in the repository: point at docs/design/")
                    continue
                if target.startswith("../") and not (path.parent / target).resolve().is_relative_to(root):
                    problems.append(f"{rel}:{number}: `{target}` is outside the repository: the project references only its own documents")
                    continue
                inside = [p for p in (path.parent, *path.parents) if p.resolve().is_relative_to(root)]
                if not any(_exists(base, target, root) for base in (root, *inside)):
                    problems.append(f"{rel}:{number}: names a missing document: {target}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="check_rules.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO_ROOT)
    parser.add_argument("--rule", action="append", choices=RULES, help="only these rules (default: all)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    root = args.root.resolve()
    allow = load_allow(root / ALLOW_FILE)
    failed = bool(allow.errors)
    for error in allow.errors:
        print(f"check_rules: {error}")
    for rule in args.rule or RULES:
        if rule == "circles":
            problems, listed = check_circles(root, allow)
            print(f"circles: {len(listed)} found, {len(problems)} not allowed")
            for line in listed:
                print(f"  {line}")
        else:
            problems = {
                "dates": lambda: check_dates(root),
                "long": lambda: check_long(root, allow),
                "units": lambda: check_units(root),
                "links": lambda: check_links(root),
            }[rule]()
            print(f"{rule}: {'ok' if not problems else f'{len(problems)} problem(s)'}")
        for problem in problems:
            print(f"  {problem}")
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
