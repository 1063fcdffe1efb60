# SPDX-License-Identifier: GPL-2.0
# Shared helpers for the guest scripts (sourced, bash).  The guest's root is
# the host's, read-only; scratch space is /tmp, results go to /tmp/lab-out.

OUT=${OUT:-/tmp/lab-out}
BIN=/tmp/lab-bin
REPO=/tmp/lab-repo
MNT=/tmp/mnt
DEV=/dev/ram0
DEV2=/dev/ram1
export PATH=$BIN:/usr/sbin:/sbin:$PATH
mkdir -p "$MNT"

# Say something on the console; the host shows LAB: lines as progress.
# LAB_QUIET (run-tests.sh's self-test) says it on stdout only.
say() {
	[ -z "${LAB_QUIET:-}" ] &&
		echo "LAB: $*" > /dev/console 2>/dev/null || echo "LAB: $*"
}

# A signal that ends the script says so first (the lab's killed_by_signal():
# virtme-ng-init reports an exit code, not a signal).  A signal that cannot
# be caught (SIGKILL) or dumps core (SIGBUS, SIGSEGV) is left to the kernel,
# booted with print-fatal-signals=1.
for _sig in HUP INT PIPE TERM; do
	# shellcheck disable=SC2064	# expanded now, on purpose
	trap "say 'guest script $0 ends on SIG$_sig'; trap - $_sig;
		kill -$_sig \$\$" $_sig
done
unset _sig

# result PASS|FAIL name [detail]
result() {
	echo "$1 $2 ${3:-}" >> "$OUT/results.txt"
	say "$1 $2${3:+: $3}"
}

# Kernel splats since the last `dmesg -C` are failures whatever the test
# itself said.  But for one stack f2fs dumps on purpose: when a write
# error a test injected (FAULT_WRITE_IO) stops checkpoints,
# f2fs_handle_critical_error() dumps the stack of f2fs_stop_checkpoint()
# with no WARNING or BUG line (edges.py atomic-commit-sync-eio).
splat() {
	local re='WARNING:|BUG:|Oops|kernel BUG|general protection'
	re="$re|possible circular|possible recursive|inconsistent lock"
	re="$re|UBSAN|KASAN|INFO: task .* blocked|f2fs_bug_on|Call Trace"
	dmesg | awk -v re="$re" '
	{ l[NR] = $0 }
	END {
		for (i = 1; i <= NR; i++) {
			if (l[i] ~ /F2FS-fs .*: inject write IO error/)
				inj = 1
			if (l[i] !~ re)
				continue
			if (inj && l[i] ~ /Call Trace:/ &&
			    l[i + 2] ~ /dump_stack_lvl/ &&
			    l[i + 3] ~ / f2fs_stop_checkpoint\+/)
				continue
			print l[i]
			if (++n == 3)
				break
		}
	}'
}

# mkfs_fs FS DEV: make a filesystem.  FS is f2fs, ext4, xfs.
mkfs_fs() {
	case $1 in
	f2fs) mkfs.f2fs -q -f "$2" ;;
	f2fs-compress) mkfs.f2fs -q -f -O extra_attr,compression "$2" ;;
	f2fs-compress-quota) mkfs.f2fs -q -f \
		-O extra_attr,compression,quota,project_quota "$2" ;;
	f2fs-crypt) mkfs.f2fs -q -f -O encrypt "$2" ;;
	f2fs-quota) mkfs.f2fs -q -f -O extra_attr,quota,project_quota "$2" ;;
	f2fs-verity) mkfs.f2fs -q -f -O extra_attr,verity "$2" ;;
	ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$2" ;;
	xfs) mkfs.xfs -q -f "$2" ;;
	*) echo "mkfs_fs: unknown fs $1"; return 2 ;;
	esac > /tmp/mkfs.log 2>&1 || { cat /tmp/mkfs.log; return 1; }
}

# mount_fs FS DEV MNT OPTS [ORDER]: mount; ORDER 0 keeps f2fs with the
# series on order-0 folios (mount option nolargefolio), empty leaves the
# default.
mount_fs() {
	local fs=$1 dev=$2 mnt=$3 opts=$4 order=${5:-}
	case $fs in f2fs*) fs=f2fs ;; esac
	[ "$order" = 0 ] && opts="${opts:+$opts,}nolargefolio"
	mount -t "$fs" ${opts:+-o "$opts"} "$dev" "$mnt" || return 1
}

