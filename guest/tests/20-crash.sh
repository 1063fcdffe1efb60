#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Crash consistency: after a shutdown that drops everything not yet on disk
# (FS_IOC_SHUTDOWN, NOLOGFLUSH), remount (f2fs: roll-forward recovery) and
# check that every fsynced byte is there, unsynced ranges hold either the
# old or the new data per block, and fsck is clean.  Then atomic write
# transactions shut down at many points, inside commits too: each leaves
# the old or the new content, never a mix.
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

# crash_one NAME FS OPTS ORDER [freeze]: with freeze, the filesystem is
# frozen and thawed after file a is synced, so that the checkpoint of the
# freeze is the one recovery starts from.
crash_one() {
	local name=$1 fs=$2 opts=$3 order=$4 freeze=${5:-}
	mkfs_fs "$fs" $DEV && mount_fs "$fs" $DEV $MNT "$opts" "$order" || {
		result FAIL "$name" "mkfs/mount failed"; return; }
	# Synced: A fully, then an unaligned overwrite and an append.
	xfs_io -f -c "pwrite -q -S 0x11 -b 1m 0 $((4 * M))" -c fsync \
		-c "pwrite -q -S 0x22 $((M + 1000)) $((300 * 1024))" -c fsync \
		-c "pwrite -q -S 0x33 $((4 * M)) 123457" -c fdatasync $MNT/a &&
	if [ -n "$freeze" ]; then
		xfs_io -x -c freeze -c thaw $MNT
	fi &&
	# A second file with a small synced write, and dirty data left behind.
	xfs_io -f -c "pwrite -q -S 0x44 0 $((M + 5))" -c fsync \
		-c "pwrite -q -S 0x55 4096 8192" $MNT/b &&
	xfs_io -c "pwrite -q -S 0x66 $((2 * M)) 65536" \
		-c "pwrite -q -S 0x77 $((5 * M)) $M" $MNT/a || {
		result FAIL "$name" "writes failed"; return; }
	xfs_io -x -c "shutdown" $MNT || {
		result FAIL "$name" "shutdown failed"; return; }
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
	f2fs*) fsck_ok "$name" || return ;;
	esac
	result PASS "$name" "fsynced data intact after shutdown"
}

each_f2fs crash_one crash
# Quota, as on Android's /data: after recovery the quota files must match
# the files (fsck).  The checkpoint of a freeze flushed no quota on 7.3:
# freeze_super() holds s_umount, which the checkpoint tried for and went
# on without the quota and without flagging the quota files for fsck.
for v in $(f2fs_variants); do
	crash_one "crash-f2fs-quota-freeze-$v" f2fs-quota \
		usrquota,grpquota,prjquota "$(variant_order "$v")" freeze
done

