/*
 * model.c — weights (one block + pointer table), run options, the cache of
 * converted K/V weights, run buffers and the forward pass.
 */
#include "model.h"

#include <cblas.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gemmw.h"
#include "ops.h"
#include "quant.h"
#include "tokenizer.h"

/* ------------------------------------------------------------------ model */

bool model_holdable(enum param_id i)
{
	return i == P_WTE || i == P_LMHEAD || i == P_QKVW || i == P_ATTPROJW || i == P_FCW ||
	       i == P_FCPROJW;
}

/* Tensor i's held matrices, (rows, cols) set from its shape. */
static struct held_mat *held_new(const struct model_config *c, enum param_id i)
{
	size_t shape[3];
	int nd, lay = param_per_layer(i) ? 1 : 0, n = lay ? c->n_layer : 1;
	param_shape(c, i, shape, &nd);
	struct held_mat *h = xcalloc((size_t)n, sizeof *h);
	for (int l = 0; l < n; l++)
		h[l] = (struct held_mat){ .rows = (int)shape[lay], .cols = (int)shape[lay + 1] };
	return h;
}

struct model *model_new_held(const struct model_config *c, uint32_t held, struct err *e)
{
	if (config_validate(c, e) != 0)
		return NULL;
	struct model *m = xcalloc(1, sizeof *m);
	m->cfg = *c;
	size_t shape[3], total = 0;
	int nd;
	for (int i = 0; i < N_PARAMS; i++) {
		m->psize[i] = param_shape(c, (enum param_id)i, shape, &nd);
		m->n_params += m->psize[i];
		if (m->psize[i] && (held >> i & 1u) && model_holdable((enum param_id)i))
			m->held[i] = held_new(c, (enum param_id)i);
		else
			total += m->psize[i];
	}
	m->params = xmalloc_aligned((total ? total : 1) * sizeof(float));
	memset(m->params, 0, total * sizeof(float));
	float *p = m->params;
	for (int i = 0; i < N_PARAMS; i++) {
		m->p[i] = m->psize[i] && !m->held[i] ? p : NULL;
		p += m->p[i] ? m->psize[i] : 0;
	}
	static const enum param_id scales[] = { P_LN1W, P_LN2W, P_LNFW, P_LNEW, P_HEADLNW,
						P_QNORMW, P_KNORMW, P_ATTPOSTW, P_MLPPOSTW };
	for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++)
		for (size_t j = 0; j < m->psize[scales[i]]; j++)
			m->p[scales[i]][j] = 1.0f;
	return m;
}

struct model *model_new(const struct model_config *c, struct err *e)
{
	return model_new_held(c, 0, e);
}

/* How many matrices tensor i holds (its layers, or 1). */
static int held_count(const struct model *m, int i)
{
	return param_per_layer((enum param_id)i) ? m->cfg.n_layer : 1;
}

static void held_release(struct model *m)
{
	for (int i = 0; i < N_PARAMS; i++) {
		for (int l = 0; m->held[i] && l < held_count(m, i); l++)
			held_free(&m->held[i][l]);
		free(m->held[i]);
		m->held[i] = NULL;
	}
}

bool model_is_held(const struct model *m)
{
	for (int i = 0; i < N_PARAMS; i++)
		if (m->held[i])
			return true;
	return false;
}

void model_held_types(const struct model *m, char *buf, size_t size)
{
	bool seen[64] = { false };
	for (int i = 0; i < N_PARAMS; i++)
		for (int l = 0; m->held[i] && l < held_count(m, i); l++)
			for (int k = 0; k < m->held[i][l].n_parts; k++)
				if (m->held[i][l].part[k].type < 64)
					seen[m->held[i][l].part[k].type] = true;
	size_t n = 0;
	buf[0] = '\0';
	for (uint32_t t = 0; t < 64 && n < size; t++)
		if (seen[t])
			n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "",
					      ggml_type_name(t));
	if (n && n < size)
		snprintf(buf + n, size - n, " held");
}

bool model_held_complete(const struct model *m)
{
	for (int i = 0; i < N_PARAMS; i++)
		for (int l = 0; m->held[i] && l < held_count(m, i); l++)
			if (!held_complete(&m->held[i][l]))
				return false;
	return true;
}

double model_bytes(const struct model *m)
{
	double n = 0;
	for (int i = 0; i < N_PARAMS; i++)
		for (int l = 0; m->held[i] && l < held_count(m, i); l++)
			n += (double)held_bytes(&m->held[i][l]);
	for (int i = 0; i < N_PARAMS; i++)
		n += m->p[i] ? 4.0 * (double)m->psize[i] : 0;
	return n;
}

struct wmat model_output_layer(const struct model *m)
{
	int id = m->cfg.tied ? P_WTE : P_LMHEAD;
	return (struct wmat){ m->p[id], model_held(m, id, 0) };
}

const float *model_embedding(const struct model *m, int tok, float *buf)
{
	if (!m->held[P_WTE])
		return m->p[P_WTE] + (size_t)tok * m->cfg.d_model;
	held_rows(&m->held[P_WTE][0], tok, 1, buf);
	return buf;
}

void model_rows_f32(const struct model *m, enum param_id id, int l, size_t r0, size_t n,
		    float *dst)
{
	const struct held_mat *h = model_held(m, id, l);
	if (h) {
		held_rows(h, (int)r0, (int)n, dst);
		return;
	}
	size_t shape[3];
	int nd, lay = param_per_layer(id) ? 1 : 0;
	param_shape(&m->cfg, id, shape, &nd);
	size_t cols = nd - lay == 2 ? shape[lay + 1] : 1;
	size_t per = m->psize[id] / (size_t)(lay ? m->cfg.n_layer : 1);
	memcpy(dst, m->p[id] + (size_t)l * per + r0 * cols, n * cols * sizeof(float));
}

int model_to_f32(struct model *m, const char *what, struct err *e)
{
	if (!model_is_held(m))
		return 0;
	double need = 4.0 * (double)m->n_params, avail = mem_available();
	if (avail >= 0 && need > avail) {
		char n[32], a[32];
		format_bytes(need, n, sizeof n);
		format_bytes(avail, a, sizeof a);
		return err_set(e, "%s needs the weights as float32: %s, and %s of memory is "
			       "available (the model is kept in its file's types)", what, n, a);
	}
	float *params = xmalloc_aligned(m->n_params * sizeof(float)), *p = params;
	for (int i = 0; i < N_PARAMS; i++) {
		if (!m->psize[i])
			continue;
		if (m->p[i]) {
			memcpy(p, m->p[i], m->psize[i] * sizeof(float));
		} else {
			size_t per = m->psize[i] / (size_t)held_count(m, i);
			for (int l = 0; l < held_count(m, i); l++)
				held_rows(&m->held[i][l], 0, m->held[i][l].rows, p + (size_t)l * per);
		}
		p += m->psize[i];
	}
	held_release(m);
	free(m->params);
	m->params = params;
	p = params;
	for (int i = 0; i < N_PARAMS; i++) {
		m->p[i] = m->psize[i] ? p : NULL;
		p += m->psize[i];
	}
	model_clear_cache(m);
	return 0;
}

