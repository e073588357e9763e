/*
 * bench_generate.c — generation benchmark: the step decoder (decode.h) on a
 * stories15M-shaped llama2.c model (not a test: it never fails on a slow
 * number, it only reports).
 *
 * The model is built in memory (model_new, model_init_random): d_model 288,
 * 6 layers, 6 heads, d_ff 768, vocabulary 32000, context 256, RMSNorm,
 * RoPE, SwiGLU, no biases, tied output, as llama2.c's stories15M; and the
 * same shape with 2 key/value heads (GQA, native, not a conversion).
 *
 * `generate` (cmd-generate.c) prefills by stepping: one decoder_step per
 * prompt token, each also computing the 32000 logits, of which only the
 * last step's are used; then one decoder_step and one sampler_sample
 * (temperature 0.8, top-k 40) per new token.  Prints, in one run:
 *   1. the machine, the cblas_sgemm rate and a read rate: a sum over a
 *      buffer the size of the weights one step reads;
 *   2. one row through the output layer's matrix by cblas_sgemm with M = 1
 *      and by cblas_sgemv (what matmul_forward uses for one row);
 *   3. prefill of P = 32 and 128 tokens by stepping, and by decoder_prefill
 *      (one model_forward keeping the keys and values: what generate does),
 *      timed in pairs in one child so that their ratio shares the load;
 *   4. decode: the mean time of 64 steps after a 32- and a 128-token
 *      prefill, each step timed, the sampler timed apart;
 *   5. the KV cache: decoder_cache_bytes beside kv_cache_bytes() (model.h);
 *   6. `generate 250` end to end through cmd_run_line against the engine's
 *      own loop for the same generation, paired per round, the two in
 *      alternating order (--e2e: this section alone), with llama2.c's
 *      tokenizer, whose merges give a random model's text back as other ids
 *      (the text then runs a pass of its own), and with a tokenizer of
 *      single characters, whose text tokenizes back into the ids made (its
 *      run is the decoder's steps);
 *   7. where LLAMA_BENCH names a llama-bench binary (bench_llama.h), in the
 *      same rounds as 6 with llama2.c's tokenizer: llama.cpp's tg250 and
 *      pp128 on the same weights written as GGUF, against generate's
 *      tokens/s and decoder_prefill of 128 tokens.  Those are then the
 *      verdicts (targets >= 1.0x its tokens/s, within 1.2x its prefill
 *      time), and the rows against the engine's own loop information; the
 *      loop is the bar where llama.cpp is not measured.
 * Each beside its FLOP floor: the matmul FLOPs of that work at the sgemm
 * rate of this run.  A step multiplies one row through every matrix
 * (GEMV): it reads each weight once for 2 FLOPs, so it is bound by memory
 * bandwidth, and the sgemm floor is not reachable; the weight bytes per
 * token and the implied GB/s are printed too.
 *
 * Every measurement runs in its own forked child (its own peak RSS,
 * VmHWM); medians over several repetitions; the parent never computes.
 * Threads: the default (the cores present), as bench_forward; --threads N
 * runs everything, the sgemm rate included, with N.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <sys/stat.h>

#include "bench_common.h"
#include "bench_llama.h"
#include "cmd.h"
#include "config.h"
#include "decode.h"
#include "session.h"
#include "model.h"
#include "sampler.h"
#include "util.h"

#define MAX_REPS 9
#define MIN_REPS 3
#define ROW_BUDGET_MS 3000.0
#define DECODE_STEPS 64
#define GEMV_REPS 41

/* The sampler of generate's defaults (cmd-generate.c). */
#define GEN_TEMPERATURE 0.8f
#define GEN_TOP_K 40
#define GEN_SEED 1337u

static const char *self; /* argv[0]: tools are found beside it */
static int threads; /* --threads; 0 = the default */
static int e2e_only; /* --e2e: only the end-to-end section */

struct result {
	int ok;
	char msg[ERR_MAX + 32];
	double median_ms, min_ms; /* per repetition, or per token for decode */
	int reps;
	double sample_ms;         /* decode: median sampler time per token */
	double hwm;               /* VmHWM at the end of the child */
	double cpu_per_wall;
	double cache_bytes;       /* decoder_cache_bytes for cap = the positions used */
	double cache_bytes_ctx;   /* decoder_cache_bytes for cap 0 (the context) */
	int cap, G;
	double gflops;            /* sgemm child */
	double read_gbs;          /* read child: GB/s */
	double gemv_sgemm_ms, gemv_sgemv_ms; /* gemv child */
	double fwd_ms, fwd_min_ms; /* prefill: the decoder_prefill of each pair */
	double ratio;             /* prefill: median of (steps / decoder_prefill) over the pairs */
	struct spread e2e;        /* end to end: loop ms / generate ms per round */
	int e2e_prompt, e2e_tokens; /* end to end: the prompt's tokens, the text's after generate */
	/* end to end beside llama.cpp (LLAMA_BENCH): its tg and pp ms, our
	 * prefill of LLAMA_PP tokens, the paired ratios (n: rounds it ran) */
	double ll_tg_ms, ll_pp_ms, pre_ms;
	struct spread vs_tg, vs_pp;
	int ll_rounds;
};

