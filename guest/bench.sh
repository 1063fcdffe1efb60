#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of ./lab bench: the fio matrix of seed 003 (psync, iodepth 1,
# one job), scaled to a TCG guest.  Every configuration runs on the same brd
# device in the same boot, interleaved: for each repetition, for each cell,
# every filesystem in turn.  Rows go to $OUT/rows.jsonl, one per fio run.
#
# Workloads: read-hole (sparse file), read-data (written file), cold cache;
# write-new (file created by the write) and overwrite (file written and
# synced first), each in three modes:
#   cache      writeback held off, no fsync: page cache cost only
#   writeback  end_fsync: the time includes writing everything back
#   fsync      fsync after every write, writeback held off
# and overwrite also in a fourth:
#   fdatasync  fdatasync after every write, writeback held off: SQLite's
#              sync on Linux, for which f2fs updates blocks in place also
#              under a phone's IPU_FSYNC policy (fsync does so only for a
#              few dirty blocks, min_fsync_blocks)
# rand-overwrite: 4 KiB random writes into a file cached by a read, in the
# same three modes; rand-overwrite-cold: the same writes, fsync after each,
# into the written file not cached, so every filesystem writes them into
# order-0 folios (only when asked for: against rand-overwrite it shows
# what a 4 KiB write into a large folio costs each filesystem); frag-read
# (read-data) and frag-write (write-new, cache mode) at 1M with free
# memory fragmented into single pages (guest/frag.c), and full-read and
# full-write the same with the page cache filled first (full_on), all four
# recording how much of the file the page cache holds in large folios
# (only when asked for: how well frag fragments still varies from run to
# run, and full is an mm question more than f2fs's);
# and, on f2fs only, atomic-tx: SQLite-style atomic write transactions
# (guest/opbench.c: start, four 4 KiB page writes, for bs 64k also a 64 KiB
# write, commit) on a file cached by a read first, in transactions per
# second.
# smallfiles: fs_mark-like create, write 4 KiB or 64 KiB, fsync, close,
# unlink the file 64 files back (guest/opbench.c), one file per 64 KiB of
# the size, in files per second.
# precache, on f2fs only: F2FS_IOC_PRECACHE_EXTENTS on a file of one-block
# extents (a quarter of the size), 32 calls with cold caches, in calls per
# second.
# mmap-write: writes through a shared mapping (fio's mmap engine) into a
# written file, cold cache: read faults, then write faults, per block.
# writers4: four writers at once, each writing a new file of a quarter of
# the size, with writeback (end_fsync: the four write back together) or
# fsync after every write.
# Where the kernel has tracepoints (the test kernel), each row also counts
# the write bios sent to the device by size (block:block_bio_queue): do
# concurrent writers split each other's bios?
. /tmp/lab-repo/guest/lib.sh

SIZE=$(( ${LAB_SIZE_MIB:-128} * 1024 * 1024 ))
FILE_BYTES=$SIZE
REPS=${LAB_REPS:-3}
BSS=${LAB_BS:-4k,64k,1M}
FSS=${LAB_FS:-f2fs-4k,f2fs-lf,f2fs-crypt-4k,f2fs-crypt-lf,ext4,xfs,tmpfs}
ALL_WLS=read-hole,read-data,write-new,overwrite,rand-overwrite,mmap-write
ALL_WLS=$ALL_WLS,writers4,atomic-tx,smallfiles,precache
WLS=${LAB_WORKLOADS:-$ALL_WLS}
RUNTIME=${LAB_RUNTIME:-20}
CLOCK=${LAB_CLOCK:-wall}
ROWS=$OUT/rows.jsonl
: > "$ROWS"
probe_knob

# biohist_on: trace the bios queued to $DEV, if this kernel can.
TRACE=/sys/kernel/tracing
BIOHIST=
biohist_on() {
	BIOHIST=
	[ -d $TRACE/events ] || mount -t tracefs nodev $TRACE 2>/dev/null
	[ -e $TRACE/events/block/block_bio_queue/enable ] || return 0
	echo 0 > $TRACE/tracing_on
	# no task names: enabling the event would patch sched_wakeup's
	# static keys too, under timer interrupts (edges.py write_bios())
	echo 0 > $TRACE/options/record-cmd
	echo 16384 > $TRACE/buffer_size_kb
	echo > $TRACE/trace
	echo 1 > $TRACE/events/block/block_bio_queue/enable
	echo 1 > $TRACE/tracing_on
	BIOHIST=1
}

