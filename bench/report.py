#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarise a bench run: bench/report.py RESULTS_DIR
                         bench/report.py --cover RESULTS_DIR

Reads RESULTS_DIR/raw-<clock>/rows.jsonl (one row per fio run) and
meta.json, writes summary.json, summary.md and one PNG plot per clock.
With --cover, prints the plain-text tables of the cover letter from
RESULTS_DIR/summary.json instead (./lab export puts them there).
Cells are medians over the repetitions with min and max; ratios are
against f2fs with 4K folios (variant 4k, or upstream f2fs when the kernel
has no series).
"""
import json
import os
import statistics
import sys
import textwrap
from collections import defaultdict

CLOCK_TEXT = {
    "wall": "wall clock (host time; TCG makes it a noisy proxy)",
    "icount": "QEMU -icount virtual time (counts guest instructions: "
              "deterministic, for A/B ratios)",
}
BS_ORDER = {"4k": 0, "64k": 1, "1M": 2}
WL_ORDER = {w: i for i, w in enumerate((
    "read-hole", "read-data", "write-new", "overwrite", "rand-overwrite",
    "rand-overwrite-cold", "mmap-write", "writers4", "frag-read",
    "frag-write", "full-read", "full-write", "atomic-tx", "smallfiles",
    "precache"))}
MODE_ORDER = {"cold": 0, "cache": 1, "writeback": 2, "fsync": 3,
              "fdatasync": 4, "commit": 5}
# The cells of guest/opbench.c's workloads count operations per second,
# not MiB/s; WL_NOTES says so, and what some workloads do.
OP_UNITS = {"atomic-tx": "tx/s", "smallfiles": "files/s",
            "precache": "calls/s"}
FULL_NOTE = ("full-read and full-write: 1M reads of a written file and "
             "writes of a new one with the page cache filled first (a "
             "sparse file as big as the guest's memory, on ext4 on the "
             "second ramdisk, read through), so that the cell's folios "
             "come from reclaim; lf NN% = median share of the file's "
             "cached pages that are in large folios after the run "
             "(/proc/kpageflags).")
FULL_ORDER0_NOTE = ("--full-order0: the page cache filled with order-0 "
                    "folios (the sparse file on f2fs mounted nolargefolio "
                    "instead of ext4), whose reclaim frees single pages.")
WL_NOTES = {
    "rand-overwrite-cold": "rand-overwrite-cold: rand-overwrite's 4 KiB "
                           "random writes, fsync after each, into the "
                           "written file not cached, so into order-0 "
                           "folios on every filesystem.",
    "full-read": FULL_NOTE,
    "full-write": FULL_NOTE,
    "atomic-tx": "atomic-tx: transactions per second (start, 4 x 4 KiB "
                 "page writes, for bs 64k also a 64 KiB write, commit), "
                 "not MiB/s.",
    "smallfiles": "smallfiles: files per second (create, write bs, fsync, "
                  "close, unlink the file written 64 files before; one "
                  "file per 64 KiB of the file size), not MiB/s.",
    "precache": "precache: F2FS_IOC_PRECACHE_EXTENTS calls per second on a "
                "file of one-block extents (a quarter of the file size), "
                "32 calls with cold caches, call time only, not MiB/s.",
}


def frag_note(order, cover=False):
    blocks = "page" if not order else \
        f"block of {4 << order} KiB (virtually contiguous: the buddy " \
        "allocator may hold it as smaller blocks)"
    return ("frag-read and frag-write: 1M reads of a written file and "
            "writes of a new one after guest/frag.c took the guest's free "
            f"memory and gave back every other {blocks}, locking the rest; "
            + ("the share table: " if cover else "lf NN% = ") +
            "median share of the file's cached pages that are in "
            "large folios after the run (/proc/kpageflags).")


def unit(workload):
    return OP_UNITS.get(workload, "MiB/s")


def wl_notes(workloads):
    """The notes of the workloads in @workloads, in WL_NOTES's order."""
    return list(dict.fromkeys(note for w, note in WL_NOTES.items()
                              if w in workloads))