void model_init_random(struct model *m, uint64_t seed)
{
	struct rng r;
	rng_seed(&r, seed);
	float proj_std = 0.02f / sqrtf(2.0f * (float)m->cfg.n_layer);
	for (int i = 0; i < N_PARAMS; i++) {
		float *p = m->p[i];
		size_t n = m->psize[i];
		switch (i) {
		case P_LN1W: case P_LN2W: case P_LNFW: case P_LNEW: case P_HEADLNW:
		case P_QNORMW: case P_KNORMW: case P_ATTPOSTW: case P_MLPPOSTW:
			for (size_t j = 0; j < n; j++)
				p[j] = 1.0f;
			break;
		case P_LN1B: case P_LN2B: case P_LNFB: case P_QKVB:
		case P_ATTPROJB: case P_FCB: case P_FCPROJB: case P_LNEB: case P_HEADB:
		case P_HEADLNB: case P_OUTB:
			if (p)
				memset(p, 0, n * sizeof(float));
			break;
		case P_ATTPROJW: case P_FCPROJW:
			for (size_t j = 0; j < n; j++)
				p[j] = proj_std * rng_normal(&r);
			break;
		default:
			for (size_t j = 0; j < n; j++)
				p[j] = 0.02f * rng_normal(&r);
			break;
		}
	}
	model_clear_cache(m);
}

void model_clear_cache(struct model *m)
{
	for (int i = 0; i < KV_CACHE_SLOTS; i++) {
		free(m->kv_cache[i].qkvw);
		free(m->kv_cache[i].qkvb);
		memset(&m->kv_cache[i], 0, sizeof m->kv_cache[i]);
	}
}

void model_free(struct model *m)
{
	if (!m)
		return;
	model_clear_cache(m);
	held_release(m);
	free(m->params);
	tok_free(m->tok);
	free(m->name);
	free(m->path);
	free(m->train_meta);
	free(m);
}

/* ------------------------------------------------------ K/V conversion */

/* Builds the fused QKV weights for G key/value heads: Q rows are copied;
 * new K/V head g is the mean, over the query heads h of group g, of the
 * native K/V head that h reads (h / (H / K)). */
static void build_conversion(const struct model *m, int G, float *w, float *b)
{
	const struct model_config *c = &m->cfg;
	int H = c->n_head, K = c->n_kv_head, D = cfg_d_head(c), C = c->d_model;
	int nat_rows = cfg_qkv_rows(c, K), new_rows = cfg_qkv_rows(c, G);
	int per_new = H / G, per_nat = H / K;
	float inv = 1.0f / (float)per_new;

	float *tmp = m->p[P_QKVW] ? NULL : xmalloc_aligned((size_t)nat_rows * C * sizeof *tmp);
	for (int l = 0; l < c->n_layer; l++) {
		const float *nw = m->p[P_QKVW] ? m->p[P_QKVW] + (size_t)l * nat_rows * C : tmp;
		if (tmp)
			model_rows_f32(m, P_QKVW, l, 0, (size_t)nat_rows, tmp);
		float *cw = w + (size_t)l * new_rows * C;
		memcpy(cw, nw, (size_t)H * D * C * sizeof(float));
		const float *nb = b ? m->p[P_QKVB] + (size_t)l * nat_rows : NULL;
		float *cb = b ? b + (size_t)l * new_rows : NULL;
		if (cb)
			memcpy(cb, nb, (size_t)H * D * sizeof(float));
		for (int part = 0; part < 2; part++) { /* 0 = keys, 1 = values */
			int nat_off = H + part * K, new_off = H + part * G;
			for (int g = 0; g < G; g++) {
				float *dw = cw + (size_t)(new_off + g) * D * C;
				float *db = cb ? cb + (size_t)(new_off + g) * D : NULL;
				memset(dw, 0, (size_t)D * C * sizeof(float));
				if (db)
					memset(db, 0, (size_t)D * sizeof(float));
				for (int h = g * per_new; h < (g + 1) * per_new; h++) {
					int k = h / per_nat;
					const float *sw = nw + (size_t)(nat_off + k) * D * C;
					for (size_t j = 0; j < (size_t)D * C; j++)
						dw[j] += sw[j] * inv;
					if (db)
						for (int j = 0; j < D; j++)
							db[j] += nb[(size_t)(nat_off + k) * D + j] * inv;
				}
			}
		}
	}
	free(tmp);
}

