// Hive-style partition columns (see sluice_dataset_hive.h).
#include "sluice_dataset_hive.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/sl_alloc.h"
#include "../core/sl_array.h"
#include "../core/sl_error.h"
#include "../core/sl_row_filter.h"
#include "../core/sl_utf8.h"
#include "../core/sl_value_text.h"
#include "../core/sl_value_tz.h"

/// What Hive, Spark, pyarrow, polars and DuckDB write (and read) for a null.
#define HIVE_NULL "__HIVE_DEFAULT_PARTITION__"

void sl_hive_free(struct sl_hive* hive, const struct sluice_allocator* alloc) {
  if (hive->schema_only != NULL) {
    sl_free(alloc, hive->schema_only, (size_t)(hive->n_objects > 0 ? hive->n_objects : 1));
  }
  for (int64_t k = 0; hive->keys != NULL && k < hive->n_keys; ++k) {
    if (hive->keys[k] != NULL) sl_free(alloc, hive->keys[k], strlen(hive->keys[k]) + 1);
  }
  for (int64_t i = 0; hive->values != NULL && i < hive->n_keys * hive->n_objects; ++i) {
    if (hive->values[i] != NULL) sl_free(alloc, hive->values[i], hive->value_lens[i] + 1);
  }
  if (hive->keys != NULL) sl_free(alloc, hive->keys, (size_t)hive->n_keys * sizeof *hive->keys);
  if (hive->formats != NULL) {
    sl_free(alloc, (void*)hive->formats, (size_t)hive->n_keys * sizeof *hive->formats);
  }
  if (hive->values != NULL) {
    sl_free(alloc, hive->values, (size_t)(hive->n_keys * hive->values_cap) * sizeof *hive->values);
  }
  if (hive->value_lens != NULL) {
    sl_free(alloc, hive->value_lens,
            (size_t)(hive->n_keys * hive->values_cap) * sizeof *hive->value_lens);
  }
  memset(hive, 0, sizeof *hive);
}

/// The part of `location` that every object name starts with, as
/// sl_location_expand spells names: for an s3:// location, runs of '/' made
/// one, up to the last '/' before the first glob character with escapes
/// removed (a glob), or all of it (a prefix); for a local one
/// sl_location_local_root, which takes a directory that exists whole whatever its characters (`t=[x]/` was cut
/// at '[', and its own `t=[x]` became a partition key). Written into root
/// (cap bytes); 0 if it does not fit.
static int literal_root(const char* location, char* root, size_t cap) {
  const char* scheme = strstr(location, "://");
  if (scheme == NULL || strncmp(location, "file://", 7) == 0) {
    return sl_location_local_root(location, root, cap);
  }
  size_t keep = (size_t)(scheme - location) + 3;  // "s3://" stays
  if (keep + 1 >= cap) return 0;
  memcpy(root, location, keep);
  // The listing's prefix (sl_s3_list.c), leaving room for a trailing '/'.
  int glob;
  long len = sl_glob_literal_prefix(location + keep, root + keep, cap - keep - 1, &glob);
  if (len < 0) return 0;
  size_t n = keep;
  for (size_t i = keep; i < keep + (size_t)len; ++i) {
    if (root[i] == '/' && n > keep && root[n - 1] == '/') continue;
    root[n++] = root[i];
  }
  if (glob) {  // its directory part
    while (n > keep && root[n - 1] != '/') --n;
  } else if (root[n - 1] != '/') {
    root[n++] = '/';
  }
  root[n] = '\0';
  return 1;
}

/// The `key=value` directory segments of `rel` (a name below the root; its
/// last segment is the object itself), in order: calls visit for each.
/// Returns how many there are, or -1 when visit failed.
static int64_t for_each_pair(const char* rel,
                             int (*visit)(void* ctx, const char* key, size_t key_len,
                                          const char* value, size_t value_len),
                             void* ctx) {
  int64_t count = 0;
  for (;;) {
    const char* slash = strchr(rel, '/');
    if (slash == NULL) return count;  // the object's own name
    const char* eq = memchr(rel, '=', (size_t)(slash - rel));
    if (eq != NULL && eq > rel) {
      if (visit != NULL && visit(ctx, rel, (size_t)(eq - rel), eq + 1,
                                 (size_t)(slash - eq - 1)) != 0) {
        return -1;
      }
      ++count;
    }
    rel = slash + 1;
  }
}