# biohist_off: stop tracing; print the write bios to $DEV as JSON, by size
# rounded up to a power of two KiB, each with the number of bios and their
# 512-byte sectors: {"4": [n, sectors], "8": [n, sectors], ...}; null if
# events were lost.
biohist_off() {
	[ -n "$BIOHIST" ] || { echo null; return; }
	echo 0 > $TRACE/tracing_on
	echo 0 > $TRACE/events/block/block_bio_queue/enable
	if grep -h '^overrun:' $TRACE/per_cpu/cpu*/stats | grep -qv ' 0$'; then
		echo "biohist: trace buffer overran, histogram dropped" >&2
		echo null
		return
	fi
	local dev
	dev=$(printf '%d,%d' 0x$(stat -L -c %t $DEV) 0x$(stat -L -c %T $DEV))
	awk -v dev=$dev '{
		for (i = 1; i < NF; i++) if ($i == "block_bio_queue:") break
		if ($(i + 1) != dev || $(i + 2) !~ /W/ || $(i + 5) == 0) next
		kib = $(i + 5) / 2; b = 4
		while (b < kib) b *= 2
		n[b]++; sec[b] += $(i + 5)
	} END {
		printf "{"; sep = ""
		for (b in n) {
			printf "%s\"%d\": [%d, %d]", sep, b, n[b], sec[b]
			sep = ", "
		}
		print "}"
	}' $TRACE/trace
	echo > $TRACE/trace
}

# Without the series the only large folio rows upstream f2fs can give
# are reads of immutable files.
upstream_lf() {
	case $1 in
	f2fs-lf|f2fs-crypt-lf) [ -z "${LAB_HAS_KNOB:-}" ] ;;
	*) false ;;
	esac
}

# one FS WORKLOAD BS MODE REP: one fio run, one row.
one() {
	local fs=$1 wl=$2 bs=$3 mode=$4 rep=$5 rw=write extra="" f pct=null
	local engine=psync size=$SIZE files bios
	case $wl in
	read-*|frag-read|full-read) rw=read ;;
	rand-*) rw=randwrite ;;
	esac
	if upstream_lf "$fs" && [ $rw = write ]; then
		return 0
	fi
	case $wl,$fs in
	atomic-tx,f2fs-*|precache,f2fs-*) ;;
	atomic-tx,*|precache,*) return 0 ;;
	esac
	fs_up "$fs" || { echo "fs_up $fs failed" >&2; return 1; }
	f=$(dir_of "$fs")/f
	case $wl in
	read-hole) truncate -s $SIZE $f ;;
	read-data|overwrite|rand-overwrite*|mmap-write|atomic-tx|frag-read|\
	full-read)
		xfs_io -f -c "pwrite -q -b 1m 0 $SIZE" -c fsync $f ;;
	esac
	if upstream_lf "$fs"; then
		chattr +i $f || return 1
	fi
	cold "$fs" || return 1
	# Small random writes into a file cached by a read, so in large folios
	# where the filesystem uses them: each dirties a block of a big folio.
	# So are the pages SQLite commits in atomic write transactions.
	case $wl in rand-overwrite|atomic-tx) cat $f > /dev/null ;; esac
	case $wl in
	frag-*) frag_on || { umount $MNT; return 1; } ;;
	full-*) full_on || { umount $MNT; return 1; } ;;
	esac
	case $mode in
	writeback) writeback_on; extra="--end_fsync=1" ;;
	commit) writeback_on ;;		# the commit syncs
	fsync) writeback_off; extra="--fsync=1" ;;
	fdatasync) writeback_off; extra="--fdatasync=1" ;;
	*) writeback_off ;;
	esac
	files="--filename=$f"
	case $wl in
	mmap-write) engine=mmap ;;
	writers4) size=$(( SIZE / 4 )) files="--numjobs=4 --group_reporting
		--directory=$(dir_of "$fs") --filename_format=w.\$jobnum" ;;
	esac
	# precache writes only while it sets up: no bios to count
	case $wl in precache) BIOHIST= ;; *) biohist_on ;; esac
	case $wl in
	atomic-tx) opbench atomic $f $bs $RUNTIME ;;
	smallfiles) opbench smallfiles $(dir_of "$fs") $bs $(( SIZE >> 16 )) \
		$RUNTIME ;;
	precache) opbench precache $(dir_of "$fs") $(( SIZE >> 14 )) 32 \
		$RUNTIME ;;
	*) fio --name=lab $files --rw=$rw --bs=$bs --size=$size \
		--ioengine=$engine --iodepth=1 --direct=0 \
		--fallocate=none --invalidate=0 --runtime=$RUNTIME \
		--output-format=json $extra ;;
	esac > /tmp/fio.json 2>/tmp/fio.err
	local rc=$?
	bios=$(biohist_off)
	case $wl in frag-*|full-*)
		[ $rc -eq 0 ] && pct=$(lf_pct $f)
		frag_off
		full_off
		[ -n "$pct" ] || pct=null ;;
	esac
	umount $MNT
	writeback_on
	if [ $rc -ne 0 ]; then
		echo "$wl failed: $(tail -2 /tmp/fio.err)" >&2
		return 1
	fi
	# One line per run; bench/report.py reads fio's JSON on the host.
	local json=$OUT/fio-$fs-$wl-$bs-$mode-$rep.json
	mv /tmp/fio.json "$json"
	printf '{"config": "%s", "workload": "%s", "bs": "%s", "mode": "%s", ' \
		"$fs" "$wl" "$bs" "$mode" >> "$ROWS"
	printf '"rep": %d, "rw": "%s", "clock": "%s", "fio": "%s", ' \
		"$rep" "$rw" "$CLOCK" "$(basename "$json")" >> "$ROWS"
	printf '"lf_pct": %s, "bios": %s}\n' "$pct" "$bios" >> "$ROWS"
}

