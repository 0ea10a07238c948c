// Column conversion: tokenized fields of one column -> one Arrow builder. One
// loop per target type, so the per-value work is a field fetch, a null check
// and a parse (no dispatch per value).
//
// Nulls: an unquoted empty field, NA, NULL and null (or the null_values
// given) are null in every column, NaN in float columns. Quoted, one is
// the text in string columns ("NA" is the way to write that text, "" the
// empty string); in others it is the value it spells if it spells one (the
// writer quotes an int 1 when the null spelling is "1"; a quoted "NaN" is a
// NaN), else a null ("" in an int column; "NA" too where the type was
// given, as pyarrow and DuckDB read it by default; see null_field).
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "csv_reader_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "core/sl_utf8.h"

void sl_csv_split_where(const struct csv_split_state* s, int64_t pos, int64_t* line, int64_t* byte) {
  *line = s->lines_before + sl_csv_line_of(s->data, pos);
  *byte = s->base + pos;
}

int sl_csv_check_field_counts(struct csv_split_state* s, struct sluice_error* error) {
  const struct csv_rows* rows = &s->rows;
  int64_t want = s->r->layout.n_cols;
  for (int64_t r = 0; r < rows->n_rows; ++r) {
    int64_t n = rows->row_first[r + 1] - rows->row_first[r];
    if (n == want) continue;
    if (csv_trailing_delim_row(&s->r->layout, rows, r)) continue;
    int64_t line, at;
    sl_csv_split_where(s, rows->row_pos[r], &line, &at);
    int trailing = s->r->layout.trailing_delim && n == want + 1;
    int apostrophe = s->r->layout.dialect.quote == '\'' && !s->r->opts.quote_given;
    return sl_error_set(error, EILSEQ,
                        "%s: line %" PRId64 " (byte %" PRId64 "): expected %" PRId64
                        " fields, found %" PRId64 "%s",
                        s->r->name, line, at, want, n,
                        trailing ? " (the header ends in a delimiter, and the sampled rows left "
                                   "that field empty, so it was taken for a delimiter that ends "
                                   "every row; infer_bytes=all looks at every row)"
                        : apostrophe ? " (' was sniffed as the quote character; give quote=\" "
                                       "if apostrophes are text there)"
                                     : "");
  }
  return 0;
}

static int token_slow(struct csv_split_state* s, const struct csv_field* f, const uint8_t** p,
                      int64_t* n) {
  // The usual quoted field, "text" with no quote inside, is its text: a view
  // of the input, not an unescaped copy (W4's s3.csv quotes every string:
  // the copy was half of the read's time). The block tokenizers count each
  // field's quotes, so two at the ends need no search for more inside.
  const uint8_t* raw = s->data + f->pos;
  const struct csv_dialect* d = &s->r->layout.dialect;
  if (d->escape == 0 && d->quote != 0 && f->len >= 2 && raw[0] == d->quote &&
      raw[f->len - 1] == d->quote &&
      ((f->flags & CSV_FIELD_TWO_QUOTES) ||
       memchr(raw + 1, d->quote, (size_t)f->len - 2) == NULL)) {
    *p = raw + 1;
    *n = f->len - 2;
    return 0;
  }
  if (s->scratch_cap < f->len) {
    int64_t cap = f->len < 4096 ? 4096 : f->len;
    uint8_t* b = sl_alloc(s->r->alloc, (size_t)cap);
    if (b == NULL) return ENOMEM;
    sl_free(s->r->alloc, s->scratch, (size_t)s->scratch_cap);
    s->scratch = b;
    s->scratch_cap = cap;
  }
  *n = sl_csv_unescape(&s->r->layout.dialect, s->data + f->pos, f->len, s->scratch);
  *p = s->scratch;
  return 0;
}

static inline int token(struct csv_split_state* s, const struct csv_field* f, const uint8_t** p,
                        int64_t* n) {
  if (__builtin_expect(f->flags == 0, 1)) {
    *p = s->data + f->pos;
    *n = f->len;
    return 0;
  }
  return token_slow(s, f, p, n);
}

