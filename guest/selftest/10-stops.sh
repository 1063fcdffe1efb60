#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Driver self-test: a PASS, then a syntax error.  bash stops here with
# exit 2, before the cases after it; the driver must fail the test.
. /tmp/lab-repo/guest/lib.sh
result PASS stops-first
if then
result PASS stops-never-reached
exit 0
