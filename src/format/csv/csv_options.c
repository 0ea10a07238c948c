// CSV options from a "key=value,key=value" string (sl_reader_args
// format_options). Keys:
//   delimiter=comma|semicolon|tab|pipe|<one char>   (default: sniffed)
//   quote=<char>|none          escape=backslash|<char>|none
//   comment=<char>|none        (a line starting with it is skipped; default: '#' when
//                              sniffed, see csv_dialect.c, else none)
//   null_values=A|B|...        the null spellings, replacing the default set
//                              ("", NA, NULL, null); an empty item is the empty
//                              field, so "null_values=" means only empty fields
//   header=true|false|auto     schema=name:type|name:type (type: int64, float64,
//   string, bool, date32, timestamp, timestamp[us, tz=UTC], decimal128(10, 2):
//   pyarrow's spellings; or an Arrow format)
//   missing_fields=error|null  bad_rows=error|skip
//   stray_quotes=error|text    (text: quotes open quoting only at a field's start)
//   split_size=N[k|m|g]  infer_bytes=N[k|m|g]|all  batch_bytes=N[k|m|g]
//   max_row_bytes=N[k|m|g]     (the longest row a stream holds; see csv_stream.c)
//   max_columns=N              (the most fields a row may have; see csv_internal.h)
//   simd=auto|scalar|sse2|avx2, fastpath=true|false (tests)
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "core/sl_utf8.h"
#include "core/sl_value_text.h"
#include "core/sl_options.h"

struct type_alias {
  const char* name;
  const char* format;
};

static const struct type_alias csv_type_aliases[] = {
    {"bool", "b"},         {"boolean", "b"},       {"int8", "c"},       {"int16", "s"},
    {"int32", "i"},        {"int64", "l"},         {"uint8", "C"},      {"uint16", "S"},
    {"uint32", "I"},       {"uint64", "L"},        {"float32", "f"},    {"float", "f"},
    {"float64", "g"},      {"double", "g"},        {"string", "u"},     {"utf8", "u"},
    {"large_string", "U"}, {"large_utf8", "U"},    {"date32", "tdD"},   {"date", "tdD"},
    {"date32[day]", "tdD"}, {"date64", "tdm"},     {"date64[ms]", "tdm"},
    {"float16", "e"},      {"halffloat", "e"},     {"null", "n"},
    {"binary", "z"},       {"large_binary", "Z"},  {"timestamp", "tsu:"},
    {"time", "ttu"},       {"time64[us]", "ttu"},  {"time64[ns]", "ttn"},
    {"time32[s]", "tts"},  {"time32[ms]", "ttm"},
};

/// The unit letter of "s", "ms", "us" or "ns" (`n` bytes), or 0.
static char unit_letter(const char* u, size_t n) {
  if (n == 1 && u[0] == 's') return 's';
  if (n == 2 && u[1] == 's' && (u[0] == 'm' || u[0] == 'u' || u[0] == 'n')) return u[0];
  return 0;
}

