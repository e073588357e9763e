/*
 * config.c — model configuration: validation, names, and the parameter
 * tensor table (names and shapes) shared by the engine, the trainer and the
 * checkpoint code.
 */
#include "config.h"

#include <math.h>
#include <string.h>

static const char *const param_names[N_PARAMS] = {
	[P_WTE] = "wte",           [P_WPE] = "wpe",
	[P_LN1W] = "ln1w",         [P_LN1B] = "ln1b",
	[P_QKVW] = "qkvw",         [P_QKVB] = "qkvb",
	[P_ATTPROJW] = "attprojw", [P_ATTPROJB] = "attprojb",
	[P_LN2W] = "ln2w",         [P_LN2B] = "ln2b",
	[P_FCW] = "fcw",           [P_FCB] = "fcb",
	[P_FCPROJW] = "fcprojw",   [P_FCPROJB] = "fcprojb",
	[P_LNFW] = "lnfw",         [P_LNFB] = "lnfb",
	[P_LMHEAD] = "lmhead",
	[P_LNEW] = "lnew",         [P_LNEB] = "lneb",
	[P_HEADW] = "headw",       [P_HEADB] = "headb",
	[P_HEADLNW] = "headlnw",   [P_HEADLNB] = "headlnb",
	[P_OUTB] = "outb",
	[P_QNORMW] = "qnormw",     [P_KNORMW] = "knormw",
	[P_ATTPOSTW] = "attpostw", [P_MLPPOSTW] = "mlppostw",
};

const char *param_name(enum param_id i)
{
	return (unsigned)i < N_PARAMS ? param_names[i] : "?";
}

bool param_per_layer(enum param_id i)
{
	return (i >= P_LN1W && i <= P_FCPROJB) || i >= P_QNORMW;
}

size_t param_shape(const struct model_config *c, enum param_id i, size_t shape[3], int *ndim)
{
	size_t V = (size_t)c->vocab_size, C = (size_t)c->d_model, L = (size_t)c->n_layer;
	size_t S = (size_t)c->context, F = (size_t)c->d_ff, A = (size_t)cfg_attn_width(c);
	size_t QKV = (size_t)cfg_qkv_rows(c, c->n_kv_head), FF = (size_t)cfg_ff_rows(c);
	bool ln_bias = c->norm == NORM_LAYER && c->bias;
	bool lm = c->head == HEAD_LM, mlm = c->head == HEAD_MLM;
	size_t d0 = 0, d1 = 0;
	int n = 0;

	switch (i) {
	case P_WTE: d0 = V; d1 = C; n = 2; break;
	case P_WPE: if (c->pos == POS_LEARNED) { d0 = S; d1 = C; n = 2; } break;
	case P_LN1W: if (!c->post_only) { d0 = C; n = 1; } break;
	case P_LN1B: if (ln_bias) { d0 = C; n = 1; } break;
	case P_LN2W: if (F && !c->post_only) { d0 = C; n = 1; } break;
	case P_LN2B: if (ln_bias && F) { d0 = C; n = 1; } break;
	case P_QKVW: d0 = QKV; d1 = C; n = 2; break;
	case P_QKVB: if (c->bias) { d0 = QKV; n = 1; } break;
	case P_ATTPROJW: d0 = C; d1 = A; n = 2; break;
	case P_ATTPROJB: if (c->bias) { d0 = C; n = 1; } break;
	case P_FCPROJB: if (c->bias && F) { d0 = C; n = 1; } break;
	case P_FCW: if (F) { d0 = FF; d1 = C; n = 2; } break;
	case P_FCB: if (c->bias && F) { d0 = FF; n = 1; } break;
	case P_FCPROJW: if (F) { d0 = C; d1 = F; n = 2; } break;
	case P_LNFW: if (lm) { d0 = C; n = 1; } break;
	case P_LNFB: if (lm && ln_bias) { d0 = C; n = 1; } break;
	case P_LMHEAD: if (!c->tied && c->head != HEAD_NONE) { d0 = V; d1 = C; n = 2; } break;
	case P_LNEW: if (c->emb_norm) { d0 = C; n = 1; } break;
	case P_LNEB: if (c->emb_norm && ln_bias) { d0 = C; n = 1; } break;
	case P_HEADW: if (mlm) { d0 = C; d1 = C; n = 2; } break;
	case P_HEADB: if (mlm && c->bias) { d0 = C; n = 1; } break;
	case P_HEADLNW: if (mlm) { d0 = C; n = 1; } break;
	case P_HEADLNB: if (mlm && ln_bias) { d0 = C; n = 1; } break;
	case P_OUTB: if (mlm && c->bias) { d0 = V; n = 1; } break;
	case P_QNORMW: case P_KNORMW:
		if (c->qk_norm) {
			d0 = (size_t)cfg_d_head(c);
			if (c->qk_norm_whole) /* OLMo-2: over all query / all key heads */
				d0 *= (size_t)(i == P_QNORMW ? c->n_head : c->n_kv_head);
			n = 1;
		}
		break;
	case P_ATTPOSTW: if (c->sandwich) { d0 = C; n = 1; } break;
	case P_MLPPOSTW: if (c->sandwich && F) { d0 = C; n = 1; } break;
	default: break;
	}
	if (n == 0) {
		*ndim = 0;
		return 0;
	}
	size_t count;
	if (param_per_layer(i)) {
		shape[0] = L;
		shape[1] = d0;
		if (n == 2)
			shape[2] = d1;
		*ndim = n + 1;
		count = L * d0 * (n == 2 ? d1 : 1);
	} else {
		shape[0] = d0;
		if (n == 2)
			shape[1] = d1;
		*ndim = n;
		count = d0 * (n == 2 ? d1 : 1);
	}
	return count;
}