cells=()
for wl in ${WLS//,/ }; do
	case $wl in
	read-*|frag-read|full-read) modes="cold" ;;
	frag-write|full-write) modes="cache" ;;
	rand-overwrite-cold) modes="fsync" ;;
	mmap-write) modes="cache writeback" ;;
	writers4) modes="writeback fsync" ;;
	atomic-tx) modes="commit" ;;
	smallfiles) modes="fsync" ;;
	precache) modes="cold" ;;
	overwrite) modes="cache writeback fsync fdatasync" ;;
	*) modes="cache writeback fsync" ;;
	esac
	# The quick form (CI) proves the bench runs: one write mode will do.
	[ -n "${LAB_QUICK:-}" ] && case $modes in *writeback*) modes=writeback ;; esac
	# Random overwrites are 4 KiB: the cost of a small write into a large
	# cached folio.  Transactions write 4 KiB pages, and 64 KiB with bs 64k.
	bss=$BSS
	case $wl in
	rand-*|precache) bss=4k ;;
	frag-*|full-*) bss=1M ;;
	atomic-tx|smallfiles) bss=$(echo ${BSS//,/ } | tr ' ' '\n' |
		grep -xE '4k|64k' | paste -sd,) ;;
	esac
	for mode in $modes; do
		for bs in ${bss//,/ }; do
			cells+=("$wl $bs $mode")
		done
	done
done
# Preflight: every configuration must come up before hours are spent.
for fs in ${FSS//,/ }; do
	fs_up "$fs" > /tmp/preflight.log 2>&1 && umount $MNT || {
		say "FAILED: cannot set up $fs: $(grep -v '^$' /tmp/preflight.log | tail -1)"
		exit 1
	}
done
total=$(( REPS * ${#cells[@]} ))
say "bench ($CLOCK clock): ${#cells[@]} cells x $REPS reps x {${FSS}}," \
	"$(( SIZE >> 20 )) MiB"
t0=$(date +%s)
n=0
fail=0
for rep in $(seq 1 $REPS); do
	for cell in "${cells[@]}"; do
		set -- $cell
		for fs in ${FSS//,/ }; do
			one "$fs" "$1" "$2" "$3" "$rep" || {
				fail=1; say "FAILED: $fs $cell rep $rep"
				umount $MNT 2>/dev/null; }
		done
		n=$(( n + 1 ))
		el=$(( $(date +%s) - t0 ))
		say "rep $rep/$REPS cell $n/$total ($cell) ${el}s," \
			"eta $(( el * (total - n) / n ))s"
	done
done
[ $fail -eq 0 ] && touch "$OUT/done"
