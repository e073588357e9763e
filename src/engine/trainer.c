/*
 * trainer.c — the training step, validation and history (trainer.h).
 */
#include "trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backward.h"
#include "mlm.h"
#include "tokenizer.h"

const char *train_objective_name(enum train_objective o)
{
	return o == OBJ_MLM ? "mlm" : "clm";
}

int train_objective_parse(const char *s, enum train_objective *out)
{
	if (strcmp(s, "clm") == 0)
		*out = OBJ_CLM;
	else if (strcmp(s, "mlm") == 0)
		*out = OBJ_MLM;
	else
		return -1;
	return 0;
}

int trainer_check_objective(const struct model *m, const struct train_hparams *hp,
			    struct err *e)
{
	if (hp->objective == OBJ_CLM) {
		if (cfg_is_encoder(&m->cfg))
			return err_set(e, "the model is an encoder (head %s): train it with the mlm "
				       "objective", head_type_name(m->cfg.head));
		return 0;
	}
	if (m->cfg.head != HEAD_MLM)
		return err_set(e, "the mlm objective needs the masked-LM head (head mlm), not %s",
			       head_type_name(m->cfg.head));
	return mlm_check(m->tok, m->cfg.context, e);
}

void train_hparams_default(struct train_hparams *hp, long steps)
{
	memset(hp, 0, sizeof *hp);
	hp->batch = 16;
	hp->steps = steps;
	hp->warmup = 100;
	hp->lr = 2e-3;
	hp->min_lr_frac = 0.1;
	hp->weight_decay = 0.1;
	hp->clip = 1.0;
	hp->val_batches = 8;
	hp->seed = 1337;
}

/* The batch generator's seed is the run's seed mixed with a constant, so
 * that it differs from the initialisation's stream. */
#define BATCH_SEED_MIX 0x0DA7A5EEDull

void trainer_init(struct trainer *t, struct model *m, const struct dataset *d,
		  const struct train_hparams *hp)
{
	memset(t, 0, sizeof *t);
	t->m = m;
	t->d = d;
	t->hp = *hp;
	run_options_native(m, &t->ro);
	adamw_init(&t->opt, m, (float)hp->weight_decay);
	rng_seed(&t->rng, hp->seed ^ BATCH_SEED_MIX);
	t->val_acc = NAN;
	t->hw = HIST_LAYER0 + m->cfg.n_layer;
	int B = hp->batch, T = m->cfg.context;
	t->run = run_new(&m->cfg, B, T, RUN_TRAIN);
	t->bs = backward_new(&m->cfg, B, T);
	t->grads = xmalloc_aligned(m->n_params * sizeof(float));
	t->batch_tokens = xmalloc((size_t)B * T * sizeof(int));
	t->batch_targets = xmalloc((size_t)B * T * sizeof(int));
}

void trainer_release(struct trainer *t)
{
	adamw_free(&t->opt);
	free(t->hist);
	free(t->val);
	run_free(t->run);
	backward_free(t->bs);
	free(t->grads);
	free(t->batch_tokens);
	free(t->batch_targets);
	memset(t, 0, sizeof *t);
}

static bool stop_now(const struct trainer *t)
{
	return t->stop && *t->stop >= 2;
}

static void hist_push(struct trainer *t, const float *row)
{
	if (t->hist_n == t->hist_cap) {
		t->hist_cap = t->hist_cap ? 2 * t->hist_cap : 1024;
		t->hist = xrealloc(t->hist, t->hist_cap * (size_t)t->hw * sizeof(float));
	}
	memcpy(t->hist + t->hist_n * (size_t)t->hw, row, (size_t)t->hw * sizeof(float));
	t->hist_n++;
}

static void val_push(struct trainer *t, long step, float loss)
{
	if (t->val_n == t->val_cap) {
		t->val_cap = t->val_cap ? 2 * t->val_cap : 64;
		t->val = xrealloc(t->val, t->val_cap * 2 * sizeof(float));
	}
	t->val[2 * t->val_n] = (float)step;
	t->val[2 * t->val_n + 1] = loss;
	t->val_n++;
}

