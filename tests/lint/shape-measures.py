#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The house's measures of shape over src/ (issue 39), checked so they stay true:
no goto, no function over 100 lines, no .c file over 900 lines, no line over
120 columns (.clang-format's limit). Prints what is past a limit and fails,
except for the files in ALLOWED, which are reported but do not fail: files
other work is reshaping right now. The list is meant to become empty.

A function is counted from the line that opens its body (a line ending in
'{' at column 0's statement level, whose definition starts at column 0) to
its closing '}' at column 0, both included, as the house writes them.

Usage: shape-measures.py SRCDIR [--summary]"""

import os
import re
import sys

MAX_FUNCTION_LINES = 100
MAX_FILE_LINES = 900
MAX_COLUMNS = 120

# Files allowed past the limits for now, relative to src/: reported, not failed.
# Empty since the reshaping of issue 39 landed: keep it so.
ALLOWED = set()
ALLOWED_DIRS = ()

GOTO = re.compile(r"\bgoto\b")
SIGNATURE_START = re.compile(r"^[A-Za-z_].*\(")


def strip_comments_and_strings(text):
    """Blanks comments and string/char literals, keeping line breaks."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(code_lines):
    """Yields (name, first line number, length) of each function body."""
    start = None
    name = None
    for number, line in enumerate(code_lines, 1):
        if start is None:
            if line.endswith("{") and not line.startswith((" ", "\t", "#", "}")) \
               and "(" in line and "=" not in line.split("(")[0]:
                m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", line)
                name = m.group(1) if m else "?"
                start = number
            elif line.endswith("{") and line.startswith((" ", "\t")) and start is None:
                # A continued signature: the definition started on an earlier line.
                back = number - 2
                while back >= 0 and code_lines[back].startswith((" ", "\t")):
                    back -= 1
                if back >= 0 and SIGNATURE_START.match(code_lines[back]) \
                   and not code_lines[back].rstrip().endswith((";", "{", "}")) \
                   and "=" not in code_lines[back].split("(")[0]:
                    m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", code_lines[back])
                    name = m.group(1) if m else "?"
                    start = back + 1
        elif line.startswith("}"):
            yield name, start, number - start + 1
            start = None


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    summary = "--summary" in sys.argv[2:]
    failures = 0
    allowed_hits = 0
    counts = {"goto": 0, "functions": 0, "long functions": 0, "long files": 0, "long lines": 0}
    for dirpath, _, filenames in sorted(os.walk(root)):
        for filename in sorted(filenames):
            if not filename.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, filename)
            rel = os.path.relpath(path, root)
            allowed = rel in ALLOWED or rel.startswith(ALLOWED_DIRS)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            raw_lines = text.split("\n")
            if raw_lines and raw_lines[-1] == "":
                raw_lines.pop()
            code_lines = [l.rstrip() for l in strip_comments_and_strings(text).split("\n")]
            problems = []
            for number, line in enumerate(raw_lines, 1):
                if len(line) > MAX_COLUMNS:
                    counts["long lines"] += 1
                    problems.append(f"{rel}:{number}: line of {len(line)} columns (limit {MAX_COLUMNS})")
            for number, line in enumerate(code_lines, 1):
                if GOTO.search(line):
                    counts["goto"] += 1
                    problems.append(f"{rel}:{number}: goto")
            if filename.endswith(".c"):
                if len(raw_lines) > MAX_FILE_LINES:
                    counts["long files"] += 1
                    problems.append(f"{rel}: {len(raw_lines)} lines (limit {MAX_FILE_LINES})")
                for name, start, length in functions(code_lines):
                    counts["functions"] += 1
                    if length > MAX_FUNCTION_LINES:
                        counts["long functions"] += 1
                        problems.append(f"{rel}:{start}: {name}() has {length} lines "
                                        f"(limit {MAX_FUNCTION_LINES})")
            for p in problems:
                print(("allowed for now: " if allowed else "") + p)
            if allowed:
                allowed_hits += len(problems)
            else:
                failures += len(problems)
    if summary or failures:
        print("; ".join(f"{k}: {v}" for k, v in counts.items()))
    print(f"{failures} past the limits, {allowed_hits} more in files allowed for now")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
