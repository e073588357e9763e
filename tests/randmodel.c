/*
 * randmodel.c — seeded random models for the unit tests (randmodel.h).
 */
#include "randmodel.h"

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
