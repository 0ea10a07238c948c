// The two sl_format_reader tables for Arrow IPC. The file reader reads the
// footer and every dictionary at open, after which its state is read-only,
// so splits (one per record batch) decode concurrently. The stream reader
// reads forward, applying dictionary batches as they come.
#include "ipc_reader.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_options.h"
#include "ipc_fbs.h"
#include "ipc_internal.h"

/* ---- Shared helpers ------------------------------------------------------ */

/// Makes sure a failure names the object: errors from the core (e.g. an
/// allocation failing in a builder) do not know it.
static int named(int rc, const char* name, struct sluice_error* error) {
  if (rc != 0 && error != NULL && strncmp(error->message, name, strlen(name)) != 0)
    sl_error_prefix(error, "%s", name);
  return rc;
}

/// Turns `view` (bytes [skip, skip + size) of it) into a body whose owner we
/// hold one reference on. Views without an owner may be recycled by the
/// source, so their bytes are copied.
static int own_body(const struct sl_view* view, int64_t skip, int64_t size,
                    const struct sluice_allocator* alloc, const struct ipc_where* where,
                    struct ipc_body* body, struct sluice_error* error) {
  if (view->owner != NULL) {
    body->data = view->data + skip;
    body->size = size;
    body->owner = sl_ref_retain(view->owner);
    return 0;
  }
  size_t n = size > 0 ? (size_t)size : 1;
  void* copy = sl_alloc_buffer(alloc, n);
  if (copy == NULL)
    return sl_error_set(error, ENOMEM, "%s: offset %" PRId64 ": out of memory (%" PRId64 " bytes)",
                        where->name, where->offset, size);
  if (size > 0) memcpy(copy, view->data + skip, (size_t)size);
  struct sl_ref* ref = sl_ref_wrap_buffer(alloc, copy, n);
  if (ref == NULL) {
    sl_free_buffer(alloc, copy, n);
    return sl_error_set(error, ENOMEM, "%s: out of memory", where->name);
  }
  body->data = copy;
  body->size = size;
  body->owner = ref;
  return 0;
}

static int64_t* copy_columns(const struct sluice_allocator* alloc, const int64_t* columns,
                             int64_t n) {
  int64_t* c = sl_alloc(alloc, (size_t)(n > 0 ? n : 1) * sizeof *c);
  if (c != NULL && n > 0) memcpy(c, columns, (size_t)n * sizeof *c);
  return c;
}

/// Checks a projection (NULL = every column): indexes in range, and no
/// column the decoder cannot read (a run-end encoded or list-view field),
/// which only a projection that leaves it out reads past, or the struct
/// fields the scan keeps (`fields`) when it lies outside them.
static int check_columns(const struct ipc_schema* s, const char* name, const int64_t* columns,
                         int64_t n, const struct sl_split_fields* fields,
                         struct sluice_error* error) {
  if (columns == NULL) n = s->root.n_children;
  for (int64_t i = 0; i < n; ++i) {
    int64_t col = columns != NULL ? columns[i] : i;
    if (col < 0 || col >= s->root.n_children)
      return sl_error_set(error, EINVAL, "%s: column index %" PRId64 " out of range (%" PRId64
                          " columns)", name, col, s->root.n_children);
    if (s->root.children[col].unsupported &&
        sl_ipc_unsupported_error(s, col, fields, name, error) != 0)
      return ENOTSUP;
  }
  return 0;
}

/* ---- File format --------------------------------------------------------- */

struct ipc_block {
  int64_t offset;
  int32_t meta_len;
  int64_t body_len;
};

struct ipc_file {
  struct sl_source* source;
  const struct sluice_allocator* alloc;
  struct ipc_schema schema;
  struct ipc_dict_memo memo;
  int64_t n_batches;
  struct ipc_block* batches;
};

static void file_close(void* reader) {
  struct ipc_file* f = reader;
  if (f == NULL) return;
  sl_ipc_dict_memo_reset(&f->memo, f->alloc);
  sl_ipc_schema_reset(&f->schema);
  if (f->batches)
    sl_free(f->alloc, f->batches, (size_t)(f->n_batches ? f->n_batches : 1) * sizeof *f->batches);
  sl_free(f->alloc, f, sizeof *f);
}

/// Reads the blocks of a [Block] vector, checking each against the file.
static int read_blocks(struct ipc_file* f, const struct fb_vec* v, int64_t limit,
                       const struct ipc_where* where, struct ipc_block* out,
                       struct sluice_error* error) {
  for (uint32_t i = 0; i < v->count; ++i) {
    const uint8_t* e = sl_fb_vec_elem(v, i);
    struct ipc_block b = {fb_load_i64(e + IPC_BLOCK_OFFSET_AT),
                          fb_load_i32(e + IPC_BLOCK_META_DATA_LENGTH_AT),
                          fb_load_i64(e + IPC_BLOCK_BODY_LENGTH_AT)};
    if (b.offset < IPC_FILE_HEADER_LEN || b.meta_len < 8 || b.body_len < 0 || b.offset > limit ||
        b.meta_len > limit - b.offset || b.body_len > limit - b.offset - b.meta_len)
      return sl_error_set(error, EILSEQ,
                          "%s: offset %" PRId64 ": footer block %u (offset %" PRId64
                          ", metadata %d, body %" PRId64 ") lies outside the data (%" PRId64 " bytes)",
                          f->source->name, where->offset, i, b.offset, (int)b.meta_len,
                          b.body_len, limit);
    out[i] = b;
  }
  return 0;
}