/// Whether field f, whose text p[0, n) is a null spelling, is still a value:
/// it is quoted and not empty. Asked only of null spellings, so that other
/// fields pay nothing for it.
static inline int quoted_value(const struct csv_split_state* s, const struct csv_field* f,
                               int64_t n) {
  uint8_t quote = s->r->layout.dialect.quote;
  return n > 0 && f->flags != 0 && quote != 0 && f->len > 0 && s->data[f->pos] == quote;
}

/// A time or timestamp with digits the column's unit cannot hold: an error,
/// not a value cut short (as pyarrow.csv).
#define TOO_FINE "more fraction digits than the unit holds in"
/// A zone offset in a timestamp column without a zone: an error (as
/// pyarrow.csv), not a value silently moved to UTC.
#define ZONED "a zone offset (the column's type has none) in"

/// A quoted null spelling that is no number in an inferred column that is
/// not a string: the text (see null_field), which widens the column to
/// string.
#define QUOTED_TEXT "a quoted null spelling, which is text (as in the sample), in"

static int zone_less(const struct csv_column* col) {
  return col->timezone == NULL || col->timezone[0] == '\0';
}

/// A value without a zone offset in a column whose zone is not UTC: which
/// instant it means is a guess (pyarrow.csv refuses it too). In a UTC column,
/// inferred or given, it is taken as UTC.
#define NAIVE "no zone offset (the column's zone is not UTC; give the offsets, or read the " \
              "column without a zone) in"

static int naive_needs_zone(const struct csv_column* col) {
  const char* tz = col->timezone;
  return !zone_less(col) && strcmp(tz, "UTC") != 0 && strcmp(tz, "Etc/UTC") != 0 &&
         strcmp(tz, "+00:00") != 0 && strcmp(tz, "Z") != 0;
}

/// Whether p[0, n) is a date-time with digits past the microsecond outside
/// timestamp[ns]'s range, or one outside timestamp[us]'s, which no timestamp
/// unit holds (as inference makes such a sampled column a string).
static int past_nanos(const uint8_t* p, int64_t n) {
  int64_t sec, v;
  int32_t ns;
  int zone;
  return sl_csv_parse_timestamp(p, n, &sec, &ns, &zone) &&
         ((ns % 1000 != 0 && !sl_timestamp_in_unit(sec, ns, 1000000000, &v)) ||
          !sl_timestamp_in_unit(sec, ns, 1000000, &v));
}

/// The step an inferred column must take to hold value p[0, n) that did not
/// fit it (`too_fine`: only its fraction was too long), or CSV_WIDEN_NONE.
static enum csv_widening widening_for(const struct csv_column* col, const uint8_t* p, int64_t n,
                                      const char* why) {
  double v;
  int too_fine = strcmp(why, TOO_FINE) == 0;
  if (strcmp(why, QUOTED_TEXT) == 0) return CSV_WIDEN_STRING;
  switch (col->conv) {
    case CV_INT: {  // true/false after 0/1: bools, as a sample holding both gives
      int b;
      if (sl_csv_parse_bool(p, n, &b)) return CSV_WIDEN_BOOL;
      return sl_csv_parse_double(p, n, &v) ? CSV_WIDEN_DOUBLE : CSV_WIDEN_STRING;
    }
    case CV_TIMESTAMP: case CV_TIME:
      if (strcmp(why, ZONED) == 0) return CSV_WIDEN_ZONE;  // timestamps only
      // (a date-time too fine for [us] and out of [ns]'s range: no unit holds it)
      return too_fine && col->unit != SL_NANO && !past_nanos(p, n) ? CSV_WIDEN_NANOS
                                                                         : CSV_WIDEN_STRING;
    case CV_DATE32: {  // a date-time after dates: timestamps, as a sample holding both gives
      int64_t sec;
      int32_t ns;
      int zone;
      return sl_csv_parse_timestamp(p, n, &sec, &ns, &zone) && !past_nanos(p, n)
                 ? CSV_WIDEN_TIMESTAMP
                 : CSV_WIDEN_STRING;
    }
    case CV_F64: case CV_BOOL: return CSV_WIDEN_STRING;
    default: return CSV_WIDEN_NONE;  // invalid UTF-8 stays an error
  }
}

