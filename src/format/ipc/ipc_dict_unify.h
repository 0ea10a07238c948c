// One growing dictionary per string/binary dictionary column (or list of
// them), so that an
// IPC file (which cannot replace a dictionary) takes batches whose
// dictionaries differ. See ipc_dict_unify.c.
#ifndef IPC_DICT_UNIFY_H
#define IPC_DICT_UNIFY_H

#include <stdint.h>

#include "sluice.h"
#include "core/sl_buffer.h"

struct ipc_unify_column;

struct ipc_unify {
  const struct sluice_allocator* alloc;
  struct ipc_unify_column* cols;
  int64_t n, cap;
};

/// A batch as the writer sees it: `root` is the input batch with the
/// unified columns swapped in (views; nothing here owns the input). Valid
/// until sl_ipc_unified_batch_free, and while the input batch lives.
struct ipc_unified_batch {
  struct ArrowArray root;
  const struct sluice_allocator* alloc;
  struct ArrowArray** children;
  struct ArrowArray* columns;  ///< the swapped-in column nodes
  struct ArrowArray* dicts;    ///< their grown dictionaries
  uint8_t** index_bufs;        ///< remapped indices (NULL: the input's kept)
  int64_t* index_sizes;
  const void* (*buffer_lists)[2];
  const void* (*dict_buffers)[3];
  struct ArrowArray* lists;    ///< list columns whose values were swapped
  struct ArrowArray** list_children;
  int64_t n;
};

/// Picks the top-level columns of `schema` to unify, or the values of its
/// list, large list and fixed-size list columns: dictionary-encoded with
/// integer indices and utf8 / large_utf8 / binary / large_binary values.
int sl_ipc_unify_init(struct ipc_unify* u, const struct ArrowSchema* schema,
                   const struct sluice_allocator* alloc, struct sluice_error* error);
/// Maps `batch` onto the grown dictionaries (growing them). A dictionary
/// with null values is left as it is. Errors: more values than the index
/// type holds, an index out of range, out of memory.
int sl_ipc_unify_batch(struct ipc_unify* u, const struct ArrowArray* batch,
                    struct ipc_unified_batch* out, struct sluice_error* error);
void sl_ipc_unified_batch_free(struct ipc_unified_batch* b);
void sl_ipc_unify_free(struct ipc_unify* u);

#endif
