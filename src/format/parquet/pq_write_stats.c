// Column chunk statistics: null_count and min_value / max_value in the sort
// order the column's logical type implies (signed or unsigned integers,
// IEEE floats ignoring NaN with -0.0 / +0.0 at the bounds as Arrow C++ does,
// unsigned lexicographic bytes, big-endian two's complement decimals,
// float16). Bounds are exact (never truncated); a byte-array bound longer
// than 4096 bytes is left out and the other kept, as Arrow C++ does with its
// default max_statistics_size (readers then know one side only).
#include <math.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "format/parquet/pq_write_internal.h"

#define PQW_MAX_STAT_BYTES 4096

static float half_to_float(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  float v;
  if (exp == 0) v = ldexpf((float)frac, -24);
  else if (exp == 31) v = frac ? NAN : INFINITY;
  else v = ldexpf((float)(frac | 0x400), exp - 25);
  return sign ? -v : v;
}

static int cmp_decimal_be(const uint8_t* a, const uint8_t* b, int64_t w) {
  if (w == 0) return 0;
  if (a[0] != b[0]) return (int8_t)a[0] < (int8_t)b[0] ? -1 : 1;
  int c = memcmp(a + 1, b + 1, (size_t)(w - 1));
  return c;
}

static int cmp_bytes(const struct pqw_ba* a, const struct pqw_ba* b) {
  int64_t n = a->len < b->len ? a->len : b->len;
  int c = n > 0 ? memcmp(a->ptr, b->ptr, (size_t)n) : 0;
  if (c != 0) return c;
  return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}

