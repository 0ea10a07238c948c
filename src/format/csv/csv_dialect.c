// Open-time analysis of a CSV input: delimiter and header sniffing, type
// inference from a sample, and the user's schema overrides.
//
// Delimiter: each candidate (, ; TAB |) tokenizes the first rows; the one that
// splits every row into the same number (> 1) of fields wins, the most fields
// breaking ties, comma when nothing is consistent.
// Comment: '#' when lines starting with it break the first rows' field
// count and the rows are even without them (sniff_comment).
// Header: the first row is data only if each of its fields fits the type
// inferred for its column from the following rows and at least one column is
// not a string (all-string tables are assumed to have a header, as pyarrow
// and polars do). An integer does not fit a float column none of whose
// values is an integer, nor a date a timestamp column without dates.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "csv_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "core/sl_utf8.h"

/// The delimiters sniffing tries, in order of preference on a tie.
static const uint8_t k_delimiters[4] = {',', ';', '\t', '|'};

int64_t sl_csv_line_of(const uint8_t* data, int64_t offset) {
  return 1 + sl_csv_count_byte(data, offset, '\n');
}

void sl_csv_layout_free(struct csv_layout* l, const struct sluice_allocator* alloc) {
  for (int64_t i = 0; i < l->n_cols; ++i) {
    if (l->names != NULL && l->names[i] != NULL) sl_free(alloc, l->names[i], strlen(l->names[i]) + 1);
    if (l->formats != NULL && l->formats[i] != NULL) {
      sl_free(alloc, l->formats[i], strlen(l->formats[i]) + 1);
    }
  }
  sl_free(alloc, l->names, (size_t)l->n_cols * sizeof *l->names);
  sl_free(alloc, l->formats, (size_t)l->n_cols * sizeof *l->formats);
  sl_free(alloc, l->unsampled, (size_t)l->n_cols);
  l->names = l->formats = NULL;
  l->unsampled = NULL;
  l->n_cols = 0;
}

/// The fields of each of the first rows (50, within 64 KiB) of data[start,
/// size) read with dialect d, when every row has as many (a trailing empty
/// field on rows after the first tolerated, and with `first_may_trail` one
/// on the first row alone, "a,b," over "1,2", as analyze reads it); -1 when
/// they differ, 0 for no rows, -2 when out of memory. `rows` is scratch.
static int64_t even_fields(const struct csv_dialect* d, const uint8_t* data, int64_t start,
                           int64_t size, int first_may_trail, struct csv_rows* rows) {
  csv_rows_clear(rows);
  int64_t pos = start, err = 0;
  enum csv_tok_status st =
      sl_csv_tokenize(d, data, &pos, size, INT64_MAX, 50, 64 << 10, rows, &err);
  if (st == CSV_TOK_ENOMEM) return -2;
  if (rows->n_rows == 0) return 0;
  int64_t k = rows->row_first[1] - rows->row_first[0];
  const struct csv_field* last0 = &rows->fields[k - 1];
  int first_trails = first_may_trail && k > 1 && last0->len == 0 && last0->flags == 0;
  int even = 1, even_under_trail = first_trails;
  for (int64_t r = 1; r < rows->n_rows; ++r) {
    int64_t n = rows->row_first[r + 1] - rows->row_first[r];
    int trails = rows->fields[rows->row_first[r + 1] - 1].len == 0;
    // a trailing delimiter on data rows only is tolerated
    if (n != k && !(n == k + 1 && trails)) even = 0;
    if (n != k - 1 && !(n == k && trails)) even_under_trail = 0;
  }
  return even ? k : even_under_trail ? k - 1 : -1;
}

/// The delimiter when none was given: the candidate that splits the first
/// rows into the most columns, consistently. Candidates that are the quote,
/// escape or comment character cannot be it; one of those that would split
/// consistently with its role off goes to *clash (0: none), so that a file
/// of commas read with escape=, is an error, not one column. Without a
/// consistent candidate (one column, say): the first that is not the quote
/// or escape character (the comment character may stay, for analyze's error).
static int sniff_delimiter(const struct csv_dialect* base, const uint8_t* data, int64_t start,
                           int64_t size, int64_t max_fields, const struct sluice_allocator* alloc,
                           uint8_t* out, uint8_t* clash) {
  int64_t best_k = -1, clash_k = -1;
  *clash = 0;
  *out = ',';
  for (size_t i = sizeof k_delimiters; i-- > 0;) {
    uint8_t c = k_delimiters[i];
    if (c != base->quote && c != base->escape) *out = c;
  }
  struct csv_rows rows;
  sl_csv_rows_init(&rows, alloc);
  rows.max_row_fields = max_fields;
  for (size_t i = 0; i < sizeof k_delimiters; ++i) {
    struct csv_dialect d = *base;
    d.delimiter = k_delimiters[i];
    int clashes = d.delimiter == d.quote || d.delimiter == d.escape || d.delimiter == d.comment;
    if (clashes) {  // its role off, to see whether it would be the delimiter
      if (d.quote == d.delimiter) d.quote = 0;
      if (d.escape == d.delimiter) d.escape = 0;
      if (d.comment == d.delimiter) d.comment = 0;
    }
    int64_t k = even_fields(&d, data, start, size, 0, &rows);
    if (k == -2) {
      sl_csv_rows_free(&rows);
      return ENOMEM;
    }
    if (k <= 1) continue;
    if (clashes && k > clash_k) {
      clash_k = k;
      *clash = d.delimiter;
    } else if (!clashes && k > best_k) {
      best_k = k;
      *out = d.delimiter;
    }
  }
  if (best_k > 1) *clash = 0;  // a delimiter that fits was found
  sl_csv_rows_free(&rows);
  return 0;
}

