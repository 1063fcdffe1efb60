#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tables of a function profile taken by ./lab profile.

usage: profile.py DIR
       profile.py --cover DIR [MODE]

DIR holds raw/f2fs-{4k,lf}-MODE.txt, ftrace's trace_stat function files of
each CPU concatenated, for each MODE below (writeback, fsync, overwrite,
frag-read, frag-write; an older profile lacks the later ones),
raw/f2fs-{4k,lf}-frag-*-lf.txt, the share of the file in large folios
after a frag run, raw/f2fs-{4k,lf}-frag-write-wb.txt, writeback_start
events during it by reason (uniq -c), and meta.json.  For each mode, the
functions that take the most time: calls and microseconds per MiB written
or read, f2fs-4k and f2fs-lf, and first the f2fs-lf of the earlier profile
that meta.json names as "against" (./lab profile --against), if any.  The
time is the graph tracer's, children included, with the tracing overhead
of every profiled call in it: compare it between columns, not with the
bench.  Writes DIR/summary.md.  With --cover, prints the table of MODE
(default writeback) in plain text for the cover letter instead (./lab
export puts it in place of @PROFILE:NAME@ or @PROFILE:NAME:MODE@).
"""
import collections
import json
import os
import re
import sys

MODES = {"writeback": "a new file written, then written back by sync "
         "(the sync profiled)",
         "fsync": "1 MiB writes to a new file, each followed by fsync",
         "overwrite": "the written-back file overwritten, then written back "
         "by sync (the sync profiled) with IPU_FSYNC, out of place",
         "frag-read": "the fsync'd file read with 1 MiB reads, cold, with "
         "free memory in single pages (the bench's frag-read)",
         "frag-write": "a new file written with 1 MiB writes, cached, with "
         "free memory in single pages (the bench's frag-write)"}
UNIT_OF = {"writeback": "written back", "overwrite": "written back",
           "frag-read": "read"}
UNIT = {"us": 1.0, "ms": 1e3, "s": 1e6}
TOP = 25
COVER_TOP = 14


def load(path):
    """{function: [calls, us]} summed over CPUs."""
    d = collections.defaultdict(lambda: [0, 0.0])
    with open(path) as f:
        for line in f:
            m = re.match(r"\s+(\S+)\s+(\d+)\s+([\d.]+) (us|ms|s)\s", line)
            if m:
                d[m.group(1)][0] += int(m.group(2))
                d[m.group(1)][1] += float(m.group(3)) * UNIT[m.group(4)]
    if not d:
        sys.exit(f"{path}: no function profile in it")
    return d


def columns(d, label):
    with open(os.path.join(d, "meta.json")) as f:
        mib = json.load(f)["size_mib"]
    cols = []
    for v in ("4k", "lf"):
        if label and v == "4k":
            continue
        name = f"{label} f2fs-{v}" if label else f"f2fs-{v}"
        raw = {m: os.path.join(d, "raw", f"f2fs-{v}-{m}.txt")
               for m in MODES}
        # an earlier profile may lack a mode added since
        cols.append((name, mib, {m: load(p) for m, p in raw.items()
                                 if os.path.exists(p)}))
    return cols


def per_variant(d, mode, what, fmt):
    """["f2fs-V " + fmt(text)] for each variant's raw/f2fs-V-MODE-WHAT.txt
    that exists."""
    out = []
    for v in ("4k", "lf"):
        p = os.path.join(d, "raw", f"f2fs-{v}-{mode}-{what}.txt")
        if os.path.exists(p):
            with open(p) as f:
                out.append(f"f2fs-{v} {fmt(f.read())}")
    return out


def lf_share(text):
    """The share of the file in large folios, lf_pct's N: "N%" (lf_pct
    gives nothing when none of the file was cached)."""
    return f"{text.strip()}%" if text.strip() else "none cached"


def wb_reasons(text):
    """uniq -c's "N reason=R" lines as "reason=R xN, ...", or "none"."""
    ev = [" x".join(reversed(line.split())) for line in text.splitlines()
          if line.strip()]
    return ", ".join(ev) if ev else "none"