/// The widened type as the schema option spells it.
static const char* widening_name(const struct csv_column* col, enum csv_widening w,
                                 const uint8_t* p, int64_t n) {
  if (w == CSV_WIDEN_ZONE) {
    static const char* const zoned[] = {"timestamp[s, tz=UTC]", "timestamp[ms, tz=UTC]",
                                        "timestamp[us, tz=UTC]", "timestamp[ns, tz=UTC]"};
    return zoned[col->unit == SL_SECOND ? 0 : col->unit == SL_MILLI ? 1
                 : col->unit == SL_MICRO ? 2 : 3];
  }
  if (w == CSV_WIDEN_NANOS) {
    if (col->conv == CV_TIME) return "time64[ns]";
    return !zone_less(col) ? "timestamp[ns,UTC]" : "timestamp[ns]";
  }
  // bool holds a column of 0/1 with true/false, but whether the column's
  // other numbers are all 0 or 1 is not known here: string holds either.
  if (w == CSV_WIDEN_BOOL) return "string";
  if (w == CSV_WIDEN_TIMESTAMP) {  // the type that holds this value (a re-read may widen on)
    int64_t sec;
    int32_t ns;
    int zone = 0;
    int nanos = sl_csv_parse_timestamp(p, n, &sec, &ns, &zone) && ns % 1000 != 0;
    return zone ? (nanos ? "timestamp[ns, tz=UTC]" : "timestamp[us, tz=UTC]")
                : (nanos ? "timestamp[ns]" : "timestamp[us]");
  }
  return w == CSV_WIDEN_DOUBLE ? "float64" : "string";
}

static int value_error(struct csv_split_state* s, int64_t c, const struct csv_field* f,
                       const uint8_t* p, int64_t n, const char* why,
                       struct sluice_error* error) {
  struct csv_reader* r = s->r;
  char shown[48];
  int64_t k = 0;
  for (; k < n && k < 40; ++k) shown[k] = p[k] >= 0x20 && p[k] < 0x7F ? (char)p[k] : '?';
  shown[k] = '\0';
  char tname[64];
  sl_format_name(r->layout.formats[c], tname, sizeof tname);
  char name[64];
  int64_t m = 0;
  for (const char* q = r->layout.names[c]; *q != '\0' && m < 60; ++q) {
    name[m++] = (unsigned char)*q >= 0x20 && (unsigned char)*q < 0x7F ? *q : '?';
  }
  name[m] = '\0';
  char hint[400];
  enum csv_widening w = CSV_WIDEN_NONE;
  if (!r->cols[c].user_type) w = widening_for(&r->cols[c], p, n, why);
  // Bytes that are not UTF-8 fit no text type: binary holds them.
  int not_text = strcmp(why, "invalid UTF-8 in") == 0;
  const char* wider = w != CSV_WIDEN_NONE ? widening_name(&r->cols[c], w, p, n)
                      : not_text         ? "binary"
                                         : "string";
  if (r->cols[c].user_type) {
    snprintf(hint, sizeof hint, "the type was given in the schema option%s",
             not_text ? "; binary holds bytes that are not text" : "");
  } else if (not_text) {
    snprintf(hint, sizeof hint, "the bytes are not text: pass schema=%s:binary (CLI: --schema "
             "%s:binary) to read them as bytes", name, name);
  } else if (w != CSV_WIDEN_NONE && csv_rereadable(r)) {
    // Refinement: the next scan reads the column as the wider type. Raised
    // as a maximum, since splits may disagree on how far.
    int seen = atomic_load(&r->widen[c]);
    while (seen < (int)w && !atomic_compare_exchange_weak(&r->widen[c], &seen, (int)w)) {
    }
    // (a re-read takes 0/1 with true/false as bools, and widens on to
    // string at a number past 1)
    const char* becomes = w == CSV_WIDEN_BOOL ? "bool (string if it holds numbers other than 0 "
                                                "and 1)"
                                              : wider;
    snprintf(hint, sizeof hint,
             "the type was inferred from a sample; the column becomes %s when the input is "
             "read again, as sluice convert, cat (its table, -o), stats and sluice.read do by "
             "themselves (sluice_dataset_refine in C); or pass schema=%s:%s or "
             "infer_bytes=all",
             becomes, name, wider);
  } else {
    snprintf(hint, sizeof hint,
             "the type was inferred from a sample (the first %" PRId64 " bytes, and in a "
             "whole file a few stretches further on); pass schema=%s:%s "
             "(CLI: --schema %s:%s) or infer_bytes=all",
             r->opts.infer_bytes, name, wider, name, wider);
  }
  int64_t line, at;
  sl_csv_split_where(s, f->pos, &line, &at);
  return sl_error_set(error, EILSEQ,
                      "%s: line %" PRId64 " (byte %" PRId64 "): column '%s': %s '%s%s' as %s (%s)",
                      r->name, line, at, name, why, shown,
                      n > 40 ? "..." : "", tname, hint);
}