VARIANT = {"f2fs-4k": ("f2fs", "4k"), "f2fs-lf": ("f2fs", "lf"),
           "f2fs-crypt-4k": ("f2fs-crypt", "4k"),
           "f2fs-crypt-lf": ("f2fs-crypt", "lf"),
           "tmpfs": ("tmpfs", "huge"), "ext4": ("ext4", "default"),
           "xfs": ("xfs", "default")}


def load(resdir):
    """One row per fio run, from the guest's index and fio's JSON.

    The first pass folds the numbers we keep from each fio JSON file into
    rows.jsonl and removes the file, so a results directory stays small.
    """
    rows = []
    for d in sorted(os.listdir(resdir)):
        raw = os.path.join(resdir, d)
        p = os.path.join(raw, "rows.jsonl")
        if not (d.startswith("raw-") and os.path.exists(p)):
            continue
        with open(p) as f:
            index = [json.loads(line) for line in f if line.strip()]
        for r in index:
            jpath = os.path.join(raw, r.get("fio", ""))
            if "bw_bytes" not in r:
                with open(jpath) as jf:
                    text = jf.read()
                # fio may print notes before its JSON.
                # fio reports randwrite under "write"
                job = json.loads(text[text.index("{"):])["jobs"][0][
                    "read" if r["rw"] == "read" else "write"]
                r.update({"bw_bytes": job["bw_bytes"],
                          "io_bytes": job["io_bytes"],
                          "runtime_ms": job["runtime"],
                          "iops": job["iops"],
                          "lat_mean_ns": job["lat_ns"]["mean"]})
            fs, variant = VARIANT[r["config"]]
            rows.append({"fs": fs, "variant": variant,
                         "workload": r["workload"], "bs": r["bs"],
                         "mode": r["mode"], "clock": r["clock"],
                         "rep": r["rep"],
                         "value": r["iops"] if r["workload"] in OP_UNITS
                         else r["bw_bytes"] / 1048576,
                         "lat_us": r["lat_mean_ns"] / 1000,
                         "lf_pct": r.get("lf_pct"),
                         "bios": r.get("bios")})
        with open(p, "w") as f:
            for r in index:
                f.write(json.dumps(r) + "\n")
        for r in index:
            jpath = os.path.join(raw, r.get("fio", ""))
            if r.get("fio") and os.path.exists(jpath):
                os.unlink(jpath)
    return rows


def config_name(fs, variant):
    return f"{fs}-{variant}" if fs.startswith("f2fs") else fs


def base_of(config, base):
    """What a configuration's ratio is against: an f2fs kind of file with
    large folios against the same kind with order-0 folios, the rest
    against f2fs with order-0 folios."""
    if config.startswith("f2fs-crypt-") and config != "f2fs-crypt-4k":
        return "f2fs-crypt-4k"
    return base


