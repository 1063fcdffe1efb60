// SPDX-License-Identifier: GPL-2.0
/*
 * fx - an fsx-style file data integrity exerciser.
 *
 * fx keeps an in-memory model of one file (its bytes and its size), applies
 * a long pseudo-random sequence of operations to both the real file and the
 * model, and compares every read against the model.  The operations are
 * biased towards the places where page cache and filesystem code tends to
 * go wrong: offsets and lengths on, or a few bytes beside, 4 KiB block and
 * large folio (16 KiB .. 2 MiB) boundaries, partial blocks, unaligned
 * truncates, fallocate (allocate, punch, zero, collapse, insert), mmap
 * reads and writes, O_DIRECT mixed with buffered I/O, fsync, cache drops
 * and remounts.  Like fsx -e, mmap writes sometimes also store garbage in
 * the last page past EOF, which no later read may see: whatever grows the
 * file must zero what it exposes.
 *
 * Every byte fx writes is a hash of the op number and the file offset (see
 * pattern()) and is never zero: zeros always mean hole or extension.  On a
 * mismatch fx searches the recent writes for the bad bytes, so stale data
 * (an older write to the same offset) and misplaced blocks (data written
 * elsewhere, found a multiple of 4 KiB away) are named with the op that
 * wrote them.
 *
 * Replaying: the op sequence depends only on the seed and the options (and
 * on which fallocate modes the filesystem supports).  fx prints the seed at
 * start and a full replay command line on failure.  To bisect, rerun with
 * the same seed and --replay-until N: fx stops after op N and verifies the
 * whole file, so the smallest failing N is normally the op that corrupted
 * the data (or the last op before the corruption became visible).
 *
 * Exit status: 0 pass, 1 data mismatch or unexpected error, 2 usage or
 * environment problem.
 *
 * Build: gcc -O2 -Wall -Wextra -Werror -o fx fx.c
 */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/falloc.h>

typedef unsigned long long u64;

#define KiB		1024ULL
#define MiB		(1024 * KiB)
#define BLK		4096ULL		/* block size used in reports */
#define LOGW		144		/* width of one op log entry */
#define DROP_CACHES	"/proc/sys/vm/drop_caches"

enum {
	OP_READ, OP_WRITE, OP_MREAD, OP_MWRITE, OP_DREAD, OP_DWRITE,
	OP_TRUNC, OP_FALLOC, OP_FALLOC_KEEP, OP_PUNCH, OP_ZERO,
	OP_ZERO_KEEP, OP_COLLAPSE, OP_INSERT, OP_FSYNC, NR_OPS
};

static const char *const op_name[NR_OPS] = {
	"read", "write", "mapread", "mapwrite", "dioread", "diowrite",
	"truncate", "falloc", "falloc_keep", "punch_hole", "zero_range",
	"zero_keep", "collapse", "insert", "fsync",
};

/* Relative frequencies.  A disabled op class gets weight 0. */
static unsigned weight[NR_OPS] = {
	[OP_READ] = 24, [OP_WRITE] = 24, [OP_MREAD] = 8, [OP_MWRITE] = 8,
	[OP_DREAD] = 6, [OP_DWRITE] = 6, [OP_TRUNC] = 6,
	[OP_FALLOC] = 2, [OP_FALLOC_KEEP] = 2, [OP_PUNCH] = 4,
	[OP_ZERO] = 2, [OP_ZERO_KEEP] = 2, [OP_COLLAPSE] = 2,
	[OP_INSERT] = 2, [OP_FSYNC] = 2,	/* ~1 in 50 ops */
};

static const int falloc_mode[NR_OPS] = {
	[OP_FALLOC]	 = 0,
	[OP_FALLOC_KEEP] = FALLOC_FL_KEEP_SIZE,
	[OP_PUNCH]	 = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	[OP_ZERO]	 = FALLOC_FL_ZERO_RANGE,
	[OP_ZERO_KEEP]	 = FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
	[OP_COLLAPSE]	 = FALLOC_FL_COLLAPSE_RANGE,
	[OP_INSERT]	 = FALLOC_FL_INSERT_RANGE,
};

static const char *const falloc_name[NR_OPS] = {
	[OP_FALLOC]	 = "0 (allocate)",
	[OP_FALLOC_KEEP] = "KEEP_SIZE",
	[OP_PUNCH]	 = "PUNCH_HOLE|KEEP_SIZE",
	[OP_ZERO]	 = "ZERO_RANGE",
	[OP_ZERO_KEEP]	 = "ZERO_RANGE|KEEP_SIZE",
	[OP_COLLAPSE]	 = "COLLAPSE_RANGE",
	[OP_INSERT]	 = "INSERT_RANGE",
};

static struct {
	u64 ops, seed, maxlen, maxop, dio_align;
	u64 remount_every, drop_every, fsync_every, verify_every;
	u64 replay_until, log_tail;
	const char *remount_cmd, *file;
	bool verbose;
	bool no_mmap, no_dio, no_falloc, no_colins, no_punch, no_zero;
} opt = {
	.ops = 10000, .maxlen = 8 * MiB, .maxop = 1 * MiB,
	.dio_align = 4096, .verify_every = 1000, .log_tail = 64,
};

static const char *prog = "fx";
static int fd = -1, dfd = -1;		/* buffered and O_DIRECT fds */
static unsigned char *good;		/* model contents, zero past size */
static u64 size;			/* model file size */
static unsigned char *buf;		/* buffered I/O buffer, maxop bytes */
static unsigned char *dbuf;		/* aligned O_DIRECT buffer */
static u64 dbuf_len;
static long pagesz;
static u64 fsbs;			/* fs block size for collapse/insert */
static u64 opnum;			/* current op, 1-based */
static char curdesc[LOGW];		/* log line of the current op */
static char *ring;			/* last log_tail log lines */
static u64 nlogged;
static bool unsupported[NR_OPS], worked[NR_OPS];
static const char *dio_note;

