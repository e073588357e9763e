/*
 * loader-gguf.c — GGUF files ("gguf": llama.cpp's format, which Ollama and
 * LM Studio use), versions 2 and 3, found by their "GGUF" magic; the
 * container is gguf.c's, the tokenizer gguf-vocab.c's.
 *
 * general.architecture picks a row of the table below; its keys are
 * ARCH.block_count (L), embedding_length (C), feed_forward_length (F),
 * attention.head_count (H), attention.head_count_kv (K; H when absent),
 * context_length (S; above the engine's 65536 for a RoPE model it is cut
 * to 65536, exact within), and, by family:
 *   llama, mistral  RMSNorm (attention.layer_norm_rms_epsilon), pre-norm,
 *                   Llama 3.1 / 3.2's scaled RoPE as rope_freqs (one
 *                   divisor per pair, config FACTORS),
 *                   RoPE (rope.freq_base, 10000; rope.dimension_count, D),
 *                   SwiGLU; the converter stores Q and K rows in the
 *                   interleaved order the engine turns (pairs (2i, 2i + 1)),
 *                   so they are read as they are
 *   qwen2           as llama, with Q/K/V biases; its Q and K rows are HF's
 *                   rotate-half order and are permuted (neox_rope_row)
 *   qwen3           as qwen2 (rotate-half rows, permuted), Q/K/V biases
 *                   optional (Qwen3 has none), and the q/k norm (config
 *                   qk_norm): attn_q_norm and attn_k_norm, one head's D
 *                   scales each, in rotate-half order and permuted as one
 *                   head's rows; heads D = attention.key_length wide
 *                   (Qwen3-0.6B: 128 over embedding_length 1024, 16 heads)
 *   gpt2            LayerNorm (attention.layer_norm_epsilon) with biases,
 *                   learned positions (position_embd), GELU tanh, the fused
 *                   attn_qkv [q; k; v]
 *   gptneox         LayerNorm with biases, parallel blocks unless
 *                   use_parallel_residual is false, RoPE over the first
 *                   rope.dimension_count dims of each head, exact GELU (as
 *                   Pythia), attn_qkv [q; k; v] with q and k in rotate-half
 *                   order (permuted)
 *   bert            post-norm LayerNorm blocks with biases, learned
 *                   positions, exact GELU, no mask (attention.causal false),
 *                   the embedding norm (token_embd_norm), token type 0
 *                   folded into the positions as hf-bert does; no head (the
 *                   converter keeps none: a BertModel, config head none)
 *   gemma2, gemma3  (text; the vision tower is a separate mmproj file) as
 *                   loader-hf-gemma.c runs them: RMSNorm whose scales are
 *                   stored with Gemma's 1 already added (the converter adds
 *                   it to every *norm.weight), so read as they are; the
 *                   sandwich norms (attn_norm, post_attention_norm around
 *                   attention, ffn_norm and post_ffw_norm around the MLP),
 *                   GeGLU, embeddings times sqrt(C), tied; rotate-half Q/K
 *                   rows, permuted; heads attention.key_length wide; scores
 *                   at 1/sqrt(D), or 1/sqrt(C / H) for the 27B models (46
 *                   layers, Gemma 2; 62, Gemma 3), as llama.cpp derives
 *                   query_pre_attn_scalar, which no key holds; layer l
 *                   sliding over attention.sliding_window keys when
 *                   l % P < P - 1, P fixed at 2 (Gemma 2, window 4096 when
 *                   absent) or 6 (Gemma 3, none when absent), unless the
 *                   window covers the context.  Gemma 2: attn_logit_ and
 *                   final_logit_softcapping (50 and 30 when absent), RoPE
 *                   base 10000 unless rope.freq_base.  Gemma 3: no score
 *                   cap, final_logit_softcapping when the key is there, the
 *                   q/k norm (one head's D, permuted as qwen3's), the
 *                   global layers on rope.freq_base with rope.scaling.type
 *                   linear (rope.scaling.factor) when given, the sliding
 *                   ones on rope.freq_base_swa (10000, llama.cpp's)
 *                   unscaled (config rope_local_theta)
 *   olmo2           RMSNorm after each sub-block only (post_attention_norm,
 *                   post_ffw_norm; config post_only), SwiGLU, untied;
 *                   attn_q_norm over all H * D query rows and attn_k_norm
 *                   over the K * D key rows (qk_norm_whole), permuted as
 *                   the rotate-half Q/K rows are
 *   phi3            (Phi-3-mini 4k / 128k, Phi-3.5-mini, Phi-4-mini) as
 *                   loader-hf-phi3.c runs them: RMSNorm, pre-norm, SwiGLU
 *                   from ffn_up holding [gate; up] (2F rows; no ffn_gate),
 *                   the fused attn_qkv [q; k; v] (or attn_q/k/v), its q and
 *                   k rows rotate-half and permuted, RoPE over
 *                   rope.dimension_count dims of each head (Phi-4-mini's
 *                   partial rotary), untied unless output is absent or
 *                   token_embd's bytes (Phi-4-mini); attention.sliding_window
 *                   (0: none), when below the context, on every layer as
 *                   transformers masks (llama.cpp reads the key but runs
 *                   Phi-3 without a window today); LongRoPE (Phi-3-mini-128k,
 *                   Phi-3.5-mini, Phi-4-mini) from the tensors
 *                   rope_factors_long and rope_factors_short (one divisor a
 *                   turned pair) with rope.scaling.attn_factor and
 *                   rope.scaling.original_context_length, into config
 *                   LONGROPE: the engine picks the table per pass as
 *                   transformers does (long for a pass over more than the
 *                   original context), llama.cpp once by the context window
 *                   it is started with, so a long window and a short text
 *                   differ between the two
 * Tensors: token_embd, position_embd, token_types, token_embd_norm,
 * output_norm, output (absent, or the same bytes as token_embd: tied),
 * rope_factors_long, rope_factors_short (phi3),
 * blk.N.{attn_norm, attn_q, attn_k, attn_v or the fused attn_qkv,
 * attn_q_norm, attn_k_norm, attn_output, post_attention_norm,
 * attn_output_norm, ffn_norm, ffn_gate, ffn_up, ffn_down, post_ffw_norm,
 * layer_output_norm}, ".weight" and, where the family has them, ".bias"
 * (llama's and qwen3's optional Q/K/V/output biases make the config's
 * bias true).  Every tensor must be one of these; BERT's classifier
 * (cls.*) and a Qwen3-Reranker's cls.output are ignored.  Refused by
 * name: other architectures (qwen3moe among them), RoPE scaling
 * (rope.scaling.type other than Gemma 3's linear and Phi-3's longrope,
 * rope_freqs but in llama, rope_factors_long / _short but in phi3; a
 * LongRoPE table missing, of another length than the turned pairs, or
 * with a factor not above 0), experts, a key_length other than
 * value_length, a BERT key_length other than embedding_length /
 * head_count, a causal BERT, OLMo 3's sliding window
 * (olmo2.attention.sliding_window).
 * The matrices (token_embd, attn_*, ffn_*, output) of a decoder file in
 * another type than F32 are held as stored (model_new_held: held.h), their
 * rotate-half rows moved whole; BERT's, and every vector, are dequantized
 * to F32.
 *
 * The tokenizer comes from the metadata (gguf-vocab.c); --tokenizer gives
 * another: a tokenizer.bin (llama2.c), or a tokenizer.json, vocab.json +
 * merges.txt or vocab.txt and their directory, as the HF loaders read them.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "gguf.h"
#include "loaders.h"
#include "tok-wordpiece.h"
#include "utf8.h"

enum family {
	FAM_LLAMA, FAM_QWEN2, FAM_QWEN3, FAM_GPT2, FAM_NEOX, FAM_BERT, FAM_GEMMA2, FAM_GEMMA3,
	FAM_OLMO2, FAM_PHI3,
};

static const struct arch {
	const char *name; /* general.architecture */
	enum family fam;
} archs[] = {
	{ "llama", FAM_LLAMA }, { "mistral", FAM_LLAMA }, { "qwen2", FAM_QWEN2 },
	{ "qwen3", FAM_QWEN3 }, { "gpt2", FAM_GPT2 },	  { "gptneox", FAM_NEOX },
	{ "bert", FAM_BERT },
	{ "gemma2", FAM_GEMMA2 },
	{ "gemma3", FAM_GEMMA3 },
	{ "olmo2", FAM_OLMO2 },
	{ "phi3", FAM_PHI3 },
};
#define N_ARCHS (sizeof archs / sizeof archs[0])

