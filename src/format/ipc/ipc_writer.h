// Arrow IPC writer: the stream format ("arrows") and the file format
// ("arrow": magic, stream messages, footer). The first two declarations are
// what the format registry uses; the rest is shared by the writer's files
// (ipc_write_schema.c, ipc_write_batch.c, ipc_writer.c) only.
#ifndef SL_IPC_WRITER_H
#define SL_IPC_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "format/sl_format.h"
#include "format/ipc/fb_build.h"

/// The IPC file writer: name "arrow", extensions .arrow .feather .ipc.
const struct sl_format_writer* sl_ipc_file_writer(void);
/// The IPC stream writer: name "arrows", extensions .arrows .stream.
const struct sl_format_writer* sl_ipc_stream_writer(void);

/* ---- Internal to src/format/ipc/ipc_write*.c ---------------------------- */

struct sl_sink;

/// One buffer of a snapshot: its bytes (a bitmap's padding bits zeroed).
struct ipc_snapshot_seg {
  uint8_t* data;
  int64_t length, cap;
};

/// A copy of a planned (uncompressed) dictionary body: what readers hold,
/// to tell whether the next batch's dictionary is the same or extends it.
/// Kept per buffer, so that a delta grows it by the new bytes only.
struct ipc_snapshot {
  int64_t* nodes;  ///< (length, null_count) pairs
  int64_t n_nodes, cap_nodes;
  struct ipc_snapshot_seg* segs;
  int64_t n_segs, cap_segs;
  int valid;       ///< holds a body
};

/// One dictionary-encoded field of the schema; its id is its index in
/// ipc_dicts (pre-order over the schema, descending into dictionary values).
struct ipc_dict_entry {
  const struct ArrowSchema* field;  ///< the node with ->dictionary set
  const char* column;               ///< top-level column name, for errors
  int written;                      ///< a DictionaryBatch was emitted
  struct ipc_snapshot last;         ///< the dictionary readers now hold
  int64_t last_length;              ///< its rows
  int held_nulls;                   ///< a dictionary written for it held a null value
};

struct ipc_dicts {
  const struct sluice_allocator* alloc;
  struct ipc_dict_entry* items;
  int64_t n;
  int64_t cap;
};

/// Finds every dictionary-encoded node of `root` (a struct schema) and gives
/// it an id.
int sl_ipc_dicts_collect(struct ipc_dicts* dicts, const struct sluice_allocator* alloc,
                      const struct ArrowSchema* root, struct sluice_error* error);
void sl_ipc_dicts_free(struct ipc_dicts* dicts);
/// The id of a dictionary-encoded node, or -1.
int64_t sl_ipc_dicts_find(const struct ipc_dicts* dicts, const struct ArrowSchema* field);

/// Builds a Schema table for `root` (a struct schema: one Field per child,
/// its metadata as the schema's custom_metadata).
int sl_ipc_build_schema(struct fb_builder* b, const struct ArrowSchema* root,
                     const struct ipc_dicts* dicts, fb_ref* out, struct sluice_error* error);

/// Builds a [KeyValue] vector from a C Data Interface metadata blob (`meta`,
/// may be NULL: *out = 0). `what` names the owner in errors.
int sl_ipc_build_kv_metadata(struct fb_builder* b, const char* meta, const char* what, fb_ref* out,
                          struct sluice_error* error);

/// Compression of message bodies.
enum ipc_codec { IPC_CODEC_NONE = 0, IPC_CODEC_LZ4, IPC_CODEC_ZSTD };

/// One body buffer as it will be written: optionally an int64 prefix (the
/// uncompressed length in compressed bodies), then `length` bytes at `data`
/// (array memory, or scratch owned by the body).
struct ipc_segment {
  const uint8_t* data;
  int64_t length;
  int64_t prefix;
  int has_prefix;
  /// Bitmaps: the bits that matter (the last byte's high bits are whatever
  /// the producer left there and must not make two dictionaries differ).
  /// 0 for other buffers.
  int64_t bits;
  /// What keeps `data` alive when it is an array's own buffer (not scratch),
  /// or NULL: lets the writer copy file-backed bytes in the kernel.
  struct sl_ref* owner;
};

