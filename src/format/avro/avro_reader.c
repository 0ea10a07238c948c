// The Avro container reader: header (magic, metadata, sync), a walk of the
// block headers at open (ranged sources: every sync marker checked, blocks
// grouped into splits), and split decoding. After open the reader is
// read-only, so splits decode concurrently; each split owns its builders and
// decompression buffer.
#include "avro_reader.h"

#include <inttypes.h>
#include <string.h>

#include "avro_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"

#define AVRO_MAGIC "Obj\x01"
#define AVRO_SYNC_LEN 16
#define AVRO_DEFAULT_BATCH_ROWS 65536
/// A batch also ends once its builders hold this much (W2 rows are 128 KiB).
#define AVRO_BATCH_BYTES ((int64_t)128 << 20)
/// Forward-only sources: blocks larger than this are read in chunks of it.
#define AVRO_FORWARD_CHUNK ((int64_t)16 << 20)
#define AVRO_MAX_META_ENTRY ((int64_t)64 << 20)

struct avro_block {
  int64_t header;  ///< offset of the block's object count
  int64_t data;    ///< offset of its (compressed) data
  int64_t size;    ///< bytes of data
  int64_t count;   ///< objects
};

struct avro_reader {
  struct sl_source* source;
  const struct sluice_allocator* alloc;
  int64_t batch_rows;
  char* json;  ///< the writer schema text
  size_t json_len;
  struct avro_schema schema;
  char* reader_json;  ///< the reader schema text (format option reader_schema=PATH), or NULL
  size_t reader_json_len;
  struct avro_schema reader_schema;
  struct avro_program prog;
  struct ArrowSchema arrow;
  enum avro_codec codec;
  uint8_t sync[AVRO_SYNC_LEN];
  int64_t pos;  ///< after the header
  int forward;
  int scanned;  ///< forward-only: the one split was opened
  struct avro_block* blocks;
  int64_t n_blocks, cap_blocks;
};

/* ---- byte input over either kind of source ------------------------------------ */

/// Reads exactly `n` bytes at r->pos (or forward). *eof (if given) is set and
/// 0 returned when no byte at all is left.
static int input_read(struct avro_reader* r, int64_t* pos, int64_t n, struct sl_view* v, int* eof,
                      const char* what, struct sluice_error* error) {
  struct sl_source* src = r->source;
  v->data = NULL;
  v->size = 0;
  v->owner = NULL;
  if (eof) *eof = 0;
  if (!r->forward) {
    if (eof && *pos == src->size) {
      *eof = 1;
      return 0;
    }
    if (n > src->size - *pos)
      return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": truncated %s (%" PRId64
                          " bytes needed, %" PRId64 " left)", src->name, *pos, what, n,
                          src->size - *pos);
    SL_RETURN_NOT_OK(sl_source_read_at(src, *pos, n, v, error));
  } else {
    SL_RETURN_NOT_OK(sl_source_read_next(src, n, v, error));
    if (v->size == 0 && eof && n > 0) {
      sl_view_release(v);
      *eof = 1;
      return 0;
    }
  }
  if (v->size < n) {
    sl_view_release(v);
    return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": truncated %s", src->name, *pos, what);
  }
  *pos += n;
  return 0;
}

static int input_long(struct avro_reader* r, int64_t* pos, int64_t* out, int* eof,
                      const char* what, struct sluice_error* error) {
  uint64_t v = 0;
  int64_t start = *pos;
  for (int shift = 0; shift < 70; shift += 7) {
    struct sl_view b;
    SL_RETURN_NOT_OK(input_read(r, pos, 1, &b, shift == 0 ? eof : NULL, what, error));
    if (eof && *eof) return 0;
    uint8_t byte = b.data[0];
    sl_view_release(&b);
    v |= (uint64_t)(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
      return 0;
    }
  }
  return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": %s: varint longer than 10 bytes",
                      r->source->name, start, what);
}

/* ---- open -------------------------------------------------------------------- */

static void reader_close(void* reader) {
  struct avro_reader* r = reader;
  if (r == NULL) return;
  const struct sluice_allocator* alloc = r->alloc;
  if (r->json) sl_free(alloc, r->json, r->json_len + 1);
  avro_program_release(&r->prog);
  avro_schema_release(&r->schema);
  avro_schema_release(&r->reader_schema);
  if (r->reader_json) sl_free(alloc, r->reader_json, r->reader_json_len + 1);
  if (r->arrow.release) r->arrow.release(&r->arrow);
  if (r->blocks) sl_free(alloc, r->blocks, (size_t)r->cap_blocks * sizeof *r->blocks);
  sl_free(alloc, r, sizeof *r);
}

