// The Parquet reader: footer -> schema, one split per row group, the
// projected column chunks decoded (pq_column) and assembled (pq_assemble)
// into one batch per row group (sliced into views when a row group is
// larger than a batch should be, or when its utf8 / binary values pass what
// int32 offsets hold: those columns decode with int64 offsets and each
// batch gets int32 offsets of its own). A row group expected to decode to
// more than slice_bytes (a quarter of the memory budget) is instead read a
// batch at a time, page by page (pq_chunk_cursor). A row group can be
// decoded by column subsets at once (split_by_columns): the scan engine
// zips them back.
#include "parquet_reader.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_value_text.h"
#include "pq_assemble.h"
#include "pq_bloom.h"
#include "pq_dict_prune.h"
#include "pq_column.h"
#include "pq_meta.h"
#include "pq_schema.h"
#include "pq_stats.h"

#define PQ_MAGIC "PAR1"
#define PQ_MAGIC_ENCRYPTED "PARE"
/// Row groups up to this many rows come out as one batch.
#define PQ_ONE_BATCH_ROWS ((int64_t)1 << 20)
/// The least slice_bytes: below it, batches would cost more in overhead
/// than a small budget saves.
#define PQ_MIN_SLICE_BYTES ((int64_t)8 << 20)

struct pq_reader {
  struct sl_source* source;
  const struct sluice_allocator* alloc;
  int64_t batch_size;
  int verify_checksums;
  int dictionary;
  /// No batch's utf8 / binary column holds more value bytes than this
  /// (int32 offsets: INT32_MAX; smaller for tests and tuning).
  int64_t max_binary_batch_bytes;
  /// -O batch_rows=N: every row group cut into batches of N rows (0 = the
  /// default: row groups up to PQ_ONE_BATCH_ROWS rows come out whole).
  int64_t batch_rows;
  /// A row group expected to decode to more than this (all its columns,
  /// from the metadata) comes out in batches of about this many bytes, and
  /// one whose projected columns do is read page by page a batch at a time
  /// rather than decoded whole: a quarter of the memory budget, at least
  /// PQ_MIN_SLICE_BYTES (-O slice_bytes=N sets it, for tests and tuning).
  int64_t slice_bytes;
  /// -O int96_timestamp_unit: INT96 timestamps are read in units of this
  /// many nanoseconds (1, the default, as pyarrow's; 1000 = us, ...).
  int64_t int96_unit_ns;
  struct sl_view footer;  ///< the footer bytes: the metadata's views point here
  struct pq_file_meta meta;
  int has_meta;
  struct pq_schema schema;
  int has_schema;
  struct pq_bloom_cache bloom;  ///< Bloom filters read while planning
  struct pq_codec_ctx* plan_codec;  ///< decompresses dictionaries while planning
  /// The row filter split_may_match was given (it outlives the scans), so
  /// that each split of a remote file can judge its dictionaries.
  const struct sl_row_filter* filter;
};

static int parse_bool_option(const char* v, size_t n, int* out) {
  if ((n == 4 && strncmp(v, "true", 4) == 0) || (n == 1 && v[0] == '1')) *out = 1;
  else if ((n == 5 && strncmp(v, "false", 5) == 0) || (n == 1 && v[0] == '0')) *out = 0;
  else return EINVAL;
  return 0;
}

static int parse_options(struct pq_reader* r, const char* options, struct sluice_error* error) {
  for (const char* o = options; o != NULL && *o != '\0';) {
    const char* end = strchr(o, ',');
    size_t n = end ? (size_t)(end - o) : strlen(o);
    const char* eq = memchr(o, '=', n);
    size_t kn = eq ? (size_t)(eq - o) : n;
    const char* v = eq ? eq + 1 : o + n;
    size_t vn = eq ? n - kn - 1 : 0;
    int* target = NULL;
    if (kn == 22 && strncmp(o, "max_binary_batch_bytes", 22) == 0) {
      if (sl_parse_size(v, vn, 1, INT32_MAX, &r->max_binary_batch_bytes) != 0)
        return sl_error_set(error, EINVAL, "parquet: option max_binary_batch_bytes wants a "
                            "size from 1 to %d bytes (k, m, g suffixes), not '%.*s'",
                            (int)INT32_MAX, (int)vn, v);
      o = end ? end + 1 : NULL;
      continue;
    }
    if (kn == 11 && strncmp(o, "slice_bytes", 11) == 0) {
      if (sl_parse_size(v, vn, 1, INT64_MAX, &r->slice_bytes) != 0)
        return sl_error_set(error, EINVAL, "parquet: option slice_bytes wants a size of at least "
                            "1 byte (k, m, g suffixes), not '%.*s'", (int)vn, v);
      o = end ? end + 1 : NULL;
      continue;
    }
    if (kn == 10 && strncmp(o, "batch_rows", 10) == 0) {
      if (sl_parse_int64(v, vn, 1, INT64_MAX, &r->batch_rows) != 0)
        return sl_error_set(error, EINVAL, "parquet: option batch_rows wants a number of rows "
                            "of at least 1");
      o = end ? end + 1 : NULL;
      continue;
    }
    if (kn == 20 && strncmp(o, "int96_timestamp_unit", 20) == 0) {
      static const char* const units[] = {"s", "ms", "us", "ns"};
      static const int64_t unit_ns[] = {1000000000, 1000000, 1000, 1};
      r->int96_unit_ns = 0;
      for (int u = 0; u < 4; ++u)
        if (vn == strlen(units[u]) && strncmp(v, units[u], vn) == 0) r->int96_unit_ns = unit_ns[u];
      if (r->int96_unit_ns == 0)
        return sl_error_set(error, EINVAL, "parquet: option int96_timestamp_unit wants s, ms, us "
                            "or ns, not '%.*s'", (int)vn, v);
      o = end ? end + 1 : NULL;
      continue;
    }
    if (kn == 16 && strncmp(o, "verify_checksums", 16) == 0) target = &r->verify_checksums;
    else if (kn == 10 && strncmp(o, "dictionary", 10) == 0) target = &r->dictionary;
    if (n > 0) {
      if (target == NULL)
        return sl_error_set(error, EINVAL, "parquet: unknown format option '%.*s' (known: "
                            "verify_checksums, dictionary, max_binary_batch_bytes, batch_rows, "
                            "slice_bytes, int96_timestamp_unit)",
                            (int)n, o);
      if (parse_bool_option(v, vn, target) != 0)
        return sl_error_set(error, EINVAL, "parquet: option '%.*s' wants true or false", (int)kn, o);
    }
    o = end ? end + 1 : NULL;
  }
  return 0;
}

/* ---- open ------------------------------------------------------------------- */

static int probe(const uint8_t* head, int64_t n) {
  // "PARE" (encrypted footer) is Parquet too: open then says it is unsupported.
  return n >= 4 && (memcmp(head, PQ_MAGIC, 4) == 0 || memcmp(head, PQ_MAGIC_ENCRYPTED, 4) == 0) ? 100 : 0;
}