/// A parameterised type as pyarrow prints it (so str(pa_type) works), into
/// the Arrow format `out`: timestamp[us], timestamp[us, tz=UTC] (or
/// timestamp[us,UTC]), duration[ms], decimal128(10, 2), decimal256(40, 5).
/// 0 when `t` is none of these.
static int parameterised_format(const char* t, size_t n, char* out, size_t cap) {
  const char* end = t + n;
  if (n > 11 && memcmp(t, "timestamp[", 10) == 0 && end[-1] == ']') {
    const char* u = t + 10;
    const char* comma = memchr(u, ',', (size_t)(end - 1 - u));
    const char* u_end = comma != NULL ? comma : end - 1;
    char unit = unit_letter(u, (size_t)(u_end - u));
    if (unit == 0) return 0;
    const char* zone = u_end;
    if (comma != NULL) {
      zone = comma + 1;
      while (zone < end - 1 && *zone == ' ') ++zone;
      if (end - 1 - zone > 3 && memcmp(zone, "tz=", 3) == 0) zone += 3;
      if (zone == end - 1) return 0;
    }
    int w = snprintf(out, cap, "ts%c:%.*s", unit, (int)(end - 1 - zone), zone);
    return w > 0 && (size_t)w < cap;
  }
  if (n > 10 && memcmp(t, "duration[", 9) == 0 && end[-1] == ']') {
    char unit = unit_letter(t + 9, n - 10);
    return unit != 0 && snprintf(out, cap, "tD%c", unit) > 0;
  }
  if (n > 12 && (memcmp(t, "decimal128(", 11) == 0 || memcmp(t, "decimal256(", 11) == 0) &&
      end[-1] == ')') {
    char digits[2][8];
    const char* p = t + 11;
    for (int k = 0; k < 2; ++k) {  // precision, then scale (may be negative)
      while (p < end && *p == ' ') ++p;
      size_t d = 0;
      if (k == 1 && p < end && *p == '-') digits[k][d++] = *p++;
      while (p < end && *p >= '0' && *p <= '9' && d < sizeof digits[k] - 1) digits[k][d++] = *p++;
      digits[k][d] = '\0';
      if (d == 0 || p >= end || *p != (k == 0 ? ',' : ')')) return 0;
      ++p;
    }
    if (p != end) return 0;
    int w = snprintf(out, cap, "d:%s,%s%s", digits[0], digits[1], t[7] == '2' ? ",256" : "");
    return w > 0 && (size_t)w < cap;
  }
  return 0;
}

static void free_schema(struct csv_options* o, const struct sluice_allocator* alloc) {
  for (int64_t i = 0; i < o->n_schema; ++i) {
    sl_free(alloc, o->schema[i].name, strlen(o->schema[i].name) + 1);
    sl_free(alloc, o->schema[i].format, strlen(o->schema[i].format) + 1);
  }
  sl_free(alloc, o->schema, (size_t)o->n_schema * sizeof *o->schema);
  o->schema = NULL;
  o->n_schema = 0;
}

static void free_nulls(struct csv_nulls* nl, const struct sluice_allocator* alloc) {
  sl_free(alloc, nl->text, (size_t)nl->n * sizeof *nl->text);
  sl_free(alloc, nl->len, (size_t)nl->n * sizeof *nl->len);
  if (nl->storage != NULL) sl_free(alloc, nl->storage, nl->storage_len + 1);
  memset(nl, 0, sizeof *nl);
}

void sl_csv_options_free(struct csv_options* o, const struct sluice_allocator* alloc) {
  free_schema(o, alloc);
  free_nulls(&o->nulls, alloc);
}

// "A|B|" -> {"A", "B", ""}: '|' separates spellings (',' separates options).
static int parse_nulls(const char* v, size_t n, const struct sluice_allocator* alloc,
                       struct csv_nulls* nl, struct sluice_error* error) {
  free_nulls(nl, alloc);
  int64_t count = 1;
  for (size_t i = 0; i < n; ++i) count += v[i] == '|';
  nl->storage = sl_strndup(alloc, v, n);
  nl->text = sl_calloc(alloc, (size_t)count, sizeof *nl->text);
  nl->len = sl_calloc(alloc, (size_t)count, sizeof *nl->len);
  nl->n = count;
  nl->storage_len = n;
  if (nl->storage == NULL || nl->text == NULL || nl->len == NULL) {
    free_nulls(nl, alloc);
    return sl_error_set(error, ENOMEM, "out of memory parsing null_values");
  }
  nl->custom = 1;
  size_t i = 0;
  for (int64_t k = 0; k < count; ++k) {
    size_t j = i;
    while (j < n && v[j] != '|') ++j;
    nl->text[k] = (const uint8_t*)nl->storage + i;
    nl->len[k] = (int64_t)(j - i);
    i = j + 1;
  }
  return 0;
}

static int parse_size(const char* v, size_t n, int64_t* out) {
  if (n == 3 && memcmp(v, "all", 3) == 0) {
    *out = -1;
    return 1;
  }
  return sl_parse_size(v, n, 0, INT64_MAX, out) == 0;
}

