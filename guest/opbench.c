// SPDX-License-Identifier: GPL-2.0
/*
 * opbench: bench workloads that count operations, not bytes.
 *
 *   opbench atomic FILE 4k|64k SECONDS
 *	SQLite-style atomic write transactions on f2fs.  Each is
 *	F2FS_IOC_START_ATOMIC_WRITE, four 4 KiB page writes at random page
 *	offsets of FILE (which exists and is cached), for 64k also one
 *	64 KiB write at a random 64 KiB offset, then
 *	F2FS_IOC_COMMIT_ATOMIC_WRITE (which writes back and syncs).  An
 *	operation is a transaction.
 *
 *   opbench smallfiles DIR 4k|64k FILES SECONDS
 *	fs_mark-like small files: create DIR/s.N, write 4 KiB or 64 KiB into
 *	it, fsync, close; once 64 files exist, each new one first unlinks
 *	the oldest.  An operation is a file; it stops after FILES.
 *
 *   opbench precache DIR BLOCKS CALLS SECONDS
 *	F2FS_IOC_PRECACHE_EXTENTS on a fragmented file.  DIR/p and DIR/q are
 *	first grown by turns, 4 KiB and an fdatasync at a time, to BLOCKS
 *	blocks each, so that every block of DIR/p is an extent of its own.
 *	Then, each time with cold caches (drop_caches, which also evicts
 *	the inode and so its extent cache), DIR/p is opened and precached.
 *	An operation is one precache call, and only the call is timed; it
 *	stops after CALLS.
 *
 * Each runs until SECONDS have passed, or its count is done, (guest time: QEMU's icount clock when
 * the bench runs with it) and prints fio's JSON shape (jobs[0].write), so
 * the bench's report reads it like a fio run: iops is operations per
 * second, lat_ns.mean the mean time of one operation, bw_bytes the bytes
 * written (precache: mapped) per second.  The seed is fixed, so every
 * configuration writes the same offsets.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define F2FS_IOC_START_ATOMIC_WRITE	_IO(0xf5, 1)
#define F2FS_IOC_COMMIT_ATOMIC_WRITE	_IO(0xf5, 2)
#define F2FS_IOC_PRECACHE_EXTENTS	_IO(0xf5, 15)

#define RING	64	/* smallfiles: files kept before unlinking */

static char buf[64 * 1024];
static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "opbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void put(int fd, const char *p, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, p + done, len - done, off + done);

		if (n < 0)
			die("pwrite");
		done += n;
	}
}

/* @ops operations moving @bytes took @el seconds. */
static void report(const char *name, unsigned long long ops,
		   unsigned long long bytes, double el)
{
	printf("{\"jobs\": [{\"jobname\": \"%s\", \"write\": {"
	       "\"io_bytes\": %llu, \"bw_bytes\": %.0f, \"iops\": %.3f, "
	       "\"runtime\": %.0f, \"lat_ns\": {\"mean\": %.0f}}}]}\n",
	       name, bytes, bytes / el, ops / el, el * 1000, el * 1e9 / ops);
}

static int atomic_tx(const char *file, int big, double seconds)
{
	unsigned long long tx = 0, bytes = 0;
	struct stat st;
	double t0, el;
	int fd, i;

	fd = open(file, O_RDWR);
	if (fd < 0 || fstat(fd, &st))
		die(file);
	if (st.st_size < 1024 * 1024) {
		fprintf(stderr, "opbench: %s: want a file of 1 MiB or more\n",
			file);
		return 2;
	}
	t0 = now();
	do {
		if (ioctl(fd, F2FS_IOC_START_ATOMIC_WRITE))
			die("F2FS_IOC_START_ATOMIC_WRITE");
		for (i = 0; i < 4; i++) {
			buf[0] = (char)tx;
			put(fd, buf, 4096, (rnd() % (st.st_size / 4096)) * 4096);
		}
		bytes += 4 * 4096;
		if (big) {
			put(fd, buf, sizeof(buf),
			    (rnd() % (st.st_size / sizeof(buf))) * sizeof(buf));
			bytes += sizeof(buf);
		}
		if (ioctl(fd, F2FS_IOC_COMMIT_ATOMIC_WRITE))
			die("F2FS_IOC_COMMIT_ATOMIC_WRITE");
		tx++;
		el = now() - t0;
	} while (el < seconds);
	close(fd);
	report("atomic", tx, bytes, el);
	return 0;
}

