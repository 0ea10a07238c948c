// Row-group pruning by the Parquet reader (split_may_match): whenever a
// split is said to hold no matching row, decoding it and evaluating the
// filter (sl_row_filter_select) must find none (soundness), over every
// parquet-testing corpus file with filters built from its own values; and
// on files written by sluice's writer with known row-group statistics, the
// row groups the statistics exclude are pruned (unsigned orders, NaN and
// -0.0 floats, all-null chunks, timestamps in ms / us / ns, dates, bytes),
// also once the footer is rewritten with truncated string bounds, legacy
// min/max only, or no null count.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <math.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_buffer.h"
#include "core/sl_builder.h"
#include "core/sl_error.h"
#include "core/sl_row_filter.h"
#include "format/parquet/parquet_reader.h"
#include "format/parquet/parquet_writer.h"
#include "format/parquet/pq_bloom.h"
#include "format/parquet/pq_meta.h"
#include "format/sl_format.h"
#include "io/sl_source.h"
#include "test_util.h"

/* ---- a file, decoded split by split ----------------------------------------- */

struct split_batches {
  struct ArrowArray* a;
  int64_t n;
};

struct pfile {
  const struct sl_format_reader* fmt;
  struct sl_source* src;
  void* reader;
  struct ArrowSchema schema;
  struct sl_split* splits;
  int64_t n_splits;
  struct split_batches* data;
};

static void pfile_close(struct pfile* p) {
  for (int64_t i = 0; p->data && i < p->n_splits; ++i) {
    for (int64_t b = 0; b < p->data[i].n; ++b) p->data[i].a[b].release(&p->data[i].a[b]);
    free(p->data[i].a);
  }
  free(p->data);
  if (p->splits) sl_free(NULL, p->splits, (size_t)p->n_splits * sizeof *p->splits);
  if (p->schema.release) p->schema.release(&p->schema);
  if (p->reader) p->fmt->close(p->reader);
  if (p->src) sl_source_close(p->src);
  memset(p, 0, sizeof *p);
}

/// Opens `path`, plans its splits and decodes each whole (batches of 1000).
static int pfile_open(const char* path, struct pfile* p, struct sluice_error* error) {
  memset(p, 0, sizeof *p);
  p->fmt = sl_parquet_reader();
  int rc = sl_source_open(path, NULL, &p->src, error);
  if (rc != 0) return rc;
  struct sl_reader_args args = {.source = p->src, .batch_size = 1000};
  rc = p->fmt->open(&args, &p->reader, error);
  if (rc == 0) rc = p->fmt->schema(p->reader, &p->schema, error);
  if (rc == 0) rc = p->fmt->plan_splits(p->reader, &p->splits, &p->n_splits, error);
  if (rc == 0) {
    p->data = calloc((size_t)(p->n_splits > 0 ? p->n_splits : 1), sizeof *p->data);
    assert_non_null(p->data);
  }
  for (int64_t i = 0; rc == 0 && i < p->n_splits; ++i) {
    void* st = NULL;
    int projected;
    rc = p->fmt->split_open(p->reader, &p->splits[i], NULL, 0, &st, &projected, error);
    while (rc == 0) {
      struct ArrowArray a;
      rc = p->fmt->split_next(st, &a, error);
      if (rc != 0 || a.release == NULL) break;
      struct split_batches* d = &p->data[i];
      d->a = realloc(d->a, (size_t)(d->n + 1) * sizeof *d->a);
      assert_non_null(d->a);
      sl_array_move(&a, &d->a[d->n++]);
    }
    if (st) p->fmt->split_close(st);
  }
  if (rc != 0) pfile_close(p);
  return rc;
}

/// Parses `text` against the file's schema and judges every split: may[i]
/// (split_may_match) and passing[i] (rows of split i that pass, from the
/// decoded batches). Fails the test when a pruned split has a passing row.
/// Returns the parse result (the filter is not applied when it fails).
static int check_filter(struct pfile* p, const char* text, int* may, int64_t* passing) {
  struct sl_row_filter* filter = NULL;
  struct sluice_error error = {0, {0}};
  int rc = sl_row_filter_parse(text, &p->schema, NULL, &filter, &error);
  if (rc != 0) return rc;
  assert_non_null(filter);
  int64_t at[16];
  assert_true(filter->n_conditions <= 16);
  for (int k = 0; k < filter->n_conditions; ++k) at[k] = filter->conditions[k].column;
  for (int64_t i = 0; i < p->n_splits; ++i) {
    int m = p->fmt->split_may_match(p->reader, &p->splits[i], filter);
    assert_true(m == 0 || m == 1);
    int64_t pass = 0;
    for (int64_t b = 0; b < p->data[i].n; ++b) {
      const struct ArrowArray* batch = &p->data[i].a[b];
      uint8_t* sel = malloc((size_t)(batch->length + 7) / 8 + 1);
      assert_non_null(sel);
      int64_t selected = 0;
      rc = sl_row_filter_select(filter, batch, at, sel, &selected, &error);
      if (rc != 0) fprintf(stderr, "select '%s': %s\n", text, error.message);
      assert_int_equal(rc, 0);
      free(sel);
      pass += selected;
    }
    if (m == 0 && pass != 0) {
      fprintf(stderr, "UNSOUND: filter '%s' pruned split %lld, where %lld rows pass\n", text,
              (long long)i, (long long)pass);
      fail();
    }
    if (may) may[i] = m;
    if (passing) passing[i] = pass;
  }
  sl_row_filter_free(filter);
  return 0;
}

/* ---- filters from a file's own values -------------------------------------------- */

static int is_valid_at(const struct ArrowArray* a, int64_t i) {
  const uint8_t* bits = a->n_buffers > 0 ? a->buffers[0] : NULL;
  if (bits == NULL || a->null_count == 0) return 1;
  int64_t j = a->offset + i;
  return (bits[j >> 3] >> (j & 7)) & 1;
}

