#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Are large folios really used?  folio-stat reads the page cache folio
# sizes of a file from /proc/kpageflags.  xfs is the control that the
# probe sees large folios at all.  Upstream f2fs uses them only to read
# immutable files; with the series every regular file gets them unless
# mounted with nolargefolio.
. /tmp/lab-repo/guest/lib.sh

M=$((1024 * 1024))
# stat_of FILE -> "resident large largest"
stat_of() {
	local out
	out=$(folio-stat "$1") || return
	awk '/^resident/ {print $2, $7, $11}' <<< "$out"
}

# expect NAME FILE large|small
expect() {
	local name=$1 f=$2 want=$3 s r l o
	s=$(stat_of "$f") || { result FAIL "$name" "folio-stat failed"; return; }
	read -r r l o <<< "$s"
	if [ "${r:-0}" -eq 0 ]; then
		result FAIL "$name" "nothing resident in the page cache"
	elif [ $want = large ] && [ "$l" -gt 0 ]; then
		result PASS "$name" "$l of $r pages in large folios, largest order $o"
	elif [ $want = small ] && [ "$l" -eq 0 ]; then
		result PASS "$name" "all $r pages in order-0 folios"
	else
		result FAIL "$name" \
			"want $want folios, got $l of $r pages in large folios (order $o)"
	fi
}

# Write through the cache: check the write path; drop the cache and read
# back: check the read path.  With an encryption policy (lib.sh) the file is
# in a directory encrypted with it, mounted with inlinecrypt.
check_fs() {
	local name=$1 fs=$2 order=$3 want_w=$4 want_r=$5 pol=${6:-} dir=$MNT
	mkfs_fs "$fs" $DEV &&
		mount_fs "$fs" $DEV $MNT "${pol:+inlinecrypt}" "$order" || {
		result FAIL "$name" "mkfs/mount failed"; return; }
	if [ -n "$pol" ]; then
		dir=$MNT/enc
		crypt_setup "$name" $pol || return
	fi
	xfs_io -f -c "pwrite -q -b 1m 0 $((8 * M))" $dir/f
	expect "$name-write" $dir/f "$want_w"
	sync; echo 3 > /proc/sys/vm/drop_caches
	cat $dir/f > /dev/null
	expect "$name-read" $dir/f "$want_r"
	umount_fsck "$name" "$fs"
}

# fs-verity: enable verity while the written file is still cached, then
# read it back from disk, verified.
check_verity() {
	local name=$1 order=$2 want=$3
	mkfs_fs f2fs-verity $DEV && mount_fs f2fs $DEV $MNT "" "$order" || {
		result FAIL "$name" "mkfs/mount failed"; return; }
	xfs_io -f -c "pwrite -q -b 1m 0 $((8 * M))" $MNT/f
	fsverity enable $MNT/f > /tmp/verity.out 2>&1 || {
		result FAIL "$name" "fsverity enable: $(tail -1 /tmp/verity.out)"
		umount $MNT; return; }
	sync; echo 3 > /proc/sys/vm/drop_caches
	cat $MNT/f > /dev/null || result FAIL "$name" "verified read failed"
	expect "$name-read" $MNT/f "$want"
	umount_fsck "$name" f2fs
}

check_fs folios-xfs xfs "" large large

if [ -n "${LAB_HAS_KNOB:-}" ]; then
	check_fs folios-f2fs-lf f2fs "" large large
	check_fs folios-f2fs-4k f2fs 0 small small
	# Android's files: encrypted (each policy) and fs-verity
	for pol in $CRYPT_POLICIES; do
		check_fs folios-f2fs-crypt-$pol-lf f2fs-crypt "" large large $pol
	done
	check_fs folios-f2fs-crypt-v2-4k f2fs-crypt 0 small small v2
	check_verity folios-f2fs-verity-lf "" large
	check_verity folios-f2fs-verity-4k 0 small
else
	check_fs folios-f2fs-upstream f2fs "" small small
	# Upstream's only large folio path: immutable, read-only files.
	mkfs_fs f2fs $DEV && mount_fs f2fs $DEV $MNT "" "" || {
		result FAIL folios-f2fs-immutable "mkfs/mount failed"; exit 0; }
	xfs_io -f -c "pwrite -q -b 1m 0 $((8 * M))" -c fsync $MNT/f
	chattr +i $MNT/f || result FAIL folios-f2fs-immutable "chattr +i failed"
	umount $MNT && mount_fs f2fs $DEV $MNT "" ""
	cat $MNT/f > /dev/null
	expect folios-f2fs-immutable-read $MNT/f large
	chattr -i $MNT/f
	umount_fsck folios-f2fs-immutable f2fs
	# ... encrypted ones included.
	mkfs_fs f2fs-crypt $DEV && mount_fs f2fs $DEV $MNT inlinecrypt "" || {
		result FAIL folios-f2fs-crypt-immutable "mkfs/mount failed"
		exit 0; }
	crypt_setup folios-f2fs-crypt-immutable v2 || exit 0
	xfs_io -f -c "pwrite -q -b 1m 0 $((8 * M))" -c fsync $MNT/enc/f
	chattr +i $MNT/enc/f
	umount $MNT && mount_fs f2fs $DEV $MNT inlinecrypt "" &&
		crypt_unlock $MNT v2 > /dev/null
	cat $MNT/enc/f > /dev/null
	expect folios-f2fs-crypt-immutable-read $MNT/enc/f large
	chattr -i $MNT/enc/f
	umount_fsck folios-f2fs-crypt-immutable f2fs
fi

# the end: run-tests.sh fails a test that exits any other way
exit 0
