/*
 * checkpoint.c — models in one safetensors file (layout in checkpoint.h).
 *
 * Loading trusts nothing in the file.  The safetensors reader
 * (safetensors.h) checks the container — header length, header JSON,
 * every tensor's dtype and byte range — and calls back here for what is
 * ours: the metadata marks and the config first, then each tensor's name
 * and shape against that config, all before the model is allocated.  The
 * weights are read straight into the model and scanned for NaN/Inf.
 *
 * Saving streams the header and the data to a temp file next to the target,
 * which is renamed into place once everything is written and synced.
 */
#define _GNU_SOURCE
#include "checkpoint.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "json-util.h"
#include "loaders.h"
#include "model.h"
#include "safetensors.h"
#include "tokenizer.h"
#include "util.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint.c copies little-endian tensor data as is: little-endian hosts only"
#endif

#define CKPT_FORMAT  "attnscope"
#define CKPT_VERSION "1"
#define META_KEY     "__metadata__"
#define SUFFIX       ".safetensors"

/* Elements converted per step when writing 16-bit tensors. */
#define CHUNK 8192

/* ------------------------------------------------------------ config JSON */

/* Keys of the config object, in the order checkpoint_config_parse checks
 * them; any other key is an error. */
static const char *const cfg_keys[] = {
	"vocab_size", "d_model", "n_layer", "n_head", "n_kv_head", "d_ff",
	"context", "norm", "norm_eps", "placement", "pos", "rope_theta", "mlp",
	"bias", "tied", "residual", "scale", "mask", "parallel", "rotary_dims", "head_dim",
	"emb_norm", "head", "rope_scaling", "rope_factor", "rope_low_freq", "rope_high_freq",
	"rope_orig_context", "local_window", "local_layers", "qk_norm", "emb_scale", "sandwich",
	"attn_softcap", "final_softcap", "attn_scale_dim", "rope_local_theta", "qk_norm_whole",
	"post_only", "rope_attn_factor", "rope_short", "rope_long", "rope_factors",
};

/* The double with the fewest significant decimal digits that converts back
 * to f, so that 1e-5f is written as 1e-5 rather than 9.99999975e-06. */
static double float_shortest(float f)
{
	char buf[32];
	for (int p = 1; p <= 9; p++) {
		snprintf(buf, sizeof buf, "%.*g", p, (double)f);
		if (strtof(buf, NULL) == f)
			return strtod(buf, NULL);
	}
	return (double)f;
}

/* A float in its shortest form; left out when it is not finite (JSON has
 * no NaN), which the parser then rejects as missing. */
static void set_float(json_t *o, const char *key, float f)
{
	if (isfinite(f))
		ju_set(o, key, json_real(float_shortest(f)));
}

/* LongRoPE's attention factor and its two tables, R/2 numbers each. */
static void longrope_to_json(json_t *o, const struct model_config *c)
{
	json_t *tables[2] = { json_array(), json_array() };
	for (int i = 0; i < cfg_rotary_dims(c) / 2 && i < CFG_MAX_ROPE_PAIRS; i++) {
		ju_append(tables[0], json_real(float_shortest(c->rope_short[i])));
		ju_append(tables[1], json_real(float_shortest(c->rope_long[i])));
	}
	set_float(o, "rope_attn_factor", c->rope_attn_factor);
	ju_set(o, "rope_short", tables[0]);
	ju_set(o, "rope_long", tables[1]);
}