struct detect_ctx {
  struct sl_hive* hive;
  const struct sluice_allocator* alloc;
  int64_t object;
  int64_t n_distinct;  ///< keys object 0 names (its first n_distinct slots)
  uint8_t* seen;  ///< n_keys flags: the keys the current object named so far
  int differs;    ///< the current object's keys are not object 0's
  int64_t not_utf8;  ///< 1 + the first object with a key or value not UTF-8 once decoded
};

static int is_utf8(const char* s, size_t n) {
  return sl_utf8_invalid_at((const uint8_t*)s, (int64_t)n) < 0;
}

/// Object 0 names the keys; every later object must have the same ones,
/// in any order (a=1/b=2 and b=3/a=4 are matched by name, as DuckDB does).
/// A key named again below (a=1/k=1/k=2) keeps its first value, as pyarrow
/// and DuckDB keep it; before, no key at all was a column then.
static int take_pair(void* arg, const char* key, size_t key_len, const char* value,
                     size_t value_len) {
  struct detect_ctx* c = arg;
  struct sl_hive* h = c->hive;
  char* name = sl_percent_decoded(key, key_len, c->alloc);
  if (name == NULL) return ENOMEM;
  // Refused, as pyarrow and DuckDB refuse it (no string column holds it),
  // once all objects are seen to have the same keys.
  if (!is_utf8(name, strlen(name)) && c->not_utf8 == 0) c->not_utf8 = 1 + c->object;
  int64_t k = 0;
  while (k < c->n_distinct && strcmp(name, h->keys[k]) != 0) ++k;
  if (c->object == 0 && k == c->n_distinct) {
    h->keys[c->n_distinct++] = name;
  } else {
    sl_free(c->alloc, name, strlen(name) + 1);
    if (k == c->n_distinct) {
      c->differs = 1;
      return EINVAL;
    }
    if (c->seen[k]) return 0;  // named again: the first value stays
  }
  c->seen[k] = 1;
  if (value_len == strlen(HIVE_NULL) && memcmp(value, HIVE_NULL, value_len) == 0) return 0;
  // %00 is a NUL byte in the value (a string holds it), as pyarrow and
  // DuckDB read it and as sluice's partitioned writes spell it.
  size_t len = 0;
  char* text = sl_percent_decoded_bytes(value, value_len, c->alloc, &len);
  if (text == NULL) return ENOMEM;
  if (!is_utf8(text, len) && c->not_utf8 == 0) c->not_utf8 = 1 + c->object;
  h->values[c->object * h->n_keys + k] = text;
  h->value_lens[c->object * h->n_keys + k] = len;
  return 0;
}

/// Whether s[0, n) is an int64 written as digits after an optional '-'
/// (leading zeros allowed), as pyarrow and polars infer an integer key:
/// `+3`, ` 3` and `3 ` stay text (sl_parse_int64 alone took the first two
/// as 3), and so does `3` followed by a NUL byte.
static int is_integer(const char* s, size_t n) {
  size_t sign = s[0] == '-';
  if (n == sign || strspn(s + sign, "0123456789") != n - sign) return 0;
  int64_t v;
  return sl_parse_int64(s, n, INT64_MIN, INT64_MAX, &v) == 0;
}

static int is_date(const char* s, size_t n) {
  int64_t days;
  return n == 10 && strlen(s) == 10 && sl_parse_ymd(s, &days) && days >= INT32_MIN && days <= INT32_MAX;
}

/// An integer key's value and the text that spelled it.
struct spelled_int {
  int64_t value;
  const char* text;
  size_t n;
};