/* What the metadata says beyond the config. */
struct info {
	const struct arch *a;
	bool fused;	/* attn_qkv rather than attn_q/k/v */
	bool rotate;	/* Q/K rows in rotate-half order: permute */
};

/* -------------------------------------------------------------- metadata */

/* ARCH.key as an int in [lo, hi] into *out; 1 when absent (an error when
 * required). */
static int akey_int(const struct gguf_file *f, const struct arch *a, const char *key,
		    bool required, int64_t lo, int64_t hi, int *out, struct err *e)
{
	char k[128];
	int64_t v;
	snprintf(k, sizeof k, "%s.%s", a->name, key);
	int rc = gguf_get_int(f, k, lo, hi, &v, e);
	if (rc == 0)
		*out = (int)v;
	if (rc > 0 && required)
		return err_set(e, "missing key %s", k);
	return rc;
}

static int akey_float(const struct gguf_file *f, const struct arch *a, const char *key,
		      bool required, float *out, struct err *e)
{
	char k[128];
	double v;
	snprintf(k, sizeof k, "%s.%s", a->name, key);
	int rc = gguf_get_float(f, k, &v, e);
	if (rc == 0 && !(v >= 0 && v <= 1e30))
		return err_set(e, "%s is %g, outside 0..1e30", k, v);
	if (rc == 0)
		*out = (float)v;
	if (rc > 0 && required)
		return err_set(e, "missing key %s", k);
	return rc;
}

/* The architecture named by general.architecture, or NULL + e. */
static const struct arch *arch_of(const struct gguf_file *f, struct err *e)
{
	char *name = NULL;
	int rc = gguf_get_str(f, "general.architecture", 64, &name, e);
	if (rc) {
		if (rc > 0)
			err_set(e, "missing key general.architecture");
		return NULL;
	}
	for (size_t i = 0; i < N_ARCHS; i++)
		if (!strcmp(name, archs[i].name)) {
			free(name);
			return &archs[i];
		}
	char shown[160], known[256] = "";
	utf8_printable(name, strlen(name), shown, sizeof shown);
	for (size_t i = 0, n = 0; i < N_ARCHS; i++, n = strlen(known))
		snprintf(known + n, sizeof known - n, "%s%s", !i ? "" : i + 1 < N_ARCHS ? ", " : " and ",
			 archs[i].name);
	err_set(e, "general.architecture \"%s\" is not supported (%s are)", shown, known);
	free(name);
	return NULL;
}

/* rope.scaling.type: none or absent; for Gemma 3 also linear, with
 * rope.scaling.factor (its global layers': the converter writes HF's
 * rope_scaling, and llama.cpp turns Gemma 3's sliding layers unscaled, as
 * rope_local_theta does); for Phi-3 also longrope (phi3_longrope(): the
 * converter writes no type, its tensors say it).  Other kinds are refused
 * by name. */
static int rope_scaling(const struct gguf_file *f, const struct arch *a, struct model_config *c,
			struct err *e)
{
	char k[128], *s = NULL;
	snprintf(k, sizeof k, "%s.rope.scaling.type", a->name);
	if (gguf_get_str(f, k, 64, &s, e) < 0)
		return -1;
	if (s && a->fam == FAM_GEMMA3 && !strcmp(s, "linear")) {
		free(s);
		c->rope_scaling = ROPE_SCALE_LINEAR;
		if (akey_float(f, a, "rope.scaling.factor", true, &c->rope_factor, e))
			return -1;
		if (!(c->rope_factor >= 1.0f && c->rope_factor <= 1e6f))
			return err_set(e, "%s.rope.scaling.factor %g is outside 1..1e6", a->name,
				       (double)c->rope_factor);
		return 0;
	}
	if (s && a->fam == FAM_PHI3 && !strcmp(s, "longrope")) {
		free(s); /* phi3_longrope() reads the tables and says what is missing */
		return 0;
	}
	if (s && strcmp(s, "none")) {
		char shown[160];
		utf8_printable(s, strlen(s), shown, sizeof shown);
		err_set(e, "%s \"%s\" is not supported (RoPE scaling)", k, shown);
		free(s);
		return -1;
	}
	free(s);
	return 0;
}

/* What the engine cannot run, refused by name. */
static int refuse(const struct gguf_file *f, const struct arch *a, struct err *e)
{
	int n = 0;
	if (a->fam != FAM_LLAMA && gguf_find_tensor(f, "rope_freqs.weight"))
		return err_set(e, "tensor rope_freqs.weight (scaled RoPE frequencies) is supported "
			       "for llama only, not %s", a->name);
	static const char *const lr[2] = { "rope_factors_long.weight", "rope_factors_short.weight" };
	for (int i = 0; i < 2; i++)
		if (a->fam != FAM_PHI3 && gguf_find_tensor(f, lr[i]))
			return err_set(e, "tensor %s (LongRoPE) is supported for phi3 only, not %s", lr[i],
				       a->name);
	if (akey_int(f, a, "expert_count", false, 0, 1 << 20, &n, e) < 0)
		return -1;
	if (n > 0)
		return err_set(e, "%s.expert_count %d: mixtures of experts are not supported", a->name, n);
	return 0;
}