static json_t *config_to_json(const struct model_config *c)
{
	json_t *o = ju_check(json_object());
	ju_set(o, "vocab_size", json_integer(c->vocab_size));
	ju_set(o, "d_model", json_integer(c->d_model));
	ju_set(o, "n_layer", json_integer(c->n_layer));
	ju_set(o, "n_head", json_integer(c->n_head));
	ju_set(o, "n_kv_head", json_integer(c->n_kv_head));
	ju_set(o, "d_ff", json_integer(c->d_ff));
	ju_set(o, "context", json_integer(c->context));
	ju_set(o, "norm", json_string(norm_type_name(c->norm)));
	set_float(o, "norm_eps", c->norm_eps);
	ju_set(o, "placement", json_string(norm_place_name(c->placement)));
	ju_set(o, "pos", json_string(pos_type_name(c->pos)));
	set_float(o, "rope_theta", c->rope_theta);
	ju_set(o, "mlp", json_string(mlp_type_name(c->mlp)));
	ju_set(o, "bias", json_boolean(c->bias));
	ju_set(o, "tied", json_boolean(c->tied));
	/* the lab's switches, written only when off, so that ordinary models'
	 * configs stay as they were */
	if (!c->residual)
		ju_set(o, "residual", json_false());
	if (!c->scale)
		ju_set(o, "scale", json_false());
	if (c->mask != MASK_CAUSAL)
		ju_set(o, "mask", json_string(mask_kind_name(c->mask)));
	/* GPT-NeoX's blocks, likewise written only when they differ */
	if (c->parallel)
		ju_set(o, "parallel", json_true());
	/* head_dim apart from d_model / n_head (Qwen3, Gemma): only when set */
	if (c->head_dim)
		ju_set(o, "head_dim", json_integer(c->head_dim));
	if (c->pos == POS_ROPE && cfg_rotary_dims(c) != cfg_d_head(c))
		ju_set(o, "rotary_dims", json_integer(c->rotary_dims));
	/* BERT's embedding norm and masked-LM head, likewise */
	if (c->emb_norm)
		ju_set(o, "emb_norm", json_true());
	if (c->head != HEAD_LM)
		ju_set(o, "head", json_string(head_type_name(c->head)));
	/* Qwen3's q/k norm, likewise */
	if (c->qk_norm)
		ju_set(o, "qk_norm", json_true());
	if (c->qk_norm_whole) /* OLMo-2's */
		ju_set(o, "qk_norm_whole", json_true());
	if (c->post_only)
		ju_set(o, "post_only", json_true());
	/* Gemma 2's switches, likewise */
	if (c->emb_scale > 0.0f)
		set_float(o, "emb_scale", c->emb_scale);
	if (c->sandwich)
		ju_set(o, "sandwich", json_true());
	if (c->attn_softcap > 0.0f)
		set_float(o, "attn_softcap", c->attn_softcap);
	if (c->final_softcap > 0.0f)
		set_float(o, "final_softcap", c->final_softcap);
	if (c->attn_scale_dim)
		ju_set(o, "attn_scale_dim", json_integer(c->attn_scale_dim));
	if (c->rope_local_theta > 0.0f) /* Gemma 3 */
		set_float(o, "rope_local_theta", c->rope_local_theta);
	/* RoPE scaling (Llama 3.x, Phi-3's LongRoPE), likewise */
	if (c->rope_scaling != ROPE_SCALE_NONE)
		ju_set(o, "rope_scaling", json_string(rope_scaling_name(c->rope_scaling)));
	if (c->rope_scaling == ROPE_SCALE_LINEAR || c->rope_scaling == ROPE_SCALE_LLAMA3)
		set_float(o, "rope_factor", c->rope_factor);
	if (c->rope_scaling == ROPE_SCALE_LLAMA3) {
		set_float(o, "rope_low_freq", c->rope_low_freq);
		set_float(o, "rope_high_freq", c->rope_high_freq);
	}
	if (c->rope_scaling == ROPE_SCALE_LLAMA3 || c->rope_scaling == ROPE_SCALE_LONGROPE)
		ju_set(o, "rope_orig_context", json_integer(c->rope_orig_context));
	if (c->rope_scaling == ROPE_SCALE_LONGROPE)
		longrope_to_json(o, c);
	if (c->rope_scaling == ROPE_SCALE_FACTORS) {
		json_t *t = json_array();
		for (int i = 0; i < cfg_rotary_dims(c) / 2 && i < CFG_MAX_ROPE_PAIRS; i++)
			ju_append(t, json_real(float_shortest(c->rope_long[i])));
		ju_set(o, "rope_factors", t);
	}
	/* GPT-Neo's local layers, likewise: the window and the layers' indices */
	if (c->local_window > 0) {
		json_t *a = json_array();
		for (int l = 0; l < c->n_layer; l++)
			if (cfg_layer_local(c, l))
				json_array_append_new(a, json_integer(l));
		ju_set(o, "local_window", json_integer(c->local_window));
		ju_set(o, "local_layers", a);
	}
	return o;
}

