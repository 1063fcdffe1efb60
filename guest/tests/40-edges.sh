#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Large folio edge cases (guest/edges.py): writes straddling folio and
# block boundaries at every alignment, truncate and fallocate inside dirty
# large folios, writeback of folios whose blocks span node blocks,
# writeback in runs of blocks under a bio size cap and with block by
# block allocation, of new files' blocks in runs (with holes, after
# written blocks), with checkpoint disabled (checkpointed blocks never
# in place), the read extent cache after writeback (direct reads),
# reads of sparse files (runs of holes, defragmentation),
# O_DIRECT beside cached dirty folios, foreground and background GC of
# files with cached folios (plain, fs-verity, encrypted; and of folios
# dirtied through a mapping, which GC must write-protect; and of a folio
# whose blocks lie apart, another process waiting on its writeback with
# it locked, which GC must not wait for with its write held), a buffered
# overwrite with GC due, short and failed writes at EOF (plain,
# inline, pinned, encrypted, compressed, quota-charged files), fs-verity
# enabled over cached folios and
# corrupted blocks failing, mmap stores racing with truncation, one write
# fault per folio through a mapping at a 2 MiB boundary, write faults on
# a full filesystem and with GC due, a block dirtied in a folio whose
# dirty blocks were punched flushed before a background checkpoint
# (data_flush),
# a folio whose last dirty block is punched out or moved by GC left clean,
# reads racing collapse and insert
# range, MADV_COLLAPSE into PMD-sized folios (plain, atomic, fs-verity,
# encrypted), a truncate into a large folio with a read error on another
# of its blocks, a read error failing only the blocks of its bio (plain,
# encrypted, fs-verity) and keeping GC from moving only its block, blocks
# moved between cached files (F2FS_IOC_MOVE_RANGE),
# atomic writes over cached large folios (commit and abort, partial blocks
# read from the COW inode or the file, a truncate and reads inside the
# transaction, lookups in it failing, GC of staged blocks, a page pinned
# across the start, fallocate() and swapon refused during one, SEEK_DATA
# and SEEK_HOLE seeing its writes, a commit failing on an earlier write
# error before it moves a block),
# inline data converted, the files that keep order-0
# folios (pinned, swap, compressed, quota) and a file's switch to them,
# an active swap file kept pinned against an unpin and GC,
# the blocks compressed files release and reserve charged to their quota,
# writes that reach the block quota or fill the filesystem part way, and
# reclaim under memory pressure.  xfs is the control.
. /tmp/lab-repo/guest/lib.sh

# One Python process imports edges.py (compiled once, into /tmp: the repo
# is read-only here) and forks a child per case of a filesystem: under
# TCG, Python's start and the compile took 2 to 3 s of each of some 180
# cases.
EDGES="import sys, edges; sys.exit(edges.main())"
export PYTHONPYCACHEPREFIX=/tmp/lab-pycache

# edges_one NAME FS OPTS ORDER CASES [FOLIOS] [POLICY]: the cases on a fresh
# filesystem, in a directory encrypted with POLICY (lib.sh) if given; the
# cases' output in $OUT/NAME.edges.log.
edges_one() {
	local name=$1 fs=$2 opts=$3 order=$4 cases=$5 folios=${6:-} pol=${7:-}
	local c dir=$MNT log=$OUT/$1.edges.log
	mkfs_fs "$fs" $DEV && mount_fs "$fs" $DEV $MNT "$opts" "$order" || {
		result FAIL "$name" "mkfs/mount failed"; return; }
	if [ -n "$pol" ]; then
		dir=$MNT/enc
		crypt_setup "$name" $pol || return
	fi
	# shellcheck disable=SC2086	# $cases: one word per case
	EDGES_FOLIOS=$folios EDGES_KEY=/tmp/fbe-key-$pol \
		PYTHONPATH=$REPO/guest /usr/bin/python3 -c "$EDGES" $cases $dir \
		2>&1 | tee "$log" | while IFS= read -r line; do
		case $line in "edges-case PASS "*|"edges-case FAIL "*) ;;
		*) continue ;; esac
		read -r _ verdict c secs detail <<< "$line"
		result "$verdict" "$name-$c" "$detail ($secs s)"
	done
	for c in $cases; do
		grep -q "^edges-case [A-Z]* $c " "$log" ||
			result FAIL "$name-$c" "edges.py ended before it: $(
				tail -1 "$log")"
	done
	umount_fsck "$name" "$fs"
}