/* attention.key_length and value_length, each head's width (Qwen3,
 * Gemma: apart from embedding_length / head_count): one width for both,
 * c->head_dim when it is not embedding_length / head_count. */
static int head_width(const struct gguf_file *f, const struct arch *a, struct model_config *c,
		      struct err *e)
{
	int kl = 0, vl = 0;
	if (akey_int(f, a, "attention.key_length", false, 1, CFG_MAX_HEAD_DIM, &kl, e) < 0 ||
	    akey_int(f, a, "attention.value_length", false, 1, CFG_MAX_HEAD_DIM, &vl, e) < 0)
		return -1;
	if (kl && vl && kl != vl)
		return err_set(e, "%s.attention.key_length %d differs from attention.value_length %d: "
			       "keys and values of another width are not supported", a->name, kl, vl);
	int hd = kl ? kl : vl;
	if (hd && (int64_t)hd * c->n_head != c->d_model) {
		if (a->fam == FAM_BERT)
			return err_set(e, "%s.attention.key_length %d is not embedding_length / "
				       "head_count (%d): BERT's needs that", a->name, hd,
				       c->d_model / c->n_head);
		c->head_dim = hd;
		return 0;
	}
	if (c->d_model % c->n_head)
		return err_set(e, "%s.embedding_length %d is not divisible by attention.head_count %d",
			       a->name, c->d_model, c->n_head);
	return 0;
}

/* The shape every family spells the same way, and the vocabulary size from
 * token_embd. */
static int shape(const struct gguf_file *f, const struct arch *a, struct model_config *c,
		 struct err *e)
{
	config_default(c);
	if (akey_int(f, a, "block_count", true, 1, CFG_MAX_LAYERS, &c->n_layer, e) ||
	    akey_int(f, a, "embedding_length", true, 1, 1 << 30, &c->d_model, e) ||
	    akey_int(f, a, "feed_forward_length", true, 1, 1 << 30, &c->d_ff, e) ||
	    akey_int(f, a, "attention.head_count", true, 1, 1 << 30, &c->n_head, e) ||
	    akey_int(f, a, "context_length", true, 1, 1 << 30, &c->context, e))
		return -1;
	c->n_kv_head = c->n_head;
	if (akey_int(f, a, "attention.head_count_kv", false, 1, 1 << 30, &c->n_kv_head, e) < 0)
		return -1;
	const struct gguf_tensor *t = gguf_find_tensor(f, "token_embd.weight");
	if (!t)
		return err_set(e, "missing tensor token_embd.weight");
	if (t->ndim != 2 || t->ne[0] != (uint64_t)c->d_model || t->ne[1] > CFG_MAX_VOCAB ||
	    t->ne[1] < 1)
		return err_set(e, "tensor token_embd.weight has shape [%" PRIu64 ", %" PRIu64 "], not "
			       "[embedding_length %d, the vocabulary]", t->ne[0], t->ne[1], c->d_model);
	c->vocab_size = (int)t->ne[1];
	int v = c->vocab_size;
	if (akey_int(f, a, "vocab_size", false, 1, 1 << 30, &v, e) < 0)
		return -1;
	if (v != c->vocab_size)
		return err_set(e, "%s.vocab_size %d, but token_embd.weight has %d rows", a->name, v,
			       c->vocab_size);
	return head_width(f, a, c, e);
}

/* Whether the output tensor is a copy of token_embd (bytes compared). */
static bool same_as_embd(const struct gguf_file *f, const struct gguf_tensor *out)
{
	const struct gguf_tensor *emb = gguf_find_tensor(f, "token_embd.weight");
	if (!emb || out->type != emb->type || out->bytes != emb->bytes || out->ndim != emb->ndim ||
	    memcmp(out->ne, emb->ne, sizeof out->ne))
		return false;
	enum { K = 1 << 16 };
	unsigned char *a = xmalloc(K), *b = xmalloc(K);
	bool same = true;
	for (uint64_t o = 0; same && o < out->bytes; o += K) {
		size_t n = out->bytes - o < K ? (size_t)(out->bytes - o) : K;
		same = pread(f->fd, a, n, (off_t)(out->off + o)) == (ssize_t)n &&
		       pread(f->fd, b, n, (off_t)(emb->off + o)) == (ssize_t)n && !memcmp(a, b, n);
	}
	free(a);
	free(b);
	return same;
}

/* Gemma 2 and Gemma 3 (text), as llama.cpp reads them: the norms' scales
 * as stored (the converter has added Gemma's 1 to every *norm.weight), the
 * sandwich norms, GeGLU, embeddings times sqrt(C); the scores scaled by
 * 1/sqrt(D), or by 1/sqrt(C / H) for the 27B models, which llama.cpp tells
 * by their layer count (Gemma 2: 46, Gemma 3: 62; HF's
 * query_pre_attn_scalar, which GGUF does not hold); Gemma 2's caps
 * attn_logit_softcapping and final_logit_softcapping (50 and 30 when
 * absent), Gemma 3's final_logit_softcapping (none when absent);
 * attention.sliding_window (Gemma 2: 4096 when absent; Gemma 3: none) on
 * layer l when l % P < P - 1, P 2 (Gemma 2) or 6 (Gemma 3), fixed in
 * llama.cpp, unless the window covers the context (as loader-hf-gemma.c);
 * Gemma 3's q/k norm and its sliding layers on RoPE base
 * rope.freq_base_swa (10000, llama.cpp's), unscaled. */
static int gemma_config(const struct gguf_file *f, const struct arch *a, struct model_config *c,
			struct err *e)
{
	bool g3 = a->fam == FAM_GEMMA3;
	int D = cfg_d_head(c), window = g3 ? 0 : 4096, pattern = g3 ? 6 : 2;
	float local_theta = 10000.0f;
	c->attn_softcap = g3 ? 0.0f : 50.0f;
	c->final_softcap = g3 ? 0.0f : 30.0f;
	if (akey_int(f, a, "attention.sliding_window", false, 0, 1 << 30, &window, e) < 0 ||
	    (!g3 && akey_float(f, a, "attn_logit_softcapping", false, &c->attn_softcap, e) < 0) ||
	    akey_float(f, a, "final_logit_softcapping", false, &c->final_softcap, e) < 0 ||
	    (g3 && akey_float(f, a, "rope.freq_base_swa", false, &local_theta, e) < 0))
		return -1;
	if (window > 0 && window < c->context) {
		c->local_window = window;
		for (int l = 0; l < c->n_layer; l++)
			cfg_set_local(c, l, l % pattern < pattern - 1);
	}
	int scale_dim = c->n_layer == (g3 ? 62 : 46) ? c->d_model / c->n_head : D;
	c->attn_scale_dim = scale_dim == D ? 0 : scale_dim;
	c->mlp = MLP_GEGLU;
	c->sandwich = true;
	c->emb_scale = (float)sqrt((double)c->d_model);
	c->qk_norm = g3;
	if (g3 && c->local_window > 0)
		c->rope_local_theta = local_theta;
	return 0;
}

