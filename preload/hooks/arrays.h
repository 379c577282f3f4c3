/*
 * CUDA arrays (format.h, CT_KIND_ARRAY): the bytes an array's extent and
 * element size make, from the call's own arguments (no CUDA call of the
 * shim's). Included after <cuda.h> and <cuda_runtime_api.h> by the units
 * that expand hooks.def's array rows.
 */
#ifndef CT_HOOKS_ARRAYS_H
#define CT_HOOKS_ARRAYS_H

#include <stdint.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

/*
 * Bytes of an array of width x height x depth elements of elem bytes with
 * levels mipmap levels (each level halves every extent that is not 0, down to
 * 1; a layered array keeps its depth, the layer count). height or depth 0
 * count as 1. Saturates instead of overflowing.
 */
static inline uint64_t ct_array_bytes(uint64_t w, uint64_t h, uint64_t d, uint64_t elem, unsigned levels,
				      int layered)
{
	uint64_t total = 0;
	if (!levels)
		levels = 1;
	for (unsigned l = 0; l < levels && l < 64; l++) {
		uint64_t lw = w >> l ? w >> l : 1, lh = h ? (h >> l ? h >> l : 1) : 1,
			 ld = d ? (layered ? d : (d >> l ? d >> l : 1)) : 1, b;
		if (__builtin_mul_overflow(lw, lh, &b) || __builtin_mul_overflow(b, ld, &b) ||
		    __builtin_mul_overflow(b, elem, &b) || __builtin_add_overflow(total, b, &total))
			return UINT64_MAX;
	}
	return total;
}

/* Bytes of one element of a runtime channel format (the channels' bits), 0 when unknown. */
static inline uint64_t ct_channel_bytes(const struct cudaChannelFormatDesc *f)
{
	if (!f || f->x < 0 || f->y < 0 || f->z < 0 || f->w < 0)
		return 0;
	return ((uint64_t)f->x + (uint64_t)f->y + (uint64_t)f->z + (uint64_t)f->w) / 8;
}

/* Bytes of one element of a driver array format with channels channels, 0 when unknown. */
static inline uint64_t ct_cu_format_bytes(CUarray_format f, unsigned channels)
{
	uint64_t b;
	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		b = 1;
		break;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		b = 2;
		break;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		b = 4;
		break;
	default:
		return 0;
	}
	return channels <= 4 ? b * channels : 0;
}

/* Record the array's extent in the event (format.h, CT_KIND_ARRAY). */
#define CT_ARRAY_EXTENT(c, w, h, d, elem, levels)                                                       \
	do {                                                                                            \
		(c).aux = (uint64_t)(uint32_t)(w) | (uint64_t)(uint32_t)(h) << 32;                      \
		(c).stream = (uint64_t)(uint32_t)(d) | ((uint64_t)(elem) & 0xffff) << 32 |               \
			     ((uint64_t)(levels) & 0xffff) << 48;                                       \
	} while (0)

#endif
