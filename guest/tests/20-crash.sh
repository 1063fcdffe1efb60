#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Crash consistency: after a shutdown that drops everything not yet on disk
# (FS_IOC_SHUTDOWN, NOLOGFLUSH), remount (f2fs: roll-forward recovery) and
# check that every fsynced byte is there, unsynced ranges hold either the
# old or the new data per block, and fsck is clean.
. /tmp/lab-repo/guest/lib.sh

M=$((1024 * 1024))
verify() {
	python3 - "$@" <<'EOPY'
import sys
path, size_min = sys.argv[1], int(sys.argv[2])
spans = [tuple(a.split(":")) for a in sys.argv[3:]]
data = open(path, "rb").read()
if len(data) < size_min:
    sys.exit(f"size {len(data)} < fsynced size {size_min}")
for s in spans:
    off, ln, want = int(s[0]), int(s[1]), [int(x, 16) for x in s[2].split("|")]
    for b in range(off, off + ln, 4096):
        blk = data[b:min(b + 4096, off + ln)]
        if not any(blk == bytes([w]) * len(blk) for w in want):
            bad = next(i for i, c in enumerate(blk) if c not in want)
            sys.exit(f"offset {b + bad}: 0x{blk[bad]:02x}, want one of "
                     f"{'/'.join(hex(w) for w in want)} per block")
EOPY
}

crash_one() {
	local name=$1 fs=$2 opts=$3 order=$4
	mkfs_fs "$fs" $DEV && mount_fs "$fs" $DEV $MNT "$opts" "$order" || {
		result FAIL "$name" "mkfs/mount failed"; return; }
	# Synced: A fully, then an unaligned overwrite and an append.
	xfs_io -f -c "pwrite -q -S 0x11 -b 1m 0 $((4 * M))" -c fsync \
		-c "pwrite -q -S 0x22 $((M + 1000)) $((300 * 1024))" -c fsync \
		-c "pwrite -q -S 0x33 $((4 * M)) 123457" -c fdatasync $MNT/a &&
	# A second file with a small synced write, and dirty data left behind.
	xfs_io -f -c "pwrite -q -S 0x44 0 $((M + 5))" -c fsync \
		-c "pwrite -q -S 0x55 4096 8192" $MNT/b &&
	xfs_io -c "pwrite -q -S 0x66 $((2 * M)) 65536" \
		-c "pwrite -q -S 0x77 $((5 * M)) $M" $MNT/a || {
		result FAIL "$name" "writes failed"; return; }
	xfs_io -x -c "shutdown" $MNT || { result FAIL "$name" "shutdown failed"; return; }
	if xfs_io -f -c "pwrite -q 0 4096" -c fsync $MNT/c 2>/dev/null; then
		result FAIL "$name" "still writable after shutdown"; umount $MNT; return
	fi
	umount $MNT && mount_fs "$fs" $DEV $MNT "$opts" "$order" || {
		result FAIL "$name" "remount after shutdown failed"; return; }
	local err
	err=$(verify $MNT/a $((4 * M + 123457)) \
		0:$((M + 1000)):11 $((M + 1000)):$((300 * 1024)):22 \
		$((M + 308200)):$((M - 308200)):11 \
		$((2 * M)):65536:11\|66 $((2 * M + 65536)):$((2 * M - 65536)):11 \
		$((4 * M)):123457:33 2>&1) || {
		result FAIL "$name" "file a: $err"; umount $MNT; return; }
	err=$(verify $MNT/b $((M + 5)) 0:4096:44 4096:8192:44\|55 \
		12288:$((M + 5 - 12288)):44 2>&1) || {
		result FAIL "$name" "file b: $err"; umount $MNT; return; }
	umount $MNT
	case $fs in
	f2fs*) fsck_clean $DEV > /tmp/fsck.out || {
		result FAIL "$name" "fsck: $(head -2 /tmp/fsck.out | tr '\n' ' ')"
		return; } ;;
	esac
	result PASS "$name" "fsynced data intact after shutdown"
}

each_f2fs crash_one crash
if controls; then
	crash_one crash-ext4 ext4 "" ""
	crash_one crash-xfs xfs "" ""
fi