/* Compact, sorted keys, floats with 9 significant digits (enough for any
 * float, and exact for the shortest forms built above). */
char *checkpoint_config_json(const struct model_config *c)
{
	json_t *o = config_to_json(c);
	char *s = ju_dump(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(9));
	json_decref(o);
	return s;
}

/* The config's keys, required but for the lab's switches, GPT-NeoX's and BERT's; messages
 * "config: ..." (json-util.h). */
#define CFG_INT(o, key, out, e) ju_get_int(o, key, "config", JU_REQUIRED, INT_MIN, INT_MAX, out, e)
#define CFG_FLOAT(o, key, out, e) ju_get_float(o, key, "config", JU_REQUIRED, out, e)
#define CFG_BOOL(o, key, out, e) ju_get_bool(o, key, "config", JU_REQUIRED, out, e)

/* Each enum field: fetch the string, then its parser; on an unknown name
 * the message quotes it (truncated, it comes from the file). */
#define CFG_ENUM(obj, key, parse, out, e) do {					\
	const char *s_;								\
	if (ju_get_str(obj, key, "config", JU_REQUIRED, &s_, e))		\
		return -1;							\
	if (parse(s_, out) != 0)						\
		return err_set(e, "config: \"%s\" has unknown value \"%.40s\"", key, s_); \
} while (0)

/* The optional RoPE scaling keys: absent means none (factor 1); a scaled
 * config needs the keys of its kind.  LongRoPE's tables go to c and their
 * lengths to pairs[2], which checkpoint_config_parse holds to R/2 once the
 * shape is valid. */
static int rope_scaling_from_json(json_t *o, struct model_config *c, int pairs[2],
				  struct err *e)
{
	c->rope_scaling = ROPE_SCALE_NONE;
	c->rope_factor = c->rope_attn_factor = 1.0f;
	c->rope_low_freq = c->rope_high_freq = 0.0f;
	c->rope_orig_context = 0;
	if (!json_object_get(o, "rope_scaling"))
		return 0;
	CFG_ENUM(o, "rope_scaling", rope_scaling_parse, &c->rope_scaling, e);
	if ((c->rope_scaling == ROPE_SCALE_LINEAR || c->rope_scaling == ROPE_SCALE_LLAMA3) &&
	    CFG_FLOAT(o, "rope_factor", &c->rope_factor, e))
		return -1;
	if (c->rope_scaling == ROPE_SCALE_LLAMA3 &&
	    (CFG_FLOAT(o, "rope_low_freq", &c->rope_low_freq, e) ||
	     CFG_FLOAT(o, "rope_high_freq", &c->rope_high_freq, e) ||
	     CFG_INT(o, "rope_orig_context", &c->rope_orig_context, e)))
		return -1;
	if (c->rope_scaling == ROPE_SCALE_LONGROPE &&
	    (CFG_INT(o, "rope_orig_context", &c->rope_orig_context, e) ||
	     CFG_FLOAT(o, "rope_attn_factor", &c->rope_attn_factor, e) ||
	     ju_get_floats(o, "rope_short", "config", JU_REQUIRED, c->rope_short,
			   CFG_MAX_ROPE_PAIRS, &pairs[0], e) ||
	     ju_get_floats(o, "rope_long", "config", JU_REQUIRED, c->rope_long,
			   CFG_MAX_ROPE_PAIRS, &pairs[1], e)))
		return -1;
	if (c->rope_scaling == ROPE_SCALE_FACTORS) {
		if (ju_get_floats(o, "rope_factors", "config", JU_REQUIRED, c->rope_long,
				  CFG_MAX_ROPE_PAIRS, &pairs[1], e))
			return -1;
		memcpy(c->rope_short, c->rope_long, sizeof c->rope_short);
		pairs[0] = pairs[1];
	}
	return 0;
}