static int small_files(const char *dir, size_t len, long files,
		       double seconds)
{
	unsigned long long n = 0;
	char name[4096];
	double t0, el;
	int fd;

	t0 = now();
	do {
		if (n >= RING) {
			snprintf(name, sizeof(name), "%s/s.%llu", dir, n - RING);
			if (unlink(name))
				die(name);
		}
		snprintf(name, sizeof(name), "%s/s.%llu", dir, n);
		fd = open(name, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			die(name);
		buf[0] = (char)n;
		put(fd, buf, len, 0);
		if (fsync(fd))
			die("fsync");
		close(fd);
		n++;
		el = now() - t0;
	} while (el < seconds && n < (unsigned long long)files);
	report("smallfiles", n, n * len, el);
	return 0;
}

static void drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	sync();
	if (fd < 0 || write(fd, "3", 1) != 1)
		die("/proc/sys/vm/drop_caches");
	close(fd);
}

static int precache(const char *dir, long blocks, long max_calls,
		    double seconds)
{
	unsigned long long calls = 0;
	double t0, t, in_call = 0;
	char p[4096], q[4096];
	int fd[2], i;
	long b;

	snprintf(p, sizeof(p), "%s/p", dir);
	snprintf(q, sizeof(q), "%s/q", dir);
	fd[0] = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	fd[1] = open(q, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd[0] < 0 || fd[1] < 0)
		die(dir);
	for (b = 0; b < blocks; b++) {
		for (i = 0; i < 2; i++) {
			buf[0] = (char)b;
			put(fd[i], buf, 4096, b * 4096);
			if (fdatasync(fd[i]))
				die("fdatasync");
		}
	}
	close(fd[0]);
	close(fd[1]);

	t0 = now();
	do {
		drop_caches();
		fd[0] = open(p, O_RDONLY);
		if (fd[0] < 0)
			die(p);
		t = now();
		if (ioctl(fd[0], F2FS_IOC_PRECACHE_EXTENTS))
			die("F2FS_IOC_PRECACHE_EXTENTS");
		in_call += now() - t;
		close(fd[0]);
		calls++;
	} while (now() - t0 < seconds &&
		 calls < (unsigned long long)max_calls);
	report("precache", calls, calls * blocks * 4096, in_call);
	return 0;
}

int main(int argc, char **argv)
{
	double seconds = atof(argv[argc - 1]);
	const char *mode = argc > 1 ? argv[1] : "";
	int big;

	memset(buf, 0x5a, sizeof(buf));
	if (argc < 5 || seconds <= 0)
		goto usage;
	if (!strcmp(mode, "precache") && argc == 6 && atol(argv[3]) > 0 &&
	    atol(argv[4]) > 0)
		return precache(argv[2], atol(argv[3]), atol(argv[4]), seconds);
	if (strcmp(argv[3], "4k") && strcmp(argv[3], "64k"))
		goto usage;
	big = !strcmp(argv[3], "64k");
	if (!strcmp(mode, "atomic") && argc == 5)
		return atomic_tx(argv[2], big, seconds);
	if (!strcmp(mode, "smallfiles") && argc == 6 && atol(argv[4]) > 0)
		return small_files(argv[2], big ? 65536 : 4096, atol(argv[4]),
				   seconds);
usage:
	fprintf(stderr, "usage: opbench atomic FILE 4k|64k SECONDS\n"
		"       opbench smallfiles DIR 4k|64k FILES SECONDS\n"
		"       opbench precache DIR BLOCKS CALLS SECONDS\n");
	return 2;
}
