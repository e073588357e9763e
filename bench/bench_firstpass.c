/*
 * bench_firstpass.c — the first pass of a fresh process against a warm
 * one, with and without transparent huge pages (not a test: it reports,
 * never fails on a slow number).
 *
 * A person who types `attnscope MODEL -c "text …"` waits for a pass in a
 * process whose buffers have never been touched: every 4 KiB page of the
 * weights and of the run costs a minor fault on first use, and on a VM the
 * host's work of backing it (1.4-2.4 s per GiB here).  The run's capture
 * (L*H*T*T floats, 604 MB for GPT-2 small at T = 1024) and its logits
 * (206 MB) are made when first read (model.h, run.att_lazy and
 * logits_lazy), so the pass touches what it keeps instead: every layer's
 * q, k and v, the residual stream, one layer's activations and the
 * chunks it makes attention and logits in.
 * xmalloc_aligned (util.h) asks for 2 MiB pages on large blocks
 * (MADV_HUGEPAGE); xmalloc_huge_pages(false) turns that off, so both are
 * measured here in one run.
 *
 * Each round forks one child per mode, the order turning between rounds so
 * that none always runs first (a child often gets pages the one before it
 * freed, which cost the host nothing to back again):
 *   huge     the model loaded, huge pages, capture: the verdict;
 *   4 KiB    the same with 4 KiB pages;
 *   no capt  loaded, huge pages, RUN_LOGITS alone (a run that keeps one
 *            layer's q, k, v and attention);
 *   built    the model built in the child instead (model_new +
 *            model_init_random, every weight written once), huge pages,
 *            capture: the construction before the loaded one, an info
 *            row (its first pass is slower; why is not known: see
 *            docs/testing.md).
 * "Loaded" is what the CLI does: the GPT-2-small-shaped Hugging Face
 * directory of bench_gpt2dir.h (548 MB, written once by the parent to a
 * scratch directory, read from the page cache) opened by model_open_ex.
 * Without GPT-2's tokenizer (ATTNSCOPE_SHARED, else ../shared) only the
 * built modes run and the verdict is the built one's.  Each child, at
 * T = 1024 with attention capture (RUN_LOGITS | RUN_ATTN, as a session's
 * run):
 *   1. loads or builds the model;
 *   2. allocates the run and times the first model_forward;
 *   3. times WARM_REPS more passes on the same run (the median is "warm").
 * Minor faults (getrusage ru_minflt) are counted around steps 1 and 2.
 * The verdict is the median over rounds of each child's first/warm ratio:
 * a ratio of two times taken in the same child under the same load.  The
 * load average is printed beside it.  Memory: the child's peak (VmHWM) less
 * what it held before the model (VmRSS: the program, its libraries and
 * stacks) against the weights and the run's buffers (run_bytes).  The
 * program's own pages are paged in on first use too (the code of the
 * pass, libm's tables, the helper thread's stack: 0.8-1.0 MB), so before
 * its VmRSS is read the child runs one pass of a small model of the same
 * shape (SMALL_T tokens; all freed, none of it kept by xfree_aligned,
 * which is checked, and malloc trimmed after): the verdict is the peak
 * over that start, and the peak over the bare start is printed beside
 * it.  The verdict allows BOOKKEEPING bytes beyond the buffers: each
 * 2 MiB-aligned block's allocation header dirties a page before it (8 kB
 * each in smaps for the weights and the run) and the model's and run's
 * structs live on the heap; measured here at 26-34 kB in all.
 */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_common.h"
#include "bench_gpt2dir.h"
#include "config.h"
#include "loader.h"
#include "model.h"
#include "util.h"

#define ROUNDS 3
#define MODES 4
#define WARM_REPS 3
#define T_PASS 1024
#define SMALL_T 64
#define BOOKKEEPING (64.0 * 1024) /* bytes: headers and structs, not buffers */