/// The comment character when none was given: '#' when a line among the
/// first rows starts with it and the rows have an even number (> 1) of
/// fields with such lines skipped but not without (a "# generated by" line
/// over the header), as DuckDB's sniffer reads them; else 0. pyarrow and
/// polars need it given (their error is the field count). `delimiter`: the
/// given one, or 0 to try each candidate. Returns ENOMEM or 0.
static int sniff_comment(const struct csv_dialect* base, uint8_t delimiter, const uint8_t* data,
                         int64_t start, int64_t size, int64_t max_fields,
                         const struct sluice_allocator* alloc, uint8_t* out) {
  const uint8_t hash = '#';
  *out = 0;
  if (base->quote == hash || base->escape == hash || delimiter == hash) return 0;
  int64_t end = size - start > (INT64_C(64) << 10) ? start + (INT64_C(64) << 10) : size;
  int any = end > start && data[start] == hash;
  for (int64_t i = start; !any && i + 1 < end; ++i) any = data[i] == '\n' && data[i + 1] == hash;
  if (!any) return 0;
  struct csv_rows rows;
  sl_csv_rows_init(&rows, alloc);
  rows.max_row_fields = max_fields;
  int64_t plain = -1, skipped = -1;
  for (size_t i = 0; i < sizeof k_delimiters; ++i) {
    struct csv_dialect d = *base;
    d.delimiter = delimiter != 0 ? delimiter : k_delimiters[i];
    if (d.delimiter == d.quote || d.delimiter == d.escape) continue;
    d.comment = 0;
    int64_t k = even_fields(&d, data, start, size, 1, &rows);
    d.comment = hash;
    int64_t k_hash = k == -2 ? -2 : even_fields(&d, data, start, size, 1, &rows);
    if (k == -2 || k_hash == -2) {
      sl_csv_rows_free(&rows);
      return ENOMEM;
    }
    // One row left is even by itself: no evidence ("#1,a" over "3,d").
    if (rows.n_rows < 2) k_hash = -1;
    if (k > plain) plain = k;
    if (k_hash > skipped) skipped = k_hash;
    if (delimiter != 0) break;
  }
  sl_csv_rows_free(&rows);
  if (plain <= 1 && skipped > 1) *out = hash;
  return 0;
}

/// The quote when none was given: '\'' when data[start, end) has no '"'
/// and reads consistently with '\'' as the quote, which matters there (see
/// below); else '"'. `cr_lines`: a CR also starts a line.
static uint8_t sniff_quote(const uint8_t* data, int64_t start, int64_t end, int cr_lines) {
  if (end <= start || memchr(data + start, '"', (size_t)(end - start)) == NULL) {
    // Reads the sample with ' as the quote. Apostrophes are common in text
    // ("don't", "'90s"), and a wrong quote silently merges rows, so ' is
    // taken only when every apostrophe sits where a quote can and the
    // quotes matter: a field quoted with it on one line holds a delimiter,
    // or rows read with it all hold as many delimiters as the first row
    // while lines read plainly do not (a quoted line break). Otherwise the
    // texts keep their apostrophes, as in pyarrow and polars, which never
    // take ' unasked.
    int field_start = 1, in_quote = 0, holds_delim = 0, multiline = 0;
    int plain_uneven = 0, quoted_uneven = 0, any_multiline = 0;
    int64_t one_line_delim = 0, first = -1, row_delims = 0, line_delims = 0;
    for (int64_t i = start; i < end; ++i) {
      uint8_t c = data[i];
      int new_line = c == '\n' || (cr_lines && c == '\r');
      int delim = memchr(k_delimiters, c, sizeof k_delimiters) != NULL;
      line_delims += delim;  // read plainly, every delimiter counts
      if (new_line) {
        if (first >= 0 && line_delims != first) plain_uneven = 1;
        line_delims = 0;
      }
      if (in_quote) {
        if (c == '\'') {
          if (i + 1 < end && data[i + 1] == '\'') {  // a doubled quote, inside
            ++i;
            continue;
          }
          uint8_t next = i + 1 < end ? data[i + 1] : '\n';
          if (!(next == '\n' || next == '\r' ||
                memchr(k_delimiters, next, sizeof k_delimiters) != NULL))
            return '"';
          in_quote = 0;
          field_start = 0;
          one_line_delim += holds_delim && !multiline;
          any_multiline |= multiline;
          continue;
        }
        multiline |= c == '\n' || c == '\r';
        holds_delim |= delim;
        continue;
      }
      if (c == '\'') {
        if (!field_start) return '"';  // inside an unquoted field: text
        in_quote = 1;
        holds_delim = multiline = 0;
        continue;
      }
      row_delims += delim;
      if (new_line) {
        if (first < 0) first = row_delims;
        else if (row_delims != first) quoted_uneven = 1;
        row_delims = 0;
      }
      field_start = new_line || delim;
    }
    // Never when the rows read with ' differ in their delimiters ('Allo,
    // the Smiths' with a stray apostrophe each side): " reads them evenly.
    if (!quoted_uneven && (one_line_delim > 0 || (any_multiline && plain_uneven))) return '\'';
  }
  return '"';
}