static int by_value(const void* a, const void* b) {
  int64_t x = ((const struct spelled_int*)a)->value, y = ((const struct spelled_int*)b)->value;
  return (x > y) - (x < y);
}

/// Whether two of key k's values spell one integer differently (`007` and
/// `7`, `0` and `-0`): as integers they would merge distinct directories
/// (DuckDB keeps such keys as text; pyarrow and polars merge them). -1 when
/// out of memory.
static int spellings_collide(const struct sl_hive* h, int64_t k,
                             const struct sluice_allocator* alloc) {
  struct spelled_int* all = sl_calloc(alloc, (size_t)h->n_objects, sizeof *all);
  if (all == NULL) return -1;
  size_t n = 0;
  for (int64_t o = 0; o < h->n_objects; ++o) {
    const char* v = h->values[o * h->n_keys + k];
    if (v == NULL) continue;
    all[n].text = v;
    all[n].n = h->value_lens[o * h->n_keys + k];
    sl_parse_int64(v, all[n].n, INT64_MIN, INT64_MAX, &all[n].value);
    ++n;
  }
  qsort(all, n, sizeof *all, by_value);
  int collide = 0;
  for (size_t i = 1; i < n && !collide; ++i) {
    collide = all[i].value == all[i - 1].value &&
              (all[i].n != all[i - 1].n || memcmp(all[i].text, all[i - 1].text, all[i].n) != 0);
  }
  sl_free(alloc, all, (size_t)h->n_objects * sizeof *all);
  return collide;
}

/// Each key's type: the narrowest that all its values (nulls aside) spell,
/// and that keeps distinct values distinct.
static int infer_formats(struct sl_hive* h, const struct sluice_allocator* alloc) {
  for (int64_t k = 0; k < h->n_keys; ++k) {
    int ints = 1, dates = 1;
    for (int64_t o = 0; o < h->n_objects; ++o) {
      const char* v = h->values[o * h->n_keys + k];
      if (v == NULL) continue;
      size_t n = h->value_lens[o * h->n_keys + k];
      ints = ints && is_integer(v, n);
      dates = dates && is_date(v, n);
    }
    if (ints) {
      int collide = spellings_collide(h, k, alloc);
      if (collide < 0) return ENOMEM;
      ints = !collide;
    }
    h->formats[k] = ints ? "l" : dates ? "tdD" : "u";
  }
  return 0;
}

static int different_keys(const char* location, const struct sl_location_list* names,
                          size_t object, struct sluice_error* error) {
  return sl_error_set(error, EINVAL, "%s: '%s' and '%s' are partitioned by different keys "
                      "(--no-hive, in Python hive_partitioning=False, reads the objects without "
                      "partitions)", location, names->names[0], names->names[object]);
}

/// Shrinks `h` (room for h->n_keys keys) to its first `n` keys: a key named
/// twice left slots unused.
static int keep_distinct(struct sl_hive* h, int64_t n, const struct sluice_allocator* alloc) {
  char** keys = sl_calloc(alloc, (size_t)n, sizeof *keys);
  const char** formats = sl_calloc(alloc, (size_t)n, sizeof *formats);
  char** values = sl_calloc(alloc, (size_t)(n * h->n_objects), sizeof *values);
  size_t* lens = sl_calloc(alloc, (size_t)(n * h->n_objects), sizeof *lens);
  if (keys == NULL || formats == NULL || values == NULL || lens == NULL) {
    if (keys != NULL) sl_free(alloc, keys, (size_t)n * sizeof *keys);
    if (formats != NULL) sl_free(alloc, (void*)formats, (size_t)n * sizeof *formats);
    if (values != NULL) sl_free(alloc, values, (size_t)(n * h->n_objects) * sizeof *values);
    if (lens != NULL) sl_free(alloc, lens, (size_t)(n * h->n_objects) * sizeof *lens);
    return ENOMEM;
  }
  memcpy(keys, h->keys, (size_t)n * sizeof *keys);
  for (int64_t o = 0; o < h->n_objects; ++o) {
    memcpy(values + o * n, h->values + o * h->n_keys, (size_t)n * sizeof *values);
    memcpy(lens + o * n, h->value_lens + o * h->n_keys, (size_t)n * sizeof *lens);
  }
  sl_free(alloc, h->keys, (size_t)h->n_keys * sizeof *h->keys);
  sl_free(alloc, (void*)h->formats, (size_t)h->n_keys * sizeof *h->formats);
  sl_free(alloc, h->values, (size_t)(h->n_keys * h->values_cap) * sizeof *h->values);
  sl_free(alloc, h->value_lens, (size_t)(h->n_keys * h->values_cap) * sizeof *h->value_lens);
  h->keys = keys;
  h->formats = formats;
  h->values = values;
  h->value_lens = lens;
  h->n_keys = n;
  h->values_cap = h->n_objects;
  return 0;
}

