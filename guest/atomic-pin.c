// SPDX-License-Identifier: GPL-2.0
/*
 * atomic-pin: a page of an atomic-write file, pinned for a direct read
 * before the atomic write starts and released while it runs, must not carry
 * the transaction's blocks into the file before the commit.
 *
 * Usage: atomic-pin FILE FUSEDIR commit|abort
 *        atomic-pin FILE FUSEDIR short-abort|short-commit INJECT_STATS
 *
 * FILE (on f2fs) gets 2 MiB of pattern A, is synced, read into the page
 * cache and mapped shared.  A second thread reads 4 KiB with O_DIRECT from a
 * file of a FUSE filesystem this tool serves at FUSEDIR (FOPEN_DIRECT_IO)
 * into block 257 of the mapping: the kernel pins that page and sends the read
 * to us, and we hold the reply.  Meanwhile F2FS_IOC_START_ATOMIC_WRITE, a
 * write of pattern B over blocks 256-259 (staged in the COW inode), and
 * writeback of the file (sync_file_range, which stages without commit).
 * Then the reply, pattern C: the kernel copies it into the pinned page and
 * dirties the page's folio, from outside f2fs and without marking any block
 * as the transaction's.  Writeback again, then F2FS_IOC_COMMIT_ATOMIC_WRITE
 * or F2FS_IOC_ABORT_ATOMIC_WRITE, and the cache is dropped.
 *
 * From the disk, after an abort every block must hold A; after a commit,
 * blocks 256, 258, 259 hold B, block 257 holds C and the rest A.  A block the
 * transaction staged that was written to the file before the commit shows
 * up as B or C after the abort.
 *
 * The short modes write B over blocks 256-259 from a buffer whose last three
 * blocks are not mapped, so the copy stops after block 256: in a large folio
 * ->write_begin() reserved blocks 257-259 in the COW inode (NEW_ADDR), and
 * the transaction never wrote them.  The read's data in block 257 is then
 * not the transaction's and goes to the file, as in 7.3, where no block the
 * copy did not reach is reserved.  short-abort: the reply comes before the
 * abort, as above; after it, block 257 holds C and the rest A.  short-commit:
 * the reply comes while the commit waits after moving the staged blocks to
 * the file (f2fs's FAULT_ATOMIC_TIMEOUT, which the caller enables; its count
 * in INJECT_STATS, /proc/fs/f2fs/DEV/inject_stats, says when the commit got
 * there), so that the commit's own fsync writes block 257 back; after it,
 * block 256 holds B, block 257 C and the rest A.
 *
 * Prints the order of the pinned page's folio while pinned.  Exit 0 on
 * success, 1 on a data mismatch, 2 on a usage or system error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define F2FS_IOC_START_ATOMIC_WRITE	_IO(0xf5, 1)
#define F2FS_IOC_COMMIT_ATOMIC_WRITE	_IO(0xf5, 2)
#define F2FS_IOC_ABORT_ATOMIC_WRITE	_IO(0xf5, 5)

#define BLK		4096
#define FSIZE		(2 << 20)
#define NBLK		(FSIZE / BLK)
#define FIRST		256		/* the transaction writes 4 blocks here, */
#define STAGED		4
#define PINNED		(FIRST + 1)	/* the direct read lands in the second */

static const char *fusedir;
static int fuse_fd = -1;
static char *map;
static ssize_t dio_ret;
static int dio_errno;

/* held reply: the server thread waits on go after the read request */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int pinned, go;

static void unmount_fuse(void)
{
	if (fusedir)
		umount2(fusedir, MNT_DETACH);
}

static void die(const char *what)
{
	fprintf(stderr, "atomic-pin: %s: %s\n", what, strerror(errno));
	exit(2);
}

static unsigned char pat(char which, uint64_t off)
{
	return (unsigned char)(((off ^ (off >> 12)) * 7 + which) % 251 + 1);
}

static void fill(char *buf, char which, uint64_t off, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (char)pat(which, off + i);
}

static void reply(uint64_t unique, int error, const void *arg, size_t len)
{
	char buf[sizeof(struct fuse_out_header) + 2 * BLK];
	struct fuse_out_header *oh = (void *)buf;

	if (len > sizeof(buf) - sizeof(*oh)) {
		fprintf(stderr, "atomic-pin: reply too long\n");
		exit(2);
	}
	oh->len = sizeof(*oh) + len;
	oh->error = error;
	oh->unique = unique;
	if (len)
		memcpy(buf + sizeof(*oh), arg, len);
	if (write(fuse_fd, buf, oh->len) != (ssize_t)oh->len && errno != ENOENT)
		die("write /dev/fuse");
}

