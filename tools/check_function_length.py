#!/usr/bin/env python3
"""Functions (and lambdas) longer than N lines (default 150) outside tests: every '{' whose code
before it ends with ')' (and qualifiers), matched to its '}'. Comments and strings are stripped
first. Prints each with its length and exits 1 when there is one (ctest runs it: function_length).

usage: tools/check_function_length.py [N] [folder ...]   (run from the repository's root)"""
import re, sys, os
N = int(sys.argv[1]) if len(sys.argv) > 1 else 150
roots = sys.argv[2:] or ['sim', 'topologies', 'placement', 'scenarios', 'tools', 'python/src']
def strip(src):
    # remove comments and strings, keep newlines
    out = []; i = 0; n = len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i); j = n if j < 0 else j; i = j; continue
        if src.startswith('/*', i):
            j = src.find('*/', i + 2); j = n if j < 0 else j + 2; out.append('\n' * src.count('\n', i, j)); i = j; continue
        if c == 'R' and src.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', src[i:])
            if m:
                end = ')' + m.group(1) + '"'; j = src.find(end, i); j = n if j < 0 else j + len(end)
                out.append('""' + '\n' * src.count('\n', i, j)); i = j; continue
        if c in '"\'':
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == '\\' else 1
            out.append(c + c); i = j + 1; continue
        out.append(c); i += 1
    return ''.join(out)
res = []
for root in roots:
    for dp, dn, fn in os.walk(root):
        for f in fn:
            if not f.endswith(('.cpp', '.h')): continue
            p = os.path.join(dp, f)
            s = strip(open(p, errors='replace').read())
            stack = []
            for m in re.finditer(r'[{}]', s):
                if m.group() == '{':
                    before = s[max(0, m.start() - 300):m.start()].rstrip()
                    func = re.search(r'\)\s*(const|override|noexcept|mutable|final|->\s*[\w:<>,\s*&]+|\s)*$', before) is not None and not re.search(r'\b(if|for|while|switch|catch)\s*\([^()]*(\([^()]*\)[^()]*)*\)\s*$', before)
                    stack.append((m.start(), func))
                else:
                    if not stack: continue
                    start, func = stack.pop()
                    if func:
                        a = s.count('\n', 0, start) + 1; b = s.count('\n', 0, m.start()) + 1
                        # report the signature line
                        if b - a + 1 > N:
                            line = open(p, errors='replace').read().split('\n')[a - 1].strip()
                            res.append((b - a + 1, p, a, line[:80]))
for r in sorted(res, reverse=True): print(f"{r[0]:5d} {r[1]}:{r[2]} {r[3]}")
sys.exit(1 if res else 0)
