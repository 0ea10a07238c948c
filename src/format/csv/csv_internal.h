// Shared pieces of the CSV reader: options, the dialect, the tokenizer's row
// layout, and the text-to-value converters. See csv_reader.c for the overall
// design (sampling, split planning, quote parity).
#ifndef SL_CSV_INTERNAL_H
#define SL_CSV_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/sl_type.h"
#include "core/sl_value_parse.h"
#include "sluice.h"

/* ---- options -------------------------------------------------------------- */

struct csv_schema_entry {
  char* name;    ///< owned
  char* format;  ///< owned Arrow format string
};

/// The spellings that read as null. The default set ("", NA, NULL, null) is
/// tested inline; a configured set (null_values=A|B|) is searched.
struct csv_nulls {
  int custom;              ///< 0: the default set
  int64_t n;
  const uint8_t** text;    ///< n spellings, pointing into `storage`
  int64_t* len;
  char* storage;           ///< owned copy of the option value (storage_len + 1 bytes)
  size_t storage_len;
};

struct csv_options {
  int delimiter;      ///< -1 = sniff
  int comment;        ///< 0 = none, else lines starting with it are skipped
  int comment_given;  ///< comment= was set (else '#' when sniffed, csv_dialect.c)
  int quote;          ///< 0 = quoting off
  int quote_given;    ///< quote= was set (else '"', or '\'' when sniffed)
  int escape;         ///< 0 = none (doubled quotes only), else e.g. '\\'
  int header;         ///< -1 = sniff, 0, 1
  int64_t split_size; ///< 0 = automatic
  int64_t infer_bytes;///< bytes of data sampled for type inference (-1 = whole input)
  int64_t batch_bytes;///< cut a batch once its rows span this many bytes
  /// The most bytes of one row (its line ending included) a stream holds
  /// while it waits for the row's end (csv_stream.c); 0 until csv_open sets
  /// the default, the larger of the memory budget and CSV_MAX_ROW_BYTES.
  int64_t max_row_bytes;
  /// The most columns (fields of a row) the reader takes: each costs memory
  /// whatever its bytes (a 5 MB row of commas is 5 million columns). 0
  /// until csv_open sets the default (csv_default_max_columns).
  int64_t max_columns;
  int impl;           ///< CSV_IMPL_* ("simd=scalar|sse2|avx2|auto")
  int no_fastpath;    ///< "fastpath=false": always tokenize (tests compare both)
  int missing_null;   ///< "missing_fields=null": short rows end with nulls
  int skip_bad_rows;  ///< "bad_rows=skip": drop (and count) rows that do not fit
  int stray_text;     ///< "stray_quotes=text": see csv_dialect.stray_text
  int64_t n_schema;
  struct csv_schema_entry* schema;
  /// Schema names a header may lack (union_by_name: another file has the
  /// column), as pyarrow's column_types and DuckDB's types= take them.
  int schema_partial;
  struct csv_nulls nulls;
};

/// max_row_bytes's floor: the default memory budget, 128 times DuckDB's
/// max_line_size (2 MB) and 256 times pyarrow's block_size (1 MiB), which
/// refuse longer rows by default; a string value cannot pass 2 GiB anyway.
#define CSV_MAX_ROW_BYTES ((int64_t)256 << 20)

/// What max_columns's default charges a column against the memory budget:
/// a read holds 1 to 5 KiB of state per column (names, types, schema copies,
/// builders, a writer's), measured at 100,000 columns. pyarrow and DuckDB
/// refuse a 5 MB row of commas for its length (block_size, max_line_size);
/// sluice maps a local file whole and takes long rows, so it counts columns.
#define CSV_COLUMN_BYTES 1024
/// max_columns's ceiling: the most children sl_schema_init takes.
#define CSV_MAX_COLUMNS ((int64_t)1 << 24)

