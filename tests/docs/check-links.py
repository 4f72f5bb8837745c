#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every relative link in the project's Markdown documents leads somewhere: README.md, docs/*.md,
tests/README.md and the READMEs under tests/. A link to a file must name one that is tracked in the
tree; a link with #anchor must name a heading of its target (GitHub's slugs). External links
(a scheme) are not followed. Usage: check-links.py TOP"""
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def prose(text):
    """The text without fenced code blocks or inline code, where a [x](y) is no link."""
    text = re.sub(r"^```.*?^```$", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path):
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"^```.*?^```$", "", f.read(), flags=re.S | re.M)
    seen = {}
    out = set()
    for m in re.finditer(r"^#{1,6} +(.+?) *#*$", text, re.M):
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


def documents(top):
    docs = [os.path.join(top, "README.md")]
    for d, sub in (("docs", False), ("tests", True)):
        for root, dirs, files in os.walk(os.path.join(top, d)):
            dirs[:] = [x for x in dirs if sub and x not in ("node_modules", "corpus")]
            docs += [os.path.join(root, f) for f in files
                     if f.endswith(".md") and (d == "docs" or f == "README.md")]
    return sorted(docs)


def main():
    top = os.path.abspath(sys.argv[1])
    bad = []
    count = 0
    docs = documents(top)
    if not os.path.isdir(os.path.join(top, "docs")):
        sys.exit("no docs/ in %s" % top)
    for doc in docs:
        with open(doc, encoding="utf-8") as f:
            text = prose(f.read())
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            count += 1
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
            where = "%s: (%s)" % (os.path.relpath(doc, top), target)
            if not dest.startswith(top + os.sep) and dest != top:
                bad.append(where + " leaves the tree")
            elif not os.path.exists(dest):
                bad.append(where + " names no file")
            elif anchor:
                if not dest.endswith(".md"):
                    bad.append(where + " has an anchor into a file that is not Markdown")
                elif anchor not in anchors(dest):
                    bad.append(where + " names no heading of " + os.path.relpath(dest, top))
    if bad:
        print("\n".join(bad))
        sys.exit("%d of %d relative links in %d documents are broken" % (len(bad), count, len(docs)))
    print("%d relative links in %d documents lead somewhere" % (count, len(docs)))


if __name__ == "__main__":
    main()
