// Column parts of one split, zipped back into whole batches. When a reader
// can decode a split by column subsets (sl_format_reader.split_by_columns),
// the scan engine runs one split as several parts on several workers; batch b
// of every part is parked here until all parts have it, then their children
// are moved into one struct batch in projected order. Not thread-safe: the
// scan calls it under its mutex.
#ifndef SL_SCAN_ZIP_H
#define SL_SCAN_ZIP_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/// How the projected columns are divided into parts (the same for every
/// split of a scan).
struct sl_zip_layout {
  int n_parts;
  int64_t n_columns;   ///< projected columns
  int64_t* columns;    ///< schema indexes grouped by part: part p decodes
                       ///< columns[first[p] .. first[p + 1]), in projected order
  int64_t* positions;  ///< projected position of columns[k]
  int64_t* first;      ///< n_parts + 1 entries
  /// Each part's share of the batch is part_weights[p] / total_weight (the
  /// columns' weights, or their count when no weights were given).
  int64_t* part_weights;
  int64_t total_weight;
};

/// Divides the projected columns (`columns`, NULL = 0..n_columns-1) into
/// `n_parts` parts, balanced by `weights` (estimated bytes of each projected
/// column; NULL or all zero = by count).
int sl_zip_layout_init(struct sl_zip_layout* layout, const struct sluice_allocator* alloc,
                       const int64_t* columns, int64_t n_columns, const int64_t* weights,
                       int n_parts, struct sluice_error* error);
void sl_zip_layout_free(struct sl_zip_layout* layout, const struct sluice_allocator* alloc);

/// One batch of a part, or a zipped batch: the array, its bytes in the memory
/// budget, the reader's custom metadata (owned, may be NULL).
struct sl_zip_batch {
  struct ArrowArray array;
  int64_t bytes;
  char* metadata;
  size_t metadata_size;
};

struct sl_zip;

int sl_zip_create(const struct sluice_allocator* alloc, const struct sl_zip_layout* layout,
                  int64_t split, struct sl_zip** out, struct sluice_error* error);
/// Releases whatever is still parked.
void sl_zip_free(struct sl_zip* zip);

/// Parks batch `batch` of part `part` (consumed: moved from `*in` even on
/// error). When it was the last part missing for that batch, `*out` receives
/// the zipped batch (out->array.release != NULL), else out->array.release is
/// NULL. Fails when the parts disagree (row counts, batch counts).
///
/// Budget: the first part of a batch to arrive also promises its siblings'
/// halves (`estimates`, one per part), which stay counted until the real ones
/// replace them, so that a part running ahead is held back by the memory its
/// siblings will need. `*added` receives the bytes to add to the budget (the
/// part's bytes, plus the promises it made, less the promise it kept).
int sl_zip_put(struct sl_zip* zip, int part, int64_t batch, struct sl_zip_batch* in,
               const int64_t* estimates, int64_t* added, struct sl_zip_batch* out,
               struct sluice_error* error);
/// Part `part` reached the end of the split after `n_batches` batches. Fails
/// when another part has (or ended with) a different number of batches.
int sl_zip_end(struct sl_zip* zip, int part, int64_t n_batches, struct sluice_error* error);

/// Whether part `part`, about to decode batch `batch`, is what parked batches
/// wait for: the lowest batch not yet zipped, with other parts' halves of it
/// (or of later batches) parked.
int sl_zip_holds_back(const struct sl_zip* zip, int64_t batch);
/// The lowest batch not yet zipped.
int64_t sl_zip_next_batch(const struct sl_zip* zip);
/// Whether a part has parked batch `batch` (so its siblings' halves are
/// promised).
int sl_zip_parked(const struct sl_zip* zip, int64_t batch);
/// Releases the parked batches (the split was cut short); returns their bytes
/// and the promises still open.
int64_t sl_zip_drop(struct sl_zip* zip);

#endif