int sl_hive_detect(const char* location, const struct sl_location_list* names,
                   const struct sluice_allocator* alloc, struct sl_hive* out,
                   struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  char root[4096];
  if (names->n == 0 || !literal_root(location, root, sizeof root)) return 0;
  size_t root_len = strlen(root);
  // Every object must name the same keys (in any order): a key missing from
  // some objects is an error, as DuckDB makes it, rather than a column of
  // nulls for them (pyarrow) or no partition columns at all. Room for the
  // most key segments an object has; a key named twice takes one column.
  int64_t n_keys = 0;
  for (size_t i = 0; i < names->n; ++i) {
    if (strncmp(names->names[i], root, root_len) != 0) return 0;
    int64_t n = for_each_pair(names->names[i] + root_len, NULL, NULL);
    if (n > n_keys) n_keys = n;
  }
  if (n_keys <= 0) return 0;
  out->n_keys = n_keys;
  out->n_objects = out->values_cap = (int64_t)names->n;
  out->keys = sl_calloc(alloc, (size_t)n_keys, sizeof *out->keys);
  out->formats = sl_calloc(alloc, (size_t)n_keys, sizeof *out->formats);
  out->values = sl_calloc(alloc, (size_t)(n_keys * out->n_objects), sizeof *out->values);
  out->value_lens = sl_calloc(alloc, (size_t)(n_keys * out->n_objects), sizeof *out->value_lens);
  if (out->keys == NULL || out->formats == NULL || out->values == NULL ||
      out->value_lens == NULL) {
    return sl_error_set(error, ENOMEM, "%s: out of memory reading partitions", location);
  }
  struct detect_ctx ctx = {out, alloc, 0, 0, sl_calloc(alloc, (size_t)n_keys, 1), 0, 0};
  if (ctx.seen == NULL) {
    return sl_error_set(error, ENOMEM, "%s: out of memory reading partitions", location);
  }
  int rc = 0;
  for (size_t i = 0; i < names->n; ++i) {
    ctx.object = (int64_t)i;
    memset(ctx.seen, 0, (size_t)n_keys);
    if (for_each_pair(names->names[i] + root_len, take_pair, &ctx) < 0) {
      rc = ctx.differs ? different_keys(location, names, i, error)
                       : sl_error_set(error, ENOMEM, "%s: out of memory reading partitions",
                                      location);
      break;
    }
    if (memchr(ctx.seen, 0, (size_t)ctx.n_distinct) != NULL) {  // a key of object 0 missing
      rc = different_keys(location, names, i, error);
      break;
    }
  }
  sl_free(alloc, ctx.seen, (size_t)n_keys);
  if (rc == 0 && ctx.n_distinct < n_keys && keep_distinct(out, ctx.n_distinct, alloc) != 0) {
    rc = sl_error_set(error, ENOMEM, "%s: out of memory reading partitions", location);
  }
  if (rc != 0) sl_hive_free(out, alloc);
  if (rc == 0 && out->keys != NULL && ctx.not_utf8 > 0) {
    rc = sl_error_set(error, EILSEQ, "%s: a partition key or value in '%s' is not UTF-8 once "
                      "%%XX-decoded (--no-hive reads the objects without partitions)", location,
                      names->names[ctx.not_utf8 - 1]);
    sl_hive_free(out, alloc);
  }
  if (rc == 0 && out->keys != NULL && infer_formats(out, alloc) != 0) {
    rc = sl_error_set(error, ENOMEM, "%s: out of memory reading partitions", location);
    sl_hive_free(out, alloc);
  }
  return rc;
}