# atomic_crash_one NAME ORDER: SQLite-style atomic write transactions
# (guest/atomic.py) on a file whose large folios are cached, shut down at
# $ATOMIC_CRASHES points: after the remount the file holds the content of
# the last acknowledged transaction or of the one in flight, never a mix.
# Every other time, commits sleep a second after the block addresses are
# swapped and before they are synced (fault injection FAULT_ATOMIC_TIMEOUT),
# so that the shutdown falls inside a commit; every third shutdown flushes
# metadata first (a checkpoint), the others drop everything unsynced.
FAULT_ATOMIC_TIMEOUT=$((1 << 22))
atomic_crash_one() {
	local name=$1 order=$2 i w pid ms how sysfs err done=0 flight=0 tx=0
	mkfs_fs f2fs $DEV && mount_fs f2fs $DEV $MNT "" "$order" || {
		result FAIL "$name" "mkfs/mount failed"; return; }
	sysfs=/sys/fs/f2fs/$(basename $(readlink -f $DEV))
	for i in $(seq 1 $ATOMIC_CRASHES); do
		rm -f /tmp/atomic.log
		/usr/bin/python3 $REPO/guest/atomic.py init $MNT/db $i &&
			cat $MNT/db > /dev/null || {
			result FAIL "$name" "could not write the file"; umount $MNT
			return; }
		if [ $((i % 2)) = 0 ]; then
			echo $FAULT_ATOMIC_TIMEOUT > $sysfs/inject_type &&
				echo 1 > $sysfs/inject_rate || {
				result FAIL "$name" "no fault injection"; umount $MNT
				return; }
		fi
		timeout 300 /usr/bin/python3 $REPO/guest/atomic.py run $MNT/db $i \
			/tmp/atomic.log 2> /tmp/atomic.err & pid=$!
		# Count the delay from the first acknowledged transaction: on a
		# busy host the interpreter alone can take longer to start.
		for w in $(seq 600); do
			[ -s /tmp/atomic.log ] || ! kill -0 $pid 2>/dev/null && break
			sleep 0.1
		done
		ms=$(( 300 + i * 733 % 2500 ))
		sleep $((ms / 1000)).$(printf %03d $((ms % 1000)))
		how=shutdown
		[ $((i % 3)) = 0 ] && how="shutdown -f"
		# Only the shutdown may stop the transactions: an error before
		# it would end them as quietly.
		kill -0 $pid 2>/dev/null || {
			wait $pid
			result FAIL "$name" "transactions stopped before shutdown"\
" $i, after $(wc -l < /tmp/atomic.log) of them: "\
"$(tail -1 /tmp/atomic.err 2>/dev/null)"; umount $MNT; return; }
		xfs_io -x -c "$how" $MNT || {
			result FAIL "$name" "$how failed"; return; }
		wait $pid || { result FAIL "$name" "transactions did not stop "\
			"after the shutdown"; return; }
		tx=$(( tx + $(wc -l < /tmp/atomic.log) ))
		umount $MNT && mount_fs f2fs $DEV $MNT "" "$order" || {
			result FAIL "$name" "remount after shutdown $i failed"; return; }
		err=$(/usr/bin/python3 $REPO/guest/atomic.py check $MNT/db $i \
			/tmp/atomic.log 2>&1) || {
			result FAIL "$name" "shutdown $i ($how after ${ms} ms): "\
"$(echo "$err" | tail -1)"; umount $MNT; return; }
		case $err in *"in flight"*) flight=$((flight + 1)) ;; esac
		done=$((done + 1))
	done
	umount $MNT
	fsck_ok "$name" || return
	# A run that committed nothing proves nothing.
	if [ $tx -lt $ATOMIC_CRASHES ]; then
		result FAIL "$name" "only $tx transactions in $done runs"
		return
	fi
	result PASS "$name" "$done shutdowns, $tx transactions: $flight kept "\
"the one in flight, the others the last acknowledged"
}

# atomic_abort_crash NAME ORDER: a transaction that wrote past EOF is
# aborted, the next one commits (fsync), then a shutdown without
# checkpoint: roll-forward recovery must give the committed file at its
# size.  The aborted write's whole blocks past EOF were preallocated in the
# file by the buffered write, and recovery grows a file to cover every
# block its fsynced node maps or reserves.
atomic_abort_crash() {
	local name=$1 order=$2 err
	mkfs_fs f2fs $DEV && mount_fs f2fs $DEV $MNT "" "$order" || {
		result FAIL "$name" "mkfs/mount failed"; return; }
	/usr/bin/python3 $REPO/guest/atomic.py abort-extend $MNT/db || {
		result FAIL "$name" "the transactions failed"; umount $MNT
		return; }
	xfs_io -x -c shutdown $MNT || {
		result FAIL "$name" "shutdown failed"; return; }
	umount $MNT && mount_fs f2fs $DEV $MNT "" "$order" || {
		result FAIL "$name" "remount after the shutdown failed"; return; }
	err=$(/usr/bin/python3 $REPO/guest/atomic.py abort-extend-check \
		$MNT/db 2>&1)
	local rc=$?
	umount $MNT
	[ $rc = 0 ] || { result FAIL "$name" "$(echo "$err" | tail -1)"; return; }
	fsck_ok "$name" || return
	result PASS "$name" "$err"
}

ATOMIC_CRASHES=6
[ "${LAB_FORM:-short}" = long ] && ATOMIC_CRASHES=40
for v in $(f2fs_variants); do
	atomic_abort_crash crash-atomic-abort-f2fs-$v "$(variant_order $v)"
	atomic_crash_one crash-atomic-f2fs-$v "$(variant_order $v)"
done
if controls; then
	crash_one crash-ext4 ext4 "" ""
	crash_one crash-xfs xfs "" ""
fi

# the end: run-tests.sh fails a test that exits any other way
exit 0
