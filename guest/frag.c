// SPDX-License-Identifier: GPL-2.0
/*
 * frag: fragment the guest's free memory for the bench, then hold it.
 *
 *   frag [-k ORDER] [-r RESERVE_MIB]
 *
 * Takes all free memory but RESERVE_MIB (default 64) as anonymous memory
 * without transparent huge pages, touches every page, then gives back
 * every other block of 2^ORDER pages (default 0: every other page).  The
 * reserve, kept free meanwhile so that nothing runs out of memory, is
 * still in large blocks then: it is taken next with transparent huge
 * pages, which the small free blocks cannot give.  Everything is locked
 * where it is (mlock2(MLOCK_ONFAULT), which neither faults the freed
 * blocks back in nor lets compaction move the locked pages while
 * vm.compact_unevictable_allowed is 0).  Free memory is then blocks of
 * 2^ORDER pages: a page cache allocation of a larger folio has to fail
 * and fall back.  Prints "frag: ready ..." with /proc/buddyinfo's free
 * blocks per order, and holds the memory until it is killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 0x01
#endif

static void die(const char *what)
{
	fprintf(stderr, "frag: %s: %s\n", what, strerror(errno));
	exit(2);
}

static long meminfo_kib(const char *key)
{
	char line[256];
	size_t n = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		die("/proc/meminfo");
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = atol(line + n + 1);
			break;
		}
	fclose(f);
	return v;
}

/* Free blocks per order, summed over the zones of /proc/buddyinfo. */
static void buddyinfo(char *buf, size_t size)
{
	unsigned long n[16] = { 0 };
	char line[512];
	size_t used = 0;
	int o, max = 0;
	FILE *f = fopen("/proc/buddyinfo", "r");

	if (!f)
		die("/proc/buddyinfo");
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "zone");

		if (!p)
			continue;
		p += 4;
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
		for (o = 0; o < 16; o++) {
			char *end;
			unsigned long v = strtoul(p, &end, 10);

			if (end == p)
				break;
			n[o] += v;
			p = end;
			if (o + 1 > max)
				max = o + 1;
		}
	}
	fclose(f);
	buf[0] = 0;
	for (o = 0; o < max && used < size; o++)
		used += snprintf(buf + used, size - used, "%s%lu",
				 o ? " " : "", n[o]);
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE), reserve = 64, order = 0;
	size_t len, hlen, block, off, freed = 0;
	long free_kib;
	char *p, *h, bi[256];
	int c;

	while ((c = getopt(argc, argv, "k:r:")) != -1) {
		switch (c) {
		case 'k':
			order = atol(optarg);
			break;
		case 'r':
			reserve = atol(optarg);
			break;
		default:
			fprintf(stderr, "usage: frag [-k ORDER] [-r RESERVE_MIB]\n");
			return 2;
		}
	}
	if (order < 0 || order > 9 || reserve < 0) {
		fprintf(stderr, "frag: ORDER is 0..9, RESERVE_MIB >= 0\n");
		return 2;
	}
	free_kib = meminfo_kib("MemFree");
	if (free_kib < 0 || free_kib / 1024 <= reserve + 16) {
		fprintf(stderr, "frag: %ld KiB free, reserve %ld MiB: nothing to take\n",
			free_kib, reserve);
		return 2;
	}
	block = (size_t)page << order;
	len = ((size_t)(free_kib / 1024 - reserve) << 20) / (2 * block) * (2 * block);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	if (madvise(p, len, MADV_NOHUGEPAGE))
		die("madvise(MADV_NOHUGEPAGE)");
	/* one call instead of a fault per page: TCG makes faults slow */
	if (madvise(p, len, MADV_POPULATE_WRITE))
		for (off = 0; off < len; off += page)
			p[off] = 1;
	for (off = block; off < len; off += 2 * block) {
		if (madvise(p + off, block, MADV_DONTNEED))
			die("madvise(MADV_DONTNEED)");
		freed += block;
	}
	if (syscall(SYS_mlock2, p, len, MLOCK_ONFAULT))
		die("mlock2(MLOCK_ONFAULT)");

	hlen = (size_t)reserve << 20;
	h = mmap(NULL, hlen, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (h == MAP_FAILED)
		die("mmap");
	/* without THP this takes small blocks, and frag says so below */
	madvise(h, hlen, MADV_HUGEPAGE);
	for (off = 0; off < hlen; off += page)
		h[off] = 1;
	if (syscall(SYS_mlock2, h, hlen, MLOCK_ONFAULT))
		die("mlock2(MLOCK_ONFAULT)");

	buddyinfo(bi, sizeof(bi));
	printf("frag: ready, holding %zu MiB, freed %zu MiB in blocks of %zu KiB, %ld MiB free; free blocks per order: %s\n",
	       (len - freed + hlen) >> 20, freed >> 20, block >> 10,
	       meminfo_kib("MemFree") >> 10, bi);
	fflush(stdout);
	for (;;)
		pause();
}