/// Reads `length` bytes of a block (its metadata, or all of it) into `view`
/// and parses its message, checked against the block's sizes. On error
/// the view is released.
static int read_block_message(struct ipc_file* f, const struct ipc_block* b, int64_t length,
                              struct sl_view* view, struct ipc_message* msg,
                              struct sluice_error* error) {
  struct ipc_where where = {f->source->name, b->offset};
  int64_t prefix, mlen;
  view->owner = NULL;
  SL_RETURN_NOT_OK(sl_source_read_at(f->source, b->offset, length, view, error));
  int rc = view->size < length
               ? sl_error_set(error, EIO, "%s: offset %" PRId64 ": short read", where.name, where.offset)
               : sl_ipc_frame_prefix(view->data, b->meta_len, &prefix, &mlen, &where, error);
  if (rc == 0 && mlen > b->meta_len - prefix)
    rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": message metadata (%" PRId64
                      " bytes) overruns its block (%d bytes)", where.name, where.offset, mlen,
                      (int)b->meta_len);
  if (rc == 0) rc = sl_ipc_message_parse(view->data + prefix, (size_t)mlen, &where, msg, error);
  if (rc == 0 && msg->body_length > b->body_len)
    rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": message body (%" PRId64
                      " bytes) exceeds its block (%" PRId64 " bytes)", where.name, where.offset,
                      msg->body_length, b->body_len);
  if (rc != 0) sl_view_release(view);
  return rc;
}

/// Reads one block into `view` and parses its message; `body` gets the body
/// (with a reference the caller releases).
static int read_block(struct ipc_file* f, const struct ipc_block* b, struct sl_view* view,
                      struct ipc_message* msg, struct ipc_body* body, struct sluice_error* error) {
  struct ipc_where where = {f->source->name, b->offset};
  body->owner = NULL;
  SL_RETURN_NOT_OK(read_block_message(f, b, b->meta_len + b->body_len, view, msg, error));
  int rc = own_body(view, b->meta_len, msg->body_length, f->alloc, &where, body, error);
  if (rc != 0) sl_view_release(view);
  return rc;
}

/// Gap between two projected spans of a body below which one request fetches
/// both: a request costs more than that many bytes on most links.
#define IPC_SPAN_GAP ((int64_t)1 << 20)