void model_qkv_for(struct model *m, int G, const float **w, const float **b)
{
	const struct model_config *c = &m->cfg;
	if (G == c->n_kv_head) {
		*w = m->p[P_QKVW];
		*b = m->p[P_QKVB];
		return;
	}
	int free_slot = -1;
	for (int i = 0; i < KV_CACHE_SLOTS; i++) {
		if (m->kv_cache[i].kv_heads == G) {
			*w = m->kv_cache[i].qkvw;
			*b = m->kv_cache[i].qkvb;
			return;
		}
		if (m->kv_cache[i].kv_heads == 0 && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0) { /* full: drop the oldest, shift the rest */
		free(m->kv_cache[0].qkvw);
		free(m->kv_cache[0].qkvb);
		memmove(&m->kv_cache[0], &m->kv_cache[1], (KV_CACHE_SLOTS - 1) * sizeof m->kv_cache[0]);
		free_slot = KV_CACHE_SLOTS - 1;
	}
	struct kv_conversion *s = &m->kv_cache[free_slot];
	size_t rows = (size_t)c->n_layer * cfg_qkv_rows(c, G);
	s->kv_heads = G;
	s->qkvw = xmalloc_aligned(rows * c->d_model * sizeof(float));
	s->qkvb = m->p[P_QKVB] ? xmalloc(rows * sizeof(float)) : NULL;
	build_conversion(m, G, s->qkvw, s->qkvb);
	*w = s->qkvw;
	*b = s->qkvb;
}

/* ---------------------------------------------------------------- options */

static const char *const pitfall_names[N_PITFALLS] = { "off", "no-transpose", "mask-one-head",
						       "eps0" };

const char *pitfall_name(enum pitfall p)
{
	return (unsigned)p < N_PITFALLS ? pitfall_names[p] : "?";
}

int pitfall_parse(const char *s, enum pitfall *out)
{
	for (int i = 0; i < N_PITFALLS; i++)
		if (!strcmp(s, pitfall_names[i])) {
			*out = (enum pitfall)i;
			return 0;
		}
	return -1;
}

void run_options_native(const struct model *m, struct run_options *o)
{
	memset(o, 0, sizeof *o);
	o->kv_heads = m->cfg.n_kv_head;
	o->placement = m->cfg.placement;
	o->mask = m->cfg.mask;
	o->window = 0;
	o->scale = m->cfg.scale;
}

int run_options_validate(const struct model *m, const struct run_options *o, struct err *e)
{
	const struct model_config *c = &m->cfg;
	if (o->kv_heads < 1 || o->kv_heads > c->n_head || c->n_head % o->kv_heads != 0)
		return err_set(e, "%d key/value heads: must divide the %d query heads", o->kv_heads, c->n_head);
	if ((unsigned)o->placement > PLACE_POST)
		return err_set(e, "unknown norm placement");
	if ((unsigned)o->mask > MASK_AFTER_SOFTMAX)
		return err_set(e, "unknown mask");
	if (o->mask == MASK_WINDOW && o->window < 0)
		return err_set(e, "window %d: must be 0 or more", o->window);
	if ((unsigned)o->pitfall >= N_PITFALLS)
		return err_set(e, "unknown pitfall");
	if (c->post_only && o->placement != PLACE_PRE)
		return err_set(e, "this model has no norm before its sub-blocks (OLMo-2's): norm "
			       "placement stays native");
	if (c->qk_norm_whole && (o->kv_heads % c->n_kv_head != 0 || o->pitfall == PITFALL_NO_TRANSPOSE))
		return err_set(e, "%d key/value heads: this model's key norm spans its %d key heads "
			       "together (OLMo-2's), so only whole multiples of them run", o->kv_heads,
			       c->n_kv_head);
	int heads = c->n_layer * c->n_head;
	if (heads > ABLATE_WORDS * 64 && opt_ablated_count(o) > 0)
		return err_set(e, "ablation supports up to %d heads; this model has %d", ABLATE_WORDS * 64, heads);
	for (int bit = heads; bit < ABLATE_WORDS * 64; bit++)
		if (opt_is_ablated(o, bit))
			return err_set(e, "ablated head %d.%d does not exist", bit / c->n_head, bit % c->n_head);
	return 0;
}

bool run_options_equal(const struct run_options *a, const struct run_options *b)
{
	return a->kv_heads == b->kv_heads && a->placement == b->placement && a->mask == b->mask &&
	       (a->mask != MASK_WINDOW || a->window == b->window) && a->scale == b->scale &&
	       a->pitfall == b->pitfall &&
	       memcmp(a->ablated, b->ablated, sizeof a->ablated) == 0;
}

int opt_ablated_count(const struct run_options *o)
{
	int n = 0;
	for (int i = 0; i < ABLATE_WORDS; i++)
		n += __builtin_popcountll(o->ablated[i]);
	return n;
}

double kv_cache_bytes(int n_layer, int kv_heads, int tokens, int d_head, int bytes_per_elem)
{
	return 2.0 * n_layer * kv_heads * (double)tokens * d_head * bytes_per_elem;
}

/* -------------------------------------------------------------------- run */

#ifdef __SANITIZE_ADDRESS__
#define RUN_GAP 64 /* bytes between two buffers of a run's block, poisoned */
#else
#define RUN_GAP 0
#endif

bool run_own_threads(unsigned flags)
{
	return gemmw_available() && !(flags & RUN_TRAIN);
}

struct run *run_new(const struct model_config *c, int B, int T, unsigned flags)
{
	if (flags & RUN_TRAIN)
		flags |= RUN_ATTN | RUN_LOGITS;
	if (!cfg_has_head(c)) /* nothing to make logits with */
		flags &= ~(unsigned)RUN_LOGITS;
	struct run *r = xcalloc(1, sizeof *r);
	r->B = B;
	r->T = T;
	r->flags = flags;
	r->V = c->vocab_size;
	r->C = c->d_model;
	r->L = c->n_layer;
	r->H = c->n_head;
	r->F = c->d_ff;
	r->FF = cfg_ff_rows(c);
	r->A = cfg_attn_width(c);
	r->QKVmax = 3 * r->A;

	size_t bt = (size_t)B * T, L = (size_t)r->L, C = (size_t)r->C;
	size_t per = (flags & RUN_TRAIN) ? L : 1; /* copies of per-layer buffers */
	bool lazy = (flags & RUN_ATTN) && !(flags & RUN_TRAIN);
	bool lazy_logits = (flags & RUN_LOGITS) && !(flags & RUN_TRAIN);
	size_t per_qkv = (flags & (RUN_TRAIN | RUN_QKV)) || lazy ? L : 1;
	size_t sandwich = (flags & RUN_TRAIN) && c->sandwich ? L : 0; /* kept for backward */
	bool all_att = flags & (RUN_ATTN | RUN_TRAIN);
	r->lstride_c = (flags & RUN_TRAIN) ? bt * C : 0;
	r->lstride_a = (flags & RUN_TRAIN) ? bt * r->A : 0;
	r->lstride_qkv = per_qkv > 1 ? bt * r->QKVmax : 0;
	r->lstride_ff = (flags & RUN_TRAIN) ? bt * r->FF : 0;
	r->lstride_f = (flags & RUN_TRAIN) ? bt * r->F : 0;
	r->lstride_bt = (flags & RUN_TRAIN) ? bt : 0;

	struct { float **p; size_t n; } bufs[] = {
		{ &r->logits, (flags & RUN_LOGITS) ? bt * r->V : 0 },
		{ &r->nll, bt },
		{ &r->att, (all_att ? L : 1) * B * r->H * (size_t)T * T },
		{ &r->att_scratch, lazy ? 2 * (size_t)T * T : 0 },
		{ &r->logits_chunk, lazy_logits ? (size_t)LOGIT_ROWS * r->V : 0 },
		{ &r->head_norm, L * bt * r->H },
		{ &r->resid_norm, L * bt },
		{ &r->resid, (L + 1) * bt * C },
		{ &r->ln1, per * bt * C },
		{ &r->ln1_mean, per * bt },
		{ &r->ln1_rstd, per * bt },
		{ &r->qkv, per_qkv * bt * r->QKVmax },
		{ &r->atty, per * bt * r->A },
		{ &r->att_res, per * bt * C },
		{ &r->ln2, per * bt * C },
		{ &r->ln2_mean, per * bt },
		{ &r->ln2_rstd, per * bt },
		/* one float at least, so that per-layer offsets never start from NULL */
		{ &r->fch, per * bt * r->FF + 1 },
		{ &r->fch_act, per * bt * r->F + 1 },
		{ &r->mlp_res, per * bt * C },
		{ &r->attpost_in, sandwich * bt * C },
		{ &r->attpost_rstd, sandwich * bt },
		{ &r->mlppost_in, (c->d_ff ? sandwich : 0) * bt * C },
		{ &r->mlppost_rstd, (c->d_ff ? sandwich : 0) * bt },
		{ &r->lnf, bt * C },
		{ &r->lnf_mean, bt },
		{ &r->lnf_rstd, bt },
		{ &r->scratch, bt * C },
	};
	enum { N_BUFS = sizeof bufs / sizeof bufs[0] };
	size_t off[N_BUFS], end[N_BUFS], total = 0; /* each 64-byte aligned, a gap after */
	for (size_t i = 0; i < N_BUFS; i++) {
		off[i] = total;
		end[i] = total + bufs[i].n * sizeof(float);
		total = bufs[i].n ? (end[i] + 63) / 64 * 64 + RUN_GAP : total;
	}
	char *block = r->block = xmalloc_aligned(total);
	r->block_bytes = total;
	for (size_t i = 0; i < N_BUFS; i++) {
		*bufs[i].p = bufs[i].n ? (float *)(block + off[i]) : NULL;
		if (bufs[i].n) /* under ASan a write past a buffer stops in the gap */
			mem_poison(block + end[i], (i + 1 < N_BUFS ? off[i + 1] : total) - end[i]);
	}
	if (lazy) {
		r->att_lazy = true;
		r->att_plan = xcalloc((size_t)r->L, sizeof *r->att_plan);
		r->att_made = xcalloc((size_t)r->L, 1);
		r->kept_len = xcalloc((size_t)B, sizeof *r->kept_len);
	}
	if (lazy_logits) {
		r->logits_lazy = true;
		r->logits_made = xcalloc((bt + LOGIT_ROWS - 1) / LOGIT_ROWS, 1);
	}
	return r;
}

void run_free(struct run *r)
{
	if (!r)
		return;
	mem_unpoison(r->block, malloc_usable_size(r->block));
	xfree_aligned(r->block); /* kept for the next run of this size */
	free(r->att_plan);
	free(r->att_made);
	free(r->kept_len);
	free(r->logits_made);
	free(r);
}

size_t run_bytes(const struct run *r)
{
	size_t L = (size_t)r->L, bt = (size_t)r->B * r->T;
	size_t lazy = (r->att_plan ? L * (sizeof *r->att_plan + 1) + r->B * sizeof(int) : 0) +
		      (r->logits_made ? (bt + LOGIT_ROWS - 1) / LOGIT_ROWS : 0);
	return r->block_bytes + sizeof *r + lazy;
}

/* Layer l's attention into att, from its kept q and k by its pass's call,
 * unless it is there already. */
static void att_make(const struct run *r, int l)
{
	if (!r->att_made || r->att_made[l])
		return;
	const struct attn_spec *s = &r->att_plan[l];
	float *att = r->att + (size_t)l * r->b * r->H * r->t * r->t;
	if (s->T)
		attention_run(s, NULL, att, NULL, run_qkv(r, l));
	else
		memset(att, 0, (size_t)r->b * r->H * r->t * r->t * sizeof *att);
	r->att_made[l] = 1;
}

static void head_logits(const struct model *m, float *logits, const float *xn, int n, bool own);

/* Chunk k (rows k * LOGIT_ROWS on) of r's logits, unless it is made. */
static void logits_make(const struct run *r, int k)
{
	if (!r->logits_of || r->logits_made[k])
		return;
	int N = r->b * r->t, i0 = k * LOGIT_ROWS, n = N - i0 < LOGIT_ROWS ? N - i0 : LOGIT_ROWS;
	head_logits(r->logits_of, r->logits + (size_t)i0 * r->V, r->lnf + (size_t)i0 * r->C, n,
		    run_own_threads(r->flags));
	r->logits_made[k] = 1;
}

const float *run_logits(const struct run *r)
{
	for (int k = 0; r->logits_of && k * LOGIT_ROWS < r->b * r->t; k++)
		logits_make(r, k);
	return r->logits;
}

const float *run_logits_row(const struct run *r, int i)
{
	if (!r->logits)
		return NULL;
	logits_make(r, i / LOGIT_ROWS);
	return r->logits + (size_t)i * r->V;
}

void run_att_each(const struct run *r, int l, attn_head_fn *fn, void *ctx)
{
	if (r->att_made && !r->att_made[l] && r->att_plan[l].T) {
		attention_each(&r->att_plan[l], r->att_scratch, run_qkv(r, l), fn, ctx);
		return;
	}
	for (int b = 0; b < r->b; b++)
		for (int h = 0; h < r->H; h++)
			fn(ctx, b, h, run_att(r, l, b, h));
}

void run_att_fill(const struct run *r)
{
	for (int l = 0; l < r->L; l++)
		att_make(r, l);
}

void run_written(struct run *r)
{
	if (r->att_made)
		memset(r->att_made, 1, (size_t)r->L);
	r->logits_of = NULL;
}

float *run_att(const struct run *r, int l, int b, int h)
{
	size_t tt = (size_t)r->t * r->t;
	size_t layer = (r->flags & (RUN_ATTN | RUN_TRAIN)) ? (size_t)l : 0;
	att_make(r, l);
	return r->att + ((layer * r->b + b) * r->H + h) * tt;
}

float *run_qkv(const struct run *r, int l)
{
	return r->qkv + (size_t)l * r->lstride_qkv;
}

/* ---------------------------------------------------------------- forward */

void engine_set_threads(int n)
{
	if (n <= 0)
		n = cpu_count();
	openblas_set_num_threads(n);
}

void model_heads_site(const struct run_hook *hook, const struct run_options *o, int l, float *x,
		      int B, int T, int pos0, int H, int D)
{
	int N = B * T;
	for (int h = 0; h < H; h++) {
		if (!opt_is_ablated(o, l * H + h))
			continue;
		for (int i = 0; i < N; i++)
			memset(x + (size_t)i * H * D + (size_t)h * D, 0, (size_t)D * sizeof(float));
	}
	if (hook && hook->fn)
		hook->fn(hook->ctx, HOOK_HEADS, l, x, B, T, pos0, H * D);
}

void model_layer(const struct model *m, int l, const float *qkvw, const float *qkvb, int G,
		 struct layer_weights *w)
{
	const struct model_config *c = &m->cfg;
	size_t C = (size_t)c->d_model, F = (size_t)c->d_ff, FF = (size_t)cfg_ff_rows(c);
	size_t QKV = (size_t)cfg_qkv_rows(c, G);
#define AT(id, n) (m->p[id] ? m->p[id] + (size_t)l * (n) : NULL)
	w->ln1w = AT(P_LN1W, C);
	w->ln1b = AT(P_LN1B, C);
	w->ln2w = AT(P_LN2W, C);
	w->ln2b = AT(P_LN2B, C);
	w->projw = AT(P_ATTPROJW, C * (size_t)cfg_attn_width(c));
	w->projb = AT(P_ATTPROJB, C);
	w->fcw = AT(P_FCW, FF * C);
	w->fcb = AT(P_FCB, FF);
	w->fpw = AT(P_FCPROJW, C * F);
	w->fpb = AT(P_FCPROJB, C);
	w->apw = AT(P_ATTPOSTW, C);
	w->mpw = AT(P_MLPPOSTW, C);
	w->qnw = AT(P_QNORMW, m->psize[P_QNORMW] / (size_t)c->n_layer);
	w->knw = AT(P_KNORMW, m->psize[P_KNORMW] / (size_t)c->n_layer);
#undef AT
	w->qkvw = qkvw ? qkvw + (size_t)l * QKV * C : NULL;
	w->qkvb = qkvb ? qkvb + (size_t)l * QKV : NULL;
	w->qkvh = qkvw ? NULL : model_held(m, P_QKVW, l);
	w->projh = model_held(m, P_ATTPROJW, l);
	w->fch = model_held(m, P_FCW, l);
	w->fph = model_held(m, P_FCPROJW, l);
}

int run_kv_heads(const struct model *m, const struct run_options *o)
{
	/* Going up by a whole factor only replicates native K/V heads, and
	 * query head h would read a copy of native head h / (H / K): computing
	 * with the native heads gives the same numbers, bit for bit (a product
	 * with more output rows may round differently in the BLAS kernel). */
	int K = m->cfg.n_kv_head;
	if (o->pitfall == PITFALL_NO_TRANSPOSE) /* viewing copies is not viewing the originals */
		return o->kv_heads;
	return o->kv_heads > K && o->kv_heads % K == 0 ? K : o->kv_heads;
}

int *next_token_targets(const int *tokens, int B, int T)
{
	int N = B * T, *tg = xmalloc((size_t)(N > 0 ? N : 1) * sizeof *tg);
	for (int i = 0; i < N; i++)
		tg[i] = (i % T == T - 1) ? -1 : tokens[i + 1];
	return tg;
}

int *model_targets(const struct model_config *c, const int *tokens, int B, int T)
{
	if (!cfg_is_encoder(c))
		return next_token_targets(tokens, B, T);
	int N = B * T, *tg = xmalloc((size_t)(N > 0 ? N : 1) * sizeof *tg);
	memcpy(tg, tokens, (size_t)N * sizeof *tg);
	return tg;
}

/* Token embeddings plus learned positions (position i % T of each row)
 * into x (B*T, C), then the embedding norm (epsilon eps) when the model
 * has one (tmp: (B*T, C) scratch). */
static void embed_forward(const struct model *m, const int *tokens, int B, int T, float *x,
			  float *tmp, float eps)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model, N = B * T;
	float *sum = c->emb_norm ? tmp : x;
	float s = c->emb_scale > 0.0f ? c->emb_scale : 1.0f; /* Gemma's, on the tokens' only */
	for (int i = 0; i < N; i++) {
		float *xi = sum + (size_t)i * C;
		const float *te = model_embedding(m, tokens[i], xi);
		if (c->pos == POS_LEARNED) {
			const float *pe = m->p[P_WPE] + (size_t)(i % T) * C;
			for (int j = 0; j < C; j++)
				xi[j] = te[j] * s + pe[j];
		} else if (s != 1.0f) {
			for (int j = 0; j < C; j++)
				xi[j] = te[j] * s;
		} else {
			if (te != xi)
				memcpy(xi, te, (size_t)C * sizeof(float));
		}
	}
	if (c->emb_norm)
		norm_forward(c->norm, x, NULL, NULL, sum, m->p[P_LNEW], m->p[P_LNEB], N, C, eps);
}

