"""No product function over ~120 lines (issue #39): every Python function of python/f46 and every
C++/CUDA function of src/, include/ and bindings/ is short enough to read on one screen or two."""

from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIMIT = 125  # "about 120"
CXX = (".h", ".cpp", ".cu", ".cuh")


def _python_lengths():
    for path in sorted((ROOT / "python" / "f46").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield (
                    f"{path.relative_to(ROOT)}:{node.lineno} {node.name}",
                    (node.end_lineno - node.lineno + 1),
                )


def _strip(text: str) -> str:
    """Comments and string literals blanked, line breaks kept."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"([^"\\\n]|\\.)*"', '""', text)


def cxx_function_lengths(text: str):
    """(line, name, length) of each outermost function body of C++ source `text`: a '{' whose
    header (the text since the last ';', '{' or '}') ends in ')' (or ') const' ...) and is not
    a control statement, class, struct, namespace, enum or lambda capture."""
    depth, header, line, start = 0, "", 1, None
    fn_depth = name = None
    for ch in _strip(text):
        if ch == "\n":
            line += 1
        if ch == "{":
            h = header.strip()
            if (
                fn_depth is None
                and re.search(r"\)\s*(const|noexcept|override|mutable|->\s*[\w:<>, ]+)*\s*$", h)
                and not re.match(r"(if|for|while|switch|catch)\b", h)
                and not re.search(r"\b(class|struct|namespace|enum|union)\b|\[[^\]]*\]\s*\(", h)
            ):
                fn_depth, start = depth, line
                names = re.findall(r"([\w:~]+)\s*\(", h)
                name = names[0] if names else h[:40]
            depth += 1
            header = ""
        elif ch == "}":
            depth -= 1
            header = ""
            if fn_depth is not None and depth == fn_depth:
                yield start, name, line - start + 1
                fn_depth = None
        elif ch == ";":
            header = ""
        else:
            header += ch


def _cxx_lengths():
    for folder in ("src", "include", "bindings"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in CXX:
                for line, name, length in cxx_function_lengths(path.read_text()):
                    yield f"{path.relative_to(ROOT)}:{line} {name}", length


def test_the_scanner_measures_a_function_and_skips_what_is_not_one():
    code = "namespace a {\nstruct S { int f() const { return 1; } };\n" + (
        "int g(int x) {\n  if (x) {\n    x = 2;\n  }\n  // }\n  return x;\n}\n}\n"
    )
    got = list(cxx_function_lengths(code))
    assert got == [(2, "f", 1), (3, "g", 7)]


def test_no_long_python_function():
    long = {where: n for where, n in _python_lengths() if n > LIMIT}
    assert not long, f"functions over {LIMIT} lines: {long}"


def test_no_long_cxx_function():
    lengths = dict(_cxx_lengths())
    assert len(lengths) > 200  # the scanner finds the library's functions
    long = {where: n for where, n in lengths.items() if n > LIMIT}
    assert not long, f"functions over {LIMIT} lines: {long}"