# fsck_clean DEV: a full fsck.f2fs (read-only) must find nothing wrong.
# f2fs-tools 1.15 prints "Info:" notes and "fixing SIT types" on clean
# images too; failed checks say [Fail], repairs [FIX], assertions [ASSERT].
# -f turns fixing on, dry run or not, and then some repairs say neither
# and leave the exit code 0: quota files that do not match the files
# ("Fixing Quota file", after "[ERROR] quotaio_tree.c" lines), dentry
# hash codes ("Fixed hash_codes").  Those count as failures too.
FSCK_BAD='\[Fail\]|\[FIX\]|\[ASSERT\]|\[ERROR\]|Error:|Fixing|Fixed|BUG'
fsck_clean() {
	local log=/tmp/fsck.log
	fsck.f2fs -f --dry-run "$1" > $log 2>&1
	local rc=$?
	if [ $rc -ne 0 ] || grep -qE "$FSCK_BAD" $log; then
		echo "fsck.f2fs -f $1 exit $rc:"
		grep -E "$FSCK_BAD" $log | head -20
		return 1
	fi
}

# fsck_ok NAME: fsck $DEV (f2fs, unmounted); damage is NAME's FAIL result,
# with fsck's first lines, and the status.
fsck_ok() {
	fsck_clean $DEV > /tmp/fsck.out && return 0
	result FAIL "$1" "fsck: $(head -2 /tmp/fsck.out | tr '\n' ' ')"
	return 1
}

# umount_fsck NAME FS: unmount $MNT and, for f2fs, fsck $DEV; a failure of
# either is NAME's (or NAME-fsck's) FAIL result, and the status.
umount_fsck() {
	umount $MNT || { result FAIL "$1" "umount failed"; return 1; }
	case $2 in
	f2fs*) fsck_ok "$1-fsck" || return 1 ;;
	esac
}

# F2FS variants to run: with the series both folio sizes (4k = order 0,
# lf = default) or the one LAB_FOLIOS names, without it the one upstream
# behaviour.
f2fs_variants() {
	if [ -z "${LAB_HAS_KNOB:-}" ]; then
		echo upstream
	else
		case ${LAB_FOLIOS:-} in 4k|lf) echo "$LAB_FOLIOS" ;; *) echo "4k lf" ;; esac
	fi
}
# ipu_policy [POLICY]: set the in-place update policy of the f2fs on $DEV
# (a bitmap of F2FS_IPU_*; a mount picks its own) to POLICY, and check it
# took; nothing when POLICY is empty.
ipu_policy() {
	[ -n "${1:-}" ] || return 0
	local f=/sys/fs/f2fs/$(basename $DEV)/ipu_policy
	echo "$1" > $f && [ "$(cat $f)" = "$1" ] || {
		echo "cannot set ipu_policy $1 in $f" >&2
		return 1
	}
}

variant_order() { case $1 in 4k) echo 0 ;; *) echo "" ;; esac; }
# Folio sizes a writable file gets in a variant: large only with the series.
variant_folios() { case $1 in lf) echo large ;; *) echo small ;; esac; }

# Background writeback as the kernel's defaults have it, or held off so that
# only the fsync, sync or end of a run writes the data back.
writeback_on() {
	sysctl -q vm.dirty_writeback_centisecs=500 vm.dirty_expire_centisecs=3000 \
		vm.dirty_background_ratio=10 vm.dirty_ratio=20
}
writeback_off() {
	sysctl -q vm.dirty_writeback_centisecs=0 vm.dirty_expire_centisecs=360000 \
		vm.dirty_background_ratio=90 vm.dirty_ratio=90
}

# drop_caches: drop the page cache, then read fio back in.  fio's parent
# waits 10 s for a job it forks to start ("fio: job startup hung?
# exiting.").  The guest's root is the host's, over 9p: after a drop the
# job faults fio's text back in from the host, and under -icount
# shift=0,sleep=off the guest clock jumps ahead while the vCPUs wait for
# the host, so on a busy host the job can miss that deadline.  A run on
# /dev/null first brings the code a job runs back into the cache.
# It runs in a session of its own: guests have died of a SIGTERM to the
# script's whole process group right after a cache drop, before the next
# mount (bench and insns runs on v22, exit code 143 under setsid); that
# run is the only program in between.  Should it be the sender, the
# signal stays in its group, and its failure is reported.  A bench guest
# with two others on the two host cores also went silent there for 25
# minutes, its vCPU running; the run has five minutes of guest time.
# On v38's whole matrix, with --parallel 2, that limit still ended the run
# 33 times (exit codes 124 and 137), with and without a third guest beside
# the bench: it gets up to three tries, as what one faulted in stays for
# the next (not for a missing fio, exit code 127); a console line reports
# each failure, and a cell after three.
drop_caches() {
	local try rc
	echo 3 > /proc/sys/vm/drop_caches
	for try in 1 2 3; do
		setsid -w timeout -k 10 300 fio --name=warm --filename=/dev/null \
			--rw=write --bs=4k --size=64k --ioengine=psync \
			> /tmp/warm.log 2>&1 && return 0
		rc=$?
		say "drop_caches: warm-up fio try $try of 3 exited $rc: $(tail -c 300 /tmp/warm.log)"
		[ $rc = 127 ] && break
	done
	say "drop_caches: no warm-up fio finished; the next cell may count fio's page faults over 9p"
	return 0
}