static int read_header(struct avro_reader* r, struct sluice_error* error) {
  const char* name = r->source->name;
  struct sl_view v;
  int64_t pos = 0;
  SL_RETURN_NOT_OK(input_read(r, &pos, 4, &v, NULL, "header", error));
  int magic_ok = memcmp(v.data, AVRO_MAGIC, 4) == 0;
  sl_view_release(&v);
  if (!magic_ok)
    return sl_error_set(error, EILSEQ, "%s: byte 0: not an Avro object container file (bad magic)", name);
  r->codec = AVRO_CODEC_NULL;
  for (;;) {
    int64_t count, bytes;
    SL_RETURN_NOT_OK(input_long(r, &pos, &count, NULL, "header metadata", error));
    if (count == 0) break;
    if (count < 0) {
      if (count == INT64_MIN) return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": bad metadata count", name, pos);
      count = -count;
      SL_RETURN_NOT_OK(input_long(r, &pos, &bytes, NULL, "header metadata", error));
    }
    if (count > 4096)
      return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": %" PRId64 " metadata entries",
                          name, pos, count);
    for (int64_t i = 0; i < count; ++i) {
      int64_t klen, vlen;
      char key[64];
      SL_RETURN_NOT_OK(input_long(r, &pos, &klen, NULL, "metadata key", error));
      if (klen < 0 || klen > AVRO_MAX_META_ENTRY)
        return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": bad metadata key length %" PRId64,
                            name, pos, klen);
      SL_RETURN_NOT_OK(input_read(r, &pos, klen, &v, NULL, "metadata key", error));
      size_t kn = (size_t)klen < sizeof key - 1 ? (size_t)klen : sizeof key - 1;
      memcpy(key, v.data, kn);
      key[kn] = '\0';
      int is_long_key = klen >= (int64_t)sizeof key - 1;
      sl_view_release(&v);
      SL_RETURN_NOT_OK(input_long(r, &pos, &vlen, NULL, "metadata value", error));
      if (vlen < 0 || vlen > AVRO_MAX_META_ENTRY)
        return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": bad metadata value length %" PRId64,
                            name, pos, vlen);
      int64_t at = pos;
      SL_RETURN_NOT_OK(input_read(r, &pos, vlen, &v, NULL, "metadata value", error));
      int rc = 0;
      if (!is_long_key && strcmp(key, "avro.schema") == 0) {
        if (r->json) {
          rc = sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": avro.schema given twice", name, at);
        } else if ((r->json = sl_strndup(r->alloc, (const char*)v.data, (size_t)vlen)) == NULL) {
          rc = sl_error_set(error, ENOMEM, "%s: out of memory", name);
        } else {
          r->json_len = (size_t)vlen;
        }
      } else if (!is_long_key && strcmp(key, "avro.codec") == 0) {
        rc = avro_codec_from_name((const char*)v.data, (size_t)vlen, &r->codec, error);
        if (rc != 0) sl_error_prefix(error, "%s: byte %" PRId64, name, at);
      }
      sl_view_release(&v);
      SL_RETURN_NOT_OK(rc);
    }
  }
  SL_RETURN_NOT_OK(input_read(r, &pos, AVRO_SYNC_LEN, &v, NULL, "sync marker", error));
  memcpy(r->sync, v.data, AVRO_SYNC_LEN);
  sl_view_release(&v);
  r->pos = pos;
  if (r->json == NULL)
    return sl_error_set(error, EILSEQ, "%s: the header has no avro.schema", name);
  return 0;
}

