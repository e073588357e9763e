/*
 * fastmath.h — exp and tanh for the hot element-wise loops, written so that
 * the compiler vectorises them (glibc's expf/tanhf are scalar calls).
 *
 * fast_expf: Cody-Waite range reduction x = n ln2 + r, |r| <= ln2/2, and a
 * degree-6 polynomial for e^r (the Cephes expf coefficients); relative error
 * below 2e-7 over the clamped range [-87.3, 88.3], which is where float exp
 * is finite and normal.  Inputs below the range give about 1e-38, above it
 * about 2e38 (never Inf or NaN for finite inputs); NaN gives NaN.
 */
#ifndef ATTNSCOPE_FASTMATH_H
#define ATTNSCOPE_FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float fast_expf(float in)
{
	/* clamped so that the exponent below stays an int; a NaN goes to the
	 * low end here (the conversion of a NaN would be undefined) and is
	 * returned as it came at the end */
	float x = in > -87.3f ? in : -87.3f;
	x = x < 88.3f ? x : 88.3f;
	float n = rintf(x * 1.44269504088896341f);
	float r = x - n * 0.693359375f + n * 2.12194440e-4f;
	float p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1.0f;
	int32_t bits = ((int32_t)n + 127) << 23;
	float scale;
	memcpy(&scale, &bits, sizeof scale);
	return in == in ? p * scale : in;
}

/* tanh(x) = 1 - 2 / (e^{2x} + 1); absolute error below 3e-7. */
static inline float fast_tanhf(float x)
{
	return 1.0f - 2.0f / (fast_expf(2.0f * x) + 1.0f);
}

/* The largest of x[0..n), -INFINITY when n <= 0: a reduction the compiler
 * vectorises (a running "x > mx ? x : mx" carries a dependency from one
 * element to the next and runs about 4x slower).  Exact: the same value as
 * a scalar loop for finite inputs. */
static inline float fast_maxf(const float *x, int n)
{
	float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
	for (int j = 0; j < n; j++)
		mx = mx > x[j] ? mx : x[j];
	return mx;
}

#endif