static int64_t ts_scale(enum sl_time_unit u) {
  return u == SL_SECOND ? 1 : u == SL_MILLI ? 1000 : u == SL_MICRO ? 1000000 : 1000000000;
}

int sl_csv_field_converts(struct csv_split_state* s, int64_t c, const struct csv_field* f,
                       char* why, size_t why_cap, int* ok) {
  const struct csv_column* col = &s->r->cols[c];
  const uint8_t* p;
  int64_t n;
  if (token(s, f, &p, &n) != 0) return ENOMEM;
  *ok = 1;
  const char* problem = "cannot convert";
  // null (or "" in a string column): always fits
  if (csv_is_null(&s->r->opts.nulls, p, n) && !quoted_value(s, f, n)) return 0;
  switch (col->conv) {
    case CV_F64: {
      double v;
      *ok = sl_csv_parse_double(p, n, &v);
      break;
    }
    case CV_F32: {
      float v;
      *ok = sl_csv_parse_float(p, n, &v);
      break;
    }
    case CV_INT: {
      int64_t v;
      *ok = sl_csv_parse_int64(p, n, &v);
      if (!*ok) problem = sl_csv_integer_problem(p, n);
      if (*ok && col->width < 8) {
        int64_t lim = INT64_C(1) << (col->width * 8 - 1);
        if (v < -lim || v >= lim) *ok = 0, problem = "out of range:";
      }
      break;
    }
    case CV_UINT: {
      uint64_t v;
      *ok = sl_csv_parse_uint64(p, n, &v);
      if (!*ok) problem = sl_csv_integer_problem(p, n);
      if (*ok && col->width < 8 && v >> (col->width * 8) != 0) *ok = 0, problem = "out of range:";
      break;
    }
    case CV_BOOL: {
      int v;
      *ok = csv_is_bit(p, n) || sl_csv_parse_bool(p, n, &v);
      break;
    }
    case CV_DATE32: {
      int32_t v;
      *ok = sl_csv_parse_date32(p, n, &v);
      break;
    }
    case CV_TIMESTAMP: {
      int64_t sec, v;
      int32_t ns;
      int zone;
      const int64_t scale = ts_scale(col->unit);
      *ok = sl_csv_parse_timestamp(p, n, &sec, &ns, &zone);
      if (*ok && zone && zone_less(col)) {
        *ok = 0, problem = ZONED;
      } else if (*ok && !zone && naive_needs_zone(col)) {
        *ok = 0, problem = NAIVE;
      } else if (*ok && ns % (1000000000 / scale) != 0) {
        *ok = 0, problem = TOO_FINE;
      } else if (*ok && !sl_timestamp_in_unit(sec, ns, scale, &v)) {
        *ok = 0, problem = "out of range:";
      }
      break;
    }
    case CV_TIME: {
      int64_t ns;
      *ok = sl_csv_parse_time(p, n, &ns);
      if (*ok && ns % (1000000000 / ts_scale(col->unit)) != 0) *ok = 0, problem = TOO_FINE;
      break;
    }
    case CV_DECIMAL: {
      uint8_t le[32];
      *ok = sl_csv_parse_decimal(p, n, col->precision, col->scale, col->width, le,
                              &problem);
      break;
    }
    case CV_UTF8:
      *ok = sl_utf8_invalid_at(p, n) < 0;
      problem = "invalid UTF-8 in";
      break;
    case CV_BINARY:
      break;
  }
  if (!*ok) {
    char shown[48];
    int64_t k = 0;
    for (; k < n && k < 40; ++k) shown[k] = p[k] >= 0x20 && p[k] < 0x7F ? (char)p[k] : '?';
    shown[k] = '\0';
    char tname[64];
    sl_format_name(s->r->layout.formats[c], tname, sizeof tname);
    snprintf(why, why_cap, "column '%s': %s '%s%s' as %s", s->r->layout.names[c], problem, shown,
             n > 40 ? "..." : "", tname);
  }
  return 0;
}

