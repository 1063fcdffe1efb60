#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ftrace's function profiler over f2fs's writeback of large and of order-0
# folios (./lab profile; the prof kernel).  For each variant (f2fs-4k:
# nolargefolio, f2fs-lf), on a fresh filesystem: a new file of LAB_SIZE_MIB
# written with 1 MiB writes and then written back by sync, the sync alone
# profiled (writeback); and the same writes each followed by fsync, all
# profiled (fsync); and the written-back file overwritten with 1 MiB writes,
# then written back by sync, the sync profiled, with f2fs's in-place update
# policy set to IPU_FSYNC, so that writeback writes the blocks out of place
# as on a phone's /data, not in place as the policy of this small volume
# would (overwrite).  Then the bench's frag cells: with free memory in
# single pages (frag_on, lib.sh), the fsync'd file read with 1 MiB reads
# (frag-read) and a new file written with 1 MiB writes, held in the cache
# (frag-write), each run profiled, with the page allocator's slow paths in
# FILTER: where a large folio that cannot be had costs its time; the
# writeback_start tracepoint says why writeback, held off, starts during
# frag-write all the same.  The profiler counts the calls of the functions
# in FILTER and, with the graph tracer, their time including children;
# bench/profile.py makes the tables.
. /tmp/lab-repo/guest/lib.sh
set -u
SIZE=${LAB_SIZE_MIB:-64}
T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs none $T
[ -e $T/function_profile_enabled ] || {
	echo "no function profiler in this kernel (the prof flavour has it)"
	exit 1; }
FILTER='f2fs_* __f2fs_* do_write_page set_summary __get_segment_type
__submit_merged_bio __bio_alloc bio_add_folio _raw_spin_lock*
down_read_trylock down_write up_read up_write __folio_start_writeback
folio_end_writeback* filemap_get_folios_tag writeback_iter
folio_clear_dirty_for_io __folio_mark_dirty balance_dirty_pages*
update_sit_entry locate_dirty_segment __mark_sit_entry_dirty
__insert_extent_tree __update_extent_tree_range __try_merge_extent_node
page_cache_ra_* page_cache_sync_ra page_cache_async_ra read_pages
do_page_cache_ra ra_alloc_folio filemap_alloc_folio* __filemap_get_folio*
filemap_add_folio __alloc_frozen_pages* __alloc_pages_slowpath
__alloc_pages_direct_* get_page_from_freelist try_to_compact_pages
compact_zone* try_to_free_pages shrink_node wakeup_kswapd migrate_pages'
# a static function the compiler inlined has no entry: skipped
for f in $FILTER; do echo "$f" >> $T/set_ftrace_filter 2> /dev/null; done
echo "$(wc -l < $T/set_ftrace_filter) functions profiled" > $OUT/filter.txt

profile() {	# profile FILE CMD...: profile CMD, stats to FILE
	echo 0 > $T/function_profile_enabled
	echo 1 > $T/function_profile_enabled	# resets the counts
	"${@:2}"
	echo 0 > $T/function_profile_enabled
	cat $T/trace_stat/function* > "$1"
}

write() {	# write FILE FIO-OPTIONS...
	fio --name=w --filename="$1" --rw=write --bs=1M --size=${SIZE}M \
		--ioengine=psync --output=/dev/null "${@:2}"
}

for v in 4k lf; do
	mkfs_fs f2fs $DEV && mount_fs f2fs $DEV $MNT "" "$(variant_order $v)" || {
		echo "f2fs-$v: mkfs/mount failed"; exit 1; }
	say "profile f2fs-$v: writeback of $SIZE MiB"
	sync
	# held off while the file is written: the sync writes it all back
	writeback_off
	write $MNT/wb || exit 1
	profile $OUT/f2fs-$v-writeback.txt sync
	say "profile f2fs-$v: overwrite of $SIZE MiB, written back out of place"
	old=$(cat /sys/fs/f2fs/$(basename $DEV)/ipu_policy)
	ipu_policy $(( 1 << 4 )) || exit 1	# BIT(F2FS_IPU_FSYNC)
	write $MNT/wb || exit 1
	profile $OUT/f2fs-$v-overwrite.txt sync
	ipu_policy "$old" || exit 1
	writeback_on
	say "profile f2fs-$v: $SIZE MiB of fsync'd 1 MiB writes"
	profile $OUT/f2fs-$v-fsync.txt write $MNT/fsync --fsync=1 || exit 1
	folio-stat $MNT/fsync > $OUT/f2fs-$v-folios.txt
	say "profile f2fs-$v: $SIZE MiB read, free memory fragmented"
	frag_on || exit 1
	cat /proc/buddyinfo > $OUT/f2fs-$v-frag-buddyinfo.txt
	profile $OUT/f2fs-$v-frag-read.txt fio --name=r --filename=$MNT/fsync \
		--rw=read --bs=1M --ioengine=psync --output=/dev/null || exit 1
	lf_pct $MNT/fsync > $OUT/f2fs-$v-frag-read-lf.txt
	frag_off
	say "profile f2fs-$v: $SIZE MiB written, free memory fragmented"
	writeback_off
	frag_on || exit 1
	# and why writeback starts during the run, if it does
	echo > $T/trace
	echo 1 > $T/events/writeback/writeback_start/enable
	profile $OUT/f2fs-$v-frag-write.txt write $MNT/fw || exit 1
	echo 0 > $T/events/writeback/writeback_start/enable
	grep -o 'reason=[a-z_]*' $T/trace | sort | uniq -c \
		> $OUT/f2fs-$v-frag-write-wb.txt
	lf_pct $MNT/fw > $OUT/f2fs-$v-frag-write-lf.txt
	frag_off
	writeback_on
	umount $MNT || exit 1
	fsck_clean $DEV > /tmp/fsck.out || {
		echo "f2fs-$v: fsck: $(head -2 /tmp/fsck.out)"; exit 1; }
done
echo "$SIZE" > $OUT/done