/* OLMo-2: no norm before the sub-blocks, the sandwich norms after them
 * (post_only), one q norm over all H * D query rows and one k norm over
 * the K * D key rows (qk_norm_whole), SwiGLU.  OLMo 3's sliding layers
 * (attention.sliding_window, in the same architecture) are refused. */
static int olmo2_config(const struct gguf_file *f, const struct arch *a, struct model_config *c,
			struct err *e)
{
	int window = 0;
	if (akey_int(f, a, "attention.sliding_window", false, 0, 1 << 30, &window, e) < 0)
		return -1;
	if (window > 0)
		return err_set(e, "%s.attention.sliding_window %d: OLMo 3's sliding-window layers "
			       "are not supported", a->name, window);
	c->mlp = MLP_SWIGLU;
	c->sandwich = c->post_only = true;
	c->qk_norm = c->qk_norm_whole = true;
	return 0;
}

static int rd(const struct gguf_file *f, const char *name, uint64_t rows, uint64_t cols,
	      float *dst, struct err *e);

/* Phi-3's LongRoPE (Phi-3-mini-128k, Phi-3.5-mini, Phi-4-mini), as the
 * converter writes it: the tensors rope_factors_long.weight and
 * rope_factors_short.weight, R/2 divisors each (one per turned pair), with
 * rope.scaling.attn_factor (the cos / sin scale; 1 when absent) and
 * rope.scaling.original_context_length.  Any one of them, or
 * rope.scaling.type longrope, asks for LongRoPE: a missing table or
 * original context is then refused by name, as is a table of another
 * length or a factor that is not above 0.  The engine's ROPE_SCALE_LONGROPE
 * picks the table per pass as transformers does (the long one for a pass
 * over more than the original context); llama.cpp picks it once, by the
 * context window it was started with. */
static int phi3_longrope(const struct gguf_file *f, const struct arch *a, int R,
			 struct model_config *c, struct err *e)
{
	static const char *const name[2] = { "rope_factors_long.weight", "rope_factors_short.weight" };
	float *table[2] = { c->rope_long, c->rope_short };
	char k[128], *type = NULL;
	float attn = 1.0f;
	int orig = 0;
	snprintf(k, sizeof k, "%s.rope.scaling.type", a->name);
	if (gguf_get_str(f, k, 64, &type, e) < 0)
		return -1;
	bool typed = type != NULL; /* rope_scaling() let only longrope through */
	free(type);
	int rc = akey_float(f, a, "rope.scaling.attn_factor", false, &attn, e);
	if (rc < 0)
		return -1;
	bool tables = gguf_find_tensor(f, name[0]) || gguf_find_tensor(f, name[1]);
	if (!typed && rc && !tables)
		return 0;
	for (int i = 0; i < 2; i++) {
		if (gguf_find_tensor(f, name[i]))
			continue;
		if (tables)
			return err_set(e, "missing tensor %s: %s asks for LongRoPE", name[i], name[!i]);
		return err_set(e, "missing tensor %s: %s.rope.scaling.%s asks for LongRoPE", name[i],
			       a->name, typed ? "type longrope" : "attn_factor");
	}
	if (R / 2 > CFG_MAX_ROPE_PAIRS)
		return err_set(e, "tensor %s: %d pairs are more than %d", name[0], R / 2,
			       CFG_MAX_ROPE_PAIRS);
	if (akey_int(f, a, "rope.scaling.original_context_length", false, 1, 1 << 30, &orig, e) < 0)
		return -1;
	if (!orig)
		return err_set(e, "missing key %s.rope.scaling.original_context_length: LongRoPE needs "
			       "it", a->name);
	for (int i = 0; i < 2; i++) {
		if (rd(f, name[i], (uint64_t)R / 2, 0, table[i], e))
			return -1;
		for (int j = 0; j < R / 2; j++)
			if (!(table[i][j] > 0.0f && table[i][j] < 1e30f))
				return err_set(e, "tensor %s: factor %d is %g, not above 0", name[i], j,
					       (double)table[i][j]);
	}
	if (!(attn > 0.0f && attn < 1e6f))
		return err_set(e, "%s.rope.scaling.attn_factor %g is not above 0", a->name, (double)attn);
	c->rope_scaling = ROPE_SCALE_LONGROPE;
	c->rope_orig_context = orig;
	c->rope_attn_factor = attn;
	return 0;
}

/* Phi-3 (Phi-3-mini 4k / 128k, Phi-3.5-mini, Phi-4-mini) as
 * loader-hf-phi3.c runs it: RMSNorm, SwiGLU from ffn_up's [gate; up], no
 * biases; attention.sliding_window (the converter writes 0 for none),
 * when above 0 and below the context, makes every layer local over that
 * many keys, as transformers masks (llama.cpp reads the key but runs Phi-3
 * without a window today); LongRoPE as phi3_longrope() reads it. */
static int phi3_config(const struct gguf_file *f, const struct arch *a, int R,
		       struct model_config *c, struct err *e)
{
	int window = 0;
	if (akey_int(f, a, "attention.sliding_window", false, 0, 1 << 30, &window, e) < 0 ||
	    phi3_longrope(f, a, R, c, e))
		return -1;
	if (window > 0 && window < c->context) {
		c->local_window = window;
		for (int l = 0; l < c->n_layer; l++)
			cfg_set_local(c, l, true);
	}
	c->norm = NORM_RMS;
	c->mlp = MLP_SWIGLU;
	c->bias = false;
	return 0;
}

/* llama.cpp's rope_freqs (Llama 3.1 / 3.2 files: its converter computes
 * Llama 3.1's rule into one divisor per pair), when the file has it: the
 * engine's FACTORS scaling over the R/2 pairs.  Read here, with the
 * config, since it decides the config. */
static int rope_freqs(const struct gguf_file *f, int R, struct model_config *c, struct err *e)
{
	struct gguf_tensor *t = gguf_find_tensor(f, "rope_freqs.weight");
	if (!t)
		return 0;
	if (R / 2 > CFG_MAX_ROPE_PAIRS)
		return err_set(e, "tensor rope_freqs.weight: %d pairs are more than %d", R / 2,
			       CFG_MAX_ROPE_PAIRS);
	if (rd(f, "rope_freqs.weight", (uint64_t)R / 2, 0, c->rope_long, e))
		return -1;
	memcpy(c->rope_short, c->rope_long, sizeof c->rope_short);
	c->rope_scaling = ROPE_SCALE_FACTORS;
	c->rope_attn_factor = 1.0f;
	return 0;
}

