// Structural scanning: finds field and row boundaries.
//
// The fast path (no escape character) works on 64-byte blocks, simdcsv style:
// one bitmask each for quote, delimiter and line feed bytes; the prefix XOR of
// the quote mask gives "inside quotes" for every byte, so delimiters and line
// feeds inside quoted fields drop out without a per-byte state machine. Every
// quote byte toggles the quoting state; this matches RFC 4180 (a doubled
// quote toggles twice) and is exactly what the split planner's quote-parity
// pre-pass assumes, so serial and parallel reads agree on any input.
//
// The masks come from SSE2 (AVX2 when the CPU has it) or from a scalar loop
// that computes the same bits; the rest of the loop is shared, so results are
// identical by construction.
//
// With an escape character (backslash) a quote may not toggle, so parity is
// useless: a scalar state machine tokenizes, and the reader plans one split.
#include <stdio.h>
#include <string.h>

#include "csv_internal.h"
#include "core/sl_alloc.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CSV_HAVE_X86 1
#endif

void sl_csv_rows_init(struct csv_rows* r, const struct sluice_allocator* alloc) {
  memset(r, 0, sizeof *r);
  r->alloc = alloc;
}

void sl_csv_rows_free(struct csv_rows* r) {
  sl_free(r->alloc, r->fields, (size_t)r->cap_fields * sizeof *r->fields);
  sl_free(r->alloc, r->row_first, (size_t)(r->cap_rows + 1) * sizeof *r->row_first);
  sl_free(r->alloc, r->row_pos, (size_t)r->cap_rows * sizeof *r->row_pos);
  const struct sluice_allocator* a = r->alloc;
  const int64_t max_row_fields = r->max_row_fields;
  memset(r, 0, sizeof *r);
  r->alloc = a;
  r->max_row_fields = max_row_fields;
}

/// Room for `need` more fields. Only growing costs memory, so the row
/// being tokenized (from row_first[n_rows]) is held to max_row_fields here,
/// off the per-field path: the array stops within twice what the limit
/// allows, and the row is refused (by the caller, with its start).
static enum csv_tok_status grow_fields(struct csv_rows* r, int64_t need) {
  if (r->cap_fields - r->n_fields >= need) return CSV_TOK_OK;
  if (r->max_row_fields > 0 && r->row_first != NULL &&
      r->n_fields - r->row_first[r->n_rows] > r->max_row_fields)
    return CSV_TOK_TOO_MANY_FIELDS;
  int64_t cap = r->cap_fields < 1024 ? 1024 : r->cap_fields;
  while (cap - r->n_fields < need) {
    if (cap > (INT64_C(1) << 40)) return CSV_TOK_ENOMEM;
    cap *= 2;
  }
  struct csv_field* f = sl_alloc(r->alloc, (size_t)cap * sizeof *f);
  if (f == NULL) return CSV_TOK_ENOMEM;
  if (r->n_fields > 0) memcpy(f, r->fields, (size_t)r->n_fields * sizeof *f);
  sl_free(r->alloc, r->fields, (size_t)r->cap_fields * sizeof *r->fields);
  r->fields = f;
  r->cap_fields = cap;
  return CSV_TOK_OK;
}

static int grow_rows(struct csv_rows* r, int64_t need) {
  if (r->cap_rows - r->n_rows >= need) return 0;
  int64_t cap = r->cap_rows < 256 ? 256 : r->cap_rows;
  while (cap - r->n_rows < need) {
    if (cap > (INT64_C(1) << 40)) return -1;
    cap *= 2;
  }
  int64_t* first = sl_alloc(r->alloc, (size_t)(cap + 1) * sizeof *first);
  int64_t* pos = sl_alloc(r->alloc, (size_t)cap * sizeof *pos);
  if (first == NULL || pos == NULL) {
    sl_free(r->alloc, first, (size_t)(cap + 1) * sizeof *first);
    sl_free(r->alloc, pos, (size_t)cap * sizeof *pos);
    return -1;
  }
  if (r->row_first != NULL) memcpy(first, r->row_first, (size_t)(r->n_rows + 1) * sizeof *first);
  else first[0] = 0;
  if (r->n_rows > 0) memcpy(pos, r->row_pos, (size_t)r->n_rows * sizeof *pos);
  sl_free(r->alloc, r->row_first, (size_t)(r->cap_rows + 1) * sizeof *r->row_first);
  sl_free(r->alloc, r->row_pos, (size_t)r->cap_rows * sizeof *r->row_pos);
  r->row_first = first;
  r->row_pos = pos;
  r->cap_rows = cap;
  return 0;
}

