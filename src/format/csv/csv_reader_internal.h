// The reader's state, shared by csv_reader.c (open, plan, split lifecycle) and
// csv_column.c (field-count checks and per-column conversion).
#ifndef SL_CSV_READER_INTERNAL_H
#define SL_CSV_READER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "csv_internal.h"
#include "core/sl_builder.h"
#include "io/sl_source.h"
#include "io/sl_source_inflate.h"

enum csv_conv {
  CV_BOOL, CV_INT, CV_UINT, CV_F32, CV_F64, CV_UTF8, CV_BINARY, CV_DATE32, CV_TIMESTAMP,
  CV_TIME, CV_DECIMAL,
};

/// Steps an inferred column type may take when a later value does not fit
/// it, in the order they are taken (int64 -> float64 -> string; a time or
/// timestamp with digits past the microsecond -> nanoseconds; a zone-less
/// timestamp column meeting a zone offset -> UTC, as a sample with both
/// infers it).
enum csv_widening {
  CSV_WIDEN_NONE, CSV_WIDEN_ZONE, CSV_WIDEN_NANOS, CSV_WIDEN_TIMESTAMP, CSV_WIDEN_BOOL,
  CSV_WIDEN_DOUBLE, CSV_WIDEN_STRING
};

/// What converting a column needs of its type (not a struct sl_type, whose
/// union codes made this 184 bytes a column; messages name the type from
/// layout.formats[c]).
struct csv_column {
  enum csv_conv conv;
  int width;               ///< bytes, for CV_INT / CV_UINT / CV_TIME / CV_DECIMAL
  int user_type;           ///< the type came from the schema option
  enum sl_time_unit unit;  ///< CV_TIME, CV_TIMESTAMP
  int32_t precision, scale;///< CV_DECIMAL
  const char* timezone;    ///< CV_TIMESTAMP: points into layout.formats[c], "" if none
};

struct csv_fused_plan;
/// A vector loop of the fused numeric rows (sl_csv_fused_rows_avx512 or _avx2).
typedef int64_t (*csv_fused_rows_fn)(const struct csv_fused_plan* f, const uint8_t** pos,
                                     const uint8_t* end, const uint8_t* limit, int64_t rows,
                                     int64_t want);

struct csv_reader {
  const struct sluice_allocator* alloc;
  struct sl_source* source;
  const char* name;
  struct sl_view view;     ///< the input, when the source has ranged reads
  uint8_t* owned;          ///< the input, when read from a stream
  int64_t owned_cap;
  const uint8_t* data;
  int64_t size;
  struct csv_options opts;
  struct csv_layout layout;
  struct csv_column* cols;
  struct ArrowSchema schema;
  int64_t batch_size;
  int fast_numeric;        ///< the dialect allows sl_csv_fast_numeric (see split fast_ok)
  csv_fused_rows_fn fused_rows;  ///< ... and its vector loop (simd=auto, a CPU with one), or NULL
  int stream;              ///< forward-only source read through a window (csv_stream.c)
  int64_t stream_window;   ///< initial window size
  /// Stream mode, forward-only: a scan has started reading the source (a
  /// second must rewind it, which only an inflated file can), and one is
  /// reading it now (no other may until it closes).
  atomic_int stream_read;
  atomic_int stream_busy;
  /// Compressed input: the source of its inflated bytes (`source` then
  /// points here; the compressed one stays the dataset's).
  struct sl_source* inflated;
  /// Stream mode over a remote source with ranged reads: byte-range splits,
  /// each reading its own range into its window (csv_ranged.c).
  int ranged;
  int64_t header_lines;    ///< ranged: line feeds before data_start
  /// ranged: line feeds per chunk (-1 = not yet), counted with plan_quotes,
  /// which there also takes -2 = being counted; both under chunk_lock.
  atomic_llong* plan_lines;
  /// Mapped file: split j has closed, so its chunk's pages may be dropped by
  /// whoever touches them later (chunk_result).
  atomic_int* plan_closed;
  pthread_mutex_t chunk_lock;
  pthread_cond_t chunk_done;
  int chunk_sync;          ///< chunk_lock and chunk_done were initialised
  int64_t n_plan;
  int64_t* plan_start;     ///< n_plan + 1 nominal offsets
  /// Quote bytes in [b_j, b_j+1) where b_0 = data_start, b_j = plan_start[j] - 1:
  /// counted lazily by split_open (-1 = not yet), see csv_reader.c.
  atomic_llong* plan_quotes;
  /// Scanner state at b_j (split_start_state's result for split j; -1 = not
  /// yet), so that each split's state extends a known one.
  atomic_int* plan_state;
  /// bad_rows=skip: rows dropped so far (all splits), and why the first one
  /// in the input was: first_skip_at is its byte + 1 (0: none yet), and
  /// first_skip_lock guards both it and the text.
  atomic_llong rows_skipped;
  /// Per column, how far a value that did not fit the inferred type asks it
  /// to widen (enum csv_widening, raised atomically by any split); applied by
  /// csv_refine before the next scan.
  atomic_int* widen;
  atomic_flag first_skip_lock;
  int64_t first_skip_at;
  char first_skip[256];
};