/* local_window and local_layers (an array of layer indices), both or
 * neither; absent (older checkpoints) means no local layers.  Whether the
 * indices exist is config_validate's. */
static int local_from_json(json_t *o, struct model_config *c, struct err *e)
{
	json_t *a = json_object_get(o, "local_layers");
	c->local_window = 0;
	memset(c->local, 0, sizeof c->local);
	if (ju_get_int(o, "local_window", "config", 0, 0, CFG_MAX_CONTEXT, &c->local_window, e) < 0)
		return -1;
	if (!a && c->local_window == 0)
		return 0;
	if (!json_is_array(a))
		return err_set(e, "config: local_window needs \"local_layers\", an array of layers");
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) {
		json_int_t l = json_is_integer(v) ? json_integer_value(v) : -1;
		if (l < 0 || l >= CFG_MAX_LAYERS)
			return err_set(e, "config: local_layers[%zu] is not a layer 0..%d", i,
				       CFG_MAX_LAYERS - 1);
		cfg_set_local(c, (int)l, true);
	}
	return 0;
}

static int config_from_json(json_t *o, struct model_config *c, int pairs[2], struct err *e)
{
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v) {
		size_t k;
		for (k = 0; k < sizeof cfg_keys / sizeof cfg_keys[0]; k++)
			if (strcmp(key, cfg_keys[k]) == 0)
				break;
		if (k == sizeof cfg_keys / sizeof cfg_keys[0])
			return err_set(e, "config: unknown key \"%.40s\"", key);
	}
	if (CFG_INT(o, "vocab_size", &c->vocab_size, e) ||
	    CFG_INT(o, "d_model", &c->d_model, e) ||
	    CFG_INT(o, "n_layer", &c->n_layer, e) ||
	    CFG_INT(o, "n_head", &c->n_head, e) ||
	    CFG_INT(o, "n_kv_head", &c->n_kv_head, e) ||
	    CFG_INT(o, "d_ff", &c->d_ff, e) ||
	    CFG_INT(o, "context", &c->context, e))
		return -1;
	CFG_ENUM(o, "norm", norm_type_parse, &c->norm, e);
	if (CFG_FLOAT(o, "norm_eps", &c->norm_eps, e))
		return -1;
	CFG_ENUM(o, "placement", norm_place_parse, &c->placement, e);
	CFG_ENUM(o, "pos", pos_type_parse, &c->pos, e);
	if (CFG_FLOAT(o, "rope_theta", &c->rope_theta, e))
		return -1;
	CFG_ENUM(o, "mlp", mlp_type_parse, &c->mlp, e);
	if (CFG_BOOL(o, "bias", &c->bias, e) || CFG_BOOL(o, "tied", &c->tied, e))
		return -1;
	/* optional: absent means an ordinary model */
	c->residual = c->scale = true;
	c->mask = MASK_CAUSAL;
	if (ju_get_bool(o, "residual", "config", 0, &c->residual, e) < 0 ||
	    ju_get_bool(o, "scale", "config", 0, &c->scale, e) < 0)
		return -1;
	if (json_object_get(o, "mask"))
		CFG_ENUM(o, "mask", mask_kind_parse, &c->mask, e);
	c->parallel = false;
	c->rotary_dims = 0; /* all of d_head */
	c->head_dim = 0;    /* d_model / n_head */
	if (ju_get_bool(o, "parallel", "config", 0, &c->parallel, e) < 0 ||
	    ju_get_int(o, "head_dim", "config", 0, 0, CFG_MAX_HEAD_DIM, &c->head_dim, e) < 0 ||
	    ju_get_int(o, "rotary_dims", "config", 0, INT_MIN, INT_MAX, &c->rotary_dims, e) < 0)
		return -1;
	c->emb_norm = false;
	c->head = HEAD_LM;
	c->qk_norm = c->sandwich = c->qk_norm_whole = c->post_only = false;
	c->emb_scale = c->attn_softcap = c->final_softcap = 0.0f;
	c->attn_scale_dim = 0;
	c->rope_local_theta = 0.0f;
	if (ju_get_float(o, "rope_local_theta", "config", 0, &c->rope_local_theta, e) < 0)
		return -1;
	if (ju_get_bool(o, "emb_norm", "config", 0, &c->emb_norm, e) < 0 ||
	    ju_get_bool(o, "qk_norm", "config", 0, &c->qk_norm, e) < 0 ||
	    ju_get_bool(o, "sandwich", "config", 0, &c->sandwich, e) < 0 ||
	    ju_get_bool(o, "qk_norm_whole", "config", 0, &c->qk_norm_whole, e) < 0 ||
	    ju_get_bool(o, "post_only", "config", 0, &c->post_only, e) < 0 ||
	    ju_get_float(o, "emb_scale", "config", 0, &c->emb_scale, e) < 0 ||
	    ju_get_float(o, "attn_softcap", "config", 0, &c->attn_softcap, e) < 0 ||
	    ju_get_float(o, "final_softcap", "config", 0, &c->final_softcap, e) < 0 ||
	    ju_get_int(o, "attn_scale_dim", "config", 0, 0, CFG_MAX_DMODEL, &c->attn_scale_dim, e) < 0)
		return -1;
	if (json_object_get(o, "head"))
		CFG_ENUM(o, "head", head_type_parse, &c->head, e);
	if (rope_scaling_from_json(o, c, pairs, e))
		return -1;
	return local_from_json(o, c, e);
}