/* Recent data writes, searched to explain where bad bytes came from. */
#define NHIST	65536
static struct wrec {
	u64 op, off, len;
	int kind;
} hist[NHIST];
static u64 nhist;

/* Who last changed each 4 KiB block of the model, for failure reports. */
static struct blkinfo {
	uint32_t op;
	uint8_t kind;
} *blk;

static struct {
	u64 reads, writes, truncs, fallocs, mmaps, dios, fsyncs;
	u64 skips, verifies, pollutes;
} cnt;

/*
 * The tail of the last page past EOF may hold garbage stored through a
 * mapping (op_mapwrite()), until a truncate zeroes it: mmap reads of that
 * tail are then not compared.
 */
static bool eof_polluted;

static u64 min64(u64 a, u64 b) { return a < b ? a : b; }
static u64 max64(u64 a, u64 b) { return a > b ? a : b; }
static u64 rdown(u64 x, u64 a) { return x - x % a; }
static u64 rup(u64 x, u64 a) { return rdown(x + a - 1, a); }

/*
 * PRNG: splitmix64.  Our own, so a seed means the same op sequence with
 * any libc.
 */
static u64 rng_state;

static u64 rnd64(void)
{
	u64 z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); the modulo bias is irrelevant here. */
static u64 rnd(u64 n)
{
	return n ? rnd64() % n : 0;
}

/*
 * Data: each aligned 8-byte word of the file gets a 64-bit hash of (op,
 * word index), so 16 bytes identify the op and the offset they were
 * written for, whatever the alignment of the write.  Zero bytes are
 * replaced: zero is reserved for holes and extensions.
 */