/* The output layer on n rows xn of the final norm's output: logits (n, V),
 * soft-capped. */
static void head_logits(const struct model *m, float *logits, const float *xn, int n, bool own)
{
	const struct model_config *c = &m->cfg;
	matmul_w(logits, xn, model_output_layer(m), m->p[P_OUTB], n, c->d_model, c->vocab_size, own);
	softcap_forward(logits, (long)n * c->vocab_size, c->final_softcap);
}

/* Whether m's output layer on the engine's threads (own) is gemmw.h's
 * product, whose rows cost no more LOGIT_ROWS at a time (it streams the
 * weights once per 85 rows of GPT-2 small's width anyway); quantized
 * weights are made F32 a tile at a time for each product, so they are
 * multiplied all at once. */
static bool logits_by_rows(const struct model *m, bool own)
{
	struct wmat w = model_output_layer(m);
	if (!own || !gemmw_available())
		return false;
	for (int i = 0; w.h && i < w.h->n_parts; i++)
		if (w.h->part[i].type != GGML_F16 && w.h->part[i].type != GGML_BF16)
			return false;
	return true;
}

/* model_head_forward with its norm's epsilon eps. */
static void head_forward(const struct model *m, float *logits, float *xn, float *mean,
			 float *rstd, float *tmp, const float *x, int n, float eps, bool own)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model;
	if (c->head == HEAD_NONE) { /* the last block's output is the model's */
		memcpy(xn, x, (size_t)n * C * sizeof *xn);
		return;
	}
	if (c->head == HEAD_MLM) {
		matmul_forward(tmp, x, m->p[P_HEADW], m->p[P_HEADB], n, C, C);
		gelu_exact_forward(tmp, tmp, (long)n * C);
		norm_forward(c->norm, xn, mean, rstd, tmp, m->p[P_HEADLNW], m->p[P_HEADLNB], n, C, eps);
	} else {
		norm_forward(c->norm, xn, mean, rstd, x, m->p[P_LNFW], m->p[P_LNFB], n, C, eps);
	}
	if (logits)
		head_logits(m, logits, xn, n, own);
}