int sl_hive_column(const struct sl_hive* hive, int64_t key, int64_t object, int64_t length,
                   const struct sluice_allocator* alloc, struct ArrowArray* out,
                   struct sluice_error* error) {
  const char* format = hive->formats[key];
  const char* value = hive->values[object * hive->n_keys + key];
  int utf8 = strcmp(format, "u") == 0;
  SL_RETURN_NOT_OK(sl_array_init(out, alloc, utf8 ? 3 : 2, 0, error));
  out->length = length;
  size_t n = length > 0 ? (size_t)length : 0;
  size_t vlen = value != NULL && utf8 ? hive->value_lens[object * hive->n_keys + key] : 0;
  // Sizes: offsets and data of a string column, values of the others (a
  // null's are zeros), a validity bitmap of zeros for a null.
  size_t width = utf8 ? 4 : strcmp(format, "l") == 0 ? 8 : 4;
  size_t bytes[3] = {value == NULL ? (n + 7) / 8 : 0, (n + (utf8 ? 1 : 0)) * width,
                     utf8 ? n * vlen : 0};
  if (utf8 && vlen > 0 && n > (size_t)INT32_MAX / vlen) {
    out->release(out);
    return sl_error_set(error, EOVERFLOW, "partition column '%s': %lld values of %zu bytes "
                        "pass 2 GiB", hive->keys[key], (long long)length, vlen);
  }
  if (bytes[1] == 0) bytes[1] = 8;  // no rows: still a values buffer
  for (int b = 0; b < (utf8 ? 3 : 2); ++b) {
    if (bytes[b] == 0) continue;
    uint8_t* data = sl_alloc_buffer(alloc, bytes[b]);
    if (data == NULL) {
      out->release(out);
      return sl_error_set(error, ENOMEM, "out of memory for partition column '%s'",
                          hive->keys[key]);
    }
    memset(data, 0, bytes[b]);
    sl_array_set_buffer_owned(out, b, data, (int64_t)bytes[b]);
  }
  uint8_t* values = (uint8_t*)out->buffers[1];
  if (value == NULL) {
    out->null_count = length;
  } else if (utf8) {
    int32_t* offsets = (int32_t*)(void*)values;
    uint8_t* data = (uint8_t*)out->buffers[2];
    for (size_t i = 0; i < n; ++i) {
      memcpy(data + i * vlen, value, vlen);
      offsets[i + 1] = (int32_t)((i + 1) * vlen);
    }
  } else if (width == 8) {
    int64_t v = 0;
    sl_parse_int64(value, strlen(value), INT64_MIN, INT64_MAX, &v);
    for (size_t i = 0; i < n; ++i) memcpy(values + i * 8, &v, 8);
  } else {
    int64_t days = 0;
    sl_parse_ymd(value, &days);
    int32_t d = (int32_t)days;
    for (size_t i = 0; i < n; ++i) memcpy(values + i * 4, &d, 4);
  }
  return 0;
}

/* ---- Filters ----------------------------------------------------------------- */


/// One parsed condition: key index, operator, values (decoded).
struct condition {
  int64_t key;
  enum sl_filter_op op;
  char** values;  ///< room for every value written ('|' between them)
  size_t* lens;   ///< of values[] (text may hold NUL bytes)
  int n_values;
  size_t capacity;
  /// A number no integer key holds (year>2023.5 is year>2023, year=2024.5
  /// leaves the list): -1 when no value passes, 1 when every non-null does.
  int verdict;
};