/// Whether a second scan can read the input again (not a forward-only
/// stream), so that refining a type is worth it.
static inline int csv_rereadable(const struct csv_reader* r) {
  return !r->stream || r->ranged ||
         (r->inflated != NULL && sl_source_inflate_rewindable(r->inflated));
}

struct csv_split_state {
  struct csv_reader* r;
  /// The bytes being decoded: the whole input for ranged sources; a window of
  /// the stream for forward-only ones. Positions (pos, stop, field offsets)
  /// are relative to `data`; `limit` ends the complete rows in it.
  const uint8_t* data;
  int64_t limit;
  int64_t base;          ///< input offset of data[0]
  int64_t lines_before;  ///< line feeds in the input before data[0]
  int64_t pos, stop;
  int64_t* cols;
  int64_t n_cols;
  int64_t* builder_of;     ///< per file column: output builder index, or -1
  int fast_ok;             ///< output columns all int64/float64
  uint8_t* window;         ///< stream mode: the window (sl_alloc_buffer, win_cap)
  int holds_stream;        ///< stream mode: this split claimed stream_busy
  /// Ranged mode: the split's bytes as fetched, decoded in place (window
  /// NULL) until a row crosses their end; then copied into a window.
  struct sl_view range;
  int64_t win_cap, win_len;
  int eof;                 ///< stream mode: the source is exhausted
  int need_more;           ///< stream mode: the rows up to limit were not complete
  struct sl_builder batch;
  struct csv_rows rows;
  uint8_t* scratch;
  int64_t scratch_cap;
  int64_t index;           ///< the split's index in the plan
  /// A mapped file read whole: on close the split's pages leave the
  /// resident set.
  int mapped;
};

/// Chunk j of the plan is [csv_chunk_from, csv_chunk_to): split j's first row
/// depends on the scanner state after chunks 0..j-1.
static inline int64_t csv_chunk_from(const struct csv_reader* r, int64_t j) {
  return j == 0 ? r->layout.data_start : r->plan_start[j] - 1;
}
static inline int64_t csv_chunk_to(const struct csv_reader* r, int64_t j) {
  return r->plan_start[j + 1] - 1;
}

/// What chunk bytes data[0..n) tell the split-start scan: their quote count
/// (its parity matters), or for comment dialects their state transitions;
/// 0 without quoting. csv_state_after applies it to the state before them.
static inline long long csv_chunk_value(const struct csv_dialect* d, const uint8_t* data,
                                        int64_t n) {
  if (d->comment != 0) return (long long)sl_csv_comment_transitions(d, data, 0, n);
  return d->quote != 0 ? (long long)sl_csv_count_byte(data, n, d->quote) : 0;
}
static inline int csv_state_after(const struct csv_dialect* d, int state, long long value) {
  if (d->comment != 0) return (int)((unsigned long long)value >> (2 * state)) & 3;
  int q = state == CSV_ST_QUOTE;
  return (q ^ (int)(value & 1)) ? CSV_ST_QUOTE : CSV_ST_OUT;
}

/// Stream mode (csv_stream.c): at open, peeks and analyses the head (sets
/// r->stream, or leaves it 0 to read the input whole); per split, sets up the
/// window; refills it (moving the undecoded tail to the front; *shift = bytes
/// dropped), reading at least once more when `force`.
int sl_csv_stream_prepare(struct csv_reader* r, struct sluice_error* error);
/// The error for a row longer than max_row_bytes that starts at input byte
/// `at`, on `line` (1-based).
int sl_csv_row_too_long(const struct csv_reader* r, int64_t line, int64_t at,
                        struct sluice_error* error);
int sl_csv_stream_start(struct csv_split_state* s, struct sluice_error* error);
int sl_csv_stream_fill(struct csv_split_state* s, int force, int64_t* shift,
                    struct sluice_error* error);

/// Ranged mode (csv_ranged.c): sets up split i's window over its byte range
/// (its first row, quote state and line count from the chunks before it);
/// reads more of the input into the window.
int sl_csv_ranged_start(struct csv_split_state* s, int64_t i, struct sluice_error* error);
int sl_csv_ranged_read(struct csv_split_state* s, struct sluice_error* error);
/// Moves the undecoded bytes [keep, win_len) of the fetched range into a
/// new window (room to read more), releasing the range.
int sl_csv_ranged_window(struct csv_split_state* s, int64_t keep, struct sluice_error* error);

/// Line (1-based) and input byte offset of position `pos` in s->data.
void sl_csv_split_where(const struct csv_split_state* s, int64_t pos, int64_t* line, int64_t* byte);

/// Whether row r of `rows` has one field more than the layout's columns, an
/// empty unquoted one, in the dialect where rows may end in a delimiter (a
/// header that ends in one, csv_layout.trailing_delim). Elsewhere such a row
/// has a field too many, as pyarrow and polars read it: `ab,` in a
/// one-column file is no `ab`.
static inline int csv_trailing_delim_row(const struct csv_layout* l, const struct csv_rows* rows,
                                         int64_t r) {
  if (!l->trailing_delim || rows->row_first[r + 1] - rows->row_first[r] != l->n_cols + 1)
    return 0;
  const struct csv_field* last = &rows->fields[rows->row_first[r + 1] - 1];
  return last->len == 0 && last->flags == 0;
}

