/*
 * randmodel.c — seeded random models for the unit tests (randmodel.h).
 */
#include "randmodel.h"

#include <string.h>

struct model *randmodel_new(bool llama, int L, int kv_heads, int V, float qkv_gain, uint64_t seed)
{
	return randmodel_new_hd(llama, L, kv_heads, V, qkv_gain, seed, 0);
}

struct model *randmodel_new_hd(bool llama, int L, int kv_heads, int V, float qkv_gain,
			       uint64_t seed, int head_dim)
{
	struct model_config c;
	config_default(&c);
	c.vocab_size = V;
	c.d_model = 32;
	c.n_layer = L;
	c.n_head = 4;
	c.n_kv_head = kv_heads;
	c.d_ff = 48;
	c.context = 16;
	c.head_dim = head_dim;
	if (llama) {
		c.norm = NORM_RMS;
		c.pos = POS_ROPE;
		c.mlp = MLP_SWIGLU;
		c.bias = false;
		c.tied = false;
	}
	struct err e;
	struct model *m = model_new(&c, &e);
	if (!m)
		die("randmodel: %s", e.msg); /* a fixture with an impossible shape */
	model_init_random(m, seed);
	for (size_t i = 0; i < m->psize[P_QKVW]; i++)
		m->p[P_QKVW][i] *= qkv_gain;
	return m;
}

struct model *randmodel_rebuild(struct model *base, const struct model_config *c, uint64_t seed)
{
	struct err e;
	struct model *m = model_new(c, &e);
	if (!m)
		die("randmodel: %s", e.msg);
	for (int i = 0; i < N_PARAMS; i++)
		if (base->psize[i] && base->psize[i] == m->psize[i])
			memcpy(m->p[i], base->p[i], base->psize[i] * sizeof(float));
	model_free(base);
	struct rng g;
	rng_seed(&g, seed);
	static const enum param_id scales[] = { P_QNORMW, P_KNORMW, P_ATTPOSTW, P_MLPPOSTW };
	for (size_t k = 0; k < sizeof scales / sizeof *scales; k++)
		for (size_t i = 0; i < m->psize[scales[k]]; i++)
			m->p[scales[k]][i] = 1.0f + 0.3f * rng_normal(&g);
	return m;
}

struct model *randmodel_qk_norm(struct model *base, uint64_t seed)
{
	struct model_config c = base->cfg;
	c.qk_norm = true;
	return randmodel_rebuild(base, &c, seed);
}