void model_head_forward(const struct model *m, float *logits, float *xn, float *mean,
			float *rstd, float *tmp, const float *x, int n)
{
	head_forward(m, logits, xn, mean, rstd, tmp, x, n, m->cfg.norm_eps,
		     run_own_threads(0));
}

/* The epsilon of every norm of a pass under o: 0 under the eps0 pitfall. */
static float pass_eps(const struct model *m, const struct run_options *o)
{
	return o->pitfall == PITFALL_EPS0 ? 0.0f : m->cfg.norm_eps;
}

/* Records in r->nonfinite the first of rows row0 .. row0+n-1 of x (w
 * values each; r->t rows per sequence) holding a value that is not finite,
 * unless an earlier site already did. */
static void note_nonfinite(struct run *r, const char *site, int layer, const float *x, int row0,
			   int n, int w)
{
	if (r->nonfinite.site)
		return;
	for (int i = 0; i < n; i++) {
		const float *row = x + (size_t)i * w;
		for (int j = 0; j < w; j++)
			if (!isfinite(row[j])) {
				r->nonfinite.site = site;
				r->nonfinite.layer = layer;
				r->nonfinite.seq = (row0 + i) / r->t;
				r->nonfinite.pos = (row0 + i) % r->t;
				return;
			}
	}
}

