/*
 * tool_valloss — the validation loss of a saved model, on exactly the
 * windows its trainer validated on (the same file, min-count, split, batch
 * and number of batches), so that the loss of the stored (e.g. F16)
 * weights can be compared with the final_val_loss the trainer measured on
 * its float32 weights.
 *
 * usage: tool_valloss MODEL DATA MIN_COUNT BATCH [VAL_BATCHES] [VAL_FRACTION]
 */
#include <stdio.h>
#include <stdlib.h>

#include "checkpoint.h"
#include "dataset.h"
#include "model.h"

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: tool_valloss MODEL DATA MIN_COUNT BATCH [VAL_BATCHES] [VAL_FRACTION]\n");
		return 2;
	}
	int min_count = atoi(argv[3]), B = atoi(argv[4]);
	int nb = argc > 5 ? atoi(argv[5]) : 8;
	double frac = argc > 6 ? atof(argv[6]) : 0.1;
	struct err e;
	struct model *m = checkpoint_load(argv[1], &e);
	if (!m) {
		fprintf(stderr, "tool_valloss: %s\n", e.msg);
		return 1;
	}
	struct dataset d;
	if (dataset_load(&d, argv[2], min_count, frac, &e) != 0) {
		fprintf(stderr, "tool_valloss: %s\n", e.msg);
		model_free(m);
		return 1;
	}
	int T = m->cfg.context;
	struct run *r = run_new(&m->cfg, B, T, RUN_LOGITS);
	int *tokens = xmalloc((size_t)B * T * sizeof(int)), *targets = xmalloc((size_t)B * T * sizeof(int));
	struct run_options o;
	run_options_native(m, &o);
	double sum = 0;
	long count = 0;
	for (int i = 0; i < nb; i++) {
		dataset_val_batch(&d, i, nb, B, T, tokens, targets);
		if (model_forward(m, &o, tokens, targets, B, T, r, &e) != 0) {
			fprintf(stderr, "tool_valloss: %s\n", e.msg);
			return 1;
		}
		sum += r->loss * r->n_targets;
		count += r->n_targets;
	}
	printf("%.5f\n", sum / (double)count);
	free(tokens);
	free(targets);
	run_free(r);
	dataset_free(&d);
	model_free(m);
	return 0;
}
