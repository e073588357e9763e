/*
 * bench_held.c — products with weights held as stored (held.h) against
 * the same product with F32 weights, on the matrices of published shapes.
 *
 * For each matrix (OC x IC) and each kind (F32 through matmul_forward; F16,
 * BF16, Q8_0 and Q4_K through held_matmul: 16-bit rows by gemmw.h where it
 * is built, and BF16 once more through F32 tiles and sgemm, "BF16 tiles",
 * held_use_gemmw off), in paired rounds:
 *   prefill  N = 256 rows: the time against the F32 product's in the same
 *            round (the paired ratio), and GFLOP/s;
 *   decode   N = 1 row: the time against the F32 product's, and the
 *            weight bytes streamed per second.
 * OpenBLAS's BF16 product (cblas_sbgemm, fast where the CPU has
 * AVX512-BF16) would round the input rows to BF16 as well; the bench says
 * whether the OpenBLAS it runs with has it (Debian's 0.3.21 is built
 * without BUILD_BFLOAT16, so it is not measured there).
 *
 * Summary rows: the held BF16 prefill product of the Llama-3-8B MLP
 * matrix against F32's (target <= 1.1x: at worst a tile's conversion, one
 * read of the weights per pass), and the held BF16 decode product against
 * F32's (target <= 1.0x: half the bytes to stream).
 *
 *   bench_held [ROUNDS]
 */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "bench_common.h"

#include "held.h"
#include "ops.h"
#include "quant.h"

#define ROUNDS_DEFAULT 7
#define N_PREFILL 256

struct shape {
	const char *name;
	int oc, ic;
};

static const struct shape shapes[] = {
	{ "Qwen2.5-0.5B gate|up (9728 x 896)", 9728, 896 },
	{ "Llama-3-8B q_proj (4096 x 4096)", 4096, 4096 },
	{ "Llama-3-8B gate (14336 x 4096)", 14336, 4096 },
};

enum kind { K_F32, K_F16, K_BF16, K_BF16_TILES, K_Q8_0, K_Q4_K, N_KINDS };
static const char *const kind_name[N_KINDS] = { "F32 sgemm", "F16 held", "BF16 held",
						"BF16 tiles", "Q8_0 held", "Q4_K held" };
static const uint32_t kind_type[N_KINDS] = { GGML_F32, GGML_F16, GGML_BF16, GGML_BF16,
					     GGML_Q8_0, GGML_Q4_K };

/* Fills a held part of type t with seeded values near w's (16-bit types:
 * w rounded; block types: random blocks with small finite scales). */
static void fill_part(struct held_mat *h, uint32_t t, const float *w, struct rng *r)
{
	unsigned char *d = held_add_part(h, 0, h->rows, t);
	size_t n = (size_t)h->rows * h->cols, rb = held_row_bytes(t, h->cols);
	if (t == GGML_F16 || t == GGML_BF16) {
		uint16_t *x = (uint16_t *)d;
		for (size_t i = 0; i < n; i++) {
			uint32_t u;
			memcpy(&u, &w[i], 4);
			x[i] = t == GGML_F16 ? f32_to_f16(w[i]) : (uint16_t)(u >> 16);
		}
		return;
	}
	for (size_t i = 0; i < (size_t)h->rows * rb; i++)
		d[i] = (unsigned char)rng_u32(r);
	size_t bb = ggml_block_bytes(t), blocks = (size_t)h->rows * rb / bb;
	for (size_t b = 0; b < blocks; b++) { /* d (and dmin) finite and small */
		unsigned char *blk = d + b * bb;
		uint16_t s = f32_to_f16(0.001f * rng_uniform(r));
		if (t == GGML_Q8_0) {
			memcpy(blk, &s, 2);
		} else { /* Q4_K: d, dmin first */
			memcpy(blk, &s, 2);
			memcpy(blk + 2, &s, 2);
		}
	}
}

struct operands {
	const struct shape *s;
	float *w, *in, *out;
	struct held_mat h[N_KINDS];
};

static void operands_init(struct operands *o, const struct shape *s)
{
	struct rng r;
	rng_seed(&r, 11);
	size_t n = (size_t)s->oc * s->ic;
	o->s = s;
	o->w = xmalloc_aligned(n * sizeof(float));
	o->in = xmalloc_aligned((size_t)N_PREFILL * s->ic * sizeof(float));
	o->out = xmalloc_aligned((size_t)N_PREFILL * s->oc * sizeof(float));
	for (size_t i = 0; i < n; i++)
		o->w[i] = 0.02f * (rng_uniform(&r) - 0.5f);
	for (size_t i = 0; i < (size_t)N_PREFILL * s->ic; i++)
		o->in[i] = rng_uniform(&r) - 0.5f;
	for (int k = K_F16; k < N_KINDS; k++) {
		o->h[k] = (struct held_mat){ .rows = s->oc, .cols = s->ic };
		if (held_row_bytes(kind_type[k], s->ic))
			fill_part(&o->h[k], kind_type[k], o->w, &r);
	}
}