static u64 word_hash(u64 op, u64 off)
{
	u64 z = (off >> 3) + op * 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned char hash_byte(u64 z, u64 off)
{
	unsigned char b = z >> (off % 8 * 8);

	return b ? b : 0xa5;
}

static unsigned char pattern(u64 op, u64 off)
{
	return hash_byte(word_hash(op, off), off);
}

static void fill(unsigned char *p, u64 off, u64 len)
{
	u64 z = word_hash(opnum, off);

	for (u64 i = 0; i < len; i++) {
		if (i && (off + i) % 8 == 0)
			z = word_hash(opnum, off + i);
		p[i] = hash_byte(z, off + i);
	}
}

/* ---- logging and failure reports ---- */

static void logop(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void logop(const char *fmt, ...)
{
	char *s = ring + (nlogged++ % opt.log_tail) * LOGW;
	va_list ap;
	int n;

	n = snprintf(s, LOGW, "%7llu ", opnum);
	va_start(ap, fmt);
	vsnprintf(s + n, LOGW - n, fmt, ap);
	va_end(ap);
	memcpy(curdesc, s, LOGW);
	if (opt.verbose)
		printf("%s\n", s);
}

static void logio(int op, u64 off, u64 len)
{
	logop("%-11s 0x%08llx len 0x%06llx end 0x%08llx size 0x%llx",
	      op_name[op], off, len, off + len, size);
}

static void shquote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

static void print_replay(FILE *f)
{
	fprintf(f, "fx: seed %llu\nfx: replay: %s -N %llu -S %llu -l %llu -o %llu -d %llu",
		opt.seed, prog, opt.ops, opt.seed, opt.maxlen, opt.maxop,
		opt.dio_align);
	if (opt.no_mmap)
		fputs(" --no-mmap", f);
	if (opt.no_dio)
		fputs(" --no-dio", f);
	if (opt.no_falloc)
		fputs(" --no-fallocate", f);
	if (opt.no_colins)
		fputs(" --no-collapse-insert", f);
	if (opt.no_punch)
		fputs(" --no-punch", f);
	if (opt.no_zero)
		fputs(" --no-zero-range", f);
	if (opt.remount_cmd) {
		fputs(" -R ", f);
		shquote(f, opt.remount_cmd);
		fprintf(f, " --remount-every %llu", opt.remount_every);
	}
	if (opt.drop_every)
		fprintf(f, " --drop-caches-every %llu", opt.drop_every);
	if (opt.fsync_every)
		fprintf(f, " --fsync-every %llu", opt.fsync_every);
	if (opt.verify_every != 1000)
		fprintf(f, " --verify-every %llu", opt.verify_every);
	fputc(' ', f);
	shquote(f, opt.file);
	fprintf(f, "\nfx: (add --replay-until N to stop after op N and verify the whole file)\n");
}

static void __attribute__((noreturn)) die_fail(void)
{
	u64 n = min64(nlogged, opt.log_tail);

	fprintf(stderr, "fx: last %llu log entries (op number first):\n", n);
	for (u64 i = nlogged - n; i < nlogged; i++)
		fprintf(stderr, "fx:  %s\n", ring + (i % opt.log_tail) * LOGW);
	print_replay(stderr);
	exit(1);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "fx: FAIL at op %llu: ", opnum);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nfx:   during: %s\n", curdesc);
	die_fail();
}

static void __attribute__((noreturn)) sysfail(const char *call)
{
	fail("%s failed: %s (errno %d)", call, strerror(errno), errno);
}

/* Bad byte ranges; a gap of <= 64 matching bytes does not split a range
 * because pattern bytes can match the expected ones by chance. */
static void print_spans(u64 off, const unsigned char *got, u64 len)
{
	const unsigned char *exp = good + off;
	u64 i, j, s, e, nspans = 0, nbytes = 0;

	for (i = 0; i < len; ) {
		if (got[i] == exp[i]) {
			i++;
			continue;
		}
		s = e = i;
		for (j = i; j < len && j - e <= 64; j++) {
			if (got[j] != exp[j]) {
				e = j;
				nbytes++;
			}
		}
		if (nspans++ < 8)
			fprintf(stderr, "fx:   bad range 0x%llx..0x%llx (%llu bytes), 4 KiB blocks %llu..%llu\n",
				off + s, off + e, e - s + 1,
				(off + s) / BLK, (off + e) / BLK);
		i = j;
	}
	if (nspans > 8)
		fprintf(stderr, "fx:   ... and %llu more bad ranges\n", nspans - 8);
	fprintf(stderr, "fx:   %llu differing bytes in %llu bad range(s)\n",
		nbytes, nspans);
}

static void hexrow(const char *tag, u64 foff, const unsigned char *p, u64 n)
{
	fprintf(stderr, "fx:   0x%08llx %s", foff, tag);
	for (u64 i = 0; i < n; i++)
		fprintf(stderr, "%s%02x", i == 8 ? "  " : " ", p[i]);
	fputc('\n', stderr);
}

/* 32 bytes around the first bad byte, expected above got, ^^ marks diffs. */
static void hexdump(u64 off, const unsigned char *got, u64 len, u64 bad)
{
	u64 s = max64(bad & ~15ULL, off), e = min64(s + 32, off + len);

	for (u64 row = s; row < e; row += 16) {
		u64 n = min64(16, e - row), last = 0, i;

		hexrow("exp:", row, good + row, n);
		hexrow("got:", row, got + (row - off), n);
		for (i = 0; i < n; i++)
			if (good[row + i] != got[row - off + i])
				last = i + 1;
		if (!last)
			continue;
		fprintf(stderr, "fx:%18s", "");
		for (i = 0; i < last; i++)
			fprintf(stderr, "%s%s", i == 8 ? "  " : " ",
				good[row + i] != got[row - off + i] ? "^^" : "  ");
		fputc('\n', stderr);
	}
}

/* Does @got match what history entry @w wrote at file offset @src? */
static bool wrote(const struct wrec *w, u64 src, const unsigned char *got,
		  u64 n)
{
	u64 i;

	if (src < w->off || src + n > w->off + w->len)
		return false;
	for (i = 0; i < n && got[i] == pattern(w->op, src + i); i++)
		;
	return i == n;
}

/*
 * Guess where the bad bytes at file offset @bad came from: search the
 * recent writes for these bytes at @bad itself (stale data) or at any
 * distance that is a multiple of 4 KiB (a block or folio put at the wrong
 * index).  Collapse and insert move data legitimately, so a "moved" hit
 * across one of those is only a clue.
 */
static void explain(u64 bad, const unsigned char *got, u64 n)
{
	struct blkinfo *b = &blk[bad / BLK];
	u64 i, h, src;
	long long d;

	n = min64(n, 16);
	if (b->op)
		fprintf(stderr, "fx:   block %llu was last changed by op %u (%s)\n",
			bad / BLK, b->op, op_name[b->kind]);
	else
		fprintf(stderr, "fx:   block %llu was never written (hole or extension)\n",
			bad / BLK);
	for (i = 0; i < n && !got[i]; i++)
		;
	if (i == n) {
		fprintf(stderr, "fx:   got zeros: data lost (write not persisted, or a wrong punch/zero/truncate)\n");
		return;
	}
	for (h = nhist; h-- > nhist - min64(nhist, NHIST); ) {
		const struct wrec *w = &hist[h % NHIST];

		if (wrote(w, bad, got, n)) {
			fprintf(stderr, "fx:   got bytes are what op %llu (%s 0x%llx len 0x%llx) wrote here: stale data\n",
				w->op, op_name[w->kind], w->off, w->len);
			return;
		}
		src = w->off + (bad % BLK + BLK - w->off % BLK) % BLK;
		for (; src + n <= w->off + w->len; src += BLK) {
			if (!wrote(w, src, got, n))
				continue;
			d = (long long)(bad - src);
			fprintf(stderr, "fx:   got bytes are what op %llu (%s 0x%llx len 0x%llx) wrote at 0x%llx: moved by %s0x%llx (%lld KiB)\n",
				w->op, op_name[w->kind], w->off, w->len, src,
				d < 0 ? "-" : "+", d < 0 ? -(u64)d : (u64)d,
				d / 1024);
			return;
		}
	}
	fprintf(stderr, "fx:   got bytes are not from the last %llu writes at any 4 KiB distance: garbage or unaligned copy\n",
		min64(nhist, NHIST));
}

static void __attribute__((noreturn))
report_mismatch(const char *what, u64 off, const unsigned char *got, u64 len)
{
	u64 i, bad;

	for (i = 0; i < len && got[i] == good[off + i]; i++)
		;
	bad = off + i;
	fflush(stdout);
	fprintf(stderr, "fx: FAIL at op %llu: data mismatch in %s\n", opnum, what);
	fprintf(stderr, "fx:   during: %s\n", curdesc);
	fprintf(stderr, "fx:   checked 0x%llx..0x%llx, model size 0x%llx\n",
		off, off + len - 1, size);
	fprintf(stderr, "fx:   first bad byte at file offset 0x%llx (%llu): 4 KiB block %llu, byte 0x%llx of the block\n",
		bad, bad, bad / BLK, bad % BLK);
	print_spans(off, got, len);
	hexdump(off, got, len, bad);
	explain(bad, got + i, len - i);
	die_fail();
}

/* ---- model ---- */

static void mark(u64 off, u64 len, int kind)
{
	if (!len)
		return;
	for (u64 b = off / BLK; b <= (off + len - 1) / BLK; b++) {
		blk[b].op = opnum;
		blk[b].kind = kind;
	}
}

static void model_write(u64 off, const unsigned char *src, u64 len, int kind)
{
	struct wrec *w = &hist[nhist++ % NHIST];

	*w = (struct wrec){ .op = opnum, .off = off, .len = len, .kind = kind };
	memcpy(good + off, src, len);
	size = max64(size, off + len);
	mark(off, len, kind);
}

static void model_zero(u64 off, u64 len, int kind)
{
	memset(good + off, 0, len);
	mark(off, len, kind);
}

static void model_truncate(u64 to)
{
	if (to < size)
		model_zero(to, size - to, OP_TRUNC);
	else
		mark(size, to - size, OP_TRUNC);
	size = to;
}

/* Bytes a read of @len at @off should return. */
static u64 expect_len(u64 off, u64 len)
{
	return off < size ? min64(len, size - off) : 0;
}

static void check_read(const char *what, u64 off, u64 len,
		       const unsigned char *got, u64 n)
{
	u64 want = expect_len(off, len);
	struct stat st;

	if (memcmp(got, good + off, min64(n, want)))
		report_mismatch(what, off, got, min64(n, want));
	if (n != want) {
		st.st_size = -1;
		fstat(fd, &st);
		fail("%s of 0x%llx at 0x%llx returned 0x%llx bytes, expected 0x%llx (model size 0x%llx, st_size 0x%llx)",
		     what, len, off, n, want, size, (u64)st.st_size);
	}
}

/* ---- I/O helpers: loop over short reads and writes ---- */

static u64 pread_full(int f, unsigned char *p, u64 len, u64 off)
{
	u64 done = 0;

	while (done < len) {
		ssize_t r = pread(f, p + done, len - done, off + done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			sysfail("pread");
		if (r == 0)
			break;
		done += r;
	}
	return done;
}

static void pwrite_full(int f, const unsigned char *p, u64 len, u64 off)
{
	u64 done = 0;

	while (done < len) {
		ssize_t r = pwrite(f, p + done, len - done, off + done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			sysfail("pwrite");
		if (r == 0)
			fail("pwrite of 0x%llx at 0x%llx wrote nothing",
			     len - done, off + done);
		done += r;
	}
}

/*
 * O_DIRECT reads and writes.  A short transfer that leaves us at an
 * unaligned position cannot be continued with O_DIRECT, so the rest goes
 * through the page cache, which is legal and still checked.
 */
static u64 dio_pread(u64 len, u64 off)
{
	u64 done = 0;

	while (done < len) {
		ssize_t r = pread(dfd, dbuf + done, len - done, off + done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			sysfail("pread(O_DIRECT)");
		if (r == 0)
			break;
		done += r;
		if (done % opt.dio_align && done < len)
			return done + pread_full(fd, dbuf + done, len - done,
						 off + done);
	}
	return done;
}

static void dio_pwrite(u64 len, u64 off)
{
	u64 done = 0;

	while (done < len) {
		ssize_t r = pwrite(dfd, dbuf + done, len - done, off + done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			sysfail("pwrite(O_DIRECT)");
		if (r == 0)
			fail("O_DIRECT pwrite at 0x%llx wrote nothing", off + done);
		done += r;
		if (done % opt.dio_align && done < len) {
			pwrite_full(fd, dbuf + done, len - done, off + done);
			return;
		}
	}
}

/* ---- choosing offsets and lengths ---- */

/* Block and large folio sizes; the first four are picked more often. */
static const u64 bounds[] = {
	4 * KiB, 16 * KiB, 64 * KiB, 2 * MiB,
	8 * KiB, 32 * KiB, 128 * KiB, 256 * KiB, 512 * KiB, 1 * MiB,
};

static u64 pick_bound(void)
{
	return rnd(2) ? bounds[rnd(4)] : bounds[rnd(10)];
}

/* +-1..511 bytes: just off a block or folio boundary. */
static u64 nudge(u64 v)
{
	u64 d = 1 + rnd(511);

	return (rnd(2) || v < d) ? v + d : v - d;
}

/* A position in [0, max]: half the time on or next to a boundary. */
static u64 pick_pos(u64 max)
{
	u64 b = pick_bound(), v;

	switch (rnd(4)) {
	case 0:
		v = rnd(max / b + 1) * b;
		break;
	case 1:
		v = nudge(rnd(max / b + 1) * b);
		break;
	default:
		v = rnd(max + 1);
		break;
	}
	return min64(v, max);
}

/* A length in [1, max]: half the time a (nudged) multiple of a boundary,
 * otherwise log-uniform (many small ones) or uniform. */
static u64 pick_len(u64 max)
{
	u64 b = pick_bound(), k = max / b, v;
	int bits = 0;

	if (!max)
		return 0;
	switch (k ? rnd(4) : 2 + rnd(2)) {
	case 0:
		v = b * (1 + rnd(min64(k, 8)));
		break;
	case 1:
		v = nudge(b * (1 + rnd(min64(k, 8))));
		break;
	case 2:
		while (bits < 63 && (1ULL << (bits + 1)) <= max)
			bits++;
		v = 1 + rnd(1ULL << rnd(bits + 1));
		break;
	default:
		v = 1 + rnd(max);
		break;
	}
	return v < 1 ? 1 : min64(v, max);
}

/*
 * Offset in [0, max] for an op: mostly inside the file, sometimes at or
 * just around EOF (partial EOF blocks and folios), sometimes anywhere.
 */
static u64 pick_off(u64 max)
{
	switch (rnd(8)) {
	case 0:
		return min64(rnd(2) ? size : nudge(size), max);
	case 1:
	case 2:
		return pick_pos(max);
	default:
		return pick_pos(min64(size, max));
	}
}

static void skip(int op, const char *why)
{
	logop("%-11s skipped (%s)", op_name[op], why);
	cnt.skips++;
}

/* ---- operations ---- */

static void op_read(void)
{
	u64 off = pick_off(opt.maxlen - 1);
	u64 len = pick_len(opt.maxop);

	logio(OP_READ, off, len);
	check_read("pread", off, len, buf, pread_full(fd, buf, len, off));
	cnt.reads++;
}

static void op_write(void)
{
	u64 off = pick_off(opt.maxlen - 1);
	u64 len = pick_len(min64(opt.maxop, opt.maxlen - off));

	logio(OP_WRITE, off, len);
	fill(buf, off, len);
	pwrite_full(fd, buf, len, off);
	model_write(off, buf, len, OP_WRITE);
	cnt.writes++;
}

static void op_truncate(void)
{
	u64 to, d;

	switch (rnd(4)) {
	case 0:
		/* a small step up or down from the current size */
		d = pick_len(64 * KiB);
		to = rnd(2) ? min64(size + d, opt.maxlen) : size - min64(d, size);
		break;
	case 1:
		/* small files: EOF inside the first few folios */
		to = pick_pos(min64(opt.maxlen, 4 * pick_bound()));
		break;
	default:
		to = pick_pos(opt.maxlen);
		break;
	}
	logop("%-11s 0x%08llx -> 0x%08llx", op_name[OP_TRUNC], size, to);
	if (ftruncate(fd, to))
		sysfail("ftruncate");
	model_truncate(to);
	eof_polluted = false;
	cnt.truncs++;
}

/* Collapse: block aligned, and the range must end before EOF. */
static bool pick_collapse(u64 *off, u64 *len)
{
	u64 room;

	if (size <= fsbs)
		return false;
	*off = rdown(pick_pos(size - 1), fsbs);
	room = rdown(size - 1 - *off, fsbs);
	if (room < fsbs)
		return false;
	*len = rup(pick_len(min64(room, opt.maxop)), fsbs);
	return true;
}

/* Insert: block aligned, offset inside the file, result fits in maxlen. */
static bool pick_insert(u64 *off, u64 *len)
{
	u64 room;

	if (!size || size >= opt.maxlen)
		return false;
	room = rdown(opt.maxlen - size, fsbs);
	if (room < fsbs)
		return false;
	*off = rdown(pick_pos(size - 1), fsbs);
	*len = rup(pick_len(min64(room, opt.maxop)), fsbs);
	return true;
}

static void model_falloc(int op, u64 off, u64 len)
{
	u64 end = off + len;

	switch (op) {
	case OP_FALLOC:
		mark(size, end > size ? end - size : 0, op);
		size = max64(size, end);
		break;
	case OP_PUNCH:
	case OP_ZERO_KEEP:
		if (off < size)
			model_zero(off, min64(end, size) - off, op);
		break;
	case OP_ZERO:
		model_zero(off, len, op);
		size = max64(size, end);
		break;
	case OP_COLLAPSE:
		memmove(good + off, good + end, size - end);
		memset(good + size - len, 0, len);
		mark(off, size - off, op);
		size -= len;
		break;
	case OP_INSERT:
		memmove(good + end, good + off, size - off);
		memset(good + off, 0, len);
		size += len;
		mark(off, size - off, op);
		break;
	}
}

static void op_fallocate(int op)
{
	u64 off, len;

	if (op == OP_COLLAPSE) {
		if (!pick_collapse(&off, &len)) {
			skip(op, "file too small");
			return;
		}
	} else if (op == OP_INSERT) {
		if (!pick_insert(&off, &len)) {
			skip(op, "no room");
			return;
		}
	} else {
		off = pick_off(opt.maxlen - 1);
		len = pick_len(min64(opt.maxop, opt.maxlen - off));
	}
	logio(op, off, len);
	if (fallocate(fd, falloc_mode[op], off, len)) {
		/*
		 * Not every fs has every mode.  Only believe that if the
		 * mode never worked in this run; EINVAL counts for
		 * collapse/insert because some fs report it that way.
		 */
		bool ci = op == OP_COLLAPSE || op == OP_INSERT;

		if (!worked[op] && (errno == EOPNOTSUPP ||
				    (ci && errno == EINVAL))) {
			logop("%-11s -> %s, mode disabled", op_name[op],
			      strerror(errno));
			unsupported[op] = true;
			weight[op] = 0;
			return;
		}
		sysfail("fallocate");
	}
	worked[op] = true;
	model_falloc(op, off, len);
	cnt.fallocs++;
}

static void op_mapread(void)
{
	u64 off, len, cmp;
	void *p;

	if (!size) {
		skip(OP_MREAD, "empty file");
		return;
	}
	off = rdown(pick_pos(size - 1), pagesz);
	len = pick_len(min64(rup(size, pagesz) - off, opt.maxop));
	logio(OP_MREAD, off, len);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);
	if (p == MAP_FAILED)
		sysfail("mmap(PROT_READ)");
	/*
	 * The model is zero past EOF, as the tail of the last page must be,
	 * unless garbage was stored there through a mapping.
	 */
	cmp = eof_polluted ? min64(len, size - off) : len;
	if (memcmp(p, good + off, cmp))
		report_mismatch("mmap read", off, p, cmp);
	if (munmap(p, len))
		sysfail("munmap");
	cnt.mmaps++;
}

static void op_mapwrite(void)
{
	u64 off, len, pg;
	unsigned char *p;

	if (!size) {
		skip(OP_MWRITE, "empty file");
		return;
	}
	/* only inside [0, size): stores past EOF would SIGBUS */
	off = pick_pos(size - 1);
	len = pick_len(min64(opt.maxop, size - off));
	pg = rdown(off, pagesz);
	logio(OP_MWRITE, off, len);
	p = mmap(NULL, off + len - pg, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, pg);
	if (p == MAP_FAILED)
		sysfail("mmap(PROT_WRITE)");
	fill(buf, off, len);
	memcpy(p + (off - pg), buf, len);
	if (rnd(2) && msync(p, off + len - pg, MS_SYNC))
		sysfail("msync");
	if (munmap(p, off + len - pg))
		sysfail("munmap");
	/* and, like fsx -e, garbage in the last page past EOF */
	if (size % pagesz && rnd(2)) {
		pg = rdown(size, pagesz);
		p = mmap(NULL, pagesz, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 pg);
		if (p == MAP_FAILED)
			sysfail("mmap(PROT_WRITE) of the EOF page");
		memset(p + (size - pg), 0x5a, pg + pagesz - size);
		if (munmap(p, pagesz))
			sysfail("munmap");
		eof_polluted = true;
		cnt.pollutes++;
	}
	model_write(off, buf, len, OP_MWRITE);
	cnt.mmaps++;
}

static void op_dioread(void)
{
	u64 a = opt.dio_align;
	u64 off = rdown(pick_off(opt.maxlen - 1), a);
	u64 len = rdown(pick_len(dbuf_len), a);

	if (!len)
		len = a;
	logio(OP_DREAD, off, len);
	check_read("O_DIRECT read", off, len, dbuf, dio_pread(len, off));
	cnt.dios++;
}

static void op_diowrite(void)
{
	u64 a = opt.dio_align;
	u64 off = rdown(pick_off(opt.maxlen - a), a);
	u64 len = rdown(pick_len(min64(dbuf_len, opt.maxlen - off)), a);

	if (!len)
		len = a;
	logio(OP_DWRITE, off, len);
	fill(dbuf, off, len);
	dio_pwrite(len, off);
	model_write(off, dbuf, len, OP_DWRITE);
	cnt.dios++;
}

static void op_fsync(void)
{
	if (rnd(2)) {
		logop("fsync");
		if (fsync(fd))
			sysfail("fsync");
	} else {
		logop("fdatasync");
		if (fdatasync(fd))
			sysfail("fdatasync");
	}
	cnt.fsyncs++;
}

static void run_op(int op)
{
	switch (op) {
	case OP_READ:	op_read(); break;
	case OP_WRITE:	op_write(); break;
	case OP_MREAD:	op_mapread(); break;
	case OP_MWRITE:	op_mapwrite(); break;
	case OP_DREAD:	op_dioread(); break;
	case OP_DWRITE:	op_diowrite(); break;
	case OP_TRUNC:	op_truncate(); break;
	case OP_FSYNC:	op_fsync(); break;
	default:	op_fallocate(op); break;
	}
}

static int pick_op(void)
{
	unsigned total = 0, r;
	int op;

	if (opt.fsync_every && opnum % opt.fsync_every == 0)
		return OP_FSYNC;
	for (op = 0; op < NR_OPS; op++)
		total += weight[op];
	r = rnd(total);
	for (op = 0; r >= weight[op]; op++)
		r -= weight[op];
	return op;
}

/* ---- whole-file checks, cache drops, remounts ---- */

static void verify_file(const char *why)
{
	char what[64];
	struct stat st;
	u64 off, n, want;

	logop("verify      whole file, %s, size 0x%llx", why, size);
	snprintf(what, sizeof(what), "whole-file verify (%s)", why);
	if (fstat(fd, &st))
		sysfail("fstat");
	if ((u64)st.st_size != size)
		fail("%s: st_size is 0x%llx, model says 0x%llx", what,
		     (u64)st.st_size, size);
	for (off = 0; off < size; off += opt.maxop) {
		want = min64(opt.maxop, size - off);
		n = pread_full(fd, buf, want, off);
		check_read(what, off, want, buf, n);
	}
	/* nothing may be readable at or past EOF */
	check_read(what, size, 1, buf, pread_full(fd, buf, 1, size));
	cnt.verifies++;
}

/* Returns 0 or an errno value. */
static int write_drop_caches(void)
{
	int f = open(DROP_CACHES, O_WRONLY), err = 0;

	if (f < 0)
		return errno;
	if (write(f, "3", 1) != 1)
		err = errno ? errno : EIO;
	close(f);
	return err;
}

static void __attribute__((noreturn)) drop_caches_error(int err)
{
	fprintf(stderr, "fx: cannot write 3 to %s: %s\n"
		"fx: --drop-caches-every needs root and a writable /proc/sys\n",
		DROP_CACHES, strerror(err));
	exit(2);
}

static void drop_caches(void)
{
	int err;

	logop("drop_caches");
	if (fsync(fd))
		sysfail("fsync");
	err = write_drop_caches();
	if (err)
		drop_caches_error(err);
	verify_file("after drop_caches");
}

static void open_files(bool create)
{
	int flags = O_RDWR | (create ? O_CREAT | O_TRUNC : 0);

	fd = open(opt.file, flags, 0644);
	if (fd < 0 && create) {
		fprintf(stderr, "fx: cannot create %s: %s\n", opt.file,
			strerror(errno));
		exit(2);
	}
	if (fd < 0)
		sysfail("reopen");
	if (opt.no_dio || dio_note)
		return;
	dfd = open(opt.file, O_RDWR | O_DIRECT);
	if (dfd >= 0)
		return;
	if (errno != EINVAL)
		sysfail("open(O_DIRECT)");
	dio_note = "O_DIRECT open failed with EINVAL, O_DIRECT ops disabled";
	printf("fx: %s\n", dio_note);
	weight[OP_DREAD] = weight[OP_DWRITE] = 0;
}

static void remount(void)
{
	int rc;

	logop("remount     %s", opt.remount_cmd);
	if (dfd >= 0)
		close(dfd);
	close(fd);
	dfd = fd = -1;
	fflush(stdout);
	rc = system(opt.remount_cmd);
	if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc))
		fail("remount command failed (wait status 0x%x): %s", rc,
		     opt.remount_cmd);
	open_files(false);
	verify_file("after remount");
}

static void fs_block_size(void)
{
	struct statvfs sv;

	/* collapse/insert need fs block alignment; 4 KiB unless larger */
	fsbs = 4096;
	if (!fstatvfs(fd, &sv) && sv.f_bsize > 4096 && sv.f_bsize <= 65536 &&
	    !(sv.f_bsize & (sv.f_bsize - 1)))
		fsbs = sv.f_bsize;
}

static void on_signal(int sig)
{
	/*
	 * Not async-signal-safe, but we are about to exit and the report
	 * is worth more than the risk.  SIGBUS here means an mmap access
	 * inside i_size faulted: the fs failed a page fault.
	 */
	fail("got signal %s during an mmap access", strsignal(sig));
}

/* ---- options ---- */

enum {
	O_NO_MMAP = 256, O_NO_DIO, O_NO_FALLOC, O_NO_COLINS, O_NO_PUNCH,
	O_NO_ZERO, O_REMOUNT_EVERY, O_DROP_EVERY, O_FSYNC_EVERY,
	O_VERIFY_EVERY, O_LOG_TAIL, O_REPLAY_UNTIL,
};

static const struct option longopts[] = {
	{ "ops",		required_argument, NULL, 'N' },
	{ "seed",		required_argument, NULL, 'S' },
	{ "maxlen",		required_argument, NULL, 'l' },
	{ "maxop",		required_argument, NULL, 'o' },
	{ "dio-align",		required_argument, NULL, 'd' },
	{ "no-mmap",		no_argument,	   NULL, O_NO_MMAP },
	{ "no-dio",		no_argument,	   NULL, O_NO_DIO },
	{ "no-fallocate",	no_argument,	   NULL, O_NO_FALLOC },
	{ "no-collapse-insert",	no_argument,	   NULL, O_NO_COLINS },
	{ "no-punch",		no_argument,	   NULL, O_NO_PUNCH },
	{ "no-zero-range",	no_argument,	   NULL, O_NO_ZERO },
	{ "remount-cmd",	required_argument, NULL, 'R' },
	{ "remount-every",	required_argument, NULL, O_REMOUNT_EVERY },
	{ "drop-caches-every",	required_argument, NULL, O_DROP_EVERY },
	{ "fsync-every",	required_argument, NULL, O_FSYNC_EVERY },
	{ "verify-every",	required_argument, NULL, O_VERIFY_EVERY },
	{ "verbose",		no_argument,	   NULL, 'v' },
	{ "log-tail",		required_argument, NULL, O_LOG_TAIL },
	{ "replay-until",	required_argument, NULL, O_REPLAY_UNTIL },
	{ "help",		no_argument,	   NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: %s [options] FILE\n"
"fsx-style data integrity exerciser: random I/O on FILE checked against an\n"
"in-memory model.  Sizes accept k/m/g suffixes.\n"
"  -N, --ops N               number of operations (default 10000)\n"
"  -S, --seed N              random seed (default: from time and pid)\n"
"  -l, --maxlen N            maximum file size (default 8m)\n"
"  -o, --maxop N             maximum size of one read/write (default 1m)\n"
"  -d, --dio-align N         O_DIRECT offset/length alignment (default 4096)\n"
"      --no-mmap             no mmap reads/writes\n"
"      --no-dio              no O_DIRECT reads/writes\n"
"      --no-fallocate        no fallocate of any kind\n"
"      --no-collapse-insert  no COLLAPSE_RANGE / INSERT_RANGE\n"
"      --no-punch            no PUNCH_HOLE\n"
"      --no-zero-range       no ZERO_RANGE\n"
"  -R, --remount-cmd CMD     shell command run with the file closed, e.g.\n"
"                            'umount /mnt && mount /dev/vdb /mnt'\n"
"      --remount-every N     run the remount command every N ops\n"
"      --drop-caches-every N fsync, drop caches and verify every N ops\n"
"      --fsync-every N       fsync every N ops (default: randomly, ~1 in 50)\n"
"      --verify-every N      verify the whole file every N ops (default 1000,\n"
"                            0 = only at the end)\n"
"  -v, --verbose             log every op\n"
"      --log-tail N          ops kept for the failure report (default 64)\n"
"      --replay-until N      stop after op N, then verify (bisecting)\n"
"  -h, --help                this text\n"
"exit status: 0 pass, 1 failure, 2 usage or environment error\n", prog);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s: try '%s --help'\n", prog, prog);
	exit(2);
}

static u64 parse_num(const char *s, const char *name)
{
	int base = 10, shift = 0;
	char *end;
	u64 v;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16;
	errno = 0;
	v = strtoull(s, &end, base);
	switch (tolower((unsigned char)*end)) {
	case 'k': shift = 10; end++; break;
	case 'm': shift = 20; end++; break;
	case 'g': shift = 30; end++; break;
	}
	if (!isdigit((unsigned char)s[0]) || *end || errno ||
	    v > (~0ULL >> shift))
		usage_error("bad number '%s' for --%s", s, name);
	return v << shift;
}

static void parse_args(int argc, char **argv)
{
	struct timespec ts;
	bool seeded = false;
	int c, idx;

	prog = argv[0];
	while ((c = getopt_long(argc, argv, "N:S:l:o:d:R:vh", longopts,
				&idx)) != -1) {
		const char *name = "option";

		for (idx = 0; longopts[idx].name; idx++)
			if (longopts[idx].val == c)
				name = longopts[idx].name;
		switch (c) {
		case 'N': opt.ops = parse_num(optarg, name); break;
		case 'S': opt.seed = parse_num(optarg, name); seeded = true; break;
		case 'l': opt.maxlen = parse_num(optarg, name); break;
		case 'o': opt.maxop = parse_num(optarg, name); break;
		case 'd': opt.dio_align = parse_num(optarg, name); break;
		case 'R': opt.remount_cmd = optarg; break;
		case 'v': opt.verbose = true; break;
		case 'h': usage(stdout); exit(0);
		case O_NO_MMAP: opt.no_mmap = true; break;
		case O_NO_DIO: opt.no_dio = true; break;
		case O_NO_FALLOC: opt.no_falloc = true; break;
		case O_NO_COLINS: opt.no_colins = true; break;
		case O_NO_PUNCH: opt.no_punch = true; break;
		case O_NO_ZERO: opt.no_zero = true; break;
		case O_REMOUNT_EVERY: opt.remount_every = parse_num(optarg, name); break;
		case O_DROP_EVERY: opt.drop_every = parse_num(optarg, name); break;
		case O_FSYNC_EVERY: opt.fsync_every = parse_num(optarg, name); break;
		case O_VERIFY_EVERY: opt.verify_every = parse_num(optarg, name); break;
		case O_LOG_TAIL: opt.log_tail = parse_num(optarg, name); break;
		case O_REPLAY_UNTIL: opt.replay_until = parse_num(optarg, name); break;
		default:	/* getopt has said what is wrong */
			fprintf(stderr, "%s: try '%s --help'\n", prog, prog);
			exit(2);
		}
	}
	if (optind != argc - 1)
		usage_error(optind < argc ? "exactly one FILE expected" :
			    "missing FILE");
	opt.file = argv[optind];
	if (opt.maxlen < 64 * KiB || opt.maxlen > 64ULL * 1024 * MiB)
		usage_error("--maxlen must be between 64k and 64g");
	if (!opt.maxop)
		usage_error("--maxop must be at least 1");
	opt.maxop = min64(opt.maxop, opt.maxlen);
	if (opt.dio_align < 512 || opt.dio_align > opt.maxlen / 4 ||
	    (opt.dio_align & (opt.dio_align - 1)))
		usage_error("--dio-align must be a power of two, >= 512 and <= maxlen/4");
	if (opt.remount_every && !opt.remount_cmd)
		usage_error("--remount-every needs --remount-cmd");
	if (!opt.remount_every)
		opt.remount_cmd = NULL;		/* 0 = never */
	if (!opt.log_tail || opt.log_tail > 1000000)
		usage_error("--log-tail must be between 1 and 1000000");
	if (!seeded) {
		clock_gettime(CLOCK_REALTIME, &ts);
		rng_state = ts.tv_sec ^ ((u64)ts.tv_nsec << 20) ^
			    ((u64)getpid() << 40);
		opt.seed = rnd64() & 0xffffffffULL;
	}
}

static void apply_disables(void)
{
	static const int fa[] = {
		OP_FALLOC, OP_FALLOC_KEEP, OP_PUNCH, OP_ZERO, OP_ZERO_KEEP,
		OP_COLLAPSE, OP_INSERT,
	};

	if (opt.no_mmap)
		weight[OP_MREAD] = weight[OP_MWRITE] = 0;
	if (opt.no_dio)
		weight[OP_DREAD] = weight[OP_DWRITE] = 0;
	if (opt.no_falloc)
		for (unsigned i = 0; i < sizeof(fa) / sizeof(fa[0]); i++)
			weight[fa[i]] = 0;
	if (opt.no_colins)
		weight[OP_COLLAPSE] = weight[OP_INSERT] = 0;
	if (opt.no_punch)
		weight[OP_PUNCH] = 0;
	if (opt.no_zero)
		weight[OP_ZERO] = weight[OP_ZERO_KEEP] = 0;
	if (opt.fsync_every)
		weight[OP_FSYNC] = 0;
}

static void *xalloc(u64 n)
{
	void *p = calloc(1, n);

	if (!p) {
		fprintf(stderr, "fx: out of memory (%llu bytes)\n", n);
		exit(2);
	}
	return p;
}

static void setup(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	/* room for the page after a maxlen that is not page aligned */
	u64 mlen = rup(opt.maxlen, 2 * MiB) + 2 * MiB;
	int err;

	pagesz = sysconf(_SC_PAGESIZE);
	good = xalloc(mlen);
	blk = xalloc(mlen / BLK * sizeof(*blk));
	buf = xalloc(opt.maxop);
	ring = xalloc(opt.log_tail * LOGW);
	dbuf_len = max64(rdown(opt.maxop, opt.dio_align), opt.dio_align);
	err = posix_memalign((void **)&dbuf, max64(opt.dio_align, pagesz),
			     dbuf_len);
	if (err) {
		fprintf(stderr, "fx: posix_memalign: %s\n", strerror(err));
		exit(2);
	}
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	if (opt.drop_every) {
		err = write_drop_caches();
		if (err)
			drop_caches_error(err);
	}
}

int main(int argc, char **argv)
{
	u64 last;
	int op;

	parse_args(argc, argv);
	apply_disables();
	setup();
	printf("fx: seed %llu\n", opt.seed);
	fflush(stdout);
	open_files(true);
	fs_block_size();

	rng_state = opt.seed;
	last = opt.ops;
	if (opt.replay_until && opt.replay_until < last)
		last = opt.replay_until;
	for (opnum = 1; opnum <= last; opnum++) {
		op = pick_op();
		run_op(op);
		if (opt.verify_every && opnum % opt.verify_every == 0)
			verify_file("periodic");
		if (opt.drop_every && opnum % opt.drop_every == 0)
			drop_caches();
		if (opt.remount_every && opnum % opt.remount_every == 0)
			remount();
	}
	opnum = last;
	verify_file("final");

	for (op = 0; op < NR_OPS; op++)
		if (unsupported[op])
			printf("fx: fallocate mode %s unsupported here, disabled\n",
			       falloc_name[op]);
	if (dio_note)
		printf("fx: note: %s\n", dio_note);
	printf("fx: PASS ops=%llu seed=%llu size=%llu reads=%llu writes=%llu truncates=%llu falloc=%llu mmap=%llu eof-garbage=%llu dio=%llu fsyncs=%llu skipped=%llu verifies=%llu\n",
	       last, opt.seed, size, cnt.reads, cnt.writes, cnt.truncs,
	       cnt.fallocs, cnt.mmaps, cnt.pollutes, cnt.dios, cnt.fsyncs,
	       cnt.skips, cnt.verifies);
	return 0;
}