/// Percent-escapes `n` bytes (every byte but letters and digits) into out;
/// 0 when they do not fit or hold a NUL.
static int escape(const uint8_t* s, int64_t n, char* out, size_t cap) {
  size_t o = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (s[i] == 0 || o + 4 >= cap) return 0;
    if ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9'))
      out[o++] = (char)s[i];
    else
      o += (size_t)snprintf(out + o, cap - o, "%%%02X", s[i]);
  }
  out[o] = '\0';
  return 1;
}

/// Value `i` of column `a` (Arrow format `f`; a dictionary's value when `a` is
/// dictionary-encoded, format `vf`) as a filter literal; 0 if null or not
/// expressible.
static int literal_at(const struct ArrowSchema* s, const struct ArrowArray* a, int64_t i,
                      char* out, size_t cap) {
  if (!is_valid_at(a, i)) return 0;
  int64_t j = a->offset + i;
  if (s->dictionary != NULL) {
    const char* ix = s->format;
    int64_t index;
    switch (ix[0]) {
      case 'c': index = ((const int8_t*)a->buffers[1])[j]; break;
      case 'C': index = ((const uint8_t*)a->buffers[1])[j]; break;
      case 's': index = ((const int16_t*)a->buffers[1])[j]; break;
      case 'S': index = ((const uint16_t*)a->buffers[1])[j]; break;
      case 'i': index = ((const int32_t*)a->buffers[1])[j]; break;
      case 'I': index = ((const uint32_t*)a->buffers[1])[j]; break;
      default: index = ((const int64_t*)a->buffers[1])[j]; break;
    }
    return literal_at(s->dictionary, a->dictionary, index - a->dictionary->offset, out, cap);
  }
  const char* f = s->format;
  const void* d = a->buffers[1];
  switch (f[0]) {
    case 'c': snprintf(out, cap, "%d", ((const int8_t*)d)[j]); return 1;
    case 's': snprintf(out, cap, "%d", ((const int16_t*)d)[j]); return 1;
    case 'i': snprintf(out, cap, "%d", ((const int32_t*)d)[j]); return 1;
    case 'l': snprintf(out, cap, "%lld", (long long)((const int64_t*)d)[j]); return 1;
    case 'C': snprintf(out, cap, "%u", ((const uint8_t*)d)[j]); return 1;
    case 'S': snprintf(out, cap, "%u", ((const uint16_t*)d)[j]); return 1;
    case 'I': snprintf(out, cap, "%u", ((const uint32_t*)d)[j]); return 1;
    case 'L': snprintf(out, cap, "%llu", (unsigned long long)((const uint64_t*)d)[j]); return 1;
    case 'f': snprintf(out, cap, "%.9g", (double)((const float*)d)[j]); return 1;
    case 'g': snprintf(out, cap, "%.17g", ((const double*)d)[j]); return 1;
    case 'b': snprintf(out, cap, "%d", (((const uint8_t*)d)[j >> 3] >> (j & 7)) & 1); return 1;
    case 'u': case 'z': case 'U': case 'Z': {
      int large = f[0] == 'U' || f[0] == 'Z';
      int64_t start = large ? ((const int64_t*)d)[j] : ((const int32_t*)d)[j];
      int64_t end = large ? ((const int64_t*)d)[j + 1] : ((const int32_t*)d)[j + 1];
      if (end - start > 200) return 0;
      return escape((const uint8_t*)a->buffers[2] + start, end - start, out, cap);
    }
    case 't': {
      int narrow = (f[1] == 'd' && f[2] == 'D') || (f[1] == 't' && (f[2] == 's' || f[2] == 'm'));
      if (f[1] == 'i') return 0;
      if (narrow) snprintf(out, cap, "%d", ((const int32_t*)d)[j]);
      else snprintf(out, cap, "%lld", (long long)((const int64_t*)d)[j]);
      return 1;
    }
    default: return 0;
  }
}

/// A value to order by: kind 'i' (int64), 'u' (uint64), 'f' (double), 'b' (bytes).
struct tv {
  char kind;
  int64_t i;
  uint64_t u;
  double f;
  const uint8_t* s;
  int64_t len;
};

/// Value `i` of column `a` for ordering; 0 if null, NaN or not orderable.
static int value_of(const struct ArrowSchema* s, const struct ArrowArray* a, int64_t i,
                    struct tv* v) {
  if (!is_valid_at(a, i)) return 0;
  int64_t j = a->offset + i;
  const void* d = a->buffers[1];
  if (s->dictionary != NULL) {
    int64_t index;
    switch (s->format[0]) {
      case 'c': index = ((const int8_t*)d)[j]; break;
      case 'C': index = ((const uint8_t*)d)[j]; break;
      case 's': index = ((const int16_t*)d)[j]; break;
      case 'S': index = ((const uint16_t*)d)[j]; break;
      case 'i': index = ((const int32_t*)d)[j]; break;
      case 'I': index = ((const uint32_t*)d)[j]; break;
      default: index = ((const int64_t*)d)[j]; break;
    }
    return value_of(s->dictionary, a->dictionary, index - a->dictionary->offset, v);
  }
  const char* f = s->format;
  v->kind = 'i';
  switch (f[0]) {
    case 'c': v->i = ((const int8_t*)d)[j]; return 1;
    case 's': v->i = ((const int16_t*)d)[j]; return 1;
    case 'i': v->i = ((const int32_t*)d)[j]; return 1;
    case 'l': v->i = ((const int64_t*)d)[j]; return 1;
    case 'b': v->i = (((const uint8_t*)d)[j >> 3] >> (j & 7)) & 1; return 1;
    case 'C': v->kind = 'u'; v->u = ((const uint8_t*)d)[j]; return 1;
    case 'S': v->kind = 'u'; v->u = ((const uint16_t*)d)[j]; return 1;
    case 'I': v->kind = 'u'; v->u = ((const uint32_t*)d)[j]; return 1;
    case 'L': v->kind = 'u'; v->u = ((const uint64_t*)d)[j]; return 1;
    case 'f': v->kind = 'f'; v->f = ((const float*)d)[j]; return !isnan(v->f);
    case 'g': v->kind = 'f'; v->f = ((const double*)d)[j]; return !isnan(v->f);
    case 'u': case 'z': case 'U': case 'Z': {
      int large = f[0] == 'U' || f[0] == 'Z';
      int64_t start = large ? ((const int64_t*)d)[j] : ((const int32_t*)d)[j];
      int64_t end = large ? ((const int64_t*)d)[j + 1] : ((const int32_t*)d)[j + 1];
      v->kind = 'b';
      v->s = (const uint8_t*)a->buffers[2] + start;
      v->len = end - start;
      return 1;
    }
    case 't':
      if (f[1] == 'i') return 0;
      if ((f[1] == 'd' && f[2] == 'D') || (f[1] == 't' && (f[2] == 's' || f[2] == 'm')))
        v->i = ((const int32_t*)d)[j];
      else
        v->i = ((const int64_t*)d)[j];
      return 1;
    default: return 0;
  }
}