/// max_columns's default for a read whose memory budget is `budget`: the
/// larger of it and CSV_MAX_ROW_BYTES over CSV_COLUMN_BYTES (262,144 with
/// the default budget).
static inline int64_t csv_default_max_columns(int64_t budget) {
  int64_t base = budget > CSV_MAX_ROW_BYTES ? budget : CSV_MAX_ROW_BYTES;
  return base / CSV_COLUMN_BYTES < CSV_MAX_COLUMNS ? base / CSV_COLUMN_BYTES : CSV_MAX_COLUMNS;
}

/// Parses "key=value,key=value". Unknown keys are an error (typos should not
/// silently change nothing). `what` names the object for messages.
int sl_csv_options_parse(const char* text, const struct sluice_allocator* alloc,
                      struct csv_options* out, struct sluice_error* error);
void sl_csv_options_free(struct csv_options* o, const struct sluice_allocator* alloc);

/* ---- tokenizer ------------------------------------------------------------ */

struct csv_dialect {
  uint8_t delimiter;
  uint8_t quote;   ///< 0 = none
  uint8_t escape;  ///< 0 = none
  uint8_t comment; ///< 0 = none; a row starting with it is skipped up to its line feed
  uint8_t impl;    ///< CSV_IMPL_*: tests force the scalar path to compare
  /// A quote opens quoting only at a field's start; elsewhere it is text, and
  /// so is what follows a closing quote (pyarrow's and DuckDB's reading).
  /// Quote parity then says nothing: the scalar tokenizer, one split.
  uint8_t stray_text;
};

/// AUTO: the best the CPU has; SCALAR: no SIMD; SSE2: SSE2 structural scans,
/// the scalar numeric loop; AVX2: the AVX2 numeric loop even where AVX-512
/// would run (so that tests cover it on any AVX2 CPU).
enum { CSV_IMPL_AUTO = 0, CSV_IMPL_SCALAR, CSV_IMPL_SSE2, CSV_IMPL_AVX2 };

/// Field flag: the raw bytes contain quote or escape characters and must be
/// unescaped (sl_csv_unescape) before use.
#define CSV_FIELD_ESCAPED 1u
/// Field flag, with CSV_FIELD_ESCAPED, from the block tokenizers: the field
/// holds exactly two quote bytes (at its ends, when it is "text": then the
/// text is a view, with no search for quotes inside).
#define CSV_FIELD_TWO_QUOTES 2u

struct csv_field {
  int64_t pos;     ///< byte offset in the input
  int32_t len;
  uint32_t flags;
};

/// Rows tokenized from one stretch of input. Row r has fields
/// [row_first[r], row_first[r + 1]) and started at byte row_pos[r].
struct csv_rows {
  const struct sluice_allocator* alloc;
  /// 0, or the most fields a row may have: the tokenizer stops with
  /// CSV_TOK_TOO_MANY_FIELDS where more would grow `fields`, so that a row
  /// of commas costs no more than max_columns allows (16 bytes a field).
  int64_t max_row_fields;
  struct csv_field* fields;
  int64_t n_fields, cap_fields;
  int64_t* row_first;  ///< n_rows + 1 entries
  int64_t* row_pos;
  int64_t n_rows, cap_rows;
};

void sl_csv_rows_init(struct csv_rows* r, const struct sluice_allocator* alloc);
/// Empties `r` for the next rows. The tokenizer starts a row at
/// row_first[n_rows], which sl_csv_fix_rows may have left at a dropped row's
/// fields: reset it too.
static inline void csv_rows_clear(struct csv_rows* r) {
  r->n_rows = r->n_fields = 0;
  if (r->row_first != NULL) r->row_first[0] = 0;
}
void sl_csv_rows_free(struct csv_rows* r);

/// Whether p[0, n) is "0" or "1": an int, and a bool too (as pyarrow takes it).
static inline int csv_is_bit(const uint8_t* p, int64_t n) {
  return n == 1 && (p[0] == '0' || p[0] == '1');
}

