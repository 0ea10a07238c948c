// The Arrow IPC writers: drive an ArrowArrayStream through schema,
// dictionary and record batch messages, then the end-of-stream marker and,
// for files, the footer.
#include "format/ipc/ipc_writer.h"

#include <string.h>
#include <strings.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_createCCtx_advanced: our allocator
#include <zstd.h>

#include "codec/sl_codec_alloc.h"
#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_options.h"
#include "core/sl_required.h"
#include "format/ipc/ipc_dict_unify.h"
#include "format/ipc/ipc_fbs.h"
#include "io/sl_sink.h"

struct ipc_blocks {
  struct ipc_block* items;
  int64_t n, cap;
};

struct ipc_writer {
  const struct sluice_allocator* alloc;
  struct sl_sink* sink;
  int file;                 ///< file format: no dictionary replacement, footer
  int deltas;               ///< dictionary_deltas: a grown dictionary goes as a delta
  enum ipc_codec codec;
  ZSTD_CCtx* zstd;
  struct ArrowSchema schema;
  struct ipc_dicts dicts;
  struct ipc_unify unify;   ///< files: string dictionaries grown across batches
  struct fb_builder fb;
  struct ipc_body body;
  struct ipc_blocks dict_blocks, batch_blocks;
  /// sl_write_args.batch_metadata: custom metadata per record batch message.
  int (*batch_metadata)(void* user, const struct ArrowArray* batch, const char** metadata);
  void* batch_metadata_user;
  int64_t rows;  ///< rows written so far, from sl_write_args.first_row (errors name rows)
};

static int add_block(struct ipc_writer* w, struct ipc_blocks* blocks,
                     const struct ipc_block* block, struct sluice_error* error) {
  if (!w->file) return 0;
  if (sl_grow_array(w->alloc, (void**)&blocks->items, &blocks->cap, blocks->n + 1,
                    sizeof *blocks->items) != 0)
    return sl_error_set(error, ENOMEM, "arrow ipc writer: out of memory");
  blocks->items[blocks->n++] = *block;
  return 0;
}

/// The codec names pyarrow's IpcWriteOptions takes, in any case (LZ4,
/// lz4_frame: Arrow's name for the only LZ4 framing IPC bodies use).
static int parse_codec(const char* name, enum ipc_codec* codec, struct sluice_error* error) {
  if (name == NULL || name[0] == '\0' || strcasecmp(name, "none") == 0) *codec = IPC_CODEC_NONE;
  else if (strcasecmp(name, "lz4") == 0 || strcasecmp(name, "lz4_frame") == 0)
    *codec = IPC_CODEC_LZ4;
  else if (strcasecmp(name, "zstd") == 0) *codec = IPC_CODEC_ZSTD;
  else
    return sl_error_set(error, EINVAL,
                        "arrow ipc writer: unsupported compression '%s' (use lz4, zstd or none)",
                        name);
  return 0;
}

/// -W options: compression=lz4|zstd|none (as --compression, which must
/// then name the same: neither silently wins), dictionary_deltas=true|false;
/// any other key is an error, not silently nothing.
static int parse_write_options(const char* text, const char* flag, enum ipc_codec* codec,
                               int* deltas, struct sluice_error* error) {
  struct sl_option item;
  int more;
  while ((more = sl_option_next(&text, &item)) != 0) {
    if (more > 0 && sl_option_is(&item, "compression")) {
      char name[16];
      if (item.value_len >= sizeof name) item.value_len = sizeof name - 1;
      memcpy(name, item.value, item.value_len);
      name[item.value_len] = '\0';
      enum ipc_codec from_flag = *codec;
      SL_RETURN_NOT_OK(parse_codec(name, codec, error));
      if (flag != NULL && flag[0] != '\0' && *codec != from_flag) {
        return sl_error_set(error, EINVAL, "arrow ipc writer: compression '%s' and "
                            "compression=%s name different codecs: give one", flag, name);
      }
      continue;
    }
    if (more > 0 && sl_option_is(&item, "dictionary_deltas")) {
      if (sl_option_true_false(&item, deltas) != 0)
        return sl_error_set(error, EINVAL, "Arrow IPC write option dictionary_deltas='%.*s': "
                            "expected true or false", (int)item.value_len, item.value);
      continue;
    }
    return sl_error_set(error, EINVAL, "unknown Arrow IPC write option '%.*s' (known: "
                        "compression, dictionary_deltas)", (int)item.key_len, item.key);
  }
  return 0;
}

