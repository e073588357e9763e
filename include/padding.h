/*
 * padding.h — the padding lesson: several texts of different lengths run
 * as one batch, each padded on the right to the longest, once with a
 * padding mask (model.h: run.key_len) and once without, each compared
 * with the same text run alone.
 *
 * With the mask no real token can attend to a pad, so every real
 * position's attention and prediction equal the text's own run (up to
 * float rounding of the larger products); without it, pads are keys like
 * any other wherever the attention mask lets a query see them: under the
 * causal mask a pad comes after every real token and is never seen (the
 * mask changes nothing), under `mask none` every real token sees them.
 *
 * The two masks together: the attention a query may pay is the logical and
 * of the attention mask (causal, window ...: the options' mask) and the
 * padding mask.  pad_run also runs the batch with each left out, so that
 * the loss of each wrong combination stands beside the right one: the
 * padding mask alone (the options' mask replaced by none: every real token
 * sees the later ones), the attention mask alone (the unmasked run above),
 * and neither.
 */
#ifndef ATTNSCOPE_PADDING_H
#define ATTNSCOPE_PADDING_H

#include "model.h"
#include "util.h"

/* One text of the batch, against its run alone.  Losses are mean NLL over
 * the text's own next-token targets (pads have none). */
struct pad_text {
	int len;                   /* real tokens */
	double loss_alone, loss_masked, loss_unmasked;
	double diff_masked, diff_unmasked;   /* max |A_batch - A_alone| over every layer,
					      * head, real query and real key */
	double pad_masked, pad_unmasked;     /* most weight any real query (any layer or
					      * head) puts on pad keys in total */
	/* the combinations: loss with the padding mask and no attention mask,
	 * and with no mask at all (loss_masked is both masks, loss_unmasked the
	 * attention mask alone) */
	double loss_pad_only, loss_neither;
	double diff_pad_only;                /* max |A_batch - A_alone| as above, padding
					      * mask alone */
};

struct pad_result {
	int n;                     /* texts */
	int T;                     /* padded length: the longest text */
	int pad_id;                /* the token the pads hold */
	bool combined;             /* the options' mask hides keys (not none): the
				    * pad_only and neither runs were made; else
				    * they equal masked and unmasked and are not run */
	struct pad_text *texts;    /* n, owned */
};

/* Runs the n texts (tokens[i], lens[i] tokens, 1 <= lens[i] <= the model's
 * context) alone and as a batch padded with pad_id, with and without the
 * padding mask, under options o, and (when o's mask is not none) both
 * again with o's mask replaced by none.  0, or -1 with a message. */
int pad_run(struct model *m, const struct run_options *o, int n, int *const *tokens,
	    const int *lens, int pad_id, struct pad_result *out, struct err *e);

void pad_result_free(struct pad_result *r);

#endif
