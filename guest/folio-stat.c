// SPDX-License-Identifier: GPL-2.0
/*
 * folio-stat: histogram of the page cache folio sizes backing a file.
 *
 * Maps the file read-only, touches only the pages mincore() says are
 * resident (so it never reads anything in itself), and looks up each page's
 * PFN in /proc/self/pagemap and its flags in /proc/kpageflags: a compound
 * head starts a large folio, the tail pages that follow belong to it.
 * mincore() calls a page resident only if its folio is uptodate: a large
 * folio with only some blocks uptodate (a short write into it, or a write
 * of part of it over a hole) is cached but not counted here.
 * Needs root (PFNs are hidden from others).
 *
 * Output: one line per order "order N folios M", then
 * "resident P pages, in large folios L pages, largest order K", then
 * "dirty D pages": the pages of those in dirty folios.
 *
 * With OFFSET and LENGTH, only that range of the file is looked at (widened
 * to 2 MiB boundaries, so that no folio is cut), e.g. for a sparse file far
 * larger than memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define KPF_DIRTY		4
#define KPF_COMPOUND_HEAD	15
#define KPF_COMPOUND_TAIL	16
#define PM_PRESENT		(1ULL << 63)
#define PM_PFN_MASK		((1ULL << 55) - 1)
#define MAX_ORDER_SEEN		20

static int die(const char *what)
{
	fprintf(stderr, "folio-stat: %s: %s\n", what, strerror(errno));
	exit(2);
}

static uint64_t read_u64(int fd, uint64_t idx, const char *what)
{
	uint64_t v;

	if (pread(fd, &v, sizeof(v), idx * sizeof(v)) != sizeof(v))
		die(what);
	return v;
}

int main(int argc, char **argv)
{
	unsigned long count[MAX_ORDER_SEEN + 1] = { 0 };
	unsigned long resident = 0, in_large = 0, dirty = 0;
	long psz = sysconf(_SC_PAGESIZE);
	int fd, pm, kf, largest = 0;
	unsigned char *vec;
	size_t npages, i, len;
	off_t start = 0, end;
	struct stat st;
	char *map;

	if (argc != 2 && argc != 4) {
		fprintf(stderr, "usage: folio-stat FILE [OFFSET LENGTH]\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		die(argv[1]);
	end = st.st_size;
	if (argc == 4) {
		const off_t align = 2 << 20;

		start = strtoll(argv[2], NULL, 0) / align * align;
		end = strtoll(argv[3], NULL, 0) + strtoll(argv[2], NULL, 0);
		end = (end + align - 1) / align * align;
		if (end > st.st_size)
			end = st.st_size;
	}
	if (end <= start) {
		printf("resident 0 pages, in large folios 0 pages, largest order 0\n"
		       "dirty 0 pages\n");
		return 0;
	}
	len = end - start;
	npages = (len + psz - 1) / psz;
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, start);
	if (map == MAP_FAILED)
		die("mmap");
	vec = malloc(npages);
	if (!vec || mincore(map, len, vec))
		die("mincore");
	pm = open("/proc/self/pagemap", O_RDONLY);
	kf = open("/proc/kpageflags", O_RDONLY);
	if (pm < 0 || kf < 0)
		die("/proc/self/pagemap or /proc/kpageflags");

	for (i = 0; i < npages; ) {
		uint64_t ent, pfn, flags;
		size_t n = 1;

		if (!(vec[i] & 1)) {
			i++;
			continue;
		}
		(void)*(volatile char *)(map + i * psz);
		ent = read_u64(pm, ((uintptr_t)map / psz) + i, "pagemap");
		if (!(ent & PM_PRESENT) || !(ent & PM_PFN_MASK)) {
			fprintf(stderr, "folio-stat: page %zu resident but no PFN "
				"(not root?)\n", i);
			return 2;
		}
		pfn = ent & PM_PFN_MASK;
		flags = read_u64(kf, pfn, "kpageflags");
		resident++;
		if (flags & (1ULL << KPF_COMPOUND_HEAD)) {
			/* Count the tails that follow this head. */
			for (;; n++) {
				uint64_t f = read_u64(kf, pfn + n, "kpageflags");

				if (!(f & (1ULL << KPF_COMPOUND_TAIL)))
					break;
			}
		}
		if (n > 1) {
			size_t here = i + n <= npages ? n : npages - i;
			int order = 0;

			while ((1UL << order) < n)
				order++;
			if (order > MAX_ORDER_SEEN)
				order = MAX_ORDER_SEEN;
			count[order]++;
			if (order > largest)
				largest = order;
			in_large += n;
			/* The folio may start before the file offset we met. */
			resident += here - 1;
			if (flags & (1ULL << KPF_DIRTY))
				dirty += here;
			i += n;
		} else {
			count[0]++;
			if (flags & (1ULL << KPF_DIRTY))
				dirty++;
			i++;
		}
	}
	for (i = 0; i <= MAX_ORDER_SEEN; i++)
		if (count[i])
			printf("order %zu folios %lu\n", i, count[i]);
	printf("resident %lu pages, in large folios %lu pages, largest order %d\n",
	       resident, in_large, largest);
	printf("dirty %lu pages\n", dirty);
	return 0;
}