# frag_on: fragment free memory (see guest/frag.c) until frag_off.  The
# caches are dropped and memory compacted first, so every cell starts from
# the same state; compaction may not move the pages frag locks.
FRAG_PID=
frag_on() {
	drop_caches
	echo 1 > /proc/sys/vm/compact_memory
	sysctl -q vm.compact_unevictable_allowed=0
	frag -k "${LAB_FRAG_ORDER:-0}" > /tmp/frag.out 2>&1 &
	FRAG_PID=$!
	local i
	for i in $(seq 600); do
		if grep -q '^frag: ready' /tmp/frag.out; then
			say "$(grep '^frag: ready' /tmp/frag.out)"
			return 0
		fi
		kill -0 $FRAG_PID 2>/dev/null || break
		sleep 0.1
	done
	echo "frag did not get ready: $(tail -1 /tmp/frag.out)" >&2
	frag_off
	return 1
}
frag_off() {
	[ -n "$FRAG_PID" ] && kill $FRAG_PID 2>/dev/null && wait $FRAG_PID 2>/dev/null
	FRAG_PID=
	sysctl -q vm.compact_unevictable_allowed=1
}

# full_on: fill the page cache with clean pages until free memory is down
# to what reclaim keeps free, as on a phone, where the page cache holds
# whatever memory nothing else uses: a sparse file as big as the guest's
# memory on ext4 on $DEV2, read through (ext4 caches it in large folios),
# so that the cell's folios come from reclaim; with LAB_FULL_ORDER0 on f2fs
# mounted nolargefolio instead, in order-0 folios, whose reclaim frees
# single pages.  full_off drops it.
FULL_MNT=/tmp/full
full_on() {
	drop_caches
	mkdir -p $FULL_MNT
	local fs=ext4
	[ -n "${LAB_FULL_ORDER0:-}" ] && fs=f2fs
	mkfs_fs $fs $DEV2 && mount_fs $fs $DEV2 $FULL_MNT "" \
		"${LAB_FULL_ORDER0:+0}" || {
		echo "full: cannot make $fs on $DEV2" >&2; return 1; }
	local kib
	kib=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
	truncate -s ${kib}K $FULL_MNT/fill && cat $FULL_MNT/fill > /dev/null || {
		echo "full: cannot read $FULL_MNT/fill" >&2; full_off; return 1; }
	say "full: $(awk '/^(MemFree|Cached):/ { printf "%s %d MiB, ", $1,
		$2 / 1024 }' /proc/meminfo)free blocks per order: $(awk '
		{ for (i = 5; i <= NF; i++) n[i - 5] += $i }
		END { for (o = 0; o in n; o++) printf "%d ", n[o] }' /proc/buddyinfo)"
}
full_off() {
	umount $FULL_MNT 2> /dev/null
	return 0
}

# lf_pct FILE: percent of FILE's cached pages that are in large folios;
# nothing when none of them is cached (there is no share to give).
lf_pct() {
	folio-stat "$1" |
		awk '/^resident/ && $2 { print int(100 * $7 / $2 + 0.5) }'
}

# The short form (./lab test, CI) runs the order-0 variant (4k) in f2fs's
# default configuration only: the series changes what large folios meet,
# and order-0 folios take the same paths in every configuration.  The full
# form (./lab test --full) and the long form run every configuration with
# both folio sizes.
full_form() { [ "${LAB_FORM:-short}" != short ]; }
# short_only V: whether variant V runs in the default configuration only.
short_only() { [ "$1" = 4k ] && ! full_form; }
# special_variants: the folio variants the cases on filesystems mounted
# with options of their own run (f2fs_variants less the short_only ones).
special_variants() {
	local v
	for v in $(f2fs_variants); do
		short_only $v || echo $v
	done
}

