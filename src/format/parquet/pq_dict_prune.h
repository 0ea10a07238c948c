// Row-group pruning by dictionary pages (parquet-mr's DictionaryFilter): a
// column chunk whose every data page is dictionary-encoded holds no value
// outside its dictionary, so an `=` / `in` condition none of whose values
// the dictionary holds rules the row group out.
#ifndef PQ_DICT_PRUNE_H
#define PQ_DICT_PRUNE_H

#include <stdint.h>

#include "core/sl_row_filter.h"
#include "io/sl_source.h"
#include "pq_codec.h"
#include "pq_meta.h"
#include "pq_schema.h"
#include "pq_stats.h"

/// Whether the chunk's encodings list a dictionary encoding (some of its
/// pages may be dictionary-encoded).
int sl_pq_chunk_lists_dictionary(const struct pq_column_meta* m);

/// Whether every data page of the chunk may be dictionary-encoded, as far
/// as the footer tells: its encoding_stats when it has them, else whether
/// its encodings list a dictionary encoding. The page headers decide.
int sl_pq_chunk_may_be_dictionary_only(const struct pq_column_meta* m);

/// 0 when `c` is an equality (or in-list) none of whose values the
/// dictionary of its column's chunk in row group j->rg holds, so no row
/// passes: in a mapped source when the page headers show every data page of
/// the chunk dictionary-encoded; in another (with j->remote_dictionaries)
/// when its encoding_stats say so. 1 otherwise, and whenever the dictionary
/// cannot be read and decoded or the values cannot be put as the column's
/// physical values (a failed remote read also sets j->failed).
int sl_pq_condition_dictionary_may_match(struct pq_row_group_judge* j,
                                      const struct sl_filter_condition* c);

#endif