static void reader_close(void* reader) {
  struct pq_reader* r = reader;
  if (r == NULL) return;
  if (r->has_schema) sl_pq_schema_release(&r->schema);
  if (r->has_meta) sl_pq_file_meta_free(&r->meta);
  sl_view_release(&r->footer);
  sl_pq_bloom_cache_release(&r->bloom);
  if (r->plan_codec != NULL) sl_pq_codec_ctx_free(r->plan_codec);
  sl_free(r->alloc, r, sizeof *r);
}

static int read_footer(struct pq_reader* r, struct sluice_error* error) {
  struct sl_source* src = r->source;
  const char* name = src->name;
  if (src->ops->read_at == NULL || src->size < 0)
    return sl_error_set(error, ENOTSUP, "%s: Parquet needs a seekable source (not a pipe)", name);
  if (src->size < 12)
    return sl_error_set(error, EILSEQ, "%s: not a Parquet file (%" PRId64 " bytes, too short)",
                        name, src->size);
  struct sl_view v;
  // The head's magic is checked where reading it is free (a mapped file);
  // remotely it would be a request of its own (objects open by their last
  // 64 KiB: tail_first), and the footer's magic and the pages say enough.
  int head_ok = 1, head_enc = 0;
  if (src->mapped) {
    SL_RETURN_NOT_OK(sl_source_read_at(src, 0, 4, &v, error));
    head_ok = memcmp(v.data, PQ_MAGIC, 4) == 0;
    head_enc = memcmp(v.data, PQ_MAGIC_ENCRYPTED, 4) == 0;
    sl_view_release(&v);
  }
  SL_RETURN_NOT_OK(sl_source_read_at(src, src->size - 8, 8, &v, error));
  uint32_t len;
  memcpy(&len, v.data, 4);
  int tail_ok = memcmp(v.data + 4, PQ_MAGIC, 4) == 0;
  int tail_enc = memcmp(v.data + 4, PQ_MAGIC_ENCRYPTED, 4) == 0;
  sl_view_release(&v);
  if (tail_enc || head_enc)
    return sl_error_set(error, ENOTSUP, "%s: encrypted Parquet is not supported", name);
  if (!head_ok || !tail_ok)
    return sl_error_set(error, EILSEQ, "%s: not a Parquet file (no PAR1 magic at the %s)", name,
                        head_ok ? "end" : "start");
  if ((int64_t)len > src->size - 12)
    return sl_error_set(error, EILSEQ, "%s: footer length %" PRIu32 " exceeds the file (%" PRId64
                        " bytes)", name, len, src->size);
  int64_t at = src->size - 8 - (int64_t)len;
  SL_RETURN_NOT_OK(sl_source_read_at(src, at, len, &r->footer, error));
  // Fetched bytes are usually a view into a cached 64 KiB edge of the
  // object: the metadata's own copy lets the source drop that edge
  // (sl_source_trim) while the reader stays open for the scan.
  if (!src->mapped) SL_RETURN_NOT_OK(sl_view_detach(&r->footer, r->alloc, error));
  int rc = sl_pq_file_meta_parse(r->footer.data, r->footer.size, r->alloc, &r->meta, error);
  if (rc != 0) return sl_error_prefix(error, "%s: footer at byte %" PRId64, name, at);
  r->has_meta = 1;
  if (r->meta.encrypted)
    return sl_error_set(error, ENOTSUP, "%s: encrypted Parquet is not supported", name);
  return 0;
}

static int check_row_groups(struct pq_reader* r, struct sluice_error* error) {
  for (int64_t i = 0; i < r->meta.n_row_groups; ++i) {
    const struct pq_row_group* g = &r->meta.row_groups[i];
    if (g->n_columns != r->schema.n_leaves)
      return sl_error_set(error, EILSEQ, "%s: row group %" PRId64 " has %" PRId64 " column chunks, "
                          "the schema %" PRId64 " leaves", r->source->name, i, g->n_columns,
                          r->schema.n_leaves);
    if (g->num_rows < 0)
      return sl_error_set(error, EILSEQ, "%s: row group %" PRId64 ": negative row count",
                          r->source->name, i);
    for (int64_t c = 0; c < g->n_columns; ++c) {
      const struct pq_column_chunk* cc = &g->columns[c];
      if (cc->encrypted)
        return sl_error_set(error, ENOTSUP, "%s: encrypted Parquet is not supported (row group %"
                            PRId64 ", column %s)", r->source->name, i, r->schema.leaves[c]->path);
      if (cc->file_path.present && cc->file_path.size > 0)
        return sl_error_set(error, ENOTSUP, "%s: row group %" PRId64 ", column %s: column chunks "
                            "in other files ('%.*s') are not supported", r->source->name, i,
                            r->schema.leaves[c]->path,
                            (int)(cc->file_path.size > 200 ? 200 : cc->file_path.size),
                            (const char*)cc->file_path.data);
    }
  }
  return 0;
}

/// Whether leaf `l` lies inside a fixed_size_list of the tree under `f`.
static int in_fixed_size_list(const struct pq_field* f, int64_t l) {
  while (f->kind != PQ_FIELD_LEAF) {
    if (f->fixed_size > 0) return 1;
    const struct pq_field* next = NULL;
    for (int64_t i = 0; i < f->n_children && next == NULL; ++i) {
      const struct pq_field* c = &f->children[i];
      if (l >= c->first_leaf && l < c->first_leaf + c->n_leaves) next = c;
    }
    if (next == NULL) return 0;
    f = next;
  }
  return 0;
}

/// dictionary=true: string columns come out as dictionary<int32, utf8>,
/// however a chunk was encoded (a chunk of plain values is dictionary-encoded
/// as it is read, as pyarrow's read_dictionary does), so that the type does
/// not depend on the writer: a dataset of files from several has one. Not
/// inside a fixed_size_list, whose null lists get filler values (an index
/// would need a dictionary entry that an all-null batch lacks), so that the
/// type does not depend on the data either.
static int use_dictionaries(struct pq_reader* r, struct sluice_error* error) {
  int changed = 0;
  for (int64_t l = 0; l < r->schema.n_leaves; ++l) {
    struct pq_field* f = r->schema.leaves[l];
    if (f->conv != PQ_CONV_BINARY || !f->is_string || f->large || f->dict) continue;
    // An extension type's storage is its own (arrow.json takes a string,
    // never a dictionary): pyarrow's read_dictionary leaves them alone too.
    int32_t len;
    if (f->extension != NULL || sl_metadata_find(f->metadata, "ARROW:extension:name", &len) != NULL)
      continue;
    if (in_fixed_size_list(&r->schema.root, l)) continue;
    f->dict = 1;
    strcpy(f->dict_index_format, "i");
    changed = 1;
  }
  return changed ? sl_pq_schema_rebuild_arrow(&r->schema, error) : 0;
}