static int parse_char(const char* v, size_t n, int allow_none, int* out) {
  static const struct {
    const char* name;
    int c;
  } names[] = {{"comma", ','}, {"semicolon", ';'}, {"tab", '\t'}, {"\\t", '\t'},
               {"pipe", '|'},  {"space", ' '},     {"backslash", '\\'},
               {"dquote", '"'}, {"squote", '\''}};
  if (allow_none && n == 4 && memcmp(v, "none", 4) == 0) {
    *out = 0;
    return 1;
  }
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    if (strlen(names[i].name) == n && memcmp(v, names[i].name, n) == 0) {
      *out = names[i].c;
      return 1;
    }
  }
  if (n == 1 && v[0] != '\n' && v[0] != '\r' && v[0] != '\0') {
    *out = (unsigned char)v[0];
    return 1;
  }
  return 0;
}

static int parse_schema(const char* v, size_t n, const struct sluice_allocator* alloc,
                        struct csv_options* o, struct sluice_error* error) {
  int64_t count = 1;
  for (size_t i = 0; i < n; ++i) count += v[i] == '|';
  o->schema = sl_calloc(alloc, (size_t)count, sizeof *o->schema);
  if (o->schema == NULL) return sl_error_set(error, ENOMEM, "out of memory parsing schema");
  size_t i = 0;
  while (i <= n) {
    size_t j = i;
    while (j < n && v[j] != '|') ++j;
    // The first ':' ends the name (a name's own ':' is %3A); an empty name
    // is the column an empty header field names.
    const char* colon = memchr(v + i, ':', j - i);
    if (colon == NULL) {
      return sl_error_set(error, EINVAL, "schema entry '%.*s': expected name:type", (int)(j - i),
                          v + i);
    }
    size_t name_len = (size_t)(colon - (v + i));
    const char* t = colon + 1;
    size_t t_len = (size_t)(v + j - t);
    const char* format = NULL;
    for (size_t k = 0; k < sizeof csv_type_aliases / sizeof csv_type_aliases[0]; ++k) {
      if (strlen(csv_type_aliases[k].name) == t_len &&
          memcmp(csv_type_aliases[k].name, t, t_len) == 0) {
        format = csv_type_aliases[k].format;
      }
    }
    char parameterised[128];
    if (format == NULL && parameterised_format(t, t_len, parameterised, sizeof parameterised))
      format = parameterised;
    if (format == NULL && t_len >= 10 && memcmp(t, "dictionary", 10) == 0) {
      return sl_error_set(error, ENOTSUP, "schema: column '%.*s': dictionary types are not "
                          "supported in a CSV schema (read the column as string, then "
                          "dictionary-encode it)", (int)name_len, v + i);
    }
    struct csv_schema_entry* e = &o->schema[o->n_schema];
    // %XX escapes spell the characters that separate (",", "|", ":", "%").
    e->name = sl_percent_decoded(v + i, name_len, alloc);
    e->format = format != NULL ? sl_strdup(alloc, format) : sl_strndup(alloc, t, t_len);
    if (e->name == NULL || e->format == NULL) {
      if (e->name != NULL) sl_free(alloc, e->name, strlen(e->name) + 1);
      if (e->format != NULL) sl_free(alloc, e->format, strlen(e->format) + 1);
      e->name = e->format = NULL;
      return sl_error_set(error, ENOMEM, "out of memory parsing schema");
    }
    o->n_schema++;
    int64_t bad_at = sl_utf8_invalid_at((const uint8_t*)e->name, (int64_t)strlen(e->name));
    if (bad_at >= 0) {  // (a %XX escape spelled it: column names are UTF-8 text)
      char shown[160];
      return sl_error_set(error, EINVAL, "schema: column name '%s' is not valid UTF-8 (at byte "
                          "%" PRId64 ")", sl_escaped(e->name, strlen(e->name), '\'', shown,
                                                     sizeof shown), bad_at);
    }
    for (int64_t k = 0; k + 1 < o->n_schema; ++k) {
      if (strcmp(o->schema[k].name, e->name) == 0) {  // which would win is a guess
        char a[64], b[64];
        sl_format_name(o->schema[k].format, a, sizeof a);
        sl_format_name(e->format, b, sizeof b);
        return sl_error_set(error, EINVAL, "schema names column '%s' twice (%s and %s): give "
                            "one type", e->name, a, b);
      }
    }
    struct sl_type type;
    if (sl_type_parse(e->format, &type, error) != 0) {
      return sl_error_prefix(error, "schema entry '%.*s'", (int)(j - i), v + i);
    }
    i = j + 1;
  }
  return 0;
}