static int write_schema_message(struct ipc_writer* w, struct sluice_error* error) {
  struct fb_builder* b = &w->fb;
  sl_fb_reset(b);
  fb_ref schema = 0;
  SL_RETURN_NOT_OK(sl_ipc_build_schema(b, &w->schema, &w->dicts, &schema, error));
  sl_fb_table_start(b);
  sl_fb_add_i16(b, IPC_MESSAGE_VERSION, IPC_METADATA_V5);
  sl_fb_add_u8(b, IPC_MESSAGE_HEADER_TYPE, IPC_MESSAGE_SCHEMA);
  sl_fb_add_ref(b, IPC_MESSAGE_HEADER, schema);
  sl_fb_add_i64(b, IPC_MESSAGE_BODY_LENGTH, 0);
  fb_ref message = sl_fb_table_end(b);
  const uint8_t* meta = NULL;
  size_t size = 0;
  SL_RETURN_NOT_OK(sl_fb_finish(b, message, &meta, &size, error));
  struct ipc_block block;
  return sl_ipc_write_message_header(w->sink, meta, size, &block, error);
}

/// Whether values of type `s` hold a dictionary-encoded node.
static int holds_dictionary(const struct ArrowSchema* s, int depth) {
  if (s->dictionary != NULL) return 1;
  for (int64_t i = 0; depth < 64 && i < s->n_children; i++)
    if (holds_dictionary(s->children[i], depth + 1)) return 1;
  return 0;
}

/// Whether a changed dictionary `id` may be sent as a delta: with
/// dictionary_deltas, the default in files, where the alternative is failing
/// (the format forbids replacement), and not in streams, where a
/// replacement reads everywhere and deltas do not (polars rejects them).
/// Readers concatenate deltas, which sluice's reader (like others) does not
/// do for unions. Never one whose values hold dictionaries: pyarrow reads
/// no delta of such a dictionary ("unresolved nested dictionary"), so a
/// stream replaces it, as pyarrow's writer does, and a file refuses it.
static int delta_allowed(const struct ipc_writer* w, const struct ipc_dict_entry* e) {
  const struct ArrowSchema* values = e->field->dictionary;
  const char* f = values->format;
  return w->deltas && !(f[0] == '+' && f[1] == 'u') && !holds_dictionary(values, 0);
}