enum { FIELD_VALUE, FIELD_NULL, FIELD_TEXT };

/// What field f of column c, whose text p[0, n) is a null spelling, is: a
/// null when unquoted. Quoted (and not empty) in a column of a given type:
/// the value it spells when it spells one (a quoted "1" under null_values=1
/// is the 1 the writer quoted to keep it), else a null ("NA" in an int
/// column, as pyarrow and DuckDB read it by default). Quoted in an inferred
/// column: a number ("NaN", "1") is that number, as a sampled one counts
/// (one the column's type does not hold widens it, as any late value
/// does); any other is text, as a sampled one makes its column a string
/// (the writer quotes a string "NA" so), so that the type does not depend
/// on where it lies; from an input that cannot be read again, it is the
/// value it spells, else a null. Asked only of null spellings, so that
/// other fields pay nothing.
static int null_field(struct csv_split_state* s, int64_t c, const struct csv_field* f,
                      const uint8_t* p, int64_t n) {
  if (!quoted_value(s, f, n)) return FIELD_NULL;
  if (!s->r->cols[c].user_type && sl_csv_is_number(p, n)) return FIELD_VALUE;
  if (!s->r->cols[c].user_type && csv_rereadable(s->r)) return FIELD_TEXT;
  char why[1];
  int ok = 0;
  return sl_csv_field_converts(s, c, f, why, sizeof why, &ok) != 0 || !ok ? FIELD_NULL
                                                                          : FIELD_VALUE;
}

/// Field f of column c, whose text p[0, n) is a null spelling: a null
/// appended (on to the next row), a value (falls through to convert it),
/// or a failure (text in an inferred column that is not a string, which
/// widens it). A block, not do-while, so that `continue` takes the next row.
#define CSV_NULL_FIELD(s, c, f, p, n, b, error)                                      \
  {                                                                                 \
    int kind_ = null_field(s, c, f, p, n);                                          \
    if (kind_ == FIELD_TEXT) return value_error(s, c, f, p, n, QUOTED_TEXT, error); \
    if (kind_ == FIELD_NULL) {                                                      \
      if (sl_builder_append_null(b) != 0) return ENOMEM;                            \
      continue;                                                                     \
    }                                                                               \
  }

#define CSV_FOR_EACH_VALUE(BODY)                                                     \
  for (int64_t row = 0; row < n_rows; ++row) {                                      \
    const struct csv_field* f = &rows->fields[rows->row_first[row] + c];            \
    const uint8_t* p;                                                               \
    int64_t n;                                                                      \
    if (token(s, f, &p, &n) != 0) return ENOMEM;                                    \
    if (csv_is_null(nulls, p, n)) CSV_NULL_FIELD(s, c, f, p, n, b, error);          \
    BODY                                                                            \
  }