static int compare_spans(const void* a, const void* b) {
  const struct ipc_span *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/// read_block for a projected scan of a source whose read_at fetches (HTTP,
/// S3): the block's metadata first, then only the body bytes of the columns
/// asked for (nearby ones in one request), copied to their places in a body
/// buffer whose other pages are never touched. A message that is not a
/// record batch is read whole (the caller reports it).
static int read_block_projected(struct ipc_file* f, const struct ipc_block* b,
                                const int64_t* columns, int64_t n_columns, struct sl_view* view,
                                struct ipc_message* msg, struct ipc_body* body,
                                struct sluice_error* error) {
  struct ipc_where where = {f->source->name, b->offset};
  body->owner = NULL;
  SL_RETURN_NOT_OK(read_block_message(f, b, b->meta_len, view, msg, error));
  if (msg->header_type != IPC_MESSAGE_RECORD_BATCH) {
    sl_view_release(view);
    return read_block(f, b, view, msg, body, error);
  }
  int64_t n = 0;
  struct ipc_span* spans =
      sl_alloc(f->alloc, (size_t)(n_columns > 0 ? n_columns : 1) * sizeof *spans);
  int rc = spans == NULL ? sl_error_set(error, ENOMEM, "%s: out of memory", where.name) : 0;
  if (rc == 0) rc = sl_ipc_record_batch_spans(&f->schema, msg, columns, n_columns, &where, spans, &n, error);
  int64_t merged = 0;
  if (rc == 0 && n > 0) {
    qsort(spans, (size_t)n, sizeof *spans, compare_spans);
    for (int64_t i = 1; i < n; ++i) {
      if (spans[i].start - spans[merged].end <= IPC_SPAN_GAP) {
        if (spans[i].end > spans[merged].end) spans[merged].end = spans[i].end;
      } else {
        spans[++merged] = spans[i];
      }
    }
    ++merged;
  }
  size_t cap = msg->body_length > 0 ? (size_t)msg->body_length : 1;
  uint8_t* data = rc == 0 ? sl_alloc_buffer(f->alloc, cap) : NULL;
  if (rc == 0 && data == NULL)
    rc = sl_error_set(error, ENOMEM, "%s: offset %" PRId64 ": out of memory (%" PRId64 " bytes)",
                      where.name, where.offset, msg->body_length);
  int64_t body_at = b->offset + b->meta_len;
  for (int64_t i = 0; rc == 0 && i < merged; ++i) {
    struct sl_view part = {0};
    int64_t len = spans[i].end - spans[i].start;
    rc = sl_source_read_at(f->source, body_at + spans[i].start, len, &part, error);
    if (rc == 0 && part.size < len)
      rc = sl_error_set(error, EIO, "%s: offset %" PRId64 ": short read", where.name,
                        body_at + spans[i].start);
    if (rc == 0) memcpy(data + spans[i].start, part.data, (size_t)len);
    sl_view_release(&part);
  }
  if (spans != NULL) sl_free(f->alloc, spans, (size_t)(n_columns > 0 ? n_columns : 1) * sizeof *spans);
  if (rc == 0) {
    body->owner = sl_ref_wrap_buffer(f->alloc, data, cap);
    if (body->owner == NULL) rc = sl_error_set(error, ENOMEM, "%s: out of memory", where.name);
  }
  if (rc != 0) {
    if (data != NULL && body->owner == NULL) sl_free_buffer(f->alloc, data, cap);
    sl_view_release(view);
    return rc;
  }
  body->data = data;
  body->size = msg->body_length;
  return 0;
}

/// The IPC readers take no format options: one given is a mistake (a typo,
/// another format's option), said rather than ignored.
static int no_options(const struct sl_reader_args* args, struct sluice_error* error) {
  const char* cursor = args->format_options;
  struct sl_option o;
  if (cursor == NULL || sl_option_next(&cursor, &o) == 0) return 0;
  return sl_error_set(error, EINVAL, "%s: unknown format option '%.*s' (the Arrow IPC reader "
                      "takes none)", args->source->name, (int)o.key_len, o.key);
}

static int stream_probe(const uint8_t* head, int64_t n);

/// What the first bytes of an object that is not an IPC file say it is.
static const char* not_a_file_hint(const uint8_t* head, int64_t size) {
  if (size >= 4 && memcmp(head, "FEA1", 4) == 0)
    return ": this is a Feather V1 file (FEA1 magic), which sluice does not read (Feather V2 is "
           "the Arrow IPC file format: rewrite it with pyarrow.feather.write_feather)";
  // (also a stream in the framing before Arrow 0.15, a bare length first)
  if ((size >= 4 && fb_load_u32(head) == IPC_CONTINUATION_MARKER) || stream_probe(head, size) > 0)
    return ": it starts as an Arrow IPC stream does: read it as the stream format (-f arrows, "
           "format='arrows')";
  return "";
}

static int file_open(const struct sl_reader_args* args, void** reader, struct sluice_error* error) {
  SL_RETURN_NOT_OK(no_options(args, error));
  struct sl_source* src = args->source;
  const struct sluice_allocator* alloc = args->alloc;
  struct ipc_where where = {src->name, 0};
  *reader = NULL;
  if (src->size < 0)
    return sl_error_set(error, ENOTSUP, "%s: the Arrow IPC file format needs random access; "
                        "read a pipe as the stream format (arrows)", src->name);
  if (src->size < IPC_FILE_HEADER_LEN + 4 + IPC_FILE_MAGIC_LEN)
    return sl_error_set(error, EILSEQ, "%s: offset 0: %" PRId64 " bytes is too short for an Arrow IPC file",
                        src->name, src->size);
  struct ipc_file* f = sl_calloc(alloc, 1, sizeof *f);
  if (f == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", src->name);
  f->source = src;
  f->alloc = alloc;
  f->schema.alloc = alloc;
  struct sl_view head = {0}, tail = {0}, footer = {0};
  int rc = sl_source_read_at(src, 0, IPC_FILE_HEADER_LEN, &head, error);
  if (rc == 0 && (head.size < IPC_FILE_MAGIC_LEN || memcmp(head.data, IPC_FILE_MAGIC, IPC_FILE_MAGIC_LEN) != 0)) {
    // A stream's whole first message says more than its first bytes.
    struct sl_view more = {0};
    struct sluice_error ignored;
    int64_t n = src->size < ((int64_t)64 << 10) ? src->size : (int64_t)64 << 10;
    int seen = sl_source_read_at(src, 0, n, &more, &ignored) == 0;
    rc = sl_error_set(error, EILSEQ, "%s: offset 0: not an Arrow IPC file (no ARROW1 magic)%s",
                      src->name, seen ? not_a_file_hint(more.data, more.size)
                                      : not_a_file_hint(head.data, head.size));
    sl_view_release(&more);
  }
  int64_t tail_at = src->size - 4 - IPC_FILE_MAGIC_LEN;
  if (rc == 0) rc = sl_source_read_at(src, tail_at, 4 + IPC_FILE_MAGIC_LEN, &tail, error);
  if (rc == 0 && (tail.size < 4 + IPC_FILE_MAGIC_LEN ||
                  memcmp(tail.data + 4, IPC_FILE_MAGIC, IPC_FILE_MAGIC_LEN) != 0))
    rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": Arrow IPC file does not end with "
                      "ARROW1 (truncated?)", src->name, tail_at + 4);
  int64_t footer_len = rc == 0 ? fb_load_i32(tail.data) : 0;
  int64_t footer_at = tail_at - footer_len;
  if (rc == 0 && (footer_len <= 0 || footer_at < IPC_FILE_HEADER_LEN))
    rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": bad footer length %" PRId64,
                      src->name, tail_at, footer_len);
  if (rc == 0) rc = sl_source_read_at(src, footer_at, footer_len, &footer, error);
  if (rc == 0 && footer.size < footer_len)
    rc = sl_error_set(error, EIO, "%s: offset %" PRId64 ": short read", src->name, footer_at);
  struct fb_buf fb;
  struct fb_table ft, st;
  struct fb_vec dicts = {0}, batches = {0};
  int16_t version = 0;
  where.offset = footer_at;
  if (rc == 0) {
    sl_fb_buf_init(&fb, footer.data, (size_t)footer_len);
    int has_schema;
    if (sl_fb_root(&fb, &ft) != 0 || sl_fb_read_i16(&ft, IPC_FOOTER_VERSION, 0, &version) < 0 ||
        (has_schema = sl_fb_read_table(&ft, IPC_FOOTER_SCHEMA, &st)) < 0 ||
        sl_fb_read_vec(&ft, IPC_FOOTER_DICTIONARIES, IPC_BLOCK_STRUCT_SIZE, &dicts) < 0 ||
        sl_fb_read_vec(&ft, IPC_FOOTER_RECORD_BATCHES, IPC_BLOCK_STRUCT_SIZE, &batches) < 0)
      rc = sl_ipc_fb_error(&fb, &where, "Footer", error);
    else if (has_schema == 0)
      rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": footer has no schema", src->name, footer_at);
  }
  if (rc == 0) rc = sl_ipc_schema_parse(&st, version, 0, alloc, &where, &f->schema, error);
  if (rc == 0) rc = sl_ipc_dict_memo_init(&f->memo, &f->schema, error);
  struct ipc_block* dict_blocks = NULL;
  if (rc == 0) {
    f->n_batches = batches.count;
    f->batches = sl_alloc(alloc, (size_t)(batches.count ? batches.count : 1) * sizeof *f->batches);
    dict_blocks = sl_alloc(alloc, (size_t)(dicts.count + 1) * sizeof *dict_blocks);
    if (f->batches == NULL || dict_blocks == NULL) {
      rc = sl_error_set(error, ENOMEM, "%s: out of memory", src->name);
    } else {
      rc = read_blocks(f, &batches, footer_at, &where, f->batches, error);
      if (rc == 0) rc = read_blocks(f, &dicts, footer_at, &where, dict_blocks, error);
    }
  }
  for (uint32_t i = 0; rc == 0 && i < dicts.count; ++i) {
    struct sl_view view;
    struct ipc_message msg;
    struct ipc_body body;
    struct ipc_where w = {src->name, dict_blocks[i].offset};
    rc = read_block(f, &dict_blocks[i], &view, &msg, &body, error);
    if (rc != 0) break;
    if (msg.header_type != IPC_MESSAGE_DICTIONARY_BATCH)
      rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": dictionary block holds message "
                        "type %d, not a DictionaryBatch", src->name, w.offset, msg.header_type);
    else
      rc = sl_ipc_dict_apply(&f->schema, &f->memo, &msg, &body, i, &w, error);
    sl_ref_release(body.owner);
    sl_view_release(&view);
  }
  if (dict_blocks) sl_free(alloc, dict_blocks, (size_t)(dicts.count + 1) * sizeof *dict_blocks);
  sl_view_release(&head);
  sl_view_release(&tail);
  sl_view_release(&footer);
  if (rc != 0) {
    file_close(f);
    return named(rc, src->name, error);
  }
  *reader = f;
  return 0;
}