/// Room for `fields` more fields and `rows` more rows: CSV_TOK_OK, ENOMEM,
/// or TOO_MANY_FIELDS for the row that starts at row_start (*err_pos).
static inline enum csv_tok_status grow(struct csv_rows* r, int64_t fields, int64_t rows,
                                       int64_t row_start, int64_t* err_pos) {
  enum csv_tok_status st = grow_fields(r, fields);
  if (st == CSV_TOK_OK && grow_rows(r, rows) != 0) st = CSV_TOK_ENOMEM;
  if (st == CSV_TOK_TOO_MANY_FIELDS) *err_pos = row_start;
  return st;
}

/* ---- bitmasks ------------------------------------------------------------- */

struct csv_masks {
  uint64_t quote, delim, nl;
};

static inline uint64_t prefix_xor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

static inline void masks_scalar(const uint8_t* p, uint8_t quote, uint8_t delim,
                                struct csv_masks* m) {
  uint64_t q = 0, d = 0, n = 0;
  for (int i = 0; i < 64; ++i) {
    q |= (uint64_t)(p[i] == quote) << i;
    d |= (uint64_t)(p[i] == delim) << i;
    n |= (uint64_t)(p[i] == '\n') << i;
  }
  m->quote = quote != 0 ? q : 0;
  m->delim = d;
  m->nl = n;
}

#ifdef CSV_HAVE_X86
static inline uint64_t eq16x4(__m128i a, __m128i b, __m128i c, __m128i e, __m128i v) {
  uint64_t r0 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a, v));
  uint64_t r1 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, v));
  uint64_t r2 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(c, v));
  uint64_t r3 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(e, v));
  return r0 | (r1 << 16) | (r2 << 32) | (r3 << 48);
}

static inline void masks_sse2(const uint8_t* p, uint8_t quote, uint8_t delim,
                              struct csv_masks* m) {
  __m128i a = _mm_loadu_si128((const __m128i*)p);
  __m128i b = _mm_loadu_si128((const __m128i*)(p + 16));
  __m128i c = _mm_loadu_si128((const __m128i*)(p + 32));
  __m128i e = _mm_loadu_si128((const __m128i*)(p + 48));
  m->quote = quote != 0 ? eq16x4(a, b, c, e, _mm_set1_epi8((char)quote)) : 0;
  m->delim = eq16x4(a, b, c, e, _mm_set1_epi8((char)delim));
  m->nl = eq16x4(a, b, c, e, _mm_set1_epi8('\n'));
}

__attribute__((target("avx2"))) static inline uint64_t eq32x2(__m256i a, __m256i b,
                                                               __m256i v) {
  uint64_t r0 = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, v));
  uint64_t r1 = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, v));
  return r0 | (r1 << 32);
}

__attribute__((target("avx2"))) static inline void masks_avx2(const uint8_t* p, uint8_t quote,
                                                               uint8_t delim,
                                                               struct csv_masks* m) {
  __m256i a = _mm256_loadu_si256((const __m256i*)p);
  __m256i b = _mm256_loadu_si256((const __m256i*)(p + 32));
  m->quote = quote != 0 ? eq32x2(a, b, _mm256_set1_epi8((char)quote)) : 0;
  m->delim = eq32x2(a, b, _mm256_set1_epi8((char)delim));
  m->nl = eq32x2(a, b, _mm256_set1_epi8('\n'));
}
#endif

/* ---- the block tokenizer ---------------------------------------------------- */

// Ends the current row at line-feed position `at` (or end of input). Returns 1
// if the row was kept, 0 if it was a blank line.
static inline int end_row(struct csv_rows* out, int64_t row_start) {
  int64_t first = out->row_first[out->n_rows];
  const struct csv_field* last = &out->fields[out->n_fields - 1];
  if (out->n_fields - first == 1 && last->len == 0 && last->flags == 0) {
    out->n_fields = first;  // blank line
    return 0;
  }
  out->row_pos[out->n_rows] = row_start;
  out->n_rows++;
  out->row_first[out->n_rows] = out->n_fields;
  return 1;
}

