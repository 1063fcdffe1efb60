#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Driver self-test: a test that passes but leaves a splat in the kernel
# log; the driver must add a failure.  The line is logged at KERN_DEBUG,
# which dmesg shows and the console does not.
. /tmp/lab-repo/guest/lib.sh
echo "<7>lab driver self-test, not a kernel bug: WARNING: fake" > /dev/kmsg
result PASS splat-reported
exit 0
