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
say() { echo "LAB: $*" > /dev/console 2>/dev/null || echo "LAB: $*"; }

# result PASS|FAIL name [detail]
result() {
	echo "$1 $2 ${3:-}" >> "$OUT/results.txt"
	say "$1 $2${3:+: $3}"
}

# Kernel splats since the last `dmesg -C` are failures whatever the test
# itself said.
splat() {
	dmesg | grep -E 'WARNING:|BUG:|Oops|kernel BUG|general protection|possible circular|possible recursive|inconsistent lock|UBSAN|KASAN|INFO: task .* blocked|f2fs_bug_on|Call Trace' | head -3
}

# Large folio knob of the series; absent on an unpatched kernel.
knob() { echo "/sys/fs/f2fs/$(basename "$DEV")/max_folio_order"; }

# mkfs_fs FS DEV: make a filesystem.  FS is f2fs, ext4, xfs.
mkfs_fs() {
	case $1 in
	f2fs) mkfs.f2fs -q -f "$2" ;;
	f2fs-compress) mkfs.f2fs -q -f -O extra_attr,compression "$2" ;;
	f2fs-crypt) mkfs.f2fs -q -f -O encrypt "$2" ;;
	ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$2" ;;
	xfs) mkfs.xfs -q -f "$2" ;;
	*) echo "mkfs_fs: unknown fs $1"; return 2 ;;
	esac > /tmp/mkfs.log 2>&1 || { cat /tmp/mkfs.log; return 1; }
}

# mount_fs FS DEV MNT OPTS [ORDER]: mount and, for f2fs with the series,
# set the maximum folio order (empty: leave the default).
mount_fs() {
	local fs=$1 dev=$2 mnt=$3 opts=$4 order=${5:-}
	case $fs in f2fs*) fs=f2fs ;; esac
	mount -t "$fs" ${opts:+-o "$opts"} "$dev" "$mnt" || return 1
	if [ -n "$order" ]; then
		local k=/sys/fs/f2fs/$(basename "$dev")/max_folio_order
		echo "$order" > "$k" || { echo "cannot set $k"; return 1; }
	fi
}

# fsck_clean DEV: a full fsck.f2fs (read-only) must find nothing wrong.
# f2fs-tools 1.15 prints "Info:" notes and "fixing SIT types" on clean
# images too; failed checks say [Fail], repairs [FIX], assertions [ASSERT].
fsck_clean() {
	local log=/tmp/fsck.log
	fsck.f2fs -f --dry-run "$1" > $log 2>&1
	local rc=$?
	if [ $rc -ne 0 ] || grep -qE '\[Fail\]|\[FIX\]|\[ASSERT\]|BUG' $log; then
		echo "fsck.f2fs -f $1 exit $rc:"
		grep -E '\[Fail\]|\[FIX\]|\[ASSERT\]|BUG' $log | head -20
		return 1
	fi
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
variant_order() { case $1 in 4k) echo 0 ;; *) echo "" ;; esac; }

# each_f2fs CMD PREFIX: run `CMD NAME f2fs OPTS ORDER` for every f2fs mode
# (default, lfs, adaptive) and folio variant.
each_f2fs() {
	local v mode opts
	for v in $(f2fs_variants); do
		for mode in default lfs adaptive; do
			opts=""
			[ $mode != default ] && opts="mode=$mode"
			"$1" "$2-f2fs-$mode-$v" f2fs "$opts" "$(variant_order "$v")"
		done
	done
}

# Probe once whether this kernel has the knob.
probe_knob() {
	mkfs_fs f2fs $DEV >/dev/null && mount -t f2fs $DEV $MNT || return 1
	[ -e "$(knob)" ] && LAB_HAS_KNOB=1 || LAB_HAS_KNOB=
	umount $MNT
	export LAB_HAS_KNOB
}
