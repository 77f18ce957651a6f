#!/usr/bin/env python3
"""Lines of Rust code in `src/`, the figure the size targets are stated in.

    python3 bench/loc.py [--top N] [DIR]

Counts non-blank lines that are not comments (`//`, `///`, `//!`, `/* … */`), outside items under
`#[cfg(test)]` (a `mod tests { … }` block, or a file declared `#[cfg(test)] mod name;`). Prints the
total, then each top-level folder, then the N largest files. Standard library only.
"""

import os
import re
import sys


def test_files(root):
    """Files declared as `#[cfg(test)] mod name;`: unit tests, not counted."""
    found = set()
    decl = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
    for dirpath, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for m in decl.finditer(text):
                stem = name[:-3]
                base = dirpath if stem in ("mod", "lib", "main") else os.path.join(dirpath, stem)
                found.add(os.path.join(base, m.group(1) + ".rs"))
                found.add(os.path.join(base, m.group(1), "mod.rs"))
    return found


def count(path):
    """Code lines of one file outside `#[cfg(test)]` items."""
    n = 0
    depth = 0
    in_comment = False
    skip_to = None  # brace depth at which a skipped test item ends
    pending_test = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            s = line.strip()
            if in_comment:
                in_comment = "*/" not in s
                continue
            if s.startswith("/*"):
                in_comment = "*/" not in s
                continue
            if not s or s.startswith("//"):
                continue
            opens, closes = s.count("{"), s.count("}")
            if skip_to is not None:
                depth += opens - closes
                if depth <= skip_to:
                    skip_to = None
                continue
            if s.startswith("#[cfg(test)]"):
                pending_test = True
                continue
            if pending_test:
                pending_test = False
                if not s.endswith(";"):
                    skip_to = depth
                    depth += opens - closes
                    if depth <= skip_to:
                        skip_to = None
                continue
            depth += opens - closes
            n += 1
    return n


def main():
    args = sys.argv[1:]
    top = 0
    if args[:1] == ["--top"]:
        top, args = int(args[1]), args[2:]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    skip = test_files(root)
    per_file = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            if name.endswith(".rs") and path not in skip:
                per_file[os.path.relpath(path, root)] = count(path)
    left_out = len([p for p in skip if os.path.exists(p)])
    print(f"{sum(per_file.values())} lines of code in {root} ({len(per_file)} files; {left_out} unit-test files left out)")
    folders = {}
    for rel, n in per_file.items():
        folder = rel.split(os.sep)[0] if os.sep in rel else "(top level)"
        folders[folder] = folders.get(folder, 0) + n
    for name, n in sorted(folders.items(), key=lambda x: -x[1]):
        print(f"  {n:6}  {name}")
    if top:
        print("largest files:")
        for rel, n in sorted(per_file.items(), key=lambda x: -x[1])[:top]:
            print(f"  {n:6}  {rel}")


if __name__ == "__main__":
    main()