def summarise(rows):
    groups = defaultdict(list)
    lats = defaultdict(list)
    pcts = defaultdict(list)
    bios = defaultdict(list)
    for r in rows:
        key = (r["fs"], r["variant"], r["workload"], r["bs"], r["mode"],
               r["clock"])
        groups[key].append(r["value"])
        lats[key].append(r["lat_us"])
        if r.get("lf_pct") is not None:
            pcts[key].append(r["lf_pct"])
        if r.get("bios") is not None:
            bios[key].append(r["bios"])
    out = []
    for k, v in groups.items():
        lat = lats[k]
        out.append({"fs": k[0], "variant": k[1], "workload": k[2],
                    "bs": k[3], "mode": k[4], "clock": k[5],
                    "median": round(statistics.median(v), 2),
                    "min": round(min(v), 2), "max": round(max(v), 2),
                    "reps": len(v), "unit": unit(k[2]),
                    # fio's mean latency per I/O: under icount it is
                    # counted in ns, where runtime is in whole ms
                    "lat_us": {"median": round(statistics.median(lat), 3),
                               "min": round(min(lat), 3),
                               "max": round(max(lat), 3)}})
        if pcts[k]:
            # frag-*: share of the file's cached pages in large folios
            out[-1]["lf_pct"] = {"median": statistics.median(pcts[k]),
                                 "min": min(pcts[k]), "max": max(pcts[k])}
        if bios[k]:
            # write bios to the device by size in KiB (rounded up to a
            # power of two): [bios, KiB in them], mean per run over the
            # runs that traced them
            sizes = sorted({int(s) for h in bios[k] for s in h})
            n = len(bios[k])
            out[-1]["bios"] = {
                str(s): [round(sum(h.get(str(s), [0, 0])[i] for h in bios[k])
                               / n / (2 if i else 1), 1) for i in (0, 1)]
                for s in sizes}
    out.sort(key=lambda r: (r["clock"], WL_ORDER.get(r["workload"], 99),
                            MODE_ORDER.get(r["mode"], 9),
                            BS_ORDER.get(r["bs"], 9), r["fs"], r["variant"]))
    return out


def baseline_variant(summary):
    variants = {r["variant"] for r in summary if r["fs"] == "f2fs"}
    return "4k" if "4k" in variants else "upstream"


def tables(summary, meta):
    base_v = baseline_variant(summary)
    base = f"f2fs-{base_v}"
    configs = []
    for r in summary:
        c = config_name(r["fs"], r["variant"])
        if c not in configs:
            configs.append(c)
    configs.sort(key=lambda c: (c != base, not c.startswith("f2fs"),
                                c.startswith("f2fs-crypt"), c))
    idx = {}
    for r in summary:
        idx[(config_name(r["fs"], r["variant"]), r["workload"], r["mode"],
             r["bs"], r["clock"])] = r
    md = [f"# Bench: {meta.get('kernel', '?')}", "",
          f"fio psync, iodepth 1, one job, {meta.get('size_mib')} MiB file "
          "(mmap-write: mmap engine; writers4: four jobs, a quarter of it "
          f"each) on brd, {meta.get('reps')} interleaved repetitions; guest "
          f"{meta.get('guest_cpus')} vCPUs / {meta.get('guest_memory')}, "
          f"accel {meta.get('accel')}. Cells: median MiB/s [min-max]; "
          f"(xN.NN) = median ratio against {base} (f2fs-crypt-lf: "
          "against f2fs-crypt-4k, encrypted files with order-0 folios).",
          ""]
    if meta.get("ipu_policy", "kernel") != "kernel":
        md += [f"f2fs in-place update policy: {meta['ipu_policy']} (set "
               "through sysfs after every mount; the mount's own on this "
               "small volume is IPU_FORCE).", ""]
    for note in wl_notes({r["workload"] for r in summary}):
        md += [note, ""]
    if any(r["workload"].startswith("frag-") for r in summary):
        md += [frag_note(meta.get("frag_order", 0)), ""]
    if any(r["workload"].startswith(("frag-", "full-")) for r in summary):
        md += ["No lf NN% in a cell where no page of the file was cached "
               "after any of its runs.", ""]
    if meta.get("full_order0"):
        md += [FULL_ORDER0_NOTE, ""]
    if meta.get("quick"):
        md += ["**Quick run: one small repetition, proves the bench works; "
               "not a measurement.**", ""]
    cells = sorted({(r["workload"], r["mode"], r["bs"]) for r in summary},
                   key=lambda c: (WL_ORDER.get(c[0], 99),
                                  MODE_ORDER.get(c[1], 9),
                                  BS_ORDER.get(c[2], 9)))
    for clock in sorted({r["clock"] for r in summary}):
        md += [f"## {CLOCK_TEXT.get(clock, clock)}", ""]
        md.append("| workload | mode | bs | " + " | ".join(configs) + " |")
        md.append("|---|---|---|" + "---|" * len(configs))
        for wl, mode, bs in cells:
            line = f"| {wl} | {mode} | {bs} |"
            for c in configs:
                r = idx.get((c, wl, mode, bs, clock))
                b = idx.get((base_of(c, base), wl, mode, bs, clock))
                if not r:
                    line += " n/a |"
                    continue
                s = f" {r['median']:.1f} [{r['min']:.1f}-{r['max']:.1f}]"
                if c != base_of(c, base) and b and b["median"] > 0:
                    s += f" (x{r['median'] / b['median']:.2f})"
                if r.get("lf_pct"):
                    s += f" lf {r['lf_pct']['median']:.0f}%"
                line += s + " |"
            md.append(line)
        md.append("")
        md += lat_table(clock, configs, base, cells, idx)
    md += bio_table(summary, configs)
    return md, configs, base, cells, idx