struct result {
	int ok;
	char msg[ERR_MAX + 32];
	double build_ms, first_ms, warm_ms;
	double build_faults, first_faults, warm_faults; /* warm: per pass */
	double hwm, start; /* VmHWM at the end, VmRSS before the model */
	double bare, small_bytes; /* VmRSS before the small pass; its weights + run */
	double params_bytes, run_bytes;
};

static double minor_faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_minflt;
}

/* One pass of a small model of GPT-2-small's shape, everything freed after:
 * the program's code and stacks it pages in are the program's.  Returns
 * its weights + run bytes, 0 on a failure (the message in msg). */
static double small_pass(char *msg, size_t n)
{
	struct model_config c;
	gpt2_cfg(&c);
	c.vocab_size = 512, c.d_model = 128, c.n_layer = 2, c.n_head = 2, c.n_kv_head = 2;
	c.d_ff = 512, c.context = SMALL_T;
	struct err e = { 0 };
	struct model *m = model_new(&c, &e);
	if (!m) {
		snprintf(msg, n, "small model_new: %s", e.msg);
		return 0;
	}
	model_init_random(m, 2);
	int tokens[SMALL_T];
	random_tokens(tokens, SMALL_T, c.vocab_size, 3);
	struct run_options o;
	run_options_native(m, &o);
	struct run *r = run_new(&c, 1, SMALL_T, RUN_LOGITS | RUN_ATTN);
	double bytes = (double)m->n_params * sizeof(float) + (double)run_bytes(r);
	if (model_forward(m, &o, tokens, tokens, 1, SMALL_T, r, &e) != 0) {
		snprintf(msg, n, "small model_forward: %s", e.msg);
		bytes = 0;
	}
	run_free(r);
	model_free(m);
	malloc_trim(0);
	return bytes;
}

/* What a child runs: huge pages or not, the run's flags, the model loaded
 * from dir (else built). */
struct mode {
	bool huge;
	unsigned flags;
	bool load;
};

static const char *dir; /* the GPT-2-small directory; NULL: not written */

/* The child's model: loaded from dir or built from gpt2_cfg; NULL with
 * msg set on a failure. */
static struct model *child_model(const struct mode *md, char *msg, size_t n)
{
	struct err e = { 0 };
	struct model *m;
	if (md->load) {
		const char *fmt = NULL;
		m = model_open_ex(dir, NULL, &fmt, &e);
	} else {
		struct model_config c;
		gpt2_cfg(&c);
		m = model_new(&c, &e);
		if (m)
			model_init_random(m, 1);
	}
	if (!m)
		snprintf(msg, n, "%s: %s", md->load ? "model_open_ex" : "model_new", e.msg);
	return m;
}

static void pass_child(const void *arg, void *out)
{
	const struct mode *md = arg;
	struct result *res = out;
	xmalloc_huge_pages(md->huge);
	res->bare = proc_status_bytes("VmRSS");
	res->small_bytes = small_pass(res->msg, sizeof res->msg);
	if (res->small_bytes == 0)
		return;
	if (xmalloc_kept_bytes() != 0) {
		snprintf(res->msg, sizeof res->msg, "the small pass left %zu bytes kept",
			 xmalloc_kept_bytes());
		return;
	}
	struct err e = { 0 };
	res->start = proc_status_bytes("VmRSS");
	double f0 = minor_faults(), t0 = now_ms();
	struct model *m = child_model(md, res->msg, sizeof res->msg);
	if (!m)
		return;
	const struct model_config c = m->cfg;
	res->build_ms = now_ms() - t0;
	res->build_faults = minor_faults() - f0;
	res->params_bytes = (double)m->n_params * sizeof(float);

	int *tokens = xmalloc(T_PASS * sizeof *tokens);
	random_tokens(tokens, T_PASS, c.vocab_size, 7);
	struct run_options o;
	run_options_native(m, &o);
	f0 = minor_faults();
	t0 = now_ms();
	struct run *r = run_new(&c, 1, T_PASS, md->flags);
	int rc = model_forward(m, &o, tokens, tokens, 1, T_PASS, r, &e);
	res->first_ms = now_ms() - t0;
	res->run_bytes = (double)run_bytes(r);
	res->first_faults = minor_faults() - f0;
	double t[WARM_REPS];
	f0 = minor_faults();
	for (int i = 0; rc == 0 && i < WARM_REPS; i++) {
		t0 = now_ms();
		rc = model_forward(m, &o, tokens, tokens, 1, T_PASS, r, &e);
		t[i] = now_ms() - t0;
	}
	res->warm_faults = (minor_faults() - f0) / WARM_REPS;
	if (rc != 0)
		snprintf(res->msg, sizeof res->msg, "model_forward: %s", e.msg);
	else {
		res->warm_ms = median(t, WARM_REPS);
		res->hwm = proc_status_bytes("VmHWM");
		res->ok = 1;
	}
	run_free(r);
	free(tokens);
	model_free(m);
}

