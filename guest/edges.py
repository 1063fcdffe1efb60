#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Targeted large folio edge cases that random exercising rarely hits.

Usage: edges.py CASE... DIR  (CASE: a case below, its function case_CASE
                              with dashes for underscores, or all)

Every case writes through the page cache, checks what it reads back against
a model, and checks again after fsync and a cache drop, so both the cached
folios and what reached the disk are verified.  The cases run one after
the other, each in a process of its own, and each ends with a line
"edges-case PASS|FAIL CASE SECONDS DETAIL": on a pass, the case's last
line; on a mismatch, the case, the offset and the expected and found
bytes; on an exception, its traceback before it.  Exit 0 when all pass,
else 1.
"""
import collections
import contextlib
import ctypes
import errno
import fcntl
import functools
import glob
import itertools
import json
import mmap
import os
import random
import re
import struct
import subprocess
import sys
import threading
import time
import traceback

# ./lab test --full and --long (lib.sh full_form): the slow cases' every
# round; the short form (CI) runs fewer of them.
FULL_FORM = os.environ.get("LAB_FORM", "short") != "short"

@functools.cache
def libc():
    """The C library, for the calls Python's os module lacks, each with its
    argument types declared (64-bit offsets and pointers); errno kept."""
    c = ctypes
    lib = c.CDLL(None, use_errno=True)
    lib.fallocate.argtypes = [c.c_int, c.c_int, c.c_longlong, c.c_longlong]
    lib.sync_file_range.argtypes = [c.c_int, c.c_longlong, c.c_longlong,
                                    c.c_uint]
    lib.mmap.restype = c.c_void_p
    lib.mmap.argtypes = [c.c_void_p, c.c_size_t, c.c_int, c.c_int, c.c_int,
                         c.c_long]
    lib.munmap.argtypes = [c.c_void_p, c.c_size_t]
    lib.mincore.argtypes = [c.c_void_p, c.c_size_t, c.c_char_p]
    lib.quotactl.argtypes = [c.c_int, c.c_char_p, c.c_int, c.c_void_p]
    lib.swapon.argtypes = [c.c_char_p, c.c_int]
    lib.swapoff.argtypes = [c.c_char_p]
    lib.mprotect.argtypes = [c.c_void_p, c.c_size_t, c.c_int]
    return lib


def map_page(fd, off, prot):
    """The address of a shared mapping of the page of fd at off, which may
    lie past EOF (Python's mmap refuses that); unmap with libc().munmap()."""
    addr = libc().mmap(None, 4096, prot, mmap.MAP_SHARED, fd, off)
    if addr in (None, ctypes.c_void_p(-1).value):
        e = ctypes.get_errno()
        raise OSError(e, f"mmap: {os.strerror(e)}")
    return addr

KIB = 1024
MIB = 1024 * KIB
FOLIOS = (16 * KIB, 64 * KIB, 2 * MIB)


class Mismatch(Exception):
    pass


def first_bad(got, want, off=0):
    """Where got, read at file offset off, first differs from want: "first
    bad byte at N (block B, +I): got ... want ..." (8 bytes of each)."""
    n = min(len(got), len(want))
    i = next((i for i in range(n) if got[i] != want[i]), n)
    at = off + i
    return (f"first bad byte at {at} (block {at // 4096}, +{at % 4096}): "
            f"got {bytes(got[i:i + 8]).hex()} want "
            f"{bytes(want[i:i + 8]).hex()}")


def pattern(seed, n):
    """n bytes that differ per seed and per position, never zero."""
    return random.Random(seed).randbytes(n).translate(NONZERO)


NONZERO = bytes([1]) + bytes(range(1, 256))


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


class File:
    """A file and its expected content: a new, empty file, or, given its
    content (model), a file written already."""

    def __init__(self, path, model=None):
        self.path = path
        if model is None:
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC,
                              0o644)
            self.model = bytearray()
        else:
            self.fd = os.open(path, os.O_RDWR)
            self.model = bytearray(model)

    def write(self, off, data):
        done = 0
        while done < len(data):
            done += os.pwrite(self.fd, data[done:], off + done)
        if off > len(self.model):
            self.model.extend(bytes(off - len(self.model)))
        end = off + len(data)
        if end > len(self.model):
            self.model.extend(bytes(end - len(self.model)))
        self.model[off:end] = data

    def truncate(self, size):
        os.ftruncate(self.fd, size)
        if size < len(self.model):
            del self.model[size:]
        else:
            self.model.extend(bytes(size - len(self.model)))

    def fallocate(self, mode, off, length):
        if libc().fallocate(self.fd, mode, off, length):
            e = ctypes.get_errno()
            raise OSError(e, f"fallocate mode {mode:#x}: {os.strerror(e)}")
        if not mode & (FALLOC_PUNCH_HOLE | FALLOC_ZERO_RANGE |
                       FALLOC_COLLAPSE_RANGE | FALLOC_INSERT_RANGE):
            # allocation keeps the data, and may extend the file
            if not mode & FALLOC_KEEP_SIZE and \
                    off + length > len(self.model):
                self.model.extend(bytes(off + length - len(self.model)))
            return
        if mode == FALLOC_COLLAPSE_RANGE:
            del self.model[off:off + length]
            return
        if mode == FALLOC_INSERT_RANGE:
            self.model[off:off] = bytes(length)
            return
        end = min(off + length, len(self.model))
        if off < end:
            self.model[off:end] = bytes(end - off)

    def verify(self, what):
        st = os.fstat(self.fd)
        if st.st_size != len(self.model):
            raise Mismatch(f"{what}: size {st.st_size}, want "
                           f"{len(self.model)}")
        got = bytearray()
        while len(got) < st.st_size:
            chunk = os.pread(self.fd, min(4 * MIB, st.st_size - len(got)),
                             len(got))
            if not chunk:
                break
            got += chunk
        if got != self.model:
            raise Mismatch(f"{what}: {first_bad(got, self.model)}")

    def verify_all(self, what):
        self.verify(what + " (cached)")
        os.fsync(self.fd)
        drop_caches()
        self.verify(what + " (after fsync and cache drop)")

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def variant_name(v):
    """A variant as each_variant() names it: a partial() as its call, or
    the value itself."""
    if isinstance(v, functools.partial):
        return f"{v.func.__name__}({', '.join(map(repr, v.args))})"
    return str(v)


def each_variant(variants, run_one):
    """run_one(v) for each v of variants, all run even after one fails, so
    that a failure shows which others fail too: a list of what each run
    returned, or a Mismatch with every failure's message (an unexpected
    OSError of a run counts as its failure, named by the variant)."""
    results, failed = [], []
    for v in variants:
        try:
            results.append(run_one(v))
        except Mismatch as e:
            failed.append(str(e))
        except OSError as e:
            failed.append(f"{variant_name(v)}: {e}")
    if failed:
        raise Mismatch(" // ".join(failed))
    return results


def case_straddle(d):
    """Writes starting and ending at every alignment around folio and
    block boundaries, into holes, into cached data and past EOF."""
    seed = 1
    for fsz in FOLIOS:
        f = File(os.path.join(d, f"straddle-{fsz}"))
        f.write(0, pattern(seed, 3 * fsz))
        os.fsync(f.fd)
        drop_caches()
        for delta in (-4097, -4096, -4095, -512, -1, 0, 1, 511, 4095, 4096):
            for length in (1, 511, 4096, 4097, fsz - 1, fsz + 1):
                seed += 1
                off = fsz + delta
                f.write(off, pattern(seed, length))
                f.verify(f"straddle folio {fsz} at {off} len {length}")
        f.verify_all(f"straddle folio {fsz}")
        # Past EOF: partial blocks beyond the old size must read as zero.
        eof = len(f.model)
        f.write(eof + 3 * fsz + 7, pattern(seed + 1, 100))
        f.verify_all(f"write past EOF, folio {fsz}")
        f.close()
    print(f"straddle: {seed - 1} writes around the boundaries of "
          f"{len(FOLIOS)} folio sizes read back, zeros past the old EOF")


