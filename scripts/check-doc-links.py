#!/usr/bin/env python3
"""Checks the relative links of the repository's Markdown files: every
[text](target) that is not a URL must name a file or directory that exists,
and a #fragment must name a heading of the target (GitHub's anchors: lower
case, punctuation dropped, spaces as hyphens, -1, -2, ... for repeats).

Usage: scripts/check-doc-links.py [ROOT]   (default: the repository)
Prints each broken link as FILE:LINE: TARGET (why); exit status 1 if any.
"""
import os
import re
import subprocess
import sys

LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+(?:\([^()\s]*\))?[^()\s]*)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def slug(text):
    text = re.sub(r"`", "", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def lines_outside_fences(path):
    inside = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                inside = not inside
                continue
            if not inside:
                yield number, line


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen = {}
        found = set()
        for _, line in lines_outside_fences(path):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        _anchors[path] = found
    return _anchors[path]


def markdown_files(root):
    """The tracked Markdown files; outside a git checkout, every one below
    root but in build directories and hidden ones."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "*.md"], capture_output=True, text=True, check=True)
        return [os.path.join(root, p) for p in out.stdout.split()]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for here, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build")))
            found += [os.path.join(here, n) for n in sorted(names) if n.endswith(".md")]
        return found


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    broken = 0
    files = markdown_files(root)
    for path in files:
        for number, line in lines_outside_fences(path):
            # inline code holds no links
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                file_part, _, fragment = target.partition("#")
                where = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                why = None
                if not os.path.exists(where):
                    why = "no such file"
                elif fragment and where.endswith(".md") and fragment not in anchors(where):
                    why = "no such heading"
                if why:
                    broken += 1
                    print(f"{os.path.relpath(path, root)}:{number}: {target} ({why})")
    print(f"doc links: {len(files)} Markdown files, {broken} broken link(s)")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
