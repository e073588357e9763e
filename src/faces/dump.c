/*
 * dump.c — `attnscope MODEL --text TEXT --dump`: the config, the tokens and
 * every layer's and head's attention rows as plain text, for scripts and
 * tests that want the raw numbers.
 */
#include "dump.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "tokenizer.h"

/* LongRoPE's original context, attention factor and both tables. */
static void dump_longrope(FILE *out, const struct model_config *c)
{
	fprintf(out, " rope_scaling longrope original_context %d attn_factor %g",
		c->rope_orig_context, (double)c->rope_attn_factor);
	for (int t = 0; t < 2; t++) {
		const float *f = t ? c->rope_long : c->rope_short;
		fprintf(out, t ? " long_factor" : " short_factor");
		for (int i = 0; i < cfg_rotary_dims(c) / 2; i++)
			fprintf(out, "%s%g", i ? "," : " ", (double)f[i]);
	}
}

void dump_config(FILE *out, const struct model *m)
{
	const struct model_config *c = &m->cfg;
	char name[256] = "?";
	if (m->name) /* a name from a file's metadata is shown, never obeyed */
		utf8_printable(m->name, strlen(m->name), name, sizeof name);
	fprintf(out, "model %s\n", name);
	fprintf(out, "config vocab %d d_model %d layers %d heads %d kv_heads %d d_head %d d_ff %d context %d\n",
		c->vocab_size, c->d_model, c->n_layer, c->n_head, c->n_kv_head, cfg_d_head(c), c->d_ff,
		c->context);
	fprintf(out, "config norm %s eps %g placement %s pos %s", norm_type_name(c->norm),
		(double)c->norm_eps, norm_place_name(c->placement), pos_type_name(c->pos));
	if (c->pos == POS_ROPE)
		fprintf(out, " theta %g", (double)c->rope_theta);
	if (c->pos == POS_ROPE && cfg_rotary_dims(c) != cfg_d_head(c)) /* partial rotary */
		fprintf(out, " rotary %d", cfg_rotary_dims(c));
	if (c->pos == POS_ROPE && (c->rope_scaling == ROPE_SCALE_LINEAR ||
				   c->rope_scaling == ROPE_SCALE_LLAMA3))
		fprintf(out, " rope_scaling %s factor %g", rope_scaling_name(c->rope_scaling),
			(double)c->rope_factor);
	if (c->pos == POS_ROPE && c->rope_scaling == ROPE_SCALE_LONGROPE)
		dump_longrope(out, c);
	if (c->pos == POS_ROPE && c->rope_scaling == ROPE_SCALE_FACTORS)
		for (int i = 0; i < cfg_rotary_dims(c) / 2; i++)
			fprintf(out, "%s%g", i ? "," : " rope_scaling factors ", (double)c->rope_long[i]);
	if (c->pos == POS_ROPE && c->rope_scaling == ROPE_SCALE_LLAMA3)
		fprintf(out, " low_freq %g high_freq %g original_context %d", (double)c->rope_low_freq,
			(double)c->rope_high_freq, c->rope_orig_context);
	fprintf(out, " mlp %s bias %s tied %s", c->d_ff ? mlp_type_name(c->mlp) : "none",
		c->bias ? "yes" : "no", c->tied ? "yes" : "no");
	if (!c->residual || !c->scale || c->mask != MASK_CAUSAL) /* the lab's switches */
		fprintf(out, " residual %s scale %s mask %s", c->residual ? "yes" : "no",
			c->scale ? "yes" : "no", mask_kind_name(c->mask));
	if (c->parallel)
		fprintf(out, " parallel yes");
	if (c->emb_norm)
		fprintf(out, " emb_norm yes");
	if (c->qk_norm)
		fprintf(out, c->qk_norm_whole ? " qk_norm whole" : " qk_norm yes");
	if (c->emb_scale > 0.0f) /* Gemma 2's switches */
		fprintf(out, " emb_scale %g", (double)c->emb_scale);
	if (c->sandwich)
		fprintf(out, c->post_only ? " sandwich post_only" : " sandwich yes");
	if (c->attn_softcap > 0.0f || c->final_softcap > 0.0f)
		fprintf(out, " softcap %g/%g", (double)c->attn_softcap, (double)c->final_softcap);
	if (c->attn_scale_dim)
		fprintf(out, " scale_dim %d", c->attn_scale_dim);
	if (c->rope_local_theta > 0.0f) /* Gemma 3 */
		fprintf(out, " local_theta %g", (double)c->rope_local_theta);
	if (c->head != HEAD_LM)
		fprintf(out, " head %s", head_type_name(c->head));
	if (c->local_window > 0) { /* GPT-Neo's local layers */
		fprintf(out, " local_window %d local_layers", c->local_window);
		for (int l = 0, n = 0; l < c->n_layer; l++)
			if (cfg_layer_local(c, l))
				fprintf(out, "%s%d", n++ ? "," : " ", l);
	}
	fprintf(out, " params %zu\n", m->n_params);
}

int dump_run(FILE *out, struct model *m, const char *text, size_t len, struct err *e)
{
	int *ids, n, bad = 0;
	if (model_tokenize(m, text, len, &ids, &n, &bad, e) != 0)
		return -1;
	if (bad)
		fprintf(stderr, "attnscope: warning: %d invalid UTF-8 byte%s replaced by U+FFFD\n",
			bad, bad == 1 ? "" : "s");
	struct run_options o;
	run_options_native(m, &o);
	struct run *r = run_new(&m->cfg, 1, n > 0 ? n : 1, RUN_LOGITS | RUN_ATTN);
	if (model_forward(m, &o, ids, NULL, 1, n, r, e) != 0) {
		run_free(r);
		free(ids);
		return -1;
	}
	dump_config(out, m);
	fprintf(out, "tokens %d\n", n);
	char label[64];
	for (int i = 0; i < n; i++) {
		tok_label(m->tok, ids[i], label, sizeof label);
		fprintf(out, "token %d id %d %s\n", i, ids[i], label);
	}
	if (isnan(r->loss))
		fprintf(out, "loss none\n");
	else
		fprintf(out, "loss %.6f\n", r->loss);
	int rc = 0;
	for (int l = 0; l < m->cfg.n_layer && rc == 0; l++)
		for (int h = 0; h < m->cfg.n_head && rc == 0; h++) {
			fprintf(out, "attn %d.%d\n", l, h);
			const float *a = run_att(r, l, 0, h);
			for (int i = 0; i < n; i++) {
				for (int j = 0; j < n; j++)
					fprintf(out, j ? " %.6f" : "%.6f", (double)a[(size_t)i * n + j]);
				fputc('\n', out);
			}
			/* output that cannot be written ends the dump here rather
			 * than after formatting every remaining head */
			if (ferror(out))
				rc = stream_flush(out, e);
		}
	run_free(r);
	free(ids);
	return rc;
}