def case_truncate(d):
    """Truncate down and up inside dirty large folios: the tail of the
    block and folio beyond the new EOF must read as zero afterwards."""
    for fsz in FOLIOS:
        for cut in (fsz // 2 + 1234, fsz - 1, fsz + 1, 2 * fsz - 4096):
            f = File(os.path.join(d, f"trunc-{fsz}-{cut}"))
            f.write(0, pattern(cut, 2 * fsz))          # dirty, not synced
            f.truncate(cut)
            f.verify(f"truncate dirty {2 * fsz} to {cut}")
            f.truncate(2 * fsz + 100)                   # extend: zeros
            f.verify(f"truncate {cut} up to {2 * fsz + 100}")
            f.write(cut + 10, pattern(cut + 1, 50))
            f.verify_all(f"truncate {fsz} cut {cut}")
            f.close()
        # The same on a clean, cached folio.
        f = File(os.path.join(d, f"trunc-clean-{fsz}"))
        f.write(0, pattern(fsz, 2 * fsz))
        f.verify_all("before clean truncate")
        os.pread(f.fd, 2 * fsz, 0)
        f.truncate(fsz + 777)
        f.truncate(2 * fsz)
        f.verify_all(f"truncate clean cached folio {fsz}")
        f.close()
    print(f"truncate: down and up inside dirty and clean folios of "
          f"{len(FOLIOS)} sizes, the tails read as zero")


F2FS_IOC_GARBAGE_COLLECT = 0x4004f506
F2FS_IOC_GARBAGE_COLLECT_RANGE = 0x4018f50b
F2FS_IOC_DEFRAGMENT = 0xc010f508
FALLOC_KEEP_SIZE = 0x01
FALLOC_PUNCH_HOLE = 0x02
FALLOC_ZERO_RANGE = 0x10
FALLOC_COLLAPSE_RANGE = 0x08
FALLOC_INSERT_RANGE = 0x20


F2FS_IOC_MOVE_RANGE = 0xc020f509


def move_range(src, dst, pos_in, pos_out, length):
    """F2FS_IOC_MOVE_RANGE of [pos_in, pos_in + length) of File src to
    pos_out of File dst (block aligned; src may be dst), and the same on the
    models: the range moves, and reads as a hole in src afterwards."""
    arg = struct.pack("=I4xQQQ", dst.fd, pos_in, pos_out, length)
    fcntl.ioctl(src.fd, F2FS_IOC_MOVE_RANGE, arg)
    data = bytes(src.model[pos_in:pos_in + length])
    src.model[pos_in:pos_in + length] = bytes(length)
    if pos_out + length > len(dst.model):
        dst.model.extend(bytes(pos_out + length - len(dst.model)))
    dst.model[pos_out:pos_out + length] = data


def store_past_eof(fd, start, end, byte):
    """Store byte at [start, end) of fd's first page through a shared
    mapping, past EOF (fsx -e; Python's mmap refuses to map past EOF)."""
    addr = map_page(fd, 0, mmap.PROT_READ | mmap.PROT_WRITE)
    ctypes.memset(addr + start, byte, end - start)
    libc().munmap(addr, 4096)


def case_move_range(d):
    """F2FS_IOC_MOVE_RANGE between files whose large folios are cached:
    reads of both files afterwards, cached and from the disk, must see the
    move (the destination's new data, a hole in the source), with blocks
    moved by replacing their addresses (written since the last
    checkpoint) and by copying (checkpointed); and a destination grown
    past an EOF page that holds garbage stored through a mapping past EOF
    (fsx -e) must read zeros there, as after a write past EOF."""
    moves = lf = 0
    for ckpt in (False, True):
        tag = "checkpointed" if ckpt else "not checkpointed"
        src = File(os.path.join(d, f"mr-src-{ckpt}"))
        dst = File(os.path.join(d, f"mr-dst-{ckpt}"))
        src.write(0, pattern(300 + ckpt, 2 * MIB))
        dst.write(0, pattern(310 + ckpt, 2 * MIB))
        for f in (src, dst):
            os.fsync(f.fd)
        if ckpt:
            os.sync()                            # a checkpoint
        for f in (src, dst):
            f.verify(f"move-range files ({tag})")   # cached
        lf += large_folios(src.path, f"move-range source ({tag})")
        # Mapped too: a move must reach the mappings' pages.
        maps = [mmap.mmap(f.fd, 2 * MIB) for f in (src, dst)]
        for m in maps:
            m[4096:4096 + 4096]                      # fault in
        # Inside both files' EOF, from one file to the other and within
        # one file, a block and runs across folio boundaries.
        for s, t, pin, pout, ln in ((src, dst, 64 * KIB, 192 * KIB, 64 * KIB),
                                    (src, dst, 4 * KIB, 1 * MIB, 4 * KIB),
                                    (src, dst, 1020 * KIB, 60 * KIB,
                                     24 * KIB),
                                    (dst, dst, 1536 * KIB, 256 * KIB,
                                     128 * KIB)):
            move_range(s, t, pin, pout, ln)
            moves += 1
            for f, m, name in ((src, maps[0], "source"),
                               (dst, maps[1], "destination")):
                what = f"{name} after a move of {ln} from {pin} to {pout} " \
                    f"({tag})"
                f.verify(what + ", cached")
                if m[:] != f.model[:2 * MIB]:
                    raise Mismatch(what + ": its mapping reads other data")
        for m in maps:
            m.close()
        # Past the destination's EOF, over garbage stored past it.
        eof = File(os.path.join(d, f"mr-eof-{ckpt}"))
        eof.write(0, pattern(320 + ckpt, 100))
        os.fsync(eof.fd)
        if ckpt:
            os.sync()
        store_past_eof(eof.fd, 100, 4096, ord("X"))
        move_range(src, eof, 512 * KIB, 8 * KIB, 16 * KIB)
        moves += 1
        eof.verify(f"move past EOF over garbage ({tag}), cached")
        for f in (src, dst, eof):
            f.verify_all(f"move-range ({tag})")
            f.close()
    print(f"move-range: {moves} moves between and within cached, mapped "
          f"files ({lf} pages in large folios), with and without a "
          "checkpoint, read back; zeros past the old EOF")


def case_move_range_race(d):
    """F2FS_IOC_MOVE_RANGE while another process stores, through a shared
    mapping of the source, into one byte of the range moved, over and
    over: write faults (which take the invalidate lock shared) against the
    move's write-back-and-drop under both invalidate locks, for lockdep on
    the test kernel and for the data.  After each move the source range
    must read zeros and the destination range the source's old data, but
    for the stored byte in either (the store may land before or after the
    move), cached and on disk.  Blocks written since the last checkpoint
    are moved by address, checkpointed ones copied through the page cache.
    It does not catch a fault between the move's unlocked writeback and
    its locks (the window patch 2's drop before the exchange closes):
    from user space that window is too narrow to hit, and a source block
    dirtied in it is not written back after a move by address anyway (its
    address is NULL_ADDR by then)."""
    rounds = 0
    pin, pout, ln = 256 * KIB, 512 * KIB, 256 * KIB
    spot = 64 * KIB + 100                   # into the range moved
    for r in range(9):
        ckpt = r % 3 == 2
        src = File(os.path.join(d, f"mrr-src-{r}"))
        dst = File(os.path.join(d, f"mrr-dst-{r}"))
        src.write(0, pattern(330 + r, MIB))
        dst.write(0, pattern(340 + r, MIB))
        for f in (src, dst):
            os.fsync(f.fd)
        if ckpt:
            os.sync()
        for f in (src, dst):
            f.verify("move-range-race files")            # cached
        dst.write(pout, pattern(350 + r, ln))            # dirty
        pid = os.fork()
        if pid == 0:                # the storer: until killed
            try:
                m = mmap.mmap(src.fd, MIB)
                while True:
                    m[pin + spot] = 0x5a
            finally:
                os._exit(1)
        while os.pread(src.fd, 1, pin + spot) != b"Z":   # storing
            if os.waitpid(pid, os.WNOHANG)[0]:
                raise Mismatch("move-range-race: the storer died")
        move_range(src, dst, pin, pout, ln)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        # the stored byte: either value, in either file
        for f, at in ((src, pin + spot), (dst, pout + spot)):
            if os.pread(f.fd, 1, at) == b"Z":
                f.model[at] = 0x5a
        what = f"move-range-race round {r} " \
            f"({'checkpointed' if ckpt else 'not checkpointed'})"
        for f in (src, dst):
            f.verify_all(what)
            f.close()
        rounds += 1
    print(f"move-range-race: {rounds} moves under a storer through a "
          "mapping of the source, read back")


def case_punch(d):
    """Punch and zero ranges inside dirty and clean large folios, at
    unaligned offsets (partial blocks are zeroed in the cache)."""
    for mode in (FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, FALLOC_ZERO_RANGE):
        for fsz in FOLIOS:
            for dirty in (True, False):
                f = File(os.path.join(d, f"punch-{mode}-{fsz}-{dirty}"))
                f.write(0, pattern(fsz + mode, 3 * fsz))
                if not dirty:
                    f.verify_all("before punch")
                    os.pread(f.fd, 3 * fsz, 0)
                for off, ln in ((fsz - 100, 200), (fsz + 1, 4096),
                                (fsz + 4096, fsz), (fsz // 2 + 3, fsz)):
                    try:
                        f.fallocate(mode, off, ln)
                    except OSError as e:
                        raise Mismatch(f"punch: fallocate {mode:#x} "
                                       f"{off}+{ln}: {e}") from e
                    f.verify(f"fallocate {mode:#x} {off}+{ln} in "
                             f"{'dirty' if dirty else 'clean'} folio {fsz}")
                f.verify_all(f"fallocate {mode:#x} folio {fsz}")
                f.close()
    print(f"punch: holes punched and ranges zeroed in dirty and clean "
          f"folios of {len(FOLIOS)} sizes, at 4 offsets each")


def blocks_allocated(fd):
    """The 4 KiB blocks the file open at fd has allocated (st_blocks)."""
    return os.fstat(fd).st_blocks * 512 // 4096


def case_punch_eof(d):
    """A hole punched from inside EOF to past it reserves no block past
    EOF.  f2fs_punch_hole() zeroed the partial block at the range's end
    with fill_zero(), which reserves the block it zeroes, past EOF too:
    the block took space, and the fsync'd dnode carried it, so that
    roll-forward recovery after a crash grew the file over it (7.3's, with
    either folio size).  Here a 10 KiB file, a hole punched at 8192+8704
    (to 512 bytes into its fifth block), an fsync, F2FS_IOC_SHUTDOWN and a
    mount again: two blocks allocated, the size and data kept.  Also a
    hole punched to past EOF but inside the block at EOF, which must still
    zero that block's data (4096+6656), and a punch to inside a block
    fallocate() reserved past EOF, which must keep that block reserved."""
    f = File(os.path.join(d, "punch-eof-in"))
    f.write(0, pattern(197, 10 * KIB))
    os.fsync(f.fd)
    f.fallocate(FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, 4 * KIB,
                6 * KIB + 512)
    f.verify("punch-eof: a hole punched at 4096+6656 in a 10 KiB file")
    blocks = blocks_allocated(f.fd)
    f.close()
    if blocks != 2:
        raise Mismatch(f"punch-eof: a hole punched at 4096+6656 in a 10 KiB "
                       f"file: {blocks} blocks allocated, want 2")
    f = File(os.path.join(d, "punch-eof-kept"))
    f.write(0, pattern(198, 10 * KIB))
    f.fallocate(FALLOC_KEEP_SIZE, 12 * KIB, 16 * KIB)
    os.fsync(f.fd)
    f.fallocate(FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, 8 * KIB, 8 * KIB + 512)
    f.verify("punch-eof: a hole punched at 8192+8704 into blocks reserved "
             "past EOF")
    blocks = blocks_allocated(f.fd)
    f.close()
    if blocks != 5:
        raise Mismatch(f"punch-eof: a hole punched at 8192+8704 in a 10 KiB "
                       f"file with blocks 3 to 6 reserved past EOF: {blocks} "
                       "blocks allocated, want 5 (0, 1, and 4 to 6)")
    f = File(os.path.join(d, "punch-eof"))
    f.write(0, pattern(196, 10 * KIB))
    os.fsync(f.fd)
    f.fallocate(FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, 8 * KIB, 8 * KIB + 512)
    kept_after_shutdown(f, d, "punch-eof: a hole punched at 8192+8704 in a "
                        "10 KiB file", 2)
    print("punch-eof: a hole punched past EOF reserved no block there, the "
          "size recovered after a shutdown; one ending in the block at EOF "
          "zeroed it, one into blocks reserved past EOF kept them")


def case_dio(d):
    """O_DIRECT beside cached, dirty large folios: a direct read sees the
    dirty data, a direct write is seen by the next buffered read."""
    path = os.path.join(d, "dio")
    f = File(path)
    f.write(0, pattern(7, 4 * MIB))
    os.fsync(f.fd)
    f.write(MIB + 4096, pattern(8, 512 * KIB))             # dirty, cached
    dfd = os.open(path, os.O_RDWR | os.O_DIRECT)
    try:
        buf = mmap.mmap(-1, MIB)                            # page aligned
        n = os.preadv(dfd, [buf], MIB)
        if n != MIB or buf[:] != f.model[MIB:2 * MIB]:
            raise Mismatch("O_DIRECT read does not see dirty cached data")
        os.pread(f.fd, 4 * MIB, 0)                          # cache it all
        data = pattern(9, 256 * KIB)
        buf[:len(data)] = data
        mv = memoryview(buf)[:len(data)]
        if os.pwritev(dfd, [mv], 2 * MIB + 64 * KIB) != len(data):
            raise Mismatch("short O_DIRECT write")
        f.model[2 * MIB + 64 * KIB:2 * MIB + 64 * KIB + len(data)] = data
        f.verify("buffered read after O_DIRECT write into cached folios")
        # Dirty the cache again, then overwrite part of it directly.
        f.write(3 * MIB - 100, pattern(10, 8192))
        data = pattern(11, 4096)
        buf[:4096] = data
        if os.pwritev(dfd, [memoryview(buf)[:4096]], 3 * MIB) != 4096:
            raise Mismatch("short O_DIRECT write")
        f.model[3 * MIB:3 * MIB + 4096] = data
        f.verify_all("O_DIRECT write over dirty cached folio")
    finally:
        os.close(dfd)
        f.close()
    dio_into_holes(d)
    print("dio: O_DIRECT reads see dirty cached data, buffered reads "
          "see O_DIRECT writes; one over holes and data reads back")


def dio_into_holes(d):
    """A 6 MiB O_DIRECT write over a hole, 1 MiB of data and a hole,
    inside EOF: f2fs_map_blocks() ends a direct write's run where blocks
    it allocates meet blocks it does not (patch 73; in mode=lfs it
    allocates all), and takes back the address of a block it allocated
    that can't join the run, as where the log moves on to another
    segment, for the next mapping to allocate again.  All of it reads
    back, from 1536 blocks and a direct node block (i_blocks counts it:
    the inode addresses fewer than 1024)."""
    f = File(os.path.join(d, "dio-holes"))
    f.truncate(6 * MIB)
    f.write(2 * MIB, pattern(12, MIB))
    os.fsync(f.fd)
    buf = mmap.mmap(-1, 6 * MIB)                            # page aligned
    data = pattern(13, 6 * MIB)
    buf[:] = data
    dfd = os.open(f.path, os.O_RDWR | os.O_DIRECT)
    try:
        n = os.pwritev(dfd, [buf], 0)
    finally:
        os.close(dfd)
    if n != len(data):
        f.close()
        raise Mismatch(f"an O_DIRECT write of {len(data)} bytes over holes "
                       f"and data wrote {n}")
    f.model[:] = data
    f.verify_all("an O_DIRECT write over holes and data")
    blocks = blocks_allocated(f.fd)
    f.close()
    # f2fs counts the direct node block; XFS (the control) keeps the
    # file's one extent in its inode.
    want = len(data) // 4096 + (mount_entry(d)[2] == "f2fs")
    if blocks != want:
        raise Mismatch(f"an O_DIRECT write of {len(data)} bytes over holes "
                       f"and data: {blocks} blocks allocated, want {want}")


def interleave(f, filler, size, seed):
    """Write f and filler in alternating 64 KiB chunks, each fsynced, then
    delete the filler: f's segments are half valid, good GC victims."""
    for i in range(0, size, 64 * KIB):
        f.write(i, pattern(seed + i, 64 * KIB))
        os.fsync(f.fd)
        filler.write(i, pattern(seed + 1 + i, 64 * KIB))
        os.fsync(filler.fd)
    filler.close()
    os.unlink(filler.path)
    os.sync()


def gc_victim_cached(d, name, size, seed):
    """A file of size bytes interleaved with a filler (interleave()), so
    that GC can take its segments, dropped from the cache and read back by
    readahead (checked against the model); return it and its pages in
    large folios (large_folios())."""
    f = File(os.path.join(d, name))
    interleave(f, File(os.path.join(d, name + "-filler")), size, seed)
    drop_caches()
    f.verify(f"{name}: interleaved file")               # cached by readahead
    return f, large_folios(f.path, f"{name}: interleaved file")


def gc_file(f, sync):
    """GC every segment that holds a block of f (sync=0: background GC,
    which marks the blocks dirty in the cache; sync=1: foreground GC,
    which writes them at once).  Return a line saying what was moved."""
    segs = set()
    out = run(["filefrag", "-v", "-b4096", f.path]).stdout
    for m in re.finditer(r"^\s*\d+:\s+\d+\.\.\s*\d+:\s+(\d+)\.\."
                         r"\s*(\d+):", out, re.M):
        first, last = int(m.group(1)), int(m.group(2))
        segs.update(range(first - first % 512, last + 1, 512))
    moved, errs = 0, set()
    for seg in sorted(segs):
        try:
            fcntl.ioctl(f.fd, F2FS_IOC_GARBAGE_COLLECT_RANGE,
                        struct.pack("<IxxxxQQ", sync, seg, 511))
            moved += 1
        except OSError as e:
            errs.add(e.strerror)
    if not moved:
        raise Mismatch(f"GC (sync={sync}) of the file's {len(segs)} "
                       f"segments all failed: {', '.join(sorted(errs))}")
    return f"sync={sync}: {moved} of {len(segs)} segments"


TRACE = "/sys/kernel/tracing"


def traced(events, fn):
    """fn()'s result, and the text of the trace of events (as
    "block/block_bio_queue") recorded while it ran (the test kernel has
    tracing, the bench kernel none)."""
    if not os.path.isdir(f"{TRACE}/events"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACE],
                       capture_output=True)
    for ev in events:
        if not os.path.exists(f"{TRACE}/events/{ev}/enable"):
            raise Mismatch(f"no {TRACE}/events/{ev}: this case needs a "
                           "kernel with tracing (./lab test --kernel test)")

    def put(name, val):
        with open(f"{TRACE}/{name}", "w") as t:
            t.write(f"{val}\n")
    put("tracing_on", 0)
    # Without recording task names: enabling an event would otherwise
    # register probes on sched_wakeup and sched_switch, and patch their
    # static keys, ttwu_do_wakeup()'s among them, while timer interrupts
    # run it; under TCG a CPU once hit the patch's int3 after the patch
    # had ended ("Oops: int3" in ttwu_do_activate(), a panic in the
    # guest).  Only the traced events' sites are patched now.
    put("options/record-cmd", 0)
    put("buffer_size_kb", 16384)
    put("trace", "")
    for ev in events:
        put(f"events/{ev}/enable", 1)
    put("tracing_on", 1)
    try:
        out = fn()
    finally:
        put("tracing_on", 0)
        for ev in events:
            put(f"events/{ev}/enable", 0)
    for stats in glob.glob(f"{TRACE}/per_cpu/cpu*/stats"):
        with open(stats) as t:
            if re.search(r"^overrun: [1-9]", t.read(), re.M):
                raise Mismatch("the trace buffer overran: events lost")
    with open(f"{TRACE}/trace") as t:
        text = t.read()
    put("trace", "")
    return out, text


def queued_bios(dev, fn, op="W"):
    """fn()'s result, and the bios of op ("W" writes, "R" reads) queued to
    dev while it ran, each as (first 4 KiB block, number of blocks) (the
    block_bio_queue tracepoint)."""
    st = os.stat(dev).st_rdev
    want = f"{os.major(st)},{os.minor(st)}"
    out, text = traced(["block/block_bio_queue"], fn)
    bios = []
    for m in re.finditer(r"block_bio_queue: (\d+,\d+) (\S+) (\d+) \+ "
                         r"(\d+)", text):
        if m.group(1) == want and op in m.group(2) and int(m.group(4)):
            bios.append((int(m.group(3)) // 8, int(m.group(4)) // 8))
    return out, bios


SUBMIT_EVENTS = ["f2fs/f2fs_submit_folio_write", "f2fs/f2fs_submit_folio_bio"]


def submit_writes(ino, text):
    """The data writes of inode ino in text, a trace of f2fs's submit
    tracepoints (f2fs_submit_folio_write out of place, f2fs_submit_folio_bio
    in place): (first file block, blocks, old and new disk address of the
    first block), in the order submitted."""
    events = re.findall(rf"ino = {ino}, folio_index = (0x[0-9a-f]+), "
                        r"blocks = (\d+), oldaddr = (0x[0-9a-f]+), "
                        r"newaddr = (0x[0-9a-f]+), rw = WRITE", text)
    if not events:
        raise Mismatch(f"no write event of inode {ino} names a number of "
                       f"blocks: {text.strip()[-300:]!r}")
    return [(int(i, 16), int(n), int(o, 16), int(a, 16))
            for i, n, o, a in events]


def check_named(what, events, phys, before=None):
    """Check the blocks events (submit_writes()) name: each block at the
    disk address the file maps it to now (phys_blocks()), named once; with
    before (the map before the writes), each event's first block moved
    from where it was.  Return the blocks named."""
    got = []
    for idx, n, old, addr in events:
        if before is not None and before.get(idx) != old:
            raise Mismatch(f"{what}: an event names block {idx} moved from "
                           f"{old}, the file mapped it at {before.get(idx)}")
        for i in range(n):
            if phys.get(idx + i) != addr + i:
                raise Mismatch(f"{what}: an event names block {idx + i} at "
                               f"{addr + i}, the file maps it at "
                               f"{phys.get(idx + i)}")
            got.append(idx + i)
    twice = sorted(b for b in set(got) if got.count(b) > 1)
    if twice:
        raise Mismatch(f"{what}: {len(twice)} blocks named more than once, "
                       f"the first {twice[0]}")
    return sorted(got)


def case_submit_trace(d):
    """f2fs's tracepoints of data writes submitted (f2fs_submit_folio_write
    out of place, f2fs_submit_folio_bio in place) name the blocks written:
    for a block or a run of blocks of a large folio, the first block's file
    index and disk address, and the number of blocks, as an order-0 folio's
    event names its one block; blktrace-like tools map writes back to files
    by them.  Each dirty block in one event exactly, at the disk address
    the file maps it to after, when they are written back
    (sync_file_range: dirty blocks alone, in runs, and the whole of a
    folio), committed by an atomic write (block by block, to the COW
    inode, whose addresses the commit gives the file), and moved by
    foreground GC (GC of an encrypted file copies through META_MAPPING)."""
    size = 4 * MIB
    nblk = size // 4096
    dirty = sorted({5, 40, 1023} | set(range(9, 15)) | set(range(512, 1000)))
    report = []
    for how in ("writeback", "atomic"):
        what = f"submit-trace ({how})"
        f = File(os.path.join(d, f"submit-trace-{how}"))
        f.write(0, pattern(43, size))
        write_back(f)
        os.pread(f.fd, size, 0)                         # cached
        ino = os.fstat(f.fd).st_ino
        lf = large_folios(f.path, f"{what}: cached file")
        before = phys_blocks(f.path)
        if how == "atomic":
            start_atomic(f, False)
        for b in dirty:
            f.write(b * 4096, pattern(b + 44, 4096))
        _, text = traced(SUBMIT_EVENTS,
                         lambda: write_back(f) if how == "writeback" else
                         end_atomic(f, "commit", None))
        events = submit_writes(ino, text)
        # an atomic write's first address is the COW inode's (reserved)
        got = check_named(what, events, phys_blocks(f.path),
                          before if how == "writeback" else None)
        if got != dirty:
            extra = sorted(set(got) - set(dirty))
            lost = sorted(set(dirty) - set(got))
            raise Mismatch(f"{what}: {len(got)} blocks in {len(events)} "
                           f"events, want the {len(dirty)} dirty ones "
                           f"(not dirty: {extra[:5]}, missing: {lost[:5]})")
        f.verify_all(f"{what}: written")
        f.close()
        report.append(f"{how} {len(dirty)} of {nblk} in {len(events)} "
                      f"events ({lf} pages in large folios)")
    f, lf = gc_victim_cached(d, "submit-trace-gc", size, 45)
    ino = os.fstat(f.fd).st_ino
    before = phys_blocks(f.path)
    moved, text = traced(SUBMIT_EVENTS, lambda: gc_file(f, 1))
    events = submit_writes(ino, text)
    got = check_named("submit-trace (GC)", events, phys_blocks(f.path),
                      before)
    # GC refuses a segment a log is writing into (gc_bios)
    if len(got) < nblk // 2:
        raise Mismatch(f"submit-trace (GC {moved}): {len(got)} blocks "
                       f"named, want half the file's {nblk} at least")
    f.verify("submit-trace (GC): after GC (cached)")
    drop_caches()
    f.verify_all("submit-trace (GC)")
    f.close()
    report.append(f"GC {len(got)} in {len(events)} events ({lf} pages in "
                  "large folios)")
    print(f"submit-trace: blocks named right: {'; '.join(report)}")


def case_gc_bios(d):
    """Foreground GC of a file cached in large folios must write the blocks
    it moves in bios as large as order-0 folios get: moved one call at a
    time, a block found its folio under writeback for the block before and
    waited for it, one bio a block.  The block_bio_queue tracepoint counts
    them (brd does not account its I/O in /sys/block/DEV/stat)."""
    f = File(os.path.join(d, "gc-bios"))
    interleave(f, File(os.path.join(d, "gc-bios-filler")), 8 * MIB, 140)
    lf = large_folios(f.path, "gc-bios: the file cached before GC")
    what, bios = queued_bios(mount_source(d), lambda: gc_file(f, 1))
    ios, blocks = len(bios), sum(n for _, n in bios)
    # GC refuses a segment a log is writing into, which may hold some of
    # the file on a filesystem that other cases used before
    if blocks < 4 * MIB // 4096:
        raise Mismatch(f"gc-bios: GC ({what}) wrote {blocks} blocks, want "
                       f"half the file's {8 * MIB // 4096} at least")
    if blocks < 8 * ios:
        raise Mismatch(f"gc-bios: GC ({what}) wrote {blocks} blocks in {ios} "
                       "bios, want 8 blocks a bio or more")
    f.verify("gc-bios: after GC (cached)")
    drop_caches()
    f.verify("gc-bios: after GC (from disk)")
    f.close()
    print(f"gc-bios: {what}: {blocks} blocks in {ios} bios, {lf} pages in "
          "large folios")


def large_folios(path, what, rng=()):
    """Pages of path's page cache in large folios (folio-stat, over the
    range (offset, length) if given), checked against what the variant
    under test gives (EDGES_FOLIOS: large or small; unchecked when
    unset)."""
    return want_folios(folio_stat(path, rng).large, what)


def want_folios(lf, what):
    """lf, a count of pages in large folios, checked against what the
    variant under test gives (EDGES_FOLIOS, as for large_folios())."""
    want = os.environ.get("EDGES_FOLIOS")
    if (want == "large" and not lf) or (want == "small" and lf):
        raise Mismatch(f"{what}: want {want} folios, {lf} pages are in "
                       "large folios")
    return lf


def case_gc(d):
    """f2fs GC moves blocks of files whose large folios are cached, some of
    them dirty: data must survive, in the cache and on disk."""
    # Interleave the file's blocks with a filler's, then delete the
    # filler: the file's segments are half valid, good GC victims.
    f = File(os.path.join(d, "gc"))
    interleave(f, File(os.path.join(d, "gc-filler")), 8 * MIB, 20)
    os.pread(f.fd, 8 * MIB, 0)                              # cached
    f.write(3 * MIB + 5, pattern(40, 100 * KIB))            # some dirty
    os.fsync(f.fd)
    f.write(5 * MIB + 5, pattern(41, 100 * KIB))            # dirty again
    # Background GC (sync=0) of every segment holding a block of the file
    # marks the blocks dirty in the cached folios for writeback; foreground
    # GC (sync=1) then writes the blocks of the segments they are in now.
    report = []
    for sync in (0, 1):
        report.append(gc_file(f, sync))
        f.verify(f"after GC sync={sync} (cached)")
        f.write(6 * MIB + 3, pattern(42 + sync, 70 * KIB))  # dirty again
    print(f"gc: collected {', '.join(report)}")
    f.verify_all("after GC")
    f.close()


RELOCK_SIZE = 254 * KIB + 100     # EOF in the last block of a 256 KiB folio
KPF_WRITEBACK = 1 << 8              # /proc/kpageflags


def relock_layout(d, n):
    """A file of RELOCK_SIZE bytes cached in one 256 KiB folio, whose first
    128 KiB lie in one segment with the rest, 100 blocks of another file
    between them (written 4 KiB at a time: order-0 folios, which GC moves
    one by one, each a bvec of GC's bio: fewer than a bio holds, so that
    the bio is still held back when GC gets to the rest of the folio), the
    segment neither full nor the log's current one; return the file and
    the segment's first block, or None and where the blocks fell.  Every
    write back here is of more than 16 blocks of a file, which f2fs puts
    in its warm data log (fewer go to the hot one: min_hot_blocks)."""
    seed = 700 + 10 * n
    # Start at a segment's start: a probe shows where the warm data log
    # is, a pad fills the rest of its segment.
    probe = File(os.path.join(d, f"relock{n}-probe"))
    probe.write(0, pattern(seed, 32 * 4096))
    os.fsync(probe.fd)
    at = phys_blocks(probe.path)[31]
    pad = File(os.path.join(d, f"relock{n}-pad"))
    left = 511 - at % 512
    pad.write(0, pattern(seed + 1, (left + (512 if left < 17 else 0)) *
                         4096))
    os.fsync(pad.fd)
    f = File(os.path.join(d, f"relock{n}"))
    f.write(0, pattern(seed + 2, 128 * KIB))
    os.fsync(f.fd)
    b = File(os.path.join(d, f"relock{n}-between"))
    for i in range(100):
        b.write(i * 4096, pattern(seed + 3 + i, 4096))
    os.fsync(b.fd)
    drop_caches()
    # One 256 KiB write makes one 256 KiB folio (a write's size sets its
    # folio's order); writeback updates its first 128 KiB in place
    # (IPU_FORCE, a small volume's policy) and puts the rest after b's.
    f.write(0, bytes(f.model) + pattern(seed + 4, 128 * KIB))
    f.truncate(RELOCK_SIZE)
    os.fsync(f.fd)
    # GC leaves the data log's current segment alone, and a full one
    # (valid blocks it could not free): fill it, then free what filled it
    fill = File(os.path.join(d, f"relock{n}-fill"))
    fill.write(0, pattern(seed + 5, 400 * 4096))
    os.fsync(fill.fd)
    fill.close()
    os.unlink(fill.path)
    m = phys_blocks(f.path)
    seg = m[0] - m[0] % 512
    if any(m[i] != m[0] + i for i in range(32)) or \
            m[32] - m[31] < 100 or m[63] - seg >= 512:
        return None, (f"blocks 0, 31, 32, 63 at {m[0]}, {m[31]}, {m[32]}, "
                      f"{m[63]}")
    return f, seg


def wait_exit(pid, secs):
    """The exit status of child pid, or None if it is still running after
    secs seconds."""
    end = time.monotonic() + secs
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.1)
    return None


def quiet_child():
    """A child's output goes nowhere: one stuck in the kernel must not keep
    the pipe the case's output goes to open."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)


def case_gc_relock(d):
    """Foreground GC of a cached large folio whose blocks lie apart in the
    victim, another file's blocks between them, while another process,
    whenever the folio is under writeback (/proc/kpageflags), asks
    fallocate() for a block past EOF, which locks the folio across EOF and
    waits for its writeback (truncate_inode_pages_range() zeroing the
    folio past EOF).  GC must send the write of the blocks it moved before
    it unlocks the folio: held back in the cold data log's bio until GC's
    end, that write keeps the other process waiting with the folio locked,
    while GC waits for the folio's lock to move the rest of its blocks;
    and with GC's lock held, every checkpoint waits too.  An order-0
    folio holds one block, which GC moves once.  A GC still
    running after 60 s is taken for that deadlock: a cold file's write (an
    .avi, one of mkfs.f2fs's cold extensions) then sends the bio and ends
    it, and the case fails."""
    for n in range(4):
        f, seg = relock_layout(d, n)
        if f:
            break
    else:
        raise Mismatch("gc-relock: in 4 tries the file's two 128 KiB never "
                       "lay in one segment with the other file's blocks "
                       f"between them ({seg})")
    f.write(40 * 4096, pattern(790, 4096))    # dirty: no split of it
    order = folio_order_at(f.fd, 0)
    want_folios(1 << order if order >= 6 else 0,
                "gc-relock: the file's 256 KiB folio")
    stop = os.path.join(d, "relock-stop")
    pfn = page_pfn(f.fd, 0)
    racer = os.fork()
    if not racer:                       # until told to stop, or 5 minutes
        quiet_child()
        fd = os.open(f.path, os.O_RDWR)
        kf = os.open("/proc/kpageflags", os.O_RDONLY)
        end = time.monotonic() + 300
        calls = 0
        while time.monotonic() < end and not os.path.exists(stop):
            # the folio under writeback: lock it and wait for that
            flags = struct.unpack("<Q", os.pread(kf, 8, pfn * 8))[0]
            if flags & KPF_WRITEBACK:
                libc().fallocate(fd, FALLOC_KEEP_SIZE, RELOCK_SIZE, 4096)
                calls += 1
        with open(stop + "-calls", "w") as out:
            out.write(f"{calls}\n")
        os._exit(0)
    time.sleep(0.2)
    gc = os.fork()
    if not gc:
        quiet_child()
        try:
            fcntl.ioctl(f.fd, F2FS_IOC_GARBAGE_COLLECT_RANGE,
                        struct.pack("<IxxxxQQ", 1, seg, 511))
        except OSError as e:
            os._exit(e.errno)
        os._exit(0)
    rc = wait_exit(gc, 60)
    stuck = rc is None
    if stuck:
        g = os.open(os.path.join(d, "relock-unstick.avi"),
                    os.O_RDWR | os.O_CREAT, 0o644)
        os.pwrite(g, pattern(791, 4096), 0)
        # WAIT_BEFORE | WRITE | WAIT_AFTER: a WB_SYNC_ALL writeback, and
        # no checkpoint, which waits for GC's lock
        libc().sync_file_range(g, 0, 4096, 7)
        os.close(g)
        rc = wait_exit(gc, 60)
    with open(stop, "w"):
        pass
    if wait_exit(racer, 60) is None:
        raise Mismatch("gc-relock: the fallocate() loop did not stop in 60 s")
    os.unlink(stop)
    with open(stop + "-calls") as out:
        calls = int(out.read())
    os.unlink(stop + "-calls")
    if stuck:
        raise Mismatch("gc-relock: foreground GC did not end in 60 s, with "
                       "a fallocate() past EOF waiting for the writeback "
                       "of the folio GC had moved blocks of" +
                       (": a cold file's write ended it" if rc is not None
                        else "; still stuck after a cold file's write"))
    if rc:
        raise Mismatch(f"gc-relock: GC of the segment failed: "
                       f"{os.strerror(rc)}")
    left = [i for i, p in phys_blocks(f.path).items()
            if seg <= p < seg + 512]
    if left:
        raise Mismatch(f"gc-relock: GC left blocks {left} of the file in "
                       "the segment")
    f.verify("gc-relock: after GC (cached)")
    f.verify_all("gc-relock: after GC")
    print(f"gc-relock: GC moved the folio's blocks from the segment at "
          f"block {seg} (layout try {n + 1}), with {calls} fallocate() "
          "calls past EOF made while the folio was under writeback")
    f.close()


def case_gc_mapped(d):
    """Foreground GC of the blocks of a cached folio mapped writable and
    dirtied through the mapping write-protects the mapping, as writeback
    does: a store after the copy takes a write fault, which waits for the
    write where the device needs stable pages (->page_mkwrite()).  A store
    into each page whose block GC moved must fault (a write fault makes
    one pte writable).  The folio keeps its dirty blocks, and every store
    reaches the disk.  Not for encrypted or fs-verity files: f2fs moves
    their blocks with move_data_block(), which copies the block on disk
    and leaves the cached folio, and its ptes, alone (crypt-gc and
    verity-gc cover them)."""
    size = 2 * MIB
    f, lf = gc_victim_cached(d, "gc-mapped", size, 170)
    orders = folio_stat(f.path).orders
    iostat_enable(d)
    m = mmap.mmap(f.fd, size)

    def store(off, n):
        b = bytes([f.model[off] ^ (0x30 + n)])
        m[off:off + 1] = b
        f.model[off:off + 1] = b
    try:
        for off in range(7, size, 4096):
            store(off, 1)
        # GC cannot take the log's current segment: count the blocks moved
        old = phys_blocks(f.path)
        gc = gc_file(f, 1)
        new = phys_blocks(f.path)
        moved = [b for b in sorted(old) if new.get(b) != old[b]]
        before = iostat_mapped(d)
        for b in moved:
            store(b * 4096 + 14, 2)
        faults = (iostat_mapped(d) - before) // 4096
    finally:
        m.close()
    if not moved or faults < len(moved):
        raise Mismatch(f"stores to the {len(moved)} pages whose blocks "
                       f"foreground GC moved ({lf} pages in large folios, "
                       f"{orders.get(0, 0)} folios of order 0) took {faults} "
                       "write faults, want one each: GC left them mapped "
                       "writable")
    f.verify_all("stores through a mapping before and after GC")
    f.close()
    print(f"gc-mapped: {lf} pages in large folios, {orders.get(0, 0)} "
          f"folios of order 0; GC {gc} moved {len(moved)} blocks, and a "
          f"store into each took {faults} write faults")


def case_overwrite_gc(d):
    """A buffered overwrite of blocks the read extent cache maps balances
    the filesystem before it dirties the cache, as 7.3's walk of the
    dnodes did (f2fs_map_blocks(), F2FS_GET_BLOCK_PRE_AIO): with free
    sections short, foreground GC runs.  reserved_segments set one above
    the free ones makes every f2fs_balance_fs() run it, which
    gc_foreground_calls counts."""
    f = File(os.path.join(d, "overwrite-gc"))
    f.write(0, pattern(180, 256 * KIB))
    os.fsync(f.fd)
    drop_caches()
    f.verify("file written back")
    os.sync()
    with sysfs_set(d, "reserved_segments",
                   sysfs_int(d, "free_segments") + 1):
        calls = sysfs_int(d, "gc_foreground_calls")
        f.write(4096, pattern(181, 64 * KIB))
        calls = sysfs_int(d, "gc_foreground_calls") - calls
    if not calls:
        raise Mismatch("a buffered overwrite with free sections short ran "
                       "no foreground GC")
    f.verify_all("overwrite with GC due")
    f.close()
    print(f"overwrite-gc: {calls} foreground GC call(s) in a 64 KiB "
          "overwrite with free sections short")


def phys_blocks(path):
    """{file block: disk block} from filefrag."""
    out = run(["filefrag", "-v", "-b4096", path]).stdout
    m = {}
    for e in re.finditer(r"^\s*\d+:\s+(\d+)\.\.\s*(\d+):\s+(\d+)\.\.",
                         out, re.M):
        lo, hi, ph = int(e.group(1)), int(e.group(2)), int(e.group(3))
        for i in range(lo, hi + 1):
            m[i] = ph + i - lo
    return m


def case_gc_mark(d):
    """GC marks only the blocks it moves: in a dirty 64 KiB folio whose
    first 4 blocks background GC moves, the other 12 blocks are written
    with the user's data, not to the cold log with the moved ones."""
    f = File(os.path.join(d, "gc-mark"))
    f.write(0, pattern(150, 16 * KIB))
    os.fsync(f.fd)
    # Small fsynced writes go to the same log as f's first blocks: 2 MiB
    # of them close f's segment, which makes it a GC victim.
    filler = File(os.path.join(d, "gc-mark-filler"))
    for i in range(0, 2 * MIB + 64 * KIB, 64 * KIB):
        filler.write(i, pattern(151 + i, 64 * KIB))
        os.fsync(filler.fd)
    filler.close()
    os.unlink(filler.path)
    os.sync()
    first = phys_blocks(f.path)[0]
    # One 64 KiB folio, dirtied by the user's write: blocks 0-3 exist on
    # disk, 4-15 are new.
    os.posix_fadvise(f.fd, 0, 0, os.POSIX_FADV_DONTNEED)
    f.write(0, pattern(152, 64 * KIB))
    lf = large_folios(f.path, "64 KiB write")
    # Background GC of the segment of blocks 0-3 marks them, in the cache.
    fcntl.ioctl(f.fd, F2FS_IOC_GARBAGE_COLLECT_RANGE,
                struct.pack("<IxxxxQQ", 0, first, 1))
    os.fsync(f.fd)
    after = phys_blocks(f.path)
    if after[0] == first:
        raise Mismatch(f"gc-mark: GC of block {first} left blocks 0-3 "
                       "where they were: it moved nothing")
    if after[4] == after[3] + 1:
        raise Mismatch(f"gc-mark: blocks 0-15 written contiguously from "
                       f"{after[0]}: the user's blocks 4-15 went to the "
                       "log of the blocks GC moved")
    f.verify_all("GC of part of a dirty folio")
    f.close()
    print(f"gc-mark: blocks 0-3 moved from {first} to {after[0]}, the "
          f"user's 4-15 written at {after[4]} ({lf} pages in large folios)")

def case_holes(d):
    """Reads of a sparse file, which skip each run of holes a dnode holds
    at once: runs of never-written blocks (NULL_ADDR) and of reserved ones
    (fallocate: NEW_ADDR) in the inode's own block addresses and in direct
    nodes, ending at written blocks, at dnode boundaries and inside
    folios, after written blocks in one map.  Read cold in reads of random
    sizes and offsets, then whole; then with a block written into a hole
    and not written back (uptodate in a folio the read fills around it).
    The file's cache must be in large folios where the variant gives them.
    Defragmentation, the other caller that skips holes, moves the written
    blocks of the same file together, holes left as they are."""
    rng = random.Random(70)
    size = 12 * MIB                     # the inode's dnode and 3 more
    f = File(os.path.join(d, "holes"))
    f.truncate(size)
    for i in range(60):
        blk = rng.randrange(size // 4096)
        n = min(rng.choice((1, 1, 2, 3, 7, 16, 40)), size // 4096 - blk)
        off = blk * 4096 + rng.choice((0, 0, 0, 1, 2049))
        f.write(off, pattern(700 + i, n * 4096 - off % 4096))
        os.fsync(f.fd)          # on disk in the order written: fragmented
    for i in range(6):
        blk = rng.randrange(size // 4096 - 64)
        f.fallocate(0, blk * 4096, rng.choice((4, 24, 64)) * 4096)
    os.fsync(f.fd)
    drop_caches()
    for i in range(300):
        off = rng.randrange(size)
        n = min(rng.choice((1, 4096, 5000, 16 * KIB, 64 * KIB, 300 * KIB,
                            MIB)), size - off)
        got = os.pread(f.fd, n, off)
        if got != f.model[off:off + n]:
            raise Mismatch(f"holes: read of {n} at {off}: "
                           f"{first_bad(got, f.model[off:off + n], off)}")
        if i % 10 == 9:
            os.posix_fadvise(f.fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.posix_fadvise(f.fd, 0, 0, os.POSIX_FADV_DONTNEED)
    f.verify("holes: whole file, cold")
    lf = large_folios(f.path, "holes: sparse file read cold")
    # A block written into a hole stays in the cache only, uptodate in a
    # folio the next read fills with the holes around it.
    os.posix_fadvise(f.fd, 0, 0, os.POSIX_FADV_DONTNEED)
    hole = next(b for b in range(1500, size // 4096)
                if not any(f.model[b * 4096:(b + 1) * 4096]))
    f.write(hole * 4096 + 7, pattern(790, 100))
    f.verify("holes: a block written into a hole, cached")
    f.verify_all("holes")
    # Defragmentation (out of place: not under in-place update policies).
    before = phys_blocks(f.path)
    with sysfs_set(d, "ipu_policy", 0):
        fcntl.ioctl(f.fd, F2FS_IOC_DEFRAGMENT,
                    struct.pack("<QQ", 0, size))
    f.verify("holes: after defragmentation (cached)")
    os.fsync(f.fd)
    after = phys_blocks(f.path)
    if after == before:
        raise Mismatch("holes: defragmentation moved no block")
    f.verify_all("holes: after defragmentation")
    moved = sum(after[b] != before.get(b) for b in after)
    print(f"holes: {size // 4096} blocks, {len(before)} written; 300 cold "
          f"reads and whole ({lf} pages in large folios); "
          f"defragmentation moved {moved} blocks")


FS_IOC_ENABLE_VERITY = 0x40806685
FS_VERITY_HASH_ALG_SHA256 = 1
FS_VERITY_HASH_ALG_SHA512 = 2


def enable_verity(path, alg=FS_VERITY_HASH_ALG_SHA256, block=4096):
    """FS_IOC_ENABLE_VERITY, by default with SHA-256 and 4 KiB Merkle
    blocks."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, FS_IOC_ENABLE_VERITY,
                    struct.pack("<IIIIQII", 1, alg, block, 0, 0, 0, 0)
                    + bytes(96))
    finally:
        os.close(fd)


def case_verity_gc(d):
    """GC of fs-verity files whose large folios are cached.  f2fs moves the
    blocks of verity files through META_MAPPING (read into and written from
    an order-0 copy there), not through the file's folios, and at once,
    for background GC too: one file is collected in the background
    (sync=0), another in the foreground (sync=1), as a block moved once
    lands in the current segment, which GC doesn't pick.  The data must
    read back right, from the cache and from disk."""
    report = []
    for sync in (0, 1):
        f = File(os.path.join(d, f"verity-gc-{sync}"))
        interleave(f, File(os.path.join(d, f"verity-gc-filler-{sync}")),
                   4 * MIB, 80 + sync)
        f.close()
        enable_verity(f.path)
        f.fd = os.open(f.path, os.O_RDONLY)
        drop_caches()
        f.verify(f"verity file before GC sync={sync}")
        lf = large_folios(f.path, "verity file")
        report.append(f"{gc_file(f, sync)} with {lf} pages in large folios")
        f.verify(f"verity file after GC sync={sync} (cached)")
        os.sync()
        drop_caches()
        f.verify(f"verity file after GC sync={sync} (from disk)")
        f.close()
    print(f"verity-gc: {'; '.join(report)}")

def case_verity_read(d):
    """fs-verity enabled on a file whose large folios are cached, some of
    them dirty: FS_IOC_ENABLE_VERITY writes them back and builds the Merkle
    tree past EOF through the same page cache.  The data must then read
    back, verified, from the cache and from disk, in large folios."""
    f = File(os.path.join(d, "verity-read"))
    f.write(0, pattern(120, 6 * MIB + 3 * KIB))         # partial last block
    os.fsync(f.fd)
    f.write(MIB + 7, pattern(121, 300 * KIB))           # dirty when enabled
    f.close()                   # enabling verity needs no writer open
    enable_verity(f.path)
    f.fd = os.open(f.path, os.O_RDONLY)
    f.verify("verity enabled on cached folios (cached)")
    drop_caches()
    f.verify("verity enabled on cached folios (from disk)")
    lf = large_folios(f.path, "verity file read back")
    f.close()
    print(f"verity-read: {lf} pages in large folios, verified")


def case_verity_eof(d):
    """fs-verity keeps the Merkle tree in the page cache past EOF, from the
    next 64 KiB boundary on, and marks each of its pages checked
    (PG_checked, which a page of a large folio cannot carry).  A large
    folio that a truncate left across EOF (it cannot be split while dirty)
    must not take the tree into its tail: once verity is enabled, no folio
    of the file may reach past its last page, and the data must read back
    verified, the tree read from the cache, then from disk."""
    f = File(os.path.join(d, "verity-eof"))
    f.write(0, pattern(130, MIB))
    os.fsync(f.fd)
    f.write(MIB, pattern(131, 128 * KIB))        # one folio of 128 KiB
    before = folio_order_at(f.fd, MIB // 4096)
    f.truncate(MIB + 10 * KIB)                  # into the dirty folio
    order = folio_order_at(f.fd, MIB // 4096)
    want = os.environ.get("EDGES_FOLIOS")
    if want == "large" and order < 5:
        raise Mismatch(f"verity-eof: the folio at 1 MiB is of order {order} "
                       f"after the truncate (order {before} before), want "
                       ">= 5: no large folio across EOF to test")
    os.fsync(f.fd)
    f.close()
    enable_verity(f.path)
    f.fd = os.open(f.path, os.O_RDONLY)
    last = (MIB + 10 * KIB - 1) // 4096         # the file's last page
    first = MIB // 4096
    after = folio_order_at(f.fd, first)
    end = (first & ~((1 << after) - 1)) + (1 << after) - 1
    if end > last:
        raise Mismatch(f"verity-eof: after FS_IOC_ENABLE_VERITY the folio "
                       f"at block {first} is of order {after}, pages up to "
                       f"{end}, past the last page {last}: the Merkle tree "
                       "from block 272 on went into it")
    # drop the data, not the tree: reads verify against cached tree pages
    os.posix_fadvise(f.fd, 0, MIB, os.POSIX_FADV_DONTNEED)
    f.verify("verity enabled over a folio truncated across EOF (cached)")
    drop_caches()
    f.verify("verity enabled over a folio truncated across EOF (from disk)")
    f.close()
    print(f"verity-eof: the folio at 1 MiB, of order {order} across EOF "
          f"after the truncate, was of order {after} once verity was "
          "enabled; verified")


def merkle_level0_offset(nblocks):
    """Offset in the stored Merkle tree (SHA-256, 4 KiB blocks: 128 hashes
    a block) of its level 0, the hashes of the data blocks: the levels are
    stored from the root down."""
    sizes, n = [], nblocks
    while True:
        n = (n + 127) // 128
        sizes.append(n)
        if n == 1:
            break
    return sum(sizes[1:]) * 4096


def find_block(dev, block):
    """The 4 KiB-aligned disk offset holding exactly block."""
    with open(dev, "rb") as f:
        base = 0
        while True:
            chunk = f.read(4 * MIB)
            if not chunk:
                break
            i = chunk.find(block)
            while i >= 0 and i % 4096:
                i = chunk.find(block, i + 1)
            if i >= 0:
                return base + i
            base += len(chunk)
    raise Mismatch(f"block {block[:8].hex()}... not found on {dev}")


def flip_byte(dev, off):
    """Invert the byte at off on the raw device; return a function that
    puts it back."""
    fd = os.open(dev, os.O_RDWR)
    try:
        old = os.pread(fd, 1, off)
        os.pwrite(fd, bytes([old[0] ^ 0xff]), off)
        os.fsync(fd)
    finally:
        os.close(fd)

    def restore():
        fd = os.open(dev, os.O_RDWR)
        os.pwrite(fd, old, off)
        os.fsync(fd)
        os.close(fd)
    return restore


def want_errno(call, what, *codes):
    """call() must fail with one of the errno codes; what names the call
    in the mismatch."""
    want = " or ".join(errno.errorcode[c] for c in codes)
    try:
        call()
    except OSError as e:
        if e.errno in codes:
            return
        raise Mismatch(f"{what} gave {e.strerror}, want {want}") from e
    raise Mismatch(f"{what} succeeded, want {want}")


def want_eio(read, what):
    """read() must fail with EIO; what names the read in the mismatch."""
    want_errno(read, what, errno.EIO)


def expect_eio(f, blk, what):
    drop_caches()
    want_eio(lambda: os.pread(f.fd, 4096, blk * 4096),
             f"{what}: reading block {blk}")


def expect_corruption_caught(f, dev, off, bad, good, what):
    """With the byte at off on dev inverted, reading block bad of the
    verity file f must fail with EIO while block good still reads right;
    with the byte put back, the whole file must read right again."""
    restore = flip_byte(dev, off)
    try:
        expect_eio(f, bad, what)
        if os.pread(f.fd, 4096, good * 4096) != \
                f.model[good * 4096:(good + 1) * 4096]:
            raise Mismatch(f"{what}: block {good}, hashed elsewhere, "
                           "reads wrong")
    finally:
        restore()
    drop_caches()
    f.verify(f"{what} put back")


def case_verity_corrupt(d):
    """A corrupted data block, and then a corrupted Merkle tree block, of
    an fs-verity file read in large folios must fail the read with EIO,
    while a block far from it still reads right; with the byte put back,
    the whole file reads right again."""
    f = File(os.path.join(d, "verity-corrupt"))
    size = 4 * MIB
    f.write(0, pattern(130, size))
    os.fsync(f.fd)
    f.close()
    enable_verity(f.path)
    f.fd = os.open(f.path, os.O_RDONLY)
    os.sync()
    dev = mount_source(d)
    bad, good = 37, 900         # level-0 hash blocks 0 and 7
    drop_caches()
    f.verify("verity file")
    lf = large_folios(f.path, "verity file")

    # a data block
    expect_corruption_caught(f, dev, phys_blocks(f.path)[bad] * 4096 + 123,
                             bad, good, "corrupted data block")

    # the level-0 Merkle block holding the hash of block `bad`
    tree = subprocess.run(["fsverity", "dump_metadata", "merkle_tree",
                           f.path], capture_output=True, check=True).stdout
    off = merkle_level0_offset(size // 4096) + bad // 128 * 4096
    where = find_block(dev, tree[off:off + 4096])
    expect_corruption_caught(f, dev, where + bad % 128 * 32, bad, good,
                             "corrupted Merkle tree block")
    f.close()
    print(f"verity-corrupt: EIO for a corrupted data block and Merkle "
          f"block ({lf} pages in large folios)")


def case_mmap(d):
    """Stores through a shared mapping race with truncation (the C tool
    mmap-race): every byte must end up zero or the pattern, and the disk
    must agree with the cache after fsync."""
    r = run(["mmap-race", os.path.join(d, "mmap-race"), str(8 * MIB),
             "3000", "7"], ok_fail=True)
    if r.returncode:
        raise Mismatch((r.stdout + r.stderr).strip().splitlines()[-1])
    print(r.stdout.strip())


def iostat_enable(d):
    """Turn on f2fs's I/O statistics (iostat_info) of d's disk."""
    sysfs_int(d, "iostat_enable", 1)


def iostat_text(d):
    """f2fs's iostat_info of d's disk."""
    dev = os.path.basename(mount_source(d))
    with open(f"/proc/fs/f2fs/{dev}/iostat_info") as f:
        return f.read()


def iostat_bytes(d, section, name):
    """A byte count of f2fs's iostat_info of d's disk: line name of
    section ([WRITE] or [READ])."""
    m = re.search(rf"^\[{section}\]$.*?^{name}:\s+(\d+)", iostat_text(d),
                  re.M | re.S)
    if not m:
        raise Mismatch(f"no [{section}] {name!r} in iostat_info")
    return int(m.group(1))


def iostat_mapped(d):
    """f2fs's 'app mapped data' byte count (iostat_info) of d's disk."""
    return iostat_bytes(d, "WRITE", "app mapped data")


def iostat_read_orders(d):
    """f2fs's counts of folios read by order (iostat_info's 'fs read folio
    order') of d's disk, order 0 first."""
    m = re.search(r"^fs read folio order:((?:\s+\d+)+)$", iostat_text(d),
                  re.M)
    if not m:
        raise Mismatch("no 'fs read folio order' in iostat_info")
    return [int(x) for x in m.group(1).split()]


def mount_entry(d):
    """The /proc/mounts fields of the filesystem d is on (d may be a
    directory in it, e.g. an encrypted one)."""
    mnt = os.path.realpath(d)
    while not os.path.ismount(mnt):
        mnt = os.path.dirname(mnt)
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[1] == mnt:
                return fields
    raise Mismatch(f"{d}: no device mounted at {mnt}")


def mount_source(d):
    """The device of the filesystem d is on."""
    return mount_entry(d)[0]


def f2fs_sysfs(d):
    """The sysfs directory of the f2fs that d is on."""
    return f"/sys/fs/f2fs/{os.path.basename(mount_source(d))}"


def case_mkwrite(d):
    """Stores through a shared mapping into the holes and the data of a
    cached, sparse large folio.  The first write fault maps the whole folio
    writable (finish_fault), so every hole of it needs a block before any
    store: every store must reach the disk.  f2fs counts a page of mapped
    I/O per fault, not a folio."""
    f = File(os.path.join(d, "mkwrite"))
    f.truncate(4 * MIB)
    base = 2 * MIB
    for off in (0, base + 8 * KIB):
        f.write(off, pattern(90 + off, 4096))
    os.fsync(f.fd)
    drop_caches()
    f.verify("sparse file")                             # cached by readahead
    lf = large_folios(f.path, "sparse file")
    iostat_enable(d)
    before = iostat_mapped(d)
    stores = [(base + 8 * KIB + 5, 100), (base + 5, 3000),
              (base + 60 * KIB - 7, 4096 + 14), (base + 300 * KIB, 1)]
    m = mmap.mmap(f.fd, 4 * MIB)
    for i, (off, ln) in enumerate(stores):
        data = pattern(95 + i, ln)
        m[off:off + ln] = data
        f.model[off:off + ln] = data
    m.close()
    mapped = iostat_mapped(d) - before
    pages = sum((off + ln - 1) // 4096 - off // 4096 + 1 for off, ln in stores)
    if mapped % 4096 or not 4096 <= mapped <= pages * 4096:
        raise Mismatch(f"{len(stores)} stores to {pages} pages counted "
                       f"{mapped} bytes of mapped I/O, want 4096 per fault")
    f.verify_all("stores through mmap into a sparse large folio")
    f.close()
    print(f"mkwrite: {lf} pages in large folios, {mapped // 4096} faults "
          "counted, every store on disk")


def sysfs_int(d, name, value=None):
    """f2fs's sysfs value name of d's disk, after writing value if given."""
    path = f"{f2fs_sysfs(d)}/{name}"
    if value is not None:
        with open(path, "w") as k:
            k.write(f"{value}\n")
    with open(path) as k:
        return int(k.read())


@contextlib.contextmanager
def vm_set(name, value):
    """/proc/sys/vm/name set to value for the with block, its old value
    back after it."""
    path = f"/proc/sys/vm/{name}"
    with open(path) as f:
        old = f.read().strip()
    with open(path, "w") as f:
        f.write(f"{value}\n")
    try:
        yield
    finally:
        with open(path, "w") as f:
            f.write(f"{old}\n")


@contextlib.contextmanager
def sysfs_set(d, name, value):
    """sysfs_int() of name set to value for the with block, which gets the
    value read back; its old value back after it."""
    old = sysfs_int(d, name)
    new = sysfs_int(d, name, value)
    try:
        yield new
    finally:
        sysfs_int(d, name, old)


def case_mkwrite_gc(d):
    """A write fault into a hole of a cached large folio reserves the
    folio's holes with the folio locked, so it must not run GC then: GC of
    a segment holding another block of the folio waits for that lock, in
    the faulting task.  Blocks 0 and 2 of the file's second 2 MiB are each
    the only valid block of their segment, the best victims; blocks 1 and 3
    are holes, all in one large folio.  reserved_segments set one section
    above the free ones makes every f2fs_balance_fs() collect one section:
    the one the fault runs before it locks the folio moves one of the two
    blocks, a second under the lock would move the other and hang.  The
    fault must end; free sections still short after it prove that the
    reservation ran with GC due.  With gc_merge, the balance waits for the
    GC thread, which would wait for the folio lock."""
    # A GC thread (gc_merge) must not collect the victims on its own: it
    # does only when the filesystem has been idle for gc_idle_interval.
    with sysfs_set(d, "gc_idle_interval", 86400):
        mkwrite_gc(d)


def mkwrite_gc(d):
    """case_mkwrite_gc() with the GC thread kept idle."""
    f = File(os.path.join(d, "mkwrite-gc"))
    filler = File(os.path.join(d, "mkwrite-gc-filler"))
    # f2fs writes a file's blocks to the hot log when fewer than
    # min_hot_blocks are dirty: 0 puts f's and the filler's in one log
    base, seg = 2 * MIB, 2 * MIB
    blks = (base // 4096, base // 4096 + 2)
    with sysfs_set(d, "min_hot_blocks", 0):
        for blk in blks + (None,):
            if blk is not None:
                f.write(blk * 4096, pattern(120 + blk, 4096))
                os.sync()
            # the rest of the segment, and a third to close the second one
            ln = seg - (4096 if blk is not None else 0)
            filler.write(len(filler.model),
                         pattern(123 + len(filler.model), ln))
            os.sync()
    f.truncate(2 * base)
    filler.close()
    os.unlink(filler.path)
    os.sync()
    before = phys_blocks(f.path)
    if sorted(before) != list(blks) or \
            abs(before[blks[1]] - before[blks[0]]) < 512:
        raise Mismatch(f"blocks {blks} not in two segments: {before}")
    drop_caches()
    f.verify("sparse file")                             # cached by readahead
    # readahead's first folios are small, the second 2 MiB's are large
    counts = folio_stat(f.path, (base, base))
    resident, lf = counts.resident, counts.large
    want_folios(lf if lf == resident == base // 4096 else 0,
                "the second 2 MiB")
    store = base + 4096 + 5
    with sysfs_set(d, "reserved_segments",
                   sysfs_int(d, "free_segments") + 1) as short:
        pid = os.fork()
        if pid == 0:                    # the child stores through a mapping
            try:
                quiet_child()
                m = mmap.mmap(f.fd, 2 * base)
                m[store:store + 4] = b"lock"
                m.close()
                os._exit(0)
            finally:
                os._exit(1)
        for _ in range(1200):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            with open(f"/proc/{pid}/stack") as st:
                stack = " < ".join(ln.split()[1].split("+")[0]
                                   for ln in st if len(ln.split()) > 1)
            raise Mismatch(f"write fault hung for 120 s: {stack}")
        free = sysfs_int(d, "free_segments")
    if status:
        raise Mismatch(f"the store through the mapping failed: wait status "
                       f"{status:#x} (signal {status & 0x7f})")
    f.model[store:store + 4] = b"lock"
    after = phys_blocks(f.path)
    # one block moved by the balance before the folio lock: two would mean
    # a GC under it, which got by only because the folio held one of them
    moved = [b for b in blks if after.get(b) != before[b]]
    if len(moved) != 1 or free >= short:
        raise Mismatch(f"GC was not due in the fault, or ran under the "
                       f"folio lock: blocks moved {moved}, {free} free "
                       f"segments of {short} reserved")
    f.verify_all("store into a hole with GC due")
    f.close()
    print(f"mkwrite-gc: {lf} pages in large folios, the fault with GC due "
          f"ended (GC moved block {moved}), the store on disk")


def store_each_page(f, m, start, end, flip):
    """Store to the first byte of each page of f in [start, end) through m,
    a shared mapping of it, flipping its bits by flip, in the model too."""
    for off in range(start, end, 4096):
        b = bytes([f.model[off] ^ flip])
        m[off:off + 1] = b
        f.model[off:off + 1] = b


def case_mmap_whole(d):
    """Stores through a shared mapping of a file cached in large folios
    take one write fault per folio: the mapping starts at a 2 MiB boundary
    (->get_unmapped_area), so no folio straddles two page tables and the
    first fault on a folio maps all of it writable (finish_fault).
    Unaligned, a folio across a boundary took a fault per page.  f2fs
    counts a page of mapped I/O per write fault (iostat_info)."""
    f, lf = cached_file(d, "mmap-whole", 110)
    folios = sum(folio_stat(f.path).orders.values())
    iostat_enable(d)
    before = iostat_mapped(d)
    m = mmap.mmap(f.fd, 4 * MIB)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    if addr % (2 * MIB):
        m.close()
        raise Mismatch(f"a 4 MiB shared mapping at {addr:#x}, not at a "
                       "2 MiB boundary")
    store_each_page(f, m, 0, 4 * MIB, 0x5a)
    m.close()
    faults = (iostat_mapped(d) - before) // 4096
    if not folios or faults > folios:
        raise Mismatch(f"a store to each page of {folios} cached folios "
                       f"took {faults} write faults, want one per folio")
    os.fsync(f.fd)
    drop_caches()
    f.verify_all("stores through an aligned mapping")
    f.close()
    print(f"mmap-whole: {lf} pages in large folios, {folios} folios, "
          f"{faults} write faults")


def case_mmap_punch(d):
    """A hole punched inside dirty folios that a process maps writable
    leaves the hole's blocks clean.  mm cannot split a dirty large folio
    (its f2fs state keeps it whole), so truncation drops the hole's dirty
    blocks and then unmaps the folio, and the dirty ptes it takes down
    marked the whole folio dirty again (->dirty_folio() cannot tell which
    blocks a store changed), the hole's blocks too, which writeback could
    then write before the punch freed them.  Counted in f2fs's dirty
    blocks: the hole's go, exactly, as order-0 folios' pages go with the
    hole.  A hole inside a folio, and one across two.  (A zero range
    writes its range's folios back before it truncates them, so meets no
    dirty folio there but through a store racing it.)"""
    f, lf = cached_file(d, "mmap-punch", 120)
    os.sync()
    m = mmap.mmap(f.fd, 4 * MIB)
    report = []
    try:
        store_each_page(f, m, 0, 2 * MIB, 0x3c)
        # the first inside a folio of 64 KiB or more, the second across
        # the end of one at 1 MiB + 128 KiB
        for off, length in ((MIB + 20 * KIB, 40 * KIB),
                            (MIB + 116 * KIB, 24 * KIB)):
            before = f2fs_dirty_data()
            f.fallocate(FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, off, length)
            after = f2fs_dirty_data()
            if before is None or before - after != length // 4096:
                raise Mismatch(f"mmap-punch: {length // 4096} blocks "
                               f"punched at {off} inside dirty mapped "
                               f"folios ({lf} pages in large folios): "
                               f"{before} blocks dirty before, {after} "
                               "after")
            report.append(f"{length // 4096}: {before} -> {after}")
            f.verify(f"mmap-punch: {length // 4096} blocks punched (cached)")
    finally:
        m.close()
    f.verify_all("mmap-punch")
    f.close()
    print(f"mmap-punch: blocks punched, dirty blocks counted "
          f"{', '.join(report)} ({lf} pages in large folios)")


def dm_table(name, table=None):
    """The table of device mapper device name, or load table into it and
    make it live (reload and resume)."""
    if table is None:
        return run(["dmsetup", "table", name]).stdout.strip()
    run(["dmsetup", "reload", "--noudevsync", name, "--table", table])
    # --nolockfs: a suspend freezes the filesystem, which writes back
    # the dirty folios a case has set up
    run(["dmsetup", "resume", "--noudevsync", "--nolockfs", name])
    return table


def dm_linear(what):
    """The linear device mapper device named in EDGES_DM (40-edges.sh makes
    one over the disk), and the fields of its table."""
    name = os.environ.get("EDGES_DM")
    if not name:
        raise Mismatch(f"{what}: no device mapper device named (EDGES_DM)")
    lin = dm_table(name).split()
    if len(lin) != 5 or lin[2] != "linear":
        raise Mismatch(f"{what}: {name}: want one linear target, got "
                       f"{' '.join(lin)!r}")
    return name, lin


def dm_error_at(name, lin, bad, what):
    """Load device mapper's error target over disk block bad of the linear
    device name (table fields lin), and check that a direct read of that
    block from the device fails (not of the file: a direct read of the
    file would write its dirty folios back)."""
    sectors, start = int(lin[1]), int(lin[4])
    s0 = bad * 8
    dm_table(name, f"0 {s0} linear {lin[3]} {start}\n"
                   f"{s0} 8 error\n"
                   f"{s0 + 8} {sectors - s0 - 8} linear {lin[3]} "
                   f"{start + s0 + 8}")
    blk = run(["dmsetup", "info", "-c", "--noheadings", "-o",
               "blkdevname", name]).stdout.strip()
    fd = os.open(f"/dev/{blk}", os.O_RDONLY | os.O_DIRECT)
    rbuf = mmap.mmap(-1, 4096)
    try:
        want_eio(lambda: os.preadv(fd, [rbuf], bad * 4096),
                 f"{what}: disk block {bad} read through the error target")
    finally:
        os.close(fd)


def partly_readable(length, src, what):
    """A buffer of length bytes that starts with src (a multiple of 4 KiB,
    maybe empty) and is unreadable past it: the mapping, to keep alive, and
    a view of all of it to write from."""
    buf = mmap.mmap(-1, length)
    buf[:len(src)] = src
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    if libc().mprotect(ctypes.c_void_p(addr + len(src)), length - len(src),
                       0):
        raise Mismatch(f"{what}: mprotect failed")
    return buf, (ctypes.c_char * length).from_address(addr)


def short_write(f, off, length, copied, seed, what, src=None):
    """Write length bytes at off, from a buffer of which only the first
    copied bytes (a multiple of 4 KiB) are readable: the copy stops there,
    and leaves the folio the write started (large, for a long enough
    write) not uptodate past them.  The readable bytes are src if given,
    else pattern(seed, copied)."""
    if src is None:
        src = pattern(seed, copied)
    if len(src) != copied:
        raise Mismatch(f"{what}: {len(src)} bytes to copy, want {copied}")
    buf, view = partly_readable(length, src, what)
    try:
        done = os.pwrite(f.fd, view, off)
    except OSError as e:
        raise Mismatch(f"{what}: the short write failed: {e}")
    if done != copied:
        raise Mismatch(f"{what}: the write copied {done} bytes, want "
                       f"{copied}")
    if off > len(f.model):
        f.model.extend(bytes(off - len(f.model)))
    f.model[off:off + copied] = src


def case_short_write_eof(d, kind="plain"):
    """A write past EOF whose copy stops short leaves no block reserved past
    the new EOF.  ->write_begin() reserves the blocks of the part of a
    large folio the whole write covers, before the copy (an order-0 one the
    block of its page); f2fs_preallocate_blocks() reserves nothing when the
    source cannot be faulted in, so nothing dropped them after the copy
    stopped.  Left there, they took space, and the fsync'd dnode carried
    them: roll-forward recovery after a crash grew the file over them, to
    zeroes never written.  Here a 1 MiB write at 1 MiB from a buffer
    readable for 12 KiB, an fsync, F2FS_IOC_SHUTDOWN and a mount again
    (and on plain files, an O_DIRECT write that fails so, patch 72:
    short_write_eof_dio(), and one inside EOF, patch 73:
    failed_dio_inside_eof()).  Then writes at the EOF of a file with
    1 MiB preallocated past it that reserve nothing, which must leave
    those blocks alone: one refused (RWF_NOWAIT), one short into them,
    and one failed (EFAULT).
    kind "compressed": as plain, in a directory whose files are compressed
    (case_compress_short_write()); "inline": the file whose write stops
    short has inline data, which ->write_begin() converts, and so has one
    whose write fails (EFAULT), buffered and O_DIRECT
    (failed_dio_inline()); "pinned": a pinned file, which refuses
    writes at its EOF (short_write_eof_pinned())."""
    if kind not in ("plain", "inline", "pinned", "compressed"):
        raise Mismatch(f"short-write-eof: no kind of file {kind!r}")
    if kind == "pinned":
        short_write_eof_pinned(d)
        return
    # each kind its files: cases may share a filesystem
    name = "short-write-eof" + ("" if kind == "plain" else f"-{kind}")
    short_write_eof_new(d, kind, name)
    if kind == "plain":
        short_write_eof_dio(d, name + "-dio")
        failed_dio_inside_eof(d, name + "-dio-inside")
    if kind == "inline":
        failed_dio_inline(d, name + "-dio")
    g = File(os.path.join(d, name + "-nowait"))
    g.write(0, pattern(192, 8 * KIB))
    g.fallocate(FALLOC_KEEP_SIZE, 8 * KIB, MIB)
    os.fsync(g.fd)
    before = preallocated(g)
    # A no-wait write that f2fs turns into a buffered one, an O_DIRECT
    # write aligned to the device's 512-byte sectors but not to blocks,
    # is refused before ->write_begin() and reserves nothing: the cleanup
    # after it must leave alone the blocks fallocate() reserved past EOF.
    # (The VFS refuses a no-wait write without O_DIRECT, EINVAL.)
    buf = mmap.mmap(-1, 4096)                   # page-aligned
    buf[:512] = pattern(193, 512)
    fd = os.open(g.path, os.O_WRONLY | os.O_DIRECT)
    try:
        want_errno(lambda: os.pwritev(fd, [memoryview(buf)[:512]], 8 * KIB,
                                      os.RWF_NOWAIT),
                   "short-write-eof: a 512-byte O_DIRECT RWF_NOWAIT write "
                   "at EOF", errno.EAGAIN, errno.EOPNOTSUPP)
    finally:
        os.close(fd)
    kept(g, before, "a refused RWF_NOWAIT write")
    # A write whose source is readable for 4 KiB of 8, and one none of
    # whose source is readable (EFAULT, after ->write_begin()), into blocks
    # fallocate() reserved: neither reserves a block.
    short_write(g, 8 * KIB, 8 * KIB, 4 * KIB, 194, "short-write-eof")
    kept(g, before, "a short write into blocks preallocated past EOF")
    buf, view = partly_readable(4096, b"", "short-write-eof")
    want_errno(lambda: os.pwrite(g.fd, view, 12 * KIB),
               "short-write-eof: a write at EOF from an unreadable buffer",
               errno.EFAULT)
    kept(g, before, "a write from an unreadable buffer (EFAULT)")
    g.close()
    print(f"short-write-eof ({kind}): a short write past EOF "
          + ("(and failed O_DIRECT ones past and inside EOF) "
             if kind == "plain" else "")
          + ("(and failed ones, buffered and O_DIRECT, past inline data) "
             if kind == "inline" else "")
          + ("(its first cluster compressed) " if kind == "compressed"
             else "")
          + "left no block past it, the size recovered after a shutdown; "
          "a refused RWF_NOWAIT write, a short write into preallocated "
          "blocks and a write from an unreadable buffer kept the blocks "
          "preallocated past EOF")


def preallocated(g):
    """The 512-byte blocks of file g, 8 KiB long, which fallocate() must
    have given 1 MiB past its EOF."""
    before = os.fstat(g.fd).st_blocks
    if before * 512 < 8 * KIB + MIB:
        g.close()
        raise Mismatch(f"short-write-eof: fallocate() of 1 MiB past EOF "
                       f"left {before * 512 // 4096} blocks allocated, want "
                       f"{(8 * KIB + MIB) // 4096}")
    return before


def short_write_eof_pinned(d):
    """A pinned file takes only writes over the blocks it has inside its
    size (f2fs_overwrite_io(), before f2fs_preallocate_blocks()): writes
    at its EOF into blocks fallocate() reserved past it, short or failing,
    are refused with EIO before any cleanup after a write, and must leave
    those blocks and the data alone."""
    g = File(os.path.join(d, "short-write-eof-pinned"))
    # pinned while empty, its blocks from fallocate(): a whole section (not
    # zeroed), of which 8 KiB inside its size, the rest past EOF (a pinned
    # file can't grow by truncation); written over
    set_pin(g.fd, 1)
    g.fallocate(0, 0, 8 * KIB)
    g.write(0, pattern(192, 8 * KIB))
    os.fsync(g.fd)
    before = preallocated(g)
    for what, off, length, copied in (
            ("a short write", 8 * KIB, 8 * KIB, 4 * KIB),
            ("a write from an unreadable buffer", 12 * KIB, 4 * KIB, 0)):
        buf, view = partly_readable(length, pattern(194, copied),
                                    "short-write-eof")
        want_errno(lambda: os.pwrite(g.fd, view, off),
                   f"short-write-eof: {what} at the EOF of a pinned file",
                   errno.EIO)
        kept(g, before, f"{what} refused (EIO)")
    g.close()
    print("short-write-eof (pinned): a short write and a write from an "
          "unreadable buffer at EOF refused, the blocks preallocated past "
          "EOF kept")


def short_write_eof_new(d, kind, name):
    """short-write-eof's short write past EOF (and with inline data, a
    failed one) into file name: see case_short_write_eof()."""
    if kind == "inline":
        f = inline_file(os.path.join(d, name), 190, "short-write-eof")
    else:
        f = File(os.path.join(d, name))
        # a block first, so that the file has no inline data, whose folio
        # is order-0, and the short write gets a 1 MiB folio at 1 MiB
        f.write(0, pattern(190, 4096))
        os.fsync(f.fd)
    copied = 12 * KIB
    src = None
    if kind == "compressed":
        # a whole cluster (16 KiB) and a block: only a full cluster is
        # compressed, and this data compresses (a KiB repeated)
        copied = 20 * KIB
        src = pattern(191, KIB) * (copied // KIB)
    short_write(f, MIB, MIB, copied, 191, "short-write-eof", src)
    # only uptodate folios: this one, partly uptodate, folio-stat cannot see
    lf = folio_stat(f.path).large
    kept_after_shutdown(f, d, f"short-write-eof: a 1 MiB write at 1 MiB "
                        f"that copied {copied} bytes ({lf} pages in "
                        f"uptodate large folios)", (4096 + copied) // 4096,
                        compressed if kind == "compressed" else None)
    if kind != "inline":
        return
    # A write past the inline area that fails, its source unreadable:
    # ->write_begin() converts the inline data, and the block it takes
    # holds the data (inside EOF, kept), nothing past it.
    h = inline_file(os.path.join(d, name + "-efault"), 195,
                    "short-write-eof")
    buf, view = partly_readable(4096, b"", "short-write-eof")
    want_errno(lambda: os.pwrite(h.fd, view, MIB),
               "short-write-eof: a write past inline data from an "
               "unreadable buffer", errno.EFAULT)
    what = ("short-write-eof: a write past 100 bytes of inline data that "
            "failed (EFAULT)")
    converted(h, what)
    kept_after_shutdown(h, d, what, 1)


def failed_dio_write(f, off, length, src):
    """Write length bytes at off of File f with O_DIRECT, from a buffer
    readable only for its first len(src) bytes (src, a multiple of
    4 KiB): the write must fail with EFAULT (0 returned here) or be
    short, by whole blocks.  What it wrote is left to the caller."""
    copied = len(src)
    buf, view = partly_readable(length, src, "short-write-eof")
    fd = os.open(f.path, os.O_WRONLY | os.O_DIRECT)
    try:
        done = os.pwrite(fd, view, off)
    except OSError as e:
        if e.errno != errno.EFAULT:
            f.close()
            raise Mismatch(f"short-write-eof: an O_DIRECT write at {off} "
                           f"from a buffer readable for {copied} bytes "
                           f"failed: {e}, want EFAULT or a short write")
        done = 0
    finally:
        os.close(fd)
    if done % 4096 or done > copied:
        f.close()
        raise Mismatch(f"short-write-eof: an O_DIRECT write at {off} from "
                       f"a buffer readable for {copied} bytes wrote {done}")
    return done


def failed_dio_inline(d, name):
    """An O_DIRECT write past the inline data of a file that fails part
    way.  f2fs_dio_write_iter() converts the inline data to block 0 before
    the write maps its range; in mode=lfs the mapping then moves block 0
    too.  The write reaches blocks 0 to 2 and fails (EFAULT): block 0,
    inside EOF, keeps the 100 bytes written there; the blocks past EOF
    that the mapping allocated, written or not, must not stay (patch 72:
    without it the file kept 256 blocks); after fsync, F2FS_IOC_SHUTDOWN
    and a mount the file is one block of 100 bytes, or as long as the
    write reports if it is short."""
    f = inline_file(os.path.join(d, name), 200, "short-write-eof")
    copied = 12 * KIB
    src = pattern(201, copied)
    done = failed_dio_write(f, 0, MIB, src)
    what = (f"short-write-eof: a 1 MiB O_DIRECT write at 0 into 100 bytes "
            f"of inline data, its source readable for {copied} bytes, which "
            f"returned {done or 'EFAULT'}")
    converted(f, what)
    size = max(done, len(f.model))
    f.model[:size] = src[:size]
    kept_after_shutdown(f, d, what, -(-size // 4096))


def short_write_eof_dio(d, name):
    """An O_DIRECT write that fails past EOF leaves no block past EOF
    either.  f2fs_preallocate_blocks() reserves nothing for a direct
    write that starts inside EOF (nor for any in mode=lfs), and the
    direct write's mapping (f2fs_iomap_begin()) then allocates the blocks
    of its whole range before it writes them.  When the source stops
    being readable part way, iomap fails the whole write (EFAULT) and
    nothing dropped the blocks it allocated past EOF: fsync'd, roll-forward
    recovery after a crash grew the file over them, to what those blocks
    held before.  Here a 1 MiB O_DIRECT write 8 KiB before the EOF of a
    1 MiB file with a hole there, from a buffer readable for 12 KiB; then
    fsync, F2FS_IOC_SHUTDOWN and a mount again: only the blocks inside EOF
    that the write allocated may stay, and the size must be 1 MiB, or
    where the write ended if it reports a short write.  The bytes it
    wrote inside EOF are on disk."""
    f = File(os.path.join(d, name))
    f.write(0, pattern(196, 4096))
    f.truncate(MIB)
    os.fsync(f.fd)
    off, length, copied = MIB - 8 * KIB, MIB, 12 * KIB
    src = pattern(197, copied)
    done = failed_dio_write(f, off, length, src)
    # a failed write wrote what it could inside EOF
    inside = max(done, MIB - off)
    f.model[off:off + inside] = src[:inside]
    kept_after_shutdown(f, d, f"short-write-eof: a 1 MiB O_DIRECT write 8 "
                        f"KiB before the EOF of a 1 MiB file, its source "
                        f"readable for {copied} bytes, which returned "
                        f"{done or 'EFAULT'}", 1 + inside // 4096)


def failed_dio_inside_eof(d, name):
    """An O_DIRECT write inside EOF that fails part way leaves no block
    mapped that it allocated and did not write (patch 73).
    f2fs_iomap_begin() allocates the blocks of a direct write's holes
    (in mode=lfs, for a write that starts in a hole or crosses EOF, every
    block, moving the file's data out of place) for the whole of a
    mapping before iomap writes any; when the source stops being
    readable, iomap fails the write (EFAULT) and the rest stayed mapped,
    never written: they read as what the device held there, a deleted
    file's data (zeroes on a fresh ramdisk).  Patch 73 takes their
    addresses back: reserved (NEW_ADDR), they read as zeroes and hold no
    data for SEEK_DATA.  Here a 1 MiB file whose first 512 KiB are a
    hole, an O_DIRECT write of 1 MiB at 0 from a buffer readable for
    12 KiB, then the same after fsync, F2FS_IOC_SHUTDOWN and a mount
    again.  The 12 KiB written read back; no other block of the hole
    holds data, and every block of the data keeps its data, or in
    mode=lfs, whose write moved it before the failure, may read as
    zeroes holding none (its old data is gone, a 7.3 limit: f2fs has no
    unwritten extents), never a block mapped that reads zeroes."""
    lfs = "mode=lfs" in mount_options(d)
    f = File(os.path.join(d, name))
    half = MIB // 2
    f.write(half, pattern(198, half))
    os.fsync(f.fd)
    length, copied = MIB, 12 * KIB
    src = pattern(199, copied)
    done = failed_dio_write(f, 0, length, src)
    old = bytes(f.model)
    new = bytearray(old)
    new[:copied] = src
    for when in ("after the failed write",
                 "fsync'd, shut down and mounted again"):
        if when != "after the failed write":
            os.fsync(f.fd)
            shutdown_and_mount(f, d)
            f = File(f.path, old)
        os.posix_fadvise(f.fd, 0, 0, os.POSIX_FADV_DONTNEED)
        got = os.pread(f.fd, MIB + 1, 0)
        bad = []
        for off in range(0, MIB, 4096):
            blk = got[off:off + 4096]
            try:
                mapped = os.lseek(f.fd, off, os.SEEK_DATA) == off
            except OSError as e:
                if e.errno != errno.ENXIO:
                    raise
                mapped = False
            if off < copied:
                ok = blk == new[off:off + 4096] and mapped
            elif off < half:
                ok = not mapped and blk == bytes(4096)
            else:
                ok = (mapped and blk == old[off:off + 4096]) or \
                    (lfs and not mapped and blk == bytes(4096))
            if not ok:
                bad.append(off // 4096)
        if len(got) != MIB or bad:
            blocks = blocks_allocated(f.fd)
            f.close()
            raise Mismatch(f"short-write-eof: a 1 MiB O_DIRECT write at 0 "
                           f"into a 1 MiB file whose first half is a hole, "
                           f"its source readable for {copied} bytes, which "
                           f"returned {done or 'EFAULT'}; {when}: size "
                           f"{len(got)}, {len(bad)} blocks wrong (from block "
                           f"{bad[0] if bad else '-'}; a block the write "
                           f"did not reach must be as before, and in the "
                           f"hole hold no data; "
                           f"{blocks} blocks allocated)")
    f.close()


def compressed(f, what):
    """Check that file f, the short write of short_write_eof_new() in it
    written back, has a compressed cluster."""
    if not compress_blocks(f.fd):
        f.close()
        raise Mismatch(f"compress-short-write: {what}, no cluster of "
                       f"{os.path.basename(f.path)} is compressed, yet its "
                       f"first 16 KiB at 1 MiB compress")


def case_compress_short_write(d):
    """short-write-eof on compressed files (FS_COMPR_FL from their
    directory).  They keep order-0 folios, but the blocks a short write
    past EOF reserved are dropped, and those fallocate() reserved past EOF
    kept, by the same code as for plain files.  The short write copies a
    compressible cluster and a block of the next: the file must have a
    compressed cluster once fsync'd, and again after the shutdown, read
    back right."""
    cd = os.path.join(d, "compress-short-write")
    os.mkdir(cd)
    fd = os.open(cd, os.O_RDONLY)
    set_flags(fd, get_flags(fd) | FS_COMPR_FL)
    os.close(fd)
    case_short_write_eof(cd, "compressed")
    for n in os.listdir(cd):
        fd = os.open(os.path.join(cd, n), os.O_RDONLY)
        flags = get_flags(fd)
        os.close(fd)
        if not flags & FS_COMPR_FL:
            raise Mismatch(f"compress-short-write: {n} is not compressed")


def kept(g, before, what):
    """Check that file g still has the before 512-byte blocks allocated,
    those fallocate() reserved past its EOF among them, and its data."""
    after = os.fstat(g.fd).st_blocks
    if after != before:
        g.close()
        raise Mismatch(f"short-write-eof: {what} at EOF left "
                       f"{after * 512 // 4096} blocks allocated, want "
                       f"{before * 512 // 4096}: it dropped those "
                       f"preallocated past EOF")
    g.verify_all(f"short-write-eof: after {what}")


def case_zero_eio(d):
    """Zeroing the partial block at a new EOF reads that block only, as
    7.3 and iomap do: in a large folio that a short copy left partly not
    uptodate, a read error on another block (device mapper's error target
    over one disk block) must not fail a truncate into it, nor leave the
    old bytes past EOF on disk.  The filesystem must be on a linear
    device mapper device, named in EDGES_DM (40-edges.sh makes one)."""
    name, lin = dm_linear("zero-eio")
    table = " ".join(lin)
    f = File(os.path.join(d, "zero-eio"))
    f.write(0, pattern(140, 2 * MIB))
    os.fsync(f.fd)
    bad = phys_blocks(f.path).get(300)
    if bad is None:
        raise Mismatch("zero-eio: block 300 is not mapped")
    drop_caches()
    # A write of 2 MiB whose source's second half is not readable copies
    # the first MiB into a new folio and stops: a 2 MiB folio whose
    # second half is not uptodate.
    short_write(f, 0, 2 * MIB, MIB, 141, "zero-eio")
    # (no look at the folio yet: a fault on it would read the rest in)
    # Block 300 unreadable, the block at the new EOF (384) readable.
    size = 3 * MIB // 2 + 100
    try:
        dm_error_at(name, lin, bad, "zero-eio")
        try:
            os.ftruncate(f.fd, size)
            err = None
        except OSError as e:
            err = e
    finally:
        dm_table(name, table)
    order = folio_order_at(f.fd, size // 4096)
    if os.environ.get("EDGES_FOLIOS") == "large" and order < 9:
        raise Mismatch(f"zero-eio: the folio at EOF is of order {order} "
                       "after the truncate, want 9: the truncate did not "
                       "meet the large folio")
    if err:
        raise Mismatch(f"zero-eio: truncate to {size} with only block 300 "
                       f"unreadable, not block 384 at the new EOF: {err}")
    f.truncate(size)
    f.truncate(size + 8192)                 # the old bytes must not return
    f.verify_all("a truncate into a large folio with a read error on "
                 "another block")
    f.close()
    print(f"zero-eio: the truncate read block 384 only (folio of order "
          f"{order}, block 300 at disk block {bad} unreadable)")


def page_resident(fd, blk):
    """Whether mincore() counts block blk of the file resident: cached in a
    folio that is uptodate (a folio not uptodate is not resident)."""
    addr = map_page(fd, blk * 4096, mmap.PROT_READ)
    vec = ctypes.create_string_buffer(1)
    try:
        if libc().mincore(addr, 4096, vec):
            e = ctypes.get_errno()
            raise OSError(e, f"mincore: {os.strerror(e)}")
    finally:
        libc().munmap(addr, 4096)
    return bool(vec.raw[0] & 1)


def read_stream(f, fd, what, start=0, stop=None):
    """Read bytes [start, stop) of f (stop: its end if None) through fd in
    64 KiB reads, as a reader streaming it, going on past errors; check
    every byte read against the model and return the byte ranges whose
    reads failed with EIO."""
    failed = []
    stop = len(f.model) if stop is None else stop
    for pos in range(start, stop, 64 * KIB):
        end = min(pos + 64 * KIB, stop)
        while pos < end:
            try:
                got = os.pread(fd, end - pos, pos)
            except OSError as e:
                if e.errno != errno.EIO:
                    raise
                failed.append((pos, end))
                break
            if not got:
                raise Mismatch(f"{what}: read at {pos} hit EOF")
            if got != f.model[pos:pos + len(got)]:
                raise Mismatch(f"{what}: "
                               f"{first_bad(got, f.model[pos:], pos)}")
            pos += len(got)
    return failed


def read_block(f, fd, blk, what):
    """Block blk of f read through fd, checked against the model."""
    try:
        got = os.pread(fd, 4096, blk * 4096)
    except OSError as e:
        raise Mismatch(f"{what}: {e.strerror}") from e
    if got != f.model[blk * 4096:(blk + 1) * 4096]:
        raise Mismatch(f"{what}: {first_bad(got, f.model[blk * 4096:])}")


def want_failed(failed, blk, what):
    """One of the byte ranges failed (read_stream()'s) must cover block
    blk, which the error target makes unreadable."""
    if not any(a <= blk * 4096 < b for a, b in failed):
        raise Mismatch(f"{what}: block {blk} read without error: the error "
                       "target did not fail it")


def stream_failing(f, blk, what):
    """Stream f through a new fd (read_stream()) with block blk unreadable;
    return the byte ranges whose reads failed, one covering blk."""
    fd = os.open(f.path, os.O_RDONLY)
    try:
        failed = read_stream(f, fd, what)
    finally:
        os.close(fd)
    want_failed(failed, blk, what)
    return failed


def read_cached(d, f, blocks, what):
    """Read blocks of f, each checked against the model, all from the
    cache: f2fs's iostat counts no data read from the disk."""
    before = iostat_bytes(d, "READ", "fs data")
    for b in blocks:
        read_block(f, f.fd, b, f"{what}: block {b}, read before, again")
    if iostat_bytes(d, "READ", "fs data") != before:
        raise Mismatch(f"{what}: blocks {blocks}, read already, were read "
                       "from the disk again")


def case_read_eio(d):
    """A read error on one disk block (device mapper's error target) fails
    the reads of the blocks read with it, in one bio, and no others: in a
    large folio whose blocks come from several extents, and so several
    bios, the blocks of the bios that completed stay uptodate and are
    read without new I/O (->is_partially_uptodate()), as with iomap and
    as with order-0 folios, and so are the holes zeroed before them; the
    folio is not read again as a whole, which would fail again.  The
    file's 64 KiB extents lie apart on disk (interleave()), so each is
    read by a bio of its own.  Needs the linear device mapper device named
    in EDGES_DM, as zero-eio does."""
    read_eio(d, "read-eio", False)


def case_verity_read_eio(d):
    """read-eio on an fs-verity file: the blocks of the bios that complete
    are marked uptodate only once verified, and the hole once its zeroes
    are, so the same reads must succeed and fail as on other files.  The
    file is laid out and punched before FS_IOC_ENABLE_VERITY, which needs
    no writer open."""
    read_eio(d, "verity-read-eio", True)


def apart_on_disk(f, what, good):
    """f's {file block: disk block}, after checking that blocks good - 1
    and good lie apart on disk, so that no bio reads both."""
    phys = phys_blocks(f.path)
    if phys[good] == phys[good - 1] + 1:
        raise Mismatch(f"{what}: blocks {good - 1} and {good} are "
                       "adjacent on disk: one bio could read both")
    return phys


def streamed_order(f, what, bad, others):
    """Drop the caches and stream f through a new fd (a new readahead
    state), every byte checked; return the order of the folio that caches
    block bad, which with large folios must cache blocks others too."""
    drop_caches()
    fd = os.open(f.path, os.O_RDONLY)
    try:
        if read_stream(f, fd, f"{what}: streamed"):
            raise Mismatch(f"{what}: a read failed before any error")
    finally:
        os.close(fd)
    order = folio_order_at(f.fd, bad)
    if os.environ.get("EDGES_FOLIOS") == "large" and \
            any(b >> order != bad >> order for b in others):
        raise Mismatch(f"{what}: streaming caches block {bad} in a folio "
                       f"of order {order}, not with blocks {others}: want "
                       "one folio over them")
    return order


def read_eio(d, what, verity):
    """case_read_eio() on a file named what, made an fs-verity file after
    its layout if verity."""
    name, lin = dm_linear(what)
    table = " ".join(lin)
    iostat_enable(d)
    f, _ = gc_victim_cached(d, what, 2 * MIB, 150)
    # extents [292, 304) (a hole before it) and [304, 320)
    hole, bad, good = 288, 300, 304
    f.fallocate(FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, hole * 4096, 16 * KIB)
    phys = apart_on_disk(f, what, good)
    if verity:
        f.close()
        enable_verity(f.path)
        f.fd = os.open(f.path, os.O_RDONLY)
    order = streamed_order(f, what, bad, [hole, good])
    drop_caches()
    try:
        dm_error_at(name, lin, phys[bad], what)
        how = f"{what}: streamed with block {bad} unreadable"
        fd = os.open(f.path, os.O_RDONLY)
        try:
            # Up to the hole, whose folio readahead has read by then (or
            # the read of the hole does): the hole is read first, before
            # any read of the bad block reads the folio again.
            failed = read_stream(f, fd, how, 0, hole * 4096)
            read_block(f, fd, hole, f"{how}: block {hole}, a hole, first")
            failed += read_stream(f, fd, how, hole * 4096)
        finally:
            os.close(fd)
        want_failed(failed, bad, what)
        lo, hi = (good - 16) * 4096, good * 4096
        out = [(a, b) for a, b in failed if a < lo or b > hi]
        if out:
            raise Mismatch(f"{what}: reads of bytes {out} failed, outside "
                           f"the extent [{lo}, {hi}) of the unreadable "
                           f"block {bad}: a read error failed blocks read "
                           "by other bios")
        # Blocks good and hole are cached: resident in lf only if their
        # folio is uptodate, which it is not, as it holds block bad.
        read_cached(d, f, [good, hole], what)
        resident = page_resident(f.fd, good)
        if os.environ.get("EDGES_FOLIOS") == "large" and resident:
            raise Mismatch(f"{what}: block {good} is in an uptodate "
                           f"folio: not in one with block {bad}")
        want_eio(lambda: os.pread(f.fd, 4096, bad * 4096),
                 f"{what}: block {bad} read again")
    finally:
        dm_table(name, table)
    drop_caches()
    f.verify_all(f"{what}: the error target gone")
    f.close()
    print(f"{what}: with block {bad} unreadable, reads of {failed} failed "
          f"and blocks {good} and {hole} (a hole) read from the cache (folio "
          f"of order {order}, {'not ' if not resident else ''}uptodate)")


def case_gc_eio(d):
    """GC of the segment holding a block made unreadable (device mapper's
    error target) of a plain file cached in a large folio that the failed
    read left not uptodate: every other block of the file in the segment
    must move, as with order-0 folios, those of the bad block's folio too (GC
    reads the block it moves alone, not the whole folio, whose read fails
    again).  Foreground GC writes them from the folio at once; background
    GC marks them dirty in it, and writeback, of a folio not uptodate,
    moves them.  The file's 64 KiB extents lie apart on disk
    (interleave()), so the folio is read by several bios.  Needs the
    linear device mapper device named in EDGES_DM, as zero-eio does, and
    no background GC thread (background_gc=off), which would move the
    blocks first, or take GC's lock from the background GC asked for."""
    name, lin = dm_linear("gc-eio")
    print("; ".join(gc_eio(d, name, lin, sync) for sync in (1, 0)))


def gc_eio(d, name, lin, sync):
    """case_gc_eio() with foreground (sync=1) or background GC; return a
    line saying what moved."""
    what = f"gc-eio sync={sync}"
    table = " ".join(lin)
    f, _ = gc_victim_cached(d, f"gc-eio-{sync}", 2 * MIB, 160 + sync)
    bad, good = 300, 304                # extents [288, 304) and [304, 320)
    phys = apart_on_disk(f, what, good)
    # not gc_victim_cached()'s folios: it read the file in one 2 MiB read
    order = streamed_order(f, what, bad, [good])
    drop_caches()
    seg = phys[bad] // 512              # 2 MiB segments from disk block 0
    victims = sorted(b for b, p in phys.items() if p // 512 == seg)
    if os.environ.get("EDGES_FOLIOS") == "large" and not any(
            b != bad and b >> order == bad >> order for b in victims):
        raise Mismatch(f"{what}: no other block of block {bad}'s folio is "
                       f"in its segment")
    try:
        dm_error_at(name, lin, phys[bad], what)
        failed = stream_failing(f, bad, f"{what}: streamed with block "
                                f"{bad} unreadable")
        resident = page_resident(f.fd, good)
        if os.environ.get("EDGES_FOLIOS") == "large" and resident:
            raise Mismatch(f"{what}: block {good} is in an uptodate folio: "
                           f"not in one with block {bad}")
        def gc_range():
            try:
                fcntl.ioctl(f.fd, F2FS_IOC_GARBAGE_COLLECT_RANGE,
                            struct.pack("<IxxxxQQ", sync, seg * 512, 511))
                return "done"
            except OSError as e:
                # foreground GC: the bad block stays, the segment is not
                # freed
                if not sync or e.errno != errno.EAGAIN:
                    raise Mismatch(f"{what}: F2FS_IOC_GARBAGE_COLLECT_"
                                   f"RANGE: {e.strerror}") from e
                return e.strerror
        gc, reads = queued_bios(mount_source(d), gc_range, "R")
        # Each pass of GC over the segment reads the bad block alone to
        # move it, and before that, in its readahead phase, reads it once:
        # alone too with order-0 folios, with the other blocks of the failed
        # bio when it reads the large folio.  That phase must not read the
        # folio again for each of its blocks in the segment.
        alone = reads.count((phys[bad], 1))
        longer = [b for b in reads if b[1] > 1 and b[0] <= phys[bad] < sum(b)]
        if not alone or len(longer) > alone:
            raise Mismatch(f"{what}: GC read the unreadable block alone "
                           f"{alone} times, and in {len(longer)} longer reads "
                           f"{longer[:3]}...: want at most one of these per "
                           "read alone, the readahead of each pass")
        if not sync:
            # background GC only marks the blocks dirty in the cache
            moved = [b for b, p in phys_blocks(f.path).items()
                     if p != phys[b]]
            if moved:
                raise Mismatch(f"{what}: blocks {moved} moved before "
                               "writeback: foreground GC, not background")
            try:
                os.fsync(f.fd)
            except OSError as e:
                raise Mismatch(f"{what}: fsync after GC: {e.strerror}") \
                    from e
        after = phys_blocks(f.path)
        stayed = [b for b in victims if after[b] == phys[b]]
        if stayed != [bad]:
            raise Mismatch(f"{what}: GC of the segment at disk block "
                           f"{seg * 512} ({gc}) left blocks {stayed} of the "
                           f"file's {len(victims)} there, want only the "
                           f"unreadable block {bad}")
    finally:
        dm_table(name, table)
    drop_caches()
    f.verify_all(f"{what}: the error target gone")
    f.close()
    return (f"{what}: GC of the segment at disk block {seg * 512} ({gc}) "
            f"moved {len(victims) - 1} blocks of the file and left the "
            f"unreadable one (folio of order {order}, "
            f"{'not ' if not resident else ''}uptodate), reading it "
            f"{alone} times alone and {len(longer)} in longer reads")


def case_atomic_read_eio(d):
    """A read error under an atomic file's transaction fails the reads of
    the unreadable block and no others, whether the block is a copy the
    transaction staged in the COW inode or the file's own block.  Reads of
    an atomic file bypass readahead and fill order-0 folios, but a write
    during the transaction leaves a large folio, here one of 64 blocks
    that a short copy left not uptodate past its first block;
    ->read_folio() reads it a block per bio, each from its source, and
    must keep every block that read, those of later batches of its reads
    too.  A partial write into the unreadable block fails with EIO and
    changes nothing; with the error target gone, reads show the
    transaction's data, and the commit shows every write.  The staged
    copy's disk block is the one write bio of the writeback that stages it
    (block_bio_queue).  Needs the linear device mapper device named in
    EDGES_DM, as zero-eio does."""
    what = "atomic-read-eio"
    name, lin = dm_linear(what)
    table = " ".join(lin)
    iostat_enable(d)
    f = File(os.path.join(d, what))
    f.write(0, pattern(170, 2 * MIB))
    os.fsync(f.fd)
    # the short copy's folio: blocks [256, 320); ->read_folio() reads its
    # blocks 32 at a time, block 260 in the first batch, 300 in the second
    first, staged, own = 256, 260, 300
    large = os.environ.get("EDGES_FOLIOS") == "large"
    phys = phys_blocks(f.path)
    start_atomic(f, False)
    os.sync()                       # the staged block's the only write
    f.write(staged * 4096, pattern(171, 4096))
    _, bios = queued_bios(mount_source(d),
                          lambda: write_back_and_drop(f, what))
    if len(bios) != 1 or bios[0][1] != 1:
        raise Mismatch(f"{what}: staging one block wrote bios {bios}, want "
                       "one of one block")
    cow = bios[0][0]
    lines = []
    for i, (blk, kind, bad, other) in enumerate(
            ((staged, "staged", cow, own), (own, "own", phys[own], staged))):
        how = f"{what}: block {blk} ({kind}, disk block {bad}) unreadable"
        write_back_and_drop(f, how)
        short_write(f, first * 4096, 256 * KIB, 4096, 172 + i, how)
        try:
            dm_error_at(name, lin, bad, how)
            failed = stream_failing(f, blk, how)
            # The read that reads the short copy's folio, the first read
            # in it, fails whichever of its blocks failed: ->read_folio()
            # returns -EIO, which filemap_read_folio() passes on (iomap's
            # returns 0 and the folio, not uptodate, gives -EIO there).
            trigger = first * 4096 if large else -1
            out = [(a, b) for a, b in failed
                   if not a <= blk * 4096 < b and a != trigger]
            if out:
                raise Mismatch(f"{how}: reads of bytes {out} failed, not "
                               f"covering block {blk}: blocks that read "
                               "were not kept, or were not read")
            # read by read_stream(), with the unreadable block or not
            read_cached(d, f, [other], how)
            want_eio(lambda: os.pread(f.fd, 4096, blk * 4096),
                     f"{how}: block {blk} read again")
            want_eio(lambda: os.pwrite(f.fd, b"z", blk * 4096 + 10),
                     f"{how}: a one-byte write into block {blk}")
        finally:
            dm_table(name, table)
        f.verify(f"{how}: the error target gone (cached)")
        order = folio_order_at(f.fd, first)
        if large and any(b >> order != first >> order
                         for b in (staged, own)):
            raise Mismatch(f"{how}: the short copy's folio at block {first} "
                           f"is of order {order}, want blocks {staged} and "
                           f"{own} in it")
        write_back_and_drop(f, how)
        f.verify(f"{how}: the error target gone (from the disk)")
        lines.append(f"reads of {failed} failed (folio of order {order})")
    f.write(own * 4096 + 10, b"y")
    fcntl.ioctl(f.fd, F2FS_IOC_COMMIT_ATOMIC_WRITE)
    f.verify_all(f"{what}: committed")
    f.close()
    print(f"{what}: with the staged block {staged}, then the file's block "
          f"{own} unreadable: {'; '.join(lines)}; committed")


MADV_COLLAPSE = 25


def collapse_errno(advise):
    """Call advise(), an madvise(MADV_COLLAPSE) that raises OSError, and
    return its errno, 0 on success.  EAGAIN is a transient failure
    (madvise(2): a folio locked, or not yet on the LRU after a write): the
    call is tried again, up to five times."""
    for _ in range(5):
        err = 0
        try:
            advise()
        except OSError as e:
            err = e.errno
        if err != errno.EAGAIN:
            break
        time.sleep(0.5)
    return err


def collapse(f, what, prot=mmap.PROT_READ | mmap.PROT_WRITE):
    """MADV_COLLAPSE over a shared mapping of f's first 4 MiB (at a 2 MiB
    boundary), then the order of the folios holding blocks 0 and 512.
    With large folios the mapping allows PMD-sized folios, so both 2 MiB
    halves must end up in one folio of order 9 each, dirty folios written
    back first; with order-0 folios it allows none and the call must fail
    with EINVAL, leaving the cache in order-0 folios (collapse_errno()
    tries again after EAGAIN)."""
    m = mmap.mmap(f.fd, 4 * MIB, prot=prot)
    try:
        err = collapse_errno(lambda: m.madvise(MADV_COLLAPSE))
    finally:
        m.close()
    os.pread(f.fd, 4 * MIB, 0)                      # cached, if it failed
    orders = [folio_order_at(f.fd, b) for b in (0, 512)]
    if os.environ.get("EDGES_FOLIOS") == "small":
        if err != errno.EINVAL or any(orders):
            raise Mismatch(f"{what}: MADV_COLLAPSE without large folios: "
                           f"{os.strerror(err) if err else 'success'}, "
                           f"folio orders {orders}; want EINVAL, 0")
    elif err or orders != [9, 9]:
        raise Mismatch(f"{what}: MADV_COLLAPSE: "
                       f"{os.strerror(err) if err else 'success'}, folio "
                       f"orders {orders}; want success, [9, 9]")
    return orders[0]


def case_thp_collapse(d):
    """MADV_COLLAPSE (and khugepaged) may put a file cached in large
    folios into PMD-sized folios: a new folio, without a state, that
    copies the old ones after writing back the dirty ones.  Writes, stores
    and writeback into it must work as for any large folio; in an atomic
    write the old folios' staged blocks are written to the COW inode first,
    and commit and abort must still give the new and the old content."""
    f, lf = cached_file(d, "thp-collapse", 120)
    f.write(MIB + 5, pattern(121, 10000))                   # dirty
    order = collapse(f, "thp-collapse")
    f.verify("collapsed (cached)")
    f.write(MIB - 100, pattern(122, 300))                   # partial blocks
    m = mmap.mmap(f.fd, 4 * MIB)
    for off in range(5, 4 * MIB, 300 * KIB):
        b = bytes([f.model[off] ^ 0x5a])
        m[off:off + 1] = b
        f.model[off:off + 1] = b
    m.close()
    f.verify_all("writes and stores into collapsed folios")
    f.close()
    for end in ("commit", "abort"):
        f, lf = cached_file(d, f"thp-collapse-{end}", 123)
        f.write(3 * MIB + 7, pattern(124, 5000))            # dirty
        fcntl.ioctl(f.fd, F2FS_IOC_START_ATOMIC_WRITE)
        before = bytes(f.model)
        f.write(5, pattern(125, 4096))
        f.write(2 * MIB - 10, pattern(126, 64 * KIB))
        collapse(f, f"thp-collapse in an atomic write ({end})")
        f.write(MIB + 3, pattern(127, 10))                  # after it
        f.verify(f"collapsed in an atomic write before {end} (cached)")
        end_atomic(f, end, before)
        f.verify_all(f"collapsed in an atomic write, {end}")
        f.close()
    print(f"thp-collapse: {lf} pages in large folios before, folios of "
          f"order {order} after, written, committed and aborted")


def case_verity_collapse(d):
    """MADV_COLLAPSE of a verity file's read-only mapping: the pages it
    reads in are verified, and the PMD-sized folio it makes holds the
    verified data, in the cache and read again from disk."""
    f = File(os.path.join(d, "verity-collapse"))
    f.write(0, pattern(128, 4 * MIB))
    os.fsync(f.fd)
    f.close()
    enable_verity(f.path)
    f.fd = os.open(f.path, os.O_RDONLY)
    drop_caches()
    os.pread(f.fd, 64 * KIB, MIB)                   # some cached, some not
    order = collapse(f, "verity-collapse", mmap.PROT_READ)
    f.verify("verity file collapsed (cached)")
    drop_caches()
    f.verify("verity file collapsed (from disk)")
    f.close()
    print(f"verity-collapse: verified data in folios of order {order}")


def case_verity_tree_collapse(d):
    """MADV_COLLAPSE of a verity file's mapping past EOF, over its Merkle
    tree.  f2fs (like ext4) keeps the tree in the file's page cache past
    EOF, in order-0 folios: fs-verity marks a tree page verified with
    PG_checked, a flag only a page outside a large folio may carry.  A
    mapping may extend past EOF, and khugepaged's collapse of a file's
    range looked at the page cache alone: a 2 MiB window of cached tree
    pages became one PMD-sized folio, and the next verification of a data
    block then set PG_checked on a page of it (a VM_BUG_ON with
    CONFIG_DEBUG_VM_PGFLAGS).  Here a 32 MiB file with 1 KiB Merkle blocks
    and SHA-512, whose tree (2.1 MiB) starts at EOF, all of it cached by a
    read of the file: the data's first 4 MiB must collapse (with large
    folios), the tree's first 2 MiB, every page of it cached (mincore), must
    not (EINVAL; with order-0 folios the mapping allows no collapse at
    all).  Nothing is read after a collapse of the tree."""
    size = 32 * MIB
    f = File(os.path.join(d, "verity-tree-collapse"))
    f.write(0, pattern(132, size))
    os.fsync(f.fd)
    f.close()
    enable_verity(f.path, FS_VERITY_HASH_ALG_SHA512, 1024)
    f.fd = os.open(f.path, os.O_RDONLY)
    drop_caches()
    f.verify("verity-tree-collapse: read once, to cache the tree")
    order = collapse(f, "verity-tree-collapse: the data", mmap.PROT_READ)
    lib = libc()
    lib.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    # a 2 MiB-aligned address: reserve 4 MiB, map the tree's 2 MiB inside
    base = lib.mmap(None, 4 * MIB, 0,                   # PROT_NONE
                    mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if base in (None, ctypes.c_void_p(-1).value):
        raise Mismatch("verity-tree-collapse: mmap of 4 MiB failed")
    try:
        at = (base + 2 * MIB - 1) & ~(2 * MIB - 1)
        addr = lib.mmap(at, 2 * MIB, mmap.PROT_READ,
                        mmap.MAP_SHARED | 0x10, f.fd, size)  # MAP_FIXED
        if addr != at:
            raise Mismatch("verity-tree-collapse: mmap of the 2 MiB past "
                           f"EOF failed: {os.strerror(ctypes.get_errno())}")
        # a page not cached, which a collapse can't read in past EOF, would
        # make it fail with EINVAL without the fix too
        vec = ctypes.create_string_buffer(512)
        if lib.mincore(at, 2 * MIB, vec):
            raise Mismatch("verity-tree-collapse: mincore failed: "
                           f"{os.strerror(ctypes.get_errno())}")
        cached = sum(b & 1 for b in vec.raw)
        if cached != 512:
            raise Mismatch(f"verity-tree-collapse: {cached} of the tree's "
                           "first 512 pages cached after a read of the "
                           "file, want all")
        def advise():
            if lib.madvise(at, 2 * MIB, MADV_COLLAPSE):
                e = ctypes.get_errno()
                raise OSError(e, os.strerror(e))
        err = collapse_errno(advise)
    finally:
        lib.munmap(base, 4 * MIB)
    f.close()
    if err != errno.EINVAL:
        raise Mismatch("verity-tree-collapse: MADV_COLLAPSE of the 2 MiB of "
                       "Merkle tree past EOF: "
                       f"{os.strerror(err) if err else 'success'}; want "
                       "EINVAL")
    if order:
        print(f"verity-tree-collapse: the data collapsed into folios of "
              f"order {order}, the cached Merkle tree past EOF did not "
              "(EINVAL)")
    else:
        print("verity-tree-collapse: without large folios neither the data "
              "nor the cached Merkle tree past EOF collapsed (EINVAL)")


F2FS_IOC_START_ATOMIC_WRITE = 0xf501
F2FS_IOC_COMMIT_ATOMIC_WRITE = 0xf502
F2FS_IOC_ABORT_ATOMIC_WRITE = 0xf505
F2FS_IOC_START_ATOMIC_REPLACE = 0xf519


def start_atomic(f, replace):
    """Start an atomic write on f, or one that replaces the file (whose
    content then reads as empty until the transaction writes it)."""
    if replace:
        fcntl.ioctl(f.fd, F2FS_IOC_START_ATOMIC_REPLACE)
        f.model = bytearray()
    else:
        fcntl.ioctl(f.fd, F2FS_IOC_START_ATOMIC_WRITE)


def end_atomic(f, end, before):
    """End f's atomic write: "commit" it, or "abort" it, which gives the
    file back the content before (a copy of f.model when it started)."""
    if end == "commit":
        fcntl.ioctl(f.fd, F2FS_IOC_COMMIT_ATOMIC_WRITE)
    else:
        fcntl.ioctl(f.fd, F2FS_IOC_ABORT_ATOMIC_WRITE)
        f.model = bytearray(before)


def write_back(f, wait_before=True):
    """Write back f's dirty data and wait (sync_file_range: no fsync, so
    an atomic write stays uncommitted, its blocks staged in the COW
    inode).  Without wait_before (SYNC_FILE_RANGE_WAIT_BEFORE), the
    writeback is WB_SYNC_NONE, as background writeback's is."""
    flags = (1 if wait_before else 0) | 2 | 4
    if libc().sync_file_range(f.fd, 0, 0, flags):
        raise Mismatch(f"sync_file_range: "
                       f"{os.strerror(ctypes.get_errno())}")


def write_back_and_drop(f, what):
    """write_back(), then drop f's clean cache (POSIX_FADV_DONTNEED)."""
    write_back(f)
    os.posix_fadvise(f.fd, 0, 0, os.POSIX_FADV_DONTNEED)
    n = folio_stat(f.path).resident
    if n:
        raise Mismatch(f"{what}: the cache was not dropped: {n} pages "
                       "resident")


def case_atomic(d):
    """Android's atomic writes on a file whose large folios are cached,
    some dirty: a commit makes every staged write visible at once, an abort
    leaves the file as it was before the atomic write started."""
    for end in ("commit", "abort"):
        f = File(os.path.join(d, f"atomic-{end}"))
        f.write(0, pattern(60, 4 * MIB))
        os.fsync(f.fd)
        os.pread(f.fd, 4 * MIB, 0)                          # cached
        f.write(MIB + 100, pattern(61, 300 * KIB))          # dirty
        fcntl.ioctl(f.fd, F2FS_IOC_START_ATOMIC_WRITE)
        # Starting keeps the cache, large folios included.
        lf = large_folios(f.path, f"cached file after the start ({end})")
        before = bytes(f.model)
        for i, (off, ln) in enumerate(((5, 4096), (64 * KIB - 1, 2),
                                       (2 * MIB - 4096, 3 * 4096 + 17),
                                       (4 * MIB - 10, 64 * KIB))):
            f.write(off, pattern(62 + i, ln))
        f.verify(f"atomic write before {end} (cached)")
        large_folios(f.path, f"cached file in the atomic write ({end})")
        end_atomic(f, end, before)
        f.verify_all(f"atomic write {end}")
        # The file takes ordinary writes again afterwards.
        f.write(3 * MIB + 1, pattern(70, 100 * KIB))
        f.verify_all(f"write after atomic {end}")
        f.close()
    print(f"atomic: commit and abort keep the file consistent; {lf} pages "
          "in large folios when the atomic write started")


def case_atomic_cow(d):
    """Writes partially overwriting a block read the block per block from
    the right place: the copy an atomic write staged in the COW inode
    (written back, its cache dropped), else the file, or zeroes if the
    atomic write replaces the file.  Each such write starts a large folio
    (64 KiB at 50 bytes into a 64 KiB aligned block), so its first block is
    read inside a large folio.  The commit then shows every write."""
    for replace in (False, True):
        what = "replace" if replace else "write"
        f = File(os.path.join(d, f"atomic-cow-{what}"))
        f.write(0, pattern(80, 2 * MIB))
        os.fsync(f.fd)
        os.pread(f.fd, 2 * MIB, 0)                          # cached
        start_atomic(f, replace)
        # Staged: blocks 16-18, and 64 KiB at 1 MiB (the size, if replaced).
        f.write(64 * KIB, pattern(81, 12 * KIB))
        f.write(MIB, pattern(82, 64 * KIB))
        write_back_and_drop(f, f"atomic {what}")
        # Block 16 is staged, block 64 is not; block 256 (1 MiB) is staged
        # and the write ends inside it.
        orders = []
        for i, off in enumerate((64 * KIB + 50, 256 * KIB + 50,
                                 MIB - 64 * KIB + 50)):
            f.write(off, pattern(83 + i, 64 * KIB))
            orders.append(folio_order_at(f.fd, off // 4096))
        want = os.environ.get("EDGES_FOLIOS")
        if want and (want == "large") != (min(orders) > 0):
            raise Mismatch(f"atomic {what}: the partially written blocks are "
                           f"in folios of order {orders}, want {want}")
        fcntl.ioctl(f.fd, F2FS_IOC_COMMIT_ATOMIC_WRITE)
        f.verify_all(f"atomic {what}, partial writes over staged blocks")
        f.close()
    print(f"atomic-cow: partial blocks read from the COW inode, the file or "
          f"zeroes, in folios of order {orders}")


def case_atomic_read(d):
    """Reads of an atomic file during its transaction see the transaction's
    data: blocks it staged in the COW inode (written back, their cache
    dropped) read as it wrote them, through read() (readahead, then one
    folio at a time), in a large folio that a short copy left not uptodate
    around them, and through a mapping; the other blocks read as the
    file's, or as zeroes if the transaction replaces the file.  A write
    that then partially covers a staged block, its cache filled by such a
    read, starts from the transaction's copy, and the commit shows every
    write.  Each folio read is counted in f2fs's iostat by its order, as
    reads of other files are."""
    orders = []
    iostat_enable(d)
    for replace in (False, True):
        what = f"atomic-read ({'replace' if replace else 'write'})"
        f = File(os.path.join(d, "atomic-read"))
        f.write(0, pattern(160, MIB))
        os.fsync(f.fd)
        drop_caches()
        start_atomic(f, replace)
        # staged: blocks 16-17 and 130-131
        f.write(64 * KIB, pattern(161, 8 * KIB))
        f.write(130 * 4096, pattern(162, 8 * KIB))
        write_back_and_drop(f, what)
        # block 128 rewritten in a folio of blocks 128-191 (with large
        # folios), not uptodate over the staged blocks 130-131
        short_write(f, 128 * 4096, 256 * KIB, 4096, 163, what)
        count = iostat_read_orders(d)
        f.verify(f"{what}: read during the transaction")
        orders.append(folio_order_at(f.fd, 130))
        read = iostat_read_orders(d)[orders[-1]] - count[orders[-1]]
        if read < 1:
            raise Mismatch(f"{what}: the folio of order {orders[-1]} read "
                           f"around the short copy was not counted in "
                           f"iostat")
        write_back_and_drop(f, what)
        m = mmap.mmap(f.fd, len(f.model), prot=mmap.PROT_READ)
        try:
            got = m[:]
        finally:
            m.close()
        if got != f.model:
            raise Mismatch(f"{what}: read through a mapping during the "
                           f"transaction: {first_bad(got, f.model)}")
        # partial writes into staged blocks whose cache a read filled
        write_back_and_drop(f, what)
        count = iostat_read_orders(d)[0]
        os.pread(f.fd, 4096, 64 * KIB)
        os.pread(f.fd, 4096, 130 * 4096)
        read = iostat_read_orders(d)[0] - count
        if read != 2:
            raise Mismatch(f"{what}: the two staged blocks read again were "
                           f"counted in iostat as {read} folios of order 0")
        f.write(64 * KIB + 10, b"x")
        f.write(130 * 4096 + 10, b"y")
        fcntl.ioctl(f.fd, F2FS_IOC_COMMIT_ATOMIC_WRITE)
        f.verify_all(f"{what}, committed")
        f.close()
        os.unlink(f.path)
    want = os.environ.get("EDGES_FOLIOS")
    if want and (want == "large") != (min(orders) > 0):
        raise Mismatch(f"atomic-read: the short copy's folio was of order "
                       f"{orders}, want {want}")
    print(f"atomic-read: the transaction's blocks read during it, in folios "
          f"of order {orders} around the short copy")


def case_atomic_lookup_error(d):
    """A lookup of an atomic file's block, in its COW inode or in the file,
    that cannot read a dnode fails the read or the write that needed it:
    it is no hole.  f2fs's fault injection fails the Nth node footer check
    (FAULT_INCONSISTENT_FOOTER, inject_rate N) around a read of a block
    the transaction staged, a one-byte write into it, and one into a block
    of the file it has not staged, each with the block's cache dropped and
    the node blocks clean.  The filesystem is mounted with noextent_cache,
    so that lookups read the dnodes.  The file has blocks 0-127, in its
    inode, and 900-903, in its first dnode; the transaction stages blocks
    2000-2001, in the COW inode's second dnode, which the file has none
    of.  The read with the COW inode's dnode failing (N = 2) and the
    write with the file's failing (N = 3) must fail with EUCLEAN, as any
    other that fails; each that does not gets the transaction's data.
    Taking the failed lookup for a hole, the read would return zeroes
    from the file, and the write start from zeroes, losing the block's
    data at the commit.  The short form (CI) fails only the 2nd and
    the 3rd check, the two of these that must fail."""
    opts = mount_entry(d)[3].split(",")
    if "noextent_cache" not in opts:
        raise Mismatch(f"atomic-lookup-error: needs a filesystem mounted "
                       f"with noextent_cache, not {','.join(opts)}")
    what = "atomic-lookup-error"
    f = File(os.path.join(d, "atomic-lookup-error"))
    f.write(0, pattern(170, 128 * 4096))
    f.write(900 * 4096, pattern(171, 4 * 4096))
    os.fsync(f.fd)
    start_atomic(f, False)
    f.write(2000 * 4096, pattern(172, 2 * 4096))
    failed = []
    for op, blk, rates in (("read", 2000, range(2, 5)),
                           ("write", 2000, range(2, 5)),
                           ("write", 901, range(2, 6))):
        for rate in rates if FULL_FORM else rates[:2]:
            # node blocks clean, so that no node writeback meets a fault
            write_back_and_drop(f, what)
            os.sync()
            off = blk * 4096 + 10 + rate
            with injecting(d, FAULT_INCONSISTENT_FOOTER, rate):
                try:
                    if op == "read":
                        got = os.pread(f.fd, 4096, blk * 4096)
                    else:
                        os.pwrite(f.fd, bytes([rate]), off)
                    err = None
                except OSError as e:
                    err = e
            when = f"{op} of block {blk} with node footer check {rate} failing"
            if err is not None:
                if err.errno != errno.EUCLEAN:
                    raise Mismatch(f"{what}: {when}: {err}, want EUCLEAN")
                failed.append(f"{op}-{blk}/{rate}")
            elif op == "write":
                f.model[off] = rate
            else:
                want = f.model[blk * 4096:blk * 4096 + 4096]
                if got != want:
                    raise Mismatch(f"{what}: {when}: "
                                   f"{first_bad(got, want, blk * 4096)}")
            f.verify(f"{what}: after the {when}")
    for must in ("read-2000/2", "write-901/3"):
        if must not in failed:
            raise Mismatch(f"{what}: {must} did not fail; failed: "
                           f"{' '.join(failed) or 'none'}")
    fcntl.ioctl(f.fd, F2FS_IOC_COMMIT_ATOMIC_WRITE)
    f.verify_all(f"{what}, committed")
    f.close()
    os.unlink(f.path)
    print(f"{what}: failed with EUCLEAN: {' '.join(failed)}; the rest "
          f"read and wrote the transaction's data")


def case_atomic_enospc(d):
    """A write of an atomic write transaction that fails, as one reserving
    a block with the filesystem full does (f2fs's fault injection,
    FAULT_BLOCK, failing every block reservation), leaves the file's own
    blocks alone: the transaction reserves its blocks in the COW inode.
    A 256 KiB file, fsynced; under F2FS_IOC_START_ATOMIC_REPLACE a 64 KiB
    write at 0, under F2FS_IOC_START_ATOMIC_WRITE one at EOF, must fail
    with ENOSPC, and the abort must leave the file as it was, cached and
    read back from disk.  A replace starts at size 0, so the failed write
    is past EOF: the cleanup of a failed write past EOF
    (f2fs_write_failed()) freed every block of the file, and the abort
    gave the file its size back over holes."""
    what = "atomic-enospc"
    for replace in (True, False):
        kind = "replace" if replace else "write"
        f = File(os.path.join(d, f"atomic-enospc-{kind}"))
        f.write(0, pattern(180, 256 * KIB))
        os.fsync(f.fd)
        os.sync()
        before = bytes(f.model)
        start_atomic(f, replace)
        off = len(f.model)
        with injecting(d, FAULT_BLOCK):
            want_errno(lambda: os.pwrite(f.fd, pattern(181, 64 * KIB), off),
                       f"{what}: the atomic {kind}'s write at {off} with "
                       "no block to reserve", errno.ENOSPC)
        end_atomic(f, "abort", before)
        f.verify_all(f"{what}: the atomic {kind} aborted after a write "
                     "failed with ENOSPC")
        f.close()
        os.unlink(f.path)
    print(f"{what}: a write failing with ENOSPC in an atomic replace and "
          "in an atomic write, then the abort, leave the file as it was")


def case_atomic_truncate(d):
    """A truncate of an atomic file during its transaction zeroes the block
    at the new EOF past it as the transaction has it, as a partial write
    reads it, and drops the blocks staged past the new EOF.  The block at
    EOF is: the copy the transaction staged in the COW inode (written back,
    its cache dropped), read into a new folio, or into a large folio that a
    short copy left not uptodate there (once at the folio's last block);
    only reserved in the COW inode, by a short copy that stopped before it
    (the file's data, or zeroes if the transaction replaces the file); or
    cached and dirty.  The file has a block of its own there or a hole.
    The commit then gives the block's head as the transaction has it, and
    zeroes past the new EOF when the file grows again, before the commit
    or after it (SQLite does not truncate inside a transaction; other
    users of the ioctls may).  Under a replace, a block read as zeroes
    before the truncate, with nothing staged, stays the file's: an abort
    gives it back."""
    runs = [r for r in itertools.product(
        (False, True), (257, 258, 319), ("staged", "staged-large"),
        ("before", "after"))]
    runs += [r for r in itertools.product(
        (False, True), (257, 258, 319), ("reserved", "dirty"), ("before",))]
    report = []
    for replace, eof_blk, state, grow in runs:
        own = "a hole" if eof_blk == 258 else "its own block"
        what = (f"atomic-truncate ({'replace' if replace else 'write'}, "
                f"{own} at EOF {eof_blk}, {state}, grown {grow} the commit)")
        f = File(os.path.join(d, "atomic-truncate"))
        f.write(0, pattern(150, 2 * MIB))
        f.fallocate(FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, 258 * 4096, 4096)
        os.fsync(f.fd)
        if 258 in phys_blocks(f.path):
            raise Mismatch(f"{what}: block 258 was not punched")
        drop_caches()
        start_atomic(f, replace)
        if state != "reserved":
            # blocks 256-319: staged, or cached and dirty
            f.write(MIB, pattern(151, 256 * KIB))
        if state.startswith("staged"):
            write_back_and_drop(f, what)
        if state in ("staged-large", "reserved"):
            # block 256 rewritten in a folio of blocks 256-319 (with
            # large folios), which is not uptodate at the block of the
            # new EOF; where nothing was staged, the write reserved the
            # blocks it did not copy
            short_write(f, MIB, 256 * KIB, 4096, 152, what)
        f.truncate(eof_blk * 4096 + 100)
        if grow == "before":
            f.truncate(2 * MIB)         # past the old EOF: zeroes
        fcntl.ioctl(f.fd, F2FS_IOC_COMMIT_ATOMIC_WRITE)
        # the order of the folio the truncate met (looked at after it:
        # the fault reads the rest of the folio in)
        order = folio_order_at(f.fd, eof_blk)
        if grow == "after":
            f.truncate(2 * MIB)
        f.verify_all(what)
        want = os.environ.get("EDGES_FOLIOS")
        if state in ("staged-large", "reserved") and want and \
                (want == "large") != (order > 0):
            raise Mismatch(f"{what}: the block at EOF was in a folio of "
                           f"order {order}, want {want}")
        report.append(order)
        f.close()
        os.unlink(f.path)
    # Under a replace, a block the COW inode has none for reads as zeroes.
    # A truncate into that block, cached so by a read, has nothing of the
    # transaction's to zero: zeroed and written back as the file's, it
    # went over the file's own block, which an abort keeps.  The file ends
    # in that block, so that the truncate frees none of the file's blocks
    # (7.3 frees them at once, outside the transaction).
    ends = ("abort", "commit")
    for end in ends:
        what = f"atomic-truncate (replace, block 257 read before, {end})"
        f = File(os.path.join(d, "atomic-truncate"))
        f.write(0, pattern(153, 257 * 4096 + 200))
        os.fsync(f.fd)
        before = bytes(f.model)
        drop_caches()
        start_atomic(f, True)
        f.truncate(257 * 4096 + 200)
        f.verify(f"{what} (read during the transaction)")
        f.truncate(257 * 4096 + 100)
        write_back(f)
        end_atomic(f, end, before)
        f.verify_all(what)
        f.close()
        os.unlink(f.path)
    print(f"atomic-truncate: {len(report) + len(ends)} truncates in a "
          "transaction, the block at EOF zeroed as the transaction has it "
          f"(folios of order {min(report)} to {max(report)})")


def case_atomic_grow(d):
    """fsync_mode=strict zeroes the block at EOF past it, and writes it
    back, before a file grows: a truncate up, a write past EOF (an
    fallocate() too, which an atomic file refuses: atomic-falloc).  An
    atomic file's size reaches the disk with its commit,
    and its EOF block is the transaction's, which it wrote into and
    staged in the COW inode (written back), then left cached or dropped.
    After a commit the block holds what the transaction wrote, after an
    abort what the file held before.  Zeroed in the copy the cache holds,
    the block went to the file ahead of the commit, and the abort left
    the transaction's data there; zeroed in the file's own block, read
    into a new folio, it went over the staged copy, and the commit lost
    the transaction's data."""
    opts = mount_entry(d)[3].split(",")
    if "fsync_mode=strict" not in opts:
        raise Mismatch(f"atomic-grow: needs a filesystem mounted with "
                       f"fsync_mode=strict, not {','.join(opts)}")
    runs = list(itertools.product(("truncate", "write"),
                                  ("cached", "dropped"),
                                  ("commit", "abort")))
    for how, state, end in runs:
        what = f"atomic-grow ({how}, the EOF block {state}, {end})"
        f = File(os.path.join(d, "atomic-grow"))
        f.write(0, pattern(160, 10 * KIB + 100))     # EOF in block 2
        os.fsync(f.fd)
        before = bytes(f.model)
        start_atomic(f, False)
        f.write(8 * KIB + 10, pattern(161, 1000))    # block 2, below EOF
        if state == "cached":
            write_back(f)
            if not folio_stat(f.path).resident:
                raise Mismatch(f"{what}: not cached after the write-back")
        else:
            write_back_and_drop(f, what)
        if how == "truncate":
            f.truncate(64 * KIB)
        else:
            f.write(32 * KIB, pattern(162, 100))
        f.verify(f"{what} (before the {end})")
        end_atomic(f, end, before)
        f.verify_all(what)
        f.close()
        os.unlink(f.path)
    print(f"atomic-grow: {len(runs)} atomic files grown in fsync_mode=strict "
          "keep their EOF block as the transaction has it")


def device_gc(d, f, sync):
    """GC each segment of the main area in turn (one
    F2FS_IOC_GARBAGE_COLLECT_RANGE per segment, as GC refuses a range with
    a current segment in it): moves every valid block outside the current
    segments, whichever inode it belongs to."""
    dev = os.path.basename(mount_source(d))
    with open(f"/sys/fs/f2fs/{dev}/main_blkaddr") as m:
        main = int(m.read())
    with open(f"/sys/class/block/{dev}/size") as sz:
        end = int(sz.read()) * 512 // 4096
    for seg in range(main, end - 511, 512):
        try:
            fcntl.ioctl(f.fd, F2FS_IOC_GARBAGE_COLLECT_RANGE,
                        struct.pack("<IxxxxQQ", sync, seg, 511))
        except OSError:
            pass


def case_atomic_gc(d):
    """GC moves the blocks an atomic write staged in the COW inode while
    the file's large folios are cached: the commit must put the moved
    blocks in the file.  Staged blocks alternate with a filler's, which is
    then deleted, so their segments are half valid (GC by range skips
    segments that are fully valid).  Once with background GC, once with
    foreground GC, each time on a fresh transaction."""
    iostat_enable(d)

    def gc_read():
        """Bytes of data GC read."""
        return iostat_bytes(d, "READ", "fs gc data")
    report = []
    for sync in (0, 1):
        f = File(os.path.join(d, f"atomic-gc-{sync}"))
        f.write(0, pattern(90, 6 * MIB))
        os.fsync(f.fd)
        os.pread(f.fd, 6 * MIB, 0)                          # cached
        fcntl.ioctl(f.fd, F2FS_IOC_START_ATOMIC_WRITE)
        filler = File(os.path.join(d, "atomic-gc-filler"))
        for i in range(0, 4 * MIB, 64 * KIB):
            f.write(i + 5, pattern(91 + i, 64 * KIB))      # staged
            write_back(f)
            filler.write(i, pattern(92 + i, 64 * KIB))
            os.fsync(filler.fd)
        filler.close()
        os.unlink(filler.path)
        os.sync()
        before, phys = gc_read(), phys_blocks(f.path)
        device_gc(d, f, sync)
        f.verify(f"atomic write after GC sync={sync} (cached)")
        after = phys_blocks(f.path)
        own = sum(1 for b in phys if after.get(b) != phys[b])
        cow = (gc_read() - before) // 4096 - own
        # ~1100 blocks are staged, some in a current segment GC skips.
        if cow < 256:
            raise Mismatch(f"GC sync={sync} moved {own} blocks of the file "
                           f"and {cow} other data blocks, want the COW "
                           "inode's staged blocks (>= 256) moved")
        report.append(f"sync={sync}: {own} of the file, {cow} staged")
        f.write(3 * MIB + 1, pattern(93, 5000))
        fcntl.ioctl(f.fd, F2FS_IOC_COMMIT_ATOMIC_WRITE)
        f.verify_all(f"atomic write committed after GC sync={sync}")
        f.close()
    print(f"atomic-gc: GC moved {'; '.join(report)}; committed right")


def case_atomic_pin(d):
    """A page pinned for a direct read before an atomic write starts and
    dirtied when the read completes during it (the C tool atomic-pin, with
    a FUSE file as the read's slow source): the blocks the transaction
    staged beside it, in its large folio, must reach the file only with
    the commit, and the read's data must survive the commit.  And where
    the transaction's copy stopped short of the pinned block, which a
    large folio's ->write_begin() reserved in the COW inode all the same,
    the read's data goes to the file, whether the read completes before
    an abort or while the commit waits between moving the staged blocks
    and its fsync (FAULT_ATOMIC_TIMEOUT injected)."""
    stats = f"/proc/fs/f2fs/{os.path.basename(mount_source(d))}/inject_stats"
    orders = each_variant(("abort", "commit", "short-abort", "short-commit"),
                          lambda end: atomic_pin(d, stats, end))
    want = os.environ.get("EDGES_FOLIOS")
    if want and (want == "large") != (min(orders) > 0):
        raise Mismatch(f"atomic-pin: the pinned pages were in folios of "
                       f"order {orders}, want {want}")
    print(f"atomic-pin: abort kept the old data, commit the transaction's "
          f"and the read's, the read's data kept past a short copy at "
          f"abort and in the commit's wait; pinned pages in folios of "
          f"order {orders}")


def atomic_pin(d, stats, end):
    """case_atomic_pin() for one way to end: the order of the folio of the
    pinned page."""
    args = [stats] if end.startswith("short") else []
    with (injecting(d, FAULT_ATOMIC_TIMEOUT) if end == "short-commit"
          else contextlib.nullcontext()):
        r = run(["atomic-pin", os.path.join(d, f"atomic-pin-{end}"),
                 f"/tmp/atomic-pin-fuse-{end}", end] + args, ok_fail=True)
    out = (r.stdout + r.stderr).strip()
    if r.returncode:
        raise Mismatch(" / ".join(out.splitlines()[-4:]))
    m = re.search(r"folio of order (\d+)", out)
    if not m:
        raise Mismatch(f"atomic-pin {end}: no folio order in {out!r}")
    return int(m.group(1))


# the file the child writes and reads: over three times the cgroup's
# limit, twice in the short form (CI), which reclaim must take pages of too
PRESSURE_MIB = 160 if FULL_FORM else 96
PRESSURE_LIMIT = 48 * MIB  # its memory cgroup's memory.max
CGROOT = "/sys/fs/cgroup"


def memcg(name, limit):
    """A cgroup v2 group with the memory controller and memory.max =
    limit (cgroup2 mounted at CGROOT first if need be); its path."""
    ctl = os.path.join(CGROOT, "cgroup.controllers")
    if not os.path.exists(ctl):
        os.makedirs(CGROOT, exist_ok=True)
        run(["mount", "-t", "cgroup2", "none", CGROOT])
    with open(ctl) as c:
        if "memory" not in c.read().split():
            raise Mismatch("no memory cgroup controller in this kernel "
                           "(CONFIG_MEMCG: the test kernel has it)")
    with open(os.path.join(CGROOT, "cgroup.subtree_control"), "w") as c:
        c.write("+memory")
    path = os.path.join(CGROOT, name)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "memory.max"), "w") as m:
        m.write(str(limit))
    return path


def cg_stat(path, name, key):
    """One counter of a cgroup's memory.stat or memory.events."""
    with open(os.path.join(path, name)) as f:
        for line in f:
            k, v = line.split()
            if k == key:
                return int(v)
    raise Mismatch(f"no {key} in {name}")


def pressure_expected(i):
    """What the i-th MiB of the pressure file holds (from 513 on): its
    pattern, with the rewrite that every seventh gets inside it."""
    b = bytearray(pattern(1000 + i, MIB))
    if i % 7 == 0:
        b[20000:25000] = pattern(2000 + i, 5000)
    return bytes(b)


def pressure_check(fd, where):
    """The pressure file, read back through fd, holds what it should."""
    if os.pread(fd, 513, 0) != bytes(513):
        raise Mismatch(f"pressure: the first 513 bytes are not zero {where}")
    for i in range(PRESSURE_MIB):
        if os.pread(fd, MIB, 513 + i * MIB) != pressure_expected(i):
            raise Mismatch(f"pressure: MiB {i} (at {513 + i * MIB}) read "
                           f"back wrong {where}")


def pressure_child(path, cg):
    """In the memory cgroup cg: write the pressure file in unaligned
    1 MiB writes, fsync every 16 MiB, rewrite 5000 bytes inside every
    seventh MiB, and read it all back; prints the pages in large folios
    after the writes."""
    with open(os.path.join(cg, "cgroup.procs"), "w") as p:
        p.write(str(os.getpid()))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    lf = 0
    for i in range(PRESSURE_MIB):
        os.pwrite(fd, pattern(1000 + i, MIB), 513 + i * MIB)
        if i % 16 == 15:
            lf = max(lf, folio_stat(path).large)
            os.fsync(fd)
    for i in range(0, PRESSURE_MIB, 7):
        os.pwrite(fd, pattern(2000 + i, 5000), 513 + i * MIB + 20000)
    os.fsync(fd)
    pressure_check(fd, "under the cgroup's memory limit")
    os.close(fd)
    print(f"lf={lf}")


def case_pressure(d):
    """Reclaim takes a file's large folios while they are written, written
    back and read: a child in a memory cgroup of 48 MiB writes a file of
    160 MiB (96 MiB in the short form) and reads it back
    (pressure_child()).  Its cgroup's reclaim must take pages
    (memory.stat pgsteal), with no OOM kill, every byte must read back
    right, in the child and again from outside the cgroup, and the file
    must have had large folios in the cache as the variant under test
    gives them."""
    cg = memcg("lab-pressure", PRESSURE_LIMIT)
    path = os.path.join(d, "pressure")
    r = subprocess.run([sys.executable, os.path.abspath(__file__),
                        "pressure-child", path, cg],
                       capture_output=True, text=True)
    stolen = cg_stat(cg, "memory.stat", "pgsteal")
    ooms = cg_stat(cg, "memory.events", "oom_kill")
    os.rmdir(cg)
    if r.returncode:
        raise Mismatch(f"pressure: the child failed ({r.returncode}): "
                       f"{(r.stdout + r.stderr).strip()[-300:]}")
    if ooms:
        raise Mismatch(f"pressure: {ooms} OOM kills in the cgroup")
    if stolen <= 0:
        raise Mismatch("pressure: the cgroup's reclaim took no page")
    lf = want_folios(int(r.stdout.split("lf=")[-1]),
                     "pressure: the file written in the cgroup")
    fd = os.open(path, os.O_RDONLY)
    try:
        pressure_check(fd, "outside the cgroup")
    finally:
        os.close(fd)
    os.unlink(path)
    print(f"pressure: {PRESSURE_MIB} MiB written, rewritten and read back "
          f"in a {PRESSURE_LIMIT // MIB} MiB memory cgroup, whose reclaim "
          f"took {stolen} pages; up to {lf} pages in large folios")


def f2fs_status_text():
    """debugfs' f2fs status (mounting debugfs if need be), or None when no
    f2fs is mounted."""
    if not os.path.exists("/sys/kernel/debug/f2fs"):
        subprocess.run(["mount", "-t", "debugfs", "none", "/sys/kernel/debug"],
                       capture_output=True)
    try:
        with open("/sys/kernel/debug/f2fs/status") as f:
            return f.read()
    except OSError:
        return None


def f2fs_dirty_data():
    """f2fs's count of dirty data pages (debugfs status), or None when no
    f2fs is mounted.  With the series it counts dirty blocks."""
    text = f2fs_status_text()
    m = re.findall(r"^\s*- data:\s*(\d+) in files", text or "", re.M)
    return sum(int(x) for x in m) if m else None


def f2fs_status(d, key):
    """The numbers of the line of debugfs' f2fs status that starts with
    key, in the section of d's disk."""
    dev = os.path.basename(mount_source(d))
    for part in (f2fs_status_text() or "").split("=====[ partition info(")[1:]:
        if not part.startswith(dev + ")"):
            continue
        for line in part.splitlines():
            if line.strip().startswith(key):
                return [int(x) for x in re.findall(r"\d+", line)]
    raise Mismatch(f"no '{key}' in the f2fs status of {dev}")


F2FS_IOC_SHUTDOWN = 0x8004587d
F2FS_GOING_DOWN_NOSYNC = 2


CP_WAIT = 300   # s: it comes within a second


def unlock_again(d, mnt):
    """After a mount, add the key of d's encryption policy again, as
    lib.sh's crypt_unlock does (EDGES_KEY: the raw key file, named by the
    policy), if d is an encrypted directory below mnt; whether it was."""
    key = os.environ.get("EDGES_KEY", "")
    if os.path.samefile(d, mnt) or not os.path.isfile(key):
        return False
    cmd = "add_enckey" + (" -d 0123456789abcdef" if key.endswith("-v1")
                          else "")
    with open(key, "rb") as k:
        r = subprocess.run(["xfs_io", "-c", cmd, mnt], stdin=k,
                           capture_output=True, text=True)
    if r.returncode:
        raise Mismatch(f"xfs_io -c '{cmd}' {mnt} failed: {r.stderr.strip()}")
    return True


def remount(d):
    """Unmount the filesystem of d and mount it again with its options,
    with d's key added again if d is encrypted (unlock_again()'s
    result)."""
    dev, mnt, _, opts = mount_entry(d)[:4]
    run(["umount", mnt])
    run(["mount", "-t", "f2fs", "-o", opts, dev, mnt])
    return unlock_again(d, mnt)


def shutdown_and_mount(f, d):
    """Shut the filesystem of d down as a crash would (F2FS_IOC_SHUTDOWN,
    nothing synced) through f, which it closes, and mount it again
    (remount()'s result)."""
    fcntl.ioctl(f.fd, F2FS_IOC_SHUTDOWN,
                struct.pack("<I", F2FS_GOING_DOWN_NOSYNC))
    f.close()
    return remount(d)


def kept_after_shutdown(f, d, what, want, check=None):
    """File f, which what says how it was written, must have want blocks
    allocated; fsync'd, shut down as a crash would and mounted again
    (shutdown_and_mount()), it must keep them, its model's size and its
    model's data.  check(f, when), if given, checks more once f is
    fsync'd and again once it is mounted again.  Closes f."""
    blocks = blocks_allocated(f.fd)
    os.fsync(f.fd)
    if check:
        check(f, "fsync'd")
    shutdown_and_mount(f, d)
    f = File(f.path, f.model)
    if check:
        check(f, "shut down and mounted again")
    size = os.fstat(f.fd).st_size
    if blocks != want or size != len(f.model):
        f.close()
        raise Mismatch(f"{what}: {blocks} blocks allocated, want {want}; "
                       f"fsync'd, shut down and mounted again: size {size}, "
                       f"want {len(f.model)}")
    f.verify_all(f"{what}: recovered after a shutdown")
    f.close()


def case_data_flush(d):
    """With data_flush, f2fs writes the dirty data of files back before a
    background checkpoint; it finds the files on its list of dirty inodes,
    which an inode leaves when its count of dirty blocks reaches zero.
    Folio A holds 64 KiB written and fsync'd, its second half rewritten
    and then punched; folio B, the next 64 KiB, rewritten and then
    punched, takes the count to zero.  Folio A, whose last dirty block the
    punch dropped, must be clean (patch 60; before it, A stayed dirty with
    no block counted, and mm saw no folio become dirty when a block of it
    was dirtied again).  A 4 KiB write into A must put the inode back on
    the list, and be on disk after a background checkpoint and a shutdown
    that writes nothing."""
    ent = mount_entry(d)
    mnt, opts = ent[1], ent[3]
    if "data_flush" not in opts.split(","):
        raise Mismatch(f"data-flush: {mnt} is not mounted with data_flush")
    # From 64 KiB on: a new file's block 0 is its inline data's order-0
    # folio.
    r = run(["xfs_io", "-c", "get_encpolicy", d], ok_fail=True)
    encrypted = r.returncode == 0 and "Policy version" in r.stdout
    f = File(os.path.join(d, "data-flush"))
    f.write(64 * KIB, pattern(70, 64 * KIB))        # folio A
    f.write(128 * KIB, pattern(71, 64 * KIB))       # folio B
    os.fsync(f.fd)
    orders = [folio_order_at(f.fd, blk) for blk in (16, 32)]
    want = {"large": [4, 4], "small": [0, 0]}.get(
        os.environ.get("EDGES_FOLIOS"), orders)
    if orders != want:
        raise Mismatch(f"data-flush: folios A and B of order {orders}, "
                       f"want {want}")
    f.write(96 * KIB, pattern(72, 32 * KIB))
    f.write(128 * KIB, pattern(73, 64 * KIB))
    f.fallocate(FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, 96 * KIB, 32 * KIB)
    f.fallocate(FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, 128 * KIB, 64 * KIB)
    data, files = f2fs_status(d, "- data:")
    if data or files:
        raise Mismatch(f"data-flush: {data} dirty blocks in {files} files "
                       "on the dirty list after punching every block "
                       "rewritten, want 0 in 0")
    if page_flags_at(f.fd, 16) & KPF_DIRTY:
        raise Mismatch("data-flush: folio A dirty after a punch dropped "
                       "its last dirty block, want it clean")
    f.write(64 * KIB, pattern(74, 4 * KIB))
    data, files = f2fs_status(d, "- data:")
    if data != 1 or files != 1:
        raise Mismatch(f"data-flush: a block written, {data} dirty blocks "
                       f"in {files} files on the dirty list, want 1 in 1")
    # The GC thread balances metadata after each pass, every 100 ms in
    # urgent mode, and writes a checkpoint, flushing data first, once
    # cp_interval has passed since the last one: the fsync of a new
    # encrypted file wrote one, so wait that long before waking the
    # thread (a pass that finds no victim and checkpoints too soon puts
    # it to sleep for gc_no_gc_sleep_time).  Periodic writeback is off
    # until after the crash, so that only the data flush can have written
    # the block (on encrypted files the checkpoint came only with the
    # flusher's writeback, 30 s on, which can write the block itself).
    bg = f2fs_status(d, "CP calls:")[1]
    with vm_set("dirty_writeback_centisecs", 0), \
            vm_set("dirty_expire_centisecs", 360000):
        with sysfs_set(d, "cp_interval", 1) as cp_interval:
            time.sleep(cp_interval + 0.5)
            with sysfs_set(d, "gc_urgent_sleep_time", 100), \
                    sysfs_set(d, "gc_urgent", 1):
                t0 = time.monotonic()
                while f2fs_status(d, "CP calls:")[1] == bg:
                    if time.monotonic() > t0 + CP_WAIT:
                        raise Mismatch("data-flush: no background "
                                       f"checkpoint in {CP_WAIT} s")
                    time.sleep(0.1)
                waited = time.monotonic() - t0
        time.sleep(1)                   # the checkpoint after the flush
        # Still without periodic writeback: setting its interval again
        # wakes the flusher, which would write the block before the crash.
        again = shutdown_and_mount(f, d)
    if again != encrypted:
        raise Mismatch(f"data-flush: {d} is {'' if encrypted else 'not '}"
                       "encrypted, but EDGES_KEY says otherwise")
    f = File(f.path, f.model)
    f.verify("data-flush: after a background checkpoint and a shutdown")
    f.verify_all("data-flush: mounted again")
    f.close()
    print(f"data-flush: {'encrypted, ' if encrypted else ''}folios of order "
          f"{orders[0]}; a block dirtied in a folio whose dirty blocks "
          "were punched was flushed before a background checkpoint (after "
          f"{waited:.1f} s)")


def cached_file(d, name, seed):
    """A 4 MiB file written, synced, dropped from the cache and read back
    (checked against the model), so that readahead caches it in large
    folios; return it and the pages in large folios."""
    f = File(os.path.join(d, name))
    f.write(0, pattern(seed, 4 * MIB))
    os.fsync(f.fd)
    drop_caches()
    f.verify(f"{name}: before the case")                 # cached
    return f, large_folios(f.path, f"{name}: cached file")


def case_dirty_count(d):
    """Small writes into a file cached in large folios count the blocks
    they dirty, not whole folios, and writeback counts them all back."""
    f, lf = cached_file(d, "dirty-count", 110)
    writes = (5, MIB + 4096 * 3, 3 * MIB - 1)   # 4 blocks: the last straddles
    for i, off in enumerate(writes):
        f.write(off, pattern(111 + i, 2))
    n = f2fs_dirty_data()
    if n is None or n > 4:
        raise Mismatch(f"3 small writes dirtying 4 blocks count {n} dirty "
                       "pages, want at most 4")
    f.verify_all("small writes")
    f.close()
    print(f"dirty-count: {n} dirty pages for 4 blocks written "
          f"({lf} pages in large folios)")


def case_dirty_none(d):
    """A large folio whose only dirty block is punched out, or written by
    foreground GC, is clean after it.  f2fs counts the dirty blocks of a
    large folio, and background writeback (WB_SYNC_NONE, here
    sync_file_range() without SYNC_FILE_RANGE_WAIT_BEFORE) skips an inode
    with none counted: a folio left dirty with none stayed dirty memory,
    counted against the dirty limits, until a sync or an fsync of the file,
    and reclaim could not take it."""
    # in segments GC can take: not the log's current one
    f, lf = gc_victim_cached(d, "dirty-none", 2 * MIB, 230)
    for i, how in enumerate(("punched", "moved by foreground GC")):
        off = 64 * KIB * (2 + i) + 8 * KIB
        f.write(off, pattern(231 + i, 4096))
        if i == 0:
            f.fallocate(FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, off, 4096)
        else:
            gc = gc_file(f, 1)
        before = folio_stat(f.path).dirty
        write_back(f, wait_before=False)
        n = folio_stat(f.path).dirty
        if n:
            raise Mismatch(f"the only dirty block of a cached folio {how} "
                           f"({lf} pages in large folios): {before} pages "
                           f"dirty, {n} after background writeback, want 0")
        f.verify(f"dirty-none: a dirty block {how} (cached)")
    f.verify_all("dirty-none")
    f.close()
    print(f"dirty-none: {lf} pages in large folios; a dirty block punched "
          f"out, one moved by GC ({gc}): no folio left dirty")


def written_back_apart(f, what, nblk):
    """Write f back and drop its cache (write_back_and_drop()), check what
    the disk gives back, and that each of its nblk blocks is at a disk
    address of its own; return {file block: disk block}."""
    write_back_and_drop(f, what)
    f.verify(f"{what}: written back, read from disk")
    phys = phys_blocks(f.path)
    if len(phys) != nblk or len(set(phys.values())) != nblk:
        raise Mismatch(f"{what}: {len(phys)} blocks mapped to "
                       f"{len(set(phys.values()))} disk blocks, want "
                       f"{nblk} and {nblk}")
    return phys


def case_dnode_span(d):
    """Writeback of large folios whose blocks f2fs maps through more than
    one node: the inode's own addresses end near block 900 and each direct
    node maps 1018 blocks, so folios of any size from 16 KiB up cross a
    node in a 12 MiB file.  All blocks dirty, then every other block, then
    runs of three in seven; each time written back (sync_file_range),
    dropped, read back from the disk, and every block at its own disk
    address."""
    size = 12 * MIB
    nblk = size // 4096
    f = File(os.path.join(d, "dnode-span"))
    for off, bs in ((0, 2 * MIB), (2 * MIB, MIB), (3 * MIB, 64 * KIB)):
        f.write(off, pattern(off, bs))
    f.write(3 * MIB + 64 * KIB, pattern(3, size - 3 * MIB - 64 * KIB))
    for what, dirty in (("all blocks", range(nblk)),
                        ("every other block", range(1, nblk, 2)),
                        ("three in seven", [b for b in range(nblk)
                                            if b % 7 < 3])):
        f.verify(f"{what}: before writeback (cached)")
        lf = large_folios(f.path, f"{what}: cached file")
        for b in dirty:
            if what != "all blocks":
                f.write(b * 4096 + 17, pattern(b * 31 + len(what), 4000))
        written_back_apart(f, what, nblk)
        os.pread(f.fd, size, 0)                 # cached again, large
    f.close()
    print(f"dnode-span: {nblk} blocks in {lf} pages of large folios, "
          "written back three ways")


def case_runs(d):
    """Writeback of the blocks of large folios in runs, one allocation and
    one bio segment per run of dirty blocks, under a bio size cap: f2fs's
    max_io_bytes at 12 KiB and 20 KiB (a run split into pieces of three
    and five blocks, one block short of a whole piece), then unlimited.
    Each time all blocks dirty, then every other block, then runs of five
    in eleven; written back (sync_file_range), dropped, read back from the
    disk, every block at its own disk address.  Where f2fs updates
    written blocks in place (IPU_FORCE, the policy of a small volume, and
    not mode=lfs), the rewrites after the first writeback go in place in
    runs too: then no block may have moved.  Under the mount options that
    place blocks one by one (mode=fragment:block, age_extent_cache) the
    same must hold."""
    in_place = sysfs_int(d, "ipu_policy") & 1 and \
        "mode=lfs" not in mount_options(d)
    size = 6 * MIB
    nblk = size // 4096
    f = File(os.path.join(d, "runs"))
    f.write(0, pattern(41, size))
    n = 0
    before = None
    try:
        for cap in (12 * KIB, 20 * KIB, 0):
            sysfs_int(d, "max_io_bytes", cap)
            for what, dirty in (("all blocks", range(nblk)),
                                ("every other block", range(1, nblk, 2)),
                                ("five in eleven", [b for b in range(nblk)
                                                    if b % 11 < 5])):
                what = f"max_io_bytes {cap}, {what}"
                f.verify(f"{what}: before writeback (cached)")
                large_folios(f.path, f"{what}: cached file")
                n += 1
                for b in dirty:
                    f.write(b * 4096, pattern(b * 7 + n, 4096))
                after = written_back_apart(f, what, nblk)
                if in_place and before:
                    moved = [b for b in range(nblk) if after[b] != before[b]]
                    if moved:
                        raise Mismatch(f"{what}: updated in place, but "
                                       f"{len(moved)} blocks moved, the "
                                       f"first {moved[0]}: "
                                       f"{before[moved[0]]} -> "
                                       f"{after[moved[0]]}")
                before = after
                os.pread(f.fd, size, 0)         # cached again, large
    finally:
        sysfs_int(d, "max_io_bytes", 0)
    f.close()
    print(f"runs: {nblk} blocks written back {n} ways, under bio size caps "
          f"of 12 KiB, 20 KiB and none, "
          f"{'in place' if in_place else 'out of place'}")


def read_under_caps(d, f, what):
    """Read file f back from the disk through readahead under bio size
    caps (max_io_bytes) of 12 KiB and 20 KiB (three and five blocks):
    every read bio the cap at most, and at least one that long, the data
    right.  A report of the bios and large folios of each cap."""
    dev = mount_source(d)
    report = []
    try:
        for cap in (12 * KIB, 20 * KIB):
            sysfs_int(d, "max_io_bytes", cap)
            drop_caches()
            under = f"{what}: read under a cap of {cap // KIB} KiB"
            _, bios = queued_bios(dev, lambda: f.verify(under), op="R")
            lf = large_folios(f.path, under)
            longest = max((n for _, n in bios), default=0)
            if longest != cap // 4096:
                raise Mismatch(f"{under}: the longest of {len(bios)} read "
                               f"bios is {longest * 4} KiB")
            report.append(f"{cap // KIB} KiB: {len(bios)} bios, "
                          f"{lf} pages in large folios")
    finally:
        sysfs_int(d, "max_io_bytes", 0)
    return "; ".join(report)


def case_read_cap(d):
    """Reads keep f2fs's cap on the size of a bio (max_io_bytes), as
    7.3's reads, block by block, did: a large folio's run of blocks goes
    into a read bio as one range, so it must be cut at the cap, and join
    a bio only if the bio then stays within it.  A file written in one
    piece, read back under caps (read_under_caps())."""
    f = File(os.path.join(d, "read-cap"))
    size = 4 * MIB
    f.write(0, pattern(47, size))
    os.fsync(f.fd)
    report = read_under_caps(d, f, "read-cap")
    f.close()
    print(f"read-cap: {size // MIB} MiB, read bios within the cap: {report}")


def case_verity_read_cap(d):
    """read-cap on an fs-verity file: its data blocks are read through the
    same runs (and verified per block at the bio's end), its Merkle tree
    through order-0 folios past EOF, block by block as in 7.3; every read
    bio keeps to the cap."""
    f = File(os.path.join(d, "verity-read-cap"))
    size = 4 * MIB
    f.write(0, pattern(48, size))
    f.close()
    enable_verity(f.path)
    f.fd = os.open(f.path, os.O_RDONLY)
    report = read_under_caps(d, f, "verity-read-cap")
    f.close()
    print(f"verity-read-cap: {size // MIB} MiB verified, read bios within "
          f"the cap: {report}")


def case_cp_disable(d):
    """Writeback of large folios with checkpoint disabled (checkpoint=
    disable, with which Android mounts /data through an update until it is
    verified): a block that holds checkpointed data must never be updated
    in place, whatever the IPU policy, so that the filesystem can still go
    back to its checkpoint; a block written since may be.  A 4 MiB file is
    written and checkpointed; with checkpoint disabled, every other 64 KiB
    of it is rewritten and written back: each of those blocks must move.
    Then all of it is rewritten, so that the folios hold blocks of both
    kinds side by side: the blocks still holding checkpointed data must
    move, and, where f2fs updates in place (not mode=lfs), the blocks
    written since checkpoint was disabled must stay.  Read back from the
    disk each time; checkpoint is enabled again before the fsck."""
    mnt = mount_entry(d)[1]
    in_place = "mode=lfs" not in mount_options(d)
    size = 4 * MIB
    nblk = size // 4096
    f = File(os.path.join(d, "cp-disable"))
    f.write(0, pattern(60, size))
    os.fsync(f.fd)
    os.sync()                           # a checkpoint
    before = phys_blocks(f.path)

    def moved_all(blocks, now):
        """Each block that held checkpointed data (before) has moved."""
        stayed = [b for b in blocks if now[b] == before[b]]
        if stayed:
            raise Mismatch(f"cp-disable: {len(stayed)} checkpointed blocks "
                           f"updated in place, the first {stayed[0]} at "
                           f"{before[stayed[0]]}")
    run(["mount", "-o", "remount,checkpoint=disable", mnt])
    try:
        os.pread(f.fd, size, 0)         # cached, large
        large_folios(f.path, "cp-disable: cached file")
        for off in range(64 * KIB, size, 128 * KIB):
            f.write(off, pattern(61 + off, 64 * KIB))
        half = [b for b in range(nblk) if b // 16 % 2]
        mid = written_back_apart(f, "cp-disable: every other 64 KiB "
                                 "rewritten", nblk)
        moved_all(half, mid)
        os.pread(f.fd, size, 0)
        lf = large_folios(f.path, "cp-disable: cached again")
        f.write(0, pattern(62, size))
        after = written_back_apart(f, "cp-disable: all rewritten", nblk)
        moved_all([b for b in range(nblk) if b // 16 % 2 == 0], after)
        moved = [b for b in half if after[b] != mid[b]]
        if in_place and moved:
            raise Mismatch(f"cp-disable: {len(moved)} blocks written since "
                           f"checkpoint was disabled moved, the first "
                           f"{moved[0]}: {mid[moved[0]]} -> "
                           f"{after[moved[0]]}")
    finally:
        run(["mount", "-o", "remount,checkpoint=enable", mnt])
    f.verify_all("cp-disable: checkpoint enabled again")
    f.close()
    print(f"cp-disable: {nblk} blocks, {lf} pages in large folios: "
          f"checkpointed blocks moved, the others "
          f"{'stayed' if in_place else 'moved too (mode=lfs)'}")


def case_new_runs(d):
    """Writeback of the blocks of new files' large folios, which have no
    address yet (NEW_ADDR) and go out of place in runs taken at once:
    every block of a 6 MiB file dirty; the same with six blocks in eleven
    punched out while dirty (holes end a run); and a file whose first
    128 KiB of each 256 KiB were written back before all of it is
    written again, so that its folios hold written blocks before new
    ones.  Each time written back (sync_file_range), dropped, read back
    from the disk: every block with data at a disk address of its own,
    the holes at none."""
    size = 6 * MIB
    nblk = size // 4096
    for n, what in enumerate(("all new", "punched", "after written")):
        f = File(os.path.join(d, "new-runs-" + what.replace(" ", "-")))
        if what == "after written":
            for b in range(0, nblk, 64):
                f.write(b * 4096, pattern(b, 32 * 4096))
            f.truncate(size)
            write_back_and_drop(f, f"{what}: first halves")
            os.pread(f.fd, size, 0)             # cached, large
        f.write(0, pattern(70 + n, size))
        holes = set()
        if what == "punched":
            for b in range(5, nblk, 11):
                f.fallocate(FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, b * 4096,
                            min(6, nblk - b) * 4096)
                holes.update(range(b, min(b + 6, nblk)))
        f.verify(f"{what}: before writeback (cached)")
        lf = large_folios(f.path, f"{what}: before writeback")
        write_back_and_drop(f, what)
        f.verify(f"{what}: written back, read from disk")
        phys = phys_blocks(f.path)
        want = set(range(nblk)) - holes
        if set(phys) != want or len(set(phys.values())) != len(want):
            odd = sorted(set(phys) ^ want)
            raise Mismatch(f"{what}: {len(phys)} blocks mapped to "
                           f"{len(set(phys.values()))} disk blocks, want "
                           f"{len(want)} and {len(want)}"
                           + (f", first odd block {odd[0]}" if odd else ""))
        f.close()
    print(f"new-runs: {nblk} blocks written back three ways, {lf} pages "
          "of the last in large folios")


def case_collapse_race(d):
    """A reader copies from large folios straddling the offset of collapse
    and insert range while they run: it must see the data before or after
    the call, never zeroes, and the file must match the model."""
    f, lf = cached_file(d, "collapse-race", 120)
    x = MIB + 12 * KIB              # inside any folio larger than 4 KiB
    lo, span = x - 64 * KIB, 256 * KIB
    stop = os.path.join(d, "collapse-race.stop")
    pid = os.fork()
    if pid == 0:                    # the reader
        code = 0
        fd = os.open(f.path, os.O_RDONLY)
        while not os.path.exists(stop):
            buf = os.pread(fd, span, lo)
            z = buf.find(0)
            if z >= 0:
                print(f"collapse-race: reader got zeroes at {lo + z} "
                      f"(block {(lo + z) // 4096}, +{(lo + z) % 4096})")
                code = 1
                break
        os._exit(code)
    try:
        for i in range(24):
            if i % 2:
                # Insert a hole well past the reader, then fill it back.
                at = 2 * MIB + 8 * KIB
                f.fallocate(FALLOC_INSERT_RANGE, at, 4096)
                f.write(at, pattern(130 + i, 4096))
            else:
                f.fallocate(FALLOC_COLLAPSE_RANGE, x, 4096)
            # Bring large folios back over x for the next call.
            os.pread(f.fd, MIB, x - MIB // 2)
            f.verify(f"collapse/insert round {i}")
    finally:
        open(stop, "w").close()
        _, status = os.waitpid(pid, 0)
        os.unlink(stop)
    if status:
        raise Mismatch("collapse-race: the reader saw zeroes (above)")
    f.verify_all("collapse and insert range under a reader")
    f.close()
    print(f"collapse-race: 24 calls under a reader ({lf} pages in large "
          "folios at start)")


FAULT_BLOCK = 1 << 7                # a block reservation fails (ENOSPC)
FAULT_READ_IO = 1 << 11             # f2fs's fault type for failed reads
FAULT_WRITE_IO = 1 << 14            # any write bio ends in EIO, node ones too
FAULT_INCONSISTENT_FOOTER = 1 << 21 # a node block's footer check fails
FAULT_LOCK_OP = 1 << 17             # f2fs_trylock_op() fails
FAULT_ATOMIC_TIMEOUT = 1 << 22      # a 1 s wait in the atomic commit


def f2fs_inject(d, rate, kind):
    """Set f2fs's fault injection (sysfs inject_rate and inject_type)."""
    dev = os.path.basename(mount_source(d))
    for name, val in (("inject_type", kind), ("inject_rate", rate)):
        with open(f"/sys/fs/f2fs/{dev}/{name}", "w") as f:
            f.write(f"{val}\n")


@contextlib.contextmanager
def injecting(d, kind, rate=1):
    """f2fs_inject() of kind at every rate-th chance (every one by
    default) for the with block, off after it."""
    f2fs_inject(d, rate, kind)
    try:
        yield
    finally:
        f2fs_inject(d, 0, 0)


def case_fsync_eagain(d):
    """fsync writes every block dirtied before it, also while a background
    writeback of the same folios gives up on them.  The op lock is only
    tried under a folio's lock (a checkpoint may hold it, and wait for a
    task that waits for the folio): writeback leaves a block that must go
    out of place dirty when the lock is taken (-EAGAIN), and fsync tries
    again until it gets it.  A writeback that had put the folio under
    writeback before giving up hid it from an fsync starting then: fsync
    tags only folios marked dirty for writeback, and waits on the ones
    under writeback, which then end with their blocks dirty again.  Here
    every try of the op lock fails (FAULT_LOCK_OP) while a process starts
    writeback (sync_file_range(SYNC_FILE_RANGE_WRITE)) in a loop over a
    sparse file cached in large folios, a new block in every 64 KiB dirty
    (fewer than f2fs's min_seq_blocks, so fsync does not wait for the
    other writer's pass); fsync runs beside it, and can write nothing
    before the injection stops, 0.3 s later.  fsync must not return before
    that, and the file must have no dirty block after it; 20 rounds (5 in
    the short form: v55's bug left blocks dirty in the first)."""
    fsync_beside_eagain(d, "fsync-eagain", 64 * KIB, ())


def case_fsync_eagain_ipu(d):
    """fsync-eagain where the background writeback gets part way through a
    folio: in every 128 KiB a block written before (and checkpointed) is
    dirty again, and the new block after it.  Where f2fs updates written
    blocks in place (IPU_FORCE, set here; not under mode=lfs), the first
    goes in place without the op lock, and puts the folio under
    writeback; the second must go out of place, under the lock, which
    can't be taken.  That writeback must not leave the folio under
    writeback untagged for the fsync starting meanwhile with its new
    block dirty.  fsync starts at one of five points of the first pass
    over the file in each round (each once in the short form's 5 rounds;
    v56's bug left a block dirty in the first).  f2fs's count of
    in-place updates must grow by a block in every 128 KiB each round:
    the written blocks did go in place."""
    with sysfs_set(d, "ipu_policy", 1):         # F2FS_IPU_FORCE
        fsync_beside_eagain(d, "fsync-eagain-ipu", 128 * KIB, (8 * KIB,))


def fsync_beside_eagain(d, name, step, written):
    """The rounds of case_fsync_eagain(): a 16 MiB sparse file, cached in
    large folios, with the block at 12 KiB in every step bytes new and
    dirty, and the blocks at the offsets in written (in the same step)
    written, checkpointed and dirty again; fsync beside a writeback that
    can't take the op lock."""
    size = 16 * MIB
    lib = libc()
    in_place = size // step * len(written)
    want = size // step + in_place
    rounds = 20 if FULL_FORM else 5
    for rnd in range(rounds):
        f = File(os.path.join(d, f"{name}-{rnd}"))
        f.truncate(size)
        for off in range(0, size, step):
            for w in written:
                f.write(off + w, pattern(rnd * 300 + off // KIB + w, 4096))
        if written:
            os.fsync(f.fd)
            os.sync()                           # a checkpoint: valid blocks
            os.posix_fadvise(f.fd, 0, 0, os.POSIX_FADV_DONTNEED)
        f.verify(f"{name}: round {rnd}: the sparse file cached")
        lf = large_folios(f.path, f"{name}: round {rnd}: cached")
        os.sync()
        for off in range(0, size, step):
            for w in written + (12 * KIB,):
                f.write(off + w, pattern(rnd * 700 + off // KIB + w, 4096))
        dirty = f2fs_dirty_data()
        if dirty != want:
            raise Mismatch(f"{name}: round {rnd}: {dirty} blocks dirty, "
                           f"want {want}")
        ipu = f2fs_status(d, "IPU:")[0]
        stop, done, failed = threading.Event(), [], []

        def writeback():
            while not stop.is_set():
                lib.sync_file_range(f.fd, 0, 0, 2)  # SYNC_FILE_RANGE_WRITE

        def fsync():
            try:
                os.fsync(f.fd)
            except OSError as e:
                failed.append(e)
            done.append(time.monotonic())

        wb, fs = threading.Thread(target=writeback), \
            threading.Thread(target=fsync)
        with injecting(d, FAULT_LOCK_OP):
            wb.start()
            # the first pass over the file is the one that gets part way
            time.sleep(0.05 if not written else rnd % 5 * 0.003)
            fs.start()
            time.sleep(0.3)
            stop.set()
            wb.join()
            off_at = time.monotonic()           # the injection still on
        fs.join(60)
        if fs.is_alive():
            raise Mismatch(f"{name}: round {rnd}: fsync still blocked 60 s "
                           "after the injection stopped")
        if failed:
            raise Mismatch(f"{name}: round {rnd}: fsync failed: "
                           f"{failed[0]}")
        left = f2fs_dirty_data()
        if done[0] < off_at:
            raise Mismatch(f"{name}: round {rnd}: fsync returned while "
                           "every try of the op lock failed, so before "
                           f"writing a new block; {left} of {dirty} blocks "
                           f"dirty after it ({lf} pages in large folios)")
        if left:
            raise Mismatch(f"{name}: round {rnd}: fsync left {left} of the "
                           f"{dirty} blocks written before it dirty ({lf} "
                           "pages in large folios)")
        ipu = f2fs_status(d, "IPU:")[0] - ipu
        if ipu < in_place:
            raise Mismatch(f"{name}: round {rnd}: {ipu} in-place updates, "
                           f"want {in_place} or more: the written blocks "
                           "went out of place")
        f.verify(f"{name}: round {rnd}: after fsync (cached)")
        f.close()
        os.unlink(f.path)
    drop_caches()
    print(f"{name}: {rounds} rounds of fsync beside a writeback failing "
          f"to take the op lock: each fsync waited for the lock, no block "
          f"left dirty ({lf} pages in large folios in the last)")


def hkdf_expand(prk, context, info, n):
    """fscrypt's HKDF-SHA512 expand: info prefixed with "fscrypt\\0" and a
    context byte (fs/crypto/hkdf.c)."""
    import hashlib
    import hmac
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + b"fscrypt\0" + bytes([context]) + info +
                     bytes([i]), hashlib.sha512).digest()
        out += t
        i += 1
    return out[:n]


def siphash24(key, msg):
    """SipHash-2-4 of msg with a 16-byte key (the kernel's siphash)."""
    mask = (1 << 64) - 1

    def rotl(x, b):
        return ((x << b) | (x >> (64 - b))) & mask

    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]

    def rounds(n):
        for _ in range(n):
            v[0] = (v[0] + v[1]) & mask
            v[1] = rotl(v[1], 13) ^ v[0]
            v[0] = rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & mask
            v[3] = rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & mask
            v[3] = rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & mask
            v[1] = rotl(v[1], 17) ^ v[2]
            v[2] = rotl(v[2], 32)

    tail = len(msg) % 8
    for i in range(0, len(msg) - tail, 8):
        m = struct.unpack_from("<Q", msg, i)[0]
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    b = (len(msg) & 0xff) << 56
    for i in range(tail):
        b |= msg[len(msg) - tail + i] << (8 * i)
    v[3] ^= b
    rounds(2)
    v[0] ^= b
    v[2] ^= 0xff
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def case_crypt_wrap(d):
    """An encrypted file with an IV_INO_LBLK_32 policy, whose DUN (the
    inode's hashed number plus the block index, modulo 2^32) wraps around
    to 0 inside a 64 KiB extent: read back in large folios, the
    blocks after the wrap must decrypt right, i.e. the read must not put
    the whole extent into one bio.  The test derives the keys from the
    master key as fscrypt does (EDGES_KEY: the raw key file), to find an
    inode whose wrap point lies within the largest file f2fs allows, and
    checks the derivation against the key identifier and the ciphertext
    on disk, so that it cannot pass without crossing the wrap."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, \
        modes
    import hashlib
    import hmac
    master = open(os.environ["EDGES_KEY"], "rb").read()
    prk = hmac.new(bytes(64), master, hashlib.sha512).digest()
    pol = run(["xfs_io", "-c", "get_encpolicy", d]).stdout
    m = re.search(r"identifier: ([0-9a-f]{32})", pol)
    if not m or hkdf_expand(prk, 1, b"", 16).hex() != m.group(1):
        raise Mismatch(f"key identifier derivation does not match: {pol}")
    if "0x10" not in pol:
        raise Mismatch(f"{d} has no IV_INO_LBLK_32 policy: {pol}")
    hash_key = hkdf_expand(prk, 7, b"", 16)
    dev = mount_source(d)
    uuid = bytes.fromhex(run(["blkid", "-o", "value", "-s", "UUID",
                              dev]).stdout.strip().replace("-", ""))
    mode_key = hkdf_expand(prk, 6, bytes([1]) + uuid, 64)  # AES-256-XTS

    # A file whose wrap point W = 2^32 - hashed_ino is below f2fs's largest
    # file (about 2^30 blocks) and odd, so that any large folio holding
    # block W holds block W - 1 too.
    for i in range(200):
        path = os.path.join(d, f"wrap-{i}")
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
        h = siphash24(hash_key, struct.pack("<Q", os.stat(path).st_ino))
        w = (1 << 32) - (h & 0xffffffff)
        if 16 <= w < 10**9 and w % 2:
            break
        os.unlink(path)
    else:
        raise Mismatch("no inode with its DUN wrap point inside a file "
                       "in 200 tries")
    # the file is sparse up to W, so no File model of it
    fd = os.open(path, os.O_RDWR)
    start = w - w % 16
    data = pattern(140, 64 * KIB)
    os.pwrite(fd, data, start * 4096)
    os.fsync(fd)

    # the ciphertext on disk says the derivation is right
    phys = phys_blocks(path)
    with open(dev, "rb") as dv:
        for blk in (w - 1, w):
            dv.seek(phys[blk] * 4096)
            raw = dv.read(4096)
            tweak = struct.pack("<QQ", (h + blk) & 0xffffffff, 0)
            dec = Cipher(algorithms.AES(mode_key), modes.XTS(tweak)) \
                .decryptor().update(raw)
            i = (blk - start) * 4096
            if dec != data[i:i + 4096]:
                raise Mismatch(f"block {blk} on disk does not decrypt with "
                               "the derived key and DUN: cannot check the "
                               "wrap")
    # Read sequentially up to and across the wrap, from 4 MiB of holes
    # before it on, so that readahead builds large folios by then (a
    # lone read far into a file is read in order-0 folios).
    drop_caches()
    for off in range(max(0, start - 1024) * 4096, start * 4096, 64 * KIB):
        os.pread(fd, 64 * KIB, off)
    for what in ("from disk", "cached"):
        got = os.pread(fd, 64 * KIB, start * 4096)
        if got != data:
            bad = next(i for i in range(16)
                       if got[i * 4096:(i + 1) * 4096] !=
                       data[i * 4096:(i + 1) * 4096])
            raise Mismatch(f"{what}: block {start + bad} read wrong; the "
                           f"DUN wraps at block {w} (blocks {start}-"
                           f"{start + 15} read)")
    order = folio_order_at(fd, w)
    os.close(fd)
    want = os.environ.get("EDGES_FOLIOS")
    if (want == "large") != (order > 0):
        raise Mismatch(f"block {w} is in an order-{order} folio, want "
                       f"{want or 'any'} folios")
    print(f"crypt-wrap: DUN wraps at block {w} of inode "
          f"{os.stat(path).st_ino}, inside an order-{order} folio: read "
          "right")


KPF_DIRTY = 1 << 4


def page_pfn(fd, blk):
    """The PFN of the page cache page holding block blk of the file (cached
    already), from /proc/self/pagemap."""
    try:
        addr = map_page(fd, blk * 4096, mmap.PROT_READ)
    except OSError as e:
        raise Mismatch(f"block {blk}: {e.strerror}") from e
    try:
        ctypes.string_at(addr, 1)                       # map the page
        with open("/proc/self/pagemap", "rb") as pm:
            pm.seek(addr // 4096 * 8)
            ent = struct.unpack("<Q", pm.read(8))[0]
    finally:
        libc().munmap(addr, 4096)
    pfn = ent & ((1 << 55) - 1)
    if not ent >> 63 or not pfn:
        raise Mismatch(f"block {blk}: no PFN in pagemap")
    return pfn


def page_flags_at(fd, blk):
    """/proc/kpageflags of the page cache page holding block blk of the
    file (cached already)."""
    with open("/proc/kpageflags", "rb") as kf:
        kf.seek(page_pfn(fd, blk) * 8)
        return struct.unpack("<Q", kf.read(8))[0]


def folio_order_at(fd, blk):
    """The order of the page cache folio holding block blk of the file
    (cached already): the PFN of its page from /proc/self/pagemap, the
    compound head and tails around it from /proc/kpageflags."""
    pfn = page_pfn(fd, blk)
    head, tail = 1 << 15, 1 << 16
    with open("/proc/kpageflags", "rb") as kf:
        def flags(p):
            kf.seek(p * 8)
            return struct.unpack("<Q", kf.read(8))[0]
        first = pfn
        while flags(first) & tail:
            first -= 1
        if not flags(first) & head:
            return 0
        n = 1
        while flags(first + n) & tail:
            n += 1
    return (n - 1).bit_length()


def case_crypt_gc(d):
    """GC of encrypted files whose large folios are cached, some blocks
    dirty.  f2fs moves the blocks of encrypted files through META_MAPPING
    (the ciphertext copied as it is), at once for background GC too: as in
    verity-gc, one file is collected in the background (sync=0), another
    in the foreground (sync=1).  The data must read back right, from the
    cache and from disk."""
    report = []
    for sync in (0, 1):
        f = File(os.path.join(d, f"crypt-gc-{sync}"))
        interleave(f, File(os.path.join(d, f"crypt-gc-filler-{sync}")),
                   4 * MIB, 150 + sync)
        drop_caches()
        os.pread(f.fd, 4 * MIB, 0)                          # cached
        f.write(MIB + 5, pattern(152 + sync, 100 * KIB))    # some dirty
        lf = large_folios(f.path, "encrypted file")
        report.append(f"{gc_file(f, sync)} with {lf} pages in large folios")
        f.verify(f"encrypted file after GC sync={sync} (cached)")
        f.verify_all(f"encrypted file after GC sync={sync}")
        f.close()
    print(f"crypt-gc: {'; '.join(report)}")


def case_partial_read(d):
    """A write that partially overwrites a block of an uncached large folio
    reads that block through f2fs's read path: with read errors injected
    there, the write fails with EIO and changes nothing."""
    f = File(os.path.join(d, "partial-read"))
    f.write(0, pattern(140, 4 * MIB))
    os.fsync(f.fd)
    # Drop the file's data from the cache but keep its node pages, whose
    # reads the injection would fail as well.
    os.posix_fadvise(f.fd, 0, 0, os.POSIX_FADV_DONTNEED)
    off = MIB + 100                 # head block partial, tail block-aligned
    data = pattern(141, MIB // 2 - 100)
    with injecting(d, FAULT_READ_IO):
        want_eio(lambda: os.pwrite(f.fd, data, off),
                 "write over an unread partial block with read errors "
                 "injected")
    f.verify_all("failed partial-block write")
    # The same write without the injection; its folio must be large.
    os.posix_fadvise(f.fd, 0, 0, os.POSIX_FADV_DONTNEED)
    f.write(off, data)
    lf = large_folios(f.path, "partially written folio")
    f.verify_all("partial-block write")
    f.close()
    print(f"partial-read: EIO with read errors injected; {lf} pages in "
          "large folios after the write")


# The kinds of file that stay on order-0 folios (f2fs_may_use_large_folio():
# compressed, pinned, swap and quota files), how a file becomes one with
# its cache switched over, and inline data, which lives in an order-0 folio
# at index 0 until it is converted.

FS_IOC_GETFLAGS = 0x80086601
FS_IOC_SETFLAGS = 0x40086602
FS_COMPR_FL = 0x00000004
FS_IOC_FSGETXATTR = 0x801c581f
FS_IOC_FSSETXATTR = 0x401c5820
FS_XFLAG_PROJINHERIT = 0x00000200
F2FS_IOC_SET_PIN_FILE = 0x4004f50d
F2FS_IOC_GET_COMPRESS_BLOCKS = 0x8008f511


def dio_verify(f, what):
    """Read all of f with O_DIRECT, which maps its blocks through the read
    extent cache (f2fs_map_blocks()), and compare with the model."""
    dfd = os.open(f.path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, MIB)                                # page aligned
    try:
        for off in range(0, len(f.model), MIB):
            want = f.model[off:off + MIB]
            n = os.preadv(dfd, [buf], off)
            if n != len(want):
                raise Mismatch(f"{what}: O_DIRECT read of {len(want)} at "
                               f"{off} returned {n}")
            if buf[:n] != want:
                raise Mismatch(f"{what}: O_DIRECT read: "
                               f"{first_bad(buf[:n], want, off)}")
    finally:
        buf.close()
        os.close(dfd)


def case_extent(d):
    """The read extent cache after writeback of large folios: f2fs writes a
    folio's dirty blocks out of place in runs of consecutive addresses and
    puts each run into the cache at once.  A new file written back, then
    blocks scattered over its cached large folios rewritten and written
    back (out of place in lfs mode; in place otherwise on the lab's small
    volume, at the address the extent cache gives): direct reads, which
    map blocks through the cache, read what was written, and so do they
    once the inode is evicted and its cache starts again from the largest
    extent saved in the inode."""
    size = 8 * MIB
    nblk = size // 4096
    f = File(os.path.join(d, "extent"))
    f.write(0, pattern(330, size))
    lf = large_folios(f.path, "extent file written")
    os.fsync(f.fd)
    dio_verify(f, "new file written back")
    rng = random.Random(331)
    for i in range(40):
        blk = rng.randrange(nblk)
        n = min(rng.choice((1, 1, 2, 5, 17)), nblk - blk)
        f.write(blk * 4096, pattern(332 + i, n * 4096))
    large_folios(f.path, "extent file rewritten")
    os.fsync(f.fd)
    dio_verify(f, "scattered blocks rewritten and written back")
    reopen(f)
    dio_verify(f, "inode loaded again")
    f.close()
    print(f"extent: direct reads right after writing back {lf} pages in "
          "large folios, after rewriting scattered blocks, and with the "
          "inode loaded again")


FolioStat = collections.namedtuple("FolioStat",
                                   "resident large dirty orders")


def folio_stat(path, rng=()):
    """folio-stat's counts for path's page cache, over the range (offset,
    length) if given: pages cached (resident), of those in large folios
    (large) and in dirty folios (dirty), and the number of folios of each
    order ({order: folios})."""
    out = run(["folio-stat", path] + [str(x) for x in rng]).stdout
    m = re.search(r"resident (\d+) pages, in large folios (\d+) pages", out)
    dirty = re.search(r"^dirty (\d+) pages", out, re.M)
    if not m or not dirty:
        raise Mismatch(f"folio-stat {path}: no counts in {out!r}")
    return FolioStat(int(m.group(1)), int(m.group(2)), int(dirty.group(1)),
                     {int(o): int(n) for o, n in
                      re.findall(r"order (\d+) folios (\d+)", out)})


def order0_folios(path, what):
    """path must be cached (else the check proves nothing), and only in
    order-0 folios, whatever the variant under test."""
    counts = folio_stat(path)
    resident, lf = counts.resident, counts.large
    if not resident:
        raise Mismatch(f"{what}: nothing cached to check the folios of")
    if lf:
        raise Mismatch(f"{what}: {lf} of {resident} cached pages in large "
                       "folios, want order-0 folios only")
    return resident


def mount_options(d):
    """The mount options of the filesystem d is on."""
    return mount_entry(d)[3].split(",")


def get_flags(fd):
    return struct.unpack("<i", fcntl.ioctl(fd, FS_IOC_GETFLAGS,
                                           struct.pack("<i", 0)))[0]


def set_flags(fd, flags):
    fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("<i", flags))


def set_pin(fd, on):
    fcntl.ioctl(fd, F2FS_IOC_SET_PIN_FILE, struct.pack("<I", on))


def reopen(f):
    """Close f, evict its inode (a cache drop with no reference left) and
    open it again, so f2fs sets its folio orders up from the disk inode;
    the data is read back into the cache and checked."""
    os.close(f.fd)
    drop_caches()
    f.fd = os.open(f.path, os.O_RDWR)
    f.verify(f"{os.path.basename(f.path)} loaded again")


def case_pin(d):
    """A pinned file (F2FS_IOC_SET_PIN_FILE: f2fs writes it in place, at
    block addresses handed out, as Android does for files it maps by
    address) uses order-0 folios: pinning an empty file switches its
    mapping, and a pinned file loaded from the disk gets them too; unpinned
    and loaded again, it uses large folios.  mode=lfs refuses to pin, and
    the file keeps its large folios."""
    lfs = "mode=lfs" in mount_options(d)
    ctl = File(os.path.join(d, "pin-control"))
    f = File(os.path.join(d, "pin"))
    try:
        set_pin(f.fd, 1)
    except OSError as e:
        if not (lfs and e.errno == errno.EINVAL):
            raise Mismatch(f"F2FS_IOC_SET_PIN_FILE: {e.strerror}")
    else:
        if lfs:
            raise Mismatch("F2FS_IOC_SET_PIN_FILE succeeded in lfs mode")
    for g in (f, ctl):
        # A pinned file gets its blocks, in whole sections, by fallocate.
        # f2fs maps them without zeroing them (F2FS_GET_BLOCK_PRE_DIO, the
        # same without large folios), so they read as whatever the disk
        # held; fill the file, as its user would, before the partial writes.
        os.posix_fallocate(g.fd, 0, 4 * MIB)
        g.write(0, pattern(299, 4 * MIB))
        for i, (off, ln) in enumerate(((0, 2 * MIB), (2 * MIB + 5, MIB),
                                       (3 * MIB - 4096, 64 * KIB + 3))):
            g.write(off, pattern(300 + i, ln))
        g.verify(f"{os.path.basename(g.path)} (cached)")
    lf = large_folios(ctl.path, "an unpinned file written the same way")
    if lfs:
        large_folios(f.path, "a file lfs mode refused to pin")
        ctl.verify_all("pin-control")
        f.verify_all("a file lfs mode refused to pin")
        print(f"pin: refused in lfs mode, the file kept its folios "
              f"({lf} pages in large folios)")
        ctl.close()
        f.close()
        return
    n = order0_folios(f.path, "pinned file written")
    f.verify_all("pinned file")
    reopen(f)
    order0_folios(f.path, "pinned file loaded again")
    set_pin(f.fd, 0)
    f.write(MIB, pattern(310, MIB))
    f.verify_all("unpinned file")
    reopen(f)
    large_folios(f.path, "unpinned file loaded again")
    ctl.verify_all("pin-control")
    print(f"pin: {n} pages of the pinned file in order-0 folios, the same "
          f"writes to a plain file {lf} in large folios; unpinned, large "
          "again")
    ctl.close()
    f.close()


def swap_header(npages):
    """Page 0 of a swap area (what mkswap writes): version 1, the last
    page, no bad pages, the SWAPSPACE2 magic at the end of the page."""
    hdr = bytearray(4096)
    hdr[1024:1036] = struct.pack("<III", 1, npages - 1, 0)
    hdr[4086:4096] = b"SWAPSPACE2"
    return bytes(hdr)


def case_swap(d):
    """swapon of a file cached in large folios, some of them dirty: f2fs
    writes the file back, drops its cache and switches it to order-0
    folios (swap reads and writes it by block address), migrates its blocks
    to whole sections and pins it.  Pages swap writes then land in the
    file's blocks as f2fs maps them (swap_out()).  After swapoff the data
    is as written, swap's pages included, read through order-0 folios;
    swapoff unpins the file, so once loaded again it has large folios.
    mode=lfs refuses swap files and leaves the file as it was."""
    lfs = "mode=lfs" in mount_options(d)
    size = 8 * MIB
    f = File(os.path.join(d, "swap"))
    f.write(0, pattern(320, size))
    os.fsync(f.fd)
    drop_caches()
    f.verify("swap file (cached)")
    f.write(3 * MIB + 7, pattern(321, MIB))                 # dirty
    f.write(0, swap_header(size // 4096))
    os.fchmod(f.fd, 0o600)
    lf = large_folios(f.path, "swap file before swapon")
    if lfs:
        if not libc().swapon(f.path.encode(), 0):
            libc().swapoff(f.path.encode())
            raise Mismatch("swapon succeeded in lfs mode")
        e = ctypes.get_errno()
        if e != errno.EINVAL:
            raise Mismatch(f"swapon: {os.strerror(e)}")
        large_folios(f.path, "a file lfs mode refused to swap on")
        f.verify_all("a file lfs mode refused to swap on")
        print(f"swap: refused in lfs mode, the file unchanged ({lf} pages "
              "in large folios)")
        f.close()
        return
    with swapped_on(f, "swap") as failed:
        more, out = swap_out(f, "swap", 322)
        failed += more
    n = order0_folios(f.path, "swap file after swapoff")
    # swapoff unpins it: loaded again, the file has large folios.
    reopen(f)
    lf2 = large_folios(f.path, "former swap file loaded again")
    f.close()
    print(f"swap: {lf} pages in large folios before swapon, {out} pages "
          f"swapped out in the file's blocks, {n} pages in order-0 folios "
          f"after swapoff, {lf2} in large folios once loaded again; data "
          "kept")


def swap_file(d, name, seed, size=8 * MIB):
    """A new file of size (8 MiB by default) ready for swapon, written
    (pattern seed) and fsync'd: page 0 a swap header, mode 0600."""
    f = File(os.path.join(d, name))
    f.write(0, pattern(seed, size))
    f.write(0, swap_header(size // 4096))
    os.fsync(f.fd)
    os.fchmod(f.fd, 0o600)
    return f


@contextlib.contextmanager
def swapped_on(f, what):
    """f active as swap for the with block, which appends its failures to
    the list it is given; after swapoff, a Mismatch (named what) with
    every failure, or f's data checked."""
    if libc().swapon(f.path.encode(), 0):
        raise Mismatch(f"swapon: {os.strerror(ctypes.get_errno())}")
    failed = []
    try:
        yield failed
    finally:
        if libc().swapoff(f.path.encode()):
            failed.append(f"swapoff: {os.strerror(ctypes.get_errno())}")
    if failed:
        raise Mismatch(f"{what}: " + "; ".join(failed))
    drop_swap_cache(f)
    f.verify_all(f"{what}: file after swapoff")


MADV_PAGEOUT = 21


def drop_swap_cache(f):
    """Drop the clean page cache of f, a swap file after swapoff: swap
    wrote its blocks beneath the cache, so pages cached before swapon
    (with order-0 folios, which swapon keeps) or read by swapon's
    migration of its blocks hold what the blocks held then, as on any
    filesystem.  What swap left is on disk."""
    os.posix_fadvise(f.fd, 0, 0, os.POSIX_FADV_DONTNEED)


def swap_out(f, what, seed):
    """swap_out_pages(), an error in it one more failure, so that the
    caller still turns swap off."""
    try:
        return swap_out_pages(f, what, seed)
    except (OSError, Mismatch) as e:
        return [f"{what}: swapping pages out: {e}"], 0


def swap_out_pages(f, what, seed):
    """Have swap write pages to f, the only active swap area, and check
    that each lands in f's own block at its slot, as f2fs maps the file
    now: anonymous pages, each stamped, as many as nine tenths of f's
    slots, reclaimed with MADV_PAGEOUT; /proc/self/pagemap gives each
    page's swap slot (slot N: f's page N), filefrag the slot's disk
    block, read with O_DIRECT.  The pages read back as stamped once
    touched again, and f.model takes the pages swap wrote, which stay in
    the file's blocks after swapoff (drop_swap_cache()).  The failures,
    and how many pages went out."""
    with open("/proc/swaps") as sw:
        areas = [ln.split()[0] for ln in sw.readlines()[1:]]
    if areas != [os.path.realpath(f.path)]:
        return [f"{what}: swap areas {areas}, want {f.path} alone"], 0
    n = len(f.model) // 4096 * 9 // 10
    want = bytearray(pattern(seed, n * 4096))
    for i in range(n):
        want[i * 4096:i * 4096 + 8] = struct.pack("<Q", i)
    buf = mmap.mmap(-1, n * 4096, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    buf[:] = want
    buf.madvise(MADV_PAGEOUT)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    with open("/proc/self/pagemap", "rb") as pm:
        pm.seek(addr // 4096 * 8)
        ents = struct.unpack(f"<{n}Q", pm.read(n * 8))
    slots = {i: (e >> 5) & ((1 << 50) - 1)
             for i, e in enumerate(ents) if e >> 62 & 1 and not e & 0x1f}
    failed = []
    if len(slots) < n // 2:
        failed.append(f"{what}: MADV_PAGEOUT swapped out {len(slots)} of "
                      f"{n} pages, want at least half")
    phys = phys_blocks(f.path)
    dev = os.open(mount_source(os.path.dirname(f.path)),
                  os.O_RDONLY | os.O_DIRECT)
    blk = mmap.mmap(-1, 4096)
    bad = []
    try:
        for i, slot in sorted(slots.items()):
            page = bytes(want[i * 4096:(i + 1) * 4096])
            if slot not in phys:
                bad.append(f"slot {slot}: no block of the file")
                continue
            os.preadv(dev, [blk], phys[slot] * 4096)
            if blk[:] != page:
                bad.append(f"slot {slot} (file block {slot}, disk block "
                           f"{phys[slot]}) does not hold page {i}")
            f.model[slot * 4096:(slot + 1) * 4096] = page
    finally:
        os.close(dev)
        blk.close()
    if bad:
        failed.append(f"{what}: {len(bad)} of the {len(slots)} pages swap "
                      f"wrote are not in the file's blocks: {bad[0]}")
    if buf[:] != want:
        failed.append(f"{what}: the pages swapped out read back changed")
    buf.close()
    return failed, len(slots)


def moved_blocks(before, path):
    """The file blocks of path no longer at the disk blocks before (from
    phys_blocks()) gave them, sorted."""
    after = phys_blocks(path)
    return sorted(b for b, a in before.items() if after.get(b) != a)


def case_swap_pin(d):
    """An active swap file stays pinned (patch 70): swap reads and writes
    it by the block addresses it mapped at swapon, so a block of it that
    f2fs moved would leave swap writing to a block f2fs has freed, and may
    give to another file.  F2FS_IOC_SET_PIN_FILE(0) of an active swap
    file fails (ETXTBSY), and F2FS_IOC_MOVE_RANGE of 64 KiB of it to
    another file, which refuses a pinned file (EOPNOTSUPP), moves none of
    its blocks, and pages swap writes then land in the file's blocks
    (swap_out()).  After swapoff, which unpins it, the data is as
    written.  (7.3 unpinned it, and the move then took its blocks.)"""
    f = swap_file(d, "swap-pin", 335)
    with swapped_on(f, "swap-pin") as failed:
        before = phys_blocks(f.path)
        with File(os.path.join(d, "swap-pin-dst")) as g:
            for call, what, code in (
                    (lambda: set_pin(f.fd, 0), "F2FS_IOC_SET_PIN_FILE(0)",
                     errno.ETXTBSY),
                    (lambda: move_range(f, g, MIB, 0, 64 * KIB),
                     "F2FS_IOC_MOVE_RANGE of 64 KiB", errno.EOPNOTSUPP)):
                try:
                    want_errno(call, f"{what} of an active swap file", code)
                except Mismatch as e:
                    failed.append(str(e))
        moved = moved_blocks(before, f.path)
        if moved:
            failed.append(f"{len(moved)} of the {len(before)} blocks of the "
                          "active swap file moved")
        more, out = swap_out(f, "swap-pin", 336)
        failed += more
    f.close()
    print(f"swap-pin: an active swap file stayed pinned: "
          f"F2FS_IOC_SET_PIN_FILE(0) and F2FS_IOC_MOVE_RANGE refused, none "
          f"of its {len(before)} blocks moved, the {out} pages swapped out "
          "after them in its blocks; data kept")


def case_swap_gc(d):
    """Foreground GC leaves an active swap file pinned (patch 71).  Of a
    swap file of 8 MiB and 64 KiB, swapon moves the last 16 blocks to a
    section of their own, which another pinned file's fallocate() then
    takes from the pinned log: a section with free blocks, a GC victim.
    With reserved_segments raised past the free segments,
    F2FS_IOC_GARBAGE_COLLECT runs foreground GC until it stops: it must
    give up on the swap file's section (EAGAIN, or success if it freed
    other sections), every block of the file staying where swapon mapped
    it, and pages swap writes then landing in the file's blocks
    (swap_out()).  ENODATA, no victim left, would mean that GC never met
    the section.  (7.3 unpinned the file after gc_pin_file_thresh failures,
    2048, moved its 16 blocks from under swap, and ran out of victims.)"""
    f = swap_file(d, "swap-gc", 337, 8 * MIB + 64 * KIB)
    with swapped_on(f, "swap-gc") as failed:
        with File(os.path.join(d, "swap-gc-pinned")) as g:
            set_pin(g.fd, 1)
            os.posix_fallocate(g.fd, 0, 2 * MIB)
            os.fsync(g.fd)
        os.sync()
        before = phys_blocks(f.path)
        with sysfs_set(d, "reserved_segments", 1 << 16):
            try:
                fcntl.ioctl(f.fd, F2FS_IOC_GARBAGE_COLLECT,
                            struct.pack("<I", 1))
            except OSError as e:
                if e.errno != errno.EAGAIN:
                    failed.append(f"F2FS_IOC_GARBAGE_COLLECT: {e}, want "
                                  "EAGAIN or success, GC giving up on the "
                                  "swap file's section")
        moved = moved_blocks(before, f.path)
        if moved:
            failed.append(f"GC moved {len(moved)} of the {len(before)} "
                          f"blocks of the active swap file, from block "
                          f"{moved[0]}")
        more, out = swap_out(f, "swap-gc", 338)
        failed += more
    f.close()
    os.unlink(f.path)
    os.unlink(os.path.join(d, "swap-gc-pinned"))
    print(f"swap-gc: foreground GC with no other victim left the "
          f"{len(before)} blocks of an active swap file where swapon "
          f"mapped them, the {out} pages swapped out after it in them; "
          "data kept")


def case_atomic_swap(d):
    """swapon of a file in an atomic write must fail (EINVAL): the commit
    would move the staged blocks from the COW inode into the file, under
    the swap extents, which swap goes on writing to.  The refusal leaves
    the transaction and the cache as they were; once committed, the file
    takes swapon, and an atomic write on the swap file must fail to start
    (EINVAL), also after F2FS_IOC_SET_PIN_FILE(0), which unpinned it
    before patch 70 (7.3 refused only a pinned file; patch 68)."""
    f = swap_file(d, "atomic-swap", 330)
    fcntl.ioctl(f.fd, F2FS_IOC_START_ATOMIC_WRITE)
    f.write(2 * MIB, pattern(331, 64 * KIB))
    f.write(5 * MIB + 3, pattern(332, 4 * KIB))
    lf = large_folios(f.path, "file in an atomic write")
    if not libc().swapon(f.path.encode(), 0):
        libc().swapoff(f.path.encode())
        raise Mismatch("swapon of a file in an atomic write succeeded")
    e = ctypes.get_errno()
    if e != errno.EINVAL:
        raise Mismatch(f"swapon of a file in an atomic write: "
                       f"{os.strerror(e)}, want EINVAL")
    large_folios(f.path, "file in an atomic write after a refused swapon")
    f.verify("atomic write after a refused swapon")
    end_atomic(f, "commit", None)
    f.verify_all("atomic write committed after a refused swapon")
    started = False
    try:
        with swapped_on(f, "atomic-swap") as failed:
            try:
                set_pin(f.fd, 0)
            except OSError as err:  # refused since patch 70 (swap-pin)
                if err.errno != errno.ETXTBSY:
                    raise
            try:
                fcntl.ioctl(f.fd, F2FS_IOC_START_ATOMIC_WRITE)
                started = True
                failed.append("an atomic write started on a swap file "
                              "after F2FS_IOC_SET_PIN_FILE(0)")
            except OSError as err:
                if err.errno != errno.EINVAL:
                    raise
            more, out = swap_out(f, "atomic-swap", 333)
            failed += more
    finally:
        if started:
            fcntl.ioctl(f.fd, F2FS_IOC_ABORT_ATOMIC_WRITE)
    f.close()
    print(f"atomic-swap: swapon refused during the atomic write ({lf} pages "
          "in large folios), taken after its commit; no atomic write on "
          f"the swap file, also after an unpin; {out} pages swapped out in "
          "its blocks")


def case_atomic_falloc(d):
    """fallocate() of a file in an atomic write fails (EOPNOTSUPP), in
    every mode (patch 1): the blocks it would reserve in the file itself
    outlive an abort, past the size the abort restores, and roll-forward
    recovery grows a file over every block its fsync'd dnode reserves.
    glibc's posix_fallocate() then writes zeroes, staged as the
    transaction's.  A file checkpointed at 1041408 bytes, posix_fallocate()
    of 64 KiB at 1310720 in an atomic write, which is then aborted (and an
    atomic write of 4 KiB at 0 committed) or only fsync'd: after a shutdown
    that writes nothing, the file has its size and data as committed."""
    each_variant(("abort", "fsync"), lambda how: atomic_falloc(d, how))
    print("atomic-falloc: fallocate() refused in an atomic write; "
          "posix_fallocate()'s zeroes staged, gone after an abort or a "
          "shutdown before the commit")


def atomic_falloc(d, how):
    """case_atomic_falloc() with the transaction aborted or fsync'd."""
    with File(os.path.join(d, f"atomic-falloc-{how}")) as f:
        f.write(0, pattern(340, 1041408))
        os.fsync(f.fd)
        os.sync()
        committed = bytes(f.model)
        fcntl.ioctl(f.fd, F2FS_IOC_START_ATOMIC_WRITE)
        os.posix_fallocate(f.fd, 1310720, 64 * KIB)
        f.model.extend(bytes(1310720 + 64 * KIB - len(f.model)))
        f.verify(f"atomic-falloc ({how}): posix_fallocate() in the "
                 "transaction")
        if how == "abort":
            end_atomic(f, "abort", committed)
            f.verify("atomic-falloc: aborted")
            fcntl.ioctl(f.fd, F2FS_IOC_START_ATOMIC_WRITE)
            f.write(0, pattern(341, 4 * KIB))
            end_atomic(f, "commit", None)
            committed = bytes(f.model)
        else:
            os.fsync(f.fd)
        shutdown_and_mount(f, d)
        f.fd, f.model = os.open(f.path, os.O_RDWR), bytearray(committed)
        f.verify(f"atomic-falloc ({how}): shut down and mounted again")
        fcntl.ioctl(f.fd, F2FS_IOC_START_ATOMIC_WRITE)
        try:
            for mode in (0, FALLOC_KEEP_SIZE):
                if not libc().fallocate(f.fd, mode, 1310720, 64 * KIB):
                    raise Mismatch(f"atomic-falloc: fallocate() mode "
                                   f"{mode:#x} of a file in an atomic "
                                   "write succeeded")
                e = ctypes.get_errno()
                if e != errno.EOPNOTSUPP:
                    raise Mismatch(f"atomic-falloc: fallocate() mode "
                                   f"{mode:#x} of a file in an atomic "
                                   f"write: {os.strerror(e)}, want "
                                   "EOPNOTSUPP")
        finally:
            fcntl.ioctl(f.fd, F2FS_IOC_ABORT_ATOMIC_WRITE)
        f.verify_all(f"atomic-falloc ({how}): fallocate() refused")


def case_atomic_commit_eio(d):
    """A write error of the blocks an atomic write staged fails its commit
    (EIO) before any staged block moves, whether it was reported through
    another file descriptor or through the committing one (patch 69): the
    commit, a plain one or one replacing the file, leaves the file as it
    was, and the next one succeeds.  Without patch 69 the commit moved the
    staged blocks; with the error reported through another descriptor it
    then failed in its fsync, and the abort that followed cut the file
    back to its old size over them, freed blocks and all under a
    replacement; reported through the committing one, the commit
    succeeded with the failed block in the file.  And a write error
    before an atomic write starts, reported through another descriptor or
    taken by the start's own writeback, fails the start (EIO), once: the
    start tried again succeeds, and so does its commit, which without
    patch 69 reported the error the start had taken a second time,
    aborting a transaction that had none."""
    p = functools.partial
    each_variant((p(atomic_commit_eio, d, False, True),
                  p(atomic_commit_eio, d, True, True),
                  p(atomic_commit_eio, d, False, False),
                  p(atomic_start_eio, d, True),
                  p(atomic_start_eio, d, False)), lambda run: run())
    print("atomic-commit-eio: a write error of staged blocks failed the "
          "commit and left the file as it was, plain and replacing, "
          "reported through another file descriptor or the committing "
          "one; the next commit succeeded; one before the start failed "
          "the start once, seen through another descriptor or not")


def inject_write_error(d, fd):
    """Write back fd's file with every write failing (FAULT_WRITE_IO),
    which sync_file_range() must report, through fd."""
    with injecting(d, FAULT_WRITE_IO):
        failed = libc().sync_file_range(fd, 0, 0, 7) != 0
    if not failed:
        raise Mismatch("the injected write error was not reported")


def atomic_commit_eio(d, replace, other):
    """case_atomic_commit_eio()'s commit after a write error of staged
    blocks, for one kind of atomic write, the error reported through
    another file descriptor (other) or the committing one."""
    how = ("replace" if replace else "write") + \
        ("-other" if other else "-own")
    what = f"atomic-commit-eio ({how})"
    with File(os.path.join(d, f"atomic-commit-eio-{how}")) as f:
        f.write(0, pattern(360, 256 * KIB))
        os.fsync(f.fd)
        os.sync()
        before = bytes(f.model)
        fd2 = os.open(f.path, os.O_RDWR)
        try:
            start_atomic(f, replace)
            f.write(32 * KIB, pattern(362, 4 * KIB))
            f.write(256 * KIB, pattern(363, 8 * KIB))
            inject_write_error(d, fd2 if other else f.fd)
        finally:
            os.close(fd2)
        want_eio(lambda: end_atomic(f, "commit", None),
                 f"{what}: the commit after a write error of its staged "
                 "blocks")
        f.model = bytearray(before)
        f.verify_all(f"{what}: failed commit")
        start_atomic(f, replace)
        f.write(32 * KIB, pattern(364, 4 * KIB))
        end_atomic(f, "commit", None)
        f.verify_all(f"{what}: next commit")


def atomic_start_eio(d, other):
    """case_atomic_commit_eio()'s start of an atomic write after a write
    error, reported through another file descriptor (other) or taken by
    the start's own writeback."""
    how = "other" if other else "own"
    what = f"atomic-commit-eio (start, {how} descriptor)"
    with File(os.path.join(d, f"atomic-start-eio-{how}")) as f:
        f.write(0, pattern(365, 256 * KIB))
        os.fsync(f.fd)
        os.sync()
        f.write(0, pattern(366, 4 * KIB))
        if other:
            fd2 = os.open(f.path, os.O_RDWR)
            try:
                inject_write_error(d, fd2)
            finally:
                os.close(fd2)
            want_errno(lambda: start_atomic(f, False),
                       f"{what}: the start", errno.EIO)
        else:
            with injecting(d, FAULT_WRITE_IO):
                want_errno(lambda: start_atomic(f, False),
                           f"{what}: the start writing back", errno.EIO)
        # Written again, whole: block 0 has a known content.  No fsync,
        # which would take the error if the start had not.
        f.write(0, pattern(366, 4 * KIB))
        start_atomic(f, False)
        f.write(32 * KIB, pattern(367, 4 * KIB))
        f.write(256 * KIB, pattern(368, 8 * KIB))
        try:
            end_atomic(f, "commit", None)
        except OSError as e:
            raise Mismatch(f"{what}: the commit after a start that "
                           f"reported a write error: {e.strerror}") from e
        f.verify_all(f"{what}: committed")


def case_atomic_commit_sync_eio(d):
    """A commit whose staged blocks have moved into the file but whose
    sync then fails keeps the file as the transaction made it, as a
    failed fsync keeps a file (patch 69), and a mount after it finds the
    old content or the new, never a mix.  A 256 KiB file, checkpointed;
    an atomic write of 4 KiB at 32 KiB and 8 KiB at 256 KiB, plain and
    replacing the file, its staged blocks written back; then the commit
    with every write failing (FAULT_WRITE_IO): nothing is left for its
    own writeback, the blocks move, and the sync's node writes fail,
    which stops checkpoints.  The commit must fail with EIO and the file
    read as the transaction has it, cached and read again.  Without
    patch 69 the commit's abort dropped the cache and gave the file its
    old size over the moved blocks: the block at 32 KiB new, the 8 KiB
    past 256 KiB gone, and under a replacement zeroes from the file's
    first byte.  Runs on a filesystem of its own, which it leaves
    mounted again."""
    found = []
    for replace in (False, True):
        how = "replace" if replace else "write"
        what = f"atomic-commit-sync-eio ({how})"
        path = os.path.join(d, f"atomic-commit-sync-eio-{how}")
        with File(path) as f:
            f.write(0, pattern(369, 256 * KIB))
            os.fsync(f.fd)
            os.sync()
            old = bytes(f.model)
            start_atomic(f, replace)
            f.write(32 * KIB, pattern(370, 4 * KIB))
            f.write(256 * KIB, pattern(371, 8 * KIB))
            write_back(f)
            new = bytes(f.model)
            with injecting(d, FAULT_WRITE_IO):
                want_eio(lambda: end_atomic(f, "commit", None),
                         f"{what}: the commit whose sync fails")
            f.verify(f"{what}: after the failed sync (cached)")
            drop_caches()
            f.verify(f"{what}: after the failed sync (cache dropped)")
        remount(d)
        with open(path, "rb") as g:
            got = g.read()
        if got not in (old, new):
            want = old if len(got) == len(old) else new
            raise Mismatch(f"{what}: mounted again, size {len(got)}, "
                           f"neither the old {len(old)} bytes nor the new "
                           f"{len(new)}: {first_bad(got, want)}")
        found.append(f"{how} {'old' if got == old else 'new'}")
        os.unlink(path)
    print("atomic-commit-sync-eio: a commit whose sync failed after its "
          "blocks moved failed with EIO and left the file as the "
          "transaction made it, plain and replacing; mounted again, "
          f"the old content or the new ({', '.join(found)})")


def seek(fd, off, whence):
    """lseek()'s offset, or the name of its error (ENXIO: no data or hole
    from off on)."""
    try:
        return os.lseek(fd, off, whence)
    except OSError as e:
        return errno.errorcode[e.errno]


def case_atomic_seek(d):
    """SEEK_DATA and SEEK_HOLE on a file in an atomic write agree with
    read() (patch 1): the transaction's writes are data, cached or staged
    in the COW inode, though the file's own dnodes have nothing of them
    until the commit.  A 64 KiB file with a hole punched at 16 KiB; in the
    transaction, 4 KiB written into the hole and 4 KiB at EOF.  After the
    commit the file has no hole; after an abort, the hole again."""
    for end in ("commit", "abort"):
        f = File(os.path.join(d, f"atomic-seek-{end}"))
        f.write(0, pattern(350, 64 * KIB))
        f.fallocate(FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE, 16 * KIB, 4 * KIB)
        os.fsync(f.fd)
        before = bytes(f.model)
        fcntl.ioctl(f.fd, F2FS_IOC_START_ATOMIC_WRITE)
        f.write(16 * KIB, pattern(351, 4 * KIB))
        f.write(64 * KIB, pattern(352, 4 * KIB))
        for staged in ("cached", "written back"):
            got = (seek(f.fd, 0, os.SEEK_HOLE),
                   seek(f.fd, 64 * KIB, os.SEEK_DATA))
            if got != (68 * KIB, 64 * KIB):
                raise Mismatch(f"atomic-seek: in the transaction, "
                               f"{staged}: SEEK_HOLE from 0 gave {got[0]}, "
                               f"SEEK_DATA from 64 KiB {got[1]}, want "
                               f"{68 * KIB} and {64 * KIB}")
            write_back(f)
        end_atomic(f, end, before)
        f.verify_all(f"atomic-seek: {end}")
        want = 68 * KIB if end == "commit" else 16 * KIB
        got = seek(f.fd, 0, os.SEEK_HOLE)
        if got != want:
            raise Mismatch(f"atomic-seek: after the {end}, SEEK_HOLE from 0 "
                           f"gave {got}, want {want}")
        f.close()
    print("atomic-seek: SEEK_HOLE and SEEK_DATA in an atomic write see its "
          "writes, cached and staged; after the commit no hole, after an "
          "abort the hole again")


def compress_blocks(fd):
    return struct.unpack("<Q", fcntl.ioctl(
        fd, F2FS_IOC_GET_COMPRESS_BLOCKS, struct.pack("<Q", 0)))[0]


def write_compressible(f, seed):
    """Write 4 MiB into @f of which each 4 KiB is a KiB repeated, which
    compresses within a cluster (16 KiB), then 300 KiB that does not
    compress at MIB + 100."""
    data = pattern(seed, KIB) * (4 * MIB // KIB)
    for off in range(0, len(data), MIB):
        f.write(off, data[off:off + MIB])
    f.write(MIB + 100, pattern(seed + 1, 300 * KIB))


def case_compress(d):
    """Compressed files keep order-0 folios (f2fs compresses clusters of
    order-0 pages): a file made compressed (FS_COMPR_FL, which f2fs takes
    on files without blocks only) while its holes are cached, and a file
    inheriting the flag from its directory.  The data must compress (so
    that it went through the compressed paths), read back right cached and
    from the disk, while a plain file written the same way uses large
    folios."""
    ctl = File(os.path.join(d, "compress-control"))
    f = File(os.path.join(d, "compress"))
    # A file without blocks, its holes cached (in large folios, which
    # folio-stat cannot show here: f2fs refuses to compress a file that was
    # ever mapped), then made compressed, which drops them.
    f.truncate(2 * MIB)
    f.verify("sparse file before compression (cached)")
    set_flags(f.fd, get_flags(f.fd) | FS_COMPR_FL)
    os.mkdir(os.path.join(d, "cdir"))
    fd = os.open(os.path.join(d, "cdir"), os.O_RDONLY)
    set_flags(fd, get_flags(fd) | FS_COMPR_FL)
    os.close(fd)
    g = File(os.path.join(d, "cdir", "inherited"))
    if not get_flags(g.fd) & FS_COMPR_FL:
        raise Mismatch("a file in a compressed directory is not compressed")
    for h in (f, g, ctl):
        write_compressible(h, 331)
        h.write(3 * MIB - 1, b"\x07" * 2)
        h.verify(f"{os.path.basename(h.path)} (cached)")
    lf = large_folios(ctl.path, "a plain file written the same way")
    n = order0_folios(f.path, "file made compressed")
    order0_folios(g.path, "file compressed from its directory")
    for h in (f, g, ctl):
        h.verify_all(os.path.basename(h.path))
    cb = compress_blocks(f.fd), compress_blocks(g.fd)
    if not all(cb):
        raise Mismatch(f"compressed blocks {cb}: the data was not "
                       "compressed")
    for h in (f, g):
        reopen(h)
        order0_folios(h.path, f"{os.path.basename(h.path)} loaded again")
    for h in (f, g, ctl):
        h.close()
    print(f"compress: {n} pages in order-0 folios, {cb[0]} and {cb[1]} "
          f"blocks saved; the plain file {lf} pages in large folios")


def is_inline(path):
    """Whether path's data is inline: fiemap's flags of its extents
    (filefrag -v; the path itself may well contain the word)."""
    out = run(["filefrag", "-v", path]).stdout
    flags = re.findall(r"^\s*\d+:.*:\s+(\S+)$", out, re.M)
    return any("inline" in x.split(",") for x in flags)


def inline_file(path, seed, what):
    """A new file at path of 100 bytes (pattern seed), fsync'd, which must
    be inline data; what names it in the mismatch."""
    f = File(path)
    f.write(0, pattern(seed, 100))
    os.fsync(f.fd)
    if not is_inline(f.path):
        f.close()
        raise Mismatch(f"{what}: 100 bytes not inline (filefrag shows no "
                       "inline extent)")
    return f


def converted(f, what):
    """File f, inline before what was done to it, must no longer be."""
    if is_inline(f.path):
        f.close()
        raise Mismatch(f"{what}: the data still inline, want converted")


def case_inline(d):
    """Inline data (a small file kept in its inode) is read into and
    converted from the order-0 folio at index 0, by a write past the
    inline area and by a write fault; the file then takes large folios
    beyond that block."""
    for how in ("write", "fault"):
        f = inline_file(os.path.join(d, f"inline-{how}"), 340,
                        f"inline-{how}")
        drop_caches()
        f.verify(f"inline-{how}: inline data read")
        if how == "fault":
            m = mmap.mmap(f.fd, 100, mmap.MAP_SHARED,
                          mmap.PROT_READ | mmap.PROT_WRITE)
            m[10:60] = pattern(341, 50)
            f.model[10:60] = pattern(341, 50)
            m.flush()
            m.close()
        f.write(50, pattern(342, 4 * MIB))
        f.verify(f"inline-{how}: converted (cached)")
        converted(f, f"inline-{how}: 4 MiB written at 50")
        lf = large_folios(f.path, f"inline-{how}: after conversion")
        f.verify_all(f"inline-{how}: converted")
        f.close()
    print(f"inline: converted by a write and by a write fault ({lf} pages "
          "in large folios after)")


QUOTA_ID = 1234


def quota_usage(dev, qtype, qid):
    """(bytes, inodes) charged to id qid of quota type qtype (0 user, 1
    group, 2 project): quotactl(Q_GETQUOTA)."""
    buf = ctypes.create_string_buffer(72)
    cmd = ((0x800007 << 8) | qtype) - (1 << 32)             # QCMD(Q_GETQUOTA)
    if libc().quotactl(cmd, dev.encode(), qid, buf):
        raise Mismatch(f"Q_GETQUOTA type {qtype} id {qid}: "
                       f"{os.strerror(ctypes.get_errno())}")
    v = struct.unpack("<8QI4x", buf.raw)
    return v[2], v[5]


def quota_expected(d, test):
    """(bytes, inodes) of the files and directories under d for which
    test(stat) holds."""
    nbytes = inodes = 0
    for root, dirs, files in os.walk(d):
        for n in [root] + [os.path.join(root, x) for x in files]:
            st = os.lstat(n)
            if test(st):
                # f2fs allocates whole blocks; its stat adds the size of
                # inline data or dentries (less than a block) for du.
                nbytes += st.st_blocks // 8 * 4096
                inodes += 1
    return nbytes, inodes


def quota_check(d, dev, what, projid=None):
    """The user and group charges of QUOTA_ID (bytes and inodes) equal what
    its files and directories under d hold; with projid, the project's
    bytes equal what d/proj holds.  Return the project's charges."""
    for qtype, name, test in (
            (0, "user", lambda st: st.st_uid == QUOTA_ID),
            (1, "group", lambda st: st.st_gid == QUOTA_ID)):
        got = quota_usage(dev, qtype, QUOTA_ID)
        want = quota_expected(d, test)
        if got != want:
            raise Mismatch(f"{what}: {name} quota charges (bytes, inodes) "
                           f"{got}, the files have {want}")
    if projid is None:
        return None
    got = quota_usage(dev, 2, projid)
    want = quota_expected(os.path.join(d, "proj"), lambda st: True)
    if got[0] != want[0]:
        raise Mismatch(f"{what}: project quota charges {got[0]} bytes, "
                       f"the project's files have {want[0]}")
    return got


def as_quota_user(fn):
    """Run fn() as user and group QUOTA_ID in a child; return what it
    returns (anything json can carry: a tuple comes back as a list), or
    raise what it raised as a Mismatch.  The child ends here whatever fn()
    does, so no exception reaches the caller's code in the child."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        msg = b"E"
        try:
            os.setgid(QUOTA_ID)
            os.setuid(QUOTA_ID)
            msg = json.dumps(fn()).encode()
        except BaseException as e:
            msg = b"E" + str(e).encode()
        finally:
            os.write(w, msg)
            os._exit(0)
    os.close(w)
    msg = b""
    while True:
        b = os.read(r, 4096)
        if not b:
            break
        msg += b
    os.close(r)
    os.waitpid(pid, 0)
    if msg.startswith(b"E"):
        raise Mismatch(f"as user {QUOTA_ID}: {msg[1:].decode()}")
    return json.loads(msg)


def quota_writer(d, ops):
    """As user and group QUOTA_ID: write, truncate and punch files in d,
    checking what reads back, cached and after fsync and a drop of the
    clean cache (no root for drop_caches here)."""
    def write():
        for name, seed in ops:
            f = File(os.path.join(d, name))
            for i in range(4):
                f.write(i * MIB + i * 4097, pattern(seed + i, MIB))
            f.write(6 * MIB, pattern(seed + 9, 5000))         # sparse
            f.fallocate(FALLOC_PUNCH_HOLE | FALLOC_KEEP_SIZE,
                        MIB - 100, 200 * KIB)
            f.truncate(5 * MIB + 3)
            f.verify(f"{name} (cached)")
            os.fsync(f.fd)
            os.posix_fadvise(f.fd, 0, 0, os.POSIX_FADV_DONTNEED)
            f.verify(f"{name} (after fsync and a cache drop)")
            f.close()
        return 0
    as_quota_user(write)
    # Read back last, so cached by readahead (folio-stat needs root).
    for name, _ in ops:
        large_folios(os.path.join(d, name), f"{name}: written by user "
                     f"{QUOTA_ID} and read back")


def quota_set_limit(dev, qid, kib):
    """Set the block hard and soft limits of user qid to kib KiB (0: no
    limit): quotactl(Q_SETQUOTA) with QIF_BLIMITS."""
    buf = ctypes.create_string_buffer(struct.pack(
        "<8QI4x", kib, kib, 0, 0, 0, 0, 0, 0, 1), 72)
    cmd = (0x800008 << 8) - (1 << 32)                   # QCMD(Q_SETQUOTA)
    if libc().quotactl(cmd, dev.encode(), qid, buf):
        raise Mismatch(f"Q_SETQUOTA user {qid}: "
                       f"{os.strerror(ctypes.get_errno())}")


def write_to_limit(path, data, off, err, user=False):
    """Write data at off of path in one pwrite(), which must be short, then
    4 KiB at a time until a write fails with errno err; as user QUOTA_ID
    if user.  Return (bytes of the first write, bytes written in all).
    With order-0 folios the first write stops at the last block that
    fits; with large folios it may stop at the start of the folio whose
    blocks do not all fit (->write_begin takes a large folio's missing
    blocks for the whole range it writes, as XFS reserves a write's
    range at once), and the writes of 4 KiB fill the rest, less than a
    folio."""
    def work():
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        n = os.pwrite(fd, data, off)
        if n >= len(data):
            raise Mismatch(f"a write of {len(data)} bytes past the limit "
                           "was not short")
        filled = n
        while True:
            try:
                m = os.pwrite(fd, data[filled:filled + 4096], off + filled)
            except OSError as e:
                if e.errno != err:
                    raise
                break
            if not m:
                raise Mismatch(f"a write at {off + filled} wrote 0")
            filled += m
        if filled - n >= 2 * MIB:
            raise Mismatch(f"the write stopped at {off + n}, {filled - n} "
                           "bytes before writes of 4 KiB reached the limit: "
                           "more than a folio")
        # overwrite written blocks at the limit: no block to take
        m = os.pwrite(fd, data[MIB:2 * MIB][::-1], off + MIB)
        if m != MIB:
            raise Mismatch(f"an overwrite at the limit wrote {m} of {MIB} "
                           "bytes")
        os.close(fd)
        return n, filled
    return tuple(as_quota_user(work)) if user else work()


def limit_file(path, off, data, filled):
    """The File written by write_to_limit()."""
    model = bytearray(off) + data[:filled]
    model[off + MIB:off + 2 * MIB] = data[MIB:2 * MIB][::-1]
    return File(path, model)


def case_quota_limit(d):
    """A buffered write that reaches the user's block quota part way, past
    two dnode boundaries (write_to_limit()): the write is short, what it
    wrote reads back, writes of 4 KiB then fill the quota to within a data
    and a node block, so no reservation leaks; an overwrite of written
    blocks at the limit succeeds; the charges equal the blocks the files
    hold, cached, after sync and after a cache drop.  Then, without a
    limit, the rest of the 12 MiB is written."""
    dev = mount_source(d)
    qd = os.path.join(d, "qlimit")
    os.mkdir(qd)
    os.chmod(qd, 0o1777)
    path = os.path.join(qd, "f")
    off, size = MIB + 5, 12 * MIB
    data = pattern(400, size)
    used = quota_usage(dev, 0, QUOTA_ID)[0]
    # room for about 9 MiB of data and its node blocks
    limit = (used // 1024 + 9 * 1024 + 36) * 1024
    quota_set_limit(dev, QUOTA_ID, limit // 1024)
    try:
        n, filled = write_to_limit(path, data, off, errno.EDQUOT, user=True)
        charged = quota_usage(dev, 0, QUOTA_ID)[0]
        if not limit - 8 * KIB < charged <= limit:
            raise Mismatch(f"writes of 4 KiB stopped by EDQUOT at "
                           f"{off + filled} with {charged} bytes charged, "
                           f"the limit is {limit}: not within a data and a "
                           "node block of it")
        f = limit_file(path, off, data, filled)
        f.verify("at the limit (cached)")
        quota_check(d, dev, "at the limit (cached)")
        f.verify_all("at the limit")
        quota_check(d, dev, "at the limit (after fsync and a cache "
                    "drop)")
        dio = dio_to_limit(d, dev, os.path.join(qd, "dio"), charged)
    finally:
        quota_set_limit(dev, QUOTA_ID, 0)

    def rest():
        fd = os.open(path, os.O_RDWR)
        m = os.pwrite(fd, data[filled:], off + filled)
        os.close(fd)
        return m
    m = as_quota_user(rest)
    if m != size - filled:
        raise Mismatch(f"the rest, without a limit: {m} of "
                       f"{size - filled} bytes written")
    f.model += data[filled:]
    f.verify_all("the rest written without a limit")
    quota_check(d, dev, "the rest written (after fsync and a cache "
                "drop)")
    lf = large_folios(path, "quota-limit: read back")
    f.close()
    print(f"quota-limit: a {size >> 20} MiB write stopped by the quota at "
          f"block {(off + n) // 4096}, writes of 4 KiB at block "
          f"{(off + filled) // 4096}, {limit - charged} bytes below the "
          f"limit; charges equal the blocks ({lf} pages in large folios); "
          f"{dio}")


def dio_to_limit(d, dev, path, charged):
    """An O_DIRECT write of 4 MiB into a hole inside EOF, as user
    QUOTA_ID, with room for 1 MiB left under the limit: f2fs_iomap_begin()
    allocates the holes of its mapping until the quota stops it (EDQUOT),
    and the blocks it allocated before then must be taken back, as nothing
    writes them (patch 73; before it, 256 blocks stayed mapped, never
    written).  They stay reserved (NEW_ADDR), charged, as a buffered
    write's preallocation leaves blocks it did not write.  What the write
    wrote, if anything, reads back; no other block holds data (SEEK_DATA),
    and the charges equal the blocks."""
    size = 4 * MIB
    quota_set_limit(dev, QUOTA_ID, (charged + MIB) // 1024)
    src = mmap.mmap(-1, size)
    src[:] = pattern(401, size)

    def work():
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(fd, size)
        os.close(fd)
        fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
        try:
            return os.pwrite(fd, src, 0)
        except OSError as e:
            if e.errno != errno.EDQUOT:
                raise
            return 0
        finally:
            os.close(fd)
    n = as_quota_user(work)
    if n % 4096 or n >= size:
        raise Mismatch(f"quota-limit: an O_DIRECT write of {size} bytes with "
                       f"room for {MIB} under the limit wrote {n}")
    f = File(path, bytes(src[:n]) + bytes(size - n))
    data = seek(f.fd, n, os.SEEK_DATA)
    if data != "ENXIO":
        blocks = blocks_allocated(f.fd)
        f.close()
        raise Mismatch(f"quota-limit: an O_DIRECT write of {size} bytes into "
                       f"a hole, with room for {MIB} under the limit, which "
                       f"returned {n or 'EDQUOT'}: a block at {data} holds "
                       f"data, none past {n} should ({blocks} blocks "
                       f"allocated)")
    f.verify_all("quota-limit: an O_DIRECT write stopped by the quota")
    f.close()
    quota_check(d, dev, "after an O_DIRECT write stopped by the quota")
    return (f"an O_DIRECT write into a hole stopped by it wrote {n} bytes "
            f"and left no other block mapped")


def case_enospc(d):
    """A buffered write that fills the filesystem part way, past two dnode
    boundaries (write_to_limit()): the free space is taken first by a
    preallocated filler file but for about 9 MiB.  The write is short,
    what it wrote reads back, writes of 4 KiB then fill the space left
    to users to within a few blocks (statfs), so no block reservation
    leaks; an overwrite of written blocks on the full filesystem
    succeeds.  Then, the filler deleted, the rest of the 12 MiB is
    written, and all of it reads back after fsync and a cache drop; fsck
    after the case finds the filesystem clean."""
    path = os.path.join(d, "enospc")
    filler = os.path.join(d, "enospc-filler")
    # Block-aligned: f2fs preallocates a write's whole blocks first, up to
    # the last free one, and then has none left for a partial first block,
    # which it reserves at ->write_begin, so an unaligned write fails whole
    # (7.3 does so too, with order-0 folios).
    off, size = MIB, 12 * MIB
    data = pattern(410, size)
    os.sync()
    st = os.statvfs(d)
    room = st.f_bavail * st.f_frsize - 9 * MIB
    fd = os.open(filler, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if libc().fallocate(fd, 0, 0, room):
            e = ctypes.get_errno()
            raise Mismatch(f"fallocate of the filler ({room} bytes): "
                           f"{os.strerror(e)}")
        os.close(fd)
        fd = -1
        n, filled = write_to_limit(path, data, off, errno.ENOSPC)
        os.sync()
        st = os.statvfs(d)
        left = st.f_bavail * st.f_frsize
        if left >= 16 * KIB:
            raise Mismatch(f"writes of 4 KiB stopped by ENOSPC at "
                           f"{off + filled} with {left} bytes free to users")
        f = limit_file(path, off, data, filled)
        f.verify_all("on the full filesystem")
    finally:
        if fd >= 0:
            os.close(fd)
        os.unlink(filler)
    m = os.pwrite(f.fd, data[filled:], off + filled)
    if m != size - filled:
        raise Mismatch(f"the rest, the filler deleted: {m} of "
                       f"{size - filled} bytes written")
    f.model += data[filled:]
    f.verify_all("the rest written after deleting the filler")
    lf = large_folios(path, "enospc: read back")
    f.close()
    print(f"enospc: a {size >> 20} MiB write stopped by ENOSPC at block "
          f"{(off + n) // 4096}, writes of 4 KiB at block "
          f"{(off + filled) // 4096}, {left} bytes left; all read back "
          f"({lf} pages in large folios)")


def case_quota(d):
    """Quota (mkfs -O quota,project_quota; usrquota, grpquota, prjquota,
    as on Android's /data): the blocks that writes into large folios
    reserve, that truncation and hole punching free, and that chown moves,
    are charged to the user, group and project owning them: the charges
    must equal the files' block counts, cached and after sync, and
    fsck.f2fs, after the case, checks the quota files against the files.
    f2fs reads and writes the quota files themselves through order-0
    folios (f2fs_quota_file())."""
    dev = mount_source(d)
    qd = os.path.join(d, "quota")
    os.mkdir(qd)
    os.chmod(qd, 0o1777)
    projid = 77
    pd = os.path.join(qd, "proj")
    os.mkdir(pd)
    os.chmod(pd, 0o1777)
    fd = os.open(pd, os.O_RDONLY)
    xf, ext, nx, _, cow = struct.unpack("<5I8x", fcntl.ioctl(
        fd, FS_IOC_FSGETXATTR, bytes(28)))
    fcntl.ioctl(fd, FS_IOC_FSSETXATTR, struct.pack(
        "<5I8x", xf | FS_XFLAG_PROJINHERIT, ext, nx, projid, cow))
    os.close(fd)
    quota_writer(qd, (("a", 350), ("proj/b", 360)))
    before = quota_check(qd, dev, "written", projid)
    # Files written by root, then given to the user: chown moves charges.
    f, _ = cached_file(qd, "given", 370)
    f.write(MIB + 1, pattern(371, 3 * MIB))                  # dirty
    os.fchown(f.fd, QUOTA_ID, QUOTA_ID)
    quota_check(qd, dev, "after chown of a dirty file", projid)
    f.close()
    os.sync()
    quota_check(qd, dev, "after sync", projid)
    quota_writer(qd, (("a", 380), ("proj/c", 390)))
    drop_caches()
    got = quota_check(qd, dev, "after rewriting and a cache drop",
                      projid)
    print(f"quota: user, group and project charges match the files; "
          f"project {projid}: {before[0]} then {got[0]} bytes")


F2FS_IOC_RELEASE_COMPRESS_BLOCKS = 0x8008f512
F2FS_IOC_RESERVE_COMPRESS_BLOCKS = 0x8008f513


def compress_ioctl(path, req, what):
    """Evict path's inode (a cache drop with no reference left), then issue
    req on a read-only descriptor, as f2fs_io does (checked in its source),
    and return the number of blocks it released or reserved."""
    drop_caches()
    fd = os.open(path, os.O_RDONLY)
    try:
        n = struct.unpack("<Q", fcntl.ioctl(fd, req, bytes(8)))[0]
    finally:
        os.close(fd)
    if not n:
        raise Mismatch(f"{what}: no blocks")
    return n


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


def case_compress_quota(d):
    """The blocks F2FS_IOC_RELEASE_COMPRESS_BLOCKS gives back and
    F2FS_IOC_RESERVE_COMPRESS_BLOCKS takes again are charged to the
    file's owner (mkfs -O compression,quota,project_quota, as a phone's
    /data can be).  Both ioctls work on a read-only descriptor, through
    which the inode's quota is not set up (dquot_file_open() does that for
    writers): in 7.3 they then changed the file's block count without its
    charges, which fsck.f2fs found wrong (xfstests' f2fs/007 with -O
    quota).  The charges must equal the block counts after each, the data
    read back, and the file take writes again after the reserve."""
    dev = mount_source(d)
    qd = os.path.join(d, "cquota")
    os.mkdir(qd)
    path = os.path.join(qd, "c")
    f = File(path)
    set_flags(f.fd, get_flags(f.fd) | FS_COMPR_FL)
    write_compressible(f, 341)
    os.fsync(f.fd)
    os.fchown(f.fd, QUOTA_ID, QUOTA_ID)
    f.verify_all("compressed file")
    saved = compress_blocks(f.fd)
    if not saved:
        raise Mismatch("the data was not compressed")
    f.close()
    os.sync()
    quota_check(qd, dev, "compressed file written")
    before = os.stat(path).st_blocks
    n = compress_ioctl(path, F2FS_IOC_RELEASE_COMPRESS_BLOCKS,
                       "F2FS_IOC_RELEASE_COMPRESS_BLOCKS")
    if read_all(path) != bytes(f.model):
        raise Mismatch("data changed by F2FS_IOC_RELEASE_COMPRESS_BLOCKS")
    os.sync()
    released = os.stat(path).st_blocks
    if (before - released) // 8 != n:
        raise Mismatch(f"{n} blocks released, the block count went from "
                       f"{before // 8} to {released // 8}")
    quota_check(qd, dev, "after F2FS_IOC_RELEASE_COMPRESS_BLOCKS")
    m = compress_ioctl(path, F2FS_IOC_RESERVE_COMPRESS_BLOCKS,
                       "F2FS_IOC_RESERVE_COMPRESS_BLOCKS")
    os.sync()
    quota_check(qd, dev, "after F2FS_IOC_RESERVE_COMPRESS_BLOCKS")
    g = File(path, f.model)
    g.write(3 * MIB + 5, pattern(343, 5000))
    g.verify_all("compressed file written after the reserve")
    g.close()
    os.sync()
    quota_check(qd, dev, "written after the reserve")
    print(f"compress-quota: {saved} blocks saved, {n} released and {m} "
          "reserved again on read-only descriptors; charges match")


def run(cmd, ok_fail=False):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode and not ok_fail:
        raise Mismatch(f"{' '.join(cmd)} failed: {r.stderr.strip()}")
    return r


# Each case_NAME() is the case NAME, with dashes for underscores; two more
# run case_short_write_eof() on other kinds of file.
CASES = {name[5:].replace("_", "-"): fn
         for name, fn in list(globals().items()) if name.startswith("case_")}
CASES["inline-short-write"] = functools.partial(case_short_write_eof,
                                                kind="inline")
CASES["pin-short-write"] = functools.partial(case_short_write_eof,
                                             kind="pinned")


class LastLine:
    """stdout that remembers the last line written to it."""

    def __init__(self, out):
        self.out, self.last = out, ""

    def write(self, text):
        for line in text.splitlines():
            if line.strip():
                self.last = line
        return self.out.write(text)

    def flush(self):
        self.out.flush()


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "pressure-child":
        try:
            pressure_child(sys.argv[2], sys.argv[3])
        except Mismatch as e:
            print(f"edges: FAIL {e}")
            return 1
        return 0
    if len(sys.argv) < 3 or any(n not in CASES and n != "all"
                                for n in sys.argv[1:-1]):
        sys.exit(__doc__ + "\nCases: " + ", ".join(sorted(CASES)))
    d = sys.argv[-1]
    names = [c for n in sys.argv[1:-1]
             for c in (list(CASES) if n == "all" else [n])]
    # One process imports this file and forks a child per case: Python's
    # start and compile cost 1 to 3 s under TCG, a fork much less; the
    # child's exit closes what the case left open (a busy mount fails a
    # later case's umount).
    failed = 0
    for n in names:
        t0 = time.monotonic()
        sys.stdout.flush()
        pid = os.fork()
        if not pid:
            rc = 3
            try:
                rc = run_case(n, d, t0)
            finally:                    # whatever it raised: no further
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(rc)
        status = os.waitpid(pid, 0)[1]
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) in (0, 1):
            failed += os.WEXITSTATUS(status)
            continue
        failed += 1
        print(f"edges-case FAIL {n} {round(time.monotonic() - t0)} the "
              f"case's process ended with status {status:#x}", flush=True)
    return 1 if failed else 0


def run_case(n, d, t0):
    """Case n on d, in the child main() forked for it: print its
    edges-case line, return 0 if it passed, else 1."""
    me = os.getpid()
    out = LastLine(sys.stdout)
    try:
        with contextlib.redirect_stdout(out):
            CASES[n](d)
            # Every dirty block is written back by sync: a count left over
            # is a leak that would keep the inode dirty for ever.
            os.sync()
            left = f2fs_dirty_data()
            if left:
                raise Mismatch(f"{n}: {left} dirty data pages counted "
                               "after sync")
        verdict, detail = "PASS", out.last
    except Mismatch as e:
        verdict, detail = "FAIL", str(e)
    except Exception as e:              # noqa: BLE001 (the case fails)
        traceback.print_exc()
        verdict, detail = "FAIL", f"{type(e).__name__}: {e}"
    if os.getpid() != me:
        # a child of the case that its code let out: no report of its own
        os._exit(2)
    detail = " | ".join(detail.splitlines())
    print(f"edges-case {verdict} {n} {round(time.monotonic() - t0)} "
          f"{detail}", flush=True)
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