static struct result in_child(child_fn fn, const void *arg)
{
	struct result res;
	run_in_child(fn, arg, threads, &res, sizeof res, res.msg, sizeof res.msg);
	return res;
}

/* ----------------------------------------------------------- references */

static void sgemm_child(const void *arg, void *out)
{
	(void)arg;
	struct result *res = out;
	struct sgemm_rate sg = measure_sgemm();
	res->median_ms = sg.median_ms;
	res->min_ms = sg.min_ms;
	res->cpu_per_wall = sg.cpu_per_wall;
	res->gflops = sg.gflops;
	res->reps = SGEMM_REPS;
	res->ok = 1;
}

/* Sums a buffer of *(const double *)arg bytes, GEMV_REPS times: the rate
 * at which this machine reads that much (one thread, vectorised). */
static void read_child(const void *arg, void *out)
{
	struct result *res = out;
	size_t n = (size_t)(*(const double *)arg / sizeof(float));
	float *buf = xmalloc_aligned(n * sizeof *buf);
	for (size_t i = 0; i < n; i++)
		buf[i] = (float)(i & 255) * 0.001f;
	double t[GEMV_REPS];
	volatile float sink = 0;
	for (int r = -1; r < GEMV_REPS; r++) {
		double t0 = now_ms();
		float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
		for (size_t i = 0; i + 8 <= n; i += 8) {
			s0 += buf[i];
			s1 += buf[i + 1];
			s2 += buf[i + 2];
			s3 += buf[i + 3];
			s4 += buf[i + 4];
			s5 += buf[i + 5];
			s6 += buf[i + 6];
			s7 += buf[i + 7];
		}
		sink = sink + s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
		if (r >= 0)
			t[r] = now_ms() - t0;
	}
	res->median_ms = median(t, GEMV_REPS);
	res->read_gbs = (double)n * sizeof(float) / (res->median_ms * 1e6);
	res->reps = GEMV_REPS;
	res->hwm = proc_status_bytes("VmHWM");
	res->ok = 1;
	free(buf);
}

/* One row through the (V, C) output matrix by cblas_sgemm with M = 1 and
 * by cblas_sgemv (matmul_forward's choice for one row, as a step has). */
static void gemv_child(const void *arg, void *out)
{
	const struct model_config *c = arg;
	struct result *res = out;
	int V = c->vocab_size, C = c->d_model;
	float *w = xmalloc_aligned((size_t)V * C * sizeof *w);
	float *x = xmalloc_aligned((size_t)C * sizeof *x);
	float *y = xmalloc_aligned((size_t)V * sizeof *y);
	struct rng r;
	rng_seed(&r, 3);
	for (size_t i = 0; i < (size_t)V * C; i++)
		w[i] = rng_uniform(&r) - 0.5f;
	for (int i = 0; i < C; i++)
		x[i] = rng_uniform(&r) - 0.5f;
	double ta[GEMV_REPS], tb[GEMV_REPS];
	for (int i = -1; i < GEMV_REPS; i++) {
		double t0 = now_ms();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, V, C, 1.0f, x, C, w, C,
			    0.0f, y, V);
		double t1 = now_ms();
		cblas_sgemv(CblasRowMajor, CblasNoTrans, V, C, 1.0f, w, C, x, 1, 0.0f, y, 1);
		double t2 = now_ms();
		if (i >= 0) {
			ta[i] = t1 - t0;
			tb[i] = t2 - t1;
		}
	}
	res->gemv_sgemm_ms = median(ta, GEMV_REPS);
	res->gemv_sgemv_ms = median(tb, GEMV_REPS);
	res->reps = GEMV_REPS;
	res->ok = 1;
	free(w);
	free(x);
	free(y);
}

/* ---------------------------------------------------------- generation */

enum job_kind {
	PREFILL,         /* P decoder_steps from an empty cache, paired with one
			  * model_forward over the same P tokens (RUN_LOGITS) */
	DECODE,          /* P steps untimed, then DECODE_STEPS steps timed one by one */
};

struct gen_job {
	const char *name;
	struct model_config cfg;
	enum job_kind kind;
	int P;
};

/* The model of job j, seeded random weights; NULL with res->msg set. */
static struct model *job_model(const struct gen_job *j, struct result *res)
{
	struct err e;
	struct model *m = model_new(&j->cfg, &e);
	if (!m) {
		snprintf(res->msg, sizeof res->msg, "model_new: %s", e.msg);
		return NULL;
	}
	model_init_random(m, 1234);
	return m;
}

/* Steps tokens[0..n) into d from an empty cache; 0 or -1 with res->msg. */
static int prefill(struct decoder *d, struct model *m, const int *tokens, int n,
		   struct result *res)
{
	struct err e;
	decoder_reset(d);
	for (int i = 0; i < n; i++)
		if (decoder_step(d, m, tokens[i], &e) != 0) {
			snprintf(res->msg, sizeof res->msg, "decoder_step: %s", e.msg);
			return -1;
		}
	return 0;
}

/* One warm-up of each, then `reps` pairs: P steps, then decoder_prefill
 * of the same tokens (one model_forward keeping every layer's keys and
 * values, what generate does); the ratio of each pair is taken under the same
 * load (other work on these cores comes and goes within a run).  The
 * child's VmHWM is taken after the steps' warm-up, before the forward
 * pass's run exists. */