static int file_schema(void* reader, struct ArrowSchema* out, struct sluice_error* error) {
  struct ipc_file* f = reader;
  return named(sl_schema_copy(&f->schema.schema, f->alloc, out, error), f->source->name, error);
}

static int file_plan(void* reader, struct sl_split** splits, int64_t* n,
                     struct sluice_error* error) {
  struct ipc_file* f = reader;
  *splits = NULL;
  *n = 0;
  if (f->n_batches == 0) return 0;
  struct sl_split* s = sl_calloc(f->alloc, (size_t)f->n_batches, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", f->source->name);
  for (int64_t i = 0; i < f->n_batches; ++i) {
    s[i].index = i;
    s[i].offset = f->batches[i].offset;
    s[i].length = f->batches[i].meta_len + f->batches[i].body_len;
    s[i].est_bytes = f->batches[i].body_len;
    s[i].est_rows = -1;
  }
  *splits = s;
  *n = f->n_batches;
  return 0;
}

/// The row count and field nodes of batch `i`, from its metadata alone (the
/// body is not read). `view` holds the bytes and `msg` the flatbuffer that
/// `nodes` points into (both the caller's: `nodes` is read after this
/// returns); the caller releases the view.
static int block_nodes(struct ipc_file* f, int64_t i, struct sl_view* view,
                       struct ipc_message* msg, int64_t* rows, struct fb_vec* nodes,
                       struct sluice_error* error) {
  const struct ipc_block* b = &f->batches[i];
  struct ipc_where where = {f->source->name, b->offset};
  SL_RETURN_NOT_OK(read_block_message(f, b, b->meta_len, view, msg, error));
  int rc = 0;
  if (msg->header_type != IPC_MESSAGE_RECORD_BATCH)
    rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": record batch block %" PRId64
                      " holds message type %d", where.name, where.offset, i, msg->header_type);
  else if (sl_fb_read_i64(&msg->header, IPC_RECORD_BATCH_LENGTH, 0, rows) < 0 ||
           sl_fb_read_vec(&msg->header, IPC_RECORD_BATCH_NODES, IPC_FIELD_NODE_STRUCT_SIZE,
                          nodes) < 0)
    rc = sl_ipc_fb_error(msg->header.buf, &where, "RecordBatch", error);
  else if (*rows < 0)
    rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": negative record batch length %" PRId64,
                      where.name, where.offset, *rows);
  if (rc != 0) sl_view_release(view);
  return rc;
}

/// Row counts of the batches of a mapped file, read from their metadata (a
/// flatbuffer each, no body touched), so that a gather can place rows before
/// they are decoded. A remote object would need a request per batch: left
/// unknown.
static int file_count_split_rows(void* reader, struct sl_split* splits, int64_t n,
                                 struct sluice_error* error) {
  struct ipc_file* f = reader;
  if (!f->source->mapped) return 0;
  for (int64_t i = 0; i < n; ++i) {
    if (splits[i].index < 0 || splits[i].index >= f->n_batches) continue;
    struct sl_view view;
    struct ipc_message msg;
    struct fb_vec nodes;
    int64_t rows;
    SL_RETURN_NOT_OK(block_nodes(f, splits[i].index, &view, &msg, &rows, &nodes, error));
    sl_view_release(&view);
    splits[i].est_rows = rows;
  }
  return 0;
}