static void operands_free(struct operands *o)
{
	for (int k = 0; k < N_KINDS; k++)
		held_free(&o->h[k]);
	free(o->w);
	free(o->in);
	free(o->out);
}

/* One product of kind k over N rows into o->out. */
static void product(struct operands *o, enum kind k, int N)
{
	int OC = o->s->oc, IC = o->s->ic;
	if (k == K_F32)
		matmul_forward(o->out, o->in, o->w, NULL, N, IC, OC);
	held_use_gemmw(k != K_BF16_TILES);
	if (k != K_F32)
		held_matmul(o->out, o->in, &o->h[k], NULL, N);
	held_use_gemmw(true);
}

static double timed(struct operands *o, enum kind k, int N, int reps)
{
	double t0 = now_ms();
	for (int i = 0; i < reps; i++)
		product(o, k, N);
	return (now_ms() - t0) / reps;
}

/* Paired rounds of shape s: each kind's time against F32's in the round. */
static void bench_shape(const struct shape *s, int rounds, struct spread *pre_bf16,
			struct spread *dec_bf16)
{
	struct operands o;
	operands_init(&o, s);
	double flops = 2.0 * N_PREFILL * s->oc * s->ic;
	double ratio[2][N_KINDS][32], ms[2][N_KINDS][32];
	int Ns[2] = { N_PREFILL, 1 };
	for (int r = 0; r < rounds; r++)
		for (int p = 0; p < 2; p++) {
			int reps = p ? 20 : 2;
			for (int k = 0; k < N_KINDS; k++) {
				if (k != K_F32 && !o.h[k].n_parts)
					continue; /* a row is not whole blocks of the type */
				product(&o, (enum kind)k, Ns[p]); /* warm */
				ms[p][k][r] = timed(&o, (enum kind)k, Ns[p], reps);
			}
			for (int k = 0; k < N_KINDS; k++)
				ratio[p][k][r] = ms[p][k][r] / ms[p][K_F32][r];
		}
	printf("\n%s\n", s->name);
	printf("  %-12s %10s %9s %12s %10s %9s %10s\n", "kind", "N=256 ms", "GFLOP/s", "x F32",
	       "N=1 ms", "GB/s", "x F32");
	for (int k = 0; k < N_KINDS; k++) {
		if (k != K_F32 && !o.h[k].n_parts) {
			printf("  %-12s (%d columns are not whole blocks of it)\n", kind_name[k], s->ic);
			continue;
		}
		struct spread a = spread_of(ratio[0][k], rounds), b = spread_of(ratio[1][k], rounds);
		double pm = median(ms[0][k], rounds), dm = median(ms[1][k], rounds);
		double bytes = k == K_F32 ? 4.0 * s->oc * s->ic : (double)held_bytes(&o.h[k]);
		printf("  %-12s %10.2f %9.1f %5.2f (%.2f..%.2f) %8.3f %9.1f %5.2f (%.2f..%.2f)\n",
		       kind_name[k], pm, flops / pm / 1e6, a.med, a.min, a.max, dm,
		       bytes / dm / 1e6, b.med, b.min, b.max);
		if (k == K_BF16) {
			*pre_bf16 = a;
			*dec_bf16 = b;
		}
	}
	operands_free(&o);
}

int main(int argc, char **argv)
{
	double t_start = now_ms();
	int rounds = argc > 1 ? atoi(argv[1]) : ROUNDS_DEFAULT;
	if (rounds < 1 || rounds > 32) {
		fprintf(stderr, "usage: bench_held [ROUNDS (1-32)]\n");
		return 2;
	}
	engine_set_threads(0);
	print_machine();
	printf("  avx512_bf16: %s; cblas_sbgemm %s\n", cpu_has_flag("avx512_bf16") ? "yes" : "no",
	       dlsym(RTLD_DEFAULT, "cblas_sbgemm") ? "in this OpenBLAS (not measured here)"
						    : "not in this OpenBLAS (built without BUILD_BFLOAT16)");
	printf("\nproducts out = in W^T, %d paired rounds (each kind's time over F32's in the "
	       "round: median (min..max))\n", rounds);
	struct spread pre = { 0 }, dec = { 0 };
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		struct spread p, d;
		bench_shape(&shapes[i], rounds, &p, &d);
		if (i == 2) {
			pre = p;
			dec = d;
		}
	}
	held_scratch_free();
	printf("\n");
	bench_summary_row("held BF16 product, 8B MLP shape, N = 256, over F32 sgemm", pre, true,
			  1.1);
	bench_summary_row("held BF16 product, 8B MLP shape, N = 1, over F32 sgemv", dec, true, 1.0);
	print_end(t_start);
	return 0;
}