/* LongRoPE's tables hold R/2 factors each, pairs[2] as read; a shape
 * whose R config_validate would refuse is left to it.  0, or -1 with a
 * message. */
static int longrope_pairs(const struct model_config *c, const int pairs[2], struct err *e)
{
	if ((c->rope_scaling != ROPE_SCALE_LONGROPE && c->rope_scaling != ROPE_SCALE_FACTORS) ||
	    c->n_head < 1)
		return 0;
	int R = cfg_rotary_dims(c);
	for (int t = 0; t < 2; t++)
		if (R >= 2 && R / 2 <= CFG_MAX_ROPE_PAIRS && pairs[t] != R / 2)
			return err_set(e, "config: %s holds %d factors, not the %d of rotary dims %d",
				       c->rope_scaling == ROPE_SCALE_FACTORS ? "rope_factors"
				       : t ? "rope_long" : "rope_short", pairs[t], R / 2, R);
	return 0;
}

/* Parses and validates; *c is only written on success.  Messages start
 * with "config: " (the caller adds where the text came from). */
int checkpoint_config_parse(const char *json, struct model_config *c, struct err *e)
{
	json_error_t jerr;
	json_t *o = json_loads(json, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!o) {
		err_set(e, "config: invalid JSON (line %d, column %d: %s)",
			jerr.line, jerr.column, jerr.text);
		ld_one_line(e);
		return -1;
	}
	struct model_config tmp;
	memset(&tmp, 0, sizeof tmp);
	int rc, pairs[2] = { 0, 0 }; /* LongRoPE's table lengths */
	if (!json_is_object(o))
		rc = err_set(e, "config: not a JSON object");
	else
		rc = config_from_json(o, &tmp, pairs, e);
	json_decref(o);
	if (rc) {
		ld_one_line(e);
		return -1;
	}
	if (longrope_pairs(&tmp, pairs, e) || config_validate(&tmp, e) != 0)
		return -1; /* config_validate's messages start "config: " too */
	*c = tmp;
	return 0;
}

/* Index of the first NaN or Inf in x[0..n), or n when all are finite. */
static size_t first_nonfinite(const float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return i;
	return n;
}

/* ------------------------------------------------------------------ load */

/* A metadata value that must be a string when present; NULL when absent. */
static int meta_str(json_t *meta, const char *key, const char **out, struct err *e)
{
	json_t *v = json_object_get(meta, key);
	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return err_set(e, "metadata \"%s\" is not a string", key);
	*out = json_string_value(v);
	return 0;
}

/* st_checks.meta: the format and version marks, then the config into
 * *ctx (a struct model_config). */