/// Counts an IPC file's metadata holds (pyarrow's count_rows reads the same):
/// each batch's length and each column's top-level null count, from the
/// batches' metadata. No bounds: IPC stores none. Null counts are left
/// unknown where the node's count is not the column's nulls (a union's are
/// in its children; a dictionary's values may be null too).
static int file_stored_stats(void* reader, const int64_t* columns, int64_t n_columns,
                             int64_t* row_count, struct sl_stored_column_stats* stats,
                             struct ArrowArray* min_max, struct sluice_error* error) {
  struct ipc_file* f = reader;
  const struct ipc_field* root = &f->schema.root;
  int64_t n = columns ? n_columns : root->n_children;
  *row_count = 0;
  for (int64_t c = 0; c < n; ++c) {
    int64_t col = columns ? columns[c] : c;
    if (col < 0 || col >= root->n_children)
      return sl_error_set(error, EINVAL, "%s: column index %" PRId64 " out of range",
                          f->source->name, col);
    const struct ipc_field* field = &root->children[col];
    int known = field->dict_id < 0 && field->kind != IPC_KIND_SPARSE_UNION &&
                field->kind != IPC_KIND_DENSE_UNION && field->kind != IPC_KIND_RUN_END;
    stats[c] = (struct sl_stored_column_stats){.null_count = known ? 0 : -1};
  }
  for (int64_t i = 0; i < f->n_batches; ++i) {
    struct sl_view view;
    struct ipc_message msg;
    struct fb_vec nodes;
    int64_t rows;
    SL_RETURN_NOT_OK(block_nodes(f, i, &view, &msg, &rows, &nodes, error));
    int rc = 0;
    for (int64_t c = 0; rc == 0 && c < n; ++c) {
      const struct ipc_field* field = &root->children[columns ? columns[c] : c];
      if (stats[c].null_count < 0) continue;
      if (field->kind == IPC_KIND_NULL) {  // every slot null, whatever the node says
        stats[c].null_count += rows;
        continue;
      }
      if (field->node_start >= nodes.count) {
        rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": record batch %" PRId64
                          " has %u field nodes, too few for its schema", f->source->name,
                          f->batches[i].offset, i, nodes.count);
        break;
      }
      const uint8_t* node = sl_fb_vec_elem(&nodes, (uint32_t)field->node_start);
      int64_t length = fb_load_i64(node), nulls = fb_load_i64(node + 8);
      if (length != rows || nulls < 0 || nulls > length)
        rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": record batch %" PRId64
                          ": column '%s' has %" PRId64 " rows and %" PRId64
                          " nulls, the batch %" PRId64 " rows", f->source->name,
                          f->batches[i].offset, i, f->schema.schema.children[field - root->children]->name,
                          length, nulls, rows);
      else
        stats[c].null_count += nulls;
    }
    sl_view_release(&view);
    if (rc != 0) return rc;
    if (rows > INT64_MAX - *row_count)
      return sl_error_set(error, EILSEQ, "%s: record batches hold more than 2^63 rows",
                          f->source->name);
    *row_count += rows;
  }
  // No bounds: each column's two rows are null (an array of type null).
  SL_RETURN_NOT_OK(sl_array_init(min_max, f->alloc, 1, n, error));
  min_max->length = 2;
  int rc = 0;
  for (int64_t c = 0; rc == 0 && c < n; ++c) {
    rc = sl_array_init(min_max->children[c], f->alloc, 0, 0, error);
    if (rc == 0) min_max->children[c]->length = min_max->children[c]->null_count = 2;
  }
  if (rc != 0) min_max->release(min_max);
  return named(rc, f->source->name, error);
}

struct ipc_file_split {
  struct ipc_file* f;
  int64_t block;
  int64_t* columns;
  int64_t n_columns;
  const struct sl_split_fields* fields;  ///< the scan's (borrowed), NULL = none
  int done;
  struct sl_buffer batch_meta;  ///< the batch message's custom_metadata
};

static int file_split_open(void* reader, const struct sl_split* split, const int64_t* columns,
                           int64_t n_columns, void** state, int* projected,
                           struct sluice_error* error) {
  struct ipc_file* f = reader;
  *state = NULL;
  if (split->index < 0 || split->index >= f->n_batches)
    return sl_error_set(error, EINVAL, "%s: split %" PRId64 " out of range", f->source->name, split->index);
  SL_RETURN_NOT_OK(
      check_columns(&f->schema, f->source->name, columns, n_columns, split->fields, error));
  struct ipc_file_split* s = sl_calloc(f->alloc, 1, sizeof *s);
  if (s != NULL) sl_buffer_init(&s->batch_meta, f->alloc);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", f->source->name);
  s->f = f;
  s->block = split->index;
  s->fields = split->fields;
  if (columns != NULL) {
    s->columns = copy_columns(f->alloc, columns, n_columns);
    if (s->columns == NULL) {
      sl_free(f->alloc, s, sizeof *s);
      return sl_error_set(error, ENOMEM, "%s: out of memory", f->source->name);
    }
    s->n_columns = n_columns;
  }
  *projected = 1;
  *state = s;
  return 0;
}