// The bytes of field f, unescaped into *scratch when needed.
static int field_bytes(const struct csv_dialect* d, const uint8_t* data,
                       const struct csv_field* f, uint8_t** scratch, int64_t* cap,
                       const struct sluice_allocator* alloc, const uint8_t** p, int64_t* n) {
  if (!(f->flags & CSV_FIELD_ESCAPED)) {
    *p = data + f->pos;
    *n = f->len;
    return 0;
  }
  if (*cap < f->len) {
    uint8_t* b = sl_alloc(alloc, (size_t)f->len);
    if (b == NULL) return ENOMEM;
    sl_free(alloc, *scratch, (size_t)*cap);
    *scratch = b;
    *cap = f->len;
  }
  *n = sl_csv_unescape(d, data + f->pos, f->len, *scratch);
  *p = *scratch;
  return 0;
}

/// Whether value p[0, n) of the first row fits the type `format` the rows
/// below gave its column (`below`: their inference).
static int fits(const char* format, const struct csv_infer_state* below,
                const struct csv_nulls* nulls, const uint8_t* p, int64_t n) {
  struct csv_infer_state s;
  sl_csv_infer_init(&s, nulls);
  sl_csv_infer_add(&s, p, n);
  if (csv_is_null(nulls, p, n)) return 1;
  const char* got = sl_csv_infer_format(&s);
  if (strcmp(format, "u") == 0) return 1;
  // An integer over floats that all have a fraction or exponent, or a date
  // over timestamps that all have a time, is of another kind than the
  // values below: a header's "2024" over 1.5, 2.5 (pandas' to_csv writes
  // ,0,1 over float columns). DuckDB and Python's csv.Sniffer, which only
  // ask whether it parses as the column's type, take such a row for data.
  if (strcmp(format, "g") == 0)
    return (strcmp(got, "l") == 0 && below->any_int) || strcmp(got, "g") == 0;
  if (strncmp(format, "ts", 2) == 0)
    return (strcmp(got, "tdD") == 0 && below->any_date) || strncmp(got, "ts", 2) == 0;
  if (strncmp(format, "tt", 2) == 0) return strncmp(got, "tt", 2) == 0;
  // A 0 or 1 is a bool only in a column whose rows hold them too (a header
  // 0,1,2 over true/false columns, as pandas writes, is still a header).
  if (strcmp(format, "b") == 0 && csv_is_bit(p, n)) return below->any_bit;
  return strcmp(format, got) == 0;
}

struct analysis {
  const struct csv_options* opts;
  const uint8_t* data;
  int64_t size;
  const char* name;
  const struct sluice_allocator* alloc;
  struct csv_layout* out;
  struct csv_rows rows;
  struct csv_infer_state* states;
  uint8_t* scratch;
  int64_t scratch_cap;
  int final;  ///< the bytes end the input (0: a stream's sample, cut at a line feed)
  /// A header ending in a delimiter was taken for rows that may end in one
  /// (trailing_delim), and a later sampled row has a value there: analyze
  /// again with `no_trailing`, that field then a column, as peers read it.
  int trailing_used, no_trailing;
};

/// Rows from first_row into the type inference: their first n_cols fields,
/// or (`whole_only`, for rows that may be cut or misread) only rows with
/// exactly the file's field count (a trailing delimiter allowed).
static int add_rows(struct analysis* a, int64_t first_row, int whole_only) {
  const struct csv_dialect* d = &a->out->dialect;
  for (int64_t r = first_row; r < a->rows.n_rows; ++r) {
    int64_t n = a->rows.row_first[r + 1] - a->rows.row_first[r];
    int whole = n == a->out->n_cols;
    if (a->out->trailing_delim && n == a->out->n_cols + 1) {
      const struct csv_field* last = &a->rows.fields[a->rows.row_first[r + 1] - 1];
      whole = last->len == 0 && last->flags == 0;
      a->trailing_used |= !whole;
    }
    if (whole_only && !whole) continue;
    // A row bad_rows=skip will drop for its field count has no say in the
    // types (as in pyarrow and DuckDB, which skip it before inferring). One
    // dropped for a value the schema's type refuses is not known here (the
    // names are not yet): its other values count, as in DuckDB.
    int bad = !whole && !(a->opts->missing_null && n < a->out->n_cols);
    if (bad && a->opts->skip_bad_rows) continue;
    if (n > a->out->n_cols) n = a->out->n_cols;
    for (int64_t c = 0; c < n; ++c) {
      const uint8_t* p;
      int64_t len;
      const struct csv_field* f = &a->rows.fields[a->rows.row_first[r] + c];
      if (field_bytes(d, a->data, f, &a->scratch, &a->scratch_cap, a->alloc, &p, &len) != 0) {
        return ENOMEM;
      }
      // A quoted "NA" is text (the writer quotes it so); a quoted null
      // spelling that is a number ("NaN", or "1" under null_values=1) is
      // that number, as the converter reads it wherever it lies (pyarrow,
      // DuckDB and polars type a quoted "NaN" among floats as a float); a
      // quoted "" stays a null, as in pyarrow, so that it does not turn a
      // number column into strings.
      if ((f->flags & CSV_FIELD_ESCAPED) && len > 0 &&
          (csv_is_null(&a->opts->nulls, p, len) || csv_is_float_null(&a->opts->nulls, p, len))) {
        if (sl_csv_is_number(p, len)) {
          sl_csv_infer_add_value(&a->states[c], p, len);
        } else {
          sl_csv_infer_add_text(&a->states[c]);
        }
      } else {
        sl_csv_infer_add(&a->states[c], p, len);
      }
    }
  }
  return 0;
}