/// Writes dictionary `id` for a batch: nothing when readers already hold the
/// same values; a delta (only the new rows) when deltas are allowed and the
/// old dictionary is a prefix of the new one; else in streams a
/// replacement. Dictionaries nested in its values go first, as readers need
/// them to decode it. `*replaced` is set when it went out whole (not as a
/// delta).
static int write_dictionary(struct ipc_writer* w, int64_t id, const struct ArrowArray* array,
                            int* replaced, struct sluice_error* error) {
  struct ipc_dict_entry* e = &w->dicts.items[id];
  int nested_replaced = 0;
  struct ipc_body body, part;
  sl_ipc_body_init(&body, w->alloc);
  sl_ipc_body_init(&part, w->alloc);
  struct ipc_body* out = &body;
  int is_delta = 0;
  int rc = sl_ipc_body_plan_dictionary(&body, &w->dicts, id, array, 0, array->length, error);
  for (int64_t i = 0; rc == 0 && i < body.n_pending; i++)
    rc = write_dictionary(w, body.pending[i].id, body.pending[i].array, &nested_replaced, error);
  // A nested dictionary sent again whole replaced the one this dictionary's
  // indexes were read against, and readers bind them when they read this
  // one: send it again too, whole, even with the same bytes (as pyarrow
  // does). A nested delta keeps the indexes' meaning (and files have no
  // replacements).
  if (rc != 0 || (e->written && !nested_replaced && sl_ipc_body_equals(&body, &e->last)))
    goto done;
  if (e->written && !nested_replaced && array->length > e->last_length && delta_allowed(w, e)) {
    // Rows [0, last) planned are compared with what readers hold; the
    // snapshot then grows by the new rows' bytes only (not copied whole).
    rc = sl_ipc_body_plan_dictionary(&part, &w->dicts, id, array, 0, e->last_length, error);
    if (rc != 0) goto done;
    if (sl_ipc_body_equals(&part, &e->last)) {
      rc = sl_ipc_snapshot_extend(&e->last, w->alloc, &part, &body, error);
      if (rc == 0)
        rc = sl_ipc_body_plan_dictionary(&part, &w->dicts, id, array, e->last_length,
                                      array->length - e->last_length, error);
      if (rc != 0) goto done;
      out = &part;
      is_delta = 1;
    }
  }
  if (e->written && !is_delta && w->file) {
    if (!w->deltas)
      rc = sl_error_set(error, ENOTSUP,
                        "column '%s': the dictionary changed between batches, and the Arrow "
                        "IPC file format cannot replace a dictionary (with dictionary_deltas="
                        "false it cannot grow one either; write the stream format, .arrows)",
                        e->column);
    else if (holds_dictionary(e->field->dictionary, 0))
      rc = sl_error_set(error, ENOTSUP,
                        "column '%s': the dictionary changed between batches, and its values "
                        "hold a dictionary: the Arrow IPC file format cannot replace it, and "
                        "pyarrow reads no delta of such a dictionary (write the stream format, "
                        ".arrows)", e->column);
    else
      rc = sl_error_set(error, ENOTSUP,
                        "column '%s': the dictionary changed between batches (not only by "
                        "appending values), and the Arrow IPC file format cannot replace a "
                        "dictionary; sluice grows one only for string and binary columns "
                        "(top-level, or the values of a top-level list)%s (write the stream "
                        "format, .arrows)", e->column,
                        array->null_count > 0 || e->held_nulls
                            ? " whose dictionaries hold no null values (one of this column's "
                              "does)" : "");
    goto done;
  }
  if (!is_delta) rc = sl_ipc_snapshot_set(&e->last, w->alloc, &body, error);
  if (rc != 0) goto done;
  e->last_length = array->length;
  e->held_nulls |= array->null_count != 0;
  rc = sl_ipc_body_compress(out, w->codec, w->zstd, error);
  struct ipc_block block;
  if (rc == 0) rc = sl_ipc_write_body_message(w->sink, &w->fb, out, id, is_delta, NULL, &block,
                                          error);
  if (rc == 0) rc = add_block(w, &w->dict_blocks, &block, error);
  if (rc == 0) {
    e->written = 1;
    if (!is_delta) *replaced = 1;
  }
done:
  sl_ipc_body_free(&part);
  sl_ipc_body_free(&body);
  return rc;
}

static int write_batch(struct ipc_writer* w, const struct ArrowArray* batch,
                       const char* metadata, struct sluice_error* error) {
  SL_RETURN_NOT_OK(sl_ipc_body_plan_batch(&w->body, &w->schema, batch, &w->dicts, error));
  for (int64_t i = 0; i < w->body.n_pending; i++) {
    int replaced = 0;
    SL_RETURN_NOT_OK(write_dictionary(w, w->body.pending[i].id, w->body.pending[i].array,
                                      &replaced, error));
  }
  SL_RETURN_NOT_OK(sl_ipc_body_compress(&w->body, w->codec, w->zstd, error));
  struct ipc_block block;
  SL_RETURN_NOT_OK(sl_ipc_write_body_message(w->sink, &w->fb, &w->body, -1, 0, metadata, &block,
                                          error));
  SL_RETURN_NOT_OK(add_block(w, &w->batch_blocks, &block, error));
  sl_ipc_body_reset(&w->body);  // drop scratch (compressed copies) now, not next batch
  return 0;
}

static fb_ref blocks_vector(struct fb_builder* b, const struct ipc_blocks* blocks) {
  fb_ref ref;
  uint8_t* p = sl_fb_vector_reserve(b, (size_t)blocks->n, IPC_BLOCK_STRUCT_SIZE, 8, &ref);
  for (int64_t i = 0; p != NULL && i < blocks->n; i++) {
    uint8_t* q = p + i * IPC_BLOCK_STRUCT_SIZE;
    memset(q, 0, IPC_BLOCK_STRUCT_SIZE);  // includes the struct's 4 padding bytes
    sl_fb_store_le64(q + IPC_BLOCK_OFFSET_AT, blocks->items[i].offset);
    sl_fb_store_le32(q + IPC_BLOCK_META_DATA_LENGTH_AT, blocks->items[i].metadata_length);
    sl_fb_store_le64(q + IPC_BLOCK_BODY_LENGTH_AT, blocks->items[i].body_length);
  }
  return ref;
}