size_t config_param_count(const struct model_config *c)
{
	size_t total = 0, shape[3];
	int nd;
	for (int i = 0; i < N_PARAMS; i++)
		total += param_shape(c, (enum param_id)i, shape, &nd);
	return total;
}

int config_check_heads(int d_model, int n_head, struct err *e)
{
	if (n_head >= 1 && d_model % n_head == 0)
		return 0;
	return err_set(e, "d_model %d is not divisible by num_heads %d: each head takes "
		       "d_model / num_heads features", d_model, n_head);
}

/* Gemma 2's switches; 0 or -1 with a message. */
static int validate_gemma(const struct model_config *c, struct err *e)
{
	if (!(c->emb_scale >= 0.0f && c->emb_scale <= 1e6f))
		return err_set(e, "config: emb_scale %g must be in [0, 1e6] (0: none)",
			       (double)c->emb_scale);
	if (!(c->attn_softcap >= 0.0f && c->attn_softcap <= 1e6f) ||
	    !(c->final_softcap >= 0.0f && c->final_softcap <= 1e6f))
		return err_set(e, "config: soft-capping %g / %g must be in [0, 1e6] (0: none)",
			       (double)c->attn_softcap, (double)c->final_softcap);
	if (c->attn_scale_dim < 0 || c->attn_scale_dim > CFG_MAX_DMODEL)
		return err_set(e, "config: attn_scale_dim %d is outside 0..%d", c->attn_scale_dim,
			       CFG_MAX_DMODEL);
	if (c->rope_local_theta != 0.0f && !(c->rope_local_theta > 1.0f && c->rope_local_theta < 1e9f))
		return err_set(e, "config: rope_local_theta %g must be 0 or in (1, 1e9)",
			       (double)c->rope_local_theta);
	if (c->sandwich && c->norm != NORM_RMS)
		return err_set(e, "config: sandwich norms are RMSNorm's only (Gemma's)");
	if (c->post_only && (!c->sandwich || c->placement != PLACE_PRE || c->parallel))
		return err_set(e, "config: post_only needs the sandwich norms, pre placement and "
			       "sequential blocks (OLMo-2's)");
	if (c->qk_norm_whole && !c->qk_norm)
		return err_set(e, "config: qk_norm_whole needs qk_norm");
	return 0;
}

/* LONGROPE's tables: R/2 factors each (within CFG_MAX_ROPE_PAIRS), every
 * one finite and > 0, an attention factor finite and > 0. */
static int validate_longrope(const struct model_config *c, struct err *e)
{
	int n = cfg_rotary_dims(c) / 2;
	if (n > CFG_MAX_ROPE_PAIRS)
		return err_set(e, "config: rope_scaling longrope over rotary dims %d: its tables "
			       "hold at most %d factors per table", 2 * n, CFG_MAX_ROPE_PAIRS);
	if (!(c->rope_attn_factor > 0.0f && c->rope_attn_factor < 1e6f))
		return err_set(e, "config: rope_attn_factor %g must be in (0, 1e6)",
			       (double)c->rope_attn_factor);
	for (int i = 0; i < n; i++) {
		if (!(c->rope_short[i] > 0.0f && c->rope_short[i] < 1e30f))
			return err_set(e, "config: rope_short[%d] = %g must be above 0 and below 1e30", i,
				       (double)c->rope_short[i]);
		if (!(c->rope_long[i] > 0.0f && c->rope_long[i] < 1e30f))
			return err_set(e, "config: rope_long[%d] = %g must be above 0 and below 1e30", i,
				       (double)c->rope_long[i]);
	}
	return 0;
}

