"""Inclusive instructions per call of chosen functions in a callgrind dump (the ones
bench/percall_cg.mjs leaves, one per workload), counted at their call sites, so a function's
own calls to itself are not counted twice. For reading what a feature adds per tool call:
callgrind_annotate's inclusive view of a dump taken after `callgrind_control -z` attributes
nearly everything to `(below main)`.

Usage: python3 bench/cg_inclusive.py DUMP CALLS REGEX
  DUMP   a callgrind.out file (e.g. the `cg.<pid>.<n>` percall_cg.mjs names in its output)
  CALLS  tool calls the dump covers (executes x calls per execute), to divide by
  REGEX  which function names to report (Python re, matched anywhere in the name)
Prints, per matching function called from a non-matching one: instructions per call
(inclusive), calls per tool call, name; then the dump's total per tool call."""
import collections
import re
import sys


def main():
    path, calls, pattern = sys.argv[1], float(sys.argv[2]), re.compile(sys.argv[3])
    names, fn, cfn, take = {}, None, None, False
    incl, count = collections.Counter(), collections.Counter()
    total = 0
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        m = re.match(r"^(c?)fn=\((\d+)\)(?: (.*))?$", line)
        if m:
            callee, ident, name = m.groups()
            if name:
                names[ident] = name
            if callee:
                cfn = names.get(ident, ident)
            else:
                fn = names.get(ident, ident)
            continue
        if line.startswith("calls="):
            # counted where a matching function is entered from outside the matching set
            take = bool(pattern.search(cfn)) and not pattern.search(fn or "")
            if take:
                count[cfn] += int(line.split()[0][6:])
            continue
        if line and (line[0].isdigit() or line[0] in "+-*"):
            cost = int(line.split()[-1])
            if take:
                incl[cfn] += cost
                take = False
            continue
        if line.startswith("summary:") or line.startswith("totals:"):
            total = int(line.split()[1])
    for name, cost in incl.most_common():
        print(f"{cost / calls:9.0f} instructions per call  {count[name] / calls:6.2f} calls  {name}")
    print(f"{total / calls:9.0f} instructions per call in all")


if __name__ == "__main__":
    main()
