#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of the experiment behind patches 25 and 66: a write fault on a
# large folio across EOF against the file growing past it.  mkrace.py on
# f2fs with large folios and on xfs, each way of growing the file, with the
# grow before the fault (0) and inside a 1.5 s sleep between
# ->page_mkwrite() and finish_fault() (1500); and falloc-early, whose
# zeroing past EOF comes before the fault and its size change inside the
# sleep (it needs a ramdisk of 1.5 GiB: ./lab boot --brd-mib 1536).
# VS, HOWS and DELAYS pick some of them.  Not part of ./lab test: it
# needs a kernel with experiment.diff (not part of the series), e.g.
#   git clone -s -b series ~/.cache/f2fs-lf-lab/src/linux-source-7.3 /tmp/x
#   git -C /tmp/x apply "$PWD/tests/mkwrite-grow/experiment.diff"
#   ./lab build --tree /tmp/x --flavour bench
#   ./lab boot --tree /tmp/x --flavour bench --timeout 1000 \
#	--brd-mib 1536 --cmd "bash $PWD/tests/mkwrite-grow/run.sh"
# (the guest sees the host's filesystem read-only, this directory too).
# result.txt is such a run's output (v44, without falloc-early);
# result-v45.txt has falloc-early's runs on v45 without and with its patch 66
# (since v46 part of patch 25: f2fs_eof_folio_grown()).
D=$(dirname "$(readlink -f "$0")")
export OUT=/tmp/o LAB_HAS_KNOB=1
mkdir -p $OUT
. /tmp/lab-repo/guest/lib.sh
FILE_BYTES=$((64 << 20))
# no kernel messages in the middle of the output's lines; back at the end,
# for the init's last message, which ./lab boot reads the exit code from
dmesg -n 1
trap 'dmesg -n 7' EXIT
for v in ${VS:-f2fs-lf xfs}; do
	for how in ${HOWS:-truncate falloc append beyond dio-beyond falloc-early}; do
		for d in ${DELAYS:-0 1500}; do
			fs_up $v || { echo "LAB: $v: mkfs or mount failed"; exit 1; }
			python3 "$D/mkrace.py" \
				$MNT/f $d $how 2>&1 | sed "s/^LAB: //; s/^/LAB: $v /"
			umount $MNT || exit 1
		done
	done
done
echo "LAB: done"
