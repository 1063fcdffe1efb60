#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest test suite driver: runs guest/tests/NN-*.sh in order.  Each test
# reports its own results with `result` and ends with `exit 0`; a test that
# exits any other way (a syntax error, a kill: the cases after that point
# never ran), reports nothing, or leaves a kernel splat, fails as a whole.
# The driver first runs itself on guest/selftest, tests that break each of
# these rules, and fails "suite-driver" unless it judged them as
# guest/selftest/expected says (LAB_TESTS names the tests to run).
. /tmp/lab-repo/guest/lib.sh
: > "$OUT/results.txt"
mem=$(awk '/MemTotal/{print $2/1024 " MiB"}' /proc/meminfo)
say "kernel $(uname -r), $(nproc) cpus, $mem, form ${LAB_FORM:-short}"
probe_knob || {
	result FAIL setup "cannot make or mount f2fs on $DEV"
	touch "$OUT/done"; exit 1; }
knob="absent (unpatched f2fs)"
[ -n "$LAB_HAS_KNOB" ] && knob=present
say "f2fs mount option nolargefolio: $knob"
if [ -z "${LAB_TESTS:-}" ]; then
	st=$OUT/selftest
	mkdir -p "$st"
	LAB_TESTS=$REPO/guest/selftest LAB_ONLY= LAB_QUIET=1 OUT=$st \
		bash "$0" > "$st/driver.log" 2>&1
	# each result line must begin with the expected line
	if awk 'NR == FNR { e[++n] = $0; next }
		index($0, e[FNR]) != 1 { bad = 1 } { m = FNR }
		END { exit bad || m != n }' \
		"$REPO/guest/selftest/expected" "$st/results.txt"; then
		result PASS suite-driver
	else
		result FAIL suite-driver "judged guest/selftest otherwise: $(
			tr '\n' '|' < "$st/results.txt"); see selftest/"
	fi
fi
for t in "${LAB_TESTS:-$REPO/guest/tests}"/[0-9]*.sh; do
	name=$(basename "$t" .sh)
	if [ -n "${LAB_ONLY:-}" ]; then
		case $name in $LAB_ONLY) ;; *) continue ;; esac
	fi
	say "running $name"
	before=$(wc -l < "$OUT/results.txt")
	dmesg -C
	start=$(date +%s)
	bash "$t" > "$OUT/$name.log" 2>&1
	rc=$?
	umount "$MNT" 2>/dev/null
	s=$(splat)
	after=$(wc -l < "$OUT/results.txt")
	if [ -n "$s" ]; then
		dmesg > "$OUT/$name.dmesg"
		result FAIL "$name-kernel" "kernel splat: $(echo "$s" | head -1)"
	fi
	last=$(tail -1 "$OUT/$name.log")
	if [ "$rc" -ne 0 ]; then
		result FAIL "$name" \
			"exit $rc before its end; see $name.log: $last"
	elif [ "$after" -eq "$before" ]; then
		result FAIL "$name" "no result reported; see $name.log: $last"
	fi
	say "$name done in $(( $(date +%s) - start )) s"
done
touch "$OUT/done"
