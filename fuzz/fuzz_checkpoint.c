/*
 * fuzz_checkpoint.c — libFuzzer target for the attnscope safetensors
 * reader, checkpoint_load().
 *
 * Each input is written as model.safetensors in a private temporary
 * directory (in /dev/shm when there is one) and loaded from there, the
 * way `attnscope MODEL` opens it.  Every failure is fine as long as it is
 * one line that starts with the path.  A model that loads must be whole:
 * a valid config, finite weights, a tokenizer (when it has one) that fits
 * the vocabulary and encodes, and a forward pass over a few tokens that
 * runs (fuzz_exercise_model() in fuzz-common.h; the logits may be Inf or
 * NaN, as finite weights can be as large as float holds).  It is then
 * saved as F32 and read back, which must give the same config, weights,
 * tokenizer, name and training record bit for bit, and saved as F16, which
 * may refuse weights outside F16's range but must otherwise load again.
 *
 * Seeds: fuzz/seeds/checkpoint, four small checkpoints (under 10 KB) made
 * with tests/tool_mkmodel (F32; LayerNorm/learned/GELU, and RMSNorm/RoPE/
 * SwiGLU/GQA/post-norm over a UTF-8 vocabulary) and with `attnscope train`
 * for 2-3 steps on a three-line text (F16 untied without biases, and an F32
 * MQA RoPE run stopped early), so that a training record is present.
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

#include "checkpoint.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return fuzz_initialize(argc, argv, true);
}

/* Both NULL, or equal strings. */
static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Saves m as F32 and F16 and reads both back. */
static void round_trip(const struct model *m)
{
	char p32[128], p16[128];
	struct err e = { "" };

	fuzz_path(p32, sizeof p32, "again-f32.safetensors");
	CHECK(checkpoint_save(m, p32, CKPT_F32, &e) == 0);
	struct model *a = checkpoint_load(p32, &e);
	CHECK(a != NULL);
	char *c1 = checkpoint_config_json(&m->cfg), *c2 = checkpoint_config_json(&a->cfg);
	CHECK(strcmp(c1, c2) == 0);
	free(c1);
	free(c2);
	CHECK(a->n_params == m->n_params);
	CHECK(memcmp(a->params, m->params, m->n_params * sizeof(float)) == 0);
	CHECK(same_str(a->name, m->name) && same_str(a->train_meta, m->train_meta));
	CHECK(!a->tok == !m->tok);
	if (m->tok) {
		char *t1 = m->tok->ops->to_json(m->tok), *t2 = a->tok->ops->to_json(a->tok);
		CHECK(strcmp(t1, t2) == 0);
		free(t1);
		free(t2);
	}
	model_free(a);

	fuzz_path(p16, sizeof p16, "again-f16.safetensors");
	if (checkpoint_save(m, p16, CKPT_F16, &e) == 0) {
		a = checkpoint_load(p16, &e);
		CHECK(a != NULL && a->n_params == m->n_params);
		model_free(a);
	} else {
		CHECK(e.msg[0] != '\0');
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[128];
	struct err e = { "" };

	fuzz_path(path, sizeof path, "model.safetensors");
	fuzz_put_file(path, data, size);
	struct model *m = checkpoint_load(path, &e);
	if (!m) {
		fuzz_check_error(&e, path);
	} else {
		CHECK(m->name && m->path && strcmp(m->path, path) == 0);
		fuzz_exercise_model(m);
		round_trip(m);
		model_free(m);
	}
	fuzz_empty_dir(fuzz_tmpdir);
	return 0;
}