# each_f2fs CMD PREFIX: run `CMD NAME f2fs OPTS ORDER` for every f2fs mode
# (default, lfs, adaptive, or those LAB_MODES names) and folio variant
# (the 4k variant in default mode only in the short form).
each_f2fs() {
	local v mode opts
	for v in $(f2fs_variants); do
		for mode in $(echo "${LAB_MODES:-default,lfs,adaptive}" | tr , ' '); do
			[ $mode = crypt ] && continue	# see has_mode
			short_only $v && [ $mode != default ] && continue
			opts=""
			[ $mode != default ] && opts="mode=$mode"
			"$1" "$2-f2fs-$mode-$v" f2fs "$opts" "$(variant_order "$v")"
		done
	done
}

# Probe once whether this kernel has the series' switch, the f2fs mount
# option nolargefolio (an unpatched kernel refuses it).
probe_knob() {
	mkfs_fs f2fs $DEV >/dev/null && mount -t f2fs $DEV $MNT || return 1
	umount $MNT
	LAB_HAS_KNOB=
	if mount -t f2fs -o nolargefolio $DEV $MNT 2>/dev/null; then
		grep -q "$MNT f2fs .*nolargefolio" /proc/mounts && LAB_HAS_KNOB=1
		umount $MNT
	fi
	export LAB_HAS_KNOB
}

# The configurations of ./lab bench and ./lab insns: f2fs-4k, f2fs-lf,
# f2fs-crypt-4k, f2fs-crypt-lf, ext4, xfs, tmpfs (tmpfs: twice FILE_BYTES,
# the size of a test file, which the sourcing script sets); and for ./lab
# insns on a kernel with the lab's XFS experiment, xfs-4k.
# Their 4k variants need probe_knob first.

# The folio order for configuration NAME: 0 (mount -o nolargefolio) for
# f2fs-4k and f2fs-crypt-4k when the kernel has the series (upstream f2fs
# is 4K for writable files anyway).
order_of() {
	case $1 in *-4k) [ -n "${LAB_HAS_KNOB:-}" ] && echo 0 ;; esac
}

# The f2fs-crypt configurations are Android's /data: mounted with
# inlinecrypt, files in a directory with a v2 policy and IV_INO_LBLK_64
# (blk-crypto-fallback does the crypto in the guest).
CRYPT_POLICY=v2-iv64

# dir_of NAME: where configuration NAME's test file lives.
dir_of() {
	case $1 in f2fs-crypt-*) echo $MNT/enc ;; *) echo $MNT ;; esac
}

# xfs_order0 NAME: XFS in order-0 folios for xfs-4k, in large folios for
# xfs, through the switch the lab's experiment gives XFS (not in the series:
# bench/results/insns-v43-xfs/experiment.diff), which the inodes XFS sets
# up from then on follow.  A kernel without the switch is XFS's own, in
# large folios: xfs-4k fails there.
XFS_ORDER0=/sys/module/xfs/parameters/lab_order0
xfs_order0() {
	if [ "$1" = xfs-4k ]; then
		[ -w $XFS_ORDER0 ] || {
			echo "xfs-4k: no $XFS_ORDER0 in this kernel"; return 1; }
		echo 1 > $XFS_ORDER0
	elif [ -w $XFS_ORDER0 ]; then
		echo 0 > $XFS_ORDER0
	fi
}

# mnt NAME: mount configuration NAME's filesystem at $MNT.
mnt() {
	case $1 in
	tmpfs) mount -t tmpfs -o size=$(( FILE_BYTES * 2 )),huge=always \
		tmpfs $MNT ;;
	f2fs-crypt-*) mount_fs f2fs $DEV $MNT inlinecrypt "$(order_of "$1")" &&
		ipu_policy "${LAB_IPU_POLICY:-}" &&
		crypt_unlock $MNT $CRYPT_POLICY > /dev/null ;;
	f2fs-*) mount_fs f2fs $DEV $MNT "" "$(order_of "$1")" &&
		ipu_policy "${LAB_IPU_POLICY:-}" ;;
	xfs|xfs-4k) xfs_order0 "$1" && mount_fs xfs $DEV $MNT "" "" ;;
	*) mount_fs "$1" $DEV $MNT "" "" ;;
	esac
}