/// Reads one block header at *pos: *eof at a clean end of data.
static int read_block_header(struct avro_reader* r, int64_t* pos, int64_t index,
                             struct avro_block* b, int* eof, struct sluice_error* error) {
  b->header = *pos;
  SL_RETURN_NOT_OK(input_long(r, pos, &b->count, eof, "block header", error));
  if (*eof) return 0;
  SL_RETURN_NOT_OK(input_long(r, pos, &b->size, NULL, "block header", error));
  b->data = *pos;
  if (b->count < 0 || b->size < 0)
    return sl_error_set(error, EILSEQ, "%s: block %" PRId64 " at byte %" PRId64 ": negative "
                        "object count (%" PRId64 ") or size (%" PRId64 ")", r->source->name,
                        index, b->header, b->count, b->size);
  if (!r->forward && b->size > r->source->size - *pos - AVRO_SYNC_LEN)
    return sl_error_set(error, EILSEQ, "%s: block %" PRId64 " at byte %" PRId64 ": truncated "
                        "block (%" PRId64 " bytes declared, %" PRId64 " left)", r->source->name,
                        index, b->header, b->size, r->source->size - *pos);
  return 0;
}

static int bad_sync(struct avro_reader* r, int64_t index, int64_t at, struct sluice_error* error) {
  return sl_error_set(error, EILSEQ, "%s: bad sync marker after block %" PRId64 " at byte %" PRId64,
                      r->source->name, index, at);
}