/// -O int96_timestamp_unit: INT96 columns as timestamps of that unit.
static int set_int96_unit(struct pq_reader* r, struct sluice_error* error) {
  int changed = 0;
  for (int64_t l = 0; l < r->schema.n_leaves; ++l) {
    struct pq_field* f = r->schema.leaves[l];
    if (f->conv != PQ_CONV_INT96) continue;
    int64_t u = r->int96_unit_ns;
    f->int96_unit_ns = u;
    snprintf(f->format, sizeof f->format, "ts%c:",
             u == 1 ? 'n' : u == 1000 ? 'u' : u == 1000000 ? 'm' : 's');
    changed = 1;
  }
  return changed ? sl_pq_schema_rebuild_arrow(&r->schema, error) : 0;
}

/// The footer's key/value metadata (but ARROW:schema, which became the
/// types) as the Arrow schema's metadata, as pyarrow shows it.
static int set_file_metadata(struct pq_reader* r, struct sluice_error* error) {
  int64_t n = 0, bytes = 4;
  for (int64_t i = 0; i < r->meta.n_key_value_metadata; ++i) {
    const struct pq_key_value* kv = &r->meta.key_value_metadata[i];
    if (kv->key.size == 12 && memcmp(kv->key.data, "ARROW:schema", 12) == 0) continue;
    if (kv->key.size > INT32_MAX || kv->value.size > INT32_MAX) continue;
    ++n;
    bytes += 8 + kv->key.size + kv->value.size;
  }
  if (n == 0 || n > INT32_MAX || bytes > ((int64_t)256 << 20)) return 0;
  char* blob = sl_alloc(r->alloc, (size_t)bytes);
  if (blob == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
  int32_t v = (int32_t)n;
  memcpy(blob, &v, 4);
  int64_t at = 4;
  for (int64_t i = 0; i < r->meta.n_key_value_metadata; ++i) {
    const struct pq_key_value* kv = &r->meta.key_value_metadata[i];
    if (kv->key.size == 12 && memcmp(kv->key.data, "ARROW:schema", 12) == 0) continue;
    if (kv->key.size > INT32_MAX || kv->value.size > INT32_MAX) continue;
    const struct pq_bytes* parts[2] = {&kv->key, &kv->value};
    for (int k = 0; k < 2; ++k) {
      v = (int32_t)parts[k]->size;
      memcpy(blob + at, &v, 4);
      if (v > 0) memcpy(blob + at + 4, parts[k]->data, (size_t)v);
      at += 4 + v;
    }
  }
  int rc = sl_schema_set_metadata(&r->schema.arrow, blob, error);
  sl_free(r->alloc, blob, (size_t)bytes);
  return rc;
}

static int reader_open(const struct sl_reader_args* args, void** reader, struct sluice_error* error) {
  *reader = NULL;
  struct pq_reader* r = sl_calloc(args->alloc, 1, sizeof *r);
  if (r == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", args->source->name);
  r->source = args->source;
  r->alloc = args->alloc;
  r->batch_size = args->batch_size;
  r->verify_checksums = 1;
  r->max_binary_batch_bytes = INT32_MAX;
  r->int96_unit_ns = 1;
  r->slice_bytes = args->memory_budget / 4 > PQ_MIN_SLICE_BYTES ? args->memory_budget / 4
                                                                  : PQ_MIN_SLICE_BYTES;
  int rc = parse_options(r, args->format_options, error);
  if (rc != 0) sl_error_prefix(error, "%s", r->source->name);
  if (rc == 0) rc = read_footer(r, error);
  if (rc == 0) {
    rc = sl_pq_schema_build(&r->meta, r->alloc, r->source->name, &r->schema, error);
    r->has_schema = rc == 0;
  }
  if (rc == 0) rc = sl_pq_schema_apply_arrow(&r->schema, &r->meta, r->source->name, error);
  if (rc == 0) rc = check_row_groups(r, error);
  if (rc == 0 && r->dictionary) rc = use_dictionaries(r, error);
  if (rc == 0 && r->int96_unit_ns != 1) rc = set_int96_unit(r, error);
  if (rc == 0) rc = set_file_metadata(r, error);
  if (rc != 0) {
    reader_close(r);
    return rc;
  }
  *reader = r;
  return 0;
}

static int reader_schema(void* reader, struct ArrowSchema* out, struct sluice_error* error) {
  struct pq_reader* r = reader;
  return sl_schema_copy(&r->schema.arrow, r->alloc, out, error);
}

static int64_t binary_cut_rows(const struct pq_reader* r, int64_t rg);
static int64_t rows_per_batch(const struct pq_reader* r, int64_t rg, int64_t cut_rows);

static int reader_plan(void* reader, struct sl_split** splits, int64_t* n,
                       struct sluice_error* error) {
  struct pq_reader* r = reader;
  *splits = NULL;
  *n = 0;
  if (r->meta.n_row_groups == 0) return 0;
  struct sl_split* s = sl_calloc(r->alloc, (size_t)r->meta.n_row_groups, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
  for (int64_t i = 0; i < r->meta.n_row_groups; ++i) {
    const struct pq_row_group* g = &r->meta.row_groups[i];
    int64_t bytes = 0;
    for (int64_t c = 0; c < g->n_columns; ++c)
      if (g->columns[c].has_meta_data && g->columns[c].meta_data.total_uncompressed_size > 0)
        bytes += g->columns[c].meta_data.total_uncompressed_size;
    // Per batch, as split_next cuts the row group (-O batch_rows included).
    int64_t per = rows_per_batch(r, i, binary_cut_rows(r, i));
    int64_t batches = per > 0 && g->num_rows > per ? (g->num_rows - 1) / per + 1 : 1;
    s[i] = (struct sl_split){.index = i, .offset = i, .length = 1, .est_bytes = bytes / batches,
                             .est_rows = g->num_rows};
  }
  *splits = s;
  *n = r->meta.n_row_groups;
  return 0;
}

/* ---- splits ----------------------------------------------------------------- */

struct pq_split {
  struct pq_reader* r;
  int64_t rg;
  int64_t* columns;  ///< top-level field indexes
  int64_t n_columns;
  struct pq_column_reader cr;
  int has_cr;
  struct pq_leaf_data* leaves;  ///< one per leaf of the file
  /// Per leaf of the file: decoded (NULL = every leaf of the columns): of a
  /// column the scan keeps only struct fields of, the leaves under those.
  uint8_t* need;
  int decoded;
  /// A decoded row group larger than one batch, handed out in slices.
  struct sl_ref* shared_ref;
  const struct ArrowArray* shared;
  /// Decoded bytes of `shared` (what the budget counts while it is held).
  int64_t shared_bytes;
  int64_t next_row, rows, batch_rows;
  /// Rows per batch so that no batch's binary column should pass
  /// max_binary_batch_bytes (0 = no cut needed), from the metadata alone.
  int64_t cut_rows;
  const struct sl_split_place* place;  ///< the caller's columns, or NULL
  /// Read a batch at a time (reads_in_slices): a cursor per leaf of the
  /// file (those of the projected columns open), opened at the first batch.
  int sliced;
  struct pq_chunk_cursor* cursors;
};

/// Where top-level field `c` (file numbering) of the split's row group may
/// decode in place: its values' spot in the caller's column, or NULL. Only
/// flat fixed-width columns stored as their Arrow bytes (PQ_CONV_COPY), of
/// the width the caller expects, in a row group of the planned rows.
static uint8_t* placed_values(const struct pq_split* s, const struct pq_field* f, int64_t c,
                              int64_t rows) {
  const struct sl_split_place* p = s->place;
  if (p == NULL || p->base[c] == NULL || rows != p->rows || f->kind != PQ_FIELD_LEAF ||
      f->conv != PQ_CONV_COPY || f->dict || f->rep != 0 || f->out_width != p->width[c]) {
    return NULL;
  }
  return p->base[c] + (p->first_row * p->width[c]);
}

/// Whether top-level field `f` is a utf8 / binary leaf whose batches are
/// cut from one decoded row group.
static int binary_leaf(const struct pq_field* f) {
  return f->kind == PQ_FIELD_LEAF && f->conv == PQ_CONV_BINARY && !f->dict;
}

/// Whether top-level field `f` was decoded with int64 offsets but is utf8 /
/// binary: each batch gets int32 offsets of its own (narrow_binary).
static int needs_narrowing(const struct pq_split* s, const struct pq_field* f) {
  return binary_leaf(f) && !f->large && s->leaves[f->first_leaf].wide;
}

/// Rows per batch for row group `rg` so that each batch's binary values stay
/// under the limit, or 0 when the whole row group fits. Derived from the
/// chunks' total_uncompressed_size of every BYTE_ARRAY leaf (projected or
/// not), so that every column part of a split cuts at the same rows (the
/// split_by_columns promise). PLAIN / DELTA_LENGTH values take no more bytes
/// decoded than encoded; a margin of 2 absorbs uneven rows. Dictionary and
/// DELTA_BYTE_ARRAY pages can expand beyond it: split_next then fails
/// clearly rather than overflow.
static int64_t binary_cut_rows(const struct pq_reader* r, int64_t rg) {
  const struct pq_row_group* g = &r->meta.row_groups[rg];
  int64_t bound = 0;
  for (int64_t l = 0; l < r->schema.n_leaves && l < g->n_columns; ++l) {
    const struct pq_field* f = r->schema.leaves[l];
    const struct pq_column_chunk* cc = &g->columns[l];
    if (f->conv != PQ_CONV_BINARY || !cc->has_meta_data) continue;
    int64_t size = cc->meta_data.total_uncompressed_size;
    if (size > bound) bound = size;
  }
  int64_t budget = r->max_binary_batch_bytes / 2;
  if (bound <= budget || g->num_rows <= 1) return 0;
  double rows = (double)g->num_rows * ((double)budget / (double)bound);
  return rows < 1 ? 1 : (int64_t)rows;
}

/// The decoded bytes leaves [first, first + n) of row group `rg` are
/// expected to take, from the metadata: a value's Arrow width (or its
/// uncompressed page bytes, if more), offsets for binary values, validity,
/// and a repeated leaf's levels (held until its batch is assembled).
static int64_t leaves_decoded_estimate(const struct pq_reader* r, int64_t rg, int64_t first,
                                       int64_t n) {
  const struct pq_row_group* g = &r->meta.row_groups[rg];
  int64_t bytes = 0;
  for (int64_t l = first; l < first + n && l < g->n_columns; ++l) {
    const struct pq_column_chunk* cc = &g->columns[l];
    if (!cc->has_meta_data) continue;
    int64_t size = cc->meta_data.total_uncompressed_size, values = cc->meta_data.num_values;
    if (values < 0 || values > (INT64_C(1) << 40) || size < 0) continue;
    int64_t width = r->schema.leaves[l]->out_width;
    int64_t v = values * (width > 0 ? width : 0) + values / 8;
    if (r->schema.leaves[l]->conv == PQ_CONV_BINARY) v += values * 8 + size;
    if (r->schema.leaves[l]->rep > 0) v += values * 4;
    int64_t e = v > size ? v : size;
    if (bytes <= INT64_MAX - e) bytes += e;
  }
  return bytes;
}

/// Rows per batch of row group `rg` (its rows when it comes out whole): as
/// asked (-O batch_rows, or the open options' batch size: Python's
/// batch_rows=), else whole row groups up to a bound, and cut into equal
/// batches of at most slice_bytes when the whole row group is expected to
/// decode to more; never more than `cut_rows` (binary_cut_rows). From the
/// metadata and options alone, never the columns decoded or their values
/// (split_by_columns).
static int64_t rows_per_batch(const struct pq_reader* r, int64_t rg, int64_t cut_rows) {
  int64_t rows = r->meta.row_groups[rg].num_rows;
  int64_t asked = r->batch_rows > 0 ? r->batch_rows : r->batch_size;
  int64_t n = asked > 0 ? asked : PQ_ONE_BATCH_ROWS;
  if (asked == 0 && rows > 1) {
    int64_t bytes = leaves_decoded_estimate(r, rg, 0, r->schema.n_leaves);
    if (bytes > r->slice_bytes) {
      int64_t batches = (bytes - 1) / r->slice_bytes + 1;
      int64_t per = batches >= rows ? 1 : (rows - 1) / batches + 1;
      if (per < n) n = per;
      if (per < rows && cut_rows == 0) cut_rows = n;  // not one batch
    }
  }
  if (cut_rows > 0 && cut_rows < n) n = cut_rows;
  if (cut_rows == 0 && (rows <= n || (asked == 0 && rows <= PQ_ONE_BATCH_ROWS))) n = rows;  // one batch
  return n;
}

/// The decoded bytes the projected columns of the split's row group are
/// expected to take (leaves_decoded_estimate), of the leaves it decodes.
static int64_t row_group_decoded_estimate(const struct pq_split* s) {
  const struct pq_reader* r = s->r;
  int64_t bytes = 0;
  for (int64_t i = 0; i < s->n_columns; ++i) {
    const struct pq_field* f = &r->schema.root.children[s->columns[i]];
    for (int64_t l = f->first_leaf; l < f->first_leaf + f->n_leaves; ++l) {
      if (s->need != NULL && !s->need[l]) continue;
      int64_t e = leaves_decoded_estimate(r, s->rg, l, 1);
      if (bytes <= INT64_MAX - e) bytes += e;
    }
  }
  return bytes;
}

/// Whether the split reads its row group a batch at a time (cursors) rather
/// than decoding it whole: more than one batch, and its projected columns
/// (lists and maps too: their batches end where a repetition level is 0)
/// expected to pass slice_bytes. Placed scans decode these into their own
/// memory, then copied.
static int reads_in_slices(const struct pq_split* s) {
  return s->batch_rows < s->rows && row_group_decoded_estimate(s) > s->r->slice_bytes;
}

static void split_close(void* state) {
  struct pq_split* s = state;
  if (s == NULL) return;
  const struct sluice_allocator* alloc = s->r->alloc;
  if (s->cursors) {
    for (int64_t i = 0; i < s->r->schema.n_leaves; ++i) sl_pq_cursor_release(&s->cursors[i]);
    sl_free(alloc, s->cursors, (size_t)s->r->schema.n_leaves * sizeof *s->cursors);
  }
  if (s->has_cr) sl_pq_column_reader_release(&s->cr);
  if (s->leaves) {
    for (int64_t i = 0; i < s->r->schema.n_leaves; ++i) sl_pq_leaf_data_reset(&s->leaves[i]);
    sl_free(alloc, s->leaves, (size_t)s->r->schema.n_leaves * sizeof *s->leaves);
  }
  if (s->columns) sl_free(alloc, s->columns, (size_t)s->n_columns * sizeof *s->columns);
  if (s->need) sl_free(alloc, s->need, (size_t)s->r->schema.n_leaves);
  sl_ref_release(s->shared_ref);
  sl_free(alloc, s, sizeof *s);
}

/// The struct field `path` ({depth, child index per level}) names under
/// `f`, or NULL if it names none.
static const struct pq_field* field_at(const struct pq_field* f, const int64_t* path) {
  for (int64_t d = 1; f != NULL && d <= path[0]; ++d) {
    int64_t i = path[d];
    f = f->kind == PQ_FIELD_STRUCT && i >= 0 && i < f->n_children ? &f->children[i] : NULL;
  }
  return f;
}

static void mark_leaves(uint8_t* need, const struct pq_field* f) {
  memset(need + f->first_leaf, 1, (size_t)f->n_leaves);
}

/// s->need from the fields the scan keeps (NULL = none): the columns it
/// keeps some struct fields of decode only the leaves under those, so that
/// `columns=["st.x"]` reads st.x's column chunks alone, as pyarrow does.
static int set_needed_leaves(struct pq_split* s, const struct sl_split_fields* fields) {
  const struct pq_reader* r = s->r;
  if (fields == NULL || fields->n == 0 || r->schema.n_leaves == 0) return 0;
  s->need = sl_calloc(r->alloc, (size_t)r->schema.n_leaves, 1);
  if (s->need == NULL) return ENOMEM;
  for (int64_t i = 0; i < s->n_columns; ++i) {
    const struct pq_field* f = &r->schema.root.children[s->columns[i]];
    int some = 0, whole = 0;
    for (int64_t k = 0; k < fields->n && !whole; ++k) {
      if (fields->column[k] != s->columns[i]) continue;
      const struct pq_field* at = field_at(f, fields->path[k]);
      whole = at == NULL;
      if (at != NULL) mark_leaves(s->need, at);
      some = 1;
    }
    // A column kept whole, or whose fields hold no leaf (an empty struct).
    if (!some || whole || !sl_pq_needs_field(s->need, f)) mark_leaves(s->need, f);
  }
  return 0;
}

static int leaf_needed(const struct pq_split* s, int64_t l) {
  return s->need == NULL || s->need[l];
}

static int split_open(void* reader, const struct sl_split* split, const int64_t* columns,
                      int64_t n_columns, void** state, int* projected, struct sluice_error* error) {
  struct pq_reader* r = reader;
  const char* name = r->source->name;
  *state = NULL;
  *projected = 1;
  int64_t n_fields = r->schema.root.n_children;
  if (split->index < 0 || split->index >= r->meta.n_row_groups)
    return sl_error_set(error, EINVAL, "%s: no row group %" PRId64, name, split->index);
  if (columns == NULL) n_columns = n_fields;
  for (int64_t i = 0; columns && i < n_columns; ++i)
    if (columns[i] < 0 || columns[i] >= n_fields)
      return sl_error_set(error, EINVAL, "%s: column index %" PRId64 " out of range (%" PRId64
                          " columns)", name, columns[i], n_fields);
  struct pq_split* s = sl_calloc(r->alloc, 1, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  s->r = r;
  s->rg = split->index;
  s->place = split->place;
  s->n_columns = n_columns;
  s->cut_rows = binary_cut_rows(r, s->rg);
  s->rows = r->meta.row_groups[s->rg].num_rows;
  s->batch_rows = rows_per_batch(r, s->rg, s->cut_rows);
  int rc = 0;
  if (n_columns > 0) {
    s->columns = sl_alloc(r->alloc, (size_t)n_columns * sizeof *s->columns);
    if (s->columns == NULL) rc = ENOMEM;
    for (int64_t i = 0; rc == 0 && i < n_columns; ++i) s->columns[i] = columns ? columns[i] : i;
  }
  if (rc == 0) rc = set_needed_leaves(s, split->fields);
  if (rc == 0 && r->schema.n_leaves > 0) {
    s->leaves = sl_alloc(r->alloc, (size_t)r->schema.n_leaves * sizeof *s->leaves);
    if (s->leaves == NULL) rc = ENOMEM;
    for (int64_t i = 0; rc == 0 && i < r->schema.n_leaves; ++i) sl_pq_leaf_data_init(&s->leaves[i], r->alloc);
  }
  s->sliced = rc == 0 && reads_in_slices(s);
  if (s->sliced) {  // (zeroed: not open)
    s->cursors = sl_calloc(r->alloc, (size_t)r->schema.n_leaves, sizeof *s->cursors);
    if (s->cursors == NULL) rc = ENOMEM;
  }
  if (rc != 0) {
    split_close(s);
    return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  }
  rc = sl_pq_column_reader_init(&s->cr, r->alloc, r->source, &r->meta, r->verify_checksums, error);
  if (rc != 0) {
    split_close(s);
    return rc;
  }
  s->has_cr = 1;
  *state = s;
  return 0;
}

/// Projected chunks of a row group are fetched in one read when they lie
/// together (gaps of at most an eighth of their bytes, or 64 KiB) and come
/// to at most this much: over HTTP and S3 a GET per chunk cost a round trip
/// and the server's per-request work each (64 objects of 5 chunks: 449
/// requests, now 193).
#define PQ_SPAN_MAX ((int64_t)64 << 20)
#define PQ_SPAN_GAP ((int64_t)64 << 10)

/// For a source whose reads fetch (not a mapped file): the projected chunks
/// of the split's row group as one span of the column reader, when they lie
/// together. A chunk whose range is bad is left to sl_pq_column_read to report.
static int coalesce_chunks(struct pq_split* s, struct sluice_error* error) {
  struct pq_reader* r = s->r;
  if (r->source->mapped) return 0;
  const struct pq_field* root = &r->schema.root;
  const struct pq_row_group* g = &r->meta.row_groups[s->rg];
  int64_t lo = INT64_MAX, hi = 0, bytes = 0, n = 0;
  for (int64_t i = 0; i < s->n_columns; ++i) {
    const struct pq_field* f = &root->children[s->columns[i]];
    for (int64_t l = f->first_leaf; l < f->first_leaf + f->n_leaves; ++l) {
      int64_t start, len;
      if (!leaf_needed(s, l)) continue;
      if (l >= g->n_columns || sl_pq_chunk_range(&g->columns[l].meta_data, r->source->size, &start,
                                              &len) != 0) {
        return 0;
      }
      if (start < lo) lo = start;
      if (start + len > hi) hi = start + len;
      bytes += len;
      ++n;
    }
  }
  int64_t gaps = hi - lo - bytes, slack = bytes / 8 > PQ_SPAN_GAP ? bytes / 8 : PQ_SPAN_GAP;
  if (n < 2 || hi - lo > PQ_SPAN_MAX || gaps > slack) return 0;
  return sl_pq_column_reader_span(&s->cr, lo, hi - lo, error);
}

/// Decodes the projected columns of the row group into one struct array.
static int decode_row_group(struct pq_split* s, struct ArrowArray* out, struct sluice_error* error) {
  struct pq_reader* r = s->r;
  const struct pq_field* root = &r->schema.root;
  int64_t rows = r->meta.row_groups[s->rg].num_rows;
  SL_RETURN_NOT_OK(coalesce_chunks(s, error));
  int rc = sl_array_init(out, r->alloc, 1, s->n_columns, error);
  if (rc != 0) {
    sl_pq_column_reader_span(&s->cr, 0, 0, NULL);
    return rc;
  }
  out->length = rows;
  for (int64_t i = 0; rc == 0 && i < s->n_columns; ++i) {
    const struct pq_field* f = &root->children[s->columns[i]];
    if (binary_leaf(f)) {
      // Large types and cut row groups decode into int64 offsets from the
      // start; others switch to them should the values pass the limit (a
      // dictionary that expands beyond what the chunk sizes said).
      s->leaves[f->first_leaf].wide = f->large || s->cut_rows > 0;
      s->leaves[f->first_leaf].widen_above = r->max_binary_batch_bytes;
    }
    // Binary values beyond what the metadata said (dictionary values
    // repeated) end the decoding of the whole row group: when it has more
    // than one batch, split_next reads it a batch at a time instead.
    for (int64_t l = f->first_leaf; l < f->first_leaf + f->n_leaves; ++l)
      s->leaves[l].give_up_above = s->batch_rows < rows ? r->slice_bytes : 0;
    struct pq_leaf_data* first = &s->leaves[f->first_leaf];
    first->place = placed_values(s, f, s->columns[i], rows);
    first->place_owner = first->place != NULL ? s->place->owner : NULL;
    for (int64_t l = f->first_leaf; rc == 0 && l < f->first_leaf + f->n_leaves; ++l)
      if (leaf_needed(s, l))
        rc = sl_pq_column_read(&s->cr, s->rg, r->schema.leaves[l], &s->leaves[l], error);
    first->place = NULL;
    first->place_owner = NULL;
    if (rc == 0)
      rc = sl_pq_assemble_field(f, s->leaves, s->need, rows, r->alloc, r->source->name, s->rg,
                                0, out->children[i], error);
    for (int64_t l = f->first_leaf; l < f->first_leaf + f->n_leaves; ++l)
      sl_pq_leaf_data_reset(&s->leaves[l]);
  }
  sl_pq_column_reader_span(&s->cr, 0, 0, NULL);
  // The chunks are decoded into owned buffers: their file pages can go.
  for (int64_t i = 0; rc == 0 && i < s->n_columns; ++i) {
    const struct pq_field* f = &root->children[s->columns[i]];
    for (int64_t l = f->first_leaf; l < f->first_leaf + f->n_leaves; ++l) {
      if (!leaf_needed(s, l)) continue;
      const struct pq_column_meta* m = &r->meta.row_groups[s->rg].columns[l].meta_data;
      int64_t start, len;
      if (sl_pq_chunk_range(m, r->source->size, &start, &len) == 0 && m->total_compressed_size > 0)
        sl_source_drop(r->source, start, m->total_compressed_size);
    }
  }
  if (rc != 0) out->release(out);
  return rc;
}

/// The next batch of a split read in slices: each projected leaf's cursor
/// gives the batch's rows (the cursors open at the first batch, their
/// chunks fetched as decode_row_group does), assembled as a row group is.
static int decode_slice(struct pq_split* s, struct ArrowArray* out, struct sluice_error* error) {
  struct pq_reader* r = s->r;
  const struct pq_field* root = &r->schema.root;
  int64_t k = s->rows - s->next_row < s->batch_rows ? s->rows - s->next_row : s->batch_rows;
  int rc = 0;
  if (s->next_row == 0) {
    rc = coalesce_chunks(s, error);
    for (int64_t i = 0; rc == 0 && i < s->n_columns; ++i) {
      const struct pq_field* f = &root->children[s->columns[i]];
      for (int64_t l = f->first_leaf; rc == 0 && l < f->first_leaf + f->n_leaves; ++l) {
        if (!leaf_needed(s, l)) continue;
        int64_t above = binary_leaf(f) && !f->large ? r->max_binary_batch_bytes : 0;
        rc = sl_pq_cursor_open(&s->cr, s->rg, r->schema.leaves[l], binary_leaf(f) && f->large,
                               above, &s->cursors[l], error);
      }
    }
    sl_pq_column_reader_span(&s->cr, 0, 0, NULL);  // the cursors' views keep its bytes
    if (rc != 0) return rc;
  }
  SL_RETURN_NOT_OK(sl_array_init(out, r->alloc, 1, s->n_columns, error));
  out->length = k;
  for (int64_t i = 0; rc == 0 && i < s->n_columns; ++i) {
    const struct pq_field* f = &root->children[s->columns[i]];
    for (int64_t l = f->first_leaf; rc == 0 && l < f->first_leaf + f->n_leaves; ++l) {
      if (!leaf_needed(s, l)) continue;
      struct pq_leaf_data* d = &s->leaves[l];
      d->wide = s->cursors[l].wide;
      d->widen_above = s->cursors[l].widen_above;
      rc = sl_pq_cursor_next(&s->cr, &s->cursors[l], k, d, error);
      if (rc == 0 && d->wide && !s->cursors[l].wide)
        rc = sl_error_set(error, EOVERFLOW, "%s: row group %" PRId64 ", column %s: rows %" PRId64
                          "..%" PRId64 " hold more than %" PRId64 " bytes of values, more than a "
                          "batch may (the column chunk sizes suggested fewer, e.g. dictionary "
                          "values repeated): read with a smaller batch size (-O batch_rows=N; "
                          "Python: batch_rows=N)", r->source->name, s->rg, f->path, s->next_row,
                          s->next_row + k - 1, r->max_binary_batch_bytes);
    }
    if (rc == 0)
      rc = sl_pq_assemble_field(f, s->leaves, s->need, k, r->alloc, r->source->name, s->rg,
                                s->next_row, out->children[i], error);
    for (int64_t l = f->first_leaf; l < f->first_leaf + f->n_leaves; ++l)
      sl_pq_leaf_data_reset(&s->leaves[l]);
  }
  if (rc != 0) {
    out->release(out);
    return rc;
  }
  s->next_row += k;
  return 0;
}

/// Rows [row0, row0 + k) of a wide (int64 offsets) utf8 / binary column of
/// the decoded row group as a utf8 / binary array: fresh int32 offsets and
/// validity, the value bytes a view of the row group's.
static int narrow_binary(struct pq_split* s, const struct pq_field* f, const struct ArrowArray* src,
                         int64_t row0, int64_t k, struct ArrowArray* out,
                         struct sluice_error* error) {
  struct pq_reader* r = s->r;
  int64_t first = src->offset + row0;
  const int64_t* o64 = (const int64_t*)src->buffers[1] + first;
  int64_t base = o64[0], bytes = o64[k] - base;
  if (bytes > r->max_binary_batch_bytes)
    return sl_error_set(error, EOVERFLOW, "%s: row group %" PRId64 ", column %s: rows %" PRId64
                        "..%" PRId64 " hold %" PRId64 " bytes of values, more than a batch may "
                        "(%" PRId64 "; the column chunk sizes suggested fewer, e.g. dictionary "
                        "values repeated): read with a smaller batch size (-O batch_rows=N; Python: batch_rows=N)",
                        r->source->name, s->rg, f->path, row0, row0 + k - 1, bytes,
                        r->max_binary_batch_bytes);
  struct sl_buffer offs, bits;
  sl_buffer_init(&offs, r->alloc);
  sl_buffer_init(&bits, r->alloc);
  const uint8_t* src_bits = src->null_count != 0 ? src->buffers[0] : NULL;
  int rc = sl_buffer_reserve(&offs, (k + 1) * 4);
  if (rc == 0 && src_bits) rc = sl_buffer_reserve(&bits, (k + 7) / 8 + 1);
  if (rc != 0) {
    sl_buffer_reset(&offs);
    sl_buffer_reset(&bits);
    return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
  }
  int32_t* o32 = (int32_t*)(void*)offs.data;
  for (int64_t i = 0; i <= k; ++i) o32[i] = (int32_t)(o64[i] - base);  // <= bytes <= INT32_MAX
  offs.size = (k + 1) * 4;
  int64_t nulls = 0;
  if (src_bits) {
    memset(bits.data, 0, (size_t)bits.capacity);
    for (int64_t i = 0; i < k; ++i) {
      int64_t b = first + i;
      if ((src_bits[b >> 3] >> (b & 7)) & 1) bits.data[i >> 3] |= (uint8_t)(1u << (i & 7));
      else ++nulls;
    }
    bits.size = (k + 7) / 8;
  }
  rc = sl_array_init(out, r->alloc, 3, 0, error);
  if (rc != 0) {
    sl_buffer_reset(&offs);
    sl_buffer_reset(&bits);
    return rc;
  }
  int64_t cap;
  out->length = k;
  out->null_count = nulls;
  if (src_bits) {
    uint8_t* d = sl_buffer_detach(&bits, &cap);
    sl_array_set_buffer_owned(out, 0, d, cap);
  }
  uint8_t* d = sl_buffer_detach(&offs, &cap);
  sl_array_set_buffer_owned(out, 1, d, cap);
  sl_array_set_buffer_view(out, 2, (const uint8_t*)src->buffers[2] + base, s->shared_ref);
  return 0;
}

static int dictionary_may_match(void* judge, const struct sl_filter_condition* c) {
  return sl_pq_condition_dictionary_may_match(judge, c);
}

/// Whether a row of the split's row group may pass the filter by the
/// dictionaries of a remote file (a mapped one's were judged while
/// planning): 1 or 0, or -1 with *error when a read failed. A dictionary
/// page is fetched (a request, and its bytes twice if the row group is read
/// after all) only when it is under a quarter of the row group's chunks,
/// which a 0 saves: not for a column that is mostly dictionary. By the
/// whole row group, not the columns this split reads, so that the parts of
/// a split decoded by columns judge alike and agree on having no rows.
static int remote_dictionaries_may_match(struct pq_split* s, struct sluice_error* error) {
  struct pq_reader* r = s->r;
  if (r->filter == NULL || r->source->mapped) return 1;
  const struct pq_row_group* g = &r->meta.row_groups[s->rg];
  int64_t bytes = 0;
  for (int64_t l = 0; l < g->n_columns; ++l)
    if (g->columns[l].has_meta_data && g->columns[l].meta_data.total_compressed_size > 0 &&
        g->columns[l].meta_data.total_compressed_size < INT64_MAX - bytes)
      bytes += g->columns[l].meta_data.total_compressed_size;
  struct pq_row_group_judge judge = {&r->meta, &r->schema, s->rg, r->source,
                                     NULL, r->alloc, &s->cr.codec, r->verify_checksums, 1,
                                     bytes / 4, 0, error};
  int may = sl_row_filter_may_pass(r->filter, dictionary_may_match, &judge);
  return judge.failed ? -1 : may;
}

static int split_next(void* state, struct ArrowArray* out, struct sluice_error* error) {
  struct pq_split* s = state;
  struct pq_reader* r = s->r;
  out->release = NULL;
  if (!s->decoded) {
    s->decoded = 1;
    if (s->rows == 0) return 0;
    int may = remote_dictionaries_may_match(s, error);
    if (may < 0) return error->code != 0 ? error->code : EIO;
    if (may == 0) {
      s->next_row = s->rows;
      return 0;
    }
    if (s->sliced) return decode_slice(s, out, error);
    struct ArrowArray whole;
    int rc = decode_row_group(s, &whole, error);
    if (rc == EFBIG && s->batch_rows < s->rows) {  // its values pass slice_bytes: read in slices
      for (int64_t l = 0; l < r->schema.n_leaves; ++l) s->leaves[l].give_up_above = 0;
      s->cursors = sl_calloc(r->alloc, (size_t)r->schema.n_leaves, sizeof *s->cursors);
      if (s->cursors == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
      s->sliced = 1;
      return decode_slice(s, out, error);
    }
    if (rc != 0) return rc;
    // The batch boundaries (split_open: rows_per_batch) depend on the
    // metadata and the options only (split_by_columns).
    int narrow = 0;
    for (int64_t i = 0; i < s->n_columns; ++i)
      narrow |= needs_narrowing(s, &r->schema.root.children[s->columns[i]]);
    if (!narrow && s->batch_rows >= s->rows) {
      s->next_row = s->rows;
      sl_array_move(&whole, out);
      return 0;
    }
    int64_t bytes = 0;
    for (int64_t i = 0; i < s->n_columns; ++i) {
      int64_t b = sl_array_byte_size(r->schema.arrow.children[s->columns[i]], whole.children[i]);
      if (b > 0) bytes += b;
    }
    s->shared_ref = sl_array_share(&whole, r->alloc, &s->shared);
    if (s->shared_ref == NULL) {
      whole.release(&whole);
      return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
    }
    s->shared_bytes = bytes;
  }
  if (s->sliced) return s->next_row < s->rows ? decode_slice(s, out, error) : 0;
  if (s->next_row >= s->rows || s->shared == NULL) return 0;
  int64_t k = s->rows - s->next_row < s->batch_rows ? s->rows - s->next_row : s->batch_rows;
  SL_RETURN_NOT_OK(sl_array_view(s->shared, s->shared_ref, r->alloc, out, error));
  out->length = k;
  out->offset = 0;
  for (int64_t i = 0; i < out->n_children; ++i) {
    struct ArrowArray* c = out->children[i];
    const struct pq_field* f = &r->schema.root.children[s->columns[i]];
    if (needs_narrowing(s, f)) {
      c->release(c);
      int rc = narrow_binary(s, f, s->shared->children[i], s->next_row, k, c, error);
      if (rc != 0) {
        out->release(out);
        return rc;
      }
      continue;
    }
    c->offset += s->next_row;
    c->length = k;
    c->null_count = c->null_count == 0 ? 0 : -1;
  }
  s->next_row += k;
  if (s->next_row >= s->rows) {
    // The last slice: the row group lives on in the slices alone, not in a
    // split that may wait a while before it is asked for its end.
    sl_ref_release(s->shared_ref);
    s->shared_ref = NULL;
    s->shared = NULL;
  }
  return 0;
}

/// What the scan counts in the budget for a split that slices a decoded row
/// group: the bytes of its rows not handed out yet, and before decoding one
/// that will be sliced, the whole row group (estimated). A split read in
/// slices decodes a batch (estimated) at each split_next, next to its
/// chunks' dictionaries and the rows of the pages its last batch ended in:
/// those count with the batch, not as held, since held bytes exempt a split
/// from waiting for room (its batches would pass the budget unseen) and
/// splits that wait while holding them could each wait on the others'.
static void split_held_bytes(void* state, int64_t* held, int64_t* next) {
  const struct pq_split* s = state;
  *held = 0;
  *next = 0;
  if (s->sliced) {
    if (s->next_row >= s->rows || s->rows <= 0) return;
    double share = (double)s->batch_rows / (double)s->rows;
    *next = (int64_t)((double)row_group_decoded_estimate(s) * (share < 1 ? share : 1)) + 1;
    for (int64_t l = 0; s->cursors && l < s->r->schema.n_leaves; ++l)
      *next += sl_pq_cursor_held(&s->cursors[l]);
    return;
  }
  if (!s->decoded) {
    if (s->rows > 0 && s->batch_rows < s->rows) *next = row_group_decoded_estimate(s);
    return;
  }
  if (s->shared == NULL || s->next_row >= s->rows || s->rows <= 0) return;
  double left = (double)(s->rows - s->next_row) / (double)s->rows;
  *held = (int64_t)((double)s->shared_bytes * left);
  if (*held <= 0) *held = 1;  // still held: its batches need no room
}

/* ---- stored statistics -------------------------------------------------------- */

static int reader_stored_stats(void* reader, const int64_t* columns, int64_t n_columns,
                               int64_t* row_count, struct sl_stored_column_stats* stats,
                               struct ArrowArray* min_max, struct sluice_error* error) {
  struct pq_reader* r = reader;
  return sl_pq_stored_stats(&r->meta, &r->schema, r->alloc, r->source->name, columns, n_columns,
                         row_count, stats, min_max, error);
}

/// A condition judged by the row group's chunk statistics, then the Bloom
/// filters, then (in mapped files) the dictionaries: cheapest first.
static int condition_may_match(void* judge, const struct sl_filter_condition* c) {
  struct pq_row_group_judge* j = judge;
  return sl_pq_condition_stats_may_match(j, c) && sl_pq_condition_bloom_may_match(j, c) &&
         sl_pq_condition_dictionary_may_match(j, c);
}

/// A split is one row group (reader_plan).
static int reader_split_may_match(void* reader, const struct sl_split* split,
                                  const struct sl_row_filter* filter) {
  struct pq_reader* r = reader;
  if (split == NULL || split->index < 0 || split->index >= r->meta.n_row_groups) return 1;
  r->filter = filter;  // for the dictionaries of a remote file, judged by each split
  struct pq_row_group_judge judge = {&r->meta, &r->schema, split->index, r->source,
                                     &r->bloom, r->alloc, &r->plan_codec,
                                     r->verify_checksums, 0, 0, 0, NULL};
  return sl_row_filter_may_pass(filter, condition_may_match, &judge);
}

/// What the engine balances column parts by: the column's chunks'
/// uncompressed bytes in every row group, plus 8 bytes a value, since every
/// value costs its levels and a slot in the output however few bits encode
/// it (dictionary indices of strings).
static int64_t reader_column_bytes(void* reader, int64_t column) {
  struct pq_reader* r = reader;
  if (column < 0 || column >= r->schema.root.n_children) return 0;
  const struct pq_field* f = &r->schema.root.children[column];
  int64_t bytes = 0;
  for (int64_t g = 0; g < r->meta.n_row_groups; ++g) {
    const struct pq_row_group* rg = &r->meta.row_groups[g];
    for (int64_t l = f->first_leaf; l < f->first_leaf + f->n_leaves && l < rg->n_columns; ++l) {
      const struct pq_column_chunk* cc = &rg->columns[l];
      if (!cc->has_meta_data) continue;
      int64_t size = cc->meta_data.total_uncompressed_size, values = cc->meta_data.num_values;
      if (size > 0 && bytes <= INT64_MAX - size) bytes += size;
      if (values > 0 && values <= INT64_MAX / 8 && bytes <= INT64_MAX - values * 8)
        bytes += values * 8;
    }
  }
  return bytes;
}

static const char* const k_extensions[] = {".parquet", ".pq", NULL};

static const struct sl_format_reader k_parquet_reader = {
    .name = "parquet",
    .extensions = k_extensions,
    .probe = probe,
    .open = reader_open,
    .schema = reader_schema,
    .plan_splits = reader_plan,
    .split_open = split_open,
    .split_next = split_next,
    .split_close = split_close,
    .split_held_bytes = split_held_bytes,
    .close = reader_close,
    .stored_stats = reader_stored_stats,
    .split_may_match = reader_split_may_match,
    // Batches are slices of the decoded row group at fixed row counts
    // (split_next), whatever the columns: parts of a row group line up.
    .split_by_columns = 1,
    .tail_first = 1,
    .prunes_fields = 1,
    .column_bytes = reader_column_bytes,
};

const struct sl_format_reader* sl_parquet_reader(void) { return &k_parquet_reader; }
