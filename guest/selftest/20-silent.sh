#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Driver self-test: ends well but reports nothing; the driver must fail it.
. /tmp/lab-repo/guest/lib.sh
echo "no result from this test"
exit 0