static struct result in_child(struct mode md)
{
	struct result res;
	run_in_child(pass_child, &md, 0, &res, sizeof res, res.msg, sizeof res.msg);
	return res;
}

static void print_row(const char *mode, const struct result *r, int n)
{
	double first[ROUNDS], warm[ROUNDS], ratio[ROUNDS], build[ROUNDS];
	for (int i = 0; i < n; i++) {
		first[i] = r[i].first_ms;
		warm[i] = r[i].warm_ms;
		ratio[i] = r[i].first_ms / r[i].warm_ms;
		build[i] = r[i].build_ms;
	}
	double hi = ratio[0];
	for (int i = 1; i < n; i++)
		hi = ratio[i] > hi ? ratio[i] : hi;
	printf("%-9s %9.0f %9.0f %9.0f %7.2fx  [%.2f..%.2f] %9.0f %9.0f %7.0f %8.0f\n", mode,
	       median(build, n), median(first, n), median(warm, n), median(ratio, n),
	       minimum(ratio, n), hi, r[0].build_faults, r[0].first_faults, r[0].warm_faults,
	       r[0].hwm / MB);
}

/* The table and the summary rows of n rounds of nm modes (res[mode][round]). */
static void report(struct result res[MODES][ROUNDS], int n, int nm)
{
	const struct result *on = res[0], *off = res[1], *nocap = res[2], *built = res[3];
	printf("weights %.0f MB, run buffers %.0f MB (%.0f MB without the capture); %d rounds, "
	       "medians; faults from round 1\n", on[0].params_bytes / MB, on[0].run_bytes / MB,
	       nocap[0].run_bytes / MB, n);
	printf("%-9s %9s %9s %9s %8s  %-12s %9s %9s %7s %8s\n", "mode", "model ms", "first ms",
	       "warm ms", "1st/warm", "[min..max]", "model flt", "first flt", "warm", "peak MB");
	print_row("huge", on, n);
	print_row("4 KiB", off, n);
	print_row("no capt", nocap, n);
	if (nm == MODES)
		print_row("built", built, n);
	double gain[ROUNDS];
	for (int i = 0; i < n; i++)
		gain[i] = (off[i].first_ms + off[i].build_ms) / (on[i].first_ms + on[i].build_ms);
	printf("model + first pass, 4 KiB over huge pages (median of per-round ratios): %.2fx\n",
	       median(gain, n));
	double first[ROUNDS], mem[ROUNDS], first_nocap[ROUNDS], first_built[ROUNDS];
	for (int i = 0; i < n; i++) {
		first[i] = on[i].first_ms / on[i].warm_ms;
		first_nocap[i] = nocap[i].first_ms / nocap[i].warm_ms;
		first_built[i] = nm == MODES ? built[i].first_ms / built[i].warm_ms : NAN;
		mem[i] = (on[i].hwm - on[i].start) /
			 (on[i].params_bytes + on[i].run_bytes + BOOKKEEPING);
	}
	const struct result *h = &on[0];
	double need = h->params_bytes + h->run_bytes;
	printf("the child's start: %.0f kB bare, %.0f kB after a pass of a small model (%.0f kB of "
	       "weights + run, all freed)\n", h->bare / 1024, h->start / 1024, h->small_bytes / 1024);
	printf("peak over the start %.0f kB, over the bare start %.0f kB, against weights + run "
	       "%.0f kB: %+.0f kB, %+.0f kB\n", (h->hwm - h->start) / 1024, (h->hwm - h->bare) / 1024,
	       need / 1024, (h->hwm - h->start - need) / 1024, (h->hwm - h->bare - need) / 1024);
	printf("the pass touched %.0f MB of its %.0f MB of run buffers (peak - start - weights; "
	       "without the capture %.0f MB of %.0f)\n", (h->hwm - h->start - h->params_bytes) / MB,
	       h->run_bytes / MB, (nocap[0].hwm - nocap[0].start - nocap[0].params_bytes) / MB,
	       nocap[0].run_bytes / MB);
	bench_summary_row(nm == MODES ? "first pass / warm, T = 1024, loaded, huge pages"
				      : "first pass / warm, T = 1024, built, huge pages",
			  spread_of(first, n), true, 1.2);
	bench_summary_row("peak over start / (weights + one captured pass + 64 kB)",
			  spread_of(mem, n), true, 1.0);
	bench_summary_text("first pass / warm, T = 1024, no capture", spread_of(first_nocap, n),
			   "-", "info");
	if (nm == MODES)
		bench_summary_text("first pass / warm, T = 1024, built, not loaded",
				   spread_of(first_built, n), "-", "info");
	printf("  model = model_open_ex of the directory (built: model_new + model_init_random, each\n"
	       "  weight written once); first = run_new + the first model_forward; warm = median of %d\n"
	       "  more passes on the same run; flt = minor faults (ru_minflt); peak = VmHWM\n",
	       WARM_REPS);
}

