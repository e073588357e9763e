/*
 * bench_quant.c — ggml_dequantize (quant.h: AVX2 for Q8_0, Q4_0, Q4_K,
 * Q5_K and Q6_K where the build has it) against ggml_dequantize_ref, the
 * portable scalar code it must equal, on a Llama-3-8B gate matrix (14336 x
 * 4096) of each type: random bytes with small finite halves.
 *
 * Paired: the matrix is converted a slice of 8 rows at a time, as held.c
 * converts rows; each slice is converted once untimed (its bytes then in
 * cache for both), then by the reference and by ggml_dequantize, each
 * timed.  A round is one pass over the matrix; its ratio is the median of
 * its slices' ratios (fast over reference: a slice that other work
 * preempted does not move it).  Printed per type: the median ns a value of
 * each over the slices of all rounds, and the median of the rounds' ratios
 * with their min and max.  Summary row: Q4_K's ratio (target <= 0.25x:
 * the scalar Q4_K conversion cost about 10x the F32 sgemv of the same
 * matrix, more than the held product's whole budget).
 *
 *   bench_quant [ROUNDS]
 */
#include "bench_common.h"

#include "quant.h"

#define ROUNDS_DEFAULT 3
#define ROWS 14336
#define COLS 4096
#define SLICE 8

static const uint32_t types[] = { GGML_Q8_0, GGML_Q4_0, GGML_Q4_K, GGML_Q5_K, GGML_Q6_K };

/* A ROWS x COLS matrix of type t: random bytes, every half (d, dmin) a
 * finite value below 0.001. */
static unsigned char *random_matrix(uint32_t t, struct rng *r)
{
	size_t bb = ggml_block_bytes(t), nb = (size_t)ROWS * COLS / ggml_block_values(t);
	unsigned char *q = xmalloc(nb * bb);
	for (size_t i = 0; i < nb * bb; i++)
		q[i] = (unsigned char)rng_u32(r);
	size_t at = t == GGML_Q6_K ? 208 : 0;
	int n = t == GGML_Q4_K || t == GGML_Q5_K ? 2 : 1;
	for (size_t b = 0; b < nb; b++)
		for (int j = 0; j < n; j++) {
			uint16_t h = f32_to_f16(0.001f * rng_uniform(r));
			memcpy(q + b * bb + at + 2 * (size_t)j, &h, 2);
		}
	return q;
}

/* The paired slices of type t over rounds; returns the spread of the
 * ratios (fast over reference). */
static struct spread bench_type(uint32_t t, int rounds, float *out, struct rng *r)
{
	unsigned char *q = random_matrix(t, r);
	size_t bpr = COLS / ggml_block_values(t), rb = bpr * ggml_block_bytes(t);
	int per = ROWS / SLICE, n = rounds * per;
	double *ref = xmalloc((size_t)n * sizeof *ref), *fast = xmalloc((size_t)n * sizeof *fast);
	double *ratio = xmalloc((size_t)n * sizeof *ratio), rounds_ratio[32];
	for (int k = 0; k < n; k++) {
		const unsigned char *src = q + (size_t)(k % per) * SLICE * rb;
		ggml_dequantize(t, src, out, SLICE * bpr); /* warm */
		double t0 = now_ms();
		ggml_dequantize_ref(t, src, out, SLICE * bpr);
		double t1 = now_ms();
		ggml_dequantize(t, src, out, SLICE * bpr);
		double t2 = now_ms();
		ref[k] = (t1 - t0) * 1e6 / (SLICE * COLS);
		fast[k] = (t2 - t1) * 1e6 / (SLICE * COLS);
		ratio[k] = fast[k] / ref[k];
	}
	for (int i = 0; i < rounds; i++)
		rounds_ratio[i] = median(ratio + (size_t)i * per, per);
	struct spread s = spread_of(rounds_ratio, rounds);
	printf("  %-5s %12.3f %12.3f %7.3f (%.3f..%.3f)\n", ggml_type_name(t), median(ref, n),
	       median(fast, n), s.med, s.min, s.max);
	free(q);
	free(ref);
	free(fast);
	free(ratio);
	return s;
}

int main(int argc, char **argv)
{
	double t_start = now_ms();
	int rounds = argc > 1 ? atoi(argv[1]) : ROUNDS_DEFAULT;
	if (rounds < 1 || rounds > 32) {
		fprintf(stderr, "usage: bench_quant [ROUNDS (1-32)]\n");
		return 2;
	}
	engine_set_threads(0);
	print_machine();
	printf("\nggml_dequantize over ggml_dequantize_ref, %d x %d matrices, slices of %d rows "
	       "in cache, %d rounds\n", ROWS, COLS, SLICE, rounds);
	printf("  %-5s %12s %12s %s\n", "type", "ref ns/val", "fast ns/val",
	       "fast / ref (min..max)");
	float *out = xmalloc_aligned((size_t)SLICE * COLS * sizeof *out);
	struct rng r;
	rng_seed(&r, 12);
	struct spread q4k = { 0 };
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		struct spread s = bench_type(types[i], rounds, out, &r);
		if (types[i] == GGML_Q4_K)
			q4k = s;
	}
	free(out);
	printf("\n");
	bench_summary_row("Q4_K ggml_dequantize over the scalar reference, 8-row slices", q4k, true,
			  0.25);
	print_end(t_start);
	return 0;
}
