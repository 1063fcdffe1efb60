#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of ./lab insns: each workload run in each configuration of
# LAB_FS (f2fs with order-0 folios, f2fs-4k; with large folios, f2fs-lf;
# xfs, large folios through iomap; xfs-4k, XFS in order-0 folios, on a
# kernel with the lab's experiment (lib.sh's xfs_order0()); tmpfs, the
# bench's, with huge=always, the page cache with no device under it;
# f2fs-crypt-4k and f2fs-crypt-lf, the bench's encrypted files:
# inlinecrypt, a v2 policy with IV_INO_LBLK_64, blk-crypto-fallback doing
# the crypto), interleaved, LAB_REPS times, each
# run bracketed by two sethostname() calls, the marker at which the host's
# QEMU plugin (bench/tbcount.c) closes a window of counted instructions.
# $OUT/windows.txt lists the runs in order: workload, variant, rep, I/Os.
#   rand-fsync   4 KiB random overwrites of a file cached by a read, fsync
#                after each (the bench's rand-overwrite fsync cell)
#   write-fsync  4 KiB writes to a new file, fsync after each (write-new)
#   write-1m     1 MiB writes to a new file, written back at the end
#                (end_fsync: the bench's write-new writeback 1M cell); an
#                I/O is 1 MiB
#   write-64k    64 KiB writes to a new file, left in the cache
#                (writeback held off, no sync: the bench's write-new
#                cache 64k cell)
#   write-4k     the same in 4 KiB writes (write-new cache 4k)
#   mmap-write   1 MiB writes through a shared mapping of a written file,
#                cold cache: read faults, then write faults (the bench's
#                mmap-write cache 1M cell); an I/O is 1 MiB
#   overwrite-1m 1 MiB overwrites of a written file, cold cache, written
#                back at the end (the bench's overwrite writeback 1M cell)
#   overwrite-64k the same in 64 KiB writes (overwrite writeback 64k); an
#                I/O is 64 KiB
#   overwrite-4kwb the same in 4 KiB writes (overwrite writeback 4k)
#   overwrite-4k 4 KiB overwrites of a written file, cold cache, left in
#                the cache (writeback held off, no sync: the bench's
#                overwrite cache 4k cell)
#   read-hole-64k 64 KiB reads of a sparse file (no blocks), cold cache
#                (the bench's read-hole 64k cell); an I/O is 64 KiB
#   read-1m      1 MiB reads of a written file, cold cache (the bench's
#                read-data 1M cell)
. /tmp/lab-repo/guest/lib.sh
set -u
SIZE=${LAB_SIZE_MIB:-64}
FILE_BYTES=$(( SIZE << 20 ))
REPS=${LAB_REPS:-3}
WLS=${LAB_WORKLOADS:-rand-fsync}
FSS=${LAB_FS:-f2fs-4k,f2fs-lf}
: > $OUT/windows.txt

probe_knob || { echo "probe_knob: mkfs/mount failed"; exit 1; }

for wl in ${WLS//,/ }; do
	for rep in $(seq 1 $REPS); do
		for v in ${FSS//,/ }; do
			fs_up $v || { echo "$v: mkfs/mount failed"; exit 1; }
			F=$(dir_of $v)/f
			rw=write bs=4k engine=psync sync=--fsync=1
			case $wl in
			rand-fsync|mmap-write|overwrite-*|read-1m)
				xfs_io -f -c "pwrite -q -b 1m 0 ${SIZE}M" \
					-c fsync $F || exit 1
				cold $v || exit 1 ;;
			read-hole-*)
				truncate -s ${SIZE}M $F || exit 1
				cold $v || exit 1 ;;
			esac
			case $wl in
			rand-fsync)
				rw=randwrite
				cat $F > /dev/null ;;
			mmap-write) bs=1M engine=mmap sync= ;;
			write-1m|overwrite-1m) bs=1M sync=--end_fsync=1 ;;
			overwrite-64k) bs=64k sync=--end_fsync=1 ;;
			write-64k) bs=64k sync= ;;
			write-4k) sync= ;;
			overwrite-4kwb) sync=--end_fsync=1 ;;
			overwrite-4k) sync= ;;
			read-hole-64k) rw=read bs=64k sync= ;;
			read-1m) rw=read bs=1M sync= ;;
			write-fsync) ;;
			*) echo "unknown workload $wl"; exit 1 ;;
			esac
			writeback_off
			sync
			hostname "$wl-$v-$rep"		# opens the window
			fio --name=lab --filename=$F --rw=$rw --bs=$bs \
				--size=${SIZE}M --ioengine=$engine --iodepth=1 \
				--direct=0 --fallocate=none --invalidate=0 \
				$sync --output-format=json > /tmp/fio.json
			rc=$?
			hostname lab			# closes it
			[ $rc -eq 0 ] || { echo "$wl $v: fio failed"; exit 1; }
			ios=$(python3 -c 'import json,sys
s = open(sys.argv[1]).read()	# fio may print notes first
j = json.loads(s[s.index("{"):])["jobs"][0]
print(j["read"]["total_ios"] + j["write"]["total_ios"])' \
				/tmp/fio.json)
			echo "$wl $v $rep $ios" >> $OUT/windows.txt
			say "insns: $wl $v rep $rep/$REPS done"
			umount $MNT || exit 1
			writeback_on
		done
	done
done
echo ok > $OUT/done