enum csv_tok_status {
  CSV_TOK_OK = 0,
  CSV_TOK_ENOMEM,
  CSV_TOK_UNTERMINATED,  ///< input ended inside quotes; *err_pos = row start
  CSV_TOK_TOO_LONG,      ///< a field longer than 2 GiB; *err_pos = row start
  CSV_TOK_STRAY_QUOTE,   ///< a quote not where RFC 4180 allows one; *err_pos = it
  CSV_TOK_TOO_MANY_FIELDS, ///< a row of more than max_row_fields fields; *err_pos = row start
};

/// The error text of a tokenizer status other than OK and ENOMEM.
const char* sl_csv_tok_message(enum csv_tok_status st);
/// What to add to sl_csv_tok_message's text for the error at data[err_pos]:
/// escape=backslash for a stray quote right after a backslash, else for a
/// sniffed dialect, or the max_columns option (into buf, "" when nothing;
/// cap >= 256).
const char* sl_csv_tok_hint(const struct csv_options* o, const struct csv_dialect* d,
                            enum csv_tok_status st, const uint8_t* data, int64_t err_pos,
                            char* buf, size_t cap);

/// The offset in a field's raw bytes p[0, len) of the first quote character
/// RFC 4180 does not allow there: one that is not the field's first byte
/// when the field is unquoted, or a closing quote with more text after it.
/// -1 when the field is well formed. `two_quotes`: the field holds exactly
/// two quote bytes (CSV_FIELD_TWO_QUOTES), so its ends decide.
///
/// Why not read such quotes as text, as pyarrow does: every quote toggles
/// quoting in the block tokenizers and in the split planner's parity pass,
/// which is what lets a split start anywhere; a quote that does not toggle
/// would shift every split boundary after it. So they are an error, found
/// where the field ends, never a silently merged field.
int64_t sl_csv_stray_quote(const struct csv_dialect* d, const uint8_t* p, int64_t len,
                        int two_quotes);

/// The status to report for a tokenizer failure on data[0, end): an input
/// that ends inside quotes (*err_pos = the row start) is often a quote inside
/// an unquoted field that opened quoting; then that quote is the error
/// (CSV_TOK_STRAY_QUOTE, *err_pos = it). Other statuses pass through.
enum csv_tok_status sl_csv_tok_explain(const struct csv_dialect* d, const uint8_t* data, int64_t end,
                                    enum csv_tok_status st, int64_t* err_pos);

/// Tokenizes rows from data[*pos] (a row start, outside quotes) up to `end`
/// (end of input). Stops after max_rows rows, once the rows span max_bytes, or
/// when the next row would start at or past `stop` (the split's nominal end).
/// Blank lines are skipped, and so are comment lines (a row whose first byte
/// is d->comment, up to and including its line feed). A trailing CR is stripped from each line's last
/// field. *pos is advanced to the next row start. Rows are appended to `out`.
enum csv_tok_status sl_csv_tokenize(const struct csv_dialect* d, const uint8_t* data,
                                 int64_t* pos, int64_t end, int64_t stop, int64_t max_rows,
                                 int64_t max_bytes, struct csv_rows* out, int64_t* err_pos);

/// Number of `c` bytes in data[0, n) (SIMD-counted).
int64_t sl_csv_count_byte(const uint8_t* data, int64_t n, uint8_t c);
/// The same with the implementation forced (CSV_IMPL_*; tests compare them).
int64_t sl_csv_count_byte_impl(const uint8_t* data, int64_t n, uint8_t c, int impl);

/// Scanner states at a byte position (the state before that byte is read).
/// Without a comment character only OUT / QUOTE matter (quote parity); with
/// one, a row start (LINE) decides whether the row is a comment.
enum csv_scan_state {
  CSV_ST_OUT = 0,    ///< outside quotes, within a row
  CSV_ST_QUOTE = 1,  ///< inside a quoted field
  CSV_ST_LINE = 2,   ///< at a row start (outside quotes, after a line feed)
  CSV_ST_COMMENT = 3 ///< within a comment line
};