static int check_metadata(void *ctx, json_t *meta, struct err *e)
{
	if (!meta)
		return err_set(e, "not an attnscope checkpoint (format missing: no %s)", META_KEY);
	if (!json_is_object(meta))
		return err_set(e, "not an attnscope checkpoint (format missing: %s is not an object)",
			       META_KEY);
	const char *key;
	json_t *v;
	json_object_foreach(meta, key, v) {
		if (!json_is_string(v))
			return err_set(e, "metadata \"%.40s\" is not a string", key);
	}
	const char *format, *version, *config;
	meta_str(meta, "format", &format, e);
	if (!format)
		return err_set(e, "not an attnscope checkpoint (format missing)");
	if (strcmp(format, CKPT_FORMAT) != 0)
		return err_set(e, "not an attnscope checkpoint (format \"%.40s\")", format);
	meta_str(meta, "version", &version, e);
	if (!version)
		return err_set(e, "not an attnscope checkpoint (version missing)");
	if (strcmp(version, CKPT_VERSION) != 0)
		return err_set(e, "unsupported version %.20s; this build reads version "
			       CKPT_VERSION " \xe2\x80\x94 re-save it with a matching attnscope",
			       version);
	meta_str(meta, "config", &config, e);
	if (!config)
		return err_set(e, "metadata has no \"config\"");
	return checkpoint_config_parse(config, ctx, e);
}

/* st_checks.expect: a tensor of the config in *ctx, and its shape. */
static int expect_tensor(void *ctx, const char *name, uint64_t *shape, int *ndim,
			 struct err *e)
{
	const struct model_config *cfg = ctx;
	size_t want[3];
	int id;
	for (id = 0; id < N_PARAMS; id++)
		if (strcmp(name, param_name((enum param_id)id)) == 0)
			break;
	if (id == N_PARAMS)
		return err_set(e, "unexpected tensor \"%.40s\"", name);
	if (param_shape(cfg, (enum param_id)id, want, ndim) == 0)
		return err_set(e, "unexpected tensor \"%s\" (this config has none)", name);
	for (int d = 0; d < *ndim; d++)
		shape[d] = want[d];
	return 0;
}

/* The optional metadata: a training record that must be JSON, a
 * tokenizer that must fit the vocabulary (into *tok), a name. */
static int read_extras(json_t *meta, const struct model_config *cfg, struct tokenizer **tok,
		       const char **training, const char **name, struct err *e)
{
	const char *tok_json;
	json_error_t jerr;
	meta_str(meta, "tokenizer", &tok_json, e);
	meta_str(meta, "training", training, e);
	meta_str(meta, "name", name, e);
	if (*training) {
		json_t *tj = json_loads(*training, JSON_DECODE_ANY, &jerr);
		if (!tj)
			return err_set(e, "metadata \"training\" is not valid JSON (line %d, column "
				       "%d: %s)", jerr.line, jerr.column, jerr.text);
		json_decref(tj);
	}
	if (tok_json) {
		*tok = tok_from_json(tok_json, e); /* messages start "tokenizer" */
		if (!*tok)
			return -1;
		if ((*tok)->vocab_size > cfg->vocab_size)
			return err_set(e, "tokenizer has %d tokens but the model's vocab_size is %d",
				       (*tok)->vocab_size, cfg->vocab_size);
	}
	return 0;
}

/* The file's base name without ".safetensors" (the whole base name when
 * that would leave nothing). */
static char *name_from_path(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strlen(base), s = strlen(SUFFIX);
	if (n > s && strcmp(base + n - s, SUFFIX) == 0)
		n -= s;
	return xstrndup(base, n);
}

/* Everything but the path prefix of the messages. */
static struct model *load(const char *path, struct err *e)
{
	struct model_config cfg;
	const struct st_checks checks = {
		.meta = check_metadata, .expect = expect_tensor, .expect_by = "the config",
		.ctx = &cfg,
	};
	struct st_file f;
	struct st_tensor *t[N_PARAMS];
	struct model *m = NULL;
	struct tokenizer *tok = NULL;
	const char *training, *name;

