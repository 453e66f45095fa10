#!/usr/bin/env python3
"""Checks every relative Markdown link of a repository: the file exists and, with #anchor,
the anchor is a heading of that file (GitHub's slugs). Code blocks and inline code are not
links. Usage: check_doc_links.py ROOT (the ctest build.doc_links). Exit 1 on a broken link."""
import os, re, subprocess, sys

root = sys.argv[1]
files = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard", "*.md"],
                       capture_output=True, text=True, check=True).stdout.split()

def strip_code(text):
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else line)
    return out

def slug(heading):
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)  # \w keeps letters, digits, underscore
    return h.replace(" ", "-")

anchors_cache = {}
def anchors(path):
    if path not in anchors_cache:
        seen, result = {}, set()
        for line in strip_code(open(path, encoding="utf-8").read()):
            m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            s = slug(m.group(2))
            n = seen.get(s, 0)
            result.add(s if n == 0 else f"{s}-{n}")
            seen[s] = n + 1
        anchors_cache[path] = result
    return anchors_cache[path]

checked = broken = 0
for f in files:
    path = os.path.join(root, f)
    for lineno, line in enumerate(strip_code(open(path, encoding="utf-8").read()), 1):
        line = re.sub(r"`[^`]*`", "", line)  # inline code is not a link
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:, file:
            checked += 1
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            problem = None
            if not os.path.exists(dest):
                problem = "no such file"
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problem = f"no heading #{anchor}"
            if problem:
                broken += 1
                print(f"{f}:{lineno}: {target}: {problem}")
print(f"{checked} relative links in {len(files)} .md files, {broken} broken")
sys.exit(1 if broken else 0)