/* The output head on the last block's output (its normed rows in r->lnf),
 * and with RUN_LOGITS the logits and the NLL of targets (NULL:
 * model_targets).  0, or -1 for a target outside the vocabulary. */
static int output_forward(const struct model *m, const int *tokens, const int *targets, int B,
			  int T, struct run *r, struct err *e)
{
	const struct model_config *c = &m->cfg;
	int C = c->d_model, L = c->n_layer, N = B * T, V = c->vocab_size;
	bool own = run_own_threads(r->flags);
	head_forward(m, NULL, r->lnf, r->lnf_mean, r->lnf_rstd, r->scratch,
		     r->resid + (size_t)L * N * C, N, pass_eps(m, &r->opt), own);
	if (c->head != HEAD_NONE)
		note_nonfinite(r, "final norm", L, r->lnf, 0, N, C);
	r->loss = NAN;
	r->n_targets = 0;
	r->logits_of = NULL;
	if (!(r->flags & RUN_LOGITS))
		return 0;
	int *tg = targets ? NULL : model_targets(c, tokens, B, T);
	if (tg)
		targets = tg;
	for (int i = 0; i < N; i++)
		if (targets[i] >= V) {
			free(tg);
			return err_set(e, "target %d at position %d is outside the vocabulary", targets[i], i);
		}
	/* lazy: LOGIT_ROWS rows at a time in the chunk, made again on read */
	bool lazy = r->logits_lazy && logits_by_rows(m, own);
	int rows = lazy ? LOGIT_ROWS : N, count;
	for (int i0 = 0; i0 < N; i0 += rows) {
		int n = N - i0 < rows ? N - i0 : rows;
		float *z = lazy ? r->logits_chunk : r->logits + (size_t)i0 * V;
		head_logits(m, z, r->lnf + (size_t)i0 * C, n, own);
		note_nonfinite(r, "logits", L, z, i0, n, V);
		crossentropy_forward(r->nll + i0, z, targets + i0, n, V, &count);
		r->n_targets += count;
	}
	double sum = 0.0; /* in crossentropy_forward's order */
	for (int i = 0; i < N; i++)
		if (targets[i] >= 0)
			sum += r->nll[i];
	r->loss = r->n_targets ? sum / r->n_targets : NAN;
	if (lazy) {
		r->logits_of = m;
		memset(r->logits_made, 0, ((size_t)N + LOGIT_ROWS - 1) / LOGIT_ROWS);
	}
	free(tg);
	return 0;
}

/* The no-transpose view (model.h, enum pitfall) of n head slots, D wide,
 * starting at column off of rows ld wide, for each of B sequences of T
 * rows: dst's slot (t, h) = src's slot (u / n, u % n), u = h*T + t; with
 * back set, the other way round (src's (t, h) into dst's (u / n, u % n)). */
static void view_heads(float *dst, const float *src, int B, int T, int n, int D, int ld, int off,
		       bool back)
{
	for (int b = 0; b < B; b++)
		for (int h = 0; h < n; h++)
			for (int t = 0; t < T; t++) {
				int u = h * T + t;
				size_t a = ((size_t)b * T + t) * ld + off + (size_t)h * D;
				size_t z = ((size_t)b * T + u / n) * ld + off + (size_t)(u % n) * D;
				memcpy(dst + (back ? z : a), src + (back ? a : z), (size_t)D * sizeof(float));
			}
}

/* Layer l's attention under r->opt from its input rows attn_in (rows row0
 * on): q, k, v into the layer's qkv rows, the q/k norm, RoPE, the mask and
 * the softmax into its att (a lazy run: into att_scratch, the call kept in
 * att_plan), the heads' outputs into its atty.  Under the no-transpose
 * pitfall (row0 = 0: model_rows_resumable) the qkv rows are viewed before
 * RoPE (and kept so) and the outputs put back after, through one scratch
 * block. */
static void attend(struct model *m, struct run *r, int l, const float *attn_in,
		   const struct layer_weights *w, int G, int row0, bool own)
{
	const struct model_config *c = &m->cfg;
	const struct run_options *o = &r->opt;
	int B = r->b, T = r->t, n = B * T - row0;
	int C = c->d_model, H = c->n_head, D = cfg_d_head(c), QKV = cfg_qkv_rows(c, G);
	float *qkv = r->qkv + l * r->lstride_qkv, *atty = r->atty + l * r->lstride_a;
	float *att = r->att + ((r->flags & (RUN_ATTN | RUN_TRAIN)) ? (size_t)l * B * T * H * T : 0);
	bool lazy = r->att_lazy && r->att_scratch;
	if (row0 > 0 && !lazy)
		att_make(r, l); /* the rows kept before row0, from the q and k still there */
	float *q_rows = qkv + (size_t)row0 * QKV, *view = NULL;
	matmul_w(q_rows, attn_in, (struct wmat){ w->qkvw, w->qkvh }, w->qkvb, n, C, QKV, own);
	if (o->pitfall == PITFALL_NO_TRANSPOSE) {
		view = xmalloc((size_t)B * T * QKV * sizeof *view);
		memcpy(view, qkv, (size_t)B * T * QKV * sizeof *view);
		view_heads(qkv, view, B, T, H, D, QKV, 0, false);
		view_heads(qkv, view, B, T, G, D, QKV, H * D, false);
		view_heads(qkv, view, B, T, G, D, QKV, (H + G) * D, false);
	}
	if (w->qnw) /* slots keep to their part under the view: the same scales */
		qk_norm_rows(q_rows, n, QKV, H, G, D, w->qnw, w->knw, c->qk_norm_whole, pass_eps(m, o));
	if (c->pos == POS_ROPE) {
		float *freq = xmalloc((size_t)cfg_rotary_dims(c) / 2 * sizeof *freq);
		struct model_config rc;
		config_rope_of_layer(c, l, &rc);
		config_rope_freqs(&rc, T, freq); /* the whole pass's T (LongRoPE's table) */
		if (row0 == 0)
			rope_forward(qkv, B, T, H + G, D, cfg_rotary_dims(c), QKV, freq,
				     cfg_rope_mscale(&rc));
		else
			for (int i = 0; i < n; i++)
				rope_rotate(q_rows + (size_t)i * QKV, H + G, D, cfg_rotary_dims(c),
					    row0 + i, freq, cfg_rope_mscale(&rc));
		free(freq);
	}
	float *out = view ? view : atty; /* the viewed heads' outputs, (B, T, H*D) */
	struct attn_spec s = { B, T, row0, H, G, D, MASK_CAUSAL, 0,
			       o->scale ? cfg_attn_scale(c) : 1.0f, c->attn_softcap, r->key_len,
			       o->pitfall == PITFALL_MASK_ONE_HEAD ? 1 : H, own };
	s.mask = layer_mask(c, o, l, &s.window);
	attention_run(&s, out, lazy ? NULL : att, r->att_scratch, qkv);
	if (r->att_made) { /* the call, to make the weights again from qkv */
		if (r->key_len) {
			memcpy(r->kept_len, r->key_len, (size_t)B * sizeof *r->kept_len);
			s.key_len = r->kept_len;
		}
		s.q0 = 0;
		r->att_plan[l] = s;
		r->att_made[l] = !lazy;
	}
	if (view) {
		view_heads(atty, view, B, T, H, D, H * D, 0, true);
		free(view);
	}
}

