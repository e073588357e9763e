/*
 * loader-llmc.c — llm.c GPT-2 checkpoints ("llmc"), as written by llm.c's
 * train_gpt2.py / train_gpt2.c.
 *
 * Header: 256 int32 (1024 bytes): [0] magic 20240326, [1] version,
 * [2] maxT, [3] V, [4] L, [5] NH, [6] C, [7] Vp (V padded, e.g. 50304).
 * Versions read: 3 (F32) and 5 (BF16), the two llm.c writes since it pads
 * the vocabulary; earlier ones (1, 2: no padded size) are refused with a
 * hint to re-export.
 * Then the parameters in llm.c's order, which is already ours (config.h),
 * (out, in) and stacked over layers:
 *   wte (Vp, C), wpe (maxT, C), ln1w (L, C), ln1b (L, C), qkvw (L, 3C, C),
 *   qkvb (L, 3C), attprojw (L, C, C), attprojb (L, C), ln2w (L, C),
 *   ln2b (L, C), fcw (L, 4C, C), fcb (L, 4C), fcprojw (L, C, 4C),
 *   fcprojb (L, C), lnfw (C), lnfb (C)
 * Padded vocabulary: our vocab_size is V and the Vp - V padding rows of wte
 * are skipped (llm.c never predicts them: its softmax and loss stop at V).
 * Config: LayerNorm eps 1e-5, pre-norm, learned positions, GELU tanh,
 * biases, tied, d_ff = 4C.
 * The GPT-2 tokenizer comes from --tokenizer DIR, or vocab.json + merges.txt
 * (or tokenizer.json) beside the file; llm.c's own gpt2_tokenizer.bin has
 * no merges, so it cannot encode and is not used.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "loaders.h"

#define LLMC_MAGIC 20240326
#define LLMC_TOKENIZER_MAGIC 20240328
#define HEADER_INTS 256

static bool probe_llmc(const char *path, char *why, size_t n)
{
	int32_t h[2];
	off_t size;
	if (!ld_read_ints(path, h, 2, &size)) {
		snprintf(why, n, "not a file of 8+ bytes");
		return false;
	}
	if (h[0] == LLMC_MAGIC || h[0] == LLMC_TOKENIZER_MAGIC)
		return true;
	snprintf(why, n, "magic %d, not %d", h[0], LLMC_MAGIC);
	return false;
}

/* The GPT-2 config of an llm.c header (ints 2..6). */
static void header_config(const int32_t h[HEADER_INTS], struct model_config *c)
{
	config_default(c);
	c->context = h[2];
	c->vocab_size = h[3];
	c->n_layer = h[4];
	c->n_head = c->n_kv_head = h[5];
	c->d_model = h[6];
	c->d_ff = h[6] > 0 && h[6] <= CFG_MAX_DFF / 4 ? 4 * h[6] : -1;
}

static int describe_llmc(const char *path, struct model_config *c, struct err *e)
{
	int32_t h[HEADER_INTS];
	off_t size;
	if (!ld_read_ints(path, h, HEADER_INTS, &size) || h[0] != LLMC_MAGIC)
		return err_set(e, "%s: not an llm.c GPT-2 checkpoint with a 1024-byte header", path);
	header_config(h, c);
	if (config_validate(c, e))
		return err_prefix(e, "%s: header", path);
	return 0;
}

/* What read_weights needs of the header. */
struct llmc_shape {
	int bf16;
	size_t esize;		/* bytes per stored float */
	size_t pad;		/* floats of wte's padding rows: (Vp - V) * C */
};

