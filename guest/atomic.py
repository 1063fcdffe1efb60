#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""SQLite-style atomic write transactions for the crash test
(guest/tests/20-crash.sh).

Usage: atomic.py init FILE SEED       write the first version, fsync
       atomic.py run FILE SEED LOG    run transactions until the filesystem
                                      fails (it is shut down); after each
                                      commit or abort returns, append the
                                      transaction's number to LOG
       atomic.py check FILE SEED LOG  the file must hold exactly what it
                                      held after the last transaction LOG
                                      names, or after the next one (in
                                      flight when it was shut down): never
                                      a mix, never an aborted transaction
       atomic.py abort-extend FILE    checkpoint a file, abort a transaction
                                      that writes past its end, commit one
                                      that does not
       atomic.py abort-extend-check FILE
                                      after a shutdown: the file holds the
                                      committed transaction, at its size

A transaction is F2FS_IOC_START_ATOMIC_WRITE (every seventh
F2FS_IOC_START_ATOMIC_REPLACE, which starts from an empty file), a few 4 KiB
page writes, a 64 KiB write, an unaligned small write (whose partial blocks
are read from the COW inode or the file), then F2FS_IOC_COMMIT_ATOMIC_WRITE,
or every fifth F2FS_IOC_ABORT_ATOMIC_WRITE.  Everything follows from SEED
and the transaction's number, so check replays the model.
"""
import fcntl
import os
import random
import sys

from edges import KIB, MIB, pattern

START, COMMIT, ABORT, REPLACE = 0xf501, 0xf502, 0xf505, 0xf519


def first_version(seed):
    return bytearray(pattern(seed, MIB))


def transaction(seed, t):
    """(kind, [(offset, data)]) of transaction t."""
    rng = random.Random(seed * 100003 + t)
    kind = ("abort" if t % 5 == 4 else "replace" if t % 7 == 6
            else "commit")
    writes = []
    if kind == "replace":
        writes.append((0, rng.randrange(64 * KIB, 3 * MIB // 2)))
    for _ in range(3):
        writes.append((rng.randrange(320) * 4 * KIB, 4 * KIB))
    writes.append((rng.randrange(20) * 64 * KIB, 64 * KIB))
    writes.append((rng.randrange(5 * MIB // 4), rng.randrange(1, 300)))
    return kind, [(off, pattern((seed * 1000 + t) * 10 + i, ln))
                  for i, (off, ln) in enumerate(writes)]


def apply(model, kind, writes):
    if kind == "abort":
        return model
    if kind == "replace":
        model = bytearray()
    for off, data in writes:
        if off > len(model):
            model.extend(bytes(off - len(model)))
        model[off:off + len(data)] = data
    return model


def cmd_init(path, seed):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.pwrite(fd, first_version(seed), 0)
    os.fsync(fd)
    os.close(fd)


def cmd_run(path, seed, log):
    fd = os.open(path, os.O_RDWR)
    with open(log, "a", buffering=1) as lg:
        t = 1
        while True:
            kind, writes = transaction(seed, t)
            try:
                fcntl.ioctl(fd, REPLACE if kind == "replace" else START)
                for off, data in writes:
                    done = 0
                    while done < len(data):
                        done += os.pwrite(fd, data[done:], off + done)
                fcntl.ioctl(fd, ABORT if kind == "abort" else COMMIT)
            except OSError as e:
                # The shutdown ends the loop; 20-crash checks that this
                # process was still running when the shutdown came.
                print(f"atomic: transaction {t} stopped: {e}",
                      file=sys.stderr)
                return 0
            lg.write(f"{t}\n")
            t += 1


def cmd_check(path, seed, log):
    with open(log) as lg:
        done = [int(x) for x in lg.read().split()]
    last = done[-1] if done else 0
    model = first_version(seed)
    for t in range(1, last + 1):
        model = apply(model, *transaction(seed, t))
    kind, writes = transaction(seed, last + 1)
    after = apply(bytearray(model), kind, writes)
    with open(path, "rb") as f:
        got = f.read()
    if got == model:
        print(f"state after transaction {last}, the last acknowledged")
        return 0
    if got == after:
        print(f"state after transaction {last + 1} ({kind}), in flight")
        return 0
    why = []
    for name, want in ((f"after {last}", model),
                       (f"after {last + 1} ({kind})", after)):
        if len(got) != len(want):
            why.append(f"{name}: size {len(got)}, want {len(want)}")
            continue
        i = next(i for i in range(len(got)) if got[i] != want[i])
        why.append(f"{name}: first bad byte at {i}")
    print(f"atomic: FAIL neither the state after transaction {last} nor "
          f"after {last + 1}: {'; '.join(why)}")
    return 1


ABORT_EXTEND_SIZE = MIB - 7 * KIB


def abort_extend_model():
    model = bytearray(pattern(7, ABORT_EXTEND_SIZE))
    model[0:4 * KIB] = pattern(8, 4 * KIB)
    return model


def cmd_abort_extend(path):
    """The aborted transaction's write covers whole blocks past EOF, which
    a buffered write preallocates; the commit after it fsyncs the file."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.pwrite(fd, pattern(7, ABORT_EXTEND_SIZE), 0)
    os.fsync(fd)
    os.sync()                                   # a checkpoint
    fcntl.ioctl(fd, START)
    os.pwrite(fd, pattern(9, 64 * KIB), 5 * MIB // 4)
    fcntl.ioctl(fd, ABORT)
    fcntl.ioctl(fd, START)
    os.pwrite(fd, pattern(8, 4 * KIB), 0)
    fcntl.ioctl(fd, COMMIT)
    os.close(fd)
    return 0


def cmd_abort_extend_check(path):
    with open(path, "rb") as f:
        got = f.read()
    want = abort_extend_model()
    if got == want:
        print(f"the committed transaction, {len(got)} bytes")
        return 0
    if len(got) != len(want):
        print(f"atomic: FAIL size {len(got)}, want {len(want)} (the "
              f"aborted transaction wrote up to {5 * MIB // 4 + 64 * KIB})")
    else:
        i = next(i for i in range(len(got)) if got[i] != want[i])
        print(f"atomic: FAIL first bad byte at {i}")
    return 1


def main():
    cmds = {"init": (cmd_init, 2), "run": (cmd_run, 3),
            "check": (cmd_check, 3), "abort-extend": (cmd_abort_extend, 1),
            "abort-extend-check": (cmd_abort_extend_check, 1)}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds or \
            len(sys.argv) != 2 + cmds[sys.argv[1]][1]:
        sys.exit(__doc__)
    fn, _ = cmds[sys.argv[1]]
    args = sys.argv[2:]
    if len(args) > 1:
        args[1] = int(args[1])
    return fn(*args)


if __name__ == "__main__":
    sys.exit(main())