/// Every row has n_cols fields (or one more, empty, where rows may end in a
/// delimiter: csv_trailing_delim_row).
int sl_csv_check_field_counts(struct csv_split_state* s, struct sluice_error* error);
/// Whether field `f` of file column `c` converts to the column's type (or is
/// null), exactly as sl_csv_convert_column would take it. 0 = it would fail;
/// ENOMEM; *why receives a description when it fails.
int sl_csv_field_converts(struct csv_split_state* s, int64_t c, const struct csv_field* f,
                       char* why, size_t why_cap, int* ok);
/// The bad-row options (csv_bad_rows.c) applied to the tokenized rows of a
/// chunk, in place of sl_csv_check_field_counts: missing_fields=null pads short
/// rows with null fields; bad_rows=skip drops rows with the wrong number of
/// fields or a value that does not convert, counting them in the reader.
/// After it, only row_first[r] (not the difference to the next row) is
/// meaningful: dropped rows leave their fields in place.
int sl_csv_fix_rows(struct csv_split_state* s, struct sluice_error* error);
/// bad_rows=skip for a row the tokenizer refused as wider than max_columns
/// (its fields were never kept): counts it as skipped, with its start `pos`.
void sl_csv_skip_wide_row(struct csv_split_state* s, int64_t pos);
/// The reader's rows_skipped hook (see sl_format.h).
int64_t sl_csv_rows_skipped(void* reader, char* first_reason, size_t cap);
/// Converts column `c` of the tokenized rows into builder `b`.
int sl_csv_convert_column(struct csv_split_state* s, int64_t c, struct sl_builder* b,
                       struct sluice_error* error);

/// The fused path for numeric projections: parses rows straight from the
/// bytes (no field array) while they have the plain shape (wanted fields are
/// numbers, no quotes, nulls or CR inside; other fields are skipped), stopping at the first row that does not;
/// the tokenizing path then takes over for a chunk. Returns rows decoded
/// (0: the first row was not plain), -1 on ENOMEM.
int64_t sl_csv_fast_numeric(struct csv_split_state* s, int64_t want, int64_t max_bytes);

/// What the fused path does with each file column, and where its values go:
/// written in place at index `rows`, committed by sl_csv_fast_numeric.
enum csv_fused_kind { CSV_FUSED_SKIP, CSV_FUSED_F64, CSV_FUSED_I64, CSV_FUSED_I32 };
struct csv_fused_plan {
  int64_t n_cols;  ///< at most 64 (see fast_numeric)
  uint8_t kind[64];
  uint8_t* out[64];
  uint8_t delim, quote, comment;
};

/// Whether this CPU runs sl_csv_fused_rows_avx512 (AVX-512 BW, VL, VBMI2).
int sl_csv_fused_avx512_supported(void);
/// Whether this CPU runs sl_csv_fused_rows_avx2 (AVX2, BMI2).
int sl_csv_fused_avx2_supported(void);
/// The fused rows from *pos on while rows < want and a row starts before
/// `limit`, field ends read from 64-byte windows of masks (csv_fused_rows.h).
/// Stops at the first row it cannot take whole, or where a window would
/// pass `end` (the scalar loop of sl_csv_fast_numeric decides those); returns
/// the new row count and leaves *pos at the first row not taken.
int64_t sl_csv_fused_rows_avx512(const struct csv_fused_plan* f, const uint8_t** pos,
                              const uint8_t* end, const uint8_t* limit, int64_t rows,
                              int64_t want);
int64_t sl_csv_fused_rows_avx2(const struct csv_fused_plan* f, const uint8_t** pos,
                            const uint8_t* end, const uint8_t* limit, int64_t rows, int64_t want);

/// Where the fused loops go on after a field that ends at t: the next field
/// (t must be the delimiter) or, after the last field, the next row (t must
/// end the line: LF, CRLF, or the end of the input). NULL when t does neither.
static inline const uint8_t* csv_fused_next(const uint8_t* t, const uint8_t* end, int last,
                                            uint8_t delim) {
  if (!last) return t < end && *t == delim ? t + 1 : NULL;
  if (t < end && *t == '\r') ++t;
  if (t < end && *t != '\n') return NULL;
  return t < end ? t + 1 : t;
}

/// The byte after the closing quote of the quoted field at q ("" being a
/// quote inside), or NULL when it does not close before end.
static inline const uint8_t* csv_skip_quoted(const uint8_t* q, const uint8_t* end, uint8_t quote) {
  const uint8_t* z = q + 1;
  for (;;) {
    z = memchr(z, quote, (size_t)(end - z));
    if (z == NULL) return NULL;
    if (z + 1 < end && z[1] == quote) {
      z += 2;
      continue;
    }
    return z + 1;
  }
}

#endif
