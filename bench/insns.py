#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Kernel instructions per I/O, per function, from ./lab insns.

insns.py RESULTS_DIR [SYSTEM_MAP]
insns.py --cover RESULTS_DIR [WORKLOAD [A B]]

With SYSTEM_MAP: folds the plugin's dumps in RESULTS_DIR/raw (tbcount.<hit>,
one per marker hit; the last 2 x len(windows.txt) hits are the guest's, a
window closing at every other one) into RESULTS_DIR/insns.json: per run,
its kernel instructions per I/O; per workload and configuration, the
median over its runs of each kernel function's instructions and calls per
I/O (a block's instructions go to the symbol at or before its address; a
call is an execution of the block at a symbol's address).  The dumps are
removed.  Then, with or without SYSTEM_MAP, writes RESULTS_DIR/summary.md:
per workload, total kernel instructions per I/O for each configuration
(f2fs-4k, f2fs-lf, xfs, xfs-4k, f2fs-crypt-4k, f2fs-crypt-lf: those run;
median [min-max] over the runs; xfs-4k is XFS with order-0 folios, which
only a kernel with the lab's experiment has), the filesystem's share
(f2fs: the functions of
fs/f2fs listed in RESULTS_DIR/f2fs-functions.txt, which ./lab insns writes
from the kernel's objects, and the bitmap helpers; xfs: those of fs/xfs
and fs/iomap, in xfs-functions.txt), with encrypted files the share of
blk-crypto-fallback, the cipher and its kernel FPU sections
(crypto-functions.txt: what inline encryption hardware does on a phone)
and the totals without it, and, for
f2fs-lf against f2fs-4k and xfs, xfs against xfs-4k and f2fs-crypt-lf
against f2fs-crypt-4k, the functions whose medians differ most.  --cover
prints one workload's (rand-fsync's unless named; f2fs-lf against
f2fs-4k, or against xfs when f2fs-4k did not run, or configuration A
against B) as plain text for the cover letter.
"""
import bisect
import collections
import glob
import json
import os
import statistics
import sys

TOP = 40
COVER_TOP = 16
KEEP = 1.0	# functions below this many instructions per I/O are dropped
# in the order of the tables
CFGS = ["f2fs-4k", "f2fs-lf", "xfs", "xfs-4k", "tmpfs", "f2fs-crypt-4k",
        "f2fs-crypt-lf"]
LF = "f2fs-lf"				# what the others are compared with
# the comparisons: large folios against the others of their kind
PAIRS = [("f2fs-lf", "f2fs-4k"), ("f2fs-lf", "xfs"), ("f2fs-lf", "tmpfs"),
         ("xfs", "xfs-4k"), ("f2fs-crypt-lf", "f2fs-crypt-4k")]
SHORT = {"f2fs-4k": "4k", "f2fs-lf": "lf", "xfs": "xfs", "xfs-4k": "xfs-4k",
         "tmpfs": "tmpfs", "f2fs-crypt-4k": "crypt-4k",
         "f2fs-crypt-lf": "crypt-lf"}
WORKLOADS = {	# what an I/O is (guest/insns.sh), and its unit in tables
    "rand-fsync": ("a 4 KiB random overwrite of a cached file, and its "
                   "fsync", "write"),
    "write-fsync": ("a 4 KiB write to a new file, and its fsync", "write"),
    "write-1m": ("a 1 MiB write to a new file, and its writeback (fio's "
                 "end_fsync)", "MiB"),
    "write-64k": ("a 64 KiB write to a new file, left in the cache",
                  "write"),
    "write-4k": ("a 4 KiB write to a new file, left in the cache",
                 "write"),
    "mmap-write": ("1 MiB written through a shared mapping of a cold file "
                   "(read faults, then write faults; the copy itself is "
                   "user space, not counted)", "MiB"),
    "overwrite-1m": ("a 1 MiB overwrite of a written, cold file, and its "
                     "writeback (fio's end_fsync)", "MiB"),
    "overwrite-64k": ("a 64 KiB overwrite of a written, cold file, and its "
                      "writeback (fio's end_fsync)", "write"),
    "overwrite-4kwb": ("a 4 KiB overwrite of a written, cold file, and "
                       "its writeback (fio's end_fsync)", "write"),
    "overwrite-4k": ("a 4 KiB overwrite of a written, cold file, left in "
                     "the cache", "write"),
    "read-hole-64k": ("a 64 KiB read of a sparse file (no blocks), cold "
                      "cache", "read"),
    "read-1m": ("a 1 MiB read of a written file, cold cache", "MiB"),
}
ZERO = (0.0, 0.0)


def symbols(path):
    addr, name = [], []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and p[1] in "tTwW":
                addr.append(int(p[0], 16))
                name.append(p[2])
    order = sorted(range(len(addr)), key=addr.__getitem__)
    return [addr[i] for i in order], [name[i] for i in order]


def fold(d, smap):
    raw = os.path.join(d, "raw")
    with open(os.path.join(raw, "windows.txt")) as f:
        wins = [line.split() for line in f if line.strip()]
    dumps = sorted(glob.glob(os.path.join(raw, "tbcount.*")),
                   key=lambda p: int(p.rsplit(".", 1)[1]))
    if len(dumps) < 2 * len(wins):
        sys.exit(f"{d}: {len(dumps)} plugin dumps for {len(wins)} windows")
    ours = dumps[len(dumps) - 2 * len(wins):][1::2]
    addr, name = symbols(smap)
    runs = []
    for (wl, cfg, rep, ios), path in zip(wins, ours):
        ins, calls = collections.Counter(), collections.Counter()
        with open(path) as f:
            for line in f:
                pc, n, execs = line.split()
                pc, n, execs = int(pc, 16), int(n), int(execs)
                i = bisect.bisect_right(addr, pc) - 1
                fn = name[i] if i >= 0 else "?"
                ins[fn] += n * execs
                if i >= 0 and addr[i] == pc:
                    calls[fn] += execs
        ios = int(ios)
        runs.append({"workload": wl, "config": cfg, "rep": int(rep),
                     "ios": ios, "total": round(sum(ins.values()) / ios, 1),
                     "funcs": {fn: (v / ios, calls[fn] / ios)
                               for fn, v in ins.items()}})
    with open(os.path.join(d, "insns.json"), "w") as f:
        json.dump(medians(runs), f, separators=(",", ":"))
    for p in dumps:
        os.unlink(p)


def medians(runs):
    """The runs' totals, and per workload and configuration each function's
    median instructions and calls per I/O over its runs (those with at
    least KEEP instructions per I/O)."""
    funcs = collections.defaultdict(dict)
    for wl, cfg in dict.fromkeys((r["workload"], r["config"]) for r in runs):
        rs = [r for r in runs if (r["workload"], r["config"]) == (wl, cfg)]
        m = {}
        for fn in set().union(*(r["funcs"] for r in rs)):
            v = [r["funcs"].get(fn, (0, 0)) for r in rs]
            ins = med([x[0] for x in v])
            if ins >= KEEP:
                m[fn] = [round(ins, 1), round(med([x[1] for x in v]), 3)]
        funcs[wl][cfg] = m
    return {"runs": [{k: r[k] for k in r if k != "funcs"} for r in runs],
            "funcs": funcs}


def fs_share(d, fm):
    """Per configuration, the instructions per I/O of the filesystem's own
    functions: for f2fs those of fs/f2fs in RESULTS_DIR/f2fs-functions.txt
    (or named f2fs or ffs_: a function of an older build) and the bitmap
    and find-bit helpers they call; for xfs those of fs/xfs and fs/iomap in
    xfs-functions.txt.  None for a configuration without its list."""
    lists = fn_lists(d)

    def mine(fs, fn):
        if fs == "xfs":
            return fn in lists[fs]
        return fn in lists[fs] or "f2fs" in fn or fn.startswith(
            ("ffs_", "_find_", "__bitmap_"))
    out = {}
    for c in fm:
        fs = c.split("-")[0]
        out[c] = sum(v[0] for fn, v in fm[c].items() if mine(fs, fn)) \
            if fs in lists else None
    return out


def fn_lists(d):
    """The function lists ./lab insns wrote: f2fs, xfs, crypto."""
    lists = {}
    for what in ("f2fs", "xfs", "crypto"):
        path = os.path.join(d, f"{what}-functions.txt")
        if os.path.exists(path):
            with open(path) as f:
                lists[what] = set(f.read().split())
    return lists


def crypto_share(names, fm):
    """Per configuration, the instructions per I/O of blk-crypto-fallback,
    the cipher it calls and the cipher's kernel FPU sections (names, from
    crypto-functions.txt), or None without that list."""
    if names is None:
        return None
    return {c: sum(v[0] for fn, v in fm[c].items() if fn in names)
            for c in fm}


def med(xs):
    return statistics.median(xs) if xs else 0.0


def configs(data, wl):
    """The configurations workload wl ran in, in table order."""
    have = {r["config"] for r in data["runs"] if r["workload"] == wl}
    return [c for c in CFGS if c in have]


def ranked(data, wl, base, lf=LF):
    """Workload wl's totals per configuration, sorted, its functions'
    (instructions, calls) per configuration, and the function names, those
    whose instructions per I/O differ most between lf and base first, ties
    by name."""
    cfgs = configs(data, wl)
    tot = {c: sorted(r["total"] for r in data["runs"]
                     if r["workload"] == wl and r["config"] == c)
           for c in cfgs}
    fm = {c: {fn: tuple(v) for fn, v in data["funcs"][wl][c].items()}
          for c in cfgs}
    # ties by name: a set's order changes from run to run (hash seeds)
    names = sorted(set(fm[base]) | set(fm[lf]), key=lambda fn: (-abs(
        fm[lf].get(fn, ZERO)[0] - fm[base].get(fn, ZERO)[0]), fn))
    return tot, fm, names


def summary(d):
    with open(os.path.join(d, "insns.json")) as f:
        data = json.load(f)
    runs = data["runs"]
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    crypto = fn_lists(d).get("crypto")
    out = [f"# Kernel instructions per I/O: {meta['kernel']}", "",
           "QEMU TCG plugin bench/tbcount.c: every guest kernel instruction "
           "executed during each fio run, attributed to the function it "
           "lies in (System.map), per I/O (what an I/O is: below).  "
           "Under -icount this is the bench's clock: 1 ns per "
           "instruction.  Runs interleaved in one boot, "
           f"{meta['reps']} each; median [min-max].  Totals move between "
           "runs with timer ticks and scheduling; the code paths a write "
           "takes are the same every time, so their per-function counts "
           "barely move.  The filesystem's functions: for f2fs those of "
           "fs/f2fs and the bitmap helpers they call, for xfs those of "
           "fs/xfs and fs/iomap." + ("  The crypto of encrypted files: "
           "blk-crypto-fallback, the cipher it calls (crypto/, "
           "lib/crypto/) and the kernel FPU sections the cipher runs in "
           "(arch/x86/kernel/fpu/, and local_bh_enable(), which ends "
           "each), the work inline encryption hardware does on a phone; "
           "its bounce pages' allocation is not in it."
                                    if crypto else ""), ""]
    for wl in dict.fromkeys(r["workload"] for r in runs):
        cfgs = configs(data, wl)
        pairs = [(a, b) for a, b in PAIRS if a in cfgs and b in cfgs]
        if not pairs:
            sys.exit(f"{d}: {wl} needs f2fs-lf and f2fs-4k or xfs, or "
                     "f2fs-crypt-lf and f2fs-crypt-4k")
        tot, fm, _ = ranked(data, wl, *pairs[0][::-1])
        diffs = [f"{SHORT[a]} - {SHORT[b]}" for a, b in pairs]
        out += [f"## {wl}", "", f"An I/O: {WORKLOADS.get(wl, (wl,))[0]}.", "",
                "| | " + " | ".join(cfgs + diffs) + " |",
                "|---|" + "---:|" * (len(cfgs) + len(diffs))]
        m = {c: med(tot[c]) for c in cfgs}
        out.append("| kernel instructions per I/O | " + " | ".join(
            [f"{m[c]:.0f} [{tot[c][0]:.0f}-{tot[c][-1]:.0f}]" for c in cfgs]
            + [f"{m[a] - m[b]:+.0f} (x{m[b] / m[a]:.3f})" for a, b in pairs])
            + " |")
        share = fs_share(d, fm)
        if any(share[c] is not None for c in cfgs):
            def sh(c):
                return "n/a" if share[c] is None else f"{share[c]:.0f}"

            def dsh(a, b):
                return "n/a" if None in (share[a], share[b]) else \
                    f"{share[a] - share[b]:+.0f}"
            out.append("| of which the filesystem's functions (sum of "
                       "medians) | " + " | ".join(
                           [sh(c) for c in cfgs] +
                           [dsh(a, b) for a, b in pairs]) + " |")
        cry = crypto_share(crypto, fm)
        if cry is not None:
            rest = {c: m[c] - cry[c] for c in cfgs}
            out.append("| of which blk-crypto-fallback, the cipher and its "
                       "FPU sections (sum of medians) | " + " | ".join(
                           [f"{cry[c]:.0f}" for c in cfgs] +
                           [f"{cry[a] - cry[b]:+.0f}" for a, b in pairs])
                       + " |")
            out.append("| kernel instructions per I/O without them | " +
                       " | ".join([f"{rest[c]:.0f}" for c in cfgs] +
                                  [f"{rest[a] - rest[b]:+.0f} "
                                   f"(x{rest[b] / rest[a]:.3f})"
                                   for a, b in pairs]) + " |")
        out.append("")
        for lf, b in pairs:
            _, _, names = ranked(data, wl, b, lf)
            out += [f"Functions whose instructions per I/O differ most, "
                    f"{lf} against {b} (exclusive: callees count apart; "
                    "calls per I/O in parentheses):", "",
                    f"| function | {b} | {lf} | {SHORT[lf]} - {SHORT[b]} |",
                    "|---|---:|---:|---:|"]
            for fn in names[:TOP]:
                a, c = fm[b].get(fn, ZERO), fm[lf].get(fn, ZERO)
                out.append(f"| {fn} | {a[0]:.1f} ({a[1]:.2f}) | "
                           f"{c[0]:.1f} ({c[1]:.2f}) | {c[0] - a[0]:+.1f} |")
            out.append("")
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write("\n".join(out))


def cover(d, wl="rand-fsync", lf=LF, base=None, top=COVER_TOP):
    """Plain text for the cover letter: workload wl's totals, and its
    functions whose instructions per I/O differ most, lf against base
    (f2fs-4k, or xfs when f2fs-4k did not run)."""
    with open(os.path.join(d, "insns.json")) as f:
        data = json.load(f)
    if wl not in data["funcs"]:
        sys.exit(f"{d}: no workload {wl!r} in it")
    have = configs(data, wl)
    if base is None:
        base = "f2fs-4k" if "f2fs-4k" in have else "xfs"
    if lf not in have or base not in have:
        sys.exit(f"{d}: {wl} needs {lf} and {base}")
    cfgs = [base, lf]
    tot, fm, names = ranked(data, wl, base, lf)
    tot = {c: med(tot[c]) for c in cfgs}
    names = names[:top]
    w = max(len(fn) for fn in names + ["kernel, in all",
                                       "f2fs, bitmap helpers"])
    unit = f"per {WORKLOADS.get(wl, ('', 'I/O'))[1]} (calls)"
    w = max(w, len(unit))
    cells = {fn: [fm[c].get(fn, ZERO) for c in cfgs] for fn in names}
    nw = max([7] + [len(f"{v[0]:.0f}") for vs in cells.values()
                    for v in vs])
    cw = max([4] + [len(f"{v[1]:.1f}") for vs in cells.values()
                    for v in vs])
    cell = nw + cw + 3
    dw = max(8, nw + 1)
    head = f"{unit.ljust(w)}  {base:>{cell}}  " \
        f"{lf:>{cell}}  {SHORT[lf] + ' - ' + SHORT[base]:>{dw}}"
    rows = [("kernel, in all", tot[cfgs[0]], tot[cfgs[1]])]
    share = fs_share(d, fm)
    if share[base] is not None and share[lf] is not None:
        rows.append(("f2fs, bitmap helpers" if "xfs" not in base + lf else
                     "the filesystem's", share[base], share[lf]))
    lines = [head] + [f"{n.ljust(w)}  {a:>{cell}.0f}  {b:>{cell}.0f}  "
                      f"{b - a:>+{dw}.0f}" for n, a, b in rows]
    for fn in names:
        a, b = cells[fn]
        lines.append(f"{fn.ljust(w)}  {a[0]:>{nw}.0f} ({a[1]:>{cw}.1f})  "
                     f"{b[0]:>{nw}.0f} ({b[1]:>{cw}.1f})  "
                     f"{b[0] - a[0]:>+{dw}.0f}")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) in (3, 4, 6) and sys.argv[1] == "--cover":
        cover(*sys.argv[2:])
        sys.exit(0)
    if len(sys.argv) not in (2, 3) or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    if len(sys.argv) == 3:
        fold(sys.argv[1], sys.argv[2])
    summary(sys.argv[1])