static int tv_cmp(const struct tv* a, const struct tv* b) {
  switch (a->kind) {
    case 'i': return (a->i > b->i) - (a->i < b->i);
    case 'u': return (a->u > b->u) - (a->u < b->u);
    case 'f': return (a->f > b->f) - (a->f < b->f);
    default: {
      int64_t n = a->len < b->len ? a->len : b->len;
      int c = n > 0 ? memcmp(a->s, b->s, (size_t)n) : 0;
      if (c == 0) c = (a->len > b->len) - (a->len < b->len);
      return (c > 0) - (c < 0);
    }
  }
}

/// Literals of the least and greatest non-null (non-NaN) values of column
/// `c` over split `i`'s batches into out[0], out[1]; how many were found.
static int split_extremes(const struct pfile* p, int64_t i, int64_t c, char out[2][420]) {
  const struct ArrowSchema* cs = p->schema.children[c];
  struct tv lo = {0}, hi = {0}, v;
  int64_t lo_at[2] = {-1, -1}, hi_at[2] = {-1, -1};
  for (int64_t b = 0; b < p->data[i].n; ++b) {
    const struct ArrowArray* col = p->data[i].a[b].children[c];
    for (int64_t r = 0; r < col->length; ++r) {
      if (!value_of(cs, col, r, &v)) continue;
      if (lo_at[0] < 0 || tv_cmp(&v, &lo) < 0) lo = v, lo_at[0] = b, lo_at[1] = r;
      if (hi_at[0] < 0 || tv_cmp(&v, &hi) > 0) hi = v, hi_at[0] = b, hi_at[1] = r;
    }
  }
  if (lo_at[0] < 0) return 0;
  int n = 0;
  if (literal_at(cs, p->data[i].a[lo_at[0]].children[c], lo_at[1], out[n], 420)) ++n;
  if (literal_at(cs, p->data[i].a[hi_at[0]].children[c], hi_at[1], out[n], 420)) ++n;
  return n;
}

struct sweep_counts {
  long long filters, judged, pruned;
};

#define MAX_SAMPLES 32

/// For every top-level column a filter can name: single conditions of every
/// operator against values sampled from each split (its least and greatest
/// values, the first, middle and last non-null rows of its first batch), a
/// two-value =, and a pair of columns.
static void sweep_file(struct pfile* p, struct sweep_counts* counts) {
  static const char* const ops[] = {"=", "!=", "<", "<=", ">", ">="};
  int* may = calloc((size_t)(p->n_splits + 1), sizeof *may);
  assert_non_null(may);
  char first_cond[1400] = "";
  for (int64_t c = 0; c < p->schema.n_children; ++c) {
    const struct ArrowSchema* cs = p->schema.children[c];
    char name[300];
    if (cs->name == NULL || !escape((const uint8_t*)cs->name, (int64_t)strlen(cs->name), name,
                                    sizeof name))
      continue;
    char samples[MAX_SAMPLES][420];
    int n_samples = 0;
    for (int64_t i = 0; i < p->n_splits && n_samples < MAX_SAMPLES - 5; ++i) {
      if (p->data[i].n == 0) continue;
      n_samples += split_extremes(p, i, c, &samples[n_samples]);
      const struct ArrowArray* col = p->data[i].a[0].children[c];
      int64_t len = col->length, picks[3] = {0, len / 2, len - 1};
      for (int k = 0; k < 3; ++k) {
        for (int64_t r = picks[k]; r >= 0 && r < len && r < picks[k] + 50; ++r) {
          if (literal_at(cs, col, r, samples[n_samples], sizeof samples[n_samples])) {
            ++n_samples;
            break;
          }
        }
      }
    }
    char text[3000];
    for (int s = 0; s < n_samples; ++s) {
      for (int o = 0; o < 6; ++o) {
        snprintf(text, sizeof text, "%s%s%s", name, ops[o], samples[s]);
        if (check_filter(p, text, may, NULL) != 0) continue;
        ++counts->filters;
        for (int64_t i = 0; i < p->n_splits; ++i) {
          ++counts->judged;
          counts->pruned += may[i] == 0;
        }
        if (first_cond[0] == '\0' && o == 2 && strlen(text) < 1300)
          snprintf(first_cond, sizeof first_cond, "%.1300s", text);
      }
      if (s > 0) {
        snprintf(text, sizeof text, "%s=%s|%s", name, samples[s - 1], samples[s]);
        if (check_filter(p, text, may, NULL) == 0) ++counts->filters;
      }
    }
    // AND with a condition on an earlier column.
    if (first_cond[0] != '\0' && n_samples > 0 && strncmp(first_cond, name, strlen(name)) != 0) {
      snprintf(text, sizeof text, "%s,%s>=%s", first_cond, name, samples[n_samples - 1]);
      if (check_filter(p, text, may, NULL) == 0) ++counts->filters;
    }
  }
  free(may);
}

