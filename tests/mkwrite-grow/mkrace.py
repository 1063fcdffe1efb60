#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A write fault on a large folio that crosses EOF, while another process
grows the file inside the window between ->page_mkwrite() and
finish_fault(), which experiment.diff (not part of the series) widens with
a sleep of memory.lab_mkwrite_delay_ms.  run.sh runs it; see there.

mkrace.py FILE DELAY_MS HOW: FILE gets 4 KiB at 0 (no inline data), a
1 MiB write at 1 MiB (one dirty 1 MiB folio) and a truncate to 1 MiB +
8 KiB (EOF inside the folio, which stays whole, being dirty); a store
through a shared mapping at 1 MiB faults, and HOW (truncate, falloc,
append, beyond, dio-beyond) grows the file past the folio from another
process, DELAY_MS / 3 into the fault's sleep (after it, with 0); or
(falloc-early) an fallocate() of 1 GiB past the folio, from a thread
of this process, starts 0.01 s before the fault, so that its zeroing
past EOF is done before the fault locks the folio and its size change
comes during the fault's sleep, after it allocates (about 0.6 s under
TCG: the ramdisk needs 1.5 GiB); then a store to 1.5 MiB, msync, fsync, a cache drop
and a read of it.  Prints the folio sizes before the fault, when the
grow ran against the fault, how many faults the second store took, and
whether it read back.
"""
import ctypes, os, resource, subprocess, sys, threading, time
path, delay, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
KNOB = "/sys/module/memory/parameters/lab_mkwrite_delay_ms"
MIB = 1 << 20
GROW = {"truncate": "truncate 2m", "falloc": "falloc 0 2m",
        "append": "pwrite -q 1056768 1040384", "beyond": "pwrite -q 2m 4k",
        "dio-beyond": "pwrite -q 2m 4k", "falloc-early": None}
if how not in GROW:
    sys.exit(f"HOW: one of {', '.join(GROW)}, not {how!r}")
if not os.path.exists(KNOB):
    sys.exit(f"no {KNOB}: boot a kernel built with experiment.diff (run.sh)")
with open(KNOB, "w") as f:
    f.write(f"{delay}\n")
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.pwrite(fd, b"\x10" * 4096, 0)      # no inline data from here on
os.fsync(fd)
os.pwrite(fd, b"\x11" * MIB, MIB)      # a 1 MiB folio at 1 MiB, dirty
os.ftruncate(fd, MIB + 8192)           # EOF inside it: dirty, not split
fs0 = subprocess.run(["folio-stat", path, str(MIB), str(MIB)],
                     capture_output=True,
                     text=True).stdout.replace("\n", "; ")
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
addr = libc.mmap(None, 4 * MIB, 3, 1, fd, 0)   # RW, MAP_SHARED
if addr in (None, ctypes.c_void_p(-1).value):
    sys.exit(f"mmap: errno {ctypes.get_errno()}")
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
                           ctypes.c_longlong]
if how == "falloc-early":
    if delay == 0:
        sys.exit("falloc-early: give a delay")
    stamps = []

    def grow_early():
        stamps.append(time.time())
        if libc.fallocate(fd, 0, 2 * MIB, 1024 * MIB):
            stamps.append(f"errno {ctypes.get_errno()}")
        stamps.append(time.time())

    th = threading.Thread(target=grow_early)
    th.start()
    t0 = time.time()
    time.sleep(0.01)                  # its zeroing done, allocating
    ctypes.memset(addr + MIB, 0x22, 1)    # the write fault
    t1 = time.time()
    th.join()
    ts, tg = stamps[0], stamps[-1]
    if len(stamps) != 2:
        sys.exit(f"falloc-early: fallocate failed: {stamps[1]}")
else:
    dio = "-d " if how.startswith("dio") else ""
    grow = subprocess.Popen(
        ["sh", "-c", f"sleep {delay / 3000:.3f}; date +%s.%N; "
         f"xfs_io {dio}-c '{GROW[how]}' {path}; date +%s.%N"],
        stdout=subprocess.PIPE, text=True)
    t0 = time.time()
    if delay == 0:
        grow.wait()
    ctypes.memset(addr + MIB, 0x22, 1)    # the write fault
    t1 = time.time()
    out = grow.communicate()[0].split()
    tg = float(out[-1])
    ts = float(out[-2])
r = resource.getrusage(resource.RUSAGE_SELF)
f0 = r.ru_minflt + r.ru_majflt
ctypes.memset(addr + MIB + 512 * 1024, 0x33, 4096)
r = resource.getrusage(resource.RUSAGE_SELF)
f1 = r.ru_minflt + r.ru_majflt
libc.msync(ctypes.c_void_p(addr), ctypes.c_size_t(4 * MIB), 4)  # MS_SYNC
os.fsync(fd)
libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(4 * MIB))
size = os.fstat(fd).st_size
os.close(fd)
with open("/proc/sys/vm/drop_caches", "w") as f:
    f.write("3\n")
fd = os.open(path, os.O_RDONLY)
got = os.pread(fd, 4096, MIB + 512 * 1024)
os.close(fd)
ok = got == b"\x33" * 4096
print(f"LAB: {how} delay {delay} ms: before the fault {fs0}; fault "
      f"{t1 - t0:.2f} s, grow from {ts - t0:+.2f} to {tg - t0:+.2f} s; "
      f"grow ended {tg - t1:+.2f} s after the fault; the store 512 KiB "
      f"into the folio faulted {f1 - f0} times; size {size}; "
      f"read back {'the store' if ok else 'LOST: ' + got[:8].hex()}")