	if (st_open(&f, path, &checks, e))
		return NULL;
	/* every tensor of the file is one of the config's: are all there? */
	for (int i = 0; i < N_PARAMS; i++) {
		size_t shape[3];
		int ndim;
		t[i] = NULL;
		if (param_shape(&cfg, (enum param_id)i, shape, &ndim) == 0)
			continue;
		t[i] = st_find(&f, param_name((enum param_id)i));
		if (!t[i]) {
			err_set(e, "missing tensor \"%s\"", param_name((enum param_id)i));
			goto fail;
		}
	}
	if (read_extras(f.meta, &cfg, &tok, &training, &name, e))
		goto fail;

	m = model_new(&cfg, e);
	if (!m)
		goto fail;
	for (int i = 0; i < N_PARAMS; i++) {
		if (!t[i])
			continue;
		if (m->psize[i] != t[i]->n || !m->p[i])
			die("checkpoint: model_new sized tensor %s unlike param_shape",
			    param_name((enum param_id)i));
		if (st_read(&f, t[i], m->p[i], e))
			goto fail;
	}
	m->tok = tok;
	m->path = xstrdup(path);
	m->name = name && *name ? xstrdup(name) : name_from_path(path);
	m->train_meta = training ? xstrdup(training) : NULL;
	st_close(&f);
	return m;

fail:
	/* the tokenizer is only attached to m on success */
	tok_free(tok);
	model_free(m);
	st_close(&f);
	return NULL;
}

struct model *checkpoint_load(const char *path, struct err *e)
{
	struct model *m = load(path, e);
	if (!m) {
		err_prefix(e, "%s", path);
		ld_one_line(e);
	}
	return m;
}

int checkpoint_describe(const char *path, struct model_config *c, struct err *e)
{
	const struct st_checks checks = { .meta = check_metadata, .other_dtypes = true, .ctx = c };
	struct st_file f;
	if (st_open(&f, path, &checks, e)) {
		err_prefix(e, "%s", path);
		return -1;
	}
	st_close(&f);
	return 0;
}

/* ------------------------------------------------------------------ save */

static int write_all(int fd, const void *buf, size_t n, struct err *e)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return err_set(e, "write failed: %s", strerror(errno));
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Sets a string metadata value; jansson refuses invalid UTF-8. */
static int meta_set(json_t *meta, const char *key, const char *value, struct err *e)
{
	json_t *s = json_string(value);
	if (!s)
		return err_set(e, "metadata \"%s\" is not valid UTF-8", key);
	ju_set(meta, key, s);
	return 0;
}

/* Checks that every tensor can be stored: finite, and within F16 range
 * when writing F16. */
static int check_saveable(const struct model *m, enum ckpt_dtype dtype, struct err *e)
{
	for (int i = 0; i < N_PARAMS; i++) {
		size_t shape[3];
		int ndim;
		size_t n = param_shape(&m->cfg, (enum param_id)i, shape, &ndim);
		if (n == 0)
			continue;
		if (!m->p[i] || m->psize[i] != n)
			die("checkpoint_save: tensor %s does not match the config",
			    param_name((enum param_id)i));
		const float *x = m->p[i];
		size_t bad = first_nonfinite(x, n);
		if (bad < n)
			return err_set(e, "tensor %s has a non-finite value at element %zu",
				       param_name((enum param_id)i), bad);
		if (dtype != CKPT_F16)
			continue;
		for (size_t j = 0; j < n; j++)
			if ((f32_to_f16(x[j]) & 0x7c00) == 0x7c00)
				return err_set(e, "tensor %s element %zu (%g) is out of F16 range; "
					       "save as F32", param_name((enum param_id)i), j,
					       (double)x[j]);
	}
	return 0;
}

/* The header JSON, padded with spaces to a multiple of 8 bytes. */
static char *build_header(const struct model *m, enum ckpt_dtype dtype, size_t *len,
			  struct err *e)
{
	json_t *root = ju_check(json_object()), *meta = ju_check(json_object());
	ju_set(root, META_KEY, meta);