static const char* data_path(const char* name, char* buf, size_t cap) {
  char rel[256];
  snprintf(rel, sizeof rel, "parquet-testing/data/%s", name);
  return test_corpus_path(rel, buf, cap);
}

/// Soundness over the whole parquet-testing corpus (files that do not open
/// or decode are left out: test_parquet_read covers them).
static void test_corpus_sound(void** state) {
  (void)state;
  char dir[512];
  data_path("", dir, sizeof dir);
  DIR* d = opendir(dir);
  if (d == NULL) {
    fprintf(stderr, "corpus %s not found: skipped\n", dir);
    skip();
  }
  struct sweep_counts total = {0, 0, 0};
  long long files = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n < 8 || strcmp(e->d_name + n - 8, ".parquet") != 0) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct pfile p;
    struct sluice_error error = {0, {0}};
    if (pfile_open(path, &p, &error) != 0) continue;
    struct sweep_counts c = {0, 0, 0};
    sweep_file(&p, &c);
    fprintf(stderr, "%-50s %4lld filters, %5lld splits judged, %5lld pruned\n", e->d_name,
            c.filters, c.judged, c.pruned);
    total.filters += c.filters;
    total.judged += c.judged;
    total.pruned += c.pruned;
    ++files;
    pfile_close(&p);
  }
  closedir(d);
  fprintf(stderr, "corpus: %lld files, %lld filters, %lld splits judged, %lld pruned\n", files,
          total.filters, total.judged, total.pruned);
  assert_true(files > 30);
  assert_true(total.pruned > 100);  // the statistics are used, not only ignored
}