int sl_pqw_stats_compute(const struct pqw_leaf* leaf, const uint8_t* values, int64_t n,
                      int64_t null_count, struct pqw_chunk* chunk, struct sluice_error* error) {
  struct pq_statistics* st = &chunk->meta.statistics;
  sl_pq_statistics_init(st);
  st->present = 1;
  st->null_count = null_count;
  if (n == 0 || leaf->order == PQW_ORD_NONE) return 0;
  uint8_t minb[32], maxb[32];
  const uint8_t* minp = minb;
  const uint8_t* maxp = maxb;
  int64_t size = 0;
  int found = 1;
  switch (leaf->type) {
    case PQ_BOOLEAN: {
      uint8_t lo = 1, hi = 0;
      for (int64_t i = 0; i < n; ++i) {
        lo &= values[i];
        hi |= values[i];
      }
      minb[0] = lo;
      maxb[0] = hi;
      size = 1;
      break;
    }
    case PQ_INT32: {
      const int32_t* v = (const int32_t*)(const void*)values;
      if (leaf->order == PQW_ORD_UNSIGNED) {
        uint32_t lo = (uint32_t)v[0], hi = lo;
        for (int64_t i = 1; i < n; ++i) {
          uint32_t x = (uint32_t)v[i];
          lo = x < lo ? x : lo;
          hi = x > hi ? x : hi;
        }
        memcpy(minb, &lo, 4);
        memcpy(maxb, &hi, 4);
      } else {
        int32_t lo = v[0], hi = lo;
        for (int64_t i = 1; i < n; ++i) {
          lo = v[i] < lo ? v[i] : lo;
          hi = v[i] > hi ? v[i] : hi;
        }
        memcpy(minb, &lo, 4);
        memcpy(maxb, &hi, 4);
      }
      size = 4;
      break;
    }
    case PQ_INT64: {
      const int64_t* v = (const int64_t*)(const void*)values;
      if (leaf->order == PQW_ORD_UNSIGNED) {
        uint64_t lo = (uint64_t)v[0], hi = lo;
        for (int64_t i = 1; i < n; ++i) {
          uint64_t x = (uint64_t)v[i];
          lo = x < lo ? x : lo;
          hi = x > hi ? x : hi;
        }
        memcpy(minb, &lo, 8);
        memcpy(maxb, &hi, 8);
      } else {
        int64_t lo = v[0], hi = lo;
        for (int64_t i = 1; i < n; ++i) {
          lo = v[i] < lo ? v[i] : lo;
          hi = v[i] > hi ? v[i] : hi;
        }
        memcpy(minb, &lo, 8);
        memcpy(maxb, &hi, 8);
      }
      size = 8;
      break;
    }
    case PQ_FLOAT: {
      const float* v = (const float*)(const void*)values;
      // NaN compares false, so it never becomes a bound (and the loop
      // vectorizes as min/max instructions).
      float lo = INFINITY, hi = -INFINITY;
      for (int64_t i = 0; i < n; ++i) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
      }
      found = lo <= hi;
      if (lo == 0.0f) lo = -0.0f;
      if (hi == 0.0f) hi = 0.0f;
      memcpy(minb, &lo, 4);
      memcpy(maxb, &hi, 4);
      size = 4;
      break;
    }
    case PQ_DOUBLE: {
      const double* v = (const double*)(const void*)values;
      // NaN compares false, so it never becomes a bound (and the loop
      // vectorizes as min/max instructions).
      double lo = INFINITY, hi = -INFINITY;
      for (int64_t i = 0; i < n; ++i) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
      }
      found = lo <= hi;
      if (lo == 0.0) lo = -0.0;
      if (hi == 0.0) hi = 0.0;
      memcpy(minb, &lo, 8);
      memcpy(maxb, &hi, 8);
      size = 8;
      break;
    }
    case PQ_BYTE_ARRAY: {
      const struct pqw_ba* v = (const struct pqw_ba*)(const void*)values;
      const struct pqw_ba* lo = &v[0];
      const struct pqw_ba* hi = &v[0];
      for (int64_t i = 1; i < n; ++i) {
        if (cmp_bytes(&v[i], lo) < 0) lo = &v[i];
        if (cmp_bytes(&v[i], hi) > 0) hi = &v[i];
      }
      int keep_lo = lo->len <= PQW_MAX_STAT_BYTES, keep_hi = hi->len <= PQW_MAX_STAT_BYTES;
      if (!keep_lo && !keep_hi) return 0;
      int64_t lo_len = keep_lo ? lo->len : 0, hi_len = keep_hi ? hi->len : 0;
      // One byte more than the bounds, so that two empty strings still own
      // an allocation of the size recorded.
      chunk->stat_size = lo_len + hi_len + 1;
      chunk->stat_bytes = sl_alloc(chunk->bytes.alloc, (size_t)chunk->stat_size);
      if (chunk->stat_bytes == NULL)
        return sl_error_set(error, ENOMEM, "parquet writer: out of memory (statistics)");
      if (lo_len > 0) memcpy(chunk->stat_bytes, lo->ptr, (size_t)lo_len);
      if (hi_len > 0) memcpy(chunk->stat_bytes + lo_len, hi->ptr, (size_t)hi_len);
      if (keep_lo) {
        st->min_value = (struct pq_bytes){chunk->stat_bytes, lo_len, 1};
        st->is_min_value_exact = 1;
      }
      if (keep_hi) {
        st->max_value = (struct pq_bytes){chunk->stat_bytes + lo_len, hi_len, 1};
        st->is_max_value_exact = 1;
      }
      return 0;
    }
    case PQ_FIXED_LEN_BYTE_ARRAY: {
      int64_t w = leaf->type_length;
      if (w > PQW_MAX_STAT_BYTES) return 0;
      int64_t lo = -1, hi = -1;
      float flo = 0, fhi = 0;
      for (int64_t i = 0; i < n; ++i) {
        const uint8_t* x = values + i * w;
        if (leaf->order == PQW_ORD_FLOAT16) {
          uint16_t h;
          memcpy(&h, x, 2);
          float f = half_to_float(h);
          if (isnan(f)) continue;
          if (lo < 0 || f < flo) { lo = i; flo = f; }
          if (hi < 0 || f > fhi) { hi = i; fhi = f; }
        } else if (leaf->order == PQW_ORD_DECIMAL_BE) {
          if (lo < 0 || cmp_decimal_be(x, values + lo * w, w) < 0) lo = i;
          if (hi < 0 || cmp_decimal_be(x, values + hi * w, w) > 0) hi = i;
        } else {
          if (lo < 0 || memcmp(x, values + lo * w, (size_t)w) < 0) lo = i;
          if (hi < 0 || memcmp(x, values + hi * w, (size_t)w) > 0) hi = i;
        }
      }
      if (lo < 0) return 0;
      minp = values + lo * w;
      maxp = values + hi * w;
      if (leaf->order == PQW_ORD_FLOAT16) {
        // -0.0 as the lower bound and +0.0 as the upper one, as for floats.
        memcpy(minb, minp, 2);
        memcpy(maxb, maxp, 2);
        if (flo == 0.0f) { minb[0] = 0x00; minb[1] = 0x80; }
        if (fhi == 0.0f) { maxb[0] = 0x00; maxb[1] = 0x00; }
        minp = minb;
        maxp = maxb;
      }
      size = w;
      break;
    }
    default:
      return 0;
  }
  if (!found) return 0;
  chunk->stat_size = 2 * size;
  chunk->stat_bytes = sl_alloc(chunk->bytes.alloc, (size_t)chunk->stat_size);
  if (chunk->stat_bytes == NULL)
    return sl_error_set(error, ENOMEM, "parquet writer: out of memory (statistics)");
  memcpy(chunk->stat_bytes, minp, (size_t)size);
  memcpy(chunk->stat_bytes + size, maxp, (size_t)size);
  st->min_value = (struct pq_bytes){chunk->stat_bytes, size, 1};
  st->max_value = (struct pq_bytes){chunk->stat_bytes + size, size, 1};
  st->is_min_value_exact = st->is_max_value_exact = 1;
  // The legacy min/max are defined with signed comparison: like Arrow C++
  // (pyarrow 26), fill them too where that is the column's order (booleans,
  // decimals and float16 included), for readers that know no other.
  if (leaf->order == PQW_ORD_SIGNED || leaf->order == PQW_ORD_FLOAT ||
      leaf->order == PQW_ORD_FLOAT16 || leaf->order == PQW_ORD_DECIMAL_BE ||
      leaf->type == PQ_BOOLEAN) {  // (false < true either way)
    st->min = st->min_value;
    st->max = st->max_value;
  }
  return 0;
}