static void prefill_job(const struct gen_job *j, struct model *m, const int *tokens,
			struct result *res)
{
	struct err e;
	struct run_options o;
	run_options_native(m, &o);
	struct decoder *d = decoder_new(m, &o, j->P, &e);
	if (!d) {
		snprintf(res->msg, sizeof res->msg, "decoder_new: %s", e.msg);
		return;
	}
	double t0 = now_ms();
	if (prefill(d, m, tokens, j->P, res) != 0)
		goto out;
	double warm = now_ms() - t0;
	res->hwm = proc_status_bytes("VmHWM");
	double ts[MAX_REPS], tf[MAX_REPS], ratio[MAX_REPS];
	int reps = fit_reps(warm, MAX_REPS, ROW_BUDGET_MS, MIN_REPS);
	for (int i = -1; i < reps; i++) {
		t0 = now_ms();
		if (prefill(d, m, tokens, j->P, res) != 0)
			goto out;
		double t1 = now_ms();
		decoder_reset(d);
		if (decoder_prefill(d, m, tokens, j->P, &e) != 0) {
			snprintf(res->msg, sizeof res->msg, "decoder_prefill: %s", e.msg);
			goto out;
		}
		if (i >= 0) {
			ts[i] = t1 - t0;
			tf[i] = now_ms() - t1;
			ratio[i] = ts[i] / tf[i];
		}
	}
	res->median_ms = median(ts, reps);
	res->min_ms = minimum(ts, reps);
	res->fwd_ms = median(tf, reps);
	res->fwd_min_ms = minimum(tf, reps);
	res->ratio = median(ratio, reps);
	res->reps = reps;
	res->cap = d->cap;
	res->G = d->G;
	res->cache_bytes = (double)decoder_cache_bytes(d);
	res->ok = 1;
out:
	decoder_free(d);
}

static void decode_job(const struct gen_job *j, struct model *m, const int *tokens,
		       struct result *res)
{
	struct err e;
	struct run_options o;
	run_options_native(m, &o);
	int cap = j->P + DECODE_STEPS;
	struct decoder *d = decoder_new(m, &o, cap, &e);
	if (!d) {
		snprintf(res->msg, sizeof res->msg, "decoder_new: %s", e.msg);
		return;
	}
	struct decoder *full = decoder_new(m, &o, 0, &e); /* what cap 0 allocates */
	res->cache_bytes_ctx = full ? (double)decoder_cache_bytes(full) : 0;
	decoder_free(full);
	struct sampler sp;
	sampler_init(&sp, j->cfg.vocab_size, GEN_TEMPERATURE, GEN_TOP_K, GEN_SEED);

	double tok_ms[MAX_REPS], samp_ms[MAX_REPS], cpu_all = 0, wall_all = 0;
	int reps = MAX_REPS;
	for (int i = -1; i < reps; i++) {
		double t_rep = now_ms();
		if (prefill(d, m, tokens, j->P, res) != 0)
			goto out;
		double cpu0 = cpu_time_ms(), step = 0, samp = 0;
		for (int s = 0; s < DECODE_STEPS; s++) {
			double t0 = now_ms();
			int tok = sampler_sample(&sp, d->logits, -1);
			double t1 = now_ms();
			if (decoder_step(d, m, tok, &e) != 0) {
				snprintf(res->msg, sizeof res->msg, "decoder_step: %s", e.msg);
				goto out;
			}
			samp += t1 - t0;
			step += now_ms() - t1;
		}
		if (i < 0) {
			reps = fit_reps(now_ms() - t_rep, reps, ROW_BUDGET_MS, MIN_REPS);
		} else {
			tok_ms[i] = step / DECODE_STEPS;
			samp_ms[i] = samp / DECODE_STEPS;
			cpu_all += cpu_time_ms() - cpu0;
			wall_all += step + samp;
		}
	}
	res->cpu_per_wall = cpu_all / wall_all;
	res->median_ms = median(tok_ms, reps);
	res->min_ms = minimum(tok_ms, reps);
	res->sample_ms = median(samp_ms, reps);
	res->reps = reps;
	res->cap = d->cap;
	res->G = d->G;
	res->cache_bytes = (double)decoder_cache_bytes(d);
	res->ok = 1;
out:
	sampler_free(&sp);
	decoder_free(d);
}

static void gen_child(const void *arg, void *out)
{
	const struct gen_job *j = arg;
	struct result *res = out;
	struct model *m = job_model(j, res);
	if (!m)
		return;
	int n = j->P + DECODE_STEPS;
	int *tokens = xmalloc((size_t)n * sizeof *tokens);
	random_tokens(tokens, n, j->cfg.vocab_size, 42);
	if (j->kind == PREFILL) {
		prefill_job(j, m, tokens, res);
	} else {
		decode_job(j, m, tokens, res);
		res->hwm = proc_status_bytes("VmHWM");
	}
	free(tokens);
	model_free(m);
}

/* ------------------------------------------------- generate end to end */