BIO_BUCKETS = (("4K", 4, 4), ("8-64K", 8, 64), ("128-512K", 128, 512),
               ("1M", 1024, 1024), (">1M", 2048, 1 << 30))
BIO_TEXT = ("Write bios queued to the device per run (block:block_bio_queue,"
            " traced on kernels with tracepoints), mean over the "
            "repetitions: how many, their mean size, and the share of the "
            "bytes written in bios of each size.")


def bio_table(summary, configs):
    """For rows that traced their bios: count, mean size and the share of
    bytes by bio size, one line per cell and configuration."""
    traced = [r for r in summary if r.get("bios")]
    if not traced:
        return []
    md = [BIO_TEXT, "",
          "| workload | mode | bs | config | bios | mean KiB | " +
          " | ".join(b[0] for b in BIO_BUCKETS) + " |",
          "|---|---|---|---|---|---|" + "---|" * len(BIO_BUCKETS)]
    order = {c: i for i, c in enumerate(configs)}
    for r in sorted(traced, key=lambda r: (
            r["clock"], WL_ORDER.get(r["workload"], 99),
            MODE_ORDER.get(r["mode"], 9), BS_ORDER.get(r["bs"], 9),
            order.get(config_name(r["fs"], r["variant"]), 99))):
        n, mean, shares = bio_shares(r)
        md.append(f"| {r['workload']} | {r['mode']} | {r['bs']} | "
                  f"{config_name(r['fs'], r['variant'])} | {n:.0f} | "
                  f"{mean:.0f} |" + "".join(f" {x:.0f}% |" for x in shares))
    return md + [""]


def us(v):
    """Microseconds with about three significant digits."""
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}"


LAT_TEXT = ("Mean latency per read, us (fio's lat mean, counted in ns, "
            "so steadier than MiB/s over runs of a few hundred ms): median "
            "[min-max]; (xN.NN) = the baseline's latency over this one, "
            "above 1 is faster.")


def lat_table(clock, configs, base, cells, idx):
    """The read cells again, as fio's mean latency per I/O."""
    reads = [c for c in cells if c[0].startswith("read-")]
    if not reads:
        return []
    md = [LAT_TEXT, "",
          "| workload | mode | bs | " + " | ".join(configs) + " |",
          "|---|---|---|" + "---|" * len(configs)]
    for wl, mode, bs in reads:
        line = f"| {wl} | {mode} | {bs} |"
        for c in configs:
            r = idx.get((c, wl, mode, bs, clock))
            b = idx.get((base_of(c, base), wl, mode, bs, clock))
            lat = r.get("lat_us") if r else None
            if not lat:
                line += " n/a |"
                continue
            s = f" {us(lat['median'])} [{us(lat['min'])}-{us(lat['max'])}]"
            bl = b.get("lat_us") if b else None
            if c != base_of(c, base) and bl and lat["median"] > 0:
                s += f" (x{bl['median'] / lat['median']:.2f})"
            line += s + " |"
        md.append(line)
    return md + [""]