/* The parameters in order, skipping wte's padding rows. */
static int read_weights(int fd, struct model *m, const void *ctx, struct err *e)
{
	const struct llmc_shape *s = ctx;
	off_t off = 1024;
	for (int i = 0; i < N_PARAMS; i++) {
		size_t n = m->psize[i];
		if (!n)
			continue;
		if (ld_read_floats(fd, off, m->p[i], n, s->bf16 ? DTYPE_BF16 : DTYPE_F32,
				   param_name((enum param_id)i), e))
			return -1;
		off += (off_t)(n * s->esize);
		if (i == P_WTE) /* skip the padding rows */
			off += (off_t)(s->pad * s->esize);
	}
	return 0;
}

static struct model *load_llmc(const char *path, const struct load_opts *o, struct err *e)
{
	int32_t h[HEADER_INTS];
	off_t size = 0;
	struct model *m = NULL;
	struct tokenizer *tok = NULL;
	char *dir = ld_dirname(path);

	if (!ld_read_ints(path, h, 2, &size)) {
		err_set(e, "%s: cannot read", path);
		goto fail;
	}
	if (h[0] == LLMC_TOKENIZER_MAGIC) {
		err_set(e, "%s: an llm.c tokenizer file, not a model", path);
		goto fail;
	}
	if (h[0] != LLMC_MAGIC) {
		err_set(e, "%s: bad magic %d (an llm.c GPT-2 checkpoint starts with %d)", path,
			h[0], LLMC_MAGIC);
		goto fail;
	}
	if (size < HEADER_INTS * 4 || !ld_read_ints(path, h, HEADER_INTS, &size)) {
		err_set(e, "%s: %lld bytes is shorter than llm.c's 1024-byte header (truncated?)",
			path, (long long)size);
		goto fail;
	}
	if (h[1] != 3 && h[1] != 5) {
		err_set(e, "%s: llm.c checkpoint version %d is not supported (this build reads 3 = "
			"F32 and 5 = BF16; re-export with a current llm.c)", path, h[1]);
		goto fail;
	}
	int bf16 = h[1] == 5;
	int maxT = h[2], V = h[3], L = h[4], NH = h[5], C = h[6], Vp = h[7];
	if (Vp < V) {
		err_set(e, "%s: padded vocabulary %d is smaller than the vocabulary %d", path, Vp, V);
		goto fail;
	}
	struct model_config cfg;
	header_config(h, &cfg);
	if (config_validate(&cfg, e) != 0 || Vp > CFG_MAX_VOCAB) {
		if (Vp > CFG_MAX_VOCAB)
			err_set(e, "padded vocabulary %d is out of range", Vp);
		err_prefix(e, "%s: header", path);
		goto fail;
	}
	/* sizes: everything in floats */
	size_t np = config_param_count(&cfg) + (size_t)(Vp - V) * (size_t)C;
	size_t esize = bf16 ? 2 : 4;
	unsigned long long want = 1024ull + (unsigned long long)np * esize;
	if ((unsigned long long)size != want) {
		err_set(e, "%s: %lld bytes, but its header (V %d padded to %d, maxT %d, %d layers, "
			"%d heads, C %d, %s) implies %llu: %s", path, (long long)size, V, Vp, maxT,
			L, NH, C, bf16 ? "BF16" : "F32", want,
			(unsigned long long)size < want ? "truncated?" : "trailing data");
		goto fail;
	}
	tok = ld_gpt2_tokenizer(o->tokenizer, dir, e);
	if (!tok) {
		err_prefix(e, "%s", path);
		goto fail;
	}
	if (tok->vocab_size > V) {
		err_set(e, "%s: the tokenizer has %d tokens but the model's vocabulary is %d", path,
			tok->vocab_size, V);
		goto fail;
	}
	struct llmc_shape shape = { bf16, esize, (size_t)(Vp - V) * (size_t)C };
	m = ld_load_model(path, &cfg, tok, ".bin", read_weights, &shape, e);
	free(dir);
	return m;
fail:
	tok_free(tok);
	free(dir);
	return NULL;
}

const struct model_format format_llmc = {
	"llmc", "llm.c GPT-2 checkpoint", probe_llmc, load_llmc, describe_llmc, NULL, NULL,
};