ALL="straddle truncate punch punch-eof dio gc gc-mark gc-mapped gc-relock
	gc-bios submit-trace fsync-eagain fsync-eagain-ipu overwrite-gc
	short-write-eof inline-short-write pin-short-write
	mmap mkwrite mmap-whole mmap-punch
	dirty-count dirty-none dnode-span runs new-runs read-cap cp-disable
	extent collapse-race partial-read holes move-range move-range-race
	thp-collapse
	atomic atomic-cow atomic-truncate atomic-read atomic-gc atomic-pin
	atomic-falloc atomic-seek atomic-commit-eio inline pin swap swap-pin
	atomic-swap pressure enospc"
# The short form (CI) leaves out of the order-0 control (4k) the cases
# whose subject is large folios' writeback in runs, GC and reclaim, and
# of the encrypted files reclaim, the slowest of them (the full form runs
# them all): order-0 folios take 7.3's paths there.
LONG_4K="gc gc-mark gc-mapped gc-relock gc-bios fsync-eagain fsync-eagain-ipu
	overwrite-gc mmap-whole
	dirty-count dirty-none dnode-span runs new-runs cp-disable extent
	collapse-race partial-read holes atomic-truncate atomic-gc pressure"
CRYPT_LONG=$(full_form && echo pressure)

# without "LIST" WORD...: LIST less the WORDs.
without() {
	local w out= list=$1
	shift
	for w in $list; do
		case " $* " in *" $w "*) ;; *) out="$out $w" ;; esac
	done
	echo $out
}

for v in $(f2fs_variants); do
	cases=$ALL
	short_only $v && cases=$(without "$ALL" $LONG_4K)
	edges_one "edges-f2fs-$v" f2fs "" "$(variant_order $v)" "$cases" \
		"$(variant_folios $v)"
	short_only $v && continue	# lib.sh: full_form
	# mode=lfs changes where blocks go (no SSR, no in-place updates, GC;
	# direct writes move the blocks they overwrite);
	# the short form leaves out the cases of the fault and read side,
	# and atomic-truncate (staged blocks go out of place in every mode).
	LFS="straddle truncate punch gc gc-mark dnode-span runs new-runs
		submit-trace fsync-eagain cp-disable extent atomic atomic-cow
		atomic-gc pin swap dio short-write-eof inline-short-write"
	full_form && LFS="$LFS mmap mkwrite dirty-count collapse-race
		partial-read atomic-pin inline atomic-truncate"
	edges_one "edges-f2fs-lfs-$v" f2fs "mode=lfs" "$(variant_order $v)" \
		"$LFS" "$(variant_folios $v)"
	# Block by block allocation: writeback places blocks one by one.
	edges_one "edges-f2fs-oneby-$v" f2fs \
		"mode=fragment:block,age_extent_cache" "$(variant_order $v)" \
		"runs new-runs dnode-span straddle gc" "$(variant_folios $v)"
	# Files that keep order-0 folios: compressed ones, and the quota files
	# (fsck checks them against the files the cases wrote).
	edges_one "edges-f2fs-compress-$v" f2fs-compress "" \
		"$(variant_order $v)" "compress compress-short-write" \
		"$(variant_folios $v)"
	edges_one "edges-f2fs-quota-$v" f2fs-quota \
		"usrquota,grpquota,prjquota" "$(variant_order $v)" \
		"quota quota-limit straddle truncate punch dio gc
		short-write-eof" \
		"$(variant_folios $v)"
	# Compressed files under quota: the blocks their release and reserve
	# ioctls move must be charged.
	edges_one "edges-f2fs-compress-quota-$v" f2fs-compress-quota \
		"usrquota,grpquota,prjquota" "$(variant_order $v)" \
		"compress compress-quota" "$(variant_folios $v)"
	# f2fs moves the blocks of verity files through META_MAPPING.
	edges_one "edges-f2fs-verity-$v" f2fs-verity "" "$(variant_order $v)" \
		"verity-gc verity-read verity-corrupt verity-eof verity-collapse
		verity-tree-collapse verity-read-cap" \
		"$(variant_folios $v)"
	# Encrypted files (collapse and insert range refuse them); the
	# partial block reads of writes must be decrypted, GC moves their
	# blocks through META_MAPPING.
	edges_one "edges-f2fs-crypt-$v" f2fs-crypt inlinecrypt \
		"$(variant_order $v)" "crypt-wrap crypt-gc straddle truncate punch
		punch-eof short-write-eof dio mmap mkwrite mmap-whole mmap-punch
		dirty-count dnode-span runs new-runs read-cap submit-trace
		fsync-eagain fsync-eagain-ipu cp-disable extent partial-read holes
		atomic atomic-cow atomic-truncate atomic-read atomic-gc atomic-pin
		atomic-falloc atomic-seek atomic-commit-eio thp-collapse enospc $CRYPT_LONG" \
		"$(variant_folios $v)" v2-iv32