// Without -mpopcnt the builtin is a library call; SWAR is as fast.
static inline int popcount_swar(uint64_t x) {
  x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
  x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
  x = (x + (x >> 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
  return (int)((x * UINT64_C(0x0101010101010101)) >> 56);
}

// The loop body is written once and instantiated per mask function, so the
// mask code inlines into each copy (an AVX2 function cannot inline into a
// non-AVX2 caller and vice versa).
#define CSV_TOKENIZE_BODY(MASKS, POPCOUNT)                                                \
  const uint8_t quote = d->quote, delim = d->delimiter, comment = d->comment;              \
  int64_t start = *pos, row_start = start, field_start = start, p = start;                 \
  int64_t rows_done = 0;                                                                   \
  uint64_t in_q = 0;                                                                        \
  uint32_t field_q = 0;                                                                    \
  uint64_t field_qn = 0; /* quote bytes of the open field in earlier blocks */              \
  uint8_t tail[64];                                                                         \
  while (p < end) {                                                                         \
    enum csv_tok_status grown = grow(out, 65, 65, row_start, err_pos);                    \
    if (grown != CSV_TOK_OK) return grown;                                                 \
    struct csv_masks m;                                                                     \
    int64_t avail = end - p;                                                                \
    if (avail >= 64) {                                                                      \
      MASKS(data + p, quote, delim, &m);                                                    \
    } else {                                                                                \
      memset(tail, 0, sizeof tail);                                                         \
      memcpy(tail, data + p, (size_t)avail);                                                \
      MASKS(tail, quote, delim, &m);                                                        \
      uint64_t valid = (UINT64_C(1) << avail) - 1;                                          \
      m.quote &= valid;                                                                     \
      m.delim &= valid;                                                                     \
      m.nl &= valid;                                                                        \
    }                                                                                       \
    uint64_t inside = prefix_xor(m.quote) ^ in_q;                                           \
    uint64_t structural = (m.delim | m.nl) & ~inside;                                       \
    in_q = (uint64_t)0 - (inside >> 63);                                                    \
    uint64_t qrem = m.quote;                                                                \
    while (structural != 0) {                                                               \
      int b = __builtin_ctzll(structural);                                                  \
      structural &= structural - 1;                                                         \
      int64_t at = p + b;                                                                   \
      uint64_t below = b == 0 ? 0 : (~UINT64_C(0) >> (64 - b));                             \
      uint64_t fbits = qrem & below;                                                        \
      uint32_t fq = field_q | (fbits != 0 ? CSV_FIELD_ESCAPED : 0u);                        \
      if (fq != 0 && field_qn + (uint64_t)POPCOUNT(fbits) == 2) fq |= CSV_FIELD_TWO_QUOTES; \
      qrem &= ~below;                                                                       \
      field_q = 0;                                                                          \
      field_qn = 0;                                                                         \
      if (at - field_start > INT32_MAX) {                                                   \
        *err_pos = row_start;                                                               \
        return CSV_TOK_TOO_LONG;                                                            \
      }                                                                                     \
      struct csv_field* f = &out->fields[out->n_fields++];                                 \
      f->pos = field_start;                                                                 \
      f->len = (int32_t)(at - field_start);                                                 \
      f->flags = fq;                                                                        \
      field_start = at + 1;                                                                 \
      if (((m.nl >> b) & 1) && f->len > 0 && data[at - 1] == '\r') f->len--;                \
      if (fq != 0) {                                                                        \
        int64_t bad = sl_csv_stray_quote(d, data + f->pos, f->len,                             \
                                      (fq & CSV_FIELD_TWO_QUOTES) != 0);                    \
        if (bad >= 0) {                                                                     \
          *err_pos = f->pos + bad;                                                          \
          return CSV_TOK_STRAY_QUOTE;                                                       \
        }                                                                                   \
      }                                                                                     \
      if ((m.nl >> b) & 1) {                                                                \
        rows_done += end_row(out, row_start);                                               \
        row_start = at + 1;                                                                 \
        if (rows_done >= max_rows || row_start >= stop || row_start - start >= max_bytes || \
            (comment != 0 && row_start < end && data[row_start] == comment)) {              \
          *pos = row_start; /* a comment line: sl_csv_tokenize skips it */                     \
          return CSV_TOK_OK;                                                                \
        }                                                                                   \
        grown = grow(out, 65, 65, row_start, err_pos);                                      \
        if (grown != CSV_TOK_OK) return grown;                                             \
      }                                                                                     \
    }                                                                                       \
    if (qrem != 0) {                                                                        \
      field_q = CSV_FIELD_ESCAPED;                                                          \
      field_qn += (uint64_t)POPCOUNT(qrem);                                                 \
    }                                                                                       \
    p += 64;                                                                                \
  }                                                                                         \
  if (in_q != 0) {                                                                          \
    *err_pos = row_start;                                                                   \
    return CSV_TOK_UNTERMINATED;                                                            \
  }                                                                                         \
  return finish_tail(d, out, data, row_start, field_start, end, field_q, pos, err_pos);

static enum csv_tok_status finish_tail(const struct csv_dialect* d, struct csv_rows* out,
                                       const uint8_t* data,
                                       int64_t row_start, int64_t field_start, int64_t end,
                                       uint32_t field_q, int64_t* pos, int64_t* err_pos) {
  *pos = end;
  if (field_start >= end && out->n_fields == out->row_first[out->n_rows]) return CSV_TOK_OK;
  enum csv_tok_status grown = grow(out, 1, 1, row_start, err_pos);
  if (grown != CSV_TOK_OK) return grown;
  if (end - field_start > INT32_MAX) {
    *err_pos = row_start;
    return CSV_TOK_TOO_LONG;
  }
  struct csv_field* f = &out->fields[out->n_fields++];
  f->pos = field_start;
  f->len = (int32_t)(end - field_start);
  f->flags = field_q;
  if (f->len > 0 && data[end - 1] == '\r') f->len--;
  if (field_q != 0 && !d->stray_text) {
    int64_t bad = sl_csv_stray_quote(d, data + f->pos, f->len, 0);
    if (bad >= 0) {
      *err_pos = f->pos + bad;
      return CSV_TOK_STRAY_QUOTE;
    }
  }
  end_row(out, row_start);
  return CSV_TOK_OK;
}

static enum csv_tok_status tokenize_scalar_masks(const struct csv_dialect* d,
                                                 const uint8_t* data, int64_t* pos,
                                                 int64_t end, int64_t stop, int64_t max_rows,
                                                 int64_t max_bytes, struct csv_rows* out,
                                                 int64_t* err_pos) {
  CSV_TOKENIZE_BODY(masks_scalar, popcount_swar)
}

#ifdef CSV_HAVE_X86
static enum csv_tok_status tokenize_sse2(const struct csv_dialect* d, const uint8_t* data,
                                         int64_t* pos, int64_t end, int64_t stop,
                                         int64_t max_rows, int64_t max_bytes,
                                         struct csv_rows* out, int64_t* err_pos) {
  CSV_TOKENIZE_BODY(masks_sse2, popcount_swar)
}

__attribute__((target("avx2,popcnt"))) static enum csv_tok_status tokenize_avx2(
    const struct csv_dialect* d, const uint8_t* data, int64_t* pos, int64_t end, int64_t stop,
    int64_t max_rows, int64_t max_bytes, struct csv_rows* out, int64_t* err_pos) {
  CSV_TOKENIZE_BODY(masks_avx2, __builtin_popcountll)
}
#endif

// Escape-character dialects, and stray_text (a quote opens quoting only at
// a field's start): a byte-at-a-time state machine. Otherwise the same field
// and row semantics as the block tokenizer.
static enum csv_tok_status tokenize_escape(const struct csv_dialect* d, const uint8_t* data,
                                           int64_t* pos, int64_t end, int64_t stop,
                                           int64_t max_rows, int64_t max_bytes,
                                           struct csv_rows* out, int64_t* err_pos) {
  const uint8_t quote = d->quote, delim = d->delimiter, esc = d->escape, comment = d->comment;
  const int stray_text = d->stray_text;
  int64_t start = *pos, row_start = start, field_start = start;
  int64_t rows_done = 0;
  int in_q = 0;
  uint32_t field_q = 0;
  enum csv_tok_status grown = grow(out, 2, 2, row_start, err_pos);
  if (grown != CSV_TOK_OK) return grown;
  for (int64_t p = start; p < end; ++p) {
    uint8_t c = data[p];
    if (esc != 0 && c == esc) {
      field_q = CSV_FIELD_ESCAPED;
      ++p;  // the next byte is literal (a trailing escape at the end stays)
      continue;
    }
    if (quote != 0 && c == quote) {
      if (stray_text) {
        if (!in_q && p != field_start) continue;  // text
        if (in_q && p + 1 < end && data[p + 1] == quote) {
          ++p;  // a doubled quote
          continue;
        }
      }
      in_q ^= 1;
      field_q = CSV_FIELD_ESCAPED;
      continue;
    }
    if (in_q || (c != delim && c != '\n')) continue;
    if (p - field_start > INT32_MAX) {
      *err_pos = row_start;
      return CSV_TOK_TOO_LONG;
    }
    struct csv_field* f = &out->fields[out->n_fields++];
    f->pos = field_start;
    f->len = (int32_t)(p - field_start);
    f->flags = field_q;
    field_q = 0;
    field_start = p + 1;
    if (c == '\n' && f->len > 0 && data[p - 1] == '\r') f->len--;
    if (f->flags != 0 && !stray_text) {
      int64_t bad = sl_csv_stray_quote(d, data + f->pos, f->len, 0);
      if (bad >= 0) {
        *err_pos = f->pos + bad;
        return CSV_TOK_STRAY_QUOTE;
      }
    }
    if (c == '\n') {
      rows_done += end_row(out, row_start);
      row_start = p + 1;
      if (rows_done >= max_rows || row_start >= stop || row_start - start >= max_bytes ||
          (comment != 0 && row_start < end && data[row_start] == comment)) {
        *pos = row_start;
        return CSV_TOK_OK;
      }
    }
    grown = grow(out, 2, 2, row_start, err_pos);
    if (grown != CSV_TOK_OK) return grown;
  }
  if (in_q) {
    *err_pos = row_start;
    return CSV_TOK_UNTERMINATED;
  }
  if (field_start > end) field_start = end;
  return finish_tail(d, out, data, row_start, field_start, end, field_q, pos, err_pos);
}

static enum csv_tok_status tokenize_rows(const struct csv_dialect* d, const uint8_t* data,
                                         int64_t* pos, int64_t end, int64_t stop,
                                         int64_t max_rows, int64_t max_bytes,
                                         struct csv_rows* out, int64_t* err_pos) {
  if (d->escape != 0 || d->stray_text) {
    return tokenize_escape(d, data, pos, end, stop, max_rows, max_bytes, out, err_pos);
  }
#ifdef CSV_HAVE_X86
  if (d->impl != CSV_IMPL_SCALAR) {
    if (d->impl != CSV_IMPL_SSE2 && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("popcnt")) {
      return tokenize_avx2(d, data, pos, end, stop, max_rows, max_bytes, out, err_pos);
    }
    return tokenize_sse2(d, data, pos, end, stop, max_rows, max_bytes, out, err_pos);
  }
#endif
  return tokenize_scalar_masks(d, data, pos, end, stop, max_rows, max_bytes, out, err_pos);
}

enum csv_tok_status sl_csv_tokenize(const struct csv_dialect* d, const uint8_t* data,
                                 int64_t* pos, int64_t end, int64_t stop, int64_t max_rows,
                                 int64_t max_bytes, struct csv_rows* out, int64_t* err_pos) {
  if (max_rows <= 0) max_rows = INT64_MAX;
  if (max_bytes <= 0) max_bytes = INT64_MAX;
  if (grow_rows(out, 1) != 0) return CSV_TOK_ENOMEM;
  if (d->comment == 0) {
    return tokenize_rows(d, data, pos, end, stop, max_rows, max_bytes, out, err_pos);
  }
  // The tokenizers return at a row start holding the comment character; the
  // comment line is skipped here (quotes in it mean nothing, as in
  // sl_csv_comment_transitions) and tokenizing resumes outside quotes.
  const int64_t start = *pos, rows_before = out->n_rows;
  for (;;) {
    while (*pos < end && data[*pos] == d->comment) {
      const uint8_t* nl = memchr(data + *pos, '\n', (size_t)(end - *pos));
      *pos = nl != NULL ? (nl - data) + 1 : end;
    }
    int64_t rows_done = out->n_rows - rows_before, used = *pos - start;
    if (*pos >= end || *pos >= stop || rows_done >= max_rows || used >= max_bytes) {
      return CSV_TOK_OK;
    }
    enum csv_tok_status st = tokenize_rows(d, data, pos, end, stop, max_rows - rows_done,
                                           max_bytes - used, out, err_pos);
    if (st != CSV_TOK_OK || *pos >= end || data[*pos] != d->comment) return st;
  }
}

#ifdef CSV_HAVE_X86
// Counting by byte lanes: each compare gives -1 where the byte matches, so
// subtracting it adds one per lane; at most 255 steps fit a lane before the
// lanes are summed (psadbw against zero). About three instructions per 32
// bytes, against a movemask and a population count per 16 before (the
// quote count over each split was a tenth of W4's CSV queries).
__attribute__((target("avx2"))) static int64_t count_byte_avx2(const uint8_t* data, int64_t* at,
                                                              int64_t n, uint8_t c) {
  const __m256i v = _mm256_set1_epi8((char)c), zero = _mm256_setzero_si256();
  int64_t i = *at, count = 0;
  while (n - i >= 32) {
    int64_t steps = (n - i) / 32;
    if (steps > 255) steps = 255;
    __m256i lanes = zero;
    for (int64_t k = 0; k < steps; ++k, i += 32) {
      __m256i x = _mm256_loadu_si256((const __m256i*)(const void*)(data + i));
      lanes = _mm256_sub_epi8(lanes, _mm256_cmpeq_epi8(x, v));
    }
    uint64_t sums[4];
    _mm256_storeu_si256((__m256i*)(void*)sums, _mm256_sad_epu8(lanes, zero));
    count += (int64_t)(sums[0] + sums[1] + sums[2] + sums[3]);
  }
  *at = i;
  return count;
}

static int64_t count_byte_sse2(const uint8_t* data, int64_t* at, int64_t n, uint8_t c) {
  const __m128i v = _mm_set1_epi8((char)c), zero = _mm_setzero_si128();
  int64_t i = *at, count = 0;
  while (n - i >= 16) {
    int64_t steps = (n - i) / 16;
    if (steps > 255) steps = 255;
    __m128i lanes = zero;
    for (int64_t k = 0; k < steps; ++k, i += 16) {
      __m128i x = _mm_loadu_si128((const __m128i*)(const void*)(data + i));
      lanes = _mm_sub_epi8(lanes, _mm_cmpeq_epi8(x, v));
    }
    uint64_t sums[2];
    _mm_storeu_si128((__m128i*)(void*)sums, _mm_sad_epu8(lanes, zero));
    count += (int64_t)(sums[0] + sums[1]);
  }
  *at = i;
  return count;
}
#endif

int64_t sl_csv_count_byte_impl(const uint8_t* data, int64_t n, uint8_t c, int impl) {
  // Most inputs have no quotes at all, or none in long stretches: libc's
  // memchr skips those fastest; counting starts at the first hit.
  if (n <= 0) return 0;
  const uint8_t* first = memchr(data, c, (size_t)n);
  if (first == NULL) return 0;
  int64_t count = 0, i = first - data;
#ifdef CSV_HAVE_X86
  if (impl != CSV_IMPL_SCALAR) {
    count += impl != CSV_IMPL_SSE2 && __builtin_cpu_supports("avx2")
                 ? count_byte_avx2(data, &i, n, c)
                 : count_byte_sse2(data, &i, n, c);
  }
#else
  (void)impl;
#endif
  for (; i < n; ++i) count += data[i] == c;
  return count;
}

int64_t sl_csv_count_byte(const uint8_t* data, int64_t n, uint8_t c) {
  return sl_csv_count_byte_impl(data, n, c, CSV_IMPL_AUTO);
}

// One step of the scanner (see enum csv_scan_state). Every quote byte
// toggles quoting (as in the tokenizers); a comment character matters only
// at a row start; a comment line ends at its line feed, whatever it holds.
static inline int scan_step(int state, uint8_t c, uint8_t quote, uint8_t comment) {
  switch (state) {
    case CSV_ST_COMMENT: return c == '\n' ? CSV_ST_LINE : CSV_ST_COMMENT;
    case CSV_ST_QUOTE: return quote != 0 && c == quote ? CSV_ST_OUT : CSV_ST_QUOTE;
    case CSV_ST_LINE:
      if (comment != 0 && c == comment) return CSV_ST_COMMENT;
      /* fall through */
    default:
      if (quote != 0 && c == quote) return CSV_ST_QUOTE;
      return c == '\n' ? CSV_ST_LINE : CSV_ST_OUT;
  }
}

int64_t sl_csv_next_row_start(const struct csv_dialect* d, const uint8_t* data, int64_t from,
                           int64_t end, int state) {
  if (from <= 0) return 0;
  if (d->comment == 0) {  // quote parity alone
    int in_quote = state == CSV_ST_QUOTE;
    for (int64_t p = from - 1; p < end; ++p) {
      uint8_t c = data[p];
      if (d->quote != 0 && c == d->quote) {
        in_quote ^= 1;
      } else if (c == '\n' && !in_quote) {
        return p + 1;
      }
    }
    return end;
  }
  for (int64_t p = from - 1; p < end; ++p) {
    state = scan_step(state, data[p], d->quote, d->comment);
    if (state == CSV_ST_LINE) return p + 1;
  }
  return end;
}

int64_t sl_csv_row_end(const struct csv_dialect* d, const uint8_t* data, int64_t from,
                       int64_t end) {
  // The tokenizers' rules (tokenize_escape's, which every dialect shares),
  // with nothing kept: an escape makes the next byte literal; a quote
  // toggles quoting, only at a field's start when stray quotes are text.
  int in_q = 0;
  int64_t field_start = from;
  for (int64_t p = from; p < end; ++p) {
    uint8_t c = data[p];
    if (d->escape != 0 && c == d->escape) {
      ++p;
    } else if (d->quote != 0 && c == d->quote) {
      if (d->stray_text && !in_q && p != field_start) continue;
      if (d->stray_text && in_q && p + 1 < end && data[p + 1] == d->quote) {
        ++p;
        continue;
      }
      in_q ^= 1;
    } else if (!in_q && c == d->delimiter) {
      field_start = p + 1;
    } else if (!in_q && c == '\n') {
      return p + 1;
    }
  }
  return -1;
}

unsigned sl_csv_comment_transitions(const struct csv_dialect* d, const uint8_t* data, int64_t from,
                                 int64_t to) {
  // The four start states run in lockstep, packed into one byte (2 bits per
  // start state), through a table indexed by the byte's class: other, quote,
  // line feed, comment. Only quote, line feed and comment bytes are visited
  // (found 64 at a time with the tokenizer's masks); a run of other bytes
  // counts as one step, since that step is idempotent (LINE -> OUT, the
  // others stay). One pass over the chunk, no rescans.
  uint8_t other = 'a';
  while (other == d->quote || other == d->comment) ++other;
  const uint8_t rep[4] = {other, d->quote != 0 ? d->quote : other, '\n', d->comment};
  uint8_t next[256][4];
  for (int packed = 0; packed < 256; ++packed) {
    for (int k = 0; k < 4; ++k) {
      int out = 0;
      for (int st = 0; st < 4; ++st) {
        out |= scan_step((packed >> (2 * st)) & 3, rep[k], d->quote, d->comment) << (2 * st);
      }
      next[packed][k] = (uint8_t)out;
    }
  }
  uint8_t packed = CSV_ST_OUT | CSV_ST_QUOTE << 2 | CSV_ST_LINE << 4 | CSV_ST_COMMENT << 6;
  int pending_other = 0;  // other bytes since the last visited byte
  uint8_t tail[64];
  for (int64_t p = from; p < to; p += 64) {
    struct csv_masks m;
    int64_t avail = to - p;
    uint64_t valid = ~UINT64_C(0);
    const uint8_t* block = data + p;
    if (avail < 64) {
      memset(tail, 0, sizeof tail);
      memcpy(tail, data + p, (size_t)avail);
      block = tail;
      valid = (UINT64_C(1) << avail) - 1;
    }
#ifdef CSV_HAVE_X86
    masks_sse2(block, d->quote, d->comment, &m);  // "delim" = the comment character
#else
    masks_scalar(block, d->quote, d->comment, &m);
#endif
    uint64_t hits = (m.quote | m.delim | m.nl) & valid;
    int last = -1;
    while (hits != 0) {
      int b = __builtin_ctzll(hits);
      hits &= hits - 1;
      if (b > last + 1) pending_other = 1;
      if (pending_other) packed = next[packed][0];
      pending_other = 0;
      int k = ((m.quote >> b) & 1) ? 1 : ((m.nl >> b) & 1) ? 2 : 3;
      packed = next[packed][k];
      last = b;
    }
    int64_t end_bit = avail < 64 ? avail : 64;
    if (last + 1 < end_bit) pending_other = 1;
  }
  if (pending_other) packed = next[packed][0];
  return packed;
}

const char* sl_csv_tok_message(enum csv_tok_status st) {
  switch (st) {
    case CSV_TOK_UNTERMINATED: return "unterminated quoted field";
    case CSV_TOK_TOO_LONG: return "field longer than 2 GiB";
    case CSV_TOK_STRAY_QUOTE:
      return "quote character inside an unquoted field, or text after a closing quote "
             "(RFC 4180 quotes a whole field and doubles the quotes inside it); "
             "the option stray_quotes=text reads such quotes as text, as pyarrow does, on one thread";
    case CSV_TOK_TOO_MANY_FIELDS: return "a row of too many fields";
    default: return "tokenizer error";
  }
}

const char* sl_csv_tok_hint(const struct csv_options* o, const struct csv_dialect* d,
                            enum csv_tok_status st, const uint8_t* data, int64_t err_pos,
                            char* buf, size_t cap) {
  buf[0] = '\0';
  if (st == CSV_TOK_STRAY_QUOTE && err_pos > 0 && data[err_pos - 1] == '\\' && d->escape == 0) {
    // "x\"y" (pandas' and MySQL's escapechar) is not RFC 4180: say so first.
    snprintf(buf, cap, "; the quote follows a backslash: for a file that escapes quotes so "
             "(\\\"), give escape=backslash");
    return buf;
  }
  if (st == CSV_TOK_TOO_MANY_FIELDS) {
    snprintf(buf, cap, " (more than %lld, the CSV option max_columns: each column costs 1 to 5 "
             "KiB of memory whatever its bytes; by default the memory budget / 1 KiB, at least "
             "262144; raise it to read more)", (long long)o->max_columns);
    return buf;
  }
  if (st != CSV_TOK_STRAY_QUOTE || (o->delimiter >= 0 && o->quote_given)) return buf;
  // A file written with quote=squote or delimiter=space whose text holds a
  // '"' is sniffed as quoted with '"' or split by another delimiter: the
  // quotes are not stray, the dialect is wrong.
  char delim[8], quote[8];
  snprintf(delim, sizeof delim, d->delimiter >= 0x20 && d->delimiter < 0x7F ? "'%c'" : "0x%02x",
           d->delimiter);
  snprintf(quote, sizeof quote, d->quote >= 0x20 && d->quote < 0x7F ? "'%c'" : "0x%02x",
           d->quote);
  const int both = o->delimiter < 0 && !o->quote_given;
  snprintf(buf, cap, "; or, since the %s%s%s %s sniffed (delimiter %s, quote %s), the file may "
           "use others: give delimiter= or quote= (a file written with delimiter=space or "
           "quote=squote, say)",
           o->delimiter < 0 ? "delimiter" : "", both ? " and " : "",
           !o->quote_given ? "quote" : "", both ? "were" : "was", delim, quote);
  return buf;
}

int64_t sl_csv_stray_quote(const struct csv_dialect* d, const uint8_t* p, int64_t len,
                        int two_quotes) {
  const uint8_t q = d->quote, esc = d->escape;
  if (q == 0) return -1;
  if (two_quotes) {  // "text": both quotes at the ends, or the first of them is stray
    if (len >= 2 && p[0] == q && p[len - 1] == q) return -1;
    int64_t from = p[0] == q ? 1 : 0;
    const uint8_t* hit = memchr(p + from, q, (size_t)(len - from));
    return hit != NULL ? hit - p : 0;
  }
  int in_q = 0;
  for (int64_t i = 0; i < len; ++i) {
    if (esc != 0 && p[i] == esc) {
      ++i;  // the next byte is literal
      continue;
    }
    if (p[i] != q) continue;
    if (!in_q) {
      if (i != 0) return i;  // a quote inside an unquoted field (or reopening)
      in_q = 1;
    } else if (i + 1 < len && p[i + 1] == q) {
      ++i;  // a doubled quote
    } else if (i + 1 != len) {
      return i;  // closes with more text after it
    } else {
      in_q = 0;
    }
  }
  return -1;
}

/// The first quote at or after row start `from` that reading quotes only at
/// field starts would not take as quoting, or -1.
static int64_t find_stray_quote(const struct csv_dialect* d, const uint8_t* data, int64_t from,
                                int64_t end) {
  const uint8_t q = d->quote, esc = d->escape, delim = d->delimiter;
  if (q == 0) return -1;
  enum { FIELD_START, UNQUOTED, QUOTED } st = FIELD_START;
  for (int64_t i = from; i < end; ++i) {
    uint8_t c = data[i];
    if (esc != 0 && c == esc) {
      ++i;
      if (st == FIELD_START) st = UNQUOTED;
      continue;
    }
    if (st == QUOTED) {
      if (c != q) continue;
      if (i + 1 < end && data[i + 1] == q) {
        ++i;
        continue;
      }
      int64_t n = i + 1;  // the closing quote: then the field's end
      if (n < end && data[n] == '\r') ++n;
      if (n < end && data[n] != delim && data[n] != '\n') return i;
      st = UNQUOTED;
    } else if (c == delim || c == '\n') {
      st = FIELD_START;
    } else if (c == q) {
      if (st == UNQUOTED) return i;
      st = QUOTED;
    } else {
      st = UNQUOTED;
    }
  }
  return -1;
}

enum csv_tok_status sl_csv_tok_explain(const struct csv_dialect* d, const uint8_t* data, int64_t end,
                                    enum csv_tok_status st, int64_t* err_pos) {
  if (st != CSV_TOK_UNTERMINATED || d->stray_text) return st;
  int64_t stray = find_stray_quote(d, data, *err_pos, end);
  if (stray < 0) return st;
  *err_pos = stray;
  return CSV_TOK_STRAY_QUOTE;
}

int64_t sl_csv_unescape(const struct csv_dialect* d, const uint8_t* in, int64_t len,
                     uint8_t* out) {
  int64_t o = 0;
  int in_q = 0;
  if (d->escape == 0 && d->quote != 0 && !d->stray_text) {
    // Quotes only: the runs between them are copied whole (memchr finds the
    // next quote); a doubled quote inside quotes is one quote, any other
    // quote toggles quoting. The same result as the byte loop below.
    const uint8_t q = d->quote;
    int64_t i = 0;
    while (i < len) {
      const uint8_t* hit = memchr(in + i, q, (size_t)(len - i));
      int64_t run = hit != NULL ? (int64_t)(hit - (in + i)) : len - i;
      memcpy(out + o, in + i, (size_t)run);
      o += run;
      i += run;
      if (hit == NULL) break;
      if (in_q && i + 1 < len && in[i + 1] == q) {
        out[o++] = q;
        i += 2;
      } else {
        in_q ^= 1;
        ++i;
      }
    }
    return o;
  }
  for (int64_t i = 0; i < len; ++i) {
    uint8_t c = in[i];
    if (d->escape != 0 && c == d->escape && i + 1 < len) {
      out[o++] = in[++i];
    } else if (d->quote != 0 && c == d->quote && (in_q || i == 0 || !d->stray_text)) {
      if (in_q && i + 1 < len && in[i + 1] == c) {
        out[o++] = c;
        ++i;
      } else {
        in_q ^= 1;
      }
    } else {
      out[o++] = c;
    }
  }
  return o;
}
