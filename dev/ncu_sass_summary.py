"""Summarise an ncu source page (CSV, SASS) into warp-instruction counts per opcode and per
run of equally executed instructions (basic blocks): python3 ncu_sass_summary.py page.csv"""
import csv
import sys
from collections import Counter

rows = list(csv.reader(open(sys.argv[1], newline="")))
head = next(i for i, r in enumerate(rows) if any("Source" == c for c in r))
cols = rows[head]
src = cols.index("Source")
ex = next(i for i, c in enumerate(cols) if c.startswith("Warp Instructions Executed")
          or c == "Instructions Executed")


def counted(col):
    """(line, count in column col, source text) of the instruction rows that have a count."""
    for k, r in enumerate(rows[head + 1:]):
        if len(r) <= max(src, col):
            continue
        try:
            yield k, int(float(r[col].replace(",", "") or 0)), r[src].strip()
        except ValueError:
            continue


by_op, blocks, total = Counter(), [], 0
for _, n, text in counted(ex):
    op = text.split()[0] if text else "?"
    if op.startswith("@"):
        op = text.split()[1]
    by_op[op.split(".")[0]] += n
    total += n
    if blocks and blocks[-1][1] == n:
        blocks[-1][2] += 1
    else:
        blocks.append([text[:60], n, 1])
print("columns:", cols[:8], "... total warp instructions", total)
for op, n in by_op.most_common(28):
    print(f"{op:10s} {n:12d} {100.0 * n / total:5.1f}%")
print("runs (first instruction, executions, length, share):")
for text, n, k in blocks:
    if n * k > total * 0.004:
        print(f"{n:10d} x {k:4d} {100.0 * n * k / total:5.1f}%  {text}")
# The instructions with the most warp-stall samples (where the warps wait), with their neighbours'
# context left to the reader of the CSV.
samp = next((i for i, c in enumerate(cols) if "Stall Sampling (All" in c), None)
if samp is not None:
    hot = [(n, k, text[:70]) for k, n, text in counted(samp)]
    all_s = sum(n for n, _, _ in hot)
    print(f"stall samples ({cols[samp]}): {all_s}; top instructions (line, share):")
    for n, k, text in sorted(hot, reverse=True)[:30]:
        print(f"{k:6d} {100.0 * n / max(all_s, 1):5.1f}%  {text}")