static int file_split_next(void* state, struct ArrowArray* out, struct sluice_error* error) {
  struct ipc_file_split* s = state;
  struct ipc_file* f = s->f;
  out->release = NULL;
  if (s->done) return 0;
  s->done = 1;
  const struct ipc_block* b = &f->batches[s->block];
  struct ipc_where where = {f->source->name, b->offset};
  struct sl_view view;
  struct ipc_message msg;
  struct ipc_body body;
  // A fetching source with a projection reads only the columns' bytes; a
  // mapped file hands out the whole block as a view, which costs nothing.
  if (!f->source->mapped && s->columns != NULL && s->n_columns < f->schema.root.n_children) {
    SL_RETURN_NOT_OK(read_block_projected(f, b, s->columns, s->n_columns, &view, &msg, &body,
                                          error));
  } else {
    SL_RETURN_NOT_OK(read_block(f, b, &view, &msg, &body, error));
  }
  int rc;
  if (msg.header_type != IPC_MESSAGE_RECORD_BATCH)
    rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": record batch block holds message "
                      "type %d", where.name, where.offset, msg.header_type);
  else
    rc = sl_ipc_message_metadata(&msg, &s->batch_meta, &where, error);
  if (rc == 0)
    rc = sl_ipc_decode_record_batch(&f->schema, &f->memo, &msg, &body, s->columns, s->n_columns,
                                 s->fields, &where, out, error);
  sl_ref_release(body.owner);
  sl_view_release(&view);
  return named(rc, f->source->name, error);
}

static void file_split_close(void* state) {
  struct ipc_file_split* s = state;
  if (s == NULL) return;
  const struct sluice_allocator* alloc = s->f->alloc;
  sl_buffer_reset(&s->batch_meta);
  if (s->columns) sl_free(alloc, s->columns, (size_t)(s->n_columns > 0 ? s->n_columns : 1) * sizeof *s->columns);
  sl_free(alloc, s, sizeof *s);
}

static int file_probe(const uint8_t* head, int64_t n) {
  return n >= IPC_FILE_MAGIC_LEN && memcmp(head, IPC_FILE_MAGIC, IPC_FILE_MAGIC_LEN) == 0 ? 100 : 0;
}

/* ---- Stream format ------------------------------------------------------- */

struct ipc_stream {
  struct sl_source* source;
  const struct sluice_allocator* alloc;
  struct ipc_schema schema;
  struct ipc_dict_memo memo;
  int64_t pos;      ///< offset of the next message
  int64_t first_pos;  ///< offset of the message after the schema (a second scan's start)
  /// 0: never scanned; 1: its one split is open (two scans may try at
  /// once); 2: closed after a scan (a source that seeks is scanned again).
  atomic_int scanned;
  int finished;     ///< end of stream seen
  int64_t* columns;
  int64_t n_columns;
  const struct sl_split_fields* fields;  ///< the scan's (borrowed), NULL = none
  struct sl_buffer batch_meta;  ///< the last batch message's custom_metadata
};

/// Reads exactly `len` bytes forward. *eof = 1 (and 0 returned) when the
/// data ends right here and `eof` is not NULL.
static int stream_read(struct ipc_stream* st, int64_t len, struct sl_view* view, int* eof,
                       const char* what, struct sluice_error* error) {
  view->owner = NULL;
  view->size = 0;
  if (eof) *eof = 0;
  if (eof != NULL && st->source->size >= 0 && st->pos == st->source->size) {
    *eof = 1;  // writers before 0.15 may just stop at a message boundary
    return 0;
  }
  if (st->source->size >= 0 && len > st->source->size - st->pos)
    return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": truncated %s (%" PRId64
                        " bytes needed, %" PRId64 " left)", st->source->name, st->pos, what, len,
                        st->source->size - st->pos);
  if (len == 0) return 0;
  SL_RETURN_NOT_OK(sl_source_read_next(st->source, len, view, error));
  if (view->size == 0 && eof != NULL) {
    *eof = 1;
    return 0;
  }
  if (view->size < len) {
    sl_view_release(view);
    return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": truncated %s", st->source->name,
                        st->pos, what);
  }
  st->pos += len;
  return 0;
}

/// The next message: *eof at the end marker or end of data. On success the
/// caller releases `meta` (kept alive: msg points into it) and body.owner.
static int stream_next_message(struct ipc_stream* st, struct sl_view* meta, struct ipc_message* msg,
                               struct ipc_body* body, int* eof, struct ipc_where* where,
                               struct sluice_error* error) {
  struct sl_view v;
  int64_t prefix, mlen;
  uint8_t pre[8];
  where->name = st->source->name;
  where->offset = st->pos;
  meta->owner = NULL;
  meta->data = NULL;
  body->owner = NULL;
  SL_RETURN_NOT_OK(stream_read(st, 4, &v, eof, "message prefix", error));
  if (*eof) return 0;
  memcpy(pre, v.data, 4);
  sl_view_release(&v);
  // The magic of another layout: say which, not "metadata of 1330795073 bytes".
  if (where->offset == 0 && memcmp(pre, IPC_FILE_MAGIC, 4) == 0)
    return sl_error_set(error, EILSEQ, "%s: offset 0: this is an Arrow IPC file (ARROW1 magic), "
                        "not a stream: read it as the file format (-f arrow, format='arrow')",
                        where->name);
  if (where->offset == 0 && memcmp(pre, "FEA1", 4) == 0)
    return sl_error_set(error, ENOTSUP, "%s: offset 0: this is a Feather V1 file (FEA1 magic), "
                        "which sluice does not read (Feather V2 is the Arrow IPC file format: "
                        "rewrite it with pyarrow.feather.write_feather)", where->name);
  if (fb_load_u32(pre) == IPC_CONTINUATION_MARKER) {
    SL_RETURN_NOT_OK(stream_read(st, 4, &v, eof, "message prefix", error));
    if (*eof) {
      *eof = 0;  // a lone continuation marker is a truncated message
      return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": truncated message prefix",
                          where->name, where->offset);
    }
    memcpy(pre + 4, v.data, 4);
    sl_view_release(&v);
    SL_RETURN_NOT_OK(sl_ipc_frame_prefix(pre, 8, &prefix, &mlen, where, error));
  } else {
    SL_RETURN_NOT_OK(sl_ipc_frame_prefix(pre, 4, &prefix, &mlen, where, error));
  }
  if (mlen == 0) {
    *eof = 1;
    return 0;
  }
  SL_RETURN_NOT_OK(stream_read(st, mlen, meta, NULL, "message metadata", error));
  if (meta->owner == NULL) {
    // The source may recycle un-owned bytes on the next read: keep a copy.
    struct ipc_body copy;
    int rc = own_body(meta, 0, mlen, st->alloc, where, &copy, error);
    sl_view_release(meta);
    if (rc != 0) return rc;
    meta->data = copy.data;
    meta->size = mlen;
    meta->owner = copy.owner;
  }
  int rc = sl_ipc_message_parse(meta->data, (size_t)mlen, where, msg, error);
  struct sl_view bv = {0};
  if (rc == 0) rc = stream_read(st, msg->body_length, &bv, NULL, "message body", error);
  if (rc == 0) rc = own_body(&bv, 0, msg->body_length, st->alloc, where, body, error);
  sl_view_release(&bv);
  if (rc != 0) sl_view_release(meta);
  return rc;
}

