// The "csv" format reader (.csv .tsv .txt).
//
// Design:
// - Local files are one contiguous byte range, mmap'd whole by the source
//   (read_at hands out a pointer into the mapping). Other sources (pipes,
//   and HTTP / S3, whose ranged reads would fetch the whole object into
//   memory) are read forward through a bounded window as one split
//   (csv_stream.c), or into memory when small or when lines end in a bare
//   CR.
// - open() sniffs the dialect and header and infers column types from a sample
//   (csv_dialect.c). The schema is fixed for a scan. A later value that does
//   not fit its inferred type ends the scan with an error naming the line,
//   byte offset and column (never a silent conversion) and records how far
//   the column must widen (int64 -> float64 -> string, microseconds ->
//   nanoseconds); csv_refine applies that before the next scan, and the
//   consumers that can (convert, stats, sluice.read) scan again. Streaming
//   every batch at once leaves no other exact way: batches of the narrower
//   type may already be with the consumer.
// - plan_splits() cuts [data_start, size) into byte ranges of split_size
//   (automatic: size/8 clamped to 1..32 MiB). A range may begin inside a quoted
//   field, so quote bytes are counted per range (memchr/SIMD, memory speed; the
//   counting is spread over split_open calls, see quote_parity_before): quote
//   parity at each range start is then known exactly, because every quote
//   byte toggles the quoting state (csv_scan.c). A split's rows are the rows
//   that START in its range: it begins at the first line feed outside quotes at
//   or after its start - 1, and stops after the row that crosses its end. Each
//   row belongs to exactly one split, for any input. Line numbers in messages
//   are computed only when an error happens (by counting line feeds before the
//   offset), so the counting pass counts only quotes. Dialects with an escape
//   character break parity, so they get a single split. With comment=C, a
//   comment line's quotes do not toggle anything, so the pass records per
//   chunk the scanner state it ends in for each state it may start in
//   (sl_csv_comment_transitions) and composes those instead: still exact, still
//   one pass. A split's search for its first row stops at its own end, so a
//   quoted field spanning many splits is not rescanned by each of them.
// - split_next() fills a batch of batch_size rows (or batch_bytes of input) in
//   chunks of a few thousand rows: when every wanted column is int32, int64
//   or float64, a fused path parses numbers straight from the bytes into the
//   columns, crossing the fields of other columns (sl_csv_fast_numeric; on
//   CPUs with AVX-512 VBMI2 or AVX2, the vector loop of csv_fused_rows.h
//   takes its rows), handing
//   over to the general path (tokenize into field offsets, then convert
//   column by column into Arrow builders) for rows it cannot take. Columns not
//   asked for are never converted.
// - Lines that end in a bare CR (classic Mac OS) are rewritten to LF in a
//   copy of the whole input before anything else looks at it
//   (csv_cr_lines.c), so that no hot path knows of them.
// - .gz (multi-member) and .zst inputs are inflated as they are read
//   (sl_source_inflate.c) and then read like a pipe: in bounded memory, as
//   one split (inflating cannot start mid-stream); a small one is read whole
//   and split like a file. A second scan starts the inflation over.
#include "csv_reader.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "csv_reader_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_builder.h"
#include "core/sl_error.h"
#include "core/sl_type.h"

static const char* const csv_extensions[] = {".csv", ".tsv", ".txt", NULL};

// Text has no magic: a small score when the head looks like text at all, so
// real magic bytes always win and the extension decides among text formats.
static int csv_probe(const uint8_t* head, int64_t n) {
  if (n <= 0) return 0;
  int64_t lines = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (head[i] == 0) return 0;
    lines += head[i] == '\n';
  }
  return lines > 0 ? 10 : 5;
}

/* ---- open ----------------------------------------------------------------- */

static int slurp(struct csv_reader* r, struct sluice_error* error) {
  for (;;) {
    struct sl_view v;
    SL_RETURN_NOT_OK(sl_source_read_next(r->source, INT64_C(1) << 20, &v, error));
    if (v.size == 0) {
      sl_view_release(&v);
      return 0;
    }
    if (r->owned_cap - r->size < v.size) {
      int64_t cap = r->owned_cap < (1 << 20) ? (1 << 20) : r->owned_cap;
      while (cap - r->size < v.size) cap *= 2;
      uint8_t* b = r->owned == NULL ? sl_alloc_buffer(r->alloc, (size_t)cap)
                                    : sl_realloc_buffer(r->alloc, r->owned, (size_t)r->owned_cap,
                                                        (size_t)cap);
      if (b == NULL) {
        sl_view_release(&v);
        return sl_error_set(error, ENOMEM, "%s: byte %" PRId64 ": out of memory (%" PRId64
                            " bytes) reading the input into memory", r->name, r->size, cap);
      }
      r->owned = b;
      r->owned_cap = cap;
    }
    memcpy(r->owned + r->size, v.data, (size_t)v.size);
    r->size += v.size;
    sl_view_release(&v);
  }
}