/* The family's switches, after shape(). */
static int family_config(const struct gguf_file *f, const struct arch *a, struct model_config *c,
			 struct info *in, struct err *e)
{
	int D = cfg_d_head(c), R = D;
	float theta = 10000.0f;
	bool rms = a->fam != FAM_GPT2 && a->fam != FAM_NEOX && a->fam != FAM_BERT;
	bool rope = rms || a->fam == FAM_NEOX;
	const char *eps = rms ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon";
	if (refuse(f, a, e) || rope_scaling(f, a, c, e) ||
	    akey_float(f, a, eps, true, &c->norm_eps, e))
		return -1;
	if (rope && (akey_float(f, a, "rope.freq_base", false, &theta, e) < 0 ||
		     akey_int(f, a, "rope.dimension_count", a->fam == FAM_NEOX, 2, D, &R, e) < 0))
		return -1;
	if (rope && c->context > CFG_MAX_CONTEXT)
		c->context = CFG_MAX_CONTEXT; /* RoPE holds no table: exact within */
	if (rope && rope_freqs(f, R, c, e))
		return -1;
	const struct gguf_tensor *out = gguf_find_tensor(f, "output.weight");
	c->tied = !out || same_as_embd(f, out);
	c->pos = rope ? POS_ROPE : POS_LEARNED;
	c->rope_theta = theta;
	c->rotary_dims = R == D ? 0 : R;
	in->rotate = rope && a->fam != FAM_LLAMA; /* every RoPE family but Llama's: rotate-half */
	in->fused = gguf_find_tensor(f, "blk.0.attn_qkv.weight") != NULL;
	switch (a->fam) {
	case FAM_LLAMA:
	case FAM_QWEN2:
	case FAM_QWEN3:
		c->norm = NORM_RMS;
		c->mlp = MLP_SWIGLU;
		c->qk_norm = a->fam == FAM_QWEN3;
		c->bias = a->fam == FAM_QWEN2 || gguf_find_tensor(f, "blk.0.attn_q.bias") ||
			  gguf_find_tensor(f, "blk.0.attn_qkv.bias") ||
			  gguf_find_tensor(f, "blk.0.attn_output.bias");
		break;
	case FAM_NEOX: {
		bool par = true;
		char k[128];
		snprintf(k, sizeof k, "%s.use_parallel_residual", a->name);
		if (gguf_get_bool(f, k, &par, e) < 0)
			return -1;
		c->parallel = par;
		c->mlp = MLP_GELU_EXACT;
		break;
	}
	case FAM_GPT2:
		break; /* config_default's: LayerNorm, learned positions, GELU tanh, biases */
	case FAM_BERT: {
		bool causal = false;
		char k[128];
		snprintf(k, sizeof k, "%s.attention.causal", a->name);
		if (gguf_get_bool(f, k, &causal, e) < 0)
			return -1;
		if (causal)
			return err_set(e, "%s true is not supported (BERT as an encoder is)", k);
		c->placement = PLACE_POST;
		c->mlp = MLP_GELU_EXACT;
		c->mask = MASK_NONE;
		c->emb_norm = true;
		c->head = HEAD_NONE;
		c->tied = true;
		break;
	}
	case FAM_GEMMA2:
	case FAM_GEMMA3:
	case FAM_OLMO2:
		c->norm = NORM_RMS;
		c->bias = false;
		return a->fam == FAM_OLMO2 ? olmo2_config(f, a, c, e) : gemma_config(f, a, c, e);
	case FAM_PHI3:
		return phi3_config(f, a, R, c, e);
	}
	return 0;
}

static int parse_config(const struct gguf_file *f, struct model_config *c, struct info *in,
			struct err *e)
{
	in->a = arch_of(f, e);
	if (!in->a || shape(f, in->a, c, e) || family_config(f, in->a, c, in, e))
		return -1;
	return config_validate(c, e);
}

/* --------------------------------------------------------------- tensors */

/* The tensor name when it is rows x cols (cols 0: a vector); NULL + e. */
static struct gguf_tensor *shaped(const struct gguf_file *f, const char *name, uint64_t rows,
				  uint64_t cols, struct err *e)
{
	struct gguf_tensor *t = gguf_find_tensor(f, name);
	if (!t) {
		err_set(e, "missing tensor %s", name);
		return NULL;
	}
	bool ok = cols ? t->ndim == 2 && t->ne[0] == cols && t->ne[1] == rows
		       : t->ndim == 1 && t->ne[0] == rows;
	if (!ok) {
		char got[96];
		gguf_shape_str(t, got, sizeof got);
		if (cols)
			err_set(e, "tensor %s has shape %s, but the metadata needs [%" PRIu64 ", %" PRIu64
				"]", name, got, cols, rows);
		else
			err_set(e, "tensor %s has shape %s, but the metadata needs [%" PRIu64 "]", name,
				got, rows);
		return NULL;
	}
	return t;
}

/* Reads name, rows x cols (cols 0: a vector), into dst. */
static int rd(const struct gguf_file *f, const char *name, uint64_t rows, uint64_t cols,
	      float *dst, struct err *e)
{
	struct gguf_tensor *t = shaped(f, name, rows, cols, e);
	return t ? gguf_read_tensor(f, t, dst, e) : -1;
}

/* Where a weight matrix's rows go: F32 rows at f, or rows r0.. of the
 * held matrix h (kept in the file's type). */
struct wdst {
	float *f;
	struct held_mat *h;
	int r0;
};

/* Rows r0.. of engine tensor id of layer l (per: its floats a layer, cols
 * its row width), wherever m keeps it. */
static struct wdst wd(struct model *m, enum param_id id, int l, size_t per, size_t r0,
		      size_t cols)
{
	if (m->held[id])
		return (struct wdst){ NULL, &m->held[id][l], (int)r0 };
	return (struct wdst){ m->p[id] + (size_t)l * per + r0 * cols, NULL, 0 };
}

/* rd() into d: a held destination takes the tensor's bytes as stored. */
static int rd_to(const struct gguf_file *f, const char *name, uint64_t rows, uint64_t cols,
		 struct wdst d, struct err *e)
{
	if (!d.h)
		return rd(f, name, rows, cols, d.f, e);
	struct gguf_tensor *t = shaped(f, name, rows, cols, e);
	if (!t)
		return -1;
	unsigned char *dst = held_add_part(d.h, d.r0, (int)rows, t->type);
	if (!dst)
		return err_set(e, "tensor %s: its %s rows cannot be held", name,
			       ggml_type_name(t->type));
	return gguf_read_stored(f, t, dst, e);
}

/* rd() of blk.L.NAME. */
static int rdl(const struct gguf_file *f, int l, const char *name, uint64_t rows, uint64_t cols,
	       float *dst, struct err *e)
{
	char full[GGUF_MAX_NAME + 32];
	snprintf(full, sizeof full, "blk.%d.%s", l, name);
	return rd(f, full, rows, cols, dst, e);
}

/* rd_to() of blk.L.NAME. */
static int rdl_to(const struct gguf_file *f, int l, const char *name, uint64_t rows,
		  uint64_t cols, struct wdst d, struct err *e)
{
	char full[GGUF_MAX_NAME + 32];
	snprintf(full, sizeof full, "blk.%d.%s", l, name);
	return rd_to(f, full, rows, cols, d, e);
}