def top(cols, mode, n):
    """The n functions of mode with the most time in any column."""
    names = set().union(*(c[2][mode] for c in cols))
    return sorted(names, key=lambda f: -max(
        c[2][mode][f][1] / c[1] if f in c[2][mode] else 0
        for c in cols))[:n]


def cells(cols, mode, f):
    out = []
    for _, mib, data in cols:
        calls, us = data[mode].get(f, (0, 0.0))
        out += [f"{calls / mib:.1f}", f"{us / mib:.0f}"]
    return out


def all_columns(d):
    """DIR's columns, after those of the profile it is against."""
    with open(os.path.join(d, "meta.json")) as f:
        against = json.load(f).get("against")
    cols = columns(d, None)
    if against:
        base = os.path.join(os.path.dirname(os.path.normpath(d)), against)
        cols = columns(base, against) + cols
    return cols


def changed(cols, mode, us_min=100.0):
    """Functions of mode with us_min us per MiB in some column whose calls
    differ tenfold between two columns: what a change took away."""
    out = []
    for f in set().union(*(c[2][mode] for c in cols)):
        calls = [c[2][mode].get(f, (0, 0.0))[0] / c[1] for c in cols]
        us = [c[2][mode].get(f, (0, 0.0))[1] / c[1] for c in cols]
        if max(us) >= us_min and max(calls) > 10 * min(calls):
            out.append(f)
    return out


def cover(d, mode="writeback"):
    """The table of mode, plain text: the functions with the most time,
    then those whose calls changed."""
    if mode not in MODES:
        sys.exit(f"no mode {mode!r}: {', '.join(MODES)}")
    cols = [c for c in all_columns(d) if mode in c[2]]
    if not cols:
        sys.exit(f"{d}: no {mode} profile in it")
    names = top(cols, mode, COVER_TOP)
    names += [f for f in top(cols, mode, 10 ** 6)
              if f in changed(cols, mode) and f not in names]
    head1 = [f"per MiB {UNIT_OF.get(mode, 'written')}"] + [c[0] for c in cols]
    head2 = [""] + ["calls        us"] * len(cols)
    w = [max(len(f) for f in names + [head1[0]])] + \
        [max(len(c[0]), 16) for c in cols]
    lines = ["  ".join(h.rjust(w[i]) if i else h.ljust(w[0])
                       for i, h in enumerate(head1)),
             "  ".join(h.rjust(w[i]) if i else h.ljust(w[0])
                       for i, h in enumerate(head2))]
    for f in names:
        c = cells(cols, mode, f)
        lines.append("  ".join([f.ljust(w[0])] + [
            f"{c[2 * i]:>7} {c[2 * i + 1]:>8}".rjust(w[i + 1])
            for i in range(len(cols))]))
    print("\n".join(lines))


def main():
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--cover":
        cover(*sys.argv[2:])
        return
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    d = sys.argv[1]
    cols = all_columns(d)
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    out = [f"# Function profile: {meta['kernel']}", "",
           f"ftrace function profiler, {meta['size_mib']} MiB per run, "
           "QEMU -icount (time counts guest instructions); calls and "
           "us per MiB written or read.  us is the graph tracer's time, "
           "children included, tracing overhead included: compare columns, "
           "not with the bench.", ""]
    for m, what in MODES.items():
        mc = [c for c in cols if m in c[2]]
        if not mc:
            continue
        out += [f"## {m}: {what}", "",
                "| function | " + " | ".join(f"{c[0]} calls | {c[0]} us"
                                            for c in mc) + " |",
                "|---|" + "---:|" * (2 * len(mc))]
        for f in top(mc, m, TOP):
            out.append(f"| {f} | " + " | ".join(cells(mc, m, f)) + " |")
        out.append("")
        lf = per_variant(d, m, "lf", lf_share)
        if lf:
            out += ["Share of the file's cached pages in large folios after "
                    "the run: " + ", ".join(lf) + ".", ""]
        wb = per_variant(d, m, "wb", wb_reasons)
        if wb:
            out += ["Writeback started during the run (writeback_start "
                    "events by reason): " + "; ".join(wb) + ".", ""]
    text = "\n".join(out)
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
