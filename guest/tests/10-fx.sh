#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Integrity: the fx exerciser (random I/O against an in-memory model, with
# cache drops and remounts) on f2fs in its three allocation modes, with 4K
# and large folios when the kernel has the series, and on ext4 and xfs as
# controls.  fsck.f2fs must find the image clean afterwards.
. /tmp/lab-repo/guest/lib.sh

if [ "${LAB_FORM:-short}" = long ]; then
	OPS=${LAB_FX_OPS:-1000000}
else
	OPS=${LAB_FX_OPS:-10000}
fi
# The short form replays one seed so CI is repeatable; the long form and
# `./lab test --seed N` explore others.
if [ "${LAB_FORM:-short}" = long ]; then
	SEED=${LAB_SEED:-$(( $(date +%s) % 100000 ))}
else
	SEED=${LAB_SEED:-27147}
fi
EVERY=$(( OPS / 4 ))

run_one() {
	local name=$1 fs=$2 opts=$3 order=$4 seed=$SEED
	mkfs_fs "$fs" $DEV || { result FAIL "$name" "mkfs failed"; return; }
	mount_fs "$fs" $DEV $MNT "$opts" "$order" || {
		result FAIL "$name" "mount failed"; return; }
	cat > /tmp/remount.sh <<EOS
. /tmp/lab-repo/guest/lib.sh
umount $MNT && mount_fs $fs $DEV $MNT "$opts" "$order"
EOS
	local t0=$(date +%s)
	fx -N "$OPS" -S "$seed" --drop-caches-every $(( EVERY / 2 + 1 )) \
		--remount-every "$EVERY" -R "bash /tmp/remount.sh" \
		$MNT/fx.dat > /tmp/fx.out 2>&1
	local rc=$?
	cp /tmp/fx.out "$OUT/$name.fx.log"
	umount $MNT || { result FAIL "$name" "umount failed"; return; }
	if [ $rc -ne 0 ]; then
		result FAIL "$name" "fx exit $rc seed $seed: $(grep -m1 -iE 'mismatch|error|fail' /tmp/fx.out)"
		return
	fi
	case $fs in
	f2fs*)
		if ! fsck_clean $DEV > /tmp/fsck.out; then
			result FAIL "$name" "fsck: $(head -2 /tmp/fsck.out | tr '\n' ' ')"
			return
		fi ;;
	esac
	result PASS "$name" "$OPS ops seed $seed in $(( $(date +%s) - t0 )) s"
}

each_f2fs run_one fx
if controls; then
	run_one fx-ext4 ext4 "" ""
	run_one fx-xfs xfs "" ""
fi