static void stream_close(void* reader) {
  struct ipc_stream* st = reader;
  if (st == NULL) return;
  sl_ipc_dict_memo_reset(&st->memo, st->alloc);
  sl_ipc_schema_reset(&st->schema);
  sl_buffer_reset(&st->batch_meta);
  if (st->columns) sl_free(st->alloc, st->columns, (size_t)(st->n_columns > 0 ? st->n_columns : 1) * sizeof *st->columns);
  sl_free(st->alloc, st, sizeof *st);
}

static int stream_open(const struct sl_reader_args* args, void** reader, struct sluice_error* error) {
  *reader = NULL;
  SL_RETURN_NOT_OK(no_options(args, error));
  struct ipc_stream* st = sl_calloc(args->alloc, 1, sizeof *st);
  if (st == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", args->source->name);
  st->source = args->source;
  st->alloc = args->alloc;
  st->schema.alloc = args->alloc;
  sl_buffer_init(&st->batch_meta, args->alloc);
  struct sl_view meta;
  struct ipc_message msg;
  struct ipc_body body;
  struct ipc_where where;
  int eof = 0;
  int rc = stream_next_message(st, &meta, &msg, &body, &eof, &where, error);
  if (rc == 0 && eof)
    rc = sl_error_set(error, EILSEQ, "%s: offset 0: empty Arrow IPC stream (no schema)", st->source->name);
  if (rc == 0 && !eof) {
    if (msg.header_type != IPC_MESSAGE_SCHEMA)
      rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": stream starts with message type %d, "
                        "not a Schema", where.name, where.offset, msg.header_type);
    else
      rc = sl_ipc_schema_parse(&msg.header, msg.version, 0, st->alloc, &where, &st->schema, error);
    if (rc == 0) rc = sl_ipc_dict_memo_init(&st->memo, &st->schema, error);
    sl_ref_release(body.owner);
    sl_view_release(&meta);
    st->first_pos = st->pos;
  }
  if (rc != 0) {
    stream_close(st);
    return named(rc, args->source->name, error);
  }
  *reader = st;
  return 0;
}

static int stream_schema(void* reader, struct ArrowSchema* out, struct sluice_error* error) {
  struct ipc_stream* st = reader;
  return named(sl_schema_copy(&st->schema.schema, st->alloc, out, error), st->source->name, error);
}

static int stream_plan(void* reader, struct sl_split** splits, int64_t* n,
                       struct sluice_error* error) {
  struct ipc_stream* st = reader;
  struct sl_split* s = sl_calloc(st->alloc, 1, sizeof *s);
  *splits = NULL;
  *n = 0;
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", st->source->name);
  s->index = 0;
  s->offset = st->pos;
  s->length = st->source->size >= 0 ? st->source->size - st->pos : -1;
  s->est_bytes = 0;
  s->est_rows = -1;
  *splits = s;
  *n = 1;
  return 0;
}

static int stream_split_open(void* reader, const struct sl_split* split, const int64_t* columns,
                             int64_t n_columns, void** state, int* projected,
                             struct sluice_error* error) {
  struct ipc_stream* st = reader;
  *state = NULL;
  int never = 0, done = 2;
  int again = split->index == 0 && !atomic_compare_exchange_strong(&st->scanned, &never, 1) &&
              atomic_compare_exchange_strong(&st->scanned, &done, 1);
  if (split->index != 0 || (never != 0 && !again))
    return sl_error_set(error, EINVAL, "%s: an Arrow IPC stream can be scanned only once",
                        st->source->name);
  if (again) {
    // A second scan (reading the input again, enums as strings) of a source
    // that can start over, a file: from the first message on, anew.
    struct sluice_error why;
    if (sl_source_seek(st->source, st->first_pos, &why) != 0) {
      atomic_store(&st->scanned, 2);
      return sl_error_set(error, EINVAL, "%s: an Arrow IPC stream can be scanned only once "
                          "(its source cannot start over)", st->source->name);
    }
    sl_ipc_dict_memo_reset(&st->memo, st->alloc);
    int rc = sl_ipc_dict_memo_init(&st->memo, &st->schema, error);
    if (rc != 0) {
      atomic_store(&st->scanned, 2);
      return named(rc, st->source->name, error);
    }
    st->pos = st->first_pos;
    st->finished = 0;
    st->batch_meta.size = 0;
    if (st->columns != NULL) {
      sl_free(st->alloc, st->columns, (size_t)(st->n_columns > 0 ? st->n_columns : 1) *
                                          sizeof *st->columns);
      st->columns = NULL;
      st->n_columns = 0;
    }
  }
  int rc = check_columns(&st->schema, st->source->name, columns, n_columns, split->fields, error);
  st->fields = split->fields;
  if (rc == 0 && columns != NULL) {
    st->columns = copy_columns(st->alloc, columns, n_columns);
    if (st->columns == NULL) rc = sl_error_set(error, ENOMEM, "%s: out of memory", st->source->name);
    st->n_columns = n_columns;
  }
  if (rc != 0) {
    atomic_store(&st->scanned, again ? 2 : 0);  // not read: a scan with other columns may still
    return rc;
  }
  *projected = 1;
  *state = st;
  return 0;
}