static int is_delimiter(const struct sl_option* o) {
  return sl_option_is(o, "delimiter") || sl_option_is(o, "delim") || sl_option_is(o, "sep");
}

/// An error when `item`, the delimiter, follows one in text[0, upto) that
/// differs under another of its names: which was meant is a guess, so
/// neither silently wins (a key given twice so is refused before any reader
/// opens: sl_option_conflict).
static int check_repeated(const char* text, const char* upto, const struct sl_option* item,
                          struct sluice_error* error) {
  if (!is_delimiter(item)) return 0;
  struct sl_option earlier;
  while (text < upto && sl_option_next(&text, &earlier) > 0 && earlier.key != item->key) {
    if (!is_delimiter(&earlier) ||
        (earlier.value_len == item->value_len &&
         memcmp(earlier.value, item->value, item->value_len) == 0)) {
      continue;
    }
    char a[64], b[64];
    return sl_error_set(error, EINVAL, "CSV option delimiter given twice with different values "
                        "('%s' and '%s'; delim and sep are its other names): give one",
                        sl_escaped(earlier.value, earlier.value_len, '\'', a, sizeof a),
                        sl_escaped(item->value, item->value_len, '\'', b, sizeof b));
  }
  return 0;
}

int sl_csv_options_parse(const char* text, const struct sluice_allocator* alloc,
                      struct csv_options* o, struct sluice_error* error) {
  memset(o, 0, sizeof *o);
  o->delimiter = -1;
  o->quote = '"';
  o->header = -1;
  o->infer_bytes = INT64_C(1) << 20;
  o->batch_bytes = INT64_C(64) << 20;
  if (text == NULL) return 0;
  const char* const all = text;
  struct sl_option item;
  int more;
  while ((more = sl_option_next(&text, &item)) != 0) {
    if (more < 0) {
      sl_csv_options_free(o, alloc);
      return sl_error_set(error, EINVAL, "CSV option '%.*s': expected key=value",
                          (int)item.key_len, item.key);
    }
    if (check_repeated(all, item.key, &item, error) != 0) {
      sl_csv_options_free(o, alloc);
      return EINVAL;
    }
    const char* s = item.key;
    size_t klen = item.key_len, vlen = item.value_len;
    const char* v = item.value;
    int ok = 1, rc = 0;
#define KEY(lit) (klen == sizeof(lit) - 1 && memcmp(s, lit, klen) == 0)
    if (is_delimiter(&item)) {
      ok = parse_char(v, vlen, 0, &o->delimiter);
    } else if (KEY("quote")) {
      ok = parse_char(v, vlen, 1, &o->quote);
      o->quote_given = 1;
    } else if (KEY("escape")) {
      ok = parse_char(v, vlen, 1, &o->escape);
    } else if (KEY("comment")) {
      ok = parse_char(v, vlen, 1, &o->comment);
      o->comment_given = 1;
    } else if (KEY("null_values")) {
      rc = parse_nulls(v, vlen, alloc, &o->nulls, error);
    } else if (KEY("header")) {
      if (vlen == 4 && memcmp(v, "true", 4) == 0) o->header = 1;
      else if (vlen == 5 && memcmp(v, "false", 5) == 0) o->header = 0;
      else if (vlen == 4 && memcmp(v, "auto", 4) == 0) o->header = -1;
      else ok = 0;
    } else if (KEY("split_size")) {
      ok = parse_size(v, vlen, &o->split_size) && o->split_size > 0;
    } else if (KEY("infer_bytes")) {
      ok = parse_size(v, vlen, &o->infer_bytes) && o->infer_bytes != 0;
    } else if (KEY("batch_bytes")) {
      ok = parse_size(v, vlen, &o->batch_bytes) && o->batch_bytes > 0;
    } else if (KEY("max_row_bytes")) {
      ok = sl_parse_size(v, vlen, 0, INT64_MAX / 4, &o->max_row_bytes) == 0 &&
           o->max_row_bytes > 0;
    } else if (KEY("max_columns")) {
      ok = sl_parse_int64(v, vlen, 1, CSV_MAX_COLUMNS, &o->max_columns) == 0;
    } else if (KEY("simd")) {
      if (vlen == 6 && memcmp(v, "scalar", 6) == 0) o->impl = CSV_IMPL_SCALAR;
      else if (vlen == 4 && memcmp(v, "sse2", 4) == 0) o->impl = CSV_IMPL_SSE2;
      else if (vlen == 4 && memcmp(v, "avx2", 4) == 0) o->impl = CSV_IMPL_AVX2;
      else if (vlen == 4 && memcmp(v, "auto", 4) == 0) o->impl = CSV_IMPL_AUTO;
      else ok = 0;
    } else if (KEY("fastpath")) {
      if (vlen == 4 && memcmp(v, "true", 4) == 0) o->no_fastpath = 0;
      else if (vlen == 5 && memcmp(v, "false", 5) == 0) o->no_fastpath = 1;
      else ok = 0;
    } else if (KEY("missing_fields")) {
      if (vlen == 4 && memcmp(v, "null", 4) == 0) o->missing_null = 1;
      else if (vlen == 5 && memcmp(v, "error", 5) == 0) o->missing_null = 0;
      else ok = 0;
    } else if (KEY("stray_quotes")) {
      if (vlen == 4 && memcmp(v, "text", 4) == 0) o->stray_text = 1;
      else if (vlen == 5 && memcmp(v, "error", 5) == 0) o->stray_text = 0;
      else ok = 0;
    } else if (KEY("bad_rows")) {
      if (vlen == 4 && memcmp(v, "skip", 4) == 0) o->skip_bad_rows = 1;
      else if (vlen == 5 && memcmp(v, "error", 5) == 0) o->skip_bad_rows = 0;
      else ok = 0;
    } else if (KEY("schema")) {
      if (o->n_schema > 0) free_schema(o, alloc);
      rc = parse_schema(v, vlen, alloc, o, error);
    } else {
      sl_csv_options_free(o, alloc);
      return sl_error_set(error, EINVAL,
                          "unknown CSV option '%.*s' (known: delimiter, quote, escape, comment, "
                          "header, schema, null_values, missing_fields, bad_rows, stray_quotes, split_size, infer_bytes, "
                          "batch_bytes, max_row_bytes, max_columns)",
                          (int)klen, s);
    }
#undef KEY
    if (rc != 0) {
      sl_csv_options_free(o, alloc);
      return rc;
    }
    if (!ok) {
      sl_csv_options_free(o, alloc);
      char shown[64];
      return sl_error_set(error, EINVAL, "CSV option '%.*s': bad value '%s'", (int)klen, s,
                          sl_escaped(v, vlen, '\'', shown, sizeof shown));
    }
  }
  if (o->delimiter > 0 && (o->delimiter == o->quote || o->delimiter == o->escape)) {
    sl_csv_options_free(o, alloc);
    return sl_error_set(error, EINVAL, "CSV options: delimiter equals the quote/escape character");
  }
  if (o->comment != 0 && (o->comment == o->delimiter || o->comment == o->quote ||
                          o->comment == o->escape)) {
    sl_csv_options_free(o, alloc);
    return sl_error_set(error, EINVAL,
                        "CSV options: comment equals the delimiter/quote/escape character");
  }
  return 0;
}