int trainer_step(struct trainer *t, struct err *e)
{
	struct model *m = t->m;
	int B = t->hp.batch, T = m->cfg.context;
	struct rng before = t->rng;
	if (t->hp.objective == OBJ_MLM)
		mlm_sample(t->d, m->tok, &t->rng, B, T, t->batch_tokens, t->batch_targets);
	else
		dataset_sample(t->d, &t->rng, B, T, t->batch_tokens, t->batch_targets);
	memset(t->grads, 0, m->n_params * sizeof(float));
	if (model_forward(m, &t->ro, t->batch_tokens, t->batch_targets, B, T, t->run, e))
		return -1;
	if (!stop_now(t) &&
	    model_backward(m, &t->ro, t->batch_tokens, t->batch_targets, t->run, t->grads, t->bs, e))
		return -1;
	if (stop_now(t)) {
		t->rng = before;
		return 1;
	}
	float row[HIST_LAYER0 + CFG_MAX_LAYERS];
	double gnorm = grad_norms(m, t->grads, row + HIST_LAYER0);
	double loss = t->run->loss;
	if (!isfinite(loss) || !isfinite(gnorm))
		return err_set(e, "step %ld: the loss is not finite (training diverged); try a lower --lr",
			       t->step + 1);
	float lr = lr_schedule(t->step, t->hp.steps, t->hp.warmup, (float)t->hp.lr,
			       (float)t->hp.min_lr_frac);
	adamw_update(&t->opt, m, t->grads, clip_scale(gnorm, (float)t->hp.clip), lr);
	model_clear_cache(m);
	row[HIST_LOSS] = (float)loss;
	row[HIST_LR] = lr;
	row[HIST_GRAD] = (float)gnorm;
	hist_push(t, row);
	t->step++;
	t->tokens += (uint64_t)B * T;
	return 0;
}

/* Positions with a target whose highest logit (the first, on a tie) is
 * the target. */
static long count_right(const float *logits, const int *targets, int N, int V)
{
	long right = 0;
	for (int i = 0; i < N; i++) {
		if (targets[i] < 0)
			continue;
		const float *z = logits + (size_t)i * V;
		int best = 0;
		for (int j = 1; j < V; j++)
			if (z[j] > z[best])
				best = j;
		right += best == targets[i];
	}
	return right;
}

int trainer_validate(struct trainer *t, double *loss, struct err *e)
{
	int B = t->hp.batch, T = t->m->cfg.context;
	*loss = NAN;
	if (t->d->n_val == 0)
		return 0;
	double sum = 0;
	long count = 0, right = 0;
	bool mlm = t->hp.objective == OBJ_MLM;
	for (int i = 0; i < t->hp.val_batches; i++) {
		if (stop_now(t))
			return 1;
		if (mlm)
			mlm_val_batch(t->d, t->m->tok, t->hp.seed, i, t->hp.val_batches, B, T,
				      t->batch_tokens, t->batch_targets);
		else
			dataset_val_batch(t->d, i, t->hp.val_batches, B, T, t->batch_tokens,
					  t->batch_targets);
		if (model_forward(t->m, &t->ro, t->batch_tokens, t->batch_targets, B, T, t->run, e))
			return -1;
		sum += t->run->loss * t->run->n_targets;
		count += t->run->n_targets;
		if (mlm)
			right += count_right(run_logits(t->run), t->batch_targets, B * T, t->m->cfg.vocab_size);
	}
	*loss = count ? sum / (double)count : NAN;
	if (mlm)
		t->val_acc = count ? (double)right / (double)count : NAN;
	val_push(t, t->step, (float)*loss);
	return 0;
}

const float *trainer_last_row(const struct trainer *t)
{
	return t->hist_n ? t->hist + (t->hist_n - 1) * (size_t)t->hw : NULL;
}

double trainer_final_loss(const struct trainer *t)
{
	if (t->hist_n == 0)
		return NAN;
	size_t k = t->hist_n / 10;
	if (k < 1)
		k = 1;
	double s = 0;
	for (size_t i = t->hist_n - k; i < t->hist_n; i++)
		s += t->hist[i * (size_t)t->hw + HIST_LOSS];
	return s / (double)k;
}

double trainer_last_val(const struct trainer *t)
{
	return t->val_n ? t->val[2 * t->val_n - 1] : NAN;
}