/// Files whose statistics are known good: a filter that every value fails
/// prunes every row group.
static void test_corpus_prunes(void** state) {
  (void)state;
  static const struct {
    const char* file;
    const char* filter;
  } cases[] = {
      {"alltypes_tiny_pages.parquet", "id<0"},
      {"alltypes_tiny_pages.parquet", "int_col>9"},
      {"alltypes_tiny_pages.parquet", "string_col>9"},
      {"data_index_bloom_encoding_stats.parquet", "String<Hello"},
      {"data_index_bloom_encoding_stats.parquet", "String>today"},
      // parquet-rs truncated bounds: min "Al", max "Kf" (raised from "Ke...")
      {"binary_truncated_min_max.parquet", "utf8_full_truncation<Al"},
      {"binary_truncated_min_max.parquet", "utf8_full_truncation>Kf"},
      {"binary_truncated_min_max.parquet", "binary_partial_truncation>%FF%FF%01%02"},
      {"binary_truncated_min_max.parquet", "utf8_no_truncation>Ke"},
      {"sort_columns.parquet", "a<0"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    char path[512];
    data_path(cases[k].file, path, sizeof path);
    if (access(path, R_OK) != 0) {
      fprintf(stderr, "corpus file %s not found: skipped\n", path);
      skip();
    }
    struct pfile p;
    struct sluice_error error = {0, {0}};
    assert_int_equal(pfile_open(path, &p, &error), 0);
    int may[64];
    int64_t passing[64];
    assert_true(p.n_splits <= 64);
    int rc = check_filter(&p, cases[k].filter, may, passing);
    if (rc != 0) fprintf(stderr, "%s: filter '%s' does not parse\n", cases[k].file, cases[k].filter);
    assert_int_equal(rc, 0);
    int pruned = 0;
    for (int64_t i = 0; i < p.n_splits; ++i) pruned += may[i] == 0;
    fprintf(stderr, "%s '%s': %d of %lld splits pruned\n", cases[k].file, cases[k].filter, pruned,
            (long long)p.n_splits);
    assert_true(p.n_splits > 0);
    assert_int_equal(pruned, p.n_splits);
    pfile_close(&p);
  }
}

/* ---- files with known statistics --------------------------------------------------- */

enum { RGS = 4, PER_RG = 4, ROWS = RGS * PER_RG };

static const char* const k_words[RGS] = {"apple", "banana", "cherry", "date"};

static void append_i64(struct sl_builder* b, int64_t v) { assert_int_equal(sl_builder_append_fixed(b, &v), 0); }

/// 16 rows in 4 row groups of 4 (row group k, row j), a column of each kind.
static void write_known(const char* path, const char* options) {
  static const char* const formats[] = {"l", "c", "I", "L", "S", "C", "g", "f", "b", "u",
                                        "i", "tsm:", "tsu:UTC", "tsn:", "tdD", "u", "z"};
  static const char* const names[] = {"l", "c", "I", "L", "S", "C", "g", "f", "b", "u",
                                      "ni", "tsm", "tsu", "tsn", "d", "big", "z"};
  enum { N = sizeof formats / sizeof formats[0] };
  struct ArrowSchema schema;
  assert_int_equal(sl_schema_init(&schema, NULL, "+s", "", 0, N, NULL), 0);
  for (int c = 0; c < N; ++c)
    assert_int_equal(sl_schema_init(schema.children[c], NULL, formats[c], names[c],
                                    ARROW_FLAG_NULLABLE, 0, NULL), 0);
  struct sl_builder bb;
  struct sluice_error error = {0, {0}};
  assert_int_equal(sl_builder_init_from_schema(&bb, &schema, NULL, &error), 0);
  static char big[5001];
  memset(big, 'q', 5000);
  for (int r = 0; r < ROWS; ++r) {
    int k = r / PER_RG, j = r % PER_RG;
    append_i64(sl_builder_child(&bb, 0), r);
    int8_t c8 = (int8_t)(r - 8);
    assert_int_equal(sl_builder_append_fixed(sl_builder_child(&bb, 1), &c8), 0);
    uint32_t u32 = (uint32_t)k * 0x40000000u + (uint32_t)j;
    assert_int_equal(sl_builder_append_fixed(sl_builder_child(&bb, 2), &u32), 0);
    uint64_t u64 = (uint64_t)k * UINT64_C(0x4000000000000000) + (uint64_t)j;
    assert_int_equal(sl_builder_append_fixed(sl_builder_child(&bb, 3), &u64), 0);
    uint16_t u16 = (uint16_t)(k * 16384 + j);
    assert_int_equal(sl_builder_append_fixed(sl_builder_child(&bb, 4), &u16), 0);
    uint8_t u8 = (uint8_t)(k * 64 + j);
    assert_int_equal(sl_builder_append_fixed(sl_builder_child(&bb, 5), &u8), 0);
    // g: {1, 2, NaN, 3}, all NaN, zeros of both signs, {10..13}
    static const double g[ROWS] = {1, 2, NAN, 3, NAN, NAN, NAN, NAN, -0.0, 0.0, 0.0, -0.0,
                                   10, 11, 12, 13};
    assert_int_equal(sl_builder_append_fixed(sl_builder_child(&bb, 6), &g[r]), 0);
    // f: {2, NaN, 2, 2} (min = max = 2), {-1..-4}, {inf, 5, 6, 7}, all null
    static const float f[ROWS] = {2, NAN, 2, 2, -1, -2, -3, -4, INFINITY, 5, 6, 7, 0, 0, 0, 0};
    if (k == 3) assert_int_equal(sl_builder_append_null(sl_builder_child(&bb, 7)), 0);
    else assert_int_equal(sl_builder_append_fixed(sl_builder_child(&bb, 7), &f[r]), 0);
    // b: all false, all true, mixed, all null
    if (k == 3) assert_int_equal(sl_builder_append_null(sl_builder_child(&bb, 8)), 0);
    else assert_int_equal(sl_builder_append_bool(sl_builder_child(&bb, 8), k == 1 || (k == 2 && j % 2)), 0);
    char word[80];
    snprintf(word, sizeof word, "%s-%d-%s", k_words[k], j,
             "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    assert_int_equal(sl_builder_append_string(sl_builder_child(&bb, 9), word), 0);
    // ni: row group 1 all null, one null in row group 3
    if (k == 1 || r == 14) assert_int_equal(sl_builder_append_null(sl_builder_child(&bb, 10)), 0);
    else {
      int32_t v = 100 + r;
      assert_int_equal(sl_builder_append_fixed(sl_builder_child(&bb, 10), &v), 0);
    }
    // 2024-01-01T00:00:00 + 10 k + j seconds in ms, us, ns
    int64_t sec = 1704067200 + 10 * k + j;
    append_i64(sl_builder_child(&bb, 11), sec * 1000);
    append_i64(sl_builder_child(&bb, 12), sec * 1000000);
    append_i64(sl_builder_child(&bb, 13), sec * 1000000000);
    int32_t day = 19723 + 10 * k + j;  // 2024-01-01 + ...
    assert_int_equal(sl_builder_append_fixed(sl_builder_child(&bb, 14), &day), 0);
    // big: 5000-byte strings in row group 1 (bounds too long to be written)
    if (k == 1) {
      big[0] = (char)('a' + j);
      assert_int_equal(sl_builder_append_string(sl_builder_child(&bb, 15), big), 0);
    } else {
      assert_int_equal(sl_builder_append_string(sl_builder_child(&bb, 15), k == 0 ? "a" : "z"), 0);
    }
    uint8_t z[2] = {(uint8_t)(k * 0x40 + j), 0xff};
    assert_int_equal(sl_builder_append_binary(sl_builder_child(&bb, 16), z, 2), 0);
  }
  assert_int_equal(sl_builder_struct_finish_rows(&bb, ROWS), 0);
  struct test_batches b;
  memset(&b, 0, sizeof b);
  assert_int_equal(sl_builder_finish(&bb, &b.arrays[0], &error), 0);
  sl_builder_release(&bb);
  b.schema = schema;
  b.n = 1;
  b.rows = ROWS;
  int rc = test_batches_write(sl_parquet_writer(), &b, path, options, NULL, &error);
  if (rc != 0) fprintf(stderr, "write: %s\n", error.message);
  assert_int_equal(rc, 0);
  test_batches_release(&b);
}

/// Asserts split_may_match of each of the 4 row groups for `filter`
/// ("0110": row groups 1 and 2 may match, 0 and 3 are pruned).
static void expect(struct pfile* p, const char* filter, const char* want) {
  int may[RGS];
  int64_t passing[RGS];
  assert_int_equal(p->n_splits, RGS);
  int rc = check_filter(p, filter, may, passing);
  if (rc != 0) fprintf(stderr, "filter '%s' does not parse\n", filter);
  assert_int_equal(rc, 0);
  char got[RGS + 1];
  for (int i = 0; i < RGS; ++i) got[i] = (char)('0' + may[i]);
  got[RGS] = '\0';
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "filter '%s': split_may_match %s, expected %s (rows passing:", filter, got,
            want);
    for (int i = 0; i < RGS; ++i) fprintf(stderr, " %lld", (long long)passing[i]);
    fprintf(stderr, ")\n");
    fail();
  }
}