def plot(resdir, summary, configs, base, cells, idx):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib missing, no plots", file=sys.stderr)
        return []
    files = []
    others = [c for c in configs if c != base]
    for clock in sorted({r["clock"] for r in summary}):
        labels = [f"{w}\n{m} {b}" for w, m, b in cells]
        fig, ax = plt.subplots(figsize=(max(8, len(cells) * 0.8), 5))
        width = 0.8 / max(1, len(others))
        for i, c in enumerate(others):
            ys, lo, hi = [], [], []
            for w, m, b in cells:
                r = idx.get((c, w, m, b, clock))
                bb = idx.get((base_of(c, base), w, m, b, clock))
                if r and bb and bb["median"] > 0:
                    y = r["median"] / bb["median"]
                    ys.append(y)
                    lo.append(y - r["min"] / bb["median"])
                    hi.append(r["max"] / bb["median"] - y)
                else:
                    ys.append(0)
                    lo.append(0)
                    hi.append(0)
            xs = [j + (i - (len(others) - 1) / 2) * width
                  for j in range(len(cells))]
            ax.bar(xs, ys, width, label=c, yerr=[lo, hi], capsize=2)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(cells)))
        ax.set_xticklabels(labels, fontsize=7, rotation=90)
        ax.set_ylabel(f"throughput / {base}, f2fs-crypt-lf / f2fs-crypt-4k"
                      " (median, min-max)")
        ax.set_title(CLOCK_TEXT.get(clock, clock), fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        name = f"ratio-{clock}.png"
        fig.savefig(os.path.join(resdir, name), dpi=110)
        plt.close(fig)
        files.append(name)
    return files


COVER_CLOCKS = {"icount": "QEMU -icount (guest instructions)",
                "wall": "wall clock (host time)"}


def span(x, fmt):
    """A cover cell: median [min-max], each through fmt; n/a if missing."""
    return (f"{fmt(x['median'])} [{fmt(x['min'])}-{fmt(x['max'])}]"
            if x else "n/a")


def ratio(num, den):
    """ xN.NN, num's median over den's, or blanks if either is missing."""
    return (f" x{num['median'] / den['median']:.2f}"
            if num and den and den["median"] > 0 else "      ")


def cover_frag(clock, idx, base, cells, crypt, others, ww, plain=True):
    """The share of the file's cached pages in large folios after each
    frag cell: median [min-max] percent per configuration."""
    cfgs = (([base, "f2fs-lf"] if plain else []) +
            (["f2fs-crypt-4k", "f2fs-crypt-lf"] if crypt else []) + others)
    rows = [(wl, mode, bs) for wl, mode, bs in cells
            if any((idx.get((c, wl, mode, bs, clock)) or {}).get("lf_pct")
                   for c in cfgs)]
    if not rows:
        return []

    def pct(r):
        p = (r or {}).get("lf_pct")
        return span(p, lambda v: f"{v:.0f}") if p else "-"

    head = (f"{'workload':<{ww}} {'mode':<9} {'bs':>3}" + "".join(
        f" {c.replace('f2fs-crypt', 'crypt'):>12}" for c in cfgs))
    out = ["Share of the file's cached pages in large folios after the "
           "run, %:", "", head, "-" * len(head)]
    for wl, mode, bs in rows:
        out.append(f"{wl:<{ww}} {mode:<9} {bs:>3}" + "".join(
            f" {pct(idx.get((c, wl, mode, bs, clock))):>12}" for c in cfgs))
    return out + [""]


def cover_tables(summary, timed=True, meta=None):
    """The cover letter's tables: f2fs-4k, f2fs-lf with its ratio, the
    same for encrypted files if measured, and the medians of ext4 and xfs
    beside them, one table per clock; then the write bios by size if the
    rows traced them.  timed=False (a run on the debug kernel, whose
    timings are not the bench kernel's) gives the bios alone."""
    base = f"f2fs-{baseline_variant(summary)}"
    idx = {(config_name(r["fs"], r["variant"]), r["workload"], r["mode"],
            r["bs"], r["clock"]): r for r in summary}
    others = [c for c in ("ext4", "xfs")
              if any(k[0] == c for k in idx)]
    crypt = any(k[0] == "f2fs-crypt-lf" for k in idx)
    # a run of encrypted files alone has no plain f2fs columns
    plain = any(k[0] in (base, "f2fs-lf") for k in idx)
    cells = sorted({(r["workload"], r["mode"], r["bs"]) for r in summary},
                   key=lambda c: (WL_ORDER.get(c[0], 99),
                                  MODE_ORDER.get(c[1], 9),
                                  BS_ORDER.get(c[2], 9)))

    def cell(r):
        return span(r, lambda v: f"{v:.0f}")

    # the workload column as wide as its longest name (rand-overwrite)
    ww = max([len("workload")] + [len(c[0]) for c in cells])
    out = []
    for clock in sorted({r["clock"] for r in summary} if timed else (),
                        key=lambda c: (c != "icount", c)):
        head = (f"{'workload':<{ww}} {'mode':<9} {'bs':>3}" +
                (f" {base:>16} {'f2fs-lf':>20}" if plain else "") +
                (f" {'crypt-4k':>16} {'crypt-lf':>20}" if crypt else "") +
                "".join(f" {c:>5}" for c in others))
        units = sorted({unit(c[0]) for c in cells})
        label = (units[0] if len(units) == 1 else "MiB/s (" + ", ".join(
            f"{w}: {u}" for w, u in OP_UNITS.items()
            if any(c[0] == w for c in cells)) + ")")
        out += [f"{COVER_CLOCKS.get(clock, clock)}, {label}:", "", head,
                "-" * len(head)]
        for wl, mode, bs in cells:
            b = idx.get((base, wl, mode, bs, clock))
            lf = idx.get(("f2fs-lf", wl, mode, bs, clock))
            line = f"{wl:<{ww}} {mode:<9} {bs:>3}"
            if plain:
                line += f" {cell(b):>16} {cell(lf):>14}{ratio(lf, b)}"
            if crypt:
                cb = idx.get(("f2fs-crypt-4k", wl, mode, bs, clock))
                cl = idx.get(("f2fs-crypt-lf", wl, mode, bs, clock))
                line += f" {cell(cb):>16} {cell(cl):>14}{ratio(cl, cb)}"
            for c in others:
                r = idx.get((c, wl, mode, bs, clock))
                line += f" {r['median']:>5.0f}" if r else f" {'-':>5}"
            out.append(line)
        out.append("")
        out += cover_lat(clock, idx, base, cells, crypt, others, ww, plain)
        out += cover_frag(clock, idx, base, cells, crypt, others, ww,
                          plain)
    for note in wl_notes({c[0] for c in cells} if timed else ()):
        out += textwrap.wrap(note, 72) + [""]
    if timed and any(c[0].startswith("frag-") for c in cells):
        out += textwrap.wrap(frag_note((meta or {}).get("frag_order", 0),
                                       True), 72) + [""]
    if timed and (meta or {}).get("full_order0"):
        out += textwrap.wrap(FULL_ORDER0_NOTE, 72) + [""]
    return out + cover_bios(summary, ww)


def bio_shares(r):
    """(bios, mean KiB, [share of bytes per BIO_BUCKETS]) of a row."""
    n = sum(v[0] for v in r["bios"].values())
    kib = sum(v[1] for v in r["bios"].values())
    shares = [sum(v[1] for s, v in r["bios"].items() if lo <= int(s) <= hi)
              / kib * 100 if kib else 0 for _, lo, hi in BIO_BUCKETS]
    return n, kib / n if n else 0, shares


def cover_bios(summary, ww):
    """The write bios by size, for the cover, if the rows traced them."""
    traced = [r for r in summary if r.get("bios")]
    if not traced:
        return []
    head = (f"{'workload':<{ww}} {'mode':<9} {'bs':>3} {'config':<8} "
            f"{'bios':>5} {'KiB':>5}" +
            "".join(f" {b[0]:>8}" for b in BIO_BUCKETS))
    out = textwrap.wrap("Write bios queued to the device per run, mean over "
                        "the repetitions, with the share of the bytes in "
                        "bios of each size:", 72) + ["", head, "-" * len(head)]
    for r in sorted(traced, key=lambda r: (
            WL_ORDER.get(r["workload"], 99), MODE_ORDER.get(r["mode"], 9),
            BS_ORDER.get(r["bs"], 9), r["fs"], r["variant"])):
        n, mean, shares = bio_shares(r)
        out.append(f"{r['workload']:<{ww}} {r['mode']:<9} {r['bs']:>3} "
                   f"{config_name(r['fs'], r['variant']):<8} {n:>5.0f} "
                   f"{mean:>5.0f}" + "".join(f" {x:>7.0f}%" for x in shares))
    return out + [""]


def cover_lat(clock, idx, base, cells, crypt, others, ww, plain=True):
    """The read cells as fio's mean latency per read, for the cover."""
    reads = [c for c in cells if c[0].startswith("read-")]
    if not reads:
        return []

    def lat(c, key):
        r = idx.get((c,) + key + (clock,))
        return r.get("lat_us") if r else None

    def cell(x):
        return span(x, us)

    head = (f"{'workload':<{ww}} {'mode':<9} {'bs':>3}" +
            (f" {base:>17} {'f2fs-lf':>23}" if plain else "") +
            (f" {'crypt-4k':>17} {'crypt-lf':>23}" if crypt else "") +
            "".join(f" {c:>5}" for c in others))
    out = textwrap.wrap(f"{COVER_CLOCKS.get(clock, clock)}, mean latency "
                        "per read in us (xN.NN: the order-0 latency over "
                        "this one):", 72) + ["", head, "-" * len(head)]
    for wl, mode, bs in reads:
        key = (wl, mode, bs)
        b, lf = lat(base, key), lat("f2fs-lf", key)
        line = f"{wl:<{ww}} {mode:<9} {bs:>3}"
        if plain:
            line += f" {cell(b):>17} {cell(lf):>17}{ratio(b, lf)}"
        if crypt:
            cb, cl = lat("f2fs-crypt-4k", key), lat("f2fs-crypt-lf", key)
            line += f" {cell(cb):>17} {cell(cl):>17}{ratio(cb, cl)}"
        for c in others:
            x = lat(c, key)
            line += f" {us(x['median']) if x else 'n/a':>5}"
        out.append(line)
    return out + [""]


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--cover":
        path = os.path.join(sys.argv[2], "summary.json")
        if not os.path.isfile(path):
            sys.exit(f"report: no {path}: summarise the run first "
                     f"(bench/report.py {sys.argv[2]})")
        with open(path) as f:
            res = json.load(f)
        # the test kernel's debug options make its timings its own
        timed = "(test config)" not in (res.get("kernel") or "")
        print("\n".join(cover_tables(res["rows"], timed,
                                     res.get("meta"))).rstrip())
        return
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit("usage: report.py RESULTS_DIR | --cover RESULTS_DIR")
    resdir = sys.argv[1]
    if not os.path.isfile(os.path.join(resdir, "meta.json")):
        sys.exit(f"report: {resdir} is not a bench run (no meta.json); "
                 "give a directory under bench/results/")
    with open(os.path.join(resdir, "meta.json")) as f:
        meta = json.load(f)
    rows = load(resdir)
    if not rows:
        sys.exit(f"report: no rows under {resdir}/raw-*/rows.jsonl")
    summary = summarise(rows)
    with open(os.path.join(resdir, "summary.json"), "w") as f:
        json.dump({"kernel": meta.get("kernel"), "meta": meta,
                   "rows": summary}, f, indent=1)
    md, configs, base, cells, idx = tables(summary, meta)
    pngs = plot(resdir, summary, configs, base, cells, idx)
    md += [f"![{p}]({p})" for p in pngs]
    with open(os.path.join(resdir, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