/// Columns and schema from the layout's formats (again after a refinement).
static int setup_columns(struct csv_reader* r, struct sluice_error* error) {
  const struct csv_layout* l = &r->layout;
  size_t n = (size_t)(l->n_cols > 0 ? l->n_cols : 1);
  r->cols = sl_calloc(r->alloc, n, sizeof *r->cols);
  if (r->cols == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
  if (r->widen == NULL) {
    r->widen = sl_calloc(r->alloc, n, sizeof *r->widen);
    if (r->widen == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
    for (size_t c = 0; c < n; ++c) atomic_init(&r->widen[c], CSV_WIDEN_NONE);
  }
  SL_RETURN_NOT_OK(sl_schema_init(&r->schema, r->alloc, "+s", "", 0, l->n_cols, error));
  for (int64_t c = 0; c < l->n_cols; ++c) {
    struct csv_column* col = &r->cols[c];
    SL_RETURN_NOT_OK(sl_schema_init(r->schema.children[c], r->alloc, l->formats[c], l->names[c],
                                    ARROW_FLAG_NULLABLE, 0, error));
    struct sl_type type;
    SL_RETURN_NOT_OK(sl_type_parse(l->formats[c], &type, error));
    col->unit = type.unit;
    col->precision = type.precision;
    col->scale = type.scale;
    col->timezone = type.timezone;
    for (int64_t s = 0; s < r->opts.n_schema; ++s) {
      col->user_type |= strcmp(r->opts.schema[s].name, l->names[c]) == 0;
    }
    switch (type.id) {
      case SL_TYPE_BOOL: col->conv = CV_BOOL; break;
      case SL_TYPE_INT8: col->conv = CV_INT; col->width = 1; break;
      case SL_TYPE_INT16: col->conv = CV_INT; col->width = 2; break;
      case SL_TYPE_INT32: col->conv = CV_INT; col->width = 4; break;
      case SL_TYPE_INT64: col->conv = CV_INT; col->width = 8; break;
      case SL_TYPE_UINT8: col->conv = CV_UINT; col->width = 1; break;
      case SL_TYPE_UINT16: col->conv = CV_UINT; col->width = 2; break;
      case SL_TYPE_UINT32: col->conv = CV_UINT; col->width = 4; break;
      case SL_TYPE_UINT64: col->conv = CV_UINT; col->width = 8; break;
      case SL_TYPE_FLOAT: col->conv = CV_F32; break;
      case SL_TYPE_DOUBLE: col->conv = CV_F64; break;
      case SL_TYPE_STRING: case SL_TYPE_LARGE_STRING: col->conv = CV_UTF8; break;
      case SL_TYPE_BINARY: case SL_TYPE_LARGE_BINARY: col->conv = CV_BINARY; break;
      case SL_TYPE_DATE32: col->conv = CV_DATE32; break;
      case SL_TYPE_TIMESTAMP: col->conv = CV_TIMESTAMP; break;
      case SL_TYPE_TIME32: col->conv = CV_TIME; col->width = 4; break;
      case SL_TYPE_TIME64: col->conv = CV_TIME; col->width = 8; break;
      case SL_TYPE_DECIMAL128: col->conv = CV_DECIMAL; col->width = 16; break;
      case SL_TYPE_DECIMAL256: col->conv = CV_DECIMAL; col->width = 32; break;
      default: {
        char type_name[64];
        sl_format_name(l->formats[c], type_name, sizeof type_name);
        return sl_error_set(error, ENOTSUP, "%s: column '%s': type %s cannot be read from CSV "
                            "(types that can: bool, int8..int64, uint8..uint64, float32, "
                            "float64, string, binary, date32, time32/64, timestamp, "
                            "decimal128/256)", r->name, l->names[c], type_name);
      }
    }
  }
  const uint8_t d = r->layout.dialect.delimiter;
  r->fast_numeric = !r->opts.no_fastpath && r->layout.dialect.escape == 0 &&
                    l->n_cols > 0 && l->n_cols <= 64 &&
                    (d == ',' || d == ';' || d == '\t' || d == '|' || d == ' ');
  r->fused_rows = NULL;
  if (r->layout.dialect.impl == CSV_IMPL_AUTO && sl_csv_fused_avx512_supported())
    r->fused_rows = sl_csv_fused_rows_avx512;
  else if ((r->layout.dialect.impl == CSV_IMPL_AUTO || r->layout.dialect.impl == CSV_IMPL_AVX2) &&
           sl_csv_fused_avx2_supported())
    r->fused_rows = sl_csv_fused_rows_avx2;
  // The fused path reads every number as a value: a null spelling that is a
  // number ("-999", "NaN") must go through the general path.
  for (int64_t k = 0; r->fast_numeric && k < r->opts.nulls.n; ++k) {
    double v;
    if (sl_csv_parse_double(r->opts.nulls.text[k], r->opts.nulls.len[k], &v)) r->fast_numeric = 0;
  }
  return 0;
}

/// Frees the per-split arrays of a plan of `n` splits (any may be NULL).
static void free_plan(struct csv_reader* r, int64_t n) {
  size_t each = (size_t)(n > 0 ? n : 1);
  sl_free(r->alloc, r->plan_start, (size_t)(n + 1) * sizeof *r->plan_start);
  sl_free(r->alloc, r->plan_quotes, each * sizeof *r->plan_quotes);
  sl_free(r->alloc, r->plan_state, each * sizeof *r->plan_state);
  sl_free(r->alloc, r->plan_lines, each * sizeof *r->plan_lines);
  sl_free(r->alloc, r->plan_closed, each * sizeof *r->plan_closed);
  r->plan_start = NULL;
  r->plan_quotes = NULL;
  r->plan_state = NULL;
  r->plan_lines = NULL;
  r->plan_closed = NULL;
  r->n_plan = 0;
}

static void free_columns(struct csv_reader* r) {
  if (r->schema.release != NULL) r->schema.release(&r->schema);
  sl_free(r->alloc, r->cols, (size_t)(r->layout.n_cols > 0 ? r->layout.n_cols : 1) * sizeof *r->cols);
  r->cols = NULL;
}

static void csv_close(void* reader) {
  struct csv_reader* r = reader;
  if (r == NULL) return;
  free_columns(r);
  sl_free(r->alloc, r->widen,
          (size_t)(r->layout.n_cols > 0 ? r->layout.n_cols : 1) * sizeof *r->widen);
  sl_csv_layout_free(&r->layout, r->alloc);
  sl_csv_options_free(&r->opts, r->alloc);
  free_plan(r, r->n_plan);
  sl_source_close(r->inflated);
  if (r->chunk_sync) {
    pthread_cond_destroy(&r->chunk_done);
    pthread_mutex_destroy(&r->chunk_lock);
  }
  if (r->owned != NULL) sl_free_buffer(r->alloc, r->owned, (size_t)r->owned_cap);
  sl_view_release(&r->view);
  sl_free(r->alloc, r, sizeof *r);
}

/// The input (mapped, or read whole into `owned`) becomes an owned copy
/// whose lines end in LF where they ended in a bare CR.
static int read_cr_lines_as_lf(struct csv_reader* r, int64_t start, uint8_t quote,
                               struct sluice_error* error) {
  if (r->owned == NULL) {
    r->owned = sl_alloc_buffer(r->alloc, (size_t)r->size);
    if (r->owned == NULL) {
      return sl_error_set(error, ENOMEM, "%s: out of memory copying %" PRId64 " bytes whose "
                          "lines end in a carriage return", r->name, r->size);
    }
    r->owned_cap = r->size;
    memcpy(r->owned, r->data, (size_t)r->size);
    sl_view_release(&r->view);
    r->data = r->owned;
  }
  sl_csv_cr_to_lf(&r->opts, quote, r->owned, start, r->size);
  return 0;
}

/// Whether `name` says tab-separated: x.tsv, also compressed (x.tsv.gz) and
/// as a URL with a query (http://h/x.tsv?v=1); the plain and compressed
/// copies of one file were read with different delimiters.
static int named_tsv(const char* name) {
  size_t len = sl_location_name_length(name);
  size_t suffix = sl_compression_suffix_length(name);
  return sl_name_ends_with(name, suffix < len ? len - suffix : 0, ".tsv");
}

static int csv_open(const struct sl_reader_args* args, void** out, struct sluice_error* error) {
  *out = NULL;
  struct csv_reader* r = sl_calloc(args->alloc, 1, sizeof *r);
  if (r == NULL) return sl_error_set(error, ENOMEM, "out of memory opening a CSV reader");
  r->alloc = args->alloc;
  r->source = args->source;
  r->name = args->source->name != NULL ? args->source->name : "csv";
  r->batch_size = args->batch_size > 0 ? args->batch_size : 65536;
  int rc = sl_csv_options_parse(args->format_options, r->alloc, &r->opts, error);
  if (rc != 0) {
    sl_error_prefix(error, "%s", r->name);
    csv_close(r);
    return rc;
  }
  if (r->opts.delimiter < 0 && named_tsv(r->name)) r->opts.delimiter = '\t';
  r->opts.schema_partial = args->columns_by_name;
  if (r->opts.max_row_bytes == 0) {  // (twice it, and offsets past it, stay in range)
    int64_t budget = args->memory_budget < INT64_MAX / 4 ? args->memory_budget : INT64_MAX / 4;
    r->opts.max_row_bytes = budget > CSV_MAX_ROW_BYTES ? budget : CSV_MAX_ROW_BYTES;
  }
  if (r->opts.max_columns == 0) r->opts.max_columns = csv_default_max_columns(args->memory_budget);
  // Compressed input (.csv.gz, .csv.zst, .csv.bz2, .csv.xz) is inflated as
  // it is read: from here on the reader sees a forward-only source of plain
  // text.
  rc = sl_source_inflate_if_compressed(&r->source, &r->inflated, r->name, 1, error);
  // A mapped file is viewed whole (split by byte ranges on all cores); other
  // sources (pipes, HTTP, S3) are read forward through a bounded window.
  if (rc != 0) {
    // cleaned up below
  } else if (r->source->ops->read_at != NULL && r->source->size >= 0 && r->source->mapped) {
    r->size = r->source->size;
    if (r->size > 0) rc = sl_source_read_at(r->source, 0, r->size, &r->view, error);
    r->data = r->view.data;
  } else {
    rc = sl_csv_stream_prepare(r, error);
    if (rc == 0 && !r->stream) {
      rc = slurp(r, error);
      r->data = r->owned;
    }
    // A remote object with ranged reads splits by byte range like a local
    // file, each split fetching its own range (csv_ranged.c).
    if (rc == 0 && r->stream && r->source->ops->read_at != NULL && r->source->size >= 0 &&
        r->layout.dialect.escape == 0 && !r->layout.dialect.stray_text) {
      if (pthread_mutex_init(&r->chunk_lock, NULL) != 0) {
        rc = sl_error_set(error, EAGAIN, "%s: cannot create a lock", r->name);
      } else if (pthread_cond_init(&r->chunk_done, NULL) != 0) {
        pthread_mutex_destroy(&r->chunk_lock);
        rc = sl_error_set(error, EAGAIN, "%s: cannot create a condition variable", r->name);
      } else {
        r->chunk_sync = 1;
        r->ranged = 1;
        r->size = r->source->size;
      }
    }
  }
  if (rc == 0 && r->data == NULL && !r->ranged) r->size = 0;
  if (rc == 0 && r->data != NULL) rc = sl_csv_check_encoding(r->data, r->size, r->name, error);
  int64_t start = 0;
  if (r->data != NULL && r->size >= 3 && r->data[0] == 0xEF && r->data[1] == 0xBB &&
      r->data[2] == 0xBF)
    start = 3;
  // Lines ending in a bare CR: read from a copy where they end in LF (see
  // csv_cr_lines.c). sl_csv_stream_prepare leaves such input to be read whole.
  uint8_t cr_quote = 0;
  if (rc == 0 && !r->stream && r->data != NULL &&
      sl_csv_lines_end_in_cr(&r->opts, r->data, start, r->size, &cr_quote)) {
    rc = read_cr_lines_as_lf(r, start, cr_quote, error);
    // The quote was told from the CR lines: after the rewrite a CR inside a
    // quoted field is no line break, and sniffing again could tell another.
    r->opts.quote = cr_quote;
    r->opts.quote_given = 1;
  }
  if (rc == 0 && !r->stream) {
    rc = sl_csv_analyze(&r->opts, r->data, start, r->size, 1, r->name, r->alloc, &r->layout, error);
  }
  if (rc == 0) rc = setup_columns(r, error);
  if (rc != 0) {
    // (a .csv.bz2 block's CRC comes after its bytes)
    rc = sl_source_inflate_failure_first(r->inflated, rc, error);
    csv_close(r);
    return rc;
  }
  *out = r;
  return 0;
}

/// The Arrow format of column type `format` widened by `w` (into buf), or
/// NULL when it is already that wide.
static const char* widened_format(const char* format, enum csv_widening w, char* buf, size_t cap) {
  switch (w) {
    case CSV_WIDEN_ZONE:  // tsu: -> tsu:UTC
      if (strncmp(format, "ts", 2) != 0 || strlen(format) != 4) return NULL;
      snprintf(buf, cap, "%sUTC", format);
      return buf;
    case CSV_WIDEN_NANOS:  // tsu:zone -> tsn:zone, ttu -> ttn
      if (strlen(format) < 3 || format[0] != 't' || format[2] == 'n') return NULL;
      snprintf(buf, cap, "%.2sn%s", format, format + 3);
      return buf;
    case CSV_WIDEN_TIMESTAMP: return strcmp(format, "tdD") == 0 ? "tsu:" : NULL;
    case CSV_WIDEN_BOOL: return strcmp(format, "l") == 0 ? "b" : NULL;
    case CSV_WIDEN_DOUBLE: return strcmp(format, "g") == 0 || strcmp(format, "u") == 0 ? NULL : "g";
    case CSV_WIDEN_STRING: return strcmp(format, "u") == 0 ? NULL : "u";
    default: return NULL;
  }
}

/// Column c's format becomes `to` (columns and schema are rebuilt by the
/// caller). ENOMEM.
static int set_format(struct csv_reader* r, int64_t c, const char* to, struct sluice_error* error) {
  char* copy = sl_strdup(r->alloc, to);
  if (copy == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
  sl_free(r->alloc, r->layout.formats[c], strlen(r->layout.formats[c]) + 1);
  r->layout.formats[c] = copy;
  return 0;
}

static int csv_refine(void* reader, int* changed, struct sluice_error* error) {
  struct csv_reader* r = reader;
  *changed = 0;
  if (!csv_rereadable(r)) return 0;  // a forward-only stream: the error stands
  for (int64_t c = 0; c < r->layout.n_cols; ++c) {
    enum csv_widening w = (enum csv_widening)atomic_exchange(&r->widen[c], CSV_WIDEN_NONE);
    char buf[64];
    const char* to = widened_format(r->layout.formats[c], w, buf, sizeof buf);
    if (to == NULL) continue;
    SL_RETURN_NOT_OK(set_format(r, c, to, error));
    *changed = 1;
  }
  if (!*changed) return 0;
  free_columns(r);
  return setup_columns(r, error);
}

static int csv_type_inferred(void* reader, int64_t column) {
  const struct csv_reader* r = reader;
  // (a forward-only stream is not read again: its types stay)
  return column >= 0 && column < r->layout.n_cols && !r->cols[column].user_type &&
         csv_rereadable(r);
}

static int csv_holds_no_rows(void* reader) {
  return ((const struct csv_reader*)reader)->layout.no_rows;
}

/// Whether object `r` knows nothing of column c's type: it holds no rows,
/// or its sample held only nulls there.
static int says_nothing(const struct csv_reader* r, int64_t c) {
  return r->layout.no_rows || (r->layout.unsampled != NULL && r->layout.unsampled[c]);
}

static int csv_widen_to(void* reader, const void* other_reader, const int64_t* map,
                        int* changed, struct sluice_error* error) {
  struct csv_reader* r = reader;
  const struct csv_reader* other = other_reader;
  *changed = 0;
  // (by position, the dataset reports a difference in the columns)
  if (map == NULL && other->layout.n_cols != r->layout.n_cols) return 0;
  for (int64_t c = 0; c < r->layout.n_cols; ++c) {
    int64_t o = map != NULL ? map[c] : c;
    if (o < 0 || o >= other->layout.n_cols) continue;  // no column of that name there
    if (r->cols[c].user_type || says_nothing(other, o)) continue;
    char buf[32];
    const char* theirs = other->layout.formats[o];
    const char* to = theirs;
    if (says_nothing(r, c)) {
      if (r->layout.unsampled != NULL) r->layout.unsampled[c] = 0;  // typed from now on
    } else {
      to = sl_csv_join_formats(r->layout.formats[c], theirs, buf, sizeof buf);
    }
    if (strcmp(to, r->layout.formats[c]) == 0) continue;
    SL_RETURN_NOT_OK(set_format(r, c, to, error));
    *changed = 1;
  }
  if (!*changed) return 0;
  free_columns(r);
  return setup_columns(r, error);
}

static int csv_schema(void* reader, struct ArrowSchema* out, struct sluice_error* error) {
  struct csv_reader* r = reader;
  return sl_schema_copy(&r->schema, r->alloc, out, error);
}

/* ---- planning ------------------------------------------------------------- */

static int csv_plan_splits(void* reader, struct sl_split** splits, int64_t* n,
                           struct sluice_error* error) {
  struct csv_reader* r = reader;
  *splits = NULL;
  *n = 0;
  free_plan(r, r->n_plan);
  const int one_stream = r->stream && !r->ranged;  // forward-only: one split
  int64_t ds = r->layout.data_start, total = one_stream ? 1 : r->size - ds;
  if (total <= 0 || r->layout.n_cols == 0) return 0;
  int64_t chunk = r->opts.split_size;
  if (chunk <= 0) {
    chunk = total / 8;
    if (chunk < (INT64_C(1) << 20)) chunk = INT64_C(1) << 20;
    if (chunk > (INT64_C(32) << 20)) chunk = INT64_C(32) << 20;
  }
  const int serial = r->layout.dialect.escape != 0 || r->layout.dialect.stray_text || one_stream;
  int64_t count = serial ? 1 : (total + chunk - 1) / chunk;
  if (count == 1) chunk = total;
  r->plan_start = sl_alloc(r->alloc, (size_t)(count + 1) * sizeof *r->plan_start);
  r->plan_quotes = sl_alloc(r->alloc, (size_t)count * sizeof *r->plan_quotes);
  r->plan_state = sl_alloc(r->alloc, (size_t)count * sizeof *r->plan_state);
  r->plan_lines = sl_alloc(r->alloc, (size_t)count * sizeof *r->plan_lines);
  r->plan_closed = sl_alloc(r->alloc, (size_t)count * sizeof *r->plan_closed);
  struct sl_split* out = sl_calloc(r->alloc, (size_t)count, sizeof *out);
  if (r->plan_start == NULL || r->plan_quotes == NULL || r->plan_state == NULL ||
      r->plan_lines == NULL || r->plan_closed == NULL || out == NULL) {
    sl_free(r->alloc, out, (size_t)count * sizeof *out);
    free_plan(r, count);
    return sl_error_set(error, ENOMEM, "%s: out of memory planning splits", r->name);
  }
  r->n_plan = count;
  for (int64_t i = 0; i < count; ++i) {
    int64_t a = ds + i * chunk;
    r->plan_start[i] = a;
    // Ranged splits count every chunk (its line feeds too, for messages).
    atomic_init(&r->plan_quotes[i], r->ranged || r->layout.dialect.quote != 0 ||
                                            r->layout.dialect.comment != 0 ? -1 : 0);
    atomic_init(&r->plan_lines[i], -1);
    atomic_init(&r->plan_closed[i], 0);
    atomic_init(&r->plan_state[i], i == 0 ? CSV_ST_LINE : -1);
    out[i].index = i;
    out[i].offset = a;
    out[i].length = (i + 1 == count ? r->size : a + chunk) - a;
    out[i].est_bytes = out[i].length < r->opts.batch_bytes ? out[i].length : r->opts.batch_bytes;
    out[i].est_rows = -1;
  }
  r->plan_start[count] = one_stream ? INT64_MAX : r->size;
  if (one_stream) out[0].length = out[0].est_bytes = r->opts.batch_bytes;
  *splits = out;
  *n = count;
  return 0;
}

/* ---- decoding ------------------------------------------------------------- */

/// A mapped file read whole, whose parsed pages may leave the resident set
/// (see csv_split_close).
static int mapped_whole(const struct csv_reader* r) {
  return !r->stream && r->size > 0 && r->data == r->view.data;
}

// Scanner state at byte plan_start[i] - 1 (sl_csv_next_row_start's `state`).
// Without comments it is the parity of the quote bytes from data_start (a row
// start, so outside quotes) up to there. With comments a comment line's
// quotes do not count, so each chunk records the state it ends in for each
// state it may start in (sl_csv_comment_transitions), and the maps compose from
// CSV_ST_LINE at data_start. Chunk results are computed on first need and
// shared: the engine opens splits roughly in plan order on several threads,
// so each open scans about one chunk instead of plan_splits scanning the
// whole input serially. Threads racing on a chunk store the same number, so
// relaxed atomics do.
static long long chunk_result(struct csv_reader* r, int64_t j) {
  const struct csv_dialect* d = &r->layout.dialect;
  long long c = atomic_load_explicit(&r->plan_quotes[j], memory_order_relaxed);
  if (c < 0) {
    int64_t from = csv_chunk_from(r, j), to = csv_chunk_to(r, j);
    c = csv_chunk_value(d, r->data + from, to - from);
    atomic_store_explicit(&r->plan_quotes[j], c, memory_order_relaxed);
    // The chunk's split often finished (and dropped these pages) before the
    // next split asked for the count: without this, about a third of a big
    // file stayed resident until the end. A chunk whose split is still to
    // run or running keeps its pages for it (that split drops them).
    if (mapped_whole(r) && atomic_load(&r->plan_closed[j])) {
      sl_source_drop(r->source, from, to - from);
    }
  }
  return c;
}

// The states are recorded as they are found: a split extends the nearest
// known state before it, so opening all n splits (in any order) costs O(n)
// chunk steps, not O(n^2).
static int split_start_state(struct csv_reader* r, int64_t i) {
  int64_t k = i;
  int state = -1;
  while (k > 0 && (state = atomic_load_explicit(&r->plan_state[k], memory_order_relaxed)) < 0) --k;
  if (k == 0) state = CSV_ST_LINE;  // data_start is a row start
  for (; k < i; ++k) {
    state = csv_state_after(&r->layout.dialect, state, chunk_result(r, k));
    atomic_store_explicit(&r->plan_state[k + 1], state, memory_order_relaxed);
  }
  return state;
}

static void csv_split_close(void* state) {
  struct csv_split_state* s = state;
  if (s == NULL) return;
  const struct sluice_allocator* alloc = s->r->alloc;
  if (s->mapped) {
    // Parsed bytes are not read again (values were copied into batches), so
    // the split's pages leave the resident set, as the Parquet reader does
    // per column chunk: a scan keeps RSS near the decoded data even for a
    // file larger than memory. The pages come back from the file if touched
    // again. Flag first: a chunk count (chunk_result) that touches these
    // pages after the drop then sees the flag and drops them itself.
    atomic_store(&s->r->plan_closed[s->index], 1);
    int64_t from = s->r->plan_start[s->index];
    int64_t end = s->pos < s->r->size ? s->pos : s->r->size;
    if (end > from) sl_source_drop(s->r->source, from, end - from);
  }
  if (s->holds_stream) {
    // Done with a compressed object: its inflated bytes go now, not when
    // the reader closes (a dataset closes all its objects at its end).
    if (s->r->inflated != NULL) sl_source_drop(s->r->inflated, 0, -1);
    atomic_store(&s->r->stream_busy, 0);
  }
  sl_builder_release(&s->batch);
  if (s->window != NULL) sl_free_buffer(alloc, s->window, (size_t)s->win_cap);
  sl_view_release(&s->range);
  sl_csv_rows_free(&s->rows);
  sl_free(alloc, s->scratch, (size_t)s->scratch_cap);
  sl_free(alloc, s->cols, (size_t)(s->n_cols > 0 ? s->n_cols : 1) * sizeof *s->cols);
  sl_free(alloc, s->builder_of,
          (size_t)(s->r->layout.n_cols > 0 ? s->r->layout.n_cols : 1) * sizeof *s->builder_of);
  sl_free(alloc, s, sizeof *s);
}

static int csv_split_open(void* reader, const struct sl_split* split, const int64_t* columns,
                          int64_t n_columns, void** state, int* projected,
                          struct sluice_error* error) {
  struct csv_reader* r = reader;
  *state = NULL;
  if (split == NULL || split->index < 0 || split->index >= r->n_plan) {
    return sl_error_set(error, EINVAL, "%s: split %" PRId64 " was not planned", r->name,
                        split != NULL ? split->index : -1);
  }
  int64_t nc = columns != NULL ? n_columns : r->layout.n_cols;
  for (int64_t i = 0; columns != NULL && i < n_columns; ++i) {
    if (columns[i] < 0 || columns[i] >= r->layout.n_cols) {
      return sl_error_set(error, EINVAL, "%s: column index %" PRId64 " out of range (%" PRId64
                          " columns)", r->name, columns[i], r->layout.n_cols);
    }
  }
  struct csv_split_state* s = sl_calloc(r->alloc, 1, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
  s->r = r;
  s->index = split->index;
  sl_csv_rows_init(&s->rows, r->alloc);
  // A row of more fields than max_columns is refused before its fields
  // cost memory (16 bytes each); one of more than n_cols + 1 is bad anyway.
  s->rows.max_row_fields = r->opts.max_columns + 1;
  s->n_cols = nc;
  s->cols = sl_alloc(r->alloc, (size_t)(nc > 0 ? nc : 1) * sizeof *s->cols);
  s->builder_of = sl_alloc(r->alloc, (size_t)(r->layout.n_cols > 0 ? r->layout.n_cols : 1) *
                                         sizeof *s->builder_of);
  if (s->cols == NULL || s->builder_of == NULL) {
    csv_split_close(s);
    return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
  }
  for (int64_t i = 0; i < r->layout.n_cols; ++i) s->builder_of[i] = -1;
  for (int64_t i = 0; i < nc; ++i) {
    s->cols[i] = columns != NULL ? columns[i] : i;
    // The scan gives each column once (sl_format.h); the fused path fills
    // one builder per file column and would leave a repeat empty.
    if (s->builder_of[s->cols[i]] >= 0) {
      csv_split_close(s);
      return sl_error_set(error, EINVAL, "%s: column %" PRId64 " asked for twice", r->name,
                          columns[i]);
    }
    s->builder_of[s->cols[i]] = i;
  }
  struct ArrowSchema proj;
  int rc = sl_schema_project(&r->schema, s->cols, nc, r->alloc, &proj, error);
  if (rc == 0) {
    rc = sl_builder_init_from_schema(&s->batch, &proj, r->alloc, error);
    proj.release(&proj);
  }
  if (rc != 0) {
    csv_split_close(s);
    return rc;
  }
  int64_t i = split->index, a = r->plan_start[i];
  if (r->ranged) {
    rc = sl_csv_ranged_start(s, i, error);
  } else {
    s->stop = i + 1 == r->n_plan ? INT64_MAX : r->plan_start[i + 1];
    // A row starting at or past stop belongs to the next split, so the search
    // ends there: inside one huge quoted field each split looks at its own
    // range only (not on to the field's end), keeping the total work linear.
    s->pos = i == 0 ? a
                    : sl_csv_next_row_start(&r->layout.dialect, r->data, a,
                                         s->stop < r->size ? s->stop : r->size,
                                         split_start_state(r, i));
    s->data = r->data;
    s->limit = r->size;
    s->mapped = mapped_whole(r);
    if (r->stream) {
      s->stop = INT64_MAX;
      rc = sl_csv_stream_start(s, error);
    }
  }
  if (rc != 0) {
    csv_split_close(s);
    return rc;
  }
  // Columns not asked for may have any type: the fused path skips them.
  int numeric = 1;
  for (int64_t c = 0; c < r->layout.n_cols; ++c) {
    if (s->builder_of[c] < 0) continue;
    const struct csv_column* col = &r->cols[c];
    numeric &= col->conv == CV_F64 || (col->conv == CV_INT && (col->width == 8 || col->width == 4));
  }
  s->fast_ok = numeric;
  *projected = 1;
  *state = s;
  return 0;
}

// Rows are tokenized and converted in chunks of CSV_CHUNK_ROWS so that the
// field offsets of a chunk stay in cache while each column is converted;
// chunks accumulate in the builders until the batch is full.
#define CSV_CHUNK_ROWS 4096
/// The CSV bytes a stream's batch holds before it may end with the rows that
/// have arrived (csv_split_next).
#define CSV_STREAM_BATCH_MIN ((int64_t)512 << 10)

/// Out of memory decoding the rows from s->pos on.
static int split_nomem(const struct csv_split_state* s, struct sluice_error* error) {
  int64_t line, at;
  sl_csv_split_where(s, s->pos, &line, &at);
  return sl_error_set(error, ENOMEM, "%s: line %" PRId64 " (byte %" PRId64 "): out of memory "
                      "decoding the rows", s->r->name, line, at);
}

static int decode_chunk(struct csv_split_state* s, int64_t want, int64_t max_bytes,
                        int64_t* got, struct sluice_error* error) {
  struct csv_reader* r = s->r;
  csv_rows_clear(&s->rows);
  *got = 0;
  if (r->fast_numeric && s->fast_ok) {
    int64_t n = sl_csv_fast_numeric(s, want, max_bytes);
    if (n < 0) return split_nomem(s, error);
    if (n > 0) {
      *got = n;
      return 0;
    }
    // A row the fused path cannot take (a null, quotes, odd numbers): the
    // general path takes a few rows, then the fused path tries again.
    if (want > 64) want = 64;
  }
again:
  while (s->rows.n_rows == 0 && s->pos < s->stop && s->pos < s->limit) {
    int64_t err_pos = 0;
    enum csv_tok_status st = sl_csv_tokenize(&r->layout.dialect, s->data, &s->pos, s->limit,
                                          s->stop, want, max_bytes, &s->rows, &err_pos);
    if (st == CSV_TOK_ENOMEM) return split_nomem(s, error);
    if (st == CSV_TOK_TOO_MANY_FIELDS && r->opts.skip_bad_rows) {
      // The rows before it stay; the wide row's fields so far go, and so
      // does the rest of it (found without keeping its fields).
      s->rows.n_fields = s->rows.row_first[s->rows.n_rows];
      int64_t next = sl_csv_row_end(&r->layout.dialect, s->data, err_pos, s->limit);
      if (next < 0 && r->stream && !s->eof) {
        s->pos = err_pos;  // it ends past the window: read on, then refuse it again
        s->need_more = 1;
        break;
      }
      sl_csv_skip_wide_row(s, err_pos);
      s->pos = next < 0 ? s->limit : next;
      continue;
    }
    if (st == CSV_TOK_UNTERMINATED && r->stream && !s->eof) {
      s->pos = err_pos;  // the window ends inside a quoted field: keep the whole rows
      s->need_more = 1;
      break;
    }
    if (st != CSV_TOK_OK) {
      st = sl_csv_tok_explain(&r->layout.dialect, s->data, s->limit, st, &err_pos);
      int64_t line, at;
      sl_csv_split_where(s, err_pos, &line, &at);
      char hint[320];
      return sl_error_set(error, EILSEQ, "%s: line %" PRId64 " (byte %" PRId64 "): %s%s",
                          r->name, line, at, sl_csv_tok_message(st),
                          sl_csv_tok_hint(&r->opts, &r->layout.dialect, st, s->data,
                                          err_pos, hint, sizeof hint));
    }
  }
  if (s->rows.n_rows == 0) return 0;
  if (r->opts.missing_null || r->opts.skip_bad_rows) {
    SL_RETURN_NOT_OK(sl_csv_fix_rows(s, error));
    if (s->rows.n_rows == 0) {  // every row was dropped: read on
      csv_rows_clear(&s->rows);
      goto again;
    }
  } else {
    SL_RETURN_NOT_OK(sl_csv_check_field_counts(s, error));
  }
  for (int64_t j = 0; j < s->n_cols; ++j) {
    int rc = sl_csv_convert_column(s, s->cols[j], sl_builder_child(&s->batch, j), error);
    if (rc != 0) {
      if (error != NULL && error->code == 0) sl_error_set(error, rc, "%s: out of memory", r->name);
      return rc;
    }
  }
  *got = s->rows.n_rows;
  return 0;
}

static int csv_split_next(void* state, struct ArrowArray* out, struct sluice_error* error) {
  struct csv_split_state* s = state;
  struct csv_reader* r = s->r;
  out->release = NULL;
  int64_t total = 0, start = s->pos;
  while (total < r->batch_size && s->pos - start < r->opts.batch_bytes) {
    int64_t want = r->batch_size - total, got = 0;
    if (want > CSV_CHUNK_ROWS) want = CSV_CHUNK_ROWS;
    int rc = decode_chunk(s, want, r->opts.batch_bytes - (s->pos - start), &got, error);
    // A stream's batch of 512 KiB or more ends with its window's rows
    // (pyarrow's streaming reader yields 1 MiB blocks): refilling first
    // could wait on a slow source for bytes the consumer does not need yet
    // (`-n 3` of a server that stalled; the first batch holds the sample's
    // 1 MiB), and batches stay that large while bytes trickle in.
    if (rc == 0 && got == 0 && r->stream && total > 0 && s->pos - start >= CSV_STREAM_BATCH_MIN)
      break;
    if (rc == 0 && got == 0 && r->stream && !s->eof && s->pos < s->stop) {
      int64_t shift = 0;
      rc = sl_csv_stream_fill(s, s->need_more, &shift, error);
      s->need_more = 0;
      start -= shift;
      if (rc == 0) continue;
    }
    if (rc != 0) {
      sl_builder_reset(&s->batch);
      return sl_source_inflate_failure_first(r->inflated, rc, error);
    }
    if (got == 0) break;
    total += got;
  }
  if (total == 0) return 0;
  int rc = sl_builder_struct_finish_rows(&s->batch, total);
  if (rc != 0) {
    sl_builder_reset(&s->batch);
    return sl_error_set(error, rc, "%s: out of memory", r->name);
  }
  return sl_builder_finish(&s->batch, out, error);
}

/// A compressed object sampled to open (its inflated head, the download
/// that brought it) is read from byte 0 by its scan: both go until then.
static void csv_trim(void* reader) {
  struct csv_reader* r = reader;
  if (r->inflated != NULL && r->stream && !atomic_load(&r->stream_read)) {
    sl_source_trim(r->inflated);
  }
}

static const struct sl_format_reader csv_reader_vtable = {
    .name = "csv",
    .extensions = csv_extensions,
    .probe = csv_probe,
    .inflates = 1,
    .open = csv_open,
    .schema = csv_schema,
    .plan_splits = csv_plan_splits,
    .split_open = csv_split_open,
    .split_next = csv_split_next,
    .split_close = csv_split_close,
    .close = csv_close,
    .rows_skipped = sl_csv_rows_skipped,
    .refine = csv_refine,
    .type_inferred = csv_type_inferred,
    .widen_to = csv_widen_to,
    .holds_no_rows = csv_holds_no_rows,
    .trim = csv_trim,
};

const struct sl_format_reader* sl_csv_reader(void) { return &csv_reader_vtable; }