static int write_footer(struct ipc_writer* w, struct sluice_error* error) {
  struct fb_builder* b = &w->fb;
  sl_fb_reset(b);
  fb_ref schema = 0;
  SL_RETURN_NOT_OK(sl_ipc_build_schema(b, &w->schema, &w->dicts, &schema, error));
  fb_ref dicts = blocks_vector(b, &w->dict_blocks);
  fb_ref batches = blocks_vector(b, &w->batch_blocks);
  sl_fb_table_start(b);
  sl_fb_add_i16(b, IPC_FOOTER_VERSION, IPC_METADATA_V5);
  sl_fb_add_ref(b, IPC_FOOTER_SCHEMA, schema);
  sl_fb_add_ref(b, IPC_FOOTER_DICTIONARIES, dicts);
  sl_fb_add_ref(b, IPC_FOOTER_RECORD_BATCHES, batches);
  fb_ref footer = sl_fb_table_end(b);
  const uint8_t* data = NULL;
  size_t size = 0;
  SL_RETURN_NOT_OK(sl_fb_finish(b, footer, &data, &size, error));
  if (size > INT32_MAX) return sl_error_set(error, EOVERFLOW, "arrow ipc writer: footer too large");
  uint8_t tail[4 + IPC_FILE_MAGIC_LEN];
  sl_fb_store_le32(tail, (int32_t)size);
  memcpy(tail + 4, IPC_FILE_MAGIC, IPC_FILE_MAGIC_LEN);
  SL_RETURN_NOT_OK(sl_sink_write(w->sink, data, (int64_t)size, error));
  return sl_sink_write(w->sink, tail, sizeof tail, error);
}

static void ipc_close(void* state) {
  struct ipc_writer* w = state;
  if (w == NULL) return;
  ZSTD_freeCCtx(w->zstd);
  sl_ipc_dicts_free(&w->dicts);
  sl_ipc_unify_free(&w->unify);
  sl_ipc_body_free(&w->body);
  sl_fb_free(&w->fb);
  sl_free(w->alloc, w->dict_blocks.items, (size_t)w->dict_blocks.cap * sizeof(struct ipc_block));
  sl_free(w->alloc, w->batch_blocks.items, (size_t)w->batch_blocks.cap * sizeof(struct ipc_block));
  if (w->schema.release != NULL) w->schema.release(&w->schema);
  sl_free(w->alloc, w, sizeof *w);
}

/// A writer of `schema` into `sink`: the file's magic and the schema
/// message written.
static int ipc_open(const struct ArrowSchema* schema, struct sl_sink* sink,
                    const struct sl_write_args* args, void** state, struct sluice_error* error,
                    int file) {
  *state = NULL;
  struct ipc_writer* w = sl_calloc(args->alloc, 1, sizeof *w);
  if (w == NULL) return sl_error_set(error, ENOMEM, "arrow ipc writer: out of memory");
  w->alloc = args->alloc;
  w->sink = sink;
  w->file = file;
  w->deltas = file;  // streams replace by default: more readers take replacements
  w->batch_metadata = args->batch_metadata;
  w->batch_metadata_user = args->batch_metadata_user;
  w->rows = args->first_row;
  sl_fb_init(&w->fb, w->alloc);
  sl_ipc_body_init(&w->body, w->alloc);
  int rc = parse_codec(args->compression, &w->codec, error);
  if (rc == 0) rc = parse_write_options(args->format_options, args->compression, &w->codec,
                                          &w->deltas, error);
  if (rc == 0) rc = sl_schema_copy(schema, w->alloc, &w->schema, error);
  // The hooks take a non-const context; sl_alloc only reads the allocator.
  ZSTD_customMem mem = {sl_codec_alloc, sl_codec_free, sl_codec_opaque(w->alloc)};
  if (rc == 0 && w->codec == IPC_CODEC_ZSTD && (w->zstd = ZSTD_createCCtx_advanced(mem)) == NULL)
    rc = sl_error_set(error, ENOMEM, "arrow ipc writer: cannot create a zstd context");
  if (rc == 0) rc = sl_ipc_dicts_collect(&w->dicts, w->alloc, &w->schema, error);
  if (rc == 0 && file) rc = sl_ipc_unify_init(&w->unify, &w->schema, w->alloc, error);
  if (rc == 0 && file) {
    static const uint8_t magic[IPC_FILE_HEADER_LEN] = {'A', 'R', 'R', 'O', 'W', '1', 0, 0};
    rc = sl_sink_write(w->sink, magic, sizeof magic, error);
  }
  if (rc == 0) rc = write_schema_message(w, error);
  if (rc != 0) {
    ipc_close(w);
    return rc;
  }
  *state = w;
  return 0;
}