	char *cj = checkpoint_config_json(&m->cfg);
	char *tj = m->tok ? m->tok->ops->to_json(m->tok) : NULL;
	int rc = meta_set(meta, "format", CKPT_FORMAT, e);
	rc = rc ? rc : meta_set(meta, "version", CKPT_VERSION, e);
	rc = rc ? rc : meta_set(meta, "config", cj, e);
	if (!rc && tj)
		rc = meta_set(meta, "tokenizer", tj, e);
	if (!rc && m->train_meta)
		rc = meta_set(meta, "training", m->train_meta, e);
	if (!rc && m->name)
		rc = meta_set(meta, "name", m->name, e);
	free(cj);
	free(tj);
	if (rc) {
		json_decref(root);
		return NULL;
	}

	size_t esize = dtype == CKPT_F16 ? 2 : 4;
	uint64_t off = 0;
	for (int i = 0; i < N_PARAMS; i++) {
		size_t shape[3];
		int ndim;
		size_t n = param_shape(&m->cfg, (enum param_id)i, shape, &ndim);
		if (n == 0)
			continue;
		json_t *t = ju_check(json_object()), *sh = ju_check(json_array());
		json_t *offs = ju_check(json_array());
		for (int d = 0; d < ndim; d++)
			ju_append(sh, json_integer((json_int_t)shape[d]));
		ju_append(offs, json_integer((json_int_t)off));
		ju_append(offs, json_integer((json_int_t)(off + n * esize)));
		ju_set(t, "dtype", json_string(dtype == CKPT_F16 ? "F16" : "F32"));
		ju_set(t, "shape", sh);
		ju_set(t, "data_offsets", offs);
		ju_set(root, param_name((enum param_id)i), t);
		off += n * esize;
	}

	char *s = ju_dump(root, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(root);
	size_t n = strlen(s), padded = (n + 7) & ~(size_t)7;
	s = xrealloc(s, padded + 1);
	memset(s + n, ' ', padded - n);
	s[padded] = '\0';
	*len = padded;
	return s;
}

/* Writes the length word, the header and the tensors in param order. */
static int write_checkpoint(int fd, const struct model *m, enum ckpt_dtype dtype,
			    const char *hdr, size_t hlen, struct err *e)
{
	unsigned char w[8];
	for (int i = 0; i < 8; i++)
		w[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
	if (write_all(fd, w, 8, e) || write_all(fd, hdr, hlen, e))
		return -1;
	for (int i = 0; i < N_PARAMS; i++) {
		size_t shape[3];
		int ndim;
		size_t n = param_shape(&m->cfg, (enum param_id)i, shape, &ndim);
		const float *x = m->p[i];
		if (n == 0)
			continue;
		if (dtype == CKPT_F32) {
			if (write_all(fd, x, n * sizeof(float), e))
				return -1;
			continue;
		}
		uint16_t buf[CHUNK];
		for (size_t j = 0; j < n; j += CHUNK) {
			size_t k = n - j < CHUNK ? n - j : CHUNK;
			for (size_t q = 0; q < k; q++)
				buf[q] = f32_to_f16(x[j + q]);
			if (write_all(fd, buf, k * 2, e))
				return -1;
		}
	}
	return 0;
}

int checkpoint_save(const struct model *m, const char *path, enum ckpt_dtype dtype,
		    struct err *e)
{
	if (dtype != CKPT_F32 && dtype != CKPT_F16)
		return err_set(e, "%s: unknown checkpoint dtype %d", path, (int)dtype);
	if (check_saveable(m, dtype, e))
		return err_prefix(e, "%s", path);
	size_t hlen;
	char *hdr = build_header(m, dtype, &hlen, e);
	if (!hdr)
		return err_prefix(e, "%s", path);

	/* out_open and out_commit name the path in their messages */
	struct out_file o;
	int rc = out_open(&o, path, e);
	if (rc == 0 && write_checkpoint(o.fd, m, dtype, hdr, hlen, e)) {
		err_prefix(e, "%s", path);
		out_abort(&o);
		rc = -1;
	}
	if (rc == 0)
		rc = out_commit(&o, e);
	free(hdr);
	return rc;
}