#define E2E_TOKENS 250
#define E2E_REPS 5
#define E2E_PROMPT "Once upon a time"
#define E2E_TARGET 1.0

#define LLAMA_PP 128 /* the prompt llama-bench and decoder_prefill are timed on */

struct e2e_job {
	char path[600]; /* a llama2.c checkpoint with tokenizer.bin beside it */
	char gguf[600]; /* the same weights as GGUF for llama-bench, or "" */
};

/* The engine's own loop for the same generation as `generate N` with its
 * defaults: decoder_prefill of the text, then N samples and N - 1 steps
 * (no printing, no display pass).  0 or -1 with e set. */
static int decode_loop(struct model *m, const struct run_options *o, const int *tokens, int n,
		       int N, struct err *e)
{
	struct decoder *d = decoder_new(m, o, n + N, e);
	if (!d)
		return -1;
	struct sampler sp;
	sampler_init(&sp, decoder_ids(m), GEN_TEMPERATURE, GEN_TOP_K, GEN_SEED);
	int rc = decoder_prefill(d, m, tokens, n, e), unk = m->tok ? m->tok->unk_id : -1;
	for (int made = 0; rc == 0 && made < N;) {
		int t = sampler_sample(&sp, d->logits, unk);
		if (++made < N)
			rc = decoder_step(d, m, t, e);
	}
	sampler_free(&sp);
	decoder_free(d);
	return rc;
}

/* One round beside llama.cpp: llama-bench on j->gguf (a prompt of
 * LLAMA_PP tokens, a generation of E2E_TOKENS) into *ll_tg / *ll_pp (ms),
 * then decoder_prefill of LLAMA_PP tokens (random ids, tok) on the
 * session's model, after one warm-up as llama-bench has, into *pre (ms).
 * Whether both ran. */
static bool llama_round(const struct e2e_job *j, struct session *s, int *tok, double *ll_tg,
			double *ll_pp, double *pre)
{
	struct model *m = s->model;
	int cores = threads ? threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (llama_bench_once(llama_bench_path(), j->gguf, LLAMA_PP, E2E_TOKENS, cores, ll_pp,
			     ll_tg) != 0)
		return false;
	random_tokens(tok, LLAMA_PP, m->cfg.vocab_size, 11);
	return llama_prefill_ms(m, &s->opt, tok, LLAMA_PP, pre) == 0;
}

/* E2E_REPS rounds after one warm-up, each: the decode loop, then the
 * command `generate E2E_TOKENS` through cmd_run_line on a session that
 * loaded the checkpoint (its output to /dev/null, standard error too, so
 * that no status line is drawn: as at the prompt), then the text set back
 * (untimed).  ratio = loop ms / generate ms of each round: >= 1 when the
 * command is as fast as the engine's loop. */
static void e2e_child(const void *arg, void *out)
{
	const struct e2e_job *j = arg;
	struct result *res = out;
	struct err e;
	FILE *null = fopen("/dev/null", "w");
	int fd = open("/dev/null", O_WRONLY);
	if (!null || fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
		snprintf(res->msg, sizeof res->msg, "/dev/null: %s", strerror(errno));
		return;
	}
	struct session s;
	session_init(&s, null);
	double tl[E2E_REPS], tg[E2E_REPS], ratio[E2E_REPS];
	double ltg[E2E_REPS], lpp[E2E_REPS], pre[E2E_REPS], vtg[E2E_REPS], vpp[E2E_REPS];
	const char *llama = j->gguf[0] ? llama_bench_path() : NULL;
	int nll = 0, pp_tok[LLAMA_PP];
	char line[32];
	snprintf(line, sizeof line, "generate %d", E2E_TOKENS);
	if (session_load(&s, j->path, NULL, &e) != 0 || session_set_text(&s, E2E_PROMPT, &e) != 0)
		goto fail;
	res->e2e_prompt = s.n_tokens;
	for (int i = -1; i < E2E_REPS; i++) {
		double loop = 0, gen = 0;
		/* each round runs the two in the other order than the last:
		 * neither always follows the other's caches and threads */
		for (int k = 0; k < 2; k++) {
			double t0 = now_ms();
			if ((k == 0) == (i % 2 == 0)) {
				if (decode_loop(s.model, &s.opt, s.tokens, s.n_tokens, E2E_TOKENS, &e))
					goto fail;
				loop = now_ms() - t0;
				continue;
			}
			if (cmd_run_line(&s, line, &e) != 0)
				goto fail;
			gen = now_ms() - t0;
			res->e2e_tokens = s.n_tokens;
			if (session_set_text(&s, E2E_PROMPT, &e) != 0)
				goto fail;
		}
		if (i >= 0) {
			tl[i] = loop;
			tg[i] = gen;
			ratio[i] = tl[i] / tg[i];
		}
		if (llama && i >= 0 && llama_round(j, &s, pp_tok, &ltg[nll], &lpp[nll], &pre[nll])) {
			vtg[nll] = ltg[nll] / gen; /* our tokens/s over llama.cpp's */
			vpp[nll] = pre[nll] / lpp[nll];
			nll++;
		}
	}
	if (nll) {
		res->ll_tg_ms = median(ltg, nll);
		res->ll_pp_ms = median(lpp, nll);
		res->pre_ms = median(pre, nll);
		res->vs_tg = spread_of(vtg, nll);
		res->vs_pp = spread_of(vpp, nll);
		res->ll_rounds = nll;
	}
	res->median_ms = median(tg, E2E_REPS);
	res->min_ms = minimum(tg, E2E_REPS);
	res->fwd_ms = median(tl, E2E_REPS);
	res->fwd_min_ms = minimum(tl, E2E_REPS);
	res->e2e = spread_of(ratio, E2E_REPS);
	res->reps = E2E_REPS;
	res->hwm = proc_status_bytes("VmHWM");
	res->ok = 1;
	session_free(&s);
	fclose(null);
	return;
fail:
	snprintf(res->msg, sizeof res->msg, "%s", e.msg);
	session_free(&s);
	fclose(null);
}