/// The position after the line feed that ends the row starting at `from`
/// (outside quotes), by the tokenizers' rules; -1 if the row does not end
/// before `end`. Finds the end of a row refused as too wide to keep.
int64_t sl_csv_row_end(const struct csv_dialect* d, const uint8_t* data, int64_t from,
                       int64_t end);

/// The first row start at or after `from`: the position after the first line
/// feed at or after from - 1 that ends a row or a comment line, given the
/// scanner state at from - 1 (0/1 = quote parity works for dialects without
/// comments). Looks no further than `end`; returns `end` if there is none.
int64_t sl_csv_next_row_start(const struct csv_dialect* d, const uint8_t* data, int64_t from,
                           int64_t end, int state);

/// Comment dialects: the state after data[from, to) for each state before it,
/// packed 2 bits per start state (bits 2s..2s+1 = end state from state s).
/// Quote parity alone cannot place split starts when comment lines may hold
/// quote characters; composing these maps chunk by chunk can.
unsigned sl_csv_comment_transitions(const struct csv_dialect* d, const uint8_t* data, int64_t from,
                                 int64_t to);

/// Unescapes a field with CSV_FIELD_ESCAPED into out (capacity >= len).
/// Returns the unescaped length.
int64_t sl_csv_unescape(const struct csv_dialect* d, const uint8_t* in, int64_t len,
                     uint8_t* out);

/* ---- converters ----------------------------------------------------------- */

/// 1 if the token is a null spelling: one of nulls' (NULL or default: "", NA,
/// NULL, null).
/// The default spelling that is null in float columns only: "NaN" (as in
/// pandas' and pyarrow's defaults). The writer spells a float NaN "nan",
/// which stays a NaN, so a file sluice writes reads back the same.
static inline int csv_is_float_null(const struct csv_nulls* nulls, const uint8_t* p, int64_t n) {
  return (nulls == NULL || !nulls->custom) && n == 3 && p[0] == 'N' && p[1] == 'a' && p[2] == 'N';
}

/// Whether a null spelling p[0, n) spells a number ("NaN", "inf", "1" under
/// null_values=1): quoted, it is that number in a column without a given
/// type too, as pyarrow, DuckDB and polars read a quoted "1.5" or "NaN"
/// among floats; other quoted null spellings ("NA") are text there.
int sl_csv_is_number(const uint8_t* p, int64_t n);

static inline int csv_is_null(const struct csv_nulls* nulls, const uint8_t* p, int64_t n) {
  if (nulls == NULL || !nulls->custom) {
    switch (n) {
      case 0: return 1;
      case 2: return p[0] == 'N' && p[1] == 'A';
      case 4: return (p[0] == 'N' && p[1] == 'U' && p[2] == 'L' && p[3] == 'L') ||
                     (p[0] == 'n' && p[1] == 'u' && p[2] == 'l' && p[3] == 'l');
      default: return 0;
    }
  }
  for (int64_t i = 0; i < nulls->n; ++i) {
    if (nulls->len[i] == n && (n == 0 || memcmp(nulls->text[i], p, (size_t)n) == 0)) return 1;
  }
  return 0;
}