static void attr_of(uint64_t node, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = node;
	a->nlink = node == 1 ? 2 : 1;
	a->mode = node == 1 ? S_IFDIR | 0755 : S_IFREG | 0644;
	a->size = node == 1 ? 0 : BLK;
	a->blocks = node == 1 ? 0 : 8;
	a->blksize = BLK;
}

/*
 * A FUSE filesystem of one file, "data", 4 KiB of pattern C, opened with
 * FOPEN_DIRECT_IO so that reads go straight to the caller's pages.  The
 * reply to a read waits until the main thread says go.
 */
static void *serve(void *arg)
{
	static char buf[FUSE_MIN_READ_BUFFER + 256 * 1024];
	char data[BLK];

	(void)arg;
	for (;;) {
		ssize_t n = read(fuse_fd, buf, sizeof(buf));
		struct fuse_in_header *ih = (void *)buf;
		void *in = buf + sizeof(*ih);

		if (n < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			if (errno == ENODEV)	/* unmounted */
				return NULL;
			die("read /dev/fuse");
		}
		switch (ih->opcode) {
		case FUSE_INIT: {
			struct fuse_init_out o = {
				.major = FUSE_KERNEL_VERSION,
				.minor = FUSE_KERNEL_MINOR_VERSION,
				.max_background = 16,
				.congestion_threshold = 12,
				.max_write = 128 * 1024,
				.time_gran = 1,
			};
			reply(ih->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out o = { 0 };

			if (ih->nodeid != 1 || strcmp(in, "data")) {
				reply(ih->unique, -ENOENT, NULL, 0);
				break;
			}
			o.nodeid = 2;
			o.generation = 1;
			attr_of(2, &o.attr);
			reply(ih->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out o = { 0 };

			attr_of(ih->nodeid, &o.attr);
			reply(ih->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_OPEN: {
			struct fuse_open_out o = { .fh = 1,
						   .open_flags = FOPEN_DIRECT_IO };

			reply(ih->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_READ: {
			struct fuse_read_in *r = in;
			size_t len = r->offset >= BLK ? 0 :
				     r->size < BLK - r->offset ? r->size :
				     BLK - r->offset;

			pthread_mutex_lock(&mu);
			pinned = 1;
			pthread_cond_broadcast(&cv);
			while (!go)
				pthread_cond_wait(&cv, &mu);
			pthread_mutex_unlock(&mu);
			fill(data, 'C', PINNED * BLK + r->offset, len);
			reply(ih->unique, 0, data, len);
			break;
		}
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:
			break;			/* no reply */
		case FUSE_FLUSH:
		case FUSE_RELEASE:
		case FUSE_RELEASEDIR:
		case FUSE_OPENDIR:
			reply(ih->unique, 0, NULL, 0);
			break;
		default:
			reply(ih->unique, -ENOSYS, NULL, 0);
		}
	}
}

/* The direct read of 4 KiB of "data" into block PINNED of the mapping. */
static void *dio_read(void *arg)
{
	char path[4096];
	int fd;

	(void)arg;
	snprintf(path, sizeof(path), "%s/data", fusedir);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	dio_ret = pread(fd, map + PINNED * BLK, BLK, 0);
	dio_errno = errno;
	close(fd);
	return NULL;
}

/* The order of the page cache folio mapped at addr (pagemap, kpageflags). */
static int folio_order(void *addr)
{
	uint64_t ent, flags, pfn, head;
	int pm, kf, order;

	pm = open("/proc/self/pagemap", O_RDONLY);
	kf = open("/proc/kpageflags", O_RDONLY);
	if (pm < 0 || kf < 0)
		die("open pagemap/kpageflags");
	if (pread(pm, &ent, 8, (uintptr_t)addr / BLK * 8) != 8)
		die("read pagemap");
	pfn = ent & ((1ULL << 55) - 1);
	if (!(ent >> 63) || !pfn) {
		fprintf(stderr, "atomic-pin: no PFN for the pinned page\n");
		exit(2);
	}
	/* back to the compound head (bit 15), then count its tails (16) */
	for (head = pfn;; head--) {
		if (pread(kf, &flags, 8, head * 8) != 8)
			die("read kpageflags");
		if (!(flags & (1 << 16)))
			break;
	}
	order = 0;
	if (flags & (1 << 15)) {
		uint64_t n = 1;

		for (;; n++) {
			if (pread(kf, &flags, 8, (head + n) * 8) != 8)
				die("read kpageflags");
			if (!(flags & (1 << 16)))
				break;
		}
		while ((1ULL << order) < n)
			order++;
	}
	close(pm);
	close(kf);
	return order;
}

enum mode { COMMIT, ABORT, SHORT_ABORT, SHORT_COMMIT };
static const char *const mode_names[] = {
	"commit", "abort", "short-abort", "short-commit"
};

static pthread_t rd;
static int commit_fd, commit_ret, commit_errno, committed;

/* The FUSE server replies: the read completes and dirties the page. */
static void release_read(void)
{
	pthread_mutex_lock(&mu);
	go = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(rd, NULL);
	if (dio_ret != BLK) {
		errno = dio_errno;
		die("direct read into the mapping");
	}
}

static void *commit_thread(void *arg)
{
	(void)arg;
	commit_ret = ioctl(commit_fd, F2FS_IOC_COMMIT_ATOMIC_WRITE);
	commit_errno = errno;
	__atomic_store_n(&committed, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* How many times f2fs injected FAULT_ATOMIC_TIMEOUT, from inject_stats. */
static long atomic_timeouts(const char *path)
{
	char line[256];
	FILE *f = fopen(path, "r");
	long n = -1;

	if (!f)
		die(path);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "atomic timeout", 14))
			n = strtol(line + 14, NULL, 10);
	fclose(f);
	if (n < 0) {
		fprintf(stderr, "atomic-pin: no \"atomic timeout\" in %s\n",
			path);
		exit(2);
	}
	return n;
}

/*
 * The commit, with the read completing while it waits in the injected
 * FAULT_ATOMIC_TIMEOUT after moving the staged blocks to the file.
 */
static void commit_in_window(int fd, const char *stats)
{
	long before = atomic_timeouts(stats);
	struct timespec t0, t;
	pthread_t ct;

	commit_fd = fd;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pthread_create(&ct, NULL, commit_thread, NULL))
		die("pthread_create");
	while (atomic_timeouts(stats) == before) {
		if (__atomic_load_n(&committed, __ATOMIC_SEQ_CST)) {
			fprintf(stderr, "atomic-pin: the commit returned (%d) "
				"without an injected FAULT_ATOMIC_TIMEOUT: set "
				"inject_type and inject_rate first\n",
				commit_ret);
			exit(2);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 120) {
			fprintf(stderr, "atomic-pin: the commit did not reach "
				"its injected wait in 120 s\n");
			exit(2);
		}
		usleep(1000);
	}
	release_read();
	if (__atomic_load_n(&committed, __ATOMIC_SEQ_CST)) {
		fprintf(stderr, "atomic-pin: the read completed after the "
			"commit returned, not in its wait\n");
		exit(2);
	}
	pthread_join(ct, NULL);
	if (commit_ret) {
		errno = commit_errno;
		die("F2FS_IOC_COMMIT_ATOMIC_WRITE");
	}
}

/* Pattern B over block FIRST only: the copy faults on the next block. */
static void write_short(int fd)
{
	char *src = mmap(NULL, STAGED * BLK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ssize_t n;

	if (src == MAP_FAILED)
		die("mmap");
	fill(src, 'B', FIRST * BLK, BLK);
	if (mprotect(src + BLK, (STAGED - 1) * BLK, PROT_NONE))
		die("mprotect");
	n = pwrite(fd, src, STAGED * BLK, FIRST * BLK);
	if (n != BLK) {
		fprintf(stderr, "atomic-pin: a write of %d bytes from a buffer "
			"of which %d are mapped returned %zd (%s), want %d\n",
			STAGED * BLK, BLK, n, n < 0 ? strerror(errno) : "",
			BLK);
		exit(2);
	}
	munmap(src, STAGED * BLK);
}

/* Which pattern block @blk of @b holds: A, B, C or ?. */
static char pattern_of(const char *b, int blk)
{
	char t[BLK];

	for (const char *c = "ABC"; *c; c++) {
		fill(t, *c, (uint64_t)blk * BLK, BLK);
		if (!memcmp(b, t, BLK))
			return *c;
	}
	return '?';
}

static void write_back(int fd)
{
	if (sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE |
			    SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER))
		die("sync_file_range");
}

int main(int argc, char **argv)
{
	static char buf[FSIZE], want[FSIZE];
	pthread_t srv;
	char opts[128];
	unsigned char vec[NBLK];
	int fd, mode, order, blk, bad = 0;

	for (mode = 0; mode < 4; mode++)
		if (argc > 3 && !strcmp(argv[3], mode_names[mode]))
			break;
	if (mode == 4 || argc != (mode >= SHORT_ABORT ? 5 : 4)) {
		fprintf(stderr, "usage: atomic-pin FILE FUSEDIR commit|abort\n"
			"       atomic-pin FILE FUSEDIR short-abort|short-commit "
			"INJECT_STATS\n");
		return 2;
	}
	fusedir = argv[2];

	fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fuse_fd < 0)
		die("/dev/fuse");
	if (mkdir(fusedir, 0755) && errno != EEXIST)
		die(fusedir);
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=0,group_id=0", fuse_fd);
	if (mount("atomic-pin", fusedir, "fuse", MS_NOSUID | MS_NODEV, opts))
		die("mount fuse");
	atexit(unmount_fuse);
	if (pthread_create(&srv, NULL, serve, NULL))
		die("pthread_create");

	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(argv[1]);
	fill(buf, 'A', 0, FSIZE);
	if (pwrite(fd, buf, FSIZE, 0) != FSIZE || fsync(fd))
		die("write A");
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (pread(fd, buf, FSIZE, 0) != FSIZE)	/* cached, large folios */
		die("read A");
	map = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");

	/* pin block PINNED for the direct read, before the atomic write */
	if (pthread_create(&rd, NULL, dio_read, NULL))
		die("pthread_create");
	pthread_mutex_lock(&mu);
	while (!pinned) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_sec += 120;
		if (pthread_cond_timedwait(&cv, &mu, &t) == ETIMEDOUT) {
			fprintf(stderr, "atomic-pin: the direct read did not "
				"reach the FUSE server in 120 s\n");
			exit(2);
		}
	}
	pthread_mutex_unlock(&mu);
	order = folio_order(map + PINNED * BLK);
	printf("atomic-pin: %s: the pinned page is in a folio of order %d\n",
	       argv[3], order);

	if (ioctl(fd, F2FS_IOC_START_ATOMIC_WRITE))
		die("F2FS_IOC_START_ATOMIC_WRITE");
	if (mode >= SHORT_ABORT) {
		write_short(fd);
	} else {
		fill(buf, 'B', FIRST * BLK, STAGED * BLK);
		if (pwrite(fd, buf, STAGED * BLK, FIRST * BLK) != STAGED * BLK)
			die("write B");
	}
	write_back(fd);				/* staged in the COW inode */

	if (mode == SHORT_COMMIT) {
		commit_in_window(fd, argv[4]);	/* the read completes: C */
	} else {
		release_read();			/* the read completes: C */
		write_back(fd);
		if (ioctl(fd, mode == COMMIT ? F2FS_IOC_COMMIT_ATOMIC_WRITE :
			  F2FS_IOC_ABORT_ATOMIC_WRITE))
			die(mode == COMMIT ? "F2FS_IOC_COMMIT_ATOMIC_WRITE" :
			    "F2FS_IOC_ABORT_ATOMIC_WRITE");
	}
	if (munmap(map, FSIZE) || fsync(fd))
		die("munmap/fsync");
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	map = mmap(NULL, FSIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED || mincore(map, FSIZE, vec))
		die("mincore");
	for (blk = 0; blk < NBLK; blk++)
		if (vec[blk] & 1) {
			fprintf(stderr, "atomic-pin: block %d still cached after "
				"POSIX_FADV_DONTNEED\n", blk);
			return 2;
		}
	munmap(map, FSIZE);

	fill(want, 'A', 0, FSIZE);
	if (mode == COMMIT)
		fill(want + FIRST * BLK, 'B', FIRST * BLK, STAGED * BLK);
	if (mode == SHORT_COMMIT)
		fill(want + FIRST * BLK, 'B', FIRST * BLK, BLK);
	if (mode != ABORT)
		fill(want + PINNED * BLK, 'C', PINNED * BLK, BLK);
	if (pread(fd, buf, FSIZE, 0) != FSIZE)
		die("read back");
	for (blk = 0; blk < NBLK; blk++) {
		char *b = buf + blk * BLK, *w = want + blk * BLK;

		if (!memcmp(b, w, BLK))
			continue;
		printf("atomic-pin: %s: block %d holds %c, want %c\n", argv[3],
		       blk, pattern_of(b, blk), pattern_of(w, blk));
		bad = 1;
	}
	close(fd);
	if (bad)
		return 1;
	printf("atomic-pin: %s: the disk holds %s\n", argv[3],
	       mode == ABORT ? "the old data" : mode == COMMIT ?
	       "the transaction's and the read's data" :
	       "the read's data where the copy stopped short");
	return 0;
}
