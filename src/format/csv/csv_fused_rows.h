// The fused numeric row loop (see sl_csv_fast_numeric), written once for the
// instruction sets that run it: csv_fused_avx512.c and csv_fused_avx2.c each
// include this file after defining CSV_FUSED_TARGET (the function attribute,
// __attribute__((target(...)))) and CSV_FUSED_ROWS (the loop's name), and
// then define the three functions declared below for their target.
// Where each field ends comes from the window of masks; a numeric field is
// then parsed from one 32-byte load by a fixed sequence of vector operations.
// It exists because the scalar loop spends most of a W1 load finding where
// each number ends digit by digit (branches that mispredict on numbers of 15
// to 18 digits). Anything not of the plain shape (exponents, 20+ digits,
// long fields, quotes inside numbers) goes to the scalar parsers, so every
// loop gives the same values.
//
// No include guard: included once per target.

// 32 digit lanes (values 0..9, lane 0 the most significant; lanes 19 and
// up zero) as the 19-digit number of lanes 0..18: pairs, fours and eights
// by multiply-add, then the three parts of 8, 8 and 3 digits.
CSV_FUSED_TARGET static inline uint64_t digits19(__m256i v) {
  const __m256i by10 = _mm256_set1_epi16(0x010A);       // bytes 10, 1
  const __m256i by100 = _mm256_set1_epi32(0x00010064);  // words 100, 1
  const __m256i by10k = _mm256_set1_epi32(0x00012710);  // words 10000, 1
  __m256i pairs = _mm256_maddubs_epi16(v, by10);
  __m256i fours = _mm256_madd_epi16(pairs, by100);
  __m256i eights = _mm256_madd_epi16(_mm256_packus_epi32(fours, fours), by10k);
  uint64_t lo = (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(eights));
  uint32_t hi = (uint32_t)_mm_cvtsi128_si32(_mm256_extracti128_si256(eights, 1));
  // lanes 16..23 as eight digits; only 16..18 can be non-zero
  return ((lo & 0xFFFFFFFFu) * 100000000 + (lo >> 32)) * 1000 + hi / 100000;
}

/// A numeric field's shape, from its masks.
struct csv_decimal_shape {
  uint32_t digits;      ///< bit i: byte i is a digit
  unsigned n;           ///< digits, 1 to 19
  unsigned int_digits;  ///< digits before the point (n when there is none)
  unsigned sign;        ///< 1 when the first byte is '-' or '+'
};

/// Whether the field of L bytes (L < 32) whose bytes are digits at the bits
/// of is_digit and points at those of is_point, first byte `first`, is an
/// optional sign then digits with at most one point, 1 to 19 digits; if so
/// its shape goes to *out.
CSV_FUSED_TARGET static inline int decimal_shape(uint32_t is_digit, uint32_t is_point,
                                                 unsigned first, unsigned L,
                                                 struct csv_decimal_shape* out) {
  unsigned sign = first == '-' || first == '+';
  uint32_t body = _bzhi_u32(~0u, L) & ~sign;
  uint32_t digits = body & is_digit, other = body & ~is_digit;
  if ((other & ~is_point) != 0 || (other & (other - 1)) != 0) return 0;
  unsigned n = (unsigned)__builtin_popcount(digits);
  if (n - 1 > 18) return 0;  // no digits, or more than 19
  out->digits = digits;
  out->n = n;
  out->int_digits = other != 0 ? (unsigned)__builtin_ctz(other) - sign : n;
  out->sign = sign;
  return 1;
}

// Bytes ahead of a window for load_window to prefetch (256 to 2048 measured
// alike; a prefetch past the input's end is harmless).
#define CSV_PREFETCH_AHEAD 512

/// The stop bytes (delimiter, line feed, quote, CR) and the quotes of the 64
/// bytes at w, as masks.
CSV_FUSED_TARGET static inline void load_window(const uint8_t* w, const struct csv_fused_plan* f,
                                                uint64_t* stops, uint64_t* quotes);