static int tok_error(struct analysis* a, enum csv_tok_status st, int64_t err_pos,
                     struct sluice_error* error) {
  if (st == CSV_TOK_ENOMEM) return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
  st = sl_csv_tok_explain(&a->out->dialect, a->data, a->size, st, &err_pos);
  char hint[320];
  return sl_error_set(error, EILSEQ, "%s: line %lld (byte %lld): %s%s", a->name,
                      (long long)sl_csv_line_of(a->data, err_pos), (long long)err_pos,
                      sl_csv_tok_message(st),
                      sl_csv_tok_hint(a->opts, &a->out->dialect, st, a->data, err_pos,
                                      hint, sizeof hint));
}

/// bad_rows=skip: a row after the first one wider than max_columns has no
/// say in the sample (the scan skips and counts it); the rows before it stay
/// and sampling goes on after it. 1 if that is the case (*pos moved on).
static int skip_wide_row(struct analysis* a, enum csv_tok_status st, int64_t err_pos,
                         int64_t* pos) {
  if (st != CSV_TOK_TOO_MANY_FIELDS || !a->opts->skip_bad_rows || a->rows.n_rows == 0) return 0;
  a->rows.n_fields = a->rows.row_first[a->rows.n_rows];
  int64_t next = sl_csv_row_end(&a->out->dialect, a->data, err_pos, a->size);
  *pos = next >= 0 ? next : a->size;
  return 1;
}