/* A sandwich norm (scale w: ATTPOSTW / MLPPOSTW, NULL: none) in place on
 * the n rows x of layer l from row row0; a run that keeps them (keep_in,
 * keep_rstd: run.attpost_in / attpost_rstd or mlppost_*, NULL when not)
 * saves the rows' input and rstd there for backward. */
static void sandwich_forward(const struct run *r, float *keep_in, float *keep_rstd, int l,
			     int row0, float *x, const float *w, enum norm_type type, int n, int C,
			     float eps)
{
	float *rstd = NULL;
	if (w && keep_in) {
		memcpy(keep_in + l * r->lstride_c + (size_t)row0 * C, x, (size_t)n * C * sizeof *x);
		rstd = keep_rstd + l * r->lstride_bt + row0;
	}
	norm_forward(type, x, NULL, rstd, x, w, NULL, n, C, eps);
}

/* Blocks l0 .. L-1 of the pass r describes (r->b, r->t, r->opt) on
 * r->resid[l0], the input of block l0, as model_forward runs them; from
 * row row0 on only (B = 1, checked by model_blocks_from): the rows before
 * it, and their keys and values, are the last pass's. */
static void blocks_forward(struct model *m, struct run *r, int l0, int row0)
{
	const struct model_config *c = &m->cfg;
	const struct run_options *o = &r->opt;
	int B = r->b, T = r->t, N = B * T, n = N - row0; /* n rows from row0 */
	int C = c->d_model, L = c->n_layer, H = c->n_head, D = cfg_d_head(c), A = H * D;
	int G = run_kv_heads(m, o);
	bool post = o->placement == PLACE_POST;
	bool skip = c->residual, parallel = c->parallel && !post;
	float eps = pass_eps(m, o);
	bool own = run_own_threads(r->flags);
	const float *qkvw, *qkvb;
	model_qkv_for(m, G, &qkvw, &qkvb);
	size_t rc = (size_t)row0 * C; /* offset of row row0 in a (N, C) buffer */
	size_t ra = (size_t)row0 * A; /* and in a (N, A) one */
	for (int l = l0; l < L; l++) {
		const float *in = r->resid + (size_t)l * N * C + rc;
		float *out = r->resid + (size_t)(l + 1) * N * C + rc;
		float *ln1 = r->ln1 + l * r->lstride_c + rc, *ln2 = r->ln2 + l * r->lstride_c + rc;
		float *ln1_mean = r->ln1_mean + l * r->lstride_bt + row0;
		float *ln1_rstd = r->ln1_rstd + l * r->lstride_bt + row0;
		float *ln2_mean = r->ln2_mean + l * r->lstride_bt + row0;
		float *ln2_rstd = r->ln2_rstd + l * r->lstride_bt + row0;
		float *atty = r->atty + l * r->lstride_a;
		float *att_res = r->att_res + l * r->lstride_c + rc, *mlp_res = r->mlp_res + l * r->lstride_c + rc;
		float *fch = r->fch + l * r->lstride_ff + (size_t)row0 * r->FF;
		float *fch_act = r->fch_act + l * r->lstride_f + (size_t)row0 * r->F;
		float *scratch = r->scratch + rc;
		struct layer_weights w;
		model_layer(m, l, qkvw, qkvb, G, &w);

		/* attention sub-block: att_res = in + attn(pre ? norm1(in) : in),
		 * without "in +" when the model has no residual connections */
		const float *attn_in = in;
		if (!post) {
			norm_forward(c->norm, ln1, ln1_mean, ln1_rstd, in, w.ln1w, w.ln1b, n, C, eps);
			note_nonfinite(r, "norm1", l, ln1, row0, n, C);
			attn_in = ln1;
		}
		attend(m, r, l, attn_in, &w, G, row0, own);
		model_heads_site(r->hook, o, l, atty + ra, row0 ? 1 : B, row0 ? n : T, row0, H, D);
		for (int b = 0; b < B; b++)
			for (int h = 0; h < H; h++)
				row_norms(r->head_norm + (((size_t)l * B + b) * H + h) * T + row0,
					  atty + (size_t)b * T * A + ra + (size_t)h * D, T - row0, D, A);
		matmul_w(scratch, atty + ra, (struct wmat){ w.projw, w.projh }, w.projb, n, A, C, own);
		sandwich_forward(r, r->attpost_in, r->attpost_rstd, l, row0, scratch, w.apw, c->norm,
				 n, C, eps);
		residual_forward(att_res, skip ? in : NULL, scratch, (long)n * C);

		/* MLP sub-block (none when F = 0: the block ends after attention);
		 * a parallel block's MLP reads the block's input, not att_res,
		 * and its output always adds to att_res */
		if (!post) {
			const float *end = att_res, *mlp_in = parallel ? in : att_res;
			if (c->d_ff) {
				norm_forward(c->norm, ln2, ln2_mean, ln2_rstd, mlp_in, w.ln2w, w.ln2b, n, C, eps);
				note_nonfinite(r, "norm2", l, ln2, row0, n, C);
				mlp_forward(c, fch, fch_act, scratch, ln2, (struct wmat){ w.fcw, w.fch }, w.fcb,
					    (struct wmat){ w.fpw, w.fph }, w.fpb, n, own);
				sandwich_forward(r, r->mlppost_in, r->mlppost_rstd, l, row0, scratch,
						 w.mpw, c->norm, n, C, eps);
				residual_forward(mlp_res, skip || parallel ? att_res : NULL, scratch, (long)n * C);
				end = mlp_res;
			}
			memcpy(out, end, (size_t)n * C * sizeof(float));
		} else {
			norm_forward(c->norm, ln1, ln1_mean, ln1_rstd, att_res, w.ln1w, w.ln1b, n, C, eps);
			note_nonfinite(r, "norm1", l, ln1, row0, n, C);
			const float *end = ln1;
			if (c->d_ff) {
				mlp_forward(c, fch, fch_act, scratch, ln1, (struct wmat){ w.fcw, w.fch }, w.fcb,
					    (struct wmat){ w.fpw, w.fph }, w.fpb, n, own);
				sandwich_forward(r, r->mlppost_in, r->mlppost_rstd, l, row0, scratch,
						 w.mpw, c->norm, n, C, eps);
				residual_forward(mlp_res, skip ? ln1 : NULL, scratch, (long)n * C);
				norm_forward(c->norm, ln2, ln2_mean, ln2_rstd, mlp_res, w.ln2w, w.ln2b, n, C, eps);
				note_nonfinite(r, "norm2", l, ln2, row0, n, C);
				end = ln2;
			}
			memcpy(out, end, (size_t)n * C * sizeof(float));
		}
		if (r->hook && r->hook->fn)
			r->hook->fn(r->hook->ctx, HOOK_RESID, l, out, row0 ? 1 : B, row0 ? n : T, row0, C);
		note_nonfinite(r, "block output", l, out, row0, n, C);
		row_norms(r->resid_norm + (size_t)l * N + row0, out, n, C, C);
	}
}