static void condition_free(struct condition* c, const struct sluice_allocator* alloc) {
  for (int i = 0; i < c->n_values; ++i) sl_free(alloc, c->values[i], c->lens[i] + 1);
  if (c->values != NULL) sl_free(alloc, c->values, c->capacity * sizeof *c->values);
  if (c->lens != NULL) sl_free(alloc, c->lens, c->capacity * sizeof *c->lens);
  c->values = NULL;
  c->lens = NULL;
  c->n_values = 0;
}

/// Sign of a[0, an) - b[0, bn) for a key of `format` (both already checked
/// to parse).
static int compare_as(const char* format, const char* a, size_t an, const char* b, size_t bn) {
  if (strcmp(format, "l") == 0) {
    int64_t x = 0, y = 0;
    sl_parse_int64(a, an, INT64_MIN, INT64_MAX, &x);
    sl_parse_int64(b, bn, INT64_MIN, INT64_MAX, &y);
    return (x > y) - (x < y);
  }
  // Dates YYYY-MM-DD order as text; text bytewise, NUL bytes included.
  int c = memcmp(a, b, an < bn ? an : bn);
  if (c == 0) c = (an > bn) - (an < bn);
  return (c > 0) - (c < 0);
}

static int passes(const struct sl_hive* h, const struct condition* c, int64_t object) {
  const char* v = h->values[object * h->n_keys + c->key];
  size_t vn = h->value_lens[object * h->n_keys + c->key];
  if (v == NULL) return 0;  // null passes no condition, as in SQL
  if (c->verdict != 0) return c->verdict > 0;
  const char* format = h->formats[c->key];
  if (c->op == SL_FILTER_EQ || c->op == SL_FILTER_NE) {
    int any = 0;
    for (int i = 0; i < c->n_values && !any; ++i) any = compare_as(format, v, vn, c->values[i], c->lens[i]) == 0;
    return c->op == SL_FILTER_EQ ? any : !any;
  }
  int s = compare_as(format, v, vn, c->values[0], c->lens[0]);
  return c->op == SL_FILTER_LT ? s < 0 : c->op == SL_FILTER_LE ? s <= 0 : c->op == SL_FILTER_GT ? s > 0 : s >= 0;
}