/// f0, f1, ...: the name a column without a header gets (pyarrow's).
static int is_default_name(const char* s) {
  if (s[0] != 'f' || s[1] < '0' || s[1] > '9' || (s[1] == '0' && s[2] != '\0')) return 0;
  for (s += 1; *s != '\0'; ++s)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

static int make_names(struct analysis* a, struct sluice_error* error) {
  struct csv_layout* l = a->out;
  const struct csv_options* o = a->opts;
  // Without a header the schema's entries name the columns in order, unless
  // every one is a default name (f0, f1, ...): then they type those columns,
  // as pyarrow's column_types do.
  int by_position = !l->header && o->n_schema > 0;
  for (int64_t s = 0, all_default = 1; by_position && s < o->n_schema; ++s) {
    all_default &= is_default_name(o->schema[s].name);
    if (s == o->n_schema - 1 && all_default) by_position = 0;
  }
  for (int64_t c = 0; c < l->n_cols; ++c) {
    char buf[32];
    const uint8_t* p = (const uint8_t*)buf;
    int64_t len;
    if (l->header) {
      const struct csv_field* f = &a->rows.fields[a->rows.row_first[0] + c];
      if (field_bytes(&l->dialect, a->data, f, &a->scratch, &a->scratch_cap, a->alloc, &p,
                      &len) != 0) {
        return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
      }
      // Arrow's field names are UTF-8 (a consumer decodes them as such).
      if (sl_utf8_invalid_at(p, len) >= 0) {
        return sl_error_set(error, EILSEQ, "%s: line %lld (byte %lld): the header's column %lld, "
                            "which starts there, is not UTF-8 text (column names must be; "
                            "convert the file's encoding, e.g. iconv -f latin1 -t utf-8, or "
                            "read it without a header: header=false)", a->name,
                            (long long)sl_csv_line_of(a->data, f->pos), (long long)f->pos,
                            (long long)c);
      }
      // A name is a C string (ArrowSchema.name): it would end at a NUL,
      // and be freed as that shorter string.
      if (len > 0 && memchr(p, 0, (size_t)len) != NULL) {
        return sl_error_set(error, EILSEQ, "%s: line %lld (byte %lld): the header's column %lld, "
                            "which starts there, holds a NUL byte, which a column name cannot "
                            "(Arrow's C interface ends names there; read it without a header: "
                            "header=false)", a->name,
                            (long long)sl_csv_line_of(a->data, f->pos), (long long)f->pos,
                            (long long)c);
      }
    } else if (by_position && c < o->n_schema) {
      p = (const uint8_t*)o->schema[c].name;
      len = (int64_t)strlen(o->schema[c].name);
    } else {
      len = snprintf(buf, sizeof buf, "f%lld", (long long)c);
      for (int64_t s = 0; by_position && s < o->n_schema; ++s) {
        if (strcmp(o->schema[s].name, buf) == 0) {
          return sl_error_set(error, EINVAL, "%s: without a header the schema names the columns "
                              "in order, and '%s' (column %lld) is also column %lld's default "
                              "name: rename it, or give only default names (f0, f1, ...) to "
                              "type those columns", a->name, buf, (long long)s, (long long)c);
        }
      }
    }
    l->names[c] = sl_strndup(a->alloc, (const char*)p, (size_t)len);
    if (l->names[c] == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
  }
  for (int64_t s = 0; s < o->n_schema; ++s) {
    int64_t c = 0;
    while (c < l->n_cols && strcmp(o->schema[s].name, l->names[c]) != 0) ++c;
    if (c == l->n_cols && !(o->schema_partial && l->header)) {
      return sl_error_set(error, EINVAL, "%s: schema names column '%s', which the %s lacks",
                          a->name, o->schema[s].name, l->header ? "header" : "input");
    }
  }
  return 0;
}

static int make_formats(struct analysis* a, struct sluice_error* error) {
  struct csv_layout* l = a->out;
  const struct csv_options* o = a->opts;
  for (int64_t c = 0; c < l->n_cols; ++c) {
    const char* format = sl_csv_infer_format(&a->states[c]);
    l->unsampled[c] = !a->states[c].any_value;
    for (int64_t s = 0; s < o->n_schema; ++s) {
      if (strcmp(o->schema[s].name, l->names[c]) == 0) {
        format = o->schema[s].format;
        break;
      }
    }
    l->formats[c] = sl_strdup(a->alloc, format);
    if (l->formats[c] == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
  }
  return 0;
}

/// Stretches sampled past the head of a whole file, spread evenly up to its
/// end: a type that the head fits but a later stretch does not is widened at
/// open (int64 -> float64 -> string), where it would otherwise fail the scan
/// there. A sample is never the last word: a lone misfit between stretches
/// still fails, with the same message.
#define CSV_SPREAD_SAMPLES 8
#define CSV_SPREAD_BYTES ((int64_t)64 << 10)
/// Spreading only when the head sample is the default size or larger (a
/// user who asked for a few bytes of inference gets just those).
#define CSV_SPREAD_FROM ((int64_t)1 << 20)

/// Whether the column types the states infer differ from `before`'s.
static int types_differ(const struct csv_infer_state* now, const struct csv_infer_state* before,
                        int64_t n) {
  for (int64_t c = 0; c < n; ++c) {
    if (strcmp(sl_csv_infer_format(&now[c]), sl_csv_infer_format(&before[c])) != 0) return 1;
  }
  return 0;
}

/// Samples the file past `from` (where the head sample ended). Each stretch
/// starts after a line feed; only stretches without a quote character are
/// tokenized. Such a stretch may still lie inside a quoted field longer than
/// it, where its lines are no rows: a stretch whose rows would change a
/// type is taken only if the quotes from `from` to it are even in number
/// (counted once, and only then: most files never need it), so that its
/// start is known to be outside quotes.
static int sample_further_on(struct analysis* a, int64_t from, struct sluice_error* error) {
  const struct csv_dialect* d = &a->out->dialect;
  int64_t span = a->size - from;
  if (span <= 2 * CSV_SPREAD_BYTES || a->out->n_cols == 0) return 0;
  const int64_t n_cols = a->out->n_cols;
  struct csv_infer_state* before = sl_alloc(a->alloc, (size_t)n_cols * sizeof *before);
  if (before == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
  int64_t counted_to = from, quotes = 0;  // quote characters in [from, counted_to)
  int rc = 0;
  for (int k = 1; rc == 0 && k <= CSV_SPREAD_SAMPLES; ++k) {
    // The last stretch ends at the end of the file: late values are where
    // appended data differs most.
    int64_t at = from + (span - CSV_SPREAD_BYTES) * k / CSV_SPREAD_SAMPLES;
    int64_t end = at + CSV_SPREAD_BYTES < a->size ? at + CSV_SPREAD_BYTES : a->size;
    const uint8_t* nl = memchr(a->data + at, '\n', (size_t)(end - at));
    if (nl == NULL) continue;
    int64_t row = nl + 1 - a->data;
    if (d->quote != 0 && memchr(a->data + at, d->quote, (size_t)(end - at)) != NULL) continue;
    if (d->escape != 0 && memchr(a->data + at, d->escape, (size_t)(end - at)) != NULL) continue;
    csv_rows_clear(&a->rows);
    int64_t pos = row, err_pos = 0;
    // Up to `end`, whole rows only: a row cut by the stretch's end is left out.
    enum csv_tok_status st = sl_csv_tokenize(d, a->data, &pos, end, INT64_MAX, 0, end - row,
                                          &a->rows, &err_pos);
    if (st == CSV_TOK_ENOMEM) {
      rc = sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
      break;
    }
    if (st != CSV_TOK_OK) continue;
    if (end < a->size && a->rows.n_rows > 0 && a->data[end - 1] != '\n') --a->rows.n_rows;
    memcpy(before, a->states, (size_t)n_cols * sizeof *before);
    const int trailing_used = a->trailing_used;
    if (add_rows(a, 0, 1) != 0) {
      rc = sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
      break;
    }
    if (!types_differ(a->states, before, n_cols)) continue;
    // Escapes and comment lines hide quotes from a plain count: no proof.
    int outside = d->quote == 0;
    if (!outside && d->escape == 0 && d->comment == 0) {
      quotes += sl_csv_count_byte(a->data + counted_to, row - counted_to, d->quote);
      counted_to = row;
      outside = quotes % 2 == 0;
    }
    if (!outside) {  // inside a long quoted field, or unknown: its lines say nothing
      memcpy(a->states, before, (size_t)n_cols * sizeof *before);
      a->trailing_used = trailing_used;
    }
  }
  sl_free(a->alloc, before, (size_t)n_cols * sizeof *before);
  return rc;
}

/// 1 when a sample row after the first has `n` fields and something in the
/// last: then a header ending in a delimiter names an (unnamed) column,
/// rather than marking rows that end in a delimiter.
static int last_field_used(const struct csv_rows* rows, int64_t n) {
  for (int64_t r = 1; r < rows->n_rows; ++r) {
    if (rows->row_first[r + 1] - rows->row_first[r] != n) continue;
    const struct csv_field* last = &rows->fields[rows->row_first[r] + n - 1];
    if (last->len != 0 || last->flags != 0) return 1;
  }
  return 0;
}

int sl_csv_check_encoding(const uint8_t* data, int64_t n, const char* name,
                          struct sluice_error* error) {
  const char* encoding = NULL;  // as iconv names it
  const char* bom = NULL;
  if (n >= 4 && data[0] == 0xFF && data[1] == 0xFE && data[2] == 0 && data[3] == 0) {
    encoding = "UTF-32LE", bom = "FF FE 00 00";
  } else if (n >= 4 && data[0] == 0 && data[1] == 0 && data[2] == 0xFE && data[3] == 0xFF) {
    encoding = "UTF-32BE", bom = "00 00 FE FF";
  } else if (n >= 2 && data[0] == 0xFF && data[1] == 0xFE) {
    encoding = "UTF-16LE", bom = "FF FE";
  } else if (n >= 2 && data[0] == 0xFE && data[1] == 0xFF) {
    encoding = "UTF-16BE", bom = "FE FF";
  } else {
    // No mark: NUL bytes at the places the high bytes of ASCII characters
    // take, in at least three of four characters of the first KiB, and
    // seldom elsewhere (a UTF-8 file with a stray NUL is not this).
    int64_t m = (n < 1024 ? n : 1024) & ~(int64_t)3;
    int64_t zeros[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < m; ++i) zeros[i & 3] += data[i] == 0;
    const int64_t each = m / 4;  // bytes at each position mod 4
#define CSV_MOSTLY(z, all) (4 * (z) >= 3 * (all))
#define CSV_SELDOM(z, all) (4 * (z) < (all))
    if (m < 8) {
      // too short to tell
    } else if (CSV_MOSTLY(zeros[2] + zeros[3], 2 * each) && CSV_SELDOM(zeros[0], each)) {
      encoding = "UTF-32LE";
    } else if (CSV_MOSTLY(zeros[0] + zeros[1], 2 * each) && CSV_SELDOM(zeros[3], each)) {
      encoding = "UTF-32BE";
    } else if (CSV_MOSTLY(zeros[1] + zeros[3], 2 * each) &&
               CSV_SELDOM(zeros[0] + zeros[2], 2 * each)) {
      encoding = "UTF-16LE";
    } else if (CSV_MOSTLY(zeros[0] + zeros[2], 2 * each) &&
               CSV_SELDOM(zeros[1] + zeros[3], 2 * each)) {
      encoding = "UTF-16BE";
    }
#undef CSV_MOSTLY
#undef CSV_SELDOM
  }
  if (encoding == NULL) return 0;
  // With a mark iconv's UTF-16 / UTF-32 read it (and drop it); without
  // one they would take big-endian, so the byte order is named.
  char from[16];
  snprintf(from, sizeof from, "%.*s", bom != NULL ? 6 : 8, encoding);
  return sl_error_set(error, EILSEQ, "%s: byte 0: %s text (%s%s), but CSV is read as UTF-8: "
                      "convert it first, e.g. iconv -f %s -t UTF-8", name, encoding,
                      bom != NULL ? "its byte-order mark " : "no byte-order mark, but NUL bytes "
                                                             "where ASCII text in it has them",
                      bom != NULL ? bom : "", from);
}

uint8_t sl_csv_pick_quote(const struct csv_options* o, const uint8_t* data, int64_t start,
                       int64_t size, int cr_lines) {
  if (o->quote_given || o->escape == '\'' || o->delimiter == '\'' || o->comment == '\'')
    return (uint8_t)o->quote;
  int64_t end = size - start > (INT64_C(64) << 10) ? start + (INT64_C(64) << 10) : size;
  return sniff_quote(data, start, end, cr_lines);
}

static int analyze(struct analysis* a, int64_t start, struct sluice_error* error) {
  struct csv_layout* l = a->out;
  const struct csv_options* o = a->opts;
  l->dialect.quote = sl_csv_pick_quote(o, a->data, start, a->size, 0);
  l->dialect.escape = (uint8_t)o->escape;
  l->dialect.stray_text = (uint8_t)o->stray_text;
  l->dialect.comment = (uint8_t)o->comment;
  l->dialect.impl = (uint8_t)o->impl;
  // (Not with bad_rows=skip or missing_fields=null: the rows those take
  // would look uneven, and their '#' rows were taken for comments, silently.)
  if (!o->comment_given && !o->skip_bad_rows && !o->missing_null &&
      sniff_comment(&l->dialect, o->delimiter > 0 ? (uint8_t)o->delimiter : 0, a->data, start,
                    a->size, a->rows.max_row_fields, a->alloc, &l->dialect.comment) != 0) {
    return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
  }
  if (o->delimiter > 0) {
    l->dialect.delimiter = (uint8_t)o->delimiter;
  } else {
    uint8_t clash = 0;
    if (sniff_delimiter(&l->dialect, a->data, start, a->size, a->rows.max_row_fields, a->alloc,
                        &l->dialect.delimiter, &clash) != 0) {
      return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
    }
    if (clash != 0) {
      const char* role = clash == l->dialect.quote    ? "quote"
                         : clash == l->dialect.escape ? "escape"
                                                      : "comment";
      return sl_error_set(error, EINVAL, "%s: the rows split at '%c' as at a delimiter, but it "
                          "is the %s character; give delimiter= (or another %s)", a->name, clash,
                          role, role);
    }
  }
  if (l->dialect.comment != 0 && l->dialect.comment == l->dialect.delimiter) {
    return sl_error_set(error, EINVAL, "%s: the comment character is the delimiter '%c'; give "
                        "delimiter=", a->name, l->dialect.comment);
  }
  // First chunk: enough rows to decide the header.
  const int64_t chunk = INT64_C(1) << 20;
  int64_t budget = o->infer_bytes < 0 ? INT64_MAX : o->infer_bytes;
  int64_t pos = start, err_pos = 0;
  enum csv_tok_status st = sl_csv_tokenize(&l->dialect, a->data, &pos, a->size, INT64_MAX, 0,
                                        budget < chunk ? budget : chunk, &a->rows, &err_pos);
  int cut_short = 0;  // a stream's sample ends inside the row after those read
  if (st == CSV_TOK_UNTERMINATED && !a->final) {
    pos = err_pos;  // the sample of a stream ends inside a quoted field
    cut_short = 1;
  } else if (st != CSV_TOK_OK && !skip_wide_row(a, st, err_pos, &pos)) {
    return tok_error(a, st, err_pos, error);
  }
  // A first row longer than the chunk filled it alone: one row more, so
  // that the lone-row rule below (a header) holds only for input of one
  // row, and the header is told from the rows below it.
  while (a->rows.n_rows == 1 && !cut_short && pos < a->size) {
    int64_t before = pos;
    st = sl_csv_tokenize(&l->dialect, a->data, &pos, a->size, INT64_MAX, 1, INT64_MAX, &a->rows,
                         &err_pos);
    if (st == CSV_TOK_UNTERMINATED && !a->final) {
      pos = err_pos;
      cut_short = 1;
    } else if (st != CSV_TOK_OK && !skip_wide_row(a, st, err_pos, &pos)) {
      return tok_error(a, st, err_pos, error);
    }
    if (pos == before) break;
  }
  // From a stream's sample, one row with more input to come tells neither
  // the header nor (being a header) any type: the caller reads further.
  const int lone = a->rows.n_rows == 1 && !a->final;
  l->data_start = start;
  if (a->rows.n_rows == 0) {  // no rows at all: the given schema's columns, or none
    l->header = o->header != 0;
    l->data_start = a->size;
    if (o->n_schema == 0) return 0;
    l->n_cols = o->n_schema;
    l->names = sl_calloc(a->alloc, (size_t)l->n_cols, sizeof *l->names);
    l->formats = sl_calloc(a->alloc, (size_t)l->n_cols, sizeof *l->formats);
    if (l->names == NULL || l->formats == NULL)
      return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
    for (int64_t c = 0; c < l->n_cols; ++c) {
      l->names[c] = sl_strdup(a->alloc, o->schema[c].name);
      l->formats[c] = sl_strdup(a->alloc, o->schema[c].format);
      if (l->names[c] == NULL || l->formats[c] == NULL)
        return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
    }
    return 0;
  }
  int64_t n0 = a->rows.row_first[1];
  const struct csv_field* row0 = a->rows.fields;
  l->n_cols = n0;
  if (n0 > 1 && row0[n0 - 1].len == 0 && row0[n0 - 1].flags == 0 && o->header != 0 &&
      !a->no_trailing && !last_field_used(&a->rows, n0)) {
    l->n_cols = n0 - 1;  // "a,b,c," header: rows may end with a delimiter too
    l->trailing_delim = 1;
  }
  if (o->max_columns > 0 && l->n_cols > o->max_columns) {  // before any per-column state
    return sl_error_set(error, ERANGE, "%s: line %lld (byte %lld): %lld columns, more than "
                        "the CSV option max_columns (%lld: each column costs 1 to 5 KiB of "
                        "memory whatever its bytes; by default the memory budget / 1 KiB, at "
                        "least 262144; raise it to read more)", a->name,
                        (long long)sl_csv_line_of(a->data, a->rows.row_pos[0]),
                        (long long)a->rows.row_pos[0], (long long)l->n_cols,
                        (long long)o->max_columns);
  }
  l->names = sl_calloc(a->alloc, (size_t)l->n_cols, sizeof *l->names);
  l->formats = sl_calloc(a->alloc, (size_t)l->n_cols, sizeof *l->formats);
  l->unsampled = sl_calloc(a->alloc, (size_t)l->n_cols, 1);
  a->states = sl_calloc(a->alloc, (size_t)l->n_cols, sizeof *a->states);
  if (l->names == NULL || l->formats == NULL || l->unsampled == NULL || a->states == NULL) {
    return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
  }
  for (int64_t c = 0; c < l->n_cols; ++c) sl_csv_infer_init(&a->states[c], &o->nulls);
  if (add_rows(a, 1, 0) != 0) return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
  if (o->header >= 0) {
    l->header = o->header;
  } else {
    int all_fit = 1, any_typed = 0, any_text = 0;
    for (int64_t c = 0; c < l->n_cols; ++c) {
      const char* f = sl_csv_infer_format(&a->states[c]);
      const uint8_t* p;
      int64_t len;
      if (field_bytes(&l->dialect, a->data, &row0[c], &a->scratch, &a->scratch_cap, a->alloc,
                      &p, &len) != 0) {
        return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
      }
      // A typed column is evidence of data only where the first row has a
      // value there: an empty name fits any column, so pandas' index header
      // (",city,country" over "0,Paris,FR") or sluice's own "" name over
      // ints was taken for data on its int column alone.
      // (A first row of nulls alone is then a header, as pyarrow, polars
      // and pandas take it; DuckDB skips it.)
      any_typed |= strcmp(f, "u") != 0 && !csv_is_null(&o->nulls, p, len);
      if (a->rows.n_rows > 1 && !fits(f, &a->states[c], &o->nulls, p, len)) all_fit = 0;
      if (a->rows.n_rows == 1) {  // a lone row: see below
        struct csv_infer_state s;
        sl_csv_infer_init(&s, &o->nulls);
        sl_csv_infer_add(&s, p, len);
        if (strcmp(sl_csv_infer_format(&s), "u") != 0) any_typed = 1;
        else if (!csv_is_null(&o->nulls, p, len)) any_text = 1;
      }
    }
    l->header = !(all_fit && any_typed);
    // A lone row with a text value is a header (`id,name,2024`, a table of
    // no rows as sluice writes it), as pyarrow, polars and pandas read it
    // (DuckDB reads a row of data); one of typed values alone (`1,2.5`) is
    // data, and one of nulls alone a header, as before.
    if (a->rows.n_rows == 1 && any_text) l->header = 1;
    // Told from its rows to have no header, row 0's trailing empty field is
    // a column, as with header=false (and as pyarrow, polars and DuckDB
    // read it): analysed again with no_trailing.
    if (!l->header && l->trailing_delim) {
      a->trailing_used = 1;
      return 0;
    }
  }
  l->no_rows = a->final && l->header && a->rows.n_rows == 1 && pos >= a->size;
  if (!l->header) {  // (header=false: a trailing empty field in row 0 is a column, f<n>)
    if (add_rows(a, 0, 0) != 0) return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
  } else {
    l->data_start = a->rows.n_rows > 1 ? a->rows.row_pos[1] : pos;
  }
  SL_RETURN_NOT_OK(make_names(a, error));  // before the header row is dropped below
  // Further chunks (infer_bytes beyond the first MiB, or "all"); past the
  // budget still one row when the sample held the header alone (a header
  // longer than infer_bytes, 60,000 names say): types inferred from no row
  // were all string, which every later value fits, so nothing widened them.
  int64_t used = pos - start;
  int64_t sampled = a->rows.n_rows - (l->header ? 1 : 0);
  while (pos < a->size && (used < budget || sampled == 0)) {
    csv_rows_clear(&a->rows);
    int64_t before = pos;
    int64_t want = used >= budget ? 1 : budget - used < chunk ? budget - used : chunk;
    st = sl_csv_tokenize(&l->dialect, a->data, &pos, a->size, INT64_MAX, 0, want, &a->rows,
                      &err_pos);
    sampled += a->rows.n_rows;
    int stop = 0;
    if (st == CSV_TOK_UNTERMINATED && !a->final) {
      stop = 1;
    } else if (st != CSV_TOK_OK && !skip_wide_row(a, st, err_pos, &pos)) {
      return tok_error(a, st, err_pos, error);
    }
    if (add_rows(a, 0, 0) != 0) return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
    if (stop || pos == before) break;
    used += pos - before;
  }
  // No whole data row sampled from a stream's head (a first row longer than
  // it, perhaps with quoted line feeds): no type is known yet.
  l->undecided = !a->final && (sampled == 0 || (lone && o->header < 0));
  if (a->final && pos < a->size && o->infer_bytes >= CSV_SPREAD_FROM) {
    SL_RETURN_NOT_OK(sample_further_on(a, pos, error));
  }
  return make_formats(a, error);
}

int sl_csv_analyze(const struct csv_options* opts, const uint8_t* data, int64_t start,
                int64_t size, int final, const char* name, const struct sluice_allocator* alloc,
                struct csv_layout* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  struct analysis a;
  memset(&a, 0, sizeof a);
  a.opts = opts;
  a.data = data;
  a.size = size;
  a.name = name;
  a.alloc = alloc;
  a.out = out;
  a.final = final;
  sl_csv_rows_init(&a.rows, alloc);
  // (one field more than max_columns: a header ending in a delimiter)
  if (opts->max_columns > 0) a.rows.max_row_fields = opts->max_columns + 1;
  int rc = analyze(&a, start, error);
  sl_free(alloc, a.states, (size_t)out->n_cols * sizeof *a.states);
  a.states = NULL;
  if (rc == 0 && a.trailing_used) {
    sl_csv_layout_free(out, alloc);
    memset(out, 0, sizeof *out);
    csv_rows_clear(&a.rows);
    a.no_trailing = 1;
    rc = analyze(&a, start, error);
    sl_free(alloc, a.states, (size_t)out->n_cols * sizeof *a.states);
  }
  sl_csv_rows_free(&a.rows);
  sl_free(alloc, a.scratch, (size_t)a.scratch_cap);
  if (rc != 0) sl_csv_layout_free(out, alloc);
  return rc;
}