/// Each returns 1 on success, 0 if the token is not of that type.
int sl_csv_parse_int64(const uint8_t* p, int64_t n, int64_t* out);
int sl_csv_parse_uint64(const uint8_t* p, int64_t n, uint64_t* out);
/// Correctly rounded (equal to strtod for every input it accepts). Accepts
/// decimal and scientific notation, nan, inf, infinity (any case, signed).
int sl_csv_parse_double(const uint8_t* p, int64_t n, double* out);
/// Why an integer column refused text sl_csv_parse_int64/uint64 did not take:
/// "out of range:" for an integer (a sign and digits), else "cannot parse".
const char* sl_csv_integer_problem(const uint8_t* p, int64_t n);
/// As sl_csv_parse_double, rounded once to the nearest float (as strtof).
int sl_csv_parse_float(const uint8_t* p, int64_t n, float* out);
int sl_csv_parse_bool(const uint8_t* p, int64_t n, int* out);
/// Prefix parsers for the fused numeric path: parse a number at p (not past
/// e) and return its end, or NULL if there is none of the common shape. A
/// value returned equals what sl_csv_parse_double / sl_csv_parse_int64 give for
/// the same token.
const uint8_t* sl_csv_scan_double(const uint8_t* p, const uint8_t* e, double* out);
const uint8_t* sl_csv_scan_int64(const uint8_t* p, const uint8_t* e, int64_t* out);
/// YYYY-MM-DD -> days since 1970-01-01. These three take the text with
/// spaces and tabs around it too (" 2024-01-01", as DuckDB reads it).
int sl_csv_parse_date32(const uint8_t* p, int64_t n, int32_t* out);
/// ISO 8601 date-times and times of day: core/sl_value_parse.h (shared
/// with row-filter literals).
int sl_csv_parse_timestamp(const uint8_t* p, int64_t n, int64_t* seconds, int32_t* nanos,
                        int* zoned);
int sl_csv_parse_time(const uint8_t* p, int64_t n, int64_t* nanos);
/// A decimal number ("-12.50", "1e3", " 7 ") as decimal128/256(precision,
/// scale): `width` (16 or 32) little-endian two's complement bytes at `out`.
/// 0 with *why (for "%s '<value>' as <type>") when it is not a number, has
/// nonzero digits past the scale, or more digits than the precision holds
/// (as pyarrow.csv, which refuses to round).
int sl_csv_parse_decimal(const uint8_t* p, int64_t n, int precision, int scale, int width,
                      uint8_t* out, const char** why);

/* ---- inference ------------------------------------------------------------ */

/// Inferred column kinds, narrowest first.
enum csv_kind {
  CSV_KIND_NULL = 0,  ///< only nulls seen
  CSV_KIND_BOOL,
  CSV_KIND_INT64,
  CSV_KIND_DOUBLE,
  CSV_KIND_DATE32,
  CSV_KIND_TIMESTAMP,
  CSV_KIND_TIME,
  CSV_KIND_STRING,
};

struct csv_infer_state {
  const struct csv_nulls* nulls;  ///< the null spellings (NULL: the default set)
  unsigned can;       ///< bit per kind still possible
  int any_value;
  int any_zone;
  int any_nanos;      ///< a time or timestamp with digits past the microsecond
  int any_wide;       ///< a timestamp outside timestamp[ns]'s range (before 1677, after 2262)
  int any_bit;        ///< a 0 or 1 (a bool column that holds them takes them as bools)
  /// A value that is an integer, or a date: a float or timestamp column
  /// whose values are never so tells a header's "2024" or "2024-01-01"
  /// from its values (header sniffing).
  int any_int;
  int any_date;
};

void sl_csv_infer_init(struct csv_infer_state* s, const struct csv_nulls* nulls);
void sl_csv_infer_add(struct csv_infer_state* s, const uint8_t* p, int64_t n);
/// Adds p[0, n) as a value even when it is a null spelling: a quoted number
/// ("NaN", or "1" under null_values=1), which quoting does not make text.
void sl_csv_infer_add_value(struct csv_infer_state* s, const uint8_t* p, int64_t n);
/// Adds a value that only a string column holds: a quoted null spelling
/// that is no number ("NA"), which is how the writer keeps that text from
/// reading as null.
void sl_csv_infer_add_text(struct csv_infer_state* s);
/// Arrow format string of the inferred type ("b", "l", "g", "tdD", "tsu:UTC",
/// "tsu:", "tsn:", "ttu", "ttn", "u"). All-null columns become strings.
const char* sl_csv_infer_format(const struct csv_infer_state* s);
/// The narrowest of the formats sl_csv_infer_format gives whose values include
/// the values of both `a` and `b` (into buf, cap >= 16): a column inferred
/// as `a` in one object and `b` in another reads as this in both.
const char* sl_csv_join_formats(const char* a, const char* b, char* buf, size_t cap);