int sl_csv_convert_column(struct csv_split_state* s, int64_t c, struct sl_builder* b,
                       struct sluice_error* error) {
  const struct csv_rows* rows = &s->rows;
  const struct csv_column* col = &s->r->cols[c];
  const int64_t n_rows = rows->n_rows;
  const struct csv_nulls* nulls = &s->r->opts.nulls;
  if (sl_builder_reserve(b, n_rows) != 0) return ENOMEM;
  switch (col->conv) {
    case CV_F64:
      CSV_FOR_EACH_VALUE({
        double v;
        if (csv_is_float_null(nulls, p, n)) CSV_NULL_FIELD(s, c, f, p, n, b, error);
        if (!sl_csv_parse_double(p, n, &v)) return value_error(s, c, f, p, n, "cannot parse", error);
        sl_builder_append_double_unsafe(b, v);
      })
      return 0;
    case CV_F32:
      CSV_FOR_EACH_VALUE({
        float v;
        if (csv_is_float_null(nulls, p, n)) CSV_NULL_FIELD(s, c, f, p, n, b, error);
        if (!sl_csv_parse_float(p, n, &v)) return value_error(s, c, f, p, n, "cannot parse", error);
        sl_builder_append_float_unsafe(b, v);
      })
      return 0;
    case CV_INT:
      CSV_FOR_EACH_VALUE({
        int64_t v;
        if (!sl_csv_parse_int64(p, n, &v))
          return value_error(s, c, f, p, n, sl_csv_integer_problem(p, n), error);
        switch (col->width) {
          case 8: sl_builder_append_int64_unsafe(b, v); break;
          case 4:
            if (v < INT32_MIN || v > INT32_MAX) goto range;
            sl_builder_append_int32_unsafe(b, (int32_t)v);
            break;
          case 2:
            if (v < INT16_MIN || v > INT16_MAX) goto range;
            sl_builder_append_int16_unsafe(b, (int16_t)v);
            break;
          default:
            if (v < INT8_MIN || v > INT8_MAX) goto range;
            sl_builder_append_int8_unsafe(b, (int8_t)v);
            break;
        }
        continue;
      range:
        return value_error(s, c, f, p, n, "out of range:", error);
      })
      return 0;
    case CV_UINT:
      CSV_FOR_EACH_VALUE({
        uint64_t v;
        if (!sl_csv_parse_uint64(p, n, &v))
          return value_error(s, c, f, p, n, sl_csv_integer_problem(p, n), error);
        if (col->width < 8 && v >> (col->width * 8) != 0) {
          return value_error(s, c, f, p, n, "out of range:", error);
        }
        switch (col->width) {
          case 8: sl_builder_append_uint64_unsafe(b, v); break;
          case 4: sl_builder_append_uint32_unsafe(b, (uint32_t)v); break;
          case 2: sl_builder_append_uint16_unsafe(b, (uint16_t)v); break;
          default: sl_builder_append_uint8_unsafe(b, (uint8_t)v); break;
        }
      })
      return 0;
    case CV_BOOL:
      CSV_FOR_EACH_VALUE({
        int v;
        if (csv_is_bit(p, n)) {
          v = p[0] == '1';
        } else if (!sl_csv_parse_bool(p, n, &v)) {
          return value_error(s, c, f, p, n, "cannot parse", error);
        }
        sl_builder_append_bool_unsafe(b, v);
      })
      return 0;
    case CV_DATE32:
      CSV_FOR_EACH_VALUE({
        int32_t v;
        if (!sl_csv_parse_date32(p, n, &v)) return value_error(s, c, f, p, n, "cannot parse", error);
        sl_builder_append_int32_unsafe(b, v);
      })
      return 0;
    case CV_TIMESTAMP: {
      const int64_t scale = ts_scale(col->unit);
      const int no_zone = zone_less(col), needs_zone = naive_needs_zone(col);
      CSV_FOR_EACH_VALUE({
        int64_t sec;
        int32_t ns;
        int zone;
        if (!sl_csv_parse_timestamp(p, n, &sec, &ns, &zone)) {
          return value_error(s, c, f, p, n, "cannot parse", error);
        }
        if (zone && no_zone) return value_error(s, c, f, p, n, ZONED, error);
        if (!zone && needs_zone) return value_error(s, c, f, p, n, NAIVE, error);
        if (ns % (1000000000 / scale) != 0) return value_error(s, c, f, p, n, TOO_FINE, error);
        int64_t v;
        if (!sl_timestamp_in_unit(sec, ns, scale, &v)) {
          return value_error(s, c, f, p, n, "out of range:", error);
        }
        sl_builder_append_int64_unsafe(b, v);
      })
      return 0;
    }
    case CV_DECIMAL:
      CSV_FOR_EACH_VALUE({
        uint8_t le[32];
        const char* why;
        if (!sl_csv_parse_decimal(p, n, col->precision, col->scale, col->width, le, &why))
          return value_error(s, c, f, p, n, why, error);
        if (sl_builder_append_fixed(b, le) != 0) return ENOMEM;
      })
      return 0;
    case CV_TIME: {
      const int64_t per_unit = 1000000000 / ts_scale(col->unit);
      CSV_FOR_EACH_VALUE({
        int64_t ns;
        if (!sl_csv_parse_time(p, n, &ns)) return value_error(s, c, f, p, n, "cannot parse", error);
        if (ns % per_unit != 0) return value_error(s, c, f, p, n, TOO_FINE, error);
        if (col->width == 4) {
          sl_builder_append_int32_unsafe(b, (int32_t)(ns / per_unit));
        } else {
          sl_builder_append_int64_unsafe(b, ns / per_unit);
        }
      })
      return 0;
    }
    case CV_UTF8:
    case CV_BINARY: {
      int64_t bytes = 0;
      for (int64_t row = 0; row < n_rows; ++row) bytes += rows->fields[rows->row_first[row] + c].len;
      int rc = sl_builder_reserve_bytes(b, bytes);
      if (rc != 0) {
        if (rc == ENOMEM) return rc;
        return sl_error_set(error, rc, "%s: column '%s': %" PRId64 " bytes of strings do not fit "
                            "one batch (lower batch_bytes, or use large_string)",
                            s->r->name, s->r->layout.names[c], bytes);
      }
      const int check = col->conv == CV_UTF8;
      for (int64_t row = 0; row < n_rows; ++row) {
        const struct csv_field* f = &rows->fields[rows->row_first[row] + c];
        const uint8_t* p;
        int64_t n;
        if (token(s, f, &p, &n) != 0) return ENOMEM;
        if (f->flags == 0 && csv_is_null(nulls, p, n)) {  // quoted: a string
          if (sl_builder_append_null(b) != 0) return ENOMEM;
          continue;
        }
        if (check && sl_utf8_invalid_at(p, n) >= 0) {
          return value_error(s, c, f, p, n, "invalid UTF-8 in", error);
        }
        sl_builder_append_binary_unsafe(b, p, n);
      }
      return 0;
    }
  }
  return 0;
}