/* Whether a pass under o computes blocks 0 .. l0-1 as one under p does:
 * the same options but for ablations in layers l0 and after. */
static bool same_before(const struct model *m, const struct run_options *o,
			const struct run_options *p, int l0)
{
	struct run_options a = *o, b = *p;
	int H = m->cfg.n_head;
	for (int bit = l0 * H; bit < ABLATE_WORDS * 64; bit++) {
		opt_set_ablated(&a, bit, false);
		opt_set_ablated(&b, bit, false);
	}
	return run_options_equal(&a, &b);
}

int model_forward_from(struct model *m, const struct run_options *o, const int *tokens,
		       const int *targets, const struct run *from, int l0, struct run *r,
		       struct err *e)
{
	const struct model_config *c = &m->cfg;
	if (run_options_validate(m, o, e) != 0)
		return -1;
	int B = from->b, T = from->t;
	if (T < 1 || l0 < 0 || l0 > c->n_layer)
		return err_set(e, "no pass to start from at block %d", l0);
	if (B > r->B || T > r->T || (size_t)B * T > (size_t)r->B * r->T ||
	    r->C != c->d_model || r->L != c->n_layer || r->H != c->n_head ||
	    r->A != cfg_attn_width(c) || r->V != from->V)
		return err_set(e, "run buffers do not fit the pass to start from");
	if (!same_before(m, o, &from->opt, l0) || from->key_len || r->key_len)
		return err_set(e, "the options differ from the pass's before block %d", l0);
	double t0 = now_ms();
	r->b = B;
	r->t = T;
	r->opt = *o;
	size_t N = (size_t)B * T, C = (size_t)c->d_model;
	memcpy(r->resid, from->resid, (size_t)(l0 + 1) * N * C * sizeof(float));
	r->nonfinite = from->nonfinite.site && from->nonfinite.layer < l0 ? from->nonfinite
		       : (struct run_nonfinite){ 0, 0, 0, NULL };
	for (int l = 0; r->att_made && l < l0; l++) { /* not filled: read as zeros */
		r->att_plan[l].T = 0;
		r->att_made[l] = 0;
	}
	blocks_forward(m, r, l0, 0);
	if (output_forward(m, tokens, targets, B, T, r, e) != 0)
		return -1;
	r->forward_ms = now_ms() - t0;
	return 0;
}

bool model_rows_resumable(const struct run *r)
{
	return r->b == 1 && !r->key_len && (r->flags & (RUN_QKV | RUN_TRAIN)) &&
	       (r->opt.mask == MASK_CAUSAL || r->opt.mask == MASK_WINDOW) &&
	       r->opt.pitfall != PITFALL_NO_TRANSPOSE && r->opt.pitfall != PITFALL_MASK_ONE_HEAD;
}

int model_blocks_from(struct model *m, struct run *r, int l0, int row0, struct err *e)
{
	if (r->t < 1)
		return err_set(e, "no pass to resume: the run has not been used");
	if (l0 < 0 || l0 > m->cfg.n_layer)
		return err_set(e, "block %d does not exist (the model has %d)", l0, m->cfg.n_layer);
	if (r->C != m->cfg.d_model || r->L != m->cfg.n_layer || r->H != m->cfg.n_head ||
	    r->A != cfg_attn_width(&m->cfg))
		return err_set(e, "run buffers were made for another model shape");
	if (row0 < 0 || row0 >= r->b * r->t)
		return err_set(e, "row %d is outside the pass's %d rows", row0, r->b * r->t);
	if (row0 > 0 && !model_rows_resumable(r))
		return err_set(e, "resuming from row %d needs one sequence, a causal or window mask "
			       "and the keys kept (RUN_QKV)", row0);
	blocks_forward(m, r, l0, row0);
	return 0;
}

int model_forward(struct model *m, const struct run_options *o, const int *tokens,
		  const int *targets, int B, int T, struct run *r, struct err *e)
{
	const struct model_config *c = &m->cfg;
	if (run_options_validate(m, o, e) != 0)
		return -1;
	if (B < 1 || T < 1)
		return err_set(e, "nothing to run: %d sequences of %d tokens", B, T);
	if (T > c->context)
		return err_set(e, "%d tokens is more than the model's context of %d", T, c->context);
	if (B > r->B || T > r->T || (size_t)B * T > (size_t)r->B * r->T)
		return err_set(e, "run buffers hold %dx%d tokens, asked for %dx%d", r->B, r->T, B, T);
	if (r->C != c->d_model || r->L != c->n_layer || r->V != c->vocab_size || r->H != c->n_head ||
	    r->A != cfg_attn_width(c))
		return err_set(e, "run buffers were made for another model shape");
	int N = B * T;
	for (int i = 0; i < N; i++)
		if (tokens[i] < 0 || tokens[i] >= c->vocab_size)
			return err_set(e, "token %d at position %d is outside the vocabulary (%d)",
				       tokens[i], i, c->vocab_size);

	double t0 = now_ms();
	r->b = B;
	r->t = T;
	r->opt = *o;
	memset(&r->nonfinite, 0, sizeof r->nonfinite);
	embed_forward(m, tokens, B, T, r->resid, r->scratch, pass_eps(m, o));
	if (c->emb_norm)
		note_nonfinite(r, "embedding norm", -1, r->resid, 0, N, c->d_model);
	blocks_forward(m, r, 0, 0);

	/* final norm and output projection */
	if (output_forward(m, tokens, targets, B, T, r, e) != 0)
		return -1;
	r->forward_ms = now_ms() - t0;
	return 0;
}