static int walk_blocks(struct avro_reader* r, struct sluice_error* error) {
  int64_t pos = r->pos;
  for (int64_t i = 0;; ++i) {
    struct avro_block b;
    int eof;
    SL_RETURN_NOT_OK(read_block_header(r, &pos, i, &b, &eof, error));
    if (eof) return 0;
    struct sl_view v;
    int64_t at = b.data + b.size;
    SL_RETURN_NOT_OK(sl_source_read_at(r->source, at, AVRO_SYNC_LEN, &v, error));
    int ok = v.size == AVRO_SYNC_LEN && memcmp(v.data, r->sync, AVRO_SYNC_LEN) == 0;
    sl_view_release(&v);
    if (!ok) return bad_sync(r, i, at, error);
    pos = at + AVRO_SYNC_LEN;
    if (r->n_blocks == r->cap_blocks) {
      int64_t cap = r->cap_blocks ? r->cap_blocks * 2 : 64;
      struct avro_block* nb = sl_alloc(r->alloc, (size_t)cap * sizeof *nb);
      if (nb == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
      if (r->blocks) {
        memcpy(nb, r->blocks, (size_t)r->n_blocks * sizeof *nb);
        sl_free(r->alloc, r->blocks, (size_t)r->cap_blocks * sizeof *nb);
      }
      r->blocks = nb;
      r->cap_blocks = cap;
    }
    r->blocks[r->n_blocks++] = b;
  }
}

/// The format option reader_schema=PATH (a .avsc file): its text, or NULL.
static int load_reader_schema(struct avro_reader* r, const char* options, struct sluice_error* error) {
  static const char k_key[] = "reader_schema=";
  for (const char* o = options; o != NULL && *o != '\0';) {
    const char* end = strchr(o, ',');
    size_t n = end ? (size_t)(end - o) : strlen(o);
    if (n > sizeof k_key - 1 && strncmp(o, k_key, sizeof k_key - 1) == 0) {
      char* path = sl_strndup(r->alloc, o + sizeof k_key - 1, n - (sizeof k_key - 1));
      if (path == NULL) return sl_error_set(error, ENOMEM, "out of memory");
      struct sl_source* src;
      struct sl_view v = {0};
      int rc = sl_source_open(path, r->alloc, &src, error);
      if (rc == 0) {
        rc = src->size < 0 ? sl_error_set(error, EINVAL, "%s: not a regular file", path)
                           : sl_source_read_at(src, 0, src->size, &v, error);
        if (rc == 0) {
          r->reader_json = sl_strndup(r->alloc, (const char*)v.data, (size_t)v.size);
          r->reader_json_len = (size_t)v.size;
          if (r->reader_json == NULL) rc = sl_error_set(error, ENOMEM, "out of memory");
        }
        sl_view_release(&v);
        sl_source_close(src);
      }
      if (rc == 0) {
        rc = avro_schema_parse(r->reader_json, r->reader_json_len, r->alloc, &r->reader_schema, error);
        if (rc != 0) sl_error_prefix(error, "reader schema %s", path);
      }
      sl_free(r->alloc, path, strlen(path) + 1);
      return rc;
    }
    o = end ? end + 1 : NULL;
  }
  return 0;
}

static int reader_open(const struct sl_reader_args* args, void** reader, struct sluice_error* error) {
  *reader = NULL;
  struct sl_source* src = args->source;
  struct avro_reader* r = sl_calloc(args->alloc, 1, sizeof *r);
  if (r == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", src->name);
  r->source = src;
  r->alloc = args->alloc;
  r->batch_rows = args->batch_size > 0 ? args->batch_size : AVRO_DEFAULT_BATCH_ROWS;
  r->forward = src->ops->read_at == NULL || src->size < 0;
  int rc = read_header(r, error);
  if (rc == 0) {
    rc = avro_schema_parse(r->json, r->json_len, r->alloc, &r->schema, error);
    if (rc != 0) sl_error_prefix(error, "%s", src->name);
  }
  if (rc == 0) rc = load_reader_schema(r, args->format_options, error);
  if (rc == 0 && r->reader_json != NULL) {
    // Batches take the reader's shape, and its schema is what a writer keeps.
    rc = avro_program_build_resolved(&r->schema, &r->reader_schema, &r->prog, error);
    if (rc == 0) rc = avro_arrow_schema(&r->reader_schema, r->reader_json, r->reader_json_len,
                                        &r->arrow, error);
  } else {
    if (rc == 0) rc = avro_program_build(&r->schema, &r->prog, error);
    if (rc == 0) rc = avro_arrow_schema(&r->schema, r->json, r->json_len, &r->arrow, error);
  }
  if (rc != 0 && strncmp(error->message, src->name, strlen(src->name)) != 0)
    sl_error_prefix(error, "%s", src->name);
  if (rc == 0 && !r->forward) rc = walk_blocks(r, error);
  if (rc != 0) {
    reader_close(r);
    return rc;
  }
  *reader = r;
  return 0;
}

static int reader_schema(void* reader, struct ArrowSchema* out, struct sluice_error* error) {
  struct avro_reader* r = reader;
  return sl_schema_copy(&r->arrow, r->alloc, out, error);
}

static int reader_plan(void* reader, struct sl_split** splits, int64_t* n,
                       struct sluice_error* error) {
  struct avro_reader* r = reader;
  *splits = NULL;
  *n = 0;
  if (r->forward) {
    struct sl_split* s = sl_alloc(r->alloc, sizeof *s);
    if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
    *s = (struct sl_split){.index = 0, .offset = r->pos, .length = -1, .est_bytes = 0, .est_rows = -1};
    *splits = s;
    *n = 1;
    return 0;
  }
  if (r->n_blocks == 0) return 0;
  int64_t total = 0;
  for (int64_t i = 0; i < r->n_blocks; ++i) total += r->blocks[i].size;
  // Enough splits to keep every core busy on mid-sized files, few enough that
  // per-split set-up stays negligible.
  int64_t target = total / 32;
  if (target < ((int64_t)1 << 20)) target = (int64_t)1 << 20;
  if (target > ((int64_t)8 << 20)) target = (int64_t)8 << 20;
  int64_t count = 0;
  for (int64_t i = 0, acc = 0; i < r->n_blocks; ++i) {
    acc += r->blocks[i].size;
    if (acc >= target || i == r->n_blocks - 1) {
      ++count;
      acc = 0;
    }
  }
  struct sl_split* s = sl_calloc(r->alloc, (size_t)count, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
  int64_t k = 0, first = 0, acc = 0, rows = 0;
  int64_t ratio = r->codec == AVRO_CODEC_NULL ? 1 : 3;
  for (int64_t i = 0; i < r->n_blocks; ++i) {
    acc += r->blocks[i].size;
    // Counts are only checked against the data when a block is decoded.
    int64_t c = r->blocks[i].count;
    rows = rows > INT64_MAX - c ? INT64_MAX : rows + c;
    if (acc >= target || i == r->n_blocks - 1) {
      const struct avro_block* last = &r->blocks[i];
      int64_t batches = rows / r->batch_rows + 1;
      s[k] = (struct sl_split){.index = k, .offset = r->blocks[first].header,
                               .length = last->data + last->size + AVRO_SYNC_LEN - r->blocks[first].header,
                               .est_bytes = acc * ratio / batches, .est_rows = rows};
      ++k;
      first = i + 1;
      acc = rows = 0;
    }
  }
  *splits = s;
  *n = count;
  return 0;
}

/* ---- splits ------------------------------------------------------------------ */

struct avro_split {
  struct avro_reader* r;
  int64_t next_block, end_block;  ///< ranged: blocks still to decode
  int64_t fpos;                   ///< forward: stream position
  struct sl_builder root;
  struct sl_builder** bld;
  struct avro_decoder dec;
  struct sl_view view;  ///< the current block's bytes
  struct avro_buf buf;  ///< its decompressed bytes
  struct avro_buf raw;  ///< forward-only: a large block's bytes, gathered in chunks
  const uint8_t* base;  ///< the block's (compressed) bytes, for error offsets
  struct avro_block block;
  int64_t block_index;
  int64_t blocks_seen;  ///< forward-only: blocks read so far
  int64_t rows_left;    ///< objects left in the current block
  int loaded, finished;
  int64_t drop_from;    ///< mapped input: start of the decoded bytes not yet dropped (-1 = none)
  int64_t drop_end;     ///< mapped input: end of the last block loaded
};

/// Mapped input: the blocks decoded so far are not read again, so their pages
/// leave the resident set (as the Parquet reader does per column chunk),
/// once per AVRO_DROP_BYTES or at the end of the split (`all`), not per
/// block: a madvise per 64 KiB block would cost more than it saves.
#define AVRO_DROP_BYTES ((int64_t)8 << 20)
static void drop_decoded(struct avro_split* s, int all) {
  if (s->r->forward || s->drop_from < 0) return;
  int64_t end = s->drop_end;
  if (end - s->drop_from >= AVRO_DROP_BYTES || (all && end > s->drop_from)) {
    sl_source_drop(s->r->source, s->drop_from, end - s->drop_from);
    s->drop_from = end;
  }
}

static void split_close(void* state) {
  struct avro_split* s = state;
  if (s == NULL) return;
  const struct sluice_allocator* alloc = s->r->alloc;
  drop_decoded(s, 1);
  sl_view_release(&s->view);
  avro_buf_release(&s->buf, alloc);
  avro_buf_release(&s->raw, alloc);
  sl_builder_release(&s->root);
  if (s->bld) sl_free(alloc, s->bld, (size_t)s->r->prog.n_ops * sizeof *s->bld);
  sl_free(alloc, s, sizeof *s);
}

static int split_open(void* reader, const struct sl_split* split, const int64_t* columns,
                      int64_t n_columns, void** state, int* projected, struct sluice_error* error) {
  struct avro_reader* r = reader;
  const char* name = r->source->name;
  *state = NULL;
  *projected = 1;
  for (int64_t i = 0; columns && i < n_columns; ++i)
    if (columns[i] < 0 || columns[i] >= r->arrow.n_children)
      return sl_error_set(error, EINVAL, "%s: column index %" PRId64 " out of range (%" PRId64
                          " columns)", name, columns[i], r->arrow.n_children);
  struct avro_split* s = sl_calloc(r->alloc, 1, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  s->r = r;
  s->drop_from = -1;
  int rc = 0;
  if (r->forward) {
    if (split->index != 0 || r->scanned)
      rc = sl_error_set(error, EINVAL, "%s: an Avro stream can be scanned only once", name);
    r->scanned = 1;
    s->fpos = r->pos;
  } else {
    // Splits name their blocks by byte range: find the first by its offset.
    int64_t lo = 0, hi = r->n_blocks;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (r->blocks[mid].header < split->offset) lo = mid + 1;
      else hi = mid;
    }
    s->next_block = s->end_block = lo;
    while (s->end_block < r->n_blocks && r->blocks[s->end_block].header < split->offset + split->length)
      s->end_block++;
  }
  struct ArrowSchema proj = {0};
  if (rc == 0) {
    rc = columns ? sl_schema_project(&r->arrow, columns, n_columns, r->alloc, &proj, error)
                 : sl_schema_copy(&r->arrow, r->alloc, &proj, error);
  }
  if (rc == 0) rc = sl_builder_init_from_schema(&s->root, &proj, r->alloc, error);
  if (proj.release) proj.release(&proj);
  if (rc == 0) {
    s->bld = sl_calloc(r->alloc, (size_t)r->prog.n_ops, sizeof *s->bld);
    if (s->bld == NULL) rc = sl_error_set(error, ENOMEM, "%s: out of memory", name);
  }
  if (rc == 0) rc = avro_program_bind(&r->prog, &s->root, columns, columns ? n_columns : 0, s->bld, error);
  if (rc != 0) {
    if (strncmp(error->message, name, strlen(name)) != 0) sl_error_prefix(error, "%s", name);
    split_close(s);
    return rc;
  }
  s->dec.prog = &r->prog;
  s->dec.bld = s->bld;
  s->dec.empty_left = AVRO_MAX_EMPTY_VALUES;
  *state = s;
  return 0;
}

/// Makes the next block current; *done when the split has no more.
static int load_block(struct avro_split* s, int* done, struct sluice_error* error) {
  struct avro_reader* r = s->r;
  const char* name = r->source->name;
  *done = 0;
  drop_decoded(s, !r->forward && s->next_block >= s->end_block);
  sl_view_release(&s->view);
  s->loaded = 0;
  int64_t data_len;
  if (r->forward) {
    int eof;
    int64_t index = s->blocks_seen;
    SL_RETURN_NOT_OK(read_block_header(r, &s->fpos, index, &s->block, &eof, error));
    if (eof) {
      *done = 1;
      return 0;
    }
    s->block_index = index;
    s->blocks_seen++;
    if (s->block.size > INT64_MAX - AVRO_SYNC_LEN)
      return sl_error_set(error, EILSEQ, "%s: block %" PRId64 ": bad size", name, index);
    int64_t total = s->block.size + AVRO_SYNC_LEN;
    if (total <= AVRO_FORWARD_CHUNK) {
      // Data and sync in one read: a source may recycle a view's bytes on the next.
      SL_RETURN_NOT_OK(input_read(r, &s->fpos, total, &s->view, NULL, "block", error));
      s->base = s->view.data;
    } else {
      // A pipe's declared size cannot be checked against the file: gather the
      // block in chunks so memory grows only with bytes that really arrive.
      s->raw.size = 0;
      for (int64_t left = total; left > 0;) {
        int64_t chunk = left < AVRO_FORWARD_CHUNK ? left : AVRO_FORWARD_CHUNK;
        struct sl_view v;
        SL_RETURN_NOT_OK(input_read(r, &s->fpos, chunk, &v, NULL, "block", error));
        int rc = avro_buf_reserve(&s->raw, s->raw.size + (size_t)chunk, r->alloc, error);
        if (rc == 0) memcpy(s->raw.data + s->raw.size, v.data, (size_t)chunk);
        sl_view_release(&v);
        if (rc != 0) return sl_error_prefix(error, "%s: block %" PRId64, name, index);
        s->raw.size += (size_t)chunk;
        left -= chunk;
      }
      s->base = s->raw.data;
    }
    if (memcmp(s->base + s->block.size, r->sync, AVRO_SYNC_LEN) != 0)
      return bad_sync(r, index, s->block.data + s->block.size, error);
    data_len = s->block.size;
  } else {
    if (s->next_block >= s->end_block) {
      *done = 1;
      return 0;
    }
    s->block_index = s->next_block++;
    s->block = r->blocks[s->block_index];
    if (s->drop_from < 0) s->drop_from = s->block.header;
    s->drop_end = s->block.data + s->block.size;
    SL_RETURN_NOT_OK(sl_source_read_at(r->source, s->block.data, s->block.size, &s->view, error));
    data_len = s->view.size;
    s->base = s->view.data;
  }
  const uint8_t* data = s->base;
  if (s->block.count == 0) {
    data_len = 0;  // writers may leave an empty block's data empty, even when compressing
  } else if (r->codec != AVRO_CODEC_NULL) {
    int rc = avro_decompress(r->codec, data, (size_t)data_len, &s->buf, r->alloc, error);
    if (rc != 0)
      return sl_error_prefix(error, "%s: block %" PRId64 " at byte %" PRId64, name,
                             s->block_index, s->block.header);
    data = s->buf.data;
    data_len = (int64_t)s->buf.size;
  }
  int64_t min = r->prog.ops[0].min_size;
  if (min > 0 ? s->block.count > data_len / min : s->block.count > s->dec.empty_left)
    return sl_error_set(error, EILSEQ, "%s: block %" PRId64 " at byte %" PRId64 ": %" PRId64
                        " objects cannot fit in %" PRId64 " bytes", name, s->block_index,
                        s->block.header, s->block.count, data_len);
  if (min == 0) s->dec.empty_left -= s->block.count;
  s->dec.p = data;
  s->dec.end = data + data_len;
  s->rows_left = s->block.count;
  s->loaded = 1;
  return 0;
}

/// The file offset (or, for compressed blocks, the block) an error is at.
static int decode_error(struct avro_split* s, int64_t row, struct sluice_error* error) {
  struct avro_reader* r = s->r;
  const uint8_t* base = r->codec == AVRO_CODEC_NULL ? s->base : s->buf.data;
  int64_t off = (int64_t)(s->dec.p - base);
  if (r->codec == AVRO_CODEC_NULL)
    return sl_error_prefix(error, "%s: block %" PRId64 " at byte %" PRId64 ": object %" PRId64,
                           r->source->name, s->block_index, s->block.data + off, row);
  return sl_error_prefix(error, "%s: block %" PRId64 " at byte %" PRId64 " (decompressed offset %"
                         PRId64 "): object %" PRId64, r->source->name, s->block_index,
                         s->block.header, off, row);
}

/// Sizes the top-level fixed-width columns for the batch about to be decoded
/// (the rows its blocks claim, at most batch_rows, so a forged count costs
/// nothing more): no doubling copies, and their pages are mapped in one call.
static int reserve_batch(struct avro_split* s, struct sluice_error* error) {
  struct avro_reader* r = s->r;
  if (r->forward) return 0;
  int64_t expect = s->loaded ? s->rows_left : 0;
  for (int64_t i = s->next_block; i < s->end_block && expect < r->batch_rows; ++i)
    expect += r->blocks[i].count;
  if (expect > r->batch_rows) expect = r->batch_rows;
  for (int64_t i = 0; i < s->root.n_children; ++i) {
    struct sl_builder* c = &s->root.children[i];
    if (c->value_width > 0 && sl_builder_reserve(c, expect) != 0)
      return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
  }
  return 0;
}

static int split_next_inner(struct avro_split* s, struct ArrowArray* out, struct sluice_error* error) {
  struct avro_reader* r = s->r;
  int64_t rows = 0;
  SL_RETURN_NOT_OK(reserve_batch(s, error));
  while (rows < r->batch_rows) {
    if (!s->loaded || s->rows_left == 0) {
      if (s->loaded && s->dec.p != s->dec.end)
        return sl_error_set(error, EILSEQ, "%s: block %" PRId64 " at byte %" PRId64 ": %td bytes "
                            "left over after its %" PRId64 " objects", r->source->name,
                            s->block_index, s->block.header, s->dec.end - s->dec.p, s->block.count);
      int done;
      SL_RETURN_NOT_OK(load_block(s, &done, error));
      if (done) {
        s->finished = 1;
        break;
      }
      continue;
    }
    int64_t n = s->rows_left < r->batch_rows - rows ? s->rows_left : r->batch_rows - rows;
    if (n > 64) n = 64;  // check the batch's memory every few rows
    for (int64_t k = 0; k < n; ++k)
      if (avro_decode_row(&s->dec, error) != 0)
        return decode_error(s, s->block.count - s->rows_left + k, error);
    rows += n;
    s->rows_left -= n;
    if (sl_builder_byte_size(&s->root) >= AVRO_BATCH_BYTES) break;
  }
  if (rows == 0) return 0;
  if (sl_builder_struct_finish_rows(&s->root, rows) != 0)
    return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
  int rc = sl_builder_finish(&s->root, out, error);
  if (rc != 0) sl_error_prefix(error, "%s", r->source->name);
  return rc;
}

static int split_next(void* state, struct ArrowArray* out, struct sluice_error* error) {
  struct avro_split* s = state;
  out->release = NULL;
  if (s->finished) return 0;
  int rc = split_next_inner(s, out, error);
  if (rc != 0) {
    s->finished = 1;
    sl_builder_reset(&s->root);
    if (out->release) out->release(out);
  }
  return rc;
}

static int reader_probe(const uint8_t* head, int64_t n) {
  return n >= 4 && memcmp(head, AVRO_MAGIC, 4) == 0 ? 100 : 0;
}

static const char* const k_extensions[] = {".avro", NULL};

static const struct sl_format_reader k_avro_reader = {
    .name = "avro",
    .extensions = k_extensions,
    .probe = reader_probe,
    .open = reader_open,
    .schema = reader_schema,
    .plan_splits = reader_plan,
    .split_open = split_open,
    .split_next = split_next,
    .split_close = split_close,
    .close = reader_close,
};

const struct sl_format_reader* sl_avro_reader(void) { return &k_avro_reader; }