/* FACTORS: LongRoPE's checks of the table, which both fields hold, and an
 * attention factor of 1. */
static int validate_factors(const struct model_config *c, struct err *e)
{
	if (validate_longrope(c, e))
		return -1;
	if (c->rope_attn_factor != 1.0f)
		return err_set(e, "config: rope_scaling factors takes no attention factor (%g)",
			       (double)c->rope_attn_factor);
	for (int i = 0; i < cfg_rotary_dims(c) / 2; i++)
		if (c->rope_short[i] != c->rope_long[i])
			return err_set(e, "config: rope_scaling factors has one table: rope_short[%d] "
				       "%g is not rope_long[%d] %g", i, (double)c->rope_short[i], i,
				       (double)c->rope_long[i]);
	return 0;
}

/* The RoPE scaling fields (enum rope_scaling); 0 or -1 with a message. */
static int validate_rope_scaling(const struct model_config *c, struct err *e)
{
	if ((unsigned)c->rope_scaling > ROPE_SCALE_FACTORS)
		return err_set(e, "config: unknown RoPE scaling");
	if (c->rope_scaling == ROPE_SCALE_NONE)
		return 0;
	if (c->pos != POS_ROPE)
		return err_set(e, "config: rope_scaling %s needs RoPE positions",
			       rope_scaling_name(c->rope_scaling));
	if (c->rope_scaling == ROPE_SCALE_FACTORS)
		return validate_factors(c, e);
	if (c->rope_scaling != ROPE_SCALE_LONGROPE &&
	    !(c->rope_factor >= 1.0f && c->rope_factor <= 1e6f))
		return err_set(e, "config: rope_factor %g must be in [1, 1e6]", (double)c->rope_factor);
	if (c->rope_scaling == ROPE_SCALE_LINEAR)
		return 0;
	if (c->rope_orig_context < 1 || c->rope_orig_context > (1 << 30))
		return err_set(e, "config: rope_orig_context %d must be in 1..2^30",
			       c->rope_orig_context);
	if (c->rope_scaling == ROPE_SCALE_LONGROPE)
		return validate_longrope(c, e);
	if (!(c->rope_low_freq > 0.0f && c->rope_low_freq < 1e6f))
		return err_set(e, "config: rope_low_freq %g must be in (0, 1e6)",
			       (double)c->rope_low_freq);
	if (!(c->rope_high_freq > c->rope_low_freq && c->rope_high_freq < 1e6f))
		return err_set(e, "config: rope_high_freq %g must be above rope_low_freq %g and "
			       "below 1e6", (double)c->rope_high_freq, (double)c->rope_low_freq);
	return 0;
}

/* Local layers: a window of 1 .. CFG_MAX_CONTEXT keys, bits only below
 * n_layer, at least one local layer with a window and none without, and a
 * causal native mask (the window looks back only). */
static int check_local(const struct model_config *c, struct err *e)
{
	int n = 0;
	for (int l = 0; l < CFG_MAX_LAYERS; l++)
		if ((c->local[l / 64] >> (l % 64)) & 1u) {
			if (l >= c->n_layer)
				return err_set(e, "config: local layer %d does not exist (%d layers)", l,
					       c->n_layer);
			n++;
		}
	if (c->local_window < 0 || c->local_window > CFG_MAX_CONTEXT)
		return err_set(e, "config: local_window = %d is outside 0..%d", c->local_window,
			       CFG_MAX_CONTEXT);
	if ((c->local_window > 0) != (n > 0))
		return err_set(e, c->local_window > 0 ? "config: local_window %d but no local layers"
			       : "config: local layers but no local_window", c->local_window);
	if (n > 0 && c->mask != MASK_CAUSAL)
		return err_set(e, "config: local layers need the causal native mask, not %s",
			       mask_kind_name(c->mask));
	return 0;
}