/// Parses filter[0, n) (one condition) into *c.
static int parse_condition(const struct sl_hive* h, const char* text, size_t n,
                           const struct sluice_allocator* alloc, struct condition* c,
                           struct sluice_error* error) {
  memset(c, 0, sizeof *c);
  char head[SL_FILTER_QUOTE_SIZE];  // a long condition is quoted by its start
  int shown_n;
  const char* shown = sl_filter_quoted(text, n, head, &shown_n);
  size_t k = strcspn(text, "=!<>");
  if (k == 0 || k >= n) {
    return sl_error_set(error, EINVAL, "partition filter '%.*s': expected KEY=VALUE, KEY!=VALUE, "
                        "KEY<VALUE, ...", shown_n, shown);
  }
  char* key = sl_percent_decoded(text, k, alloc);
  if (key == NULL) return sl_error_set(error, ENOMEM, "out of memory");
  c->key = -1;
  for (int64_t i = 0; i < h->n_keys && c->key < 0; ++i) c->key = strcmp(key, h->keys[i]) == 0 ? i : -1;
  if (c->key < 0) {
    char list[256] = "";
    size_t used = 0;
    for (int64_t i = 0; i < h->n_keys && used < sizeof list; ++i) {
      int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", h->keys[i]);
      if (w > 0) used += (size_t)w;
    }
    int rc = sl_error_set(error, EINVAL, "partition filter: '%s' is not a partition key (the "
                          "keys are: %s)", key, list);
    sl_free(alloc, key, strlen(key) + 1);
    return rc;
  }
  sl_free(alloc, key, strlen(key) + 1);
  const char* p = text + k;
  size_t left = n - k;
  size_t op_len = sl_filter_op_parse(p, left, &c->op);
  if (op_len == 0) {
    return sl_error_set(error, EINVAL, "partition filter '%.*s': unknown operator", shown_n,
                        shown);
  }
  p += op_len;
  left -= op_len;
  const char* format = h->formats[c->key];
  c->capacity = 1;
  for (size_t i = 0; i < left; ++i) c->capacity += p[i] == '|';
  if (c->capacity > INT32_MAX / sizeof *c->values) {
    return sl_error_set(error, EINVAL, "partition filter on key '%s': %zu values, more than %d",
                        h->keys[c->key], c->capacity, (int)(INT32_MAX / sizeof *c->values));
  }
  c->values = sl_alloc(alloc, c->capacity * sizeof *c->values);
  c->lens = sl_alloc(alloc, c->capacity * sizeof *c->lens);
  if (c->values == NULL || c->lens == NULL) return sl_error_set(error, ENOMEM, "out of memory");
  int n_given = 0;  // values written, those an integer key drops included
  for (;;) {
    size_t m = 0;
    while (m < left && p[m] != '|') ++m;
    ++n_given;
    // %00 decoded as row filters and directory names decode it (a NUL byte).
    size_t vn = 0;
    char* v = sl_percent_decoded_bytes(p, m, alloc, &vn);
    if (v == NULL) return sl_error_set(error, ENOMEM, "out of memory");
    c->lens[c->n_values] = vn;
    c->values[c->n_values++] = v;
    if (strcmp(format, "l") == 0 && !is_integer(v, vn)) {
      // Another number, compared as row filters compare it with an
      // integer column (as DuckDB and pyarrow do): year>2023.5 is year>2023.
      union sl_filter_value bound;
      int verdict = sl_filter_integer_bound(SL_FILTER_INT, v, vn, c->op, &bound);
      if (verdict == -2) {
        char quoted[96];
        return sl_error_set(error, EINVAL, "partition filter: '%s' is not a number, as the "
                            "values of '%s' are", sl_escaped(v, vn, '\'', quoted, sizeof quoted),
                            h->keys[c->key]);
      }
      sl_free(alloc, v, vn + 1);
      c->values[--c->n_values] = NULL;
      if (verdict == 0) {
        char digits[24];
        snprintf(digits, sizeof digits, "%lld", (long long)bound.i);
        c->values[c->n_values] = sl_strdup(alloc, digits);
        if (c->values[c->n_values] == NULL) return sl_error_set(error, ENOMEM, "out of memory");
        c->lens[c->n_values++] = strlen(digits);
      } else if (c->op != SL_FILTER_EQ && c->op != SL_FILTER_NE) {
        c->verdict = verdict;  // (one value: several are refused below)
      }  // (= and != with a value no key holds: it drops out of the list)
    } else if (strcmp(format, "tdD") == 0 && !is_date(v, vn)) {
      // A date-time, compared with the day's midnight as row filters
      // compare it with a date column: day>2024-01-01T12:00 is day>2024-01-01.
      union sl_filter_value bound;
      int verdict = sl_filter_date_bound(format, v, vn, c->op, &bound);
      if (verdict == -2) {
        char quoted[96];
        return sl_error_set(error, EINVAL, "partition filter: '%s' is not a YYYY-MM-DD date or a "
                            "date-time, as the values of '%s' are",
                            sl_escaped(v, vn, '\'', quoted, sizeof quoted), h->keys[c->key]);
      }
      sl_free(alloc, v, vn + 1);
      c->values[--c->n_values] = NULL;
      if (verdict == 0) {
        char day[48];
        sl_format_date(bound.i, day, sizeof day);
        c->values[c->n_values] = sl_strdup(alloc, day);
        if (c->values[c->n_values] == NULL) return sl_error_set(error, ENOMEM, "out of memory");
        c->lens[c->n_values++] = strlen(day);
      } else if (c->op != SL_FILTER_EQ && c->op != SL_FILTER_NE) {
        c->verdict = verdict;
      }
    }
    if (m == left) break;
    p += m + 1;
    left -= m + 1;
  }
  if (n_given > 1 && c->op != SL_FILTER_EQ && c->op != SL_FILTER_NE) {
    return sl_error_set(error, EINVAL, "partition filter '%.*s': several values ('|') go with = "
                        "and != only", shown_n, shown);
  }
  return 0;
}