/* rdl() when the file has the tensor; else dst stays (zero). */
static int rdl_opt(const struct gguf_file *f, int l, const char *name, uint64_t rows,
		   uint64_t cols, float *dst, struct err *e)
{
	char full[GGUF_MAX_NAME + 32];
	snprintf(full, sizeof full, "blk.%d.%s", l, name);
	return gguf_find_tensor(f, full) ? rd(f, full, rows, cols, dst, e) : 0;
}

/* A weight .weight and, when b is not NULL, its .bias. */
static int rd_wb(const struct gguf_file *f, int l, const char *base, uint64_t rows,
		 uint64_t cols, struct wdst w, float *b, struct err *e)
{
	char n[GGUF_MAX_NAME + 16];
	snprintf(n, sizeof n, "%s.weight", base);
	if (rdl_to(f, l, n, rows, cols, w, e))
		return -1;
	snprintf(n, sizeof n, "%s.bias", base);
	return b ? rdl(f, l, n, rows, 0, b, e) : 0;
}

/* Moves each Q and K row of a layer's [q; k; v] (rows x cols; cols 1 for
 * a bias) from rotate-half order to the engine's. */
static void unrotate(const struct model_config *c, float *w, size_t cols, float *tmp)
{
	int H = c->n_head, K = c->n_kv_head, D = cfg_d_head(c), R = cfg_rotary_dims(c);
	size_t qk = (size_t)(H + K) * D;
	memcpy(tmp, w, qk * cols * sizeof(float));
	for (size_t r = 0; r < qk; r++) {
		size_t head0 = r < (size_t)H * D ? 0 : (size_t)H * D;
		size_t to = head0 + (size_t)neox_rope_row((int)(r - head0), D, R);
		memcpy(w + to * cols, tmp + r * cols, cols * sizeof(float));
	}
}

/* unrotate() of a held [q; k; v]: each part's Q and K rows moved within
 * it (a head's rows never leave their part: a part is Q, K, V or all). */
static void unrotate_held(const struct model_config *c, struct held_mat *h)
{
	int H = c->n_head, K = c->n_kv_head, D = cfg_d_head(c), R = cfg_rotary_dims(c);
	int qk = (H + K) * D;
	for (int i = 0; i < h->n_parts; i++) {
		struct held_part *p = &h->part[i];
		size_t rb = p->row_bytes;
		unsigned char *tmp = xmalloc((size_t)p->rows * rb);
		memcpy(tmp, p->data, (size_t)p->rows * rb);
		for (int r = p->r0; r < p->r0 + p->rows && r < qk; r++) {
			int head0 = r < H * D ? 0 : H * D;
			int to = head0 + neox_rope_row(r - head0, D, R);
			if (to < p->r0 || to >= p->r0 + p->rows)
				die("unrotate_held: row %d moves to %d, outside its part", r, to);
			memcpy(p->data + (size_t)(to - p->r0) * rb, tmp + (size_t)(r - p->r0) * rb, rb);
		}
		free(tmp);
	}
}

/* Layer l's q/k norm (qk_norm): attn_q_norm and attn_k_norm, one head's D
 * scales each (Qwen3, Gemma 3), or OLMo-2's H * D and K * D over the
 * whole projections (qk_norm_whole), moved from rotate-half order to the
 * engine's as the Q and K rows are. */
static int rd_qk_norm(const struct gguf_file *f, const struct info *in, struct model *m, int l,
		      float *tmp, struct err *e)
{
	const struct model_config *c = &m->cfg;
	int D = cfg_d_head(c), R = cfg_rotary_dims(c);
	int n[2] = { D, D };
	if (c->qk_norm_whole) {
		n[0] = c->n_head * D;
		n[1] = c->n_kv_head * D;
	}
	static const char *const name[2] = { "attn_q_norm.weight", "attn_k_norm.weight" };
	float *dst[2] = { m->p[P_QNORMW] + (size_t)l * n[0], m->p[P_KNORMW] + (size_t)l * n[1] };
	for (int i = 0; i < 2; i++) {
		if (rdl(f, l, name[i], (uint64_t)n[i], 0, in->rotate ? tmp : dst[i], e))
			return -1;
		for (int r = 0; in->rotate && r < n[i]; r++)
			dst[i][neox_rope_row(r, D, R)] = tmp[r];
	}
	return 0;
}

/* Layer l's attention of a decoder: Q, K, V (separate or fused), the q/k
 * norm, output. */
static int rd_attn(const struct gguf_file *f, const struct info *in, struct model *m, int l,
		   float *tmp, struct err *e)
{
	const struct model_config *c = &m->cfg;
	uint64_t C = (uint64_t)c->d_model, D = (uint64_t)cfg_d_head(c);
	uint64_t H = (uint64_t)c->n_head, K = (uint64_t)c->n_kv_head, QKV = (H + 2 * K) * D;
	float *b = c->bias ? m->p[P_QKVB] + l * QKV : NULL;
	struct wdst q = wd(m, P_QKVW, l, QKV * C, 0, C), k = wd(m, P_QKVW, l, QKV * C, H * D, C);
	struct wdst v = wd(m, P_QKVW, l, QKV * C, (H + K) * D, C);
	/* Qwen2's and GPT-2's Q/K/V biases are always there, others' may be */
	bool always = in->a->fam == FAM_QWEN2 || in->a->fam == FAM_GPT2;
	int (*rb)(const struct gguf_file *, int, const char *, uint64_t, uint64_t, float *,
		  struct err *) = always ? rdl : rdl_opt;
	if (in->fused) {
		if (rdl_to(f, l, "attn_qkv.weight", QKV, C, q, e) ||
		    (b && rb(f, l, "attn_qkv.bias", QKV, 0, b, e)))
			return -1;
	} else if (rdl_to(f, l, "attn_q.weight", H * D, C, q, e) ||
		   rdl_to(f, l, "attn_k.weight", K * D, C, k, e) ||
		   rdl_to(f, l, "attn_v.weight", K * D, C, v, e) ||
		   (b && (rb(f, l, "attn_q.bias", H * D, 0, b, e) ||
			  rb(f, l, "attn_k.bias", K * D, 0, b + H * D, e) ||
			  rb(f, l, "attn_v.bias", K * D, 0, b + (H + K) * D, e)))) {
		return -1;
	}
	if (in->rotate) {
		if (q.h)
			unrotate_held(c, q.h);
		else
			unrotate(c, q.f, (size_t)C, tmp);
		if (b)
			unrotate(c, b, 1, tmp);
	}
	if (c->qk_norm && rd_qk_norm(f, in, m, l, tmp, e))
		return -1;
	float *ob = c->bias ? m->p[P_ATTPROJB] + l * C : NULL;
	if (rdl_to(f, l, "attn_output.weight", C, H * D, wd(m, P_ATTPROJW, l, C * H * D, 0, H * D), e))
		return -1;
	return ob ? (in->a->fam == FAM_GPT2 ? rdl : rdl_opt)(f, l, "attn_output.bias", C, 0, ob, e)
		  : 0;
}