/* Writes a llama2.c checkpoint of shape c (seeded normal weights x 0.1,
 * shared classifier) to path.  0 or -1. */
static int write_llama2c(const char *path, const struct model_config *c)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	int32_t h[7] = { c->d_model, c->d_ff, c->n_layer, c->n_head, c->n_kv_head, c->vocab_size,
			 c->context };
	int ok = fwrite(h, sizeof *h, 7, f) == 7;
	struct rng r;
	rng_seed(&r, 5);
	size_t n = config_param_count(c);
	float buf[4096];
	for (size_t i = 0; ok && i < n; i += 4096) {
		size_t k = n - i < 4096 ? n - i : 4096;
		for (size_t q = 0; q < k; q++)
			buf[q] = 0.1f * rng_normal(&r);
		ok = fwrite(buf, sizeof *buf, k, f) == k;
	}
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* UTF-8 of code point cp into buf; its length. */
static int utf8_put(unsigned cp, char *buf)
{
	if (cp < 0x80)
		return buf[0] = (char)cp, 1;
	if (cp < 0x800)
		return buf[0] = (char)(0xC0 | cp >> 6), buf[1] = (char)(0x80 | (cp & 0x3F)), 2;
	buf[0] = (char)(0xE0 | cp >> 12);
	buf[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
	buf[2] = (char)(0x80 | (cp & 0x3F));
	return 3;
}

/* Writes a llama2.c tokenizer.bin of V pieces to path, each one character
 * (<unk>, a space, the printable ASCII, then CJK ideographs and Hangul
 * syllables from U+4E00 and U+AC00), none the concatenation of others: no
 * merge ever applies, so any sequence of ids decodes to a text that
 * tokenizes back into the same ids (a trained model's text mostly does;
 * a random model's over the real vocabulary does not).  0 or -1. */
static int write_char_tokenizer(const char *path, int V)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	int32_t max_len = 5;
	int ok = fwrite(&max_len, sizeof max_len, 1, f) == 1;
	unsigned cp = 0;
	for (int i = 0; ok && i < V; i++) {
		char buf[8];
		int32_t len;
		if (i == 0) {
			memcpy(buf, "<unk>", 5), len = 5;
		} else {
			cp = i == 1 ? ' ' : i == 2 ? '!' : cp == '~' ? 0x4E00 : cp == 0x9FFF ? 0xAC00 : cp + 1;
			len = utf8_put(cp, buf);
		}
		float score = 0.0f;
		ok = fwrite(&score, sizeof score, 1, f) == 1 && fwrite(&len, sizeof len, 1, f) == 1 &&
		     fwrite(buf, 1, (size_t)len, f) == (size_t)len;
	}
	return fclose(f) == 0 && ok && cp <= 0xD7A3 ? 0 : -1;
}

/* One end-to-end row: job j in its child, printed under label, its
 * verdict appended as name. */