/// The first byte at or after t that ends or complicates an unquoted field
/// (delimiter, line feed, quote, carriage return), or end: the fused path
/// crosses the fields of columns it does not read 16 bytes at a time (W4's
/// query reads 2 of 12 columns).
static inline const uint8_t* field_end(const uint8_t* t, const uint8_t* end, uint8_t delim,
                                       uint8_t quote) {
#if defined(__x86_64__)
  const __m128i vd = _mm_set1_epi8((char)delim), vn = _mm_set1_epi8('\n');
  const __m128i vq = _mm_set1_epi8((char)quote), vr = _mm_set1_epi8('\r');
  while (end - t >= 16) {
    __m128i x = _mm_loadu_si128((const __m128i*)(const void*)t);
    __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, vd), _mm_cmpeq_epi8(x, vn)),
                             _mm_or_si128(_mm_cmpeq_epi8(x, vq), _mm_cmpeq_epi8(x, vr)));
    unsigned bits = (unsigned)_mm_movemask_epi8(m);
    if (bits != 0) return t + __builtin_ctz(bits);
    t += 16;
  }
#endif
  while (t < end && *t != delim && *t != '\n' && *t != quote && *t != '\r') ++t;
  return t;
}

int64_t sl_csv_fast_numeric(struct csv_split_state* s, int64_t want, int64_t max_bytes) {
  const struct csv_reader* r = s->r;
  // Per file column: how it is read (SKIP = not asked for) and where its
  // values go, written in place at row `rows` and committed once at the end;
  // a row that fails halfway leaves values past the committed ones, which the
  // next append overwrites.
  struct csv_fused_plan f;
  f.n_cols = r->layout.n_cols;
  f.delim = r->layout.dialect.delimiter;
  f.quote = r->layout.dialect.quote;
  f.comment = r->layout.dialect.comment;
  const int64_t nc = f.n_cols;
  for (int64_t c = 0; c < nc; ++c) {
    f.kind[c] = CSV_FUSED_SKIP;
    if (s->builder_of[c] < 0) continue;
    struct sl_builder* b = sl_builder_child(&s->batch, s->builder_of[c]);
    if (sl_builder_reserve(b, want) != 0) return -1;
    f.out[c] = sl_builder_values_end(b);
    f.kind[c] = r->cols[c].conv == CV_F64 ? CSV_FUSED_F64
                : r->cols[c].width == 8   ? CSV_FUSED_I64
                                          : CSV_FUSED_I32;
  }
  const uint8_t* data = s->data;
  const uint8_t* end = data + s->limit;
  const uint8_t delim = f.delim, quote = f.quote;
  const int64_t start = s->pos;
  // rows start before min(end, stop, start + max_bytes)
  int64_t limit_at = s->limit;
  if (s->stop < limit_at) limit_at = s->stop;
  if (max_bytes < limit_at - start) limit_at = start + max_bytes;
  const uint8_t* limit = data + limit_at;
  const uint8_t* p = data + s->pos;
  int64_t rows = 0;
  while (rows < want && p < limit) {
    if (r->fused_rows != NULL) {
      rows = r->fused_rows(&f, &p, end, limit, rows, want);
      if (rows == want || p >= limit) break;
    }
    // One row by the scalar loop: the vector one stopped at it, or is not
    // there.
    if (f.comment != 0 && *p == f.comment) break;  // the general path skips comment lines
    const uint8_t* q = p;
    for (int64_t c = 0; c < nc; ++c) {
      const uint8_t* t;
      if (f.kind[c] == CSV_FUSED_F64) {
        double d = 0;
        t = sl_csv_scan_double(q, end, &d);
        memcpy(f.out[c] + rows * 8, &d, 8);
        if (t == NULL) goto done;
      } else if (f.kind[c] != CSV_FUSED_SKIP) {
        int64_t i = 0;
        t = sl_csv_scan_int64(q, end, &i);
        if (t == NULL) goto done;
        if (f.kind[c] == CSV_FUSED_I64) {
          memcpy(f.out[c] + rows * 8, &i, 8);
        } else {
          if (i < INT32_MIN || i > INT32_MAX) goto done;  // the general path reports it
          int32_t v = (int32_t)i;
          memcpy(f.out[c] + rows * 4, &v, 4);
        }
      } else if (q < end && *q == quote && quote != 0) {
        // A quoted field of a column not read (W4's ids): crossed to its
        // closing quote; what follows is checked below as for any field.
        t = csv_skip_quoted(q, end, quote);
        if (t == NULL) goto done;
      } else {
        t = field_end(q, end, delim, quote);
        if (t < end && (*t == quote || *t == '\r')) goto done;
        // an empty line is skipped by the general path, not a row
        if (c == 0 && t == q && (t == end || *t != delim)) goto done;
      }
      q = csv_fused_next(t, end, c + 1 == nc, delim);
      if (q == NULL) goto done;
    }
    rows++;
    p = q;
  }
done:
  for (int64_t c = 0; c < nc; ++c) {
    if (f.kind[c] != CSV_FUSED_SKIP) {
      sl_builder_commit_values(sl_builder_child(&s->batch, s->builder_of[c]), rows);
    }
  }
  s->pos = p - data;
  return rows;
}