/* Layer l of a decoder (every family but BERT): the norms before the
 * sub-blocks unless post_only (OLMo-2), the sandwich norms after them
 * (Gemma, OLMo-2: post_attention_norm, post_ffw_norm), the MLP. */
static int rd_layer(const struct gguf_file *f, const struct info *in, struct model *m, int l,
		    float *tmp, struct err *e)
{
	const struct model_config *c = &m->cfg;
	uint64_t C = (uint64_t)c->d_model, F = (uint64_t)c->d_ff;
	bool ln = c->norm == NORM_LAYER, pre = !c->post_only;
#define AT(id, n) (m->p[id] + (size_t)l * (n))
	struct wdst n1 = { pre ? AT(P_LN1W, C) : NULL, NULL, 0 }; /* OLMo-2 has none */
	struct wdst n2 = { pre ? AT(P_LN2W, C) : NULL, NULL, 0 };
	if ((pre && rd_wb(f, l, "attn_norm", C, 0, n1, ln ? AT(P_LN1B, C) : NULL, e)) ||
	    rd_attn(f, in, m, l, tmp, e) ||
	    (pre && rd_wb(f, l, "ffn_norm", C, 0, n2, ln ? AT(P_LN2B, C) : NULL, e)) ||
	    (c->sandwich && (rdl(f, l, "post_attention_norm.weight", C, 0, AT(P_ATTPOSTW, C), e) ||
			     rdl(f, l, "post_ffw_norm.weight", C, 0, AT(P_MLPPOSTW, C), e))))
		return -1;
	struct wdst down = wd(m, P_FCPROJW, l, C * F, 0, F);
	if (in->a->fam == FAM_PHI3) /* ffn_up holds [gate; up], the engine's order */
		return rdl_to(f, l, "ffn_up.weight", 2 * F, C, wd(m, P_FCW, l, 2 * F * C, 0, C), e) ||
		       rdl_to(f, l, "ffn_down.weight", C, F, down, e) ? -1 : 0;
	if (cfg_ff_rows(c) == 2 * c->d_ff) /* SwiGLU, GeGLU: gate rows, then up rows */
		return rdl_to(f, l, "ffn_gate.weight", F, C, wd(m, P_FCW, l, 2 * F * C, 0, C), e) ||
		       rdl_to(f, l, "ffn_up.weight", F, C, wd(m, P_FCW, l, 2 * F * C, F, C), e) ||
		       rdl_to(f, l, "ffn_down.weight", C, F, down, e) ? -1 : 0;
	return rd_wb(f, l, "ffn_up", F, C, wd(m, P_FCW, l, F * C, 0, C), AT(P_FCB, F), e) ||
	       rd_wb(f, l, "ffn_down", C, F, down, AT(P_FCPROJB, C), e) ? -1 : 0;
#undef AT
}

/* Layer l of BERT: Q, K and V stacked, the post-norm block's two norms. */
static int rd_bert_layer(const struct gguf_file *f, struct model *m, int l, struct err *e)
{
	const struct model_config *c = &m->cfg;
	uint64_t C = (uint64_t)c->d_model, F = (uint64_t)c->d_ff;
	float *w = m->p[P_QKVW] + l * 3 * C * C, *b = m->p[P_QKVB] + l * 3 * C;
	static const char *const qkv[3] = { "attn_q", "attn_k", "attn_v" };
#define W(p) ((struct wdst){ (p), NULL, 0 }) /* BERT is never held */
	for (int i = 0; i < 3; i++)
		if (rd_wb(f, l, qkv[i], C, C, W(w + i * C * C), b + i * C, e))
			return -1;
#define AT(id, n) (m->p[id] + (size_t)l * (n))
	return rd_wb(f, l, "attn_output", C, C, W(AT(P_ATTPROJW, C * C)), AT(P_ATTPROJB, C), e) ||
	       rd_wb(f, l, "attn_output_norm", C, 0, W(AT(P_LN1W, C)), AT(P_LN1B, C), e) ||
	       rd_wb(f, l, "ffn_up", F, C, W(AT(P_FCW, F * C)), AT(P_FCB, F), e) ||
	       rd_wb(f, l, "ffn_down", C, F, W(AT(P_FCPROJW, C * F)), AT(P_FCPROJB, C), e) ||
	       rd_wb(f, l, "layer_output_norm", C, 0, W(AT(P_LN2W, C)), AT(P_LN2B, C), e) ? -1 : 0;
#undef AT
#undef W
}

/* BERT's embeddings: words, positions with token type 0 folded in, norm. */
static int rd_bert_embd(const struct gguf_file *f, struct model *m, struct err *e)
{
	const struct model_config *c = &m->cfg;
	uint64_t C = (uint64_t)c->d_model, S = (uint64_t)c->context;
	struct gguf_tensor *t = gguf_find_tensor(f, "token_types.weight");
	if (!t || t->ndim != 2 || t->ne[0] != C || t->ne[1] < 1 || t->ne[1] > 16)
		return err_set(e, "tensor token_types.weight: missing, or not [%" PRIu64 ", 1 to 16]", C);
	float *types = xmalloc((size_t)t->n * sizeof(float));
	int rc = gguf_read_tensor(f, t, types, e) ||
		 rd(f, "position_embd.weight", S, C, m->p[P_WPE], e) ||
		 rd(f, "token_embd_norm.weight", C, 0, m->p[P_LNEW], e) ||
		 rd(f, "token_embd_norm.bias", C, 0, m->p[P_LNEB], e);
	for (uint64_t i = 0; !rc && i < S; i++) /* single-segment input: type 0 */
		for (uint64_t j = 0; j < C; j++)
			m->p[P_WPE][i * C + j] += types[j];
	free(types);
	return rc ? -1 : 0;
}

/* The tensors that hold no weight the engine uses: BERT's classifier, and
 * a Qwen3-Reranker's cls.output (the rows of the "yes" and "no" tokens,
 * which the converter copies out of the output layer: the model runs as
 * the language model it is). */
static bool ignored(const struct info *in, const char *name)
{
	return (in->a->fam == FAM_BERT && !strncmp(name, "cls.", 4)) ||
	       (in->a->fam == FAM_QWEN3 && !strncmp(name, "cls.output.", 11));
}