/// A dictionary met while planning a body, to be written before it.
struct ipc_pending_dict {
  int64_t id;
  const struct ArrowArray* array;
};

/// The body of one RecordBatch / DictionaryBatch: field nodes, buffers, and
/// the scratch memory behind rebased offsets, shifted bitmaps and compressed
/// buffers. Reused from batch to batch.
struct ipc_body {
  const struct sluice_allocator* alloc;
  int64_t length;  ///< rows
  int64_t* nodes;  ///< (length, null_count) pairs, pre-order
  int64_t n_nodes, cap_nodes;
  struct ipc_segment* segs;
  int64_t n_segs, cap_segs;
  struct ipc_scratch* scratch;
  int64_t n_scratch, cap_scratch;
  struct ipc_pending_dict* pending;
  int64_t n_pending, cap_pending;
  enum ipc_codec codec;  ///< set by sl_ipc_body_compress
};

void sl_ipc_body_init(struct ipc_body* body, const struct sluice_allocator* alloc);
/// Forgets the planned body and frees its scratch memory (keeps capacity).
void sl_ipc_body_reset(struct ipc_body* body);
void sl_ipc_body_free(struct ipc_body* body);

/// Plans the body of a record batch: `array` is a struct array matching
/// `root`; its children are the columns.
int sl_ipc_body_plan_batch(struct ipc_body* body, const struct ArrowSchema* root,
                        const struct ArrowArray* array, const struct ipc_dicts* dicts,
                        struct sluice_error* error);
/// Plans the body of a dictionary batch for dictionary `id` from rows
/// [start, start + length) of `array` (the dictionary values): a slice is a
/// prefix to compare with the last dictionary, or the tail for a delta.
int sl_ipc_body_plan_dictionary(struct ipc_body* body, const struct ipc_dicts* dicts, int64_t id,
                             const struct ArrowArray* array, int64_t start, int64_t length,
                             struct sluice_error* error);

/// Compresses every non-empty buffer (each gets its int64 length prefix).
/// `zstd_ctx` is a ZSTD_CCtx* for IPC_CODEC_ZSTD.
int sl_ipc_body_compress(struct ipc_body* body, enum ipc_codec codec, void* zstd_ctx,
                      struct sluice_error* error);

/// Whether the planned (uncompressed) body equals a snapshot.
int sl_ipc_body_equals(const struct ipc_body* body, const struct ipc_snapshot* snapshot);
/// Makes `snapshot` a copy of the planned (uncompressed) body.
int sl_ipc_snapshot_set(struct ipc_snapshot* snapshot, const struct sluice_allocator* alloc,
                        const struct ipc_body* body, struct sluice_error* error);
/// Makes `snapshot`, which equals `prefix` (rows [0, k) of an array),
/// a copy of `body` (rows [0, n) of the same array, n >= k), copying only
/// the bytes `body` has past `prefix` in each buffer that `prefix` is a
/// prefix of (the others whole).
int sl_ipc_snapshot_extend(struct ipc_snapshot* snapshot, const struct sluice_allocator* alloc,
                           const struct ipc_body* prefix, const struct ipc_body* body,
                           struct sluice_error* error);
void sl_ipc_snapshot_free(struct ipc_snapshot* snapshot, const struct sluice_allocator* alloc);

/// Where a message landed (for the file footer's Blocks).
struct ipc_block {
  int64_t offset;
  int32_t metadata_length;
  int64_t body_length;
};

/// Writes a RecordBatch message (dict_id < 0) or a DictionaryBatch message
/// with the planned body; `metadata` (a C Data Interface metadata blob, or
/// NULL) becomes the message's custom_metadata.
int sl_ipc_write_body_message(struct sl_sink* sink, struct fb_builder* b,
                           const struct ipc_body* body, int64_t dict_id, int is_delta,
                           const char* metadata, struct ipc_block* block,
                           struct sluice_error* error);

/// Writes one encapsulated message with the finished flatbuffer `meta`
/// (continuation marker, length, metadata, padding); the body follows it.
int sl_ipc_write_message_header(struct sl_sink* sink, const uint8_t* meta, size_t meta_size,
                             struct ipc_block* block, struct sluice_error* error);

#endif
