// SPDX-License-Identifier: GPL-2.0
/*
 * mmap-race: stores through a shared mapping race with truncation.
 *
 * Usage: mmap-race FILE SIZE ITERATIONS SEED
 *
 * The file starts SIZE bytes long, every byte holding pat(offset).  A child
 * process truncates it down to a random size and back up to SIZE, again and
 * again, while the parent stores pat(offset) into random ranges of up to
 * 64 KiB through a MAP_SHARED mapping (a store beyond EOF raises SIGBUS,
 * which is skipped), and now and then msyncs.  Truncation zeroes, stores
 * write the pattern, so afterwards every byte must be 0 or pat(offset):
 * anything else is stale or misplaced data.  The file is then fsynced, the
 * page cache dropped, and what the disk gives back must equal what the
 * cache held.
 *
 * Exit 0 on success, 1 on a data mismatch (offset and bytes printed),
 * 2 on a usage or system error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static sigjmp_buf bus_jmp;
static unsigned long bus_hits;

static void die(const char *what)
{
	fprintf(stderr, "mmap-race: %s: %s\n", what, strerror(errno));
	exit(2);
}

static unsigned char pat(uint64_t off)
{
	return (unsigned char)((off ^ (off >> 12)) % 251 + 1);
}

/* xorshift64*, one stream per process */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

static void read_all(int fd, unsigned char *buf, size_t size)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = pread(fd, buf + done, size - done, done);

		if (n < 0)
			die("pread");
		if (n == 0) {
			fprintf(stderr, "mmap-race: short file: %zu of %zu bytes\n",
				done, size);
			exit(1);
		}
		done += n;
	}
}

static void truncater(int fd, size_t size, unsigned long iters, uint64_t s)
{
	unsigned long i;

	for (i = 0; i < iters; i++) {
		/* often inside a folio, sometimes on a block boundary */
		off_t cut = rnd(&s) % size;

		if (rnd(&s) % 4 == 0)
			cut &= ~4095;
		if (ftruncate(fd, cut) || ftruncate(fd, size))
			die("ftruncate");
		/* leave the writer windows with the whole file mapped */
		usleep(1000);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	unsigned char *map, *cached, *disk;
	volatile unsigned long stores = 0;
	unsigned long iters, i;
	struct sigaction sa;
	uint64_t s;
	size_t size, off;
	pid_t pid;
	int fd, st, dc;

	if (argc != 5) {
		fprintf(stderr, "usage: mmap-race FILE SIZE ITERATIONS SEED\n");
		return 2;
	}
	size = strtoull(argv[2], NULL, 0);
	iters = strtoul(argv[3], NULL, 0);
	s = strtoull(argv[4], NULL, 0) * 2 + 1;
	if (size < 8192)
		size = 8192;

	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	cached = malloc(size);
	disk = malloc(size);
	if (!cached || !disk)
		die("malloc");
	for (off = 0; off < size; off++)
		cached[off] = pat(off);
	for (off = 0; off < size; off += 1 << 20) {
		size_t n = size - off < (1 << 20) ? size - off : (1 << 20);

		if (pwrite(fd, cached + off, n, off) != (ssize_t)n)
			die("pwrite");
	}

	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_bus;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL))
		die("sigaction");

	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		truncater(fd, size, iters, s ^ 0x9e3779b97f4a7c15ULL);

	for (i = 0; i < iters; i++) {
		size_t start = rnd(&s) % size;
		size_t len = 1 + rnd(&s) % (64 << 10);
		size_t k;

		if (len > size - start)
			len = size - start;
		if (sigsetjmp(bus_jmp, 1)) {
			bus_hits++;
			continue;
		}
		for (k = start; k < start + len; k++)
			map[k] = pat(k);
		stores++;
		if (i % 16 == 0 && msync(map, size, MS_SYNC) && errno != ENOMEM)
			die("msync");
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0) {
		fprintf(stderr, "mmap-race: truncater failed\n");
		return 2;
	}
	if (munmap(map, size))
		die("munmap");

	read_all(fd, cached, size);
	for (off = 0; off < size; off++) {
		if (cached[off] && cached[off] != pat(off)) {
			printf("mmap-race: FAIL cached byte at %zu (block %zu +%zu) is 0x%02x, want 0 or 0x%02x\n",
			       off, off / 4096, off % 4096, cached[off],
			       pat(off));
			return 1;
		}
	}
	if (fsync(fd))
		die("fsync");
	dc = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (dc < 0 || write(dc, "3\n", 2) != 2)
		die("drop_caches");
	close(dc);
	read_all(fd, disk, size);
	for (off = 0; off < size; off++) {
		if (disk[off] != cached[off]) {
			printf("mmap-race: FAIL after fsync and cache drop, byte at %zu (block %zu +%zu) is 0x%02x, was 0x%02x in the cache\n",
			       off, off / 4096, off % 4096, disk[off],
			       cached[off]);
			return 1;
		}
	}
	printf("mmap-race: %lu store runs, %lu hit SIGBUS beyond EOF, %lu truncations: data consistent\n",
	       (unsigned long)stores, bus_hits, iters);
	close(fd);
	return 0;
}
