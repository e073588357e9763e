/*
 * fuzz_dataset.c — libFuzzer target for the training-data reader,
 * dataset_load(), and the window drawing that `attnscope train` does with
 * what it read (dataset.h).
 *
 * Each input is written as data.txt in a private temporary directory and
 * run through train.c's sequence: dataset_load(), dataset_check_context(),
 * dataset_set_windows(), then a training batch (dataset_sample()) and,
 * when there is a validation split, a validation batch
 * (dataset_val_batch()).  The options a command line would give (min
 * count, validation fraction, context, line starts, repeated spans, and
 * the batch seed) come from a hash of the input, so that each input always
 * runs the same way.  Every failure is fine as long as it is one line.  A
 * text that loads must give: the file's size and hash, n = n_train + n_val
 * tokens with at most one per byte, ids within the vocabulary, n_unk
 * counting the <unk> ids; and every token and target of the batches in the
 * vocabulary.
 *
 * Seeds: fuzz/seeds/dataset, a few short texts: English lines, a poem in
 * Chinese (one per line, for line starts), CRLF line ends and a single
 * line without a final newline.
 *
 *   make fuzz            (builds every fuzz/fuzz_*.c and runs each FUZZ_SECONDS)
 */
#define _GNU_SOURCE
#include "fuzz-common.h"

#include "dataset.h"

static char path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_initialize(argc, argv, false);
	fuzz_path(path, sizeof path, "data.txt");
	return 0;
}

/* Every id of a batch is in the vocabulary. */
static void check_ids(const struct dataset *d, const int *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		CHECK(ids[i] >= 0 && ids[i] < d->tok->vocab_size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int contexts[] = { 1, 2, 3, 4, 8, 16, 32, 64 };
	uint64_t h = dataset_fnv1a(data, size);
	int min_count = 1 + (int)(h & 3);
	double val_fraction = (double)((h >> 2) & 3) * 0.1; /* 0, 0.1, 0.2, 0.3 */
	int T = contexts[(h >> 4) & 7];
	bool line_starts = (h >> 7) & 1;
	double repeat = ((h >> 8) & 3) == 0 ? 0.0 : ((h >> 8) & 3) == 1 ? 0.5 : 1.0;
	int repeat_min = 1 + (int)((h >> 10) & 7);
	int repeat_max = repeat_min + (int)((h >> 13) & 15);
	bool repeat_random = (h >> 17) & 1;
	int B = 1 + (int)((h >> 18) & 3);
	struct dataset d;
	struct err e = { "" };

	fuzz_put_file(path, data, size);
	if (dataset_load(&d, path, min_count, val_fraction, &e) != 0) {
		fuzz_check_error(&e, NULL);
		CHECK(!d.tok && !d.ids);
		return 0;
	}
	CHECK(d.bytes == size && d.hash == h);
	CHECK(d.tok && d.tok->vocab_size >= 2);
	CHECK(d.n >= 1 && d.n <= size && d.n_train + d.n_val == d.n);
	check_ids(&d, d.ids, d.n);
	size_t unk = 0;
	for (size_t i = 0; i < d.n; i++)
		unk += d.ids[i] == d.tok->unk_id;
	CHECK(unk == d.n_unk);

	if (dataset_check_context(&d, path, T, &e) == 0 &&
	    dataset_set_windows(&d, T, line_starts, repeat, repeat_min, repeat_max,
				repeat_random, &e) == 0) {
		int *tokens = xmalloc((size_t)B * (size_t)T * sizeof *tokens);
		int *targets = xmalloc((size_t)B * (size_t)T * sizeof *targets);
		struct rng r;

		rng_seed(&r, h);
		dataset_sample(&d, &r, B, T, tokens, targets);
		check_ids(&d, tokens, (size_t)B * (size_t)T);
		check_ids(&d, targets, (size_t)B * (size_t)T);
		if (d.n_val > 0) {
			dataset_val_batch(&d, 0, 2, B, T, tokens, targets);
			check_ids(&d, tokens, (size_t)B * (size_t)T);
			dataset_val_batch(&d, 1, 2, B, T, tokens, targets);
			check_ids(&d, targets, (size_t)B * (size_t)T);
		}
		free(tokens);
		free(targets);
	} else {
		fuzz_check_error(&e, NULL);
	}
	dataset_free(&d);
	return 0;
}
