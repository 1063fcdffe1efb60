// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin for ./lab insns: counts the guest kernel's instructions
 * per translation block, in windows delimited by executions of a marker
 * address (the guest calls sethostname() to open and close one).  At each
 * marker hit it writes what it counted since the previous hit to
 * OUT.<hit> ("pc instructions executions" per block) and starts again.
 * Under -icount, QEMU's clock is these instructions, so a function's share
 * of them is its share of the bench's time, exactly and without the
 * per-call overhead of a tracer.
 *
 * Plugin API version 1 (QEMU 7.2 and later), declared here: Debian ships
 * no qemu-plugin.h.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*exec_cb_t)(unsigned int vcpu, void *udata);
typedef void (*trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
					  exec_cb_t cb,
					  enum qemu_plugin_cb_flags flags,
					  void *udata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* one per translation of a block; a block translated again gets another */
struct block {
	uint64_t pc, insns, execs;
	struct block *next;
};

static struct block *blocks;
static uint64_t marker, kernel_start = 0xffffffff80000000ull;
static unsigned int hits;
static char out[4000] = "/tmp/tbcount";

static void dump(void)
{
	char path[4100];
	struct block *b;
	FILE *f;

	snprintf(path, sizeof(path), "%s.%u", out, hits);
	f = fopen(path, "w");
	for (b = blocks; b; b = b->next) {
		if (f && b->execs)
			fprintf(f, "%llx %llu %llu\n", (unsigned long long)b->pc,
				(unsigned long long)b->insns,
				(unsigned long long)b->execs);
		b->execs = 0;
	}
	if (f)
		fclose(f);
}

static void exec(unsigned int vcpu, void *udata)
{
	struct block *b = udata;

	(void)vcpu;
	if (b->pc == marker) {
		hits++;
		dump();
	}
	b->execs++;
}

static void trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t pc = qemu_plugin_tb_vaddr(tb);
	struct block *b;

	(void)id;
	if (pc < kernel_start)
		return;		/* user space: the same in every variant */
	b = calloc(1, sizeof(*b));
	if (!b)
		return;
	b->pc = pc;
	b->insns = qemu_plugin_tb_n_insns(tb);
	b->next = blocks;
	blocks = b;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, exec, QEMU_PLUGIN_CB_NO_REGS,
					     b);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
			int argc, char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "marker=", 7))
			marker = strtoull(argv[i] + 7, NULL, 16);
		else if (!strncmp(argv[i], "out=", 4))
			snprintf(out, sizeof(out), "%s", argv[i] + 4);
	}
	if (!marker) {
		fprintf(stderr, "tbcount: give marker=ADDRESS (hex)\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, trans);
	return 0;
}
