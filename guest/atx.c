// SPDX-License-Identifier: GPL-2.0
/*
 * atx: SQLite-style atomic write transactions on f2fs, for the bench.
 *
 *   atx FILE BS SECONDS
 *
 * Each transaction is F2FS_IOC_START_ATOMIC_WRITE, four 4 KiB page writes
 * at random page offsets of FILE (which exists and is cached), for BS 64k
 * also one 64 KiB write at a random 64 KiB offset, then
 * F2FS_IOC_COMMIT_ATOMIC_WRITE (which writes back and syncs).  Transactions
 * run until SECONDS have passed (guest time: QEMU's icount clock when the
 * bench runs with it).  Prints fio's JSON shape (jobs[0].write), so the
 * bench's report reads it like a fio run: iops is transactions per second,
 * lat_ns.mean the mean time of one transaction, bw_bytes the bytes written
 * per second.  The seed is fixed, so every configuration writes the same
 * offsets.
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
	fprintf(stderr, "atx: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void put(int fd, const char *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, buf + done, len - done, off + done);

		if (n < 0)
			die("pwrite");
		done += n;
	}
}

int main(int argc, char **argv)
{
	static char buf[64 * 1024];
	unsigned long long tx = 0, bytes = 0;
	double seconds, t0, el;
	struct stat st;
	int fd, big, i;

	if (argc != 4 || (strcmp(argv[2], "4k") && strcmp(argv[2], "64k")) ||
	    (seconds = atof(argv[3])) <= 0) {
		fprintf(stderr, "usage: atx FILE 4k|64k SECONDS\n");
		return 2;
	}
	big = !strcmp(argv[2], "64k");
	fd = open(argv[1], O_RDWR);
	if (fd < 0 || fstat(fd, &st))
		die(argv[1]);
	if (st.st_size < 1024 * 1024) {
		fprintf(stderr, "atx: %s: want a file of 1 MiB or more\n",
			argv[1]);
		return 2;
	}
	memset(buf, 0x5a, sizeof(buf));

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

	printf("{\"jobs\": [{\"jobname\": \"atx\", \"write\": {"
	       "\"io_bytes\": %llu, \"bw_bytes\": %.0f, \"iops\": %.3f, "
	       "\"runtime\": %.0f, \"lat_ns\": {\"mean\": %.0f}}}]}\n",
	       bytes, bytes / el, tx / el, el * 1000, el * 1e9 / tx);
	close(fd);
	return 0;
}