static void e2e_row(const struct e2e_job *j, const char *label, const char *name)
{
	struct result r = in_child(e2e_child, j);
	printf("  %s\n", label);
	if (!r.ok) {
		printf("    FAILED: %s\n", r.msg);
		return;
	}
	int want = r.e2e_prompt + E2E_TOKENS;
	printf("    the text after generate: %d tokens, %s\n", r.e2e_tokens,
	       r.e2e_tokens == want ? "the prompt's and the ones made (its run is the decoder's steps)"
				    : "not the ones made: tokenized again, it runs a pass of its own");
	printf("    %-24s %9s %9s %9s\n", "", "median ms", "min ms", "tokens/s");
	printf("    %-24s %9.1f %9.1f %9.0f\n", "engine loop", r.fwd_ms, r.fwd_min_ms,
	       E2E_TOKENS / (r.fwd_ms / 1e3));
	printf("    %-24s %9.1f %9.1f %9.0f\n", "generate (command)", r.median_ms, r.min_ms,
	       E2E_TOKENS / (r.median_ms / 1e3));
	printf("    loop ms / generate ms per round: median %.3f (%.3f..%.3f); peak %.1f MB\n",
	       r.e2e.med, r.e2e.min, r.e2e.max, r.hwm / MB);
	/* the engine's loop is the bar where llama.cpp is not measured */
	static bool beside_llama;
	if (beside_llama || r.ll_rounds)
		bench_summary_text(name, r.e2e, "-", "info");
	else
		bench_summary_row(name, r.e2e, false, E2E_TARGET);
	if (r.ll_rounds) {
		beside_llama = true;
		printf("    beside llama.cpp (llama-bench on the same weights as GGUF, F32, its KV cache F16),\n"
		       "    paired per round over %d rounds:\n"
		       "      tg%d  llama.cpp %.1f ms = %.0f tokens/s; generate above %.0f tokens/s:\n"
		       "            ours / llama.cpp's tokens/s %.3f (%.3f..%.3f)\n"
		       "      pp%d  llama.cpp %.2f ms = %.0f tokens/s; decoder_prefill %.2f ms = %.0f tokens/s:\n"
		       "            ours / llama.cpp's time %.3f (%.3f..%.3f)\n",
		       r.ll_rounds, E2E_TOKENS, r.ll_tg_ms, E2E_TOKENS / (r.ll_tg_ms / 1e3),
		       E2E_TOKENS / (r.median_ms / 1e3), r.vs_tg.med, r.vs_tg.min, r.vs_tg.max, LLAMA_PP,
		       r.ll_pp_ms, LLAMA_PP / (r.ll_pp_ms / 1e3), r.pre_ms, LLAMA_PP / (r.pre_ms / 1e3),
		       r.vs_pp.med, r.vs_pp.min, r.vs_pp.max);
		bench_summary_row("generate 250 e2e tokens/s / llama.cpp tg250", r.vs_tg, false, 1.0);
		bench_summary_row("prefill 128 / llama.cpp pp128 (time)", r.vs_pp, true, 1.2);
	}
	fflush(stdout);
}

/* The end-to-end section: a stories15M-shaped llama2.c checkpoint (context
 * 512: the continued text, tokenized again, may take more positions than
 * were generated) with llama2.c's tokenizer from SHARED, then the same
 * checkpoint with a tokenizer of single characters (write_char_tokenizer). */
static void e2e_section(const char *shared)
{
	printf("\ngenerate %d end to end (prompt \"%s\"), the command through cmd_run_line against\n"
	       "the engine's own loop for the same generation (decoder_prefill, %d samples and steps;\n"
	       "no printing, no display pass), interleaved in one child, %d rounds after 1 warm-up:\n",
	       E2E_TOKENS, E2E_PROMPT, E2E_TOKENS, E2E_REPS);
	char tok[600];
	snprintf(tok, sizeof tok, "%s/tokenizers/llama2c/tokenizer.bin", shared);
	const char *dir = bench_tmpdir("generate");
	struct e2e_job j, jc;
	struct model_config c;
	stories15m_cfg(&c, 6);
	c.context = 512;
	char link[600], sub[520], *abs = realpath(tok, NULL);
	snprintf(j.path, sizeof j.path, "%s/stories15m.bin", dir ? dir : "");
	snprintf(link, sizeof link, "%s/tokenizer.bin", dir ? dir : "");
	if (!dir || !abs || symlink(abs, link) != 0 || write_llama2c(j.path, &c) != 0) {
		printf("  skipped: cannot set up %s with %s (ATTNSCOPE_SHARED)\n", j.path, tok);
		free(abs);
		return;
	}
	free(abs);
	j.gguf[0] = jc.gguf[0] = '\0';
	if (llama_bench_path()) {
		char g[600];
		snprintf(g, sizeof g, "%s/stories15m.gguf", dir);
		const char *args[] = { "--from", j.path, "--arch", "llama", "--tokbin", link, NULL };
		if (llama_write_gguf(self, g, args) == 0)
			snprintf(j.gguf, sizeof j.gguf, "%s", g);
		else
			printf("  llama.cpp: cannot write %s with tests/tool_mkgguf (make test builds it)\n", g);
	} else {
		printf("  llama.cpp: not measured (LLAMA_BENCH does not name a llama-bench binary)\n");
	}
	e2e_row(&j, "llama2.c's tokenizer (32,000 pieces, BPE merges):",
		"generate 250 end to end / engine loop");
	snprintf(sub, sizeof sub, "%s/chars", dir);
	snprintf(jc.path, sizeof jc.path, "%s/stories15m.bin", sub);
	snprintf(link, sizeof link, "%s/tokenizer.bin", sub);
	if (mkdir(sub, 0700) != 0 || symlink(j.path, jc.path) != 0 ||
	    write_char_tokenizer(link, c.vocab_size) != 0) {
		printf("  skipped: cannot set up %s\n", jc.path);
		return;
	}
	e2e_row(&jc, "a tokenizer of 32,000 single characters (no merges: the text tokenizes back):",
		"generate 250 end to end / engine loop, text tokenizes back");
}

/* ----------------------------------------------------------------- main */

/* KV cache floats one step at position pos reads: keys and values of the
 * pos + 1 positions, every layer, G heads. */
static double step_kv_bytes(const struct model_config *c, int pos)
{
	return 2.0 * c->n_layer * c->n_kv_head * cfg_d_head(c) * (pos + 1) * sizeof(float);
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_generate [--threads N] [--e2e]\n");
}