/// Writes `batch` (taken) as a record batch message, after the dictionaries
/// it needs. Every message goes out whole: nothing stays buffered, so
/// SL_PUSH_END_ROW_GROUP has nothing to do.
static int ipc_push(void* state, struct ArrowArray* batch, int flags,
                    struct sluice_error* error) {
  (void)flags;
  struct ipc_writer* w = state;
  if (batch == NULL || batch->release == NULL) return 0;
  const char* metadata = NULL;
  // Polled per batch too: the sink polls per MiB it writes, but a batch of
  // null columns is a few hundred bytes however many rows it holds.
  int rc = sl_sink_cancelled(w->sink, error);
  // The schema message says "not null": a null there would be read back.
  if (rc == 0 && (rc = sl_batch_check_required(&w->schema, batch, w->rows, error)) != 0) {
    sl_error_prefix(error, "arrow ipc writer");
  } else if (rc == 0 && w->batch_metadata != NULL &&
      (rc = w->batch_metadata(w->batch_metadata_user, batch, &metadata)) != 0) {
    rc = sl_error_set(error, rc, "arrow ipc writer: the batch metadata callback failed (%s)",
                      strerror(rc));
  } else if (rc == 0 && w->unify.n > 0) {
    struct ipc_unified_batch unified;
    rc = sl_ipc_unify_batch(&w->unify, batch, &unified, error);
    if (rc == 0) rc = write_batch(w, &unified.root, metadata, error);
    sl_ipc_unified_batch_free(&unified);
  } else if (rc == 0) {
    rc = write_batch(w, batch, metadata, error);
  }
  w->rows += batch->length;
  batch->release(batch);
  return rc;
}

/// The end-of-stream marker and, for files, the footer.
static int ipc_finish(void* state, struct sluice_error* error) {
  struct ipc_writer* w = state;
  static const uint8_t eos[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};
  SL_RETURN_NOT_OK(sl_sink_write(w->sink, eos, sizeof eos, error));
  return w->file ? write_footer(w, error) : 0;
}

static int open_file(const struct ArrowSchema* schema, struct sl_sink* sink,
                     const struct sl_write_args* args, void** state, struct sluice_error* error) {
  return ipc_open(schema, sink, args, state, error, 1);
}

static int open_stream(const struct ArrowSchema* schema, struct sl_sink* sink,
                       const struct sl_write_args* args, void** state,
                       struct sluice_error* error) {
  return ipc_open(schema, sink, args, state, error, 0);
}

static const struct sl_format_writer ipc_file_writer;
static const struct sl_format_writer ipc_stream_writer;

static int write_file(struct ArrowArrayStream* stream, struct sl_sink* sink,
                      const struct sl_write_args* args, struct sluice_error* error) {
  return sl_format_write_pushed(&ipc_file_writer, stream, sink, args, error);
}

static int write_stream(struct ArrowArrayStream* stream, struct sl_sink* sink,
                        const struct sl_write_args* args, struct sluice_error* error) {
  return sl_format_write_pushed(&ipc_stream_writer, stream, sink, args, error);
}

static const char* const ipc_file_extensions[] = {".arrow", ".feather", ".ipc", NULL};
static const char* const ipc_stream_extensions[] = {".arrows", ".stream", NULL};

static const struct sl_format_writer ipc_file_writer = {
    .name = "arrow", .extensions = ipc_file_extensions, .write = write_file,
    .open = open_file, .push = ipc_push, .finish = ipc_finish, .close = ipc_close};
static const struct sl_format_writer ipc_stream_writer = {
    .name = "arrows", .extensions = ipc_stream_extensions, .write = write_stream,
    .open = open_stream, .push = ipc_push, .finish = ipc_finish, .close = ipc_close};

const struct sl_format_writer* sl_ipc_file_writer(void) { return &ipc_file_writer; }
const struct sl_format_writer* sl_ipc_stream_writer(void) { return &ipc_stream_writer; }