# fs_up NAME: fresh filesystem for configuration NAME on $DEV at $MNT.
fs_up() {
	case $1 in
	tmpfs) ;;
	f2fs-crypt-*) mkfs_fs f2fs-crypt $DEV || return 1 ;;
	f2fs-*) mkfs_fs f2fs $DEV || return 1 ;;
	xfs-4k) mkfs_fs xfs $DEV || return 1 ;;
	*) mkfs_fs "$1" $DEV || return 1 ;;
	esac
	mnt "$1" || return 1
	case $1 in
	f2fs-crypt-*) crypt_dir $MNT $MNT/enc $CRYPT_POLICY ;;
	esac
}

# cold NAME: remount so the next access starts with an empty cache (tmpfs
# has no other copy of its files, so it stays as it is).
cold() {
	[ "$1" = tmpfs ] && return 0
	umount $MNT && drop_caches && mnt "$1"
}

# Whether to run the ext4 and xfs controls (LAB_CONTROLS=0: no); the long
# ones (fx, edges) only in the full and long forms.
controls() { [ "${LAB_CONTROLS:-1}" != 0 ]; }
long_controls() { controls && full_form; }

# File-based encryption as Android sets it up, with xfs_io: a raw key in the
# filesystem's keyring and a policy on an empty directory.  POLICY is v1,
# v2, v2-iv64 (IV_INO_LBLK_64) or v2-iv32 (IV_INO_LBLK_32, the DUN wraps
# around at 2^32 blocks).  Contents go through blk-crypto (the fallback in
# the guest) whether mounted with inlinecrypt or not.
CRYPT_POLICIES=$(echo "${LAB_CRYPT:-v1,v2,v2-iv64,v2-iv32}" | tr , ' ')
V1_DESC=0123456789abcdef

# crypt_unlock MNT POLICY: add the policy's key (again after a mount);
# prints the key identifier (v2) or descriptor (v1).
crypt_unlock() {
	local mnt=$1 pol=$2 out
	# 64 bytes: v1 keys must be as long as the AES-256-XTS key
	printf '%-64.64s' "lab-fbe-key-$pol-0123456789abcdef0123456789abcdef" \
		> /tmp/fbe-key-$pol
	case $pol in
	v1)
		xfs_io -c "add_enckey -d $V1_DESC" "$mnt" < /tmp/fbe-key-$pol \
			> /dev/null || return 1
		echo $V1_DESC ;;
	*)
		out=$(xfs_io -c add_enckey "$mnt" < /tmp/fbe-key-$pol) || return 1
		echo "$out" | grep -oE '[0-9a-f]{32}' ;;
	esac
}

# crypt_dir MNT DIR POLICY: unlock, make DIR and give it the policy.
crypt_dir() {
	local mnt=$1 dir=$2 pol=$3 key flags=0 v=2
	key=$(crypt_unlock "$mnt" "$pol") && [ -n "$key" ] || {
		echo "add_enckey for $pol failed"; return 1; }
	case $pol in
	v1) v=1 ;;
	v2-iv64) flags=8 ;;
	v2-iv32) flags=16 ;;
	esac
	mkdir -p "$dir" &&
	xfs_io -c "set_encpolicy -v $v -f $flags $key" "$dir" || {
		echo "set_encpolicy -v $v -f $flags on $dir failed"; return 1; }
	# the policy must really be in force, with the flags asked for
	local pol
	pol=$(xfs_io -c get_encpolicy "$dir")
	echo "$pol" | grep -qi "flags: 0x0*$(printf %x $flags)\b" || {
		echo "$dir: policy not as set: $(echo "$pol" | tr '\n' ' ')"
		return 1; }
	# and the key must open it
	echo probe > "$dir/.probe" && rm "$dir/.probe" || {
		echo "$dir: cannot create a file with the $pol key"; return 1; }
}

# crypt_setup NAME POLICY: crypt_dir $MNT/enc for test NAME; on failure
# report it, unmount and return 1.
crypt_setup() {
	crypt_dir $MNT $MNT/enc "$2" > /tmp/crypt.out 2>&1 && return
	result FAIL "$1" "$(tail -1 /tmp/crypt.out)"
	umount $MNT
	return 1
}

# has_mode MODE: whether LAB_MODES (default all) selects MODE; "crypt" is
# fx on encrypted files, in default mode.
has_mode() {
	case ",${LAB_MODES:-default,lfs,adaptive,crypt}," in
	*",$1,"*) ;;
	*) false ;;
	esac
}