static int read_weights(const struct gguf_file *f, const struct info *in, struct model *m,
			struct err *e)
{
	const struct model_config *c = &m->cfg;
	uint64_t C = (uint64_t)c->d_model, V = (uint64_t)c->vocab_size, S = (uint64_t)c->context;
	uint64_t big = (uint64_t)cfg_qkv_rows(c, c->n_kv_head) * C;
	float *tmp = xmalloc_aligned((size_t)big * sizeof(float));
	int rc = rd_to(f, "token_embd.weight", V, C, wd(m, P_WTE, 0, 0, 0, C), e);
	bool bert = in->a->fam == FAM_BERT;
	if (!rc && bert)
		rc = rd_bert_embd(f, m, e);
	else if (!rc && c->pos == POS_LEARNED)
		rc = rd(f, "position_embd.weight", S, C, m->p[P_WPE], e);
	for (int l = 0; !rc && l < c->n_layer; l++)
		rc = bert ? rd_bert_layer(f, m, l, e) : rd_layer(f, in, m, l, tmp, e);
	if (!rc && !bert)
		rc = rd(f, "output_norm.weight", C, 0, m->p[P_LNFW], e) ||
		     (c->norm == NORM_LAYER && rd(f, "output_norm.bias", C, 0, m->p[P_LNFB], e));
	struct gguf_tensor *out = bert ? NULL : gguf_find_tensor(f, "output.weight");
	if (!rc && out && !c->tied)
		rc = rd_to(f, "output.weight", V, C, wd(m, P_LMHEAD, 0, 0, 0, C), e);
	else if (!rc && out)
		out->read = true; /* the same bytes as token_embd */
	for (int i = 0; !rc && i < f->n_t; i++)
		if (!f->t[i].read && !ignored(in, f->t[i].name))
			rc = err_set(e, "unexpected tensor %s (not one of %s's)", f->t[i].name, in->a->name);
	if (!rc && !model_held_complete(m))
		die("read_weights: a held matrix of %s lacks rows", in->a->name);
	free(tmp);
	return rc ? -1 : 0;
}

/* Whether name's type is other than F32 (absent: no). */
static bool stored_narrow(const struct gguf_file *f, const char *name)
{
	const struct gguf_tensor *t = gguf_find_tensor(f, name);
	return t && t->type != GGML_F32;
}

/* The engine tensors to hold as stored: those a decoder's file keeps in
 * another type than F32 (F16, BF16, quantized), by their layer 0 tensor;
 * none under o->f32 or for BERT (its reader stacks rows as floats). */
static uint32_t held_mask(const struct gguf_file *f, const struct info *in,
			  const struct model_config *c, const struct load_opts *o)
{
	if (o->f32 || in->a->fam == FAM_BERT)
		return 0;
	uint32_t m = 0;
	m |= stored_narrow(f, "token_embd.weight") ? 1u << P_WTE : 0;
	m |= !c->tied && stored_narrow(f, "output.weight") ? 1u << P_LMHEAD : 0;
	m |= stored_narrow(f, in->fused ? "blk.0.attn_qkv.weight" : "blk.0.attn_q.weight")
		     ? 1u << P_QKVW : 0;
	m |= stored_narrow(f, "blk.0.attn_output.weight") ? 1u << P_ATTPROJW : 0;
	m |= stored_narrow(f, "blk.0.ffn_up.weight") ? 1u << P_FCW : 0;
	m |= stored_narrow(f, "blk.0.ffn_down.weight") ? 1u << P_FCPROJW : 0;
	return m;
}

/* Refuses metadata that asks for far more weights than the tensors hold,
 * before the model is allocated for it. */
static int check_size(const struct gguf_file *f, const struct model_config *c, struct err *e)
{
	double held = 0, need = (double)config_param_count(c);
	for (int i = 0; i < f->n_t; i++)
		held += (double)f->t[i].n;
	if (need / 2 > held)
		return err_set(e, "the metadata describes %.0f parameters but the tensors hold %.0f "
			       "values", need, held);
	return 0;
}

/* ----------------------------------------------------------------- format */

/* --tokenizer: a tokenizer.bin, or what the HF loaders read. */
static struct tokenizer *option_tokenizer(const char *opt, struct err *e)
{
	size_t n = strlen(opt);
	if (n > 4 && !strcmp(opt + n - 4, ".bin"))
		return tok_llama2c_load(opt, 0, e);
	char *vt = ld_join(opt, "vocab.txt"), *tj = ld_join(opt, "tokenizer.json");
	bool wp = (n >= 9 && !strcmp(opt + n - 9, "vocab.txt")) || (ld_is_file(vt) && !ld_is_file(tj));
	free(vt);
	free(tj);
	if (wp)
		return tok_wordpiece_load(opt, e);
	struct tokenizer *t = ld_hf_tokenizer(opt, opt, e);
	if (!t && strstr(e->msg, "WordPiece"))
		t = tok_wordpiece_load(opt, e);
	return t;
}

static bool probe_gguf(const char *path, char *why, size_t n)
{
	bool ok = gguf_probe(path);
	if (!ok)
		snprintf(why, n, "no \"GGUF\" magic");
	return ok;
}

static int describe_gguf(const char *path, struct model_config *c, struct err *e)
{
	struct gguf_file f;
	struct info in;
	int rc = gguf_open(&f, path, e) || parse_config(&f, c, &in, e) ? -1 : 0;
	gguf_close(&f);
	return rc ? err_prefix(e, "%s", path) : 0;
}

static int stored_gguf(const char *path, double *bytes, double *values)
{
	struct gguf_file f;
	struct err e;
	*bytes = *values = 0;
	if (gguf_open(&f, path, &e))
		return -1;
	for (int i = 0; i < f.n_t; i++) {
		*bytes += (double)f.t[i].bytes;
		*values += (double)f.t[i].n;
	}
	gguf_close(&f);
	return 0;
}

static struct model *load_gguf(const char *path, const struct load_opts *o, struct err *e)
{
	struct gguf_file f;
	struct model_config cfg;
	struct info in;
	struct tokenizer *tok = NULL;
	struct model *m = NULL;
	if (gguf_open(&f, path, e) || parse_config(&f, &cfg, &in, e))
		goto fail;
	tok = o->tokenizer ? option_tokenizer(o->tokenizer, e) : gguf_tokenizer(&f, e);
	if (!tok) {
		if (o->tokenizer)
			goto fail_noprefix;
		goto fail;
	}
	if (tok->vocab_size > cfg.vocab_size) {
		err_set(e, "the tokenizer has %d tokens but token_embd.weight has %d rows",
			tok->vocab_size, cfg.vocab_size);
		goto fail;
	}
	if (check_size(&f, &cfg, e))
		goto fail;
	m = model_new_held(&cfg, held_mask(&f, &in, &cfg, o), e);
	if (!m || read_weights(&f, &in, m, e))
		goto fail;
	gguf_close(&f);
	m->tok = tok;
	m->path = xstrdup(path);
	m->name = ld_basename(path, ".gguf");
	return m;
fail:
	err_prefix(e, "%s", path);
fail_noprefix:
	gguf_close(&f);
	tok_free(tok);
	model_free(m);
	return NULL;
}

const struct model_format format_gguf = {
	"gguf", "GGUF file (llama.cpp, Ollama, LM Studio)", probe_gguf, load_gguf, describe_gguf, NULL,
	stored_gguf,
};