static int stream_split_next(void* state, struct ArrowArray* out, struct sluice_error* error) {
  struct ipc_stream* st = state;
  out->release = NULL;
  while (!st->finished) {
    struct sl_view meta;
    struct ipc_message msg;
    struct ipc_body body;
    struct ipc_where where;
    int eof = 0;
    int rc = stream_next_message(st, &meta, &msg, &body, &eof, &where, error);
    if (rc != 0) {
      st->finished = 1;  // no resynchronising after a framing error
      return named(rc, st->source->name, error);
    }
    if (eof) {
      st->finished = 1;
      // Some of the first dictionaries but not all: the stream was cut (as
      // pyarrow says), not a stream of no batches.
      int64_t have = 0;
      for (int64_t i = 0; i < st->memo.n; ++i) have += st->memo.values[i] != NULL;
      if (have > 0 && have < st->memo.n) {
        return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": the stream ends after %"
                            PRId64 " of its %" PRId64 " dictionaries, before any record batch "
                            "(cut short?)", st->source->name, where.offset, have, st->memo.n);
      }
      return 0;
    }
    int got = 0;
    switch (msg.header_type) {
      case IPC_MESSAGE_RECORD_BATCH:
        rc = sl_ipc_message_metadata(&msg, &st->batch_meta, &where, error);
        if (rc == 0)
          rc = sl_ipc_decode_record_batch(&st->schema, &st->memo, &msg, &body, st->columns,
                                       st->columns ? st->n_columns : 0, st->fields, &where, out,
                                       error);
        got = rc == 0;
        break;
      case IPC_MESSAGE_DICTIONARY_BATCH:
        rc = sl_ipc_dict_apply(&st->schema, &st->memo, &msg, &body, -1, &where, error);
        break;
      default:
        rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": unexpected message type %d in "
                          "the stream", where.name, where.offset, msg.header_type);
        break;
    }
    sl_ref_release(body.owner);
    sl_view_release(&meta);
    if (rc != 0) {
      st->finished = 1;
      return named(rc, st->source->name, error);
    }
    if (got) return 0;
  }
  return 0;
}

static void stream_split_close(void* state) {
  struct ipc_stream* st = state;
  if (st != NULL) atomic_store(&st->scanned, 2);
}

/// The custom metadata of the last batch, or NULL.
static const char* file_batch_metadata(void* state) {
  struct ipc_file_split* s = state;
  return s->batch_meta.size > 0 ? (const char*)s->batch_meta.data : NULL;
}

static const char* stream_batch_metadata(void* state) {
  struct ipc_stream* st = state;
  return st->batch_meta.size > 0 ? (const char*)st->batch_meta.data : NULL;
}

static int stream_probe(const uint8_t* head, int64_t n) {
  struct ipc_where where = {"", 0};
  int64_t prefix, mlen;
  struct ipc_message msg;
  if (n < 8 || sl_ipc_frame_prefix(head, n, &prefix, &mlen, &where, NULL) != 0 || mlen < 8) return 0;
  if (prefix == 4 && mlen > (1 << 24)) return 0;  // legacy framing: be strict
  if (n - prefix < mlen) return prefix == 8 ? 40 : 0;  // cannot see the whole message
  if (sl_ipc_message_parse(head + prefix, (size_t)mlen, &where, &msg, NULL) != 0) return 0;
  if (msg.header_type != IPC_MESSAGE_SCHEMA) return 0;
  // The continuation marker and a whole Schema message that parses are as
  // good as a magic number: a stream named x.arrow is still a stream. The
  // legacy framing (a bare length) is a weaker sign.
  return prefix == 8 ? 100 : 60;
}

/* ---- Tables -------------------------------------------------------------- */

static const char* const k_file_extensions[] = {".arrow", ".feather", ".ipc", NULL};
static const char* const k_stream_extensions[] = {".arrows", ".stream", NULL};

static const struct sl_format_reader k_file_reader = {
  .name = "arrow",
  .extensions = k_file_extensions,
  .probe = file_probe,
  .open = file_open,
  .schema = file_schema,
  .plan_splits = file_plan,
  .split_open = file_split_open,
  .split_next = file_split_next,
  .split_batch_metadata = file_batch_metadata,
  .split_close = file_split_close,
  .close = file_close,
  .stored_stats = file_stored_stats,
  .count_split_rows = file_count_split_rows,
  .prunes_fields = 1,
};

static const struct sl_format_reader k_stream_reader = {
  .name = "arrows",
  .extensions = k_stream_extensions,
  .streams = 1,
  .probe = stream_probe,
  .open = stream_open,
  .schema = stream_schema,
  .plan_splits = stream_plan,
  .split_open = stream_split_open,
  .split_next = stream_split_next,
  .split_batch_metadata = stream_batch_metadata,
  .split_close = stream_split_close,
  .close = stream_close,
  .prunes_fields = 1,
};

const struct sl_format_reader* sl_ipc_file_reader(void) { return &k_file_reader; }
const struct sl_format_reader* sl_ipc_stream_reader(void) { return &k_stream_reader; }