int main(int argc, char **argv)
{
	self = argv[0];
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
			threads = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--e2e") == 0) {
			e2e_only = 1;
		} else {
			usage();
			return 2;
		}
	}
	if (threads < 0) {
		usage();
		return 2;
	}
	double t_start = now_ms();
	engine_set_threads(threads);
	printf("bench_generate — the step decoder on a stories15M-shaped model (random weights, "
	       "native options)\n\n");
	print_machine();
	if (threads)
		printf("  threads:   %d (--threads) in every child\n", threads);

	struct model_config mha, gqa;
	stories15m_cfg(&mha, 6);
	stories15m_cfg(&gqa, 2);
	const struct model_config *cfgs[] = { &mha, &gqa };
	const char *names[] = { "stories15M", "15M-gqa2" };

	const char *shared = getenv("ATTNSCOPE_SHARED");
	shared = shared && *shared ? shared : "../shared";
	if (e2e_only) {
		e2e_section(shared);
		print_end(t_start);
		return 0;
	}
	struct result sg = in_child(sgemm_child, NULL);
	if (!sg.ok) {
		printf("sgemm: FAILED: %s\n", sg.msg);
		return 1;
	}
	printf("\nsgemm %dx%dx%d: median %.3f ms, min %.3f ms of %d, cpu/wall %.2f -> %.1f GFLOP/s "
	       "(median): the FLOP floors below use this rate\n",
	       SGEMM_M, SGEMM_N, SGEMM_K, sg.median_ms, sg.min_ms, sg.reps, sg.cpu_per_wall,
	       sg.gflops);

	double wbytes = step_weight_floats(&mha) * sizeof(float);
	struct result rd = in_child(read_child, &wbytes);
	if (rd.ok)
		printf("read: a sum over %.1f MB (the weights one stories15M step reads), one thread: "
		       "median %.3f ms -> %.1f GB/s\n", wbytes / MB, rd.median_ms, rd.read_gbs);
	else
		printf("read: FAILED: %s\n", rd.msg);

	struct result gv = in_child(gemv_child, &mha);
	if (gv.ok) {
		double b = (double)mha.vocab_size * mha.d_model * sizeof(float);
		printf("GEMV on the output layer (%d x %d, %.1f MB), median of %d:\n"
		       "  cblas_sgemm M = 1                                    %.3f ms = %.1f GB/s\n"
		       "  cblas_sgemv (matmul_forward's choice for one row)    %.3f ms = %.1f GB/s (%.2fx)\n",
		       mha.vocab_size, mha.d_model, b / MB, gv.reps, gv.gemv_sgemm_ms,
		       b / (gv.gemv_sgemm_ms * 1e6), gv.gemv_sgemv_ms, b / (gv.gemv_sgemv_ms * 1e6),
		       gv.gemv_sgemm_ms / gv.gemv_sgemv_ms);
	} else {
		printf("GEMV: FAILED: %s\n", gv.msg);
	}

	/* ---- prefill */
	printf("\nprefill of P tokens, in one child per row: one warm-up, then `reps` pairs of\n"
	       "  steps    P decoder_steps, each computing all %d logits\n"
	       "  prefill  what generate does: decoder_prefill, one model_forward over the P\n"
	       "           tokens keeping every layer's keys and values for the cache\n"
	       "  median (min) ms over the pairs; steps/pre = the median of the pairs' ratios\n"
	       "  GFLOP    matmul FLOPs of that work (steps: causal, pos + 1 keys; prefill: T x T)\n"
	       "  floor    GFLOP at the sgemm rate; ratio = median / floor\n"
	       "  GB/s     steps only: P x the weight bytes of a step / median (weights read once a token)\n"
	       "  peak MB  VmHWM after the steps' warm-up (model and decoder, before any prefill)\n",
	       mha.vocab_size);
	printf("  %-10s %2s %-7s %4s %9s %9s %8s %9s %8s %8s %7s %7s %8s %8s %4s\n", "model", "K",
	       "how", "P", "median ms", "min ms", "ms/token", "tokens/s", "GFLOP", "floor ms", "ratio",
	       "GB/s", "steps/pre", "peak MB", "reps");
	static const int Ps[] = { 32, 128 };
	for (int mi = 0; mi < 2; mi++)
		for (int pi = 0; pi < 2; pi++) {
			const struct model_config *c = cfgs[mi];
			int P = Ps[pi];
			struct gen_job j = { names[mi], *c, PREFILL, P };
			struct result r = in_child(gen_child, &j);
			if (!r.ok) {
				printf("  %-10s %2d %-7s %4d  FAILED: %s\n", j.name, c->n_kv_head, "", P,
				       r.msg);
				continue;
			}
			for (int k = 0; k < 2; k++) {
				double fl = 0;
				if (k)
					fl = forward_flops(c, P);
				else
					for (int p = 0; p < P; p++)
						fl += decode_step_flops(c, p);
				double ms = k ? r.fwd_ms : r.median_ms, mn = k ? r.fwd_min_ms : r.min_ms;
				double floor_ms = fl / (sg.gflops * 1e9) * 1e3;
				char gbs[16] = "-", rat[16] = "", pk[16] = "";
				if (!k) {
					snprintf(gbs, sizeof gbs, "%.1f",
						 P * step_weight_floats(c) * sizeof(float) / (ms * 1e6));
					snprintf(rat, sizeof rat, "%.1fx", r.ratio);
					snprintf(pk, sizeof pk, "%.1f", r.hwm / MB);
				}
				printf("  %-10s %2d %-7s %4d %9.2f %9.2f %8.3f %9.0f %8.3f %8.2f %6.2fx %7s "
				       "%9s %8s %4d\n",
				       j.name, c->n_kv_head, k ? "prefill" : "steps", P, ms, mn, ms / P,
				       P / (ms / 1e3), fl / 1e9, floor_ms, ms / floor_ms, gbs, rat, pk, r.reps);
			}
			fflush(stdout);
		}
	{
		const struct model_config *c = &mha;
		double out_share = (double)c->vocab_size * c->d_model / step_weight_floats(c);
		printf("  of a step's weights, the output layer (%d x %d, tied) is %.0f%%: a prefill that "
		       "computed only the last position's logits would skip that share for P - 1 tokens\n",
		       c->vocab_size, c->d_model, 100 * out_share);
	}

	/* ---- decode */
	printf("\ndecode: %d steps after a P-token prefill (positions P .. P+%d), each timed; the\n"
	       "median over `reps` of the mean ms per step; sampler_sample (T %.1f, top-k %d) apart\n"
	       "  GFLOP/tok  matmul FLOPs of one step at the middle position; floor = that at the\n"
	       "             sgemm rate: NOT reachable by GEMV (2 FLOPs per weight read), shown for scale\n"
	       "  wt MB      weight bytes one step reads; kv MB: cache bytes it reads (middle position)\n"
	       "  GB/s       (wt + kv bytes) / ms per step; compare with the read rate above\n"
	       "  tokens/s   1000 / (step + sample ms)\n",
	       DECODE_STEPS, DECODE_STEPS - 1, GEN_TEMPERATURE, GEN_TOP_K);
	printf("  %-10s %2s %7s %8s %8s %9s %9s %9s %8s %7s %6s %6s %6s %8s %4s\n", "model", "K",
	       "pos", "ms/step", "min", "sample ms", "tokens/s", "GFLOP/tok", "floor ms", "ratio",
	       "wt MB", "kv MB", "GB/s", "peak MB", "reps");
	struct result dec[2][2];
	for (int mi = 0; mi < 2; mi++)
		for (int pi = 0; pi < 2; pi++) {
			const struct model_config *c = cfgs[mi];
			int P = Ps[pi], mid = P + DECODE_STEPS / 2;
			struct gen_job j = { names[mi], *c, DECODE, P };
			struct result r = in_child(gen_child, &j);
			dec[mi][pi] = r;
			char pos[16];
			snprintf(pos, sizeof pos, "%d-%d", P, P + DECODE_STEPS - 1);
			if (!r.ok) {
				printf("  %-10s %2d %7s  FAILED: %s\n", j.name, c->n_kv_head, pos, r.msg);
				continue;
			}
			double fl = decode_step_flops(c, mid);
			double floor_ms = fl / (sg.gflops * 1e9) * 1e3;
			double wb = step_weight_floats(c) * sizeof(float), kb = step_kv_bytes(c, mid);
			printf("  %-10s %2d %7s %8.3f %8.3f %9.3f %9.0f %9.4f %8.3f %6.1fx %6.1f %6.2f %6.1f "
			       "%8.1f %4d\n",
			       j.name, c->n_kv_head, pos, r.median_ms, r.min_ms, r.sample_ms,
			       1e3 / (r.median_ms + r.sample_ms), fl / 1e9, floor_ms, r.median_ms / floor_ms,
			       wb / MB, kb / MB, (wb + kb) / (r.median_ms * 1e6), r.hwm / MB, r.reps);
			fflush(stdout);
		}

	/* ---- KV cache */
	printf("\nKV cache: decoder_cache_bytes(d) beside kv_cache_bytes(L, G, tokens, D, 4) for the "
	       "decoders above\n");
	for (int mi = 0; mi < 2; mi++)
		for (int pi = 0; pi < 2; pi++) {
			const struct result *r = &dec[mi][pi];
			const struct model_config *c = cfgs[mi];
			if (!r->ok)
				continue;
			double ref = kv_cache_bytes(c->n_layer, r->G, r->cap, cfg_d_head(c), sizeof(float));
			double ctx = kv_cache_bytes(c->n_layer, r->G, c->context, cfg_d_head(c),
						    sizeof(float));
			char d1[48] = "equal", d2[48] = "equal";
			if (r->cache_bytes != ref)
				snprintf(d1, sizeof d1, "differ by %.0f bytes", r->cache_bytes - ref);
			if (r->cache_bytes_ctx != ctx)
				snprintf(d2, sizeof d2, "differ by %.0f bytes", r->cache_bytes_ctx - ctx);
			printf("  %-10s G=%d %3d positions: %9.0f vs %9.0f bytes (%.3f MB): %s;  cap 0 (the "
			       "context, %d): %9.0f vs %9.0f: %s\n",
			       names[mi], r->G, r->cap, r->cache_bytes, ref, ref / MB, d1, c->context,
			       r->cache_bytes_ctx, ctx, d2);
		}
	e2e_section(shared);
	print_end(t_start);
	return 0;
}