done
# A write fault with GC due (edges.py mkwrite-gc) on a filesystem of its
# own, without background GC, which would collect its victims first, or
# with the GC thread doing foreground GC too (gc_merge).
for v in $(special_variants); do
	edges_one "edges-f2fs-mkwrite-gc-$v" f2fs background_gc=off \
		"$(variant_order $v)" mkwrite-gc "$(variant_folios $v)"
	edges_one "edges-f2fs-lfs-mkwrite-gc-$v" f2fs mode=lfs,background_gc=off \
		"$(variant_order $v)" mkwrite-gc "$(variant_folios $v)"
	edges_one "edges-f2fs-gcmerge-mkwrite-gc-$v" f2fs gc_merge \
		"$(variant_order $v)" mkwrite-gc "$(variant_folios $v)"
	edges_one "edges-f2fs-crypt-mkwrite-gc-$v" f2fs-crypt \
		inlinecrypt,background_gc=off "$(variant_order $v)" mkwrite-gc \
		"$(variant_folios $v)" v2-iv32
done
# Foreground GC that finds no victim but an active swap file's section
# (edges.py swap-gc), on a filesystem of its own: it collects every other
# dirty section first.
for v in $(special_variants); do
	edges_one "edges-f2fs-swap-gc-$v" f2fs "" "$(variant_order $v)" \
		swap-gc "$(variant_folios $v)"
done
# An atomic commit whose sync fails after its blocks moved (edges.py
# atomic-commit-sync-eio) stops checkpoints: on a filesystem of its own,
# mounted again by the case; no background GC, whose writes would meet
# the injected write errors too.  Plain, and encrypted as on Android.
for v in $(special_variants); do
	edges_one "edges-f2fs-syncfail-$v" f2fs background_gc=off \
		"$(variant_order $v)" atomic-commit-sync-eio "$(variant_folios $v)"
	edges_one "edges-f2fs-crypt-syncfail-$v" f2fs-crypt \
		inlinecrypt,background_gc=off "$(variant_order $v)" \
		atomic-commit-sync-eio "$(variant_folios $v)" v2-iv32
done
# data_flush writes dirty files back before a background checkpoint
# (edges.py data-flush); nodiscard, as queued discards count as I/O in
# flight, which puts the checkpoint off.
for v in $(special_variants); do
	edges_one "edges-f2fs-dflush-$v" f2fs data_flush,nodiscard \
		"$(variant_order $v)" data-flush "$(variant_folios $v)"
	edges_one "edges-f2fs-crypt-dflush-$v" f2fs-crypt \
		data_flush,nodiscard,inlinecrypt "$(variant_order $v)" \
		data-flush "$(variant_folios $v)" v2-iv32