/* ---- open-time analysis (csv_dialect.c) ---------------------------------- */

/// What the reader learns from the head of the input: dialect, header,
/// columns and their types.
struct csv_layout {
  struct csv_dialect dialect;
  int header;           ///< the first row held names
  int trailing_delim;   ///< the header ended with a delimiter (rows may too)
  int no_rows;          ///< the whole input was sampled: a header and no row
  /// (final = 0) the stream's sample held no whole data row, or one row
  /// alone with the header sniffed: the types (or header) are not known yet
  int undecided;
  int64_t data_start;   ///< first byte of the first data row
  int64_t n_cols;
  char** names;         ///< owned, n_cols
  char** formats;       ///< owned, n_cols (Arrow format strings)
  /// owned, n_cols, or NULL (none): 1 = the sample held only nulls in this
  /// column, so its inferred type (string) says nothing about the values,
  /// and another object's type for it is taken as it is (DuckDB's glob).
  uint8_t* unsampled;
};

/// Sniffs (unless given) the delimiter and header, infers types from a sample
/// of `opts->infer_bytes`, and applies `opts->schema`. `start` skips a BOM.
/// `final` = 0 when data[0, size) is only the head of a stream (cut after a
/// line feed, which may lie inside a quoted field).
int sl_csv_analyze(const struct csv_options* opts, const uint8_t* data, int64_t start,
                int64_t size, int final, const char* name, const struct sluice_allocator* alloc,
                struct csv_layout* out, struct sluice_error* error);
void sl_csv_layout_free(struct csv_layout* l, const struct sluice_allocator* alloc);

/// EILSEQ, with an error naming the encoding and the iconv command that
/// converts it, when data[0, n) (the head of the input) is UTF-16 or UTF-32
/// text: told by its byte-order mark, or without one by the NUL bytes ASCII
/// text has there (every second byte in UTF-16LE). The reader splits bytes
/// at ',' and '\n', which would cut such text into made-up rows.
int sl_csv_check_encoding(const uint8_t* data, int64_t n, const char* name,
                          struct sluice_error* error);

/// The quote character the reader uses: the one given, else (unless an
/// apostrophe has another role) '\'' or '"' as the first 64 KiB of
/// data[start, size) suggest. `cr_lines`: a CR also starts a line (the raw
/// head of a bare-CR file, csv_cr_lines.c). The analysis and the bare-CR
/// rewrite must agree on it.
uint8_t sl_csv_pick_quote(const struct csv_options* o, const uint8_t* data, int64_t start,
                       int64_t size, int cr_lines);

/* ---- lines ending in a bare CR (csv_cr_lines.c) --------------------------- */

/// 1 when the lines of data[start, size) end in a bare CR (classic Mac OS):
/// in its first MiB, the first line end outside quotes is a CR not followed
/// by LF, and no line ends in LF. Sets *quote (when 1) to the quote
/// character the analysis will use, for sl_csv_cr_to_lf.
int sl_csv_lines_end_in_cr(const struct csv_options* o, const uint8_t* data, int64_t start,
                        int64_t size, uint8_t* quote);
/// Rewrites, in place, each CR (and LF) of data[start, size) that is outside
/// quoted fields to LF, following the tokenizers' reading of quote, escape,
/// stray_quotes and comment options: the input then reads as an LF file with
/// every byte where it was.
void sl_csv_cr_to_lf(const struct csv_options* o, uint8_t quote, uint8_t* data, int64_t start,
                  int64_t size);

/// 1-based line number of byte `offset` (counts line feeds before it).
int64_t sl_csv_line_of(const uint8_t* data, int64_t offset);

#endif