int config_validate(const struct model_config *c, struct err *e)
{
#define RANGE(field, lo, hi) \
	if (c->field < (lo) || c->field > (hi)) \
		return err_set(e, "config: " #field " = %d is outside %d..%d", c->field, (int)(lo), (int)(hi))
	RANGE(vocab_size, 1, CFG_MAX_VOCAB);
	RANGE(d_model, 1, CFG_MAX_DMODEL);
	RANGE(n_layer, 1, CFG_MAX_LAYERS);
	RANGE(n_head, 1, CFG_MAX_HEADS);
	RANGE(n_kv_head, 1, CFG_MAX_HEADS);
	RANGE(d_ff, 0, CFG_MAX_DFF);
	RANGE(context, 1, CFG_MAX_CONTEXT);
	RANGE(head_dim, 0, CFG_MAX_HEAD_DIM);
#undef RANGE
	if ((double)c->n_head * cfg_d_head(c) > CFG_MAX_DMODEL)
		return err_set(e, "config: n_head %d times head_dim %d is more than %d", c->n_head,
			       cfg_d_head(c), CFG_MAX_DMODEL);
	if (c->head_dim == 0 && c->d_model % c->n_head != 0)
		return err_set(e, "config: d_model %d is not divisible by n_head %d", c->d_model, c->n_head);
	if (c->n_kv_head > c->n_head || c->n_head % c->n_kv_head != 0)
		return err_set(e, "config: n_kv_head %d does not divide n_head %d", c->n_kv_head, c->n_head);
	if ((unsigned)c->norm > NORM_RMS || (unsigned)c->placement > PLACE_POST ||
	    (unsigned)c->pos > POS_ROPE || (unsigned)c->mlp > MLP_GEGLU ||
	    (unsigned)c->head > HEAD_NONE)
		return err_set(e, "config: unknown norm, placement, positions, MLP or head kind");
	if (c->mask != MASK_CAUSAL && c->mask != MASK_NONE && c->mask != MASK_AFTER_SOFTMAX)
		return err_set(e, "config: the native mask must be causal, none or after-softmax");
	if (check_local(c, e) != 0)
		return -1;
	if (c->pos == POS_ROPE && c->rotary_dims == 0 && cfg_d_head(c) % 2 != 0)
		return err_set(e, "config: RoPE needs an even d_head, got %d", cfg_d_head(c));
	if (c->rotary_dims != 0 && c->pos != POS_ROPE)
		return err_set(e, "config: rotary_dims %d needs RoPE positions", c->rotary_dims);
	if (c->rotary_dims != 0 &&
	    (c->rotary_dims < 2 || c->rotary_dims > cfg_d_head(c) || c->rotary_dims % 2 != 0))
		return err_set(e, "config: rotary_dims %d must be even and in 2..d_head (%d)",
			       c->rotary_dims, cfg_d_head(c));
	if (c->parallel && c->placement != PLACE_PRE)
		return err_set(e, "config: parallel blocks need pre-norm placement, not %s",
			       norm_place_name(c->placement));
	if (!(c->norm_eps > 0.0f && c->norm_eps < 1.0f))
		return err_set(e, "config: norm_eps %g must be in (0, 1)", (double)c->norm_eps);
	if (c->pos == POS_ROPE && !(c->rope_theta > 1.0f && c->rope_theta < 1e9f))
		return err_set(e, "config: rope_theta %g must be in (1, 1e9)", (double)c->rope_theta);
	if (validate_rope_scaling(c, e) || validate_gemma(c, e))
		return -1;
	/* a bound the build is checked at: an 8B model (8.0e9, held as stored:
	 * bench_hf's Llama-3-8B shape) opens; whether its weights fit is the
	 * loader's memory check */
	double total = 0;
	size_t shape[3];
	int nd;
	for (int i = 0; i < N_PARAMS; i++)
		total += (double)param_shape(c, (enum param_id)i, shape, &nd);
	if (total > 16e9)
		return err_set(e, "config: %.0f parameters is more than this build handles (16e9)",
			       total);
	return 0;
}

void config_default(struct model_config *c)
{
	memset(c, 0, sizeof *c);
	c->vocab_size = 256;
	c->d_model = 128;
	c->n_layer = 4;
	c->n_head = 4;
	c->n_kv_head = 4;
	c->d_ff = 512;
	c->context = 256;
	c->norm = NORM_LAYER;
	c->norm_eps = 1e-5f;
	c->placement = PLACE_PRE;
	c->pos = POS_LEARNED;
	c->rope_theta = 10000.0f;
	c->rope_scaling = ROPE_SCALE_NONE;
	c->rope_factor = 1.0f;
	c->rope_attn_factor = 1.0f;
	c->mlp = MLP_GELU;
	c->bias = true;
	c->tied = true;
	c->residual = true;
	c->scale = true;
	c->mask = MASK_CAUSAL;
}

/* -------------------------------------------------------------------- RoPE */

/* Llama 3.1's rule reads each pair by its wavelength 2 pi / f, against two
 * bounds from the original context N: above N / low_freq the pair turns
 * factor times slower, below N / high_freq it is kept, and between the two
 * it mixes both by s = (N / wavelength - low_freq) / (high_freq - low_freq):
 * (1 - s) f / factor + s f.  LongRoPE divides pair i by its own factor,
 * from the long table once the pass is longer than N; FACTORS by its
 * table's, always. */
double config_rope_scale(const struct model_config *c, int n_pos, int i, double f)
{
	double factor = c->rope_factor;
	if (c->rope_scaling == ROPE_SCALE_LINEAR)
		return f / factor;
	if (c->rope_scaling == ROPE_SCALE_LONGROPE || c->rope_scaling == ROPE_SCALE_FACTORS)
		return f / (double)(cfg_rope_long(c, n_pos) ? c->rope_long[i] : c->rope_short[i]);
	if (c->rope_scaling != ROPE_SCALE_LLAMA3)
		return f;
	double n = c->rope_orig_context, lo = c->rope_low_freq, hi = c->rope_high_freq;
	double wavelength = 6.283185307179586 / f; /* 2 pi / f */
	if (wavelength > n / lo)
		return f / factor;
	if (wavelength < n / hi)
		return f;
	double s = (n / wavelength - lo) / (hi - lo);
	return (1.0 - s) * f / factor + s * f;
}

void config_rope_freqs(const struct model_config *c, int n_pos, float *freq)
{
	int R = cfg_rotary_dims(c);
	for (int i = 0; i < R / 2; i++)
		freq[i] = (float)config_rope_scale(c, n_pos, i,
			powf(c->rope_theta, -2.0f * (float)i / (float)R));
}

void config_rope_of_layer(const struct model_config *c, int l, struct model_config *out)
{
	if (out != c)
		*out = *c;
	if (c->rope_local_theta > 0.0f && cfg_layer_local(c, l)) {
		out->rope_theta = c->rope_local_theta;
		out->rope_scaling = ROPE_SCALE_NONE;
		out->rope_factor = 1.0f;
	}
}

/* ------------------------------------------------------------------- names */

static const char *const norm_names[] = { "layernorm", "rmsnorm" };
static const char *const place_names[] = { "pre", "post" };
static const char *const pos_names[] = { "learned", "rope" };
static const char *const mlp_names[] = { "gelu", "swiglu", "gelu-exact", "geglu" };
static const char *const mask_names[] = { "causal", "none", "window", "after-softmax" };
static const char *const head_names[] = { "lm", "mlm", "none" };
static const char *const rope_scaling_names[] = { "none", "linear", "llama3", "longrope",
						   "factors" };

static int lookup(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

const char *norm_type_name(enum norm_type t) { return (unsigned)t <= NORM_RMS ? norm_names[t] : "?"; }
const char *norm_place_name(enum norm_place p) { return (unsigned)p <= PLACE_POST ? place_names[p] : "?"; }
const char *pos_type_name(enum pos_type p) { return (unsigned)p <= POS_ROPE ? pos_names[p] : "?"; }
const char *mlp_type_name(enum mlp_type m) { return (unsigned)m <= MLP_GEGLU ? mlp_names[m] : "?"; }
const char *mask_kind_name(enum mask_kind m)
{
	return (unsigned)m <= MASK_AFTER_SOFTMAX ? mask_names[m] : "?";
}

const char *head_type_name(enum head_type h) { return (unsigned)h <= HEAD_NONE ? head_names[h] : "?"; }

const char *rope_scaling_name(enum rope_scaling r)
{
	return (unsigned)r <= ROPE_SCALE_FACTORS ? rope_scaling_names[r] : "?";
}

#define PARSER(fn, type, names) \
	int fn(const char *s, type *out) \
	{ \
		int i = lookup(names, (int)(sizeof names / sizeof names[0]), s); \
		if (i < 0) \
			return -1; \
		*out = (type)i; \
		return 0; \
	}
PARSER(norm_type_parse, enum norm_type, norm_names)
PARSER(norm_place_parse, enum norm_place, place_names)
PARSER(pos_type_parse, enum pos_type, pos_names)
PARSER(mlp_type_parse, enum mlp_type, mlp_names)
PARSER(mask_kind_parse, enum mask_kind, mask_names)
PARSER(head_type_parse, enum head_type, head_names)
PARSER(rope_scaling_parse, enum rope_scaling, rope_scaling_names)
#undef PARSER