/// The field of L bytes (L < 32) at q, which has 32 readable bytes: 1 with
/// its value, 0 when it is not of the plain shape (the scalar parsers decide).
CSV_FUSED_TARGET static inline int field_double(const uint8_t* q, unsigned L, double* out);
CSV_FUSED_TARGET static inline int field_int(const uint8_t* q, unsigned L, int64_t* out);

// Where fields end is read from a 64-byte window of masks that slides
// forward only when a field starts past its middle, so crossing a field
// costs a shift and a count, not a load and compares (W4's rows are twelve
// short fields, ten of them skipped). The loads of the fields' bytes for
// parsing are off that chain.
CSV_FUSED_TARGET int64_t CSV_FUSED_ROWS(const struct csv_fused_plan* f, const uint8_t** pos,
                                        const uint8_t* end, const uint8_t* limit, int64_t rows,
                                        int64_t want) {
  const int64_t nc = f->n_cols;
  const uint8_t* p = *pos;
  // The window [w, w + 64) and its masks.
  const uint8_t* w = p;
  uint64_t stops, quotes;
  if (end - p < 64) goto done;
  load_window(w, f, &stops, &quotes);
  while (rows < want && p < limit) {
    if (f->comment != 0 && *p == f->comment) break;
    const uint8_t* q = p;
    for (int64_t c = 0; c < nc; ++c) {
      uint64_t off = (uint64_t)(q - w);
      if (off > 32) {
        if (end - q < 64) goto done;
        w = q;
        off = 0;
        load_window(w, f, &stops, &quotes);
      }
      uint64_t ahead = stops >> off;  // off <= 32: at least 32 bytes of q in the window
      unsigned L = ahead != 0 ? (unsigned)__builtin_ctzll(ahead) : 64;
      const uint8_t* t = q + L;
      switch (f->kind[c]) {
        case CSV_FUSED_F64: {
          if (L >= 32) goto done;
          double v;
          if (!field_double(q, L, &v) && sl_csv_scan_double(q, t, &v) != t) goto done;
          memcpy(f->out[c] + rows * 8, &v, 8);
          break;
        }
        case CSV_FUSED_I64:
        case CSV_FUSED_I32: {
          if (L >= 32) goto done;
          int64_t v;
          if (!field_int(q, L, &v) && sl_csv_scan_int64(q, t, &v) != t) goto done;
          if (f->kind[c] == CSV_FUSED_I64) {
            memcpy(f->out[c] + rows * 8, &v, 8);
          } else {
            if (v < INT32_MIN || v > INT32_MAX) goto done;
            int32_t v32 = (int32_t)v;
            memcpy(f->out[c] + rows * 4, &v32, 4);
          }
          break;
        }
        default:
          if (L == 0 && f->quote != 0 && *q == f->quote) {
            // Quoted (W4's ids): the closing quote is the next one in the
            // window, unless a quote follows it ("" inside) or the window
            // ends first; then the search goes on in the bytes.
            uint64_t after = quotes >> off >> 1;  // bit k: a quote at q + 1 + k
            unsigned close = after != 0 ? (unsigned)__builtin_ctzll(after) + 1 : 64;
            if (off + close + 1 < 64 && (after >> close & 1) == 0) {
              t = q + close + 1;
            } else {
              t = csv_skip_quoted(q, end, f->quote);
              if (t == NULL) goto done;
            }
          } else {
            if (L + off >= 64) goto done;  // a long field: the scalar loop crosses it
            if (*t == f->quote || *t == '\r') goto done;
            if (c == 0 && L == 0 && *t != f->delim) goto done;  // an empty line
          }
      }
      q = csv_fused_next(t, end, c + 1 == nc, f->delim);
      if (q == NULL) goto done;
    }
    rows++;
    p = q;
  }
done:
  *pos = p;
  return rows;
}