/// The expectations that hold with the footer as sluice writes it.
static void expect_written(struct pfile* p) {
  expect(p, "l>=8", "0011");
  expect(p, "l<4", "1000");
  expect(p, "l<=4", "1100");
  expect(p, "l=5|13", "0101");
  expect(p, "l>15", "0000");
  expect(p, "l!=5", "1111");
  expect(p, "l>=2,l<6", "1100");
  expect(p, "l>=2,c>0", "0011");  // AND over two columns: rows 9..15
  expect(p, "l=5;l=13", "0101");   // OR groups: a row group any group may match
  expect(p, "l<4;c>=0", "1011");
  expect(p, "l<4,c>=0;l>15", "0000");
  expect(p, "c<-4", "1000");
  expect(p, "c>=0", "0011");
  // Unsigned: row group 2 and 3 have the top bit set (negative as signed).
  expect(p, "I>=3221225472", "0001");
  expect(p, "I<1073741824", "1000");
  expect(p, "I>1073741830", "0011");
  expect(p, "L>=9223372036854775808", "0011");
  expect(p, "L<4611686018427387904", "1000");
  expect(p, "S>=32768", "0011");
  expect(p, "C>=128", "0011");
  expect(p, "C<64", "1000");
  // Floats: NaN is no bound; the all-NaN row group has no bounds; zeros.
  expect(p, "g>5", "0101");
  expect(p, "g<=3", "1110");
  expect(p, "g=0", "0110");
  expect(p, "g<0", "0100");     // -0.0 < 0 is false
  expect(p, "g>=-0.0", "1111");
  expect(p, "g!=2", "1111");    // NaN passes !=: never pruned by bounds
  expect(p, "f!=2", "1110");    // min = max = 2 and a NaN that passes; all-null pruned
  expect(p, "f=2", "1000");
  expect(p, "f>100", "0010");   // infinity is a bound
  expect(p, "f<-3.5", "0100");
  // Booleans.
  expect(p, "b=1", "0110");
  expect(p, "b=0", "1010");
  expect(p, "b!=0", "0110");
  // Strings and binary: bytewise.
  expect(p, "u>=banana", "0111");
  expect(p, "u<banana", "1000");
  expect(p, "u=cherry-2-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "0010");
  expect(p, "u>d", "0001");
  expect(p, "big>b", "0111");   // row group 1's bounds were left out: not pruned
  expect(p, "z>=%C0", "0001");
  expect(p, "z<%40", "1000");
  // All null: no row passes, whatever the condition.
  expect(p, "ni>=0", "1011");
  expect(p, "ni!=7", "1011");
  expect(p, "ni<112", "1010");
  // Timestamps in their own unit, dates.
  expect(p, "tsm>=2024-01-01 00:00:20", "0011");
  expect(p, "tsu>=2024-01-01T00:00:20Z", "0011");
  expect(p, "tsn<2024-01-01 00:00:10", "1000");
  expect(p, "tsn=2024-01-01 00:00:31", "0001");
  expect(p, "tsm=2024-01-01 00:00:31.5", "0001");  // between the bounds
  expect(p, "d<2024-01-11", "1000");
  expect(p, "d>=2024-01-21", "0011");
}

static void test_known_stats(void** state) {
  (void)state;
  char path[512];
  test_temp_path("known.parquet", path, sizeof path);
  // Without dictionaries: these are the statistics' answers alone.
  write_known(path, "row_group_size=4,dictionary=false");
  struct pfile p;
  struct sluice_error error = {0, {0}};
  int rc = pfile_open(path, &p, &error);
  if (rc != 0) fprintf(stderr, "%s\n", error.message);
  assert_int_equal(rc, 0);
  expect_written(&p);
  pfile_close(&p);
  unlink(path);
}

/* ---- the same file with its footer rewritten ------------------------------------------- */

/// Leaf index of top-level column `name` (all columns are flat).
static int64_t leaf_of(const struct pq_file_meta* meta, const char* name) {
  int64_t leaf = 0;
  for (int64_t i = 1; i < meta->n_schema; ++i) {
    const struct pq_bytes* n = &meta->schema[i].name;
    if ((size_t)n->size == strlen(name) && memcmp(n->data, name, (size_t)n->size) == 0) return leaf;
    if (meta->schema[i].has_type) ++leaf;
  }
  fail();
  return -1;
}

/// Rewrites the footer of `path` into `out`: the utf8 column's bounds
/// truncated to 8 bytes (the max raised, as writers do), `I` and `l` with
/// only legacy min/max, `ni` without a null count.
static void rewrite_footer(const char* path, const char* out) {
  size_t size = 0;
  uint8_t* data = test_read_file(path, &size);
  assert_non_null(data);
  assert_true(size > 12);
  uint32_t len = (uint32_t)data[size - 8] | (uint32_t)data[size - 7] << 8 |
                 (uint32_t)data[size - 6] << 16 | (uint32_t)data[size - 5] << 24;
  assert_true(len + 12 <= size);
  size_t start = size - 8 - len;
  struct pq_file_meta meta;
  struct sluice_error error = {0, {0}};
  assert_int_equal(sl_pq_file_meta_parse(data + start, len, NULL, &meta, &error), 0);
  int64_t u = leaf_of(&meta, "u"), i32 = leaf_of(&meta, "I"), l = leaf_of(&meta, "l");
  int64_t ni = leaf_of(&meta, "ni");
  static uint8_t mins[RGS][8], maxs[RGS][8];
  assert_int_equal(meta.n_row_groups, RGS);
  for (int64_t g = 0; g < RGS; ++g) {
    struct pq_statistics* s = &meta.row_groups[g].columns[u].meta_data.statistics;
    assert_true(s->min_value.present && s->min_value.size > 8);
    memcpy(mins[g], s->min_value.data, 8);
    memcpy(maxs[g], s->max_value.data, 8);
    maxs[g][7]++;  // "banana-3" -> "banana-4": still above every value
    s->min_value = (struct pq_bytes){mins[g], 8, 1};
    s->max_value = (struct pq_bytes){maxs[g], 8, 1};
    s->is_min_value_exact = 0;
    s->is_max_value_exact = 0;
    int64_t legacy[2] = {i32, l};
    for (int k = 0; k < 2; ++k) {
      struct pq_statistics* t = &meta.row_groups[g].columns[legacy[k]].meta_data.statistics;
      t->min = t->min_value;
      t->max = t->max_value;
      t->min_value.present = 0;
      t->max_value.present = 0;
    }
    meta.row_groups[g].columns[ni].meta_data.statistics.null_count = -1;
  }
  struct sl_buffer footer;
  sl_buffer_init(&footer, NULL);
  assert_int_equal(sl_pq_file_meta_write(&meta, &footer, &error), 0);
  uint8_t tail[8] = {(uint8_t)footer.size, (uint8_t)(footer.size >> 8),
                     (uint8_t)(footer.size >> 16), (uint8_t)(footer.size >> 24), 'P', 'A', 'R', '1'};
  uint8_t* file = malloc(start + (size_t)footer.size + 8);
  assert_non_null(file);
  memcpy(file, data, start);
  memcpy(file + start, footer.data, (size_t)footer.size);
  memcpy(file + start + footer.size, tail, 8);
  assert_int_equal(test_write_file(out, file, start + (size_t)footer.size + 8), 0);
  free(file);
  sl_buffer_reset(&footer);
  sl_pq_file_meta_free(&meta);
  free(data);
}

static void test_rewritten_stats(void** state) {
  (void)state;
  char path[512], out[512];
  test_temp_path("known2.parquet", path, sizeof path);
  test_temp_path("rewritten.parquet", out, sizeof out);
  write_known(path, "row_group_size=4,dictionary=false");
  rewrite_footer(path, out);
  struct pfile p;
  struct sluice_error error = {0, {0}};
  int rc = pfile_open(out, &p, &error);
  if (rc != 0) fprintf(stderr, "%s\n", error.message);
  assert_int_equal(rc, 0);
  // Truncated bounds ("banana-0" .. "banana-4") are still bounds.
  expect(&p, "u>=banana", "0111");
  expect(&p, "u<banana", "1000");
  expect(&p, "u>banana-4", "0011");
  expect(&p, "u<banana-0", "1000");  // a value "banana-0xx..." is above the cut min
  expect(&p, "u=banana-1-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "0100");
  expect(&p, "u=banana-4", "0100");  // between the cut bounds: cannot be ruled out
  // Legacy min/max: trusted for signed order only.
  expect(&p, "l>=8", "0011");
  expect(&p, "I>=3221225472", "1111");
  // No null count: an all-null chunk is not known to be one.
  expect(&p, "ni>=0", "1111");
  expect(&p, "ni<112", "1110");
  pfile_close(&p);
  unlink(path);
  unlink(out);
}

/// Dictionary pages: with every chunk dictionary-encoded (sluice's writer),
/// an equality keeps exactly the row groups where some row passes, also
/// where the values lie between the statistics' bounds; other operators are
/// left to the statistics.
static void test_dictionary_pages(void** state) {
  (void)state;
  char path[512];
  test_temp_path("known_dict.parquet", path, sizeof path);
  write_known(path, "row_group_size=4");
  struct pfile p;
  struct sluice_error error = {0, {0}};
  int rc = pfile_open(path, &p, &error);
  if (rc != 0) fprintf(stderr, "%s\n", error.message);
  assert_int_equal(rc, 0);
  // Exact: a row group is kept if and only if some row passes.
  static const char* const equalities[] = {
      "l=5|13", "l=6|7", "l=100", "c=-3", "I=3221225472", "L=1", "S=32768", "C=7",
      "g=0", "g=-0.0", "g=5.5", "f=2", "u=banana-1", "u=cherry-2-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
      "tsn=2024-01-01 00:00:31", "tsm=2024-01-01 00:00:31.5", "d=2024-01-12", "z=%C0", "big=b"};
  for (size_t k = 0; k < sizeof equalities / sizeof *equalities; ++k) {
    int may[RGS];
    int64_t passing[RGS];
    assert_int_equal(check_filter(&p, equalities[k], may, passing), 0);
    for (int g = 0; g < RGS; ++g) {
      if (may[g] != (passing[g] > 0))
        fprintf(stderr, "'%s': row group %d kept %d, rows passing %lld\n", equalities[k], g,
                may[g], (long long)passing[g]);
      assert_int_equal(may[g], passing[g] > 0);
    }
  }
  expect(&p, "g>=-0.0", "1111");  // not an equality: the statistics' answer
  expect(&p, "c>=0", "0011");
  pfile_close(&p);
  unlink(path);
}

/// encoding_stats as the writer puts them (a dictionary page, then the data
/// pages' entry) parse back to "every data page dictionary-encoded"; a
/// damaged entry (a page type that is a string) skips the list, not the
/// file, and the fields after it still count.
static void test_encoding_stats(void** state) {
  (void)state;
  char path[512];
  test_temp_path("stats_enc.parquet", path, sizeof path);
  write_known(path, "row_group_size=4");
  size_t size = 0;
  uint8_t* data = test_read_file(path, &size);
  assert_non_null(data);
  uint32_t len = (uint32_t)data[size - 8] | (uint32_t)data[size - 7] << 8 |
                 (uint32_t)data[size - 6] << 16 | (uint32_t)data[size - 5] << 24;
  assert_true(len + 12 <= size);
  const uint8_t* footer = data + size - 8 - len;
  struct pq_file_meta meta;
  struct sluice_error error = {0, {0}};
  assert_int_equal(sl_pq_file_meta_parse(footer, len, NULL, &meta, &error), 0);
  const struct pq_column_meta* m = &meta.row_groups[0].columns[0].meta_data;
  assert_int_equal(m->data_pages_dictionary, 1);
  int64_t stats = m->statistics.null_count;
  sl_pq_file_meta_free(&meta);
  // Field 13 (list of 2 structs), then field 1 (i32) = DICTIONARY_PAGE
  // (zigzag 4): made field 1 the string "A".
  static const uint8_t pattern[] = {0x19, 0x2C, 0x15, 0x04};
  const uint8_t* at = NULL;
  for (size_t i = 0; i + sizeof pattern <= len && at == NULL; ++i)
    if (memcmp(footer + i, pattern, sizeof pattern) == 0) at = footer + i;
  assert_non_null(at);
  size_t head = (size_t)(at - footer) + 2;
  static const uint8_t text[] = {0x18, 0x01, 'A'};
  size_t n = len - 2 + sizeof text;
  uint8_t* bad = malloc(n);
  assert_non_null(bad);
  memcpy(bad, footer, head);
  memcpy(bad + head, text, sizeof text);
  memcpy(bad + head + sizeof text, footer + head + 2, len - head - 2);
  error.code = 0;
  int rc = sl_pq_file_meta_parse(bad, (int64_t)n, NULL, &meta, &error);
  if (rc != 0) fprintf(stderr, "%s\n", error.message);
  assert_int_equal(rc, 0);
  assert_int_equal(error.code, 0);
  m = &meta.row_groups[0].columns[0].meta_data;
  assert_int_equal(m->data_pages_dictionary, -1);
  assert_true(m->statistics.null_count == stats);  // parsed before the list
  assert_int_equal(meta.row_groups[0].columns[1].meta_data.data_pages_dictionary, 1);
  sl_pq_file_meta_free(&meta);
  free(bad);
  free(data);
  unlink(path);
}

/// Bloom filters: xxHash64 against its reference value, parquet-mr's filter
/// of "hello", "parquet", "bloom", "filter" (parquet-testing's
/// bloom_filter.xxhash.bin: a 16-byte header, 1,024 bytes of bits), and
/// headers sluice must not use: the deprecated murmur3 filter, cut or forged.
static void test_bloom_filter(void** state) {
  (void)state;
  assert_true(sl_pq_bloom_hash("", 0) == 0xEF46DB3751D8E999ULL);  // XXH64 of nothing, seed 0
  char path[1024];
  size_t size = 0;
  uint8_t* data = test_read_file(data_path("bloom_filter.xxhash.bin", path, sizeof path), &size);
  if (data == NULL) {
    fprintf(stderr, "corpus %s not found: skipped\n", path);
    skip();
  }
  struct sluice_error err = {0, {0}};
  int64_t header = 0, bits = 0;
  assert_int_equal(sl_pq_bloom_header_parse(data, (int64_t)size, &header, &bits, &err), 0);
  assert_int_equal(header, 16);
  assert_int_equal(bits, 1024);
  assert_int_equal((int64_t)size, header + bits);
  const char* in[] = {"hello", "parquet", "bloom", "filter"};
  for (int i = 0; i < 4; ++i) {
    assert_int_equal(sl_pq_bloom_may_contain(data + header, bits, sl_pq_bloom_hash(in[i], strlen(in[i]))), 1);
  }
  // Of many values never put in, few look present (4 of 8,192 bits set per value).
  int present = 0;
  for (int i = 0; i < 10000; ++i) {
    char v[32];
    int n = snprintf(v, sizeof v, "absent-%d", i);
    present += sl_pq_bloom_may_contain(data + header, bits, sl_pq_bloom_hash(v, (size_t)n));
  }
  assert_true(present < 100);
  // Cut short, a bitset length that is not whole blocks, another algorithm.
  assert_int_not_equal(sl_pq_bloom_header_parse(data, 5, &header, &bits, &err), 0);
  uint8_t forged[16];
  memcpy(forged, data, sizeof forged);
  forged[1] = 0x82;  // numBytes zigzag varint 0x1082 -> 1025 (not whole blocks)
  assert_int_not_equal(sl_pq_bloom_header_parse(forged, 16, &header, &bits, &err), 0);
  memcpy(forged, data, sizeof forged);
  assert_int_equal(forged[4], 0x1c);  // BloomFilterAlgorithm's member: field 1, a struct
  forged[4] = 0x2c;                   // ... now field 2, which sluice does not know
  assert_int_not_equal(sl_pq_bloom_header_parse(forged, 16, &header, &bits, &err), 0);
  free(data);
  // Writing: the header parses back; a filter sized for 1,000 values holds
  // them all and few others at its rate.
  struct sl_buffer hb;
  sl_buffer_init(&hb, NULL);
  int64_t want = sl_pq_bloom_size(1000, 0.01);
  assert_int_equal(want & (want - 1), 0);  // a power of two
  assert_true(want * 8 >= 9000 && want <= 4096);
  assert_int_equal(sl_pq_bloom_size(1, 0.01), 32);
  assert_int_equal(sl_pq_bloom_size(INT64_C(1) << 40, 0.01), INT64_C(128) << 20);
  assert_int_equal(sl_pq_bloom_header_write(want, &hb, &err), 0);
  assert_int_equal(sl_pq_bloom_header_parse(hb.data, hb.size, &header, &bits, &err), 0);
  assert_int_equal(header, hb.size);
  assert_int_equal(bits, want);
  sl_buffer_reset(&hb);
  uint8_t* made = calloc(1, (size_t)want);
  assert_non_null(made);
  for (int64_t i = 0; i < 1000; ++i) sl_pq_bloom_insert(made, want, sl_pq_bloom_hash(&i, sizeof i));
  for (int64_t i = 0; i < 1000; ++i) assert_int_equal(sl_pq_bloom_may_contain(made, want, sl_pq_bloom_hash(&i, sizeof i)), 1);
  present = 0;
  for (int64_t i = 1000; i < 21000; ++i) present += sl_pq_bloom_may_contain(made, want, sl_pq_bloom_hash(&i, sizeof i));
  assert_true(present < 20000 / 40);  // well under 2.5% at a 1% design rate
  free(made);
  uint8_t* old = test_read_file(data_path("bloom_filter.bin", path, sizeof path), &size);
  if (old != NULL) {  // the deprecated binary header with murmur3
    assert_int_not_equal(sl_pq_bloom_header_parse(old, (int64_t)size, &header, &bits, &err), 0);
    free(old);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_stats),
      cmocka_unit_test(test_rewritten_stats),
      cmocka_unit_test(test_dictionary_pages),
      cmocka_unit_test(test_encoding_stats),
      cmocka_unit_test(test_corpus_prunes),
      cmocka_unit_test(test_corpus_sound),
      cmocka_unit_test(test_bloom_filter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