/* Writes the GPT-2-small directory the loaded modes open into a scratch
 * directory (dir); leaves dir NULL, saying why, where it cannot. */
static void write_dir(void)
{
	char vocab[600], path[600];
	const char *shared = bench_gpt2_shared(vocab, sizeof vocab);
	if (!shared) {
		printf("no GPT-2 tokenizer at %s: the model is built in each child, not loaded\n",
		       vocab);
		return;
	}
	const char *d = bench_tmpdir("firstpass");
	double t0 = now_ms();
	if (!d || gpt2dir_write(d, shared, path, sizeof path) != 0) {
		printf("cannot write the GPT-2-small directory: the model is built, not loaded\n");
		return;
	}
	dir = d;
	printf("wrote the GPT-2-small directory (%s) in %.0f ms\n", dir, now_ms() - t0);
}

int main(void)
{
	double t_start = now_ms();
	print_machine();
	printf("\nfirst pass of a fresh process vs warm passes: GPT-2-small shape, T = %d, "
	       "attention captured\n", T_PASS);
	FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char mode[128] = "unreadable";
	if (thp) {
		if (!fgets(mode, sizeof mode, thp))
			snprintf(mode, sizeof mode, "unreadable");
		mode[strcspn(mode, "\n")] = '\0';
		fclose(thp);
	}
	printf("transparent huge pages: %s\n", mode);
	write_dir();

	bool ld = dir != NULL;
	const struct mode modes[MODES] = { { true, RUN_LOGITS | RUN_ATTN, ld },
					   { false, RUN_LOGITS | RUN_ATTN, ld },
					   { true, RUN_LOGITS, ld },
					   { true, RUN_LOGITS | RUN_ATTN, false } };
	int nm = ld ? MODES : MODES - 1; /* built is mode 0 when nothing loads */
	struct result res[MODES][ROUNDS];
	int n = 0;
	for (int i = 0; i < ROUNDS; i++, n++)
		for (int k = 0; k < nm; k++) { /* round i starts with mode i % nm */
			int md = (i + k) % nm;
			res[md][i] = in_child(modes[md]);
			if (!res[md][i].ok) {
				printf("failed: %s\n", res[md][i].msg);
				return 1;
			}
		}
	report(res, n, nm);
	print_end(t_start);
	return 0;
}