done
# Lookups of an atomic file's blocks failing to read a dnode (edges.py
# atomic-lookup-error), and a write of an atomic write failing to reserve
# a block (atomic-enospc), through f2fs's fault injection: noextent_cache,
# so that lookups read the dnodes, and no background GC, whose node reads
# and allocations would meet the faults too; plain, and encrypted as on
# Android's /data.
for v in $(special_variants); do
	edges_one "edges-f2fs-noext-$v" f2fs noextent_cache,background_gc=off \
		"$(variant_order $v)" "atomic-lookup-error atomic-enospc" \
		"$(variant_folios $v)"
	edges_one "edges-f2fs-crypt-noext-$v" f2fs-crypt \
		noextent_cache,background_gc=off,inlinecrypt \
		"$(variant_order $v)" "atomic-lookup-error atomic-enospc" \
		"$(variant_folios $v)" v2-iv32
done
# fsync_mode=strict zeroes the block at EOF and writes it back before a
# file grows (edges.py atomic-grow); an atomic file's is the
# transaction's.  atomic-truncate grows files in their transaction too.
for v in $(special_variants); do
	edges_one "edges-f2fs-strict-$v" f2fs fsync_mode=strict \
		"$(variant_order $v)" "atomic-grow atomic atomic-truncate" \
		"$(variant_folios $v)"
	edges_one "edges-f2fs-crypt-strict-$v" f2fs-crypt \
		fsync_mode=strict,inlinecrypt "$(variant_order $v)" atomic-grow \
		"$(variant_folios $v)" v2-iv32
done
# A read error on one disk block (device mapper's error target, loaded
# by edges.py into a linear device over $DEV): zeroing the block at a new
# EOF reads that block only (zero-eio); the error fails the reads of the
# blocks in its bio only, also in a large folio read by several bios
# (read-eio, plain, encrypted and fs-verity), also under an atomic
# write, on a staged block and on one of the file's own (atomic-read-eio,
# plain and encrypted); GC moves the other blocks of
# a folio that error left not uptodate (gc-eio).  Without the background
# GC thread, which could move the file's blocks between the cases' look
# at where they are and the error target's load.
# (No udev in the guest: dmsetup neither waits for it nor makes
# /dev/mapper nodes; devtmpfs makes /dev/dm-N.)
# eio_one NAME FS OPTS VARIANT CASES [POLICY]: edges_one on the device.
eio_one() {
	dmsetup create --noudevsync lf-eio \
		--table "0 $(blockdev --getsz $DEV) linear $DEV 0" ||
		{ result FAIL "$1" "dmsetup create failed"; return; }
	EDGES_DM=lf-eio \
	DEV=/dev/$(dmsetup info -c --noheadings -o blkdevname lf-eio) \
		edges_one "$1" "$2" "$3" "$(variant_order $4)" "$5" \
		"$(variant_folios $4)" ${6:-}
	dmsetup remove --noudevsync lf-eio ||
		result FAIL "$1-remove" "dmsetup remove failed"
}
for v in $(special_variants); do
	eio_one "edges-f2fs-eio-$v" f2fs background_gc=off $v \
		"zero-eio read-eio gc-eio atomic-read-eio"
	eio_one "edges-f2fs-crypt-eio-$v" f2fs-crypt inlinecrypt,background_gc=off \
		$v "read-eio atomic-read-eio" v2-iv32
	eio_one "edges-f2fs-verity-eio-$v" f2fs-verity background_gc=off $v \
		verity-read-eio
done
long_controls && edges_one edges-xfs xfs "" "" \
	"straddle truncate punch dio mmap collapse-race pressure"

# the end: run-tests.sh fails a test that exits any other way
exit 0