int sl_hive_filter(struct sl_hive* hive, struct sl_location_list* names, const char* filter,
                   int keep_all,
                   const struct sluice_allocator* alloc, struct sluice_error* error) {
  int64_t n = hive->n_objects;
  uint8_t* keep = sl_alloc(alloc, (size_t)(n > 0 ? n : 1));
  if (keep == NULL) return sl_error_set(error, ENOMEM, "out of memory");
  memset(keep, 1, (size_t)(n > 0 ? n : 1));
  // Groups separated by ';' (a row filter's OR groups): an object is kept
  // when it passes every condition of some group.
  if (sl_filter_has_empty_condition(filter)) {
    sl_free(alloc, keep, (size_t)(n > 0 ? n : 1));
    return sl_error_set(error, EINVAL, "partition filter '%s': an empty condition (',' or ';' at "
                        "an end, or two in a row)", filter);
  }
  uint8_t* in_group = NULL;
  int rc = 0;
  if (strchr(filter, ';') != NULL) {
    in_group = sl_alloc(alloc, (size_t)(n > 0 ? n : 1));
    if (in_group == NULL) rc = sl_error_set(error, ENOMEM, "out of memory");
    else memset(keep, 0, (size_t)(n > 0 ? n : 1));
  }
  uint8_t* group = in_group != NULL ? in_group : keep;
  for (const char* at = filter; rc == 0;) {
    if (in_group != NULL) memset(in_group, 1, (size_t)(n > 0 ? n : 1));
    while (rc == 0 && *at != '\0' && *at != ';') {
      size_t len = strcspn(at, ",;");
      struct condition c;
      rc = parse_condition(hive, at, len, alloc, &c, error);
      for (int64_t o = 0; rc == 0 && o < n; ++o) group[o] = group[o] && passes(hive, &c, o);
      condition_free(&c, alloc);
      at += len + (at[len] == ',');
    }
    for (int64_t o = 0; in_group != NULL && o < n; ++o) keep[o] |= in_group[o];
    if (*at != ';') break;
    ++at;
  }
  if (in_group != NULL) sl_free(alloc, in_group, (size_t)(n > 0 ? n : 1));
  int64_t kept = 0;
  for (int64_t o = 0; o < n; ++o) kept += keep[o];
  if (rc == 0 && keep_all) {
    for (int64_t o = 0; o < n; ++o) keep[o] = !keep[o];  // now: refused
    hive->schema_only = keep;
    return 0;
  }
  if (rc == 0 && kept == 0 && n > 0) {  // the first object still gives the schema
    keep[0] = 1;
    hive->none_match = 1;
  }
  // Compact the names and the values rows of the objects kept.
  for (int64_t o = 0, w = 0; rc == 0 && o < n; ++o) {
    char** row = hive->values + o * hive->n_keys;
    size_t* lens = hive->value_lens + o * hive->n_keys;
    if (!keep[o]) {
      sl_free(alloc, names->names[o], strlen(names->names[o]) + 1);
      for (int64_t k = 0; k < hive->n_keys; ++k) {
        if (row[k] != NULL) sl_free(alloc, row[k], lens[k] + 1);
      }
      continue;
    }
    names->names[w] = names->names[o];
    names->sizes[w] = names->sizes[o];
    memmove(hive->values + w * hive->n_keys, row, (size_t)hive->n_keys * sizeof *row);
    memmove(hive->value_lens + w * hive->n_keys, lens, (size_t)hive->n_keys * sizeof *lens);
    ++w;
  }
  if (rc == 0) {
    int64_t w = kept > 0 ? kept : 1;
    for (int64_t i = w * hive->n_keys; i < n * hive->n_keys; ++i) hive->values[i] = NULL;
    names->n = (size_t)w;
    hive->n_objects = w;
  }
  sl_free(alloc, keep, (size_t)(n > 0 ? n : 1));
  return rc;
}
