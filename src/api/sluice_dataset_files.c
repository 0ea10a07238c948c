// Many objects read as one table (see sluice_dataset_files.h).
#include "sluice_dataset_files.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "../core/sl_alloc.h"
#include "../core/sl_array.h"
#include "../core/sl_array_cast.h"
#include "../core/sl_type.h"
#include "../core/sl_builder.h"
#include "../core/sl_error.h"
#include "../core/sl_parallel.h"
#include "../core/sl_row_filter.h"
#include "../io/sl_source_file.h"
#include "sluice_dataset_hive.h"

/// One object: its source, the real format's reader over it, and where its
/// splits start in the dataset's plan.
struct files_part {
  char* name;
  struct sl_source* source;
  void* reader;
  int64_t first_split;  // index in the dataset's plan of this part's split 0
  struct sl_split* splits;
  int64_t n_splits;
  /// Split closes in this scan and splits open now (a split decoded by
  /// column parts is open more than once): when every split has closed and
  /// none is open, the source is told the reader is done with the object
  /// (sl_source_drop), so that a remote object's cached bytes go and a scan
  /// over many objects holds only those being read. Then it counts again.
  atomic_llong closed;
  atomic_llong open;
  int64_t n_columns;  ///< the object's own
  /// union_by_name: dataset column c is this object's column columns_of[c]
  /// (FILES_NO_COLUMN: the object has none of that name, its rows are null
  /// there; FILES_NULL_COLUMN: its column is of type null, read as nulls of
  /// the dataset's type). Also without union_by_name when some column is
  /// of type null. NULL: the object has the dataset's columns, in its order.
  int64_t* columns_of;
  /// The object's own schema, kept when some of its columns are of another
  /// type than the dataset's that joins with it (sl_cast_join: polars'
  /// large_string beside pyarrow's string, int32 beside int64): its batches
  /// are cast. Else released (release NULL).
  struct ArrowSchema own_types;
};

/// files_part.columns_of for a column the object lacks, and for one it has
/// as type null (an all-None pandas column: pyarrow writes it so), which
/// joins any type, as in DuckDB's union_by_name and pyarrow's
/// concat_tables(promote_options="default"). Both read as nulls; only a
/// lacking column takes a partition key's value.
#define FILES_NO_COLUMN (-1)
#define FILES_NULL_COLUMN (-2)

/// Objects ahead of the one a split opens that fetch ahead meanwhile: up to
/// this many, while the bytes they may hold (each its size or its
/// readahead's bound, an eighth of the budget) stay under two readaheads'.
/// Small objects are latency-bound: several in flight hide the round trips.
#define FILES_PREFETCH_OBJECTS 8
#define FILES_DEFAULT_READAHEAD ((int64_t)32 << 20)

struct sl_files_reader {
  struct sl_format_reader vtable;  // the real format's name, our functions
  const struct sl_format_reader* format;
  const struct sluice_allocator* alloc;
  struct files_part* parts;
  int64_t n_parts;
  int64_t n_splits;  // all parts' splits
  /// Partition columns, after the objects' own `n_file_cols` columns: the
  /// hive keys hive_keys[0..n_hive_cols) (keys that name a column of the
  /// objects are not added: the objects' values win, as in polars).
  struct sl_hive hive;
  int64_t n_file_cols;
  int64_t* hive_keys;
  int64_t n_hive_cols;
  int64_t readahead;  ///< bytes a remote object's readahead may hold
  /// union_by_name: the objects' columns matched by name, each once in the
  /// order first met (DuckDB's union_by_name); else not set (release NULL).
  struct ArrowSchema unified;
  /// union_by_name with partitions: the partition key named like unified
  /// column c, or -1 (n_file_cols entries; NULL when none is).
  int64_t* key_of_column;
  int by_name;  ///< union_by_name: a refine matches the objects' types by name again
};

/// Where an output column of a split with partition columns, or of an
/// object that lacks some of the dataset's columns, comes from.
struct files_out_column {
  int64_t from_batch;  ///< child of the object reader's batch, or -1
  int64_t hive_key;    ///< the partition key, or -1
  int64_t missing;     ///< else: nulls of the dataset's (unified) column `missing`
  /// from_batch: its type, and the dataset's it is cast to (NULL: the same)
  const struct ArrowSchema* cast_from;
  const struct ArrowSchema* cast_to;
};

/// A split being decoded: which part's reader it belongs to and, when the
/// dataset has partition columns, how its batches are widened (out == NULL:
/// the object reader's batches pass through).
struct files_split_state {
  struct files_part* part;
  const struct sl_format_reader* format;
  void* state;
  const struct sluice_allocator* alloc;
  const struct sl_hive* hive;
  const struct ArrowSchema* unified;  ///< the types of `missing` columns
  int64_t object;
  struct files_out_column* out;
  int64_t n_out;
  /// The scan's struct fields in the object's column numbers (the split's
  /// `fields` while it decodes), over the two arrays below.
  struct sl_split_fields fields;
  int64_t* fields_column;
  const int64_t** fields_path;
  int64_t fields_cap;  ///< entries allocated
};

/// The bytes of a files_part.columns_of for `n` dataset columns.
static size_t columns_of_size(int64_t n) { return (size_t)(n > 0 ? n : 1) * sizeof(int64_t); }

static void files_close(void* reader) {
  struct sl_files_reader* f = reader;
  if (f == NULL) return;
  for (int64_t i = 0; i < f->n_parts; ++i) {
    struct files_part* p = &f->parts[i];
    sl_free(f->alloc, p->splits, (size_t)p->n_splits * sizeof *p->splits);
    if (p->reader != NULL) f->format->close(p->reader);
    sl_source_close(p->source);
    if (p->name != NULL) sl_free(f->alloc, p->name, strlen(p->name) + 1);
    if (p->columns_of != NULL) sl_free(f->alloc, p->columns_of, columns_of_size(f->n_file_cols));
    if (p->own_types.release != NULL) p->own_types.release(&p->own_types);
  }
  if (f->unified.release != NULL) f->unified.release(&f->unified);
  if (f->key_of_column != NULL) {
    sl_free(f->alloc, f->key_of_column, columns_of_size(f->n_file_cols));
  }
  sl_free(f->alloc, f->parts, (size_t)f->n_parts * sizeof *f->parts);
  if (f->hive_keys != NULL) {
    sl_free(f->alloc, f->hive_keys, (size_t)f->hive.n_keys * sizeof *f->hive_keys);
  }
  sl_hive_free(&f->hive, f->alloc);
  sl_free(f->alloc, f, sizeof *f);
}

/// Whether the children of a node of this format are a list's element or
/// a map's entries, whose names carry no meaning (Arrow's type equality
/// ignores them): `item` and `element` name the same list type.
static int unnamed_children(const char* format) {
  struct sl_type t;
  if (sl_type_parse(format, &t, NULL) != 0) return 0;
  return t.id == SL_TYPE_LIST || t.id == SL_TYPE_LARGE_LIST || t.id == SL_TYPE_FIXED_SIZE_LIST ||
         t.id == SL_TYPE_MAP;
}

/// schema_differs; `named` is 1 where the node's name counts, 0 for a list
/// element or map entries, -1 for map entries (whose key and value names
/// do not count either); `ref` names where `a` is from ("the first").
static int differs(const struct ArrowSchema* a, const struct ArrowSchema* b, const char* path,
                   char* why, size_t cap, int named, const char* ref) {
  const char* an = a->name != NULL ? a->name : "";
  const char* bn = b->name != NULL ? b->name : "";
  if (named > 0 && strcmp(an, bn) != 0) {
    snprintf(why, cap, "column '%s%s' here, '%s%s' in %s", path, bn, path, an, ref);
    return 1;
  }
  // (before the formats: a dictionary's format is its index type's)
  if ((a->dictionary == NULL) != (b->dictionary == NULL)) {
    snprintf(why, cap, "column '%s%s' is dictionary-encoded in only one of them", path, an);
    return 1;
  }
  if (strcmp(a->format, b->format) != 0) {
    char here[64], first[64];
    sl_format_name(b->format, here, sizeof here);
    sl_format_name(a->format, first, sizeof first);
    snprintf(why, cap, "column '%s%s' is of type %s here, %s in %s", path, an, here, first,
             ref);
    return 1;
  }
  if (a->n_children != b->n_children) {
    if (path[0] == '\0' && an[0] == '\0') {
      snprintf(why, cap, "%lld columns here, %lld in %s", (long long)b->n_children,
               (long long)a->n_children, ref);
    } else {
      snprintf(why, cap, "'%s%s' has %lld fields here, %lld in %s", path, an,
               (long long)b->n_children, (long long)a->n_children, ref);
    }
    return 1;
  }
  char sub[256];
  snprintf(sub, sizeof sub, "%s%s%s", path, an, an[0] != '\0' ? "." : "");
  int kids = named < 0 ? 0 : strcmp(a->format, "+m") == 0 ? -1 : !unnamed_children(a->format);
  for (int64_t i = 0; i < a->n_children; ++i) {
    if (differs(a->children[i], b->children[i], sub, why, cap, kids, ref)) return 1;
  }
  if (a->dictionary != NULL) return differs(a->dictionary, b->dictionary, sub, why, cap, 1, ref);
  return 0;
}

/// 0 when `a` and `b` have the same type tree (formats, names, children,
/// dictionaries; nullability, metadata and the names of list elements and
/// map entries aside); otherwise writes the first difference, at `path`,
/// into `why`. The dataset's type is the first object's: the others'
/// batches are read under its names.
static int schema_differs(const struct ArrowSchema* a, const struct ArrowSchema* b,
                          const char* path, char* why, size_t cap) {
  return differs(a, b, path, why, cap, 1, "the first");
}

/// Makes `into` nullable wherever `other` (of the same shape) is.
static void merge_nullable(struct ArrowSchema* into, const struct ArrowSchema* other) {
  into->flags |= other->flags & ARROW_FLAG_NULLABLE;
  // (a field of type null in `other`, read as nulls of into's type: into
  // is nullable there already, join_into, and other has no children)
  if (into->n_children != other->n_children) return;
  for (int64_t i = 0; i < into->n_children; ++i) {
    merge_nullable(into->children[i], other->children[i]);
  }
  if (into->dictionary != NULL && other->dictionary != NULL) {
    merge_nullable(into->dictionary, other->dictionary);
  }
}

/// Widens the objects' schema `*out` with the partition columns (nullable,
/// after the objects' columns); its fields move, its metadata is copied.
static int add_partition_fields(const struct sl_files_reader* f, struct ArrowSchema* out,
                                struct sluice_error* error) {
  struct ArrowSchema wide;
  int64_t n = out->n_children;
  int rc = sl_schema_init(&wide, f->alloc, out->format, out->name, out->flags,
                          n + f->n_hive_cols, error);
  if (rc == 0 && out->metadata != NULL) {
    rc = sl_schema_set_metadata(&wide, out->metadata, error);
  }
  for (int64_t j = 0; rc == 0 && j < f->n_hive_cols; ++j) {
    int64_t k = f->hive_keys[j];
    rc = sl_schema_init(wide.children[n + j], f->alloc, f->hive.formats[k], f->hive.keys[k],
                        ARROW_FLAG_NULLABLE, 0, error);
  }
  if (rc != 0) {
    if (wide.release != NULL) wide.release(&wide);
    out->release(out);
    return rc;
  }
  for (int64_t i = 0; i < n; ++i) {  // moved: the old parent no longer releases them
    *wide.children[i] = *out->children[i];
    out->children[i]->release = NULL;
  }
  out->release(out);
  *out = wide;
  return 0;
}

/// Whether two objects' columns differ in number or names (what
/// union_by_name can read), not only in types.
static int names_differ(const struct ArrowSchema* a, const struct ArrowSchema* b) {
  if (a->n_children != b->n_children) return 1;
  for (int64_t c = 0; c < a->n_children; ++c) {
    const char* an = a->children[c]->name != NULL ? a->children[c]->name : "";
    const char* bn = b->children[c]->name != NULL ? b->children[c]->name : "";
    if (strcmp(an, bn) != 0) return 1;
  }
  return 0;
}

/// The error for object i, whose columns do not read as the first's: `why`
/// (union_by_name is proposed only when `by_name`: names differ).
static int columns_differ(const struct sl_files_reader* f, int64_t i, const char* why,
                          int by_name, struct sluice_error* error) {
  return sl_error_set(error, EINVAL, "%s: its columns differ from those of %s, the first object: "
                      "%s; read the objects separately%s",
                      f->parts[i].name, f->parts[0].name, why,
                      by_name ? ", or match their columns by name (--union-by-name; Python "
                                  "union_by_name=True)" : "");
}

static int files_schema(void* reader, struct ArrowSchema* out, struct sluice_error* error) {
  struct sl_files_reader* f = reader;
  out->release = NULL;
  if (f->unified.release != NULL) {
    SL_RETURN_NOT_OK(sl_schema_copy(&f->unified, f->alloc, out, error));
    return f->n_hive_cols > 0 ? add_partition_fields(f, out, error) : 0;
  }
  if (f->format->schema(f->parts[0].reader, out, error) != 0) {
    return sl_error_name(error, f->parts[0].name);
  }
  for (int64_t i = 1; i < f->n_parts; ++i) {
    struct ArrowSchema other = {0};
    int rc = f->format->schema(f->parts[i].reader, &other, error);
    if (rc != 0) sl_error_name(error, f->parts[i].name);
    char why[512];
    if (rc == 0 && schema_differs(out, &other, "", why, sizeof why)) {
      rc = columns_differ(f, i, why, names_differ(out, &other), error);
    }
    if (rc == 0) merge_nullable(out, &other);
    if (other.release != NULL) other.release(&other);
    if (rc != 0) {
      out->release(out);
      return rc;
    }
  }
  return f->n_hive_cols > 0 ? add_partition_fields(f, out, error) : 0;
}

static int files_plan_splits(void* reader, struct sl_split** splits, int64_t* n,
                             struct sluice_error* error) {
  struct sl_files_reader* f = reader;
  *splits = NULL;
  *n = 0;
  if (f->n_splits == 0) return 0;
  struct sl_split* all = sl_alloc(f->alloc, (size_t)f->n_splits * sizeof *all);
  if (all == NULL) return sl_error_set(error, ENOMEM, "out of memory planning splits");
  for (int64_t i = 0; i < f->n_parts; ++i) {
    const struct files_part* p = &f->parts[i];
    for (int64_t s = 0; s < p->n_splits; ++s) {
      all[p->first_split + s] = p->splits[s];
      all[p->first_split + s].index = p->first_split + s;
    }
  }
  *splits = all;
  *n = f->n_splits;
  return 0;
}

/// Each object's reader counts its own splits' rows (their place in `splits`
/// is the object's first_split).
static int files_count_split_rows(void* reader, struct sl_split* splits, int64_t n,
                                  struct sluice_error* error) {
  struct sl_files_reader* f = reader;
  for (int64_t i = 0; i < f->n_parts; ++i) {
    const struct files_part* p = &f->parts[i];
    if (p->first_split + p->n_splits > n) break;
    SL_RETURN_NOT_OK(f->format->count_split_rows(p->reader, splits + p->first_split, p->n_splits,
                                                 error));
  }
  return 0;
}

static int holds_no_rows(const struct sl_files_reader* f, int64_t i) {
  return f->format->holds_no_rows != NULL && f->format->holds_no_rows(f->parts[i].reader);
}

/// Widens the types each object's reader inferred from its own sample until
/// all read with one schema (as DuckDB and polars read a glob of CSV files):
/// the first object with rows widens to fit every other with rows, then every
/// other takes its types (those without rows, a CSV header alone, as they are;
/// a column an object's sample held only nulls in takes the others' type).
static int unify_parts(struct sl_files_reader* f, int* changed, struct sluice_error* error) {
  if (f->format->widen_to == NULL) return 0;
  int64_t ref = 0;
  while (ref + 1 < f->n_parts && holds_no_rows(f, ref)) ++ref;
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t i = 0; i < f->n_parts; ++i) {
      if (i == ref || (pass == 0 && holds_no_rows(f, i))) continue;
      void* from = pass == 0 ? f->parts[i].reader : f->parts[ref].reader;
      void* to = pass == 0 ? f->parts[ref].reader : f->parts[i].reader;
      int widened = 0;
      SL_RETURN_NOT_OK(f->format->widen_to(to, from, NULL, &widened, error));
      *changed |= widened;
    }
  }
  return 0;
}

static int unify_by_name(struct sl_files_reader* f, struct sluice_error* error);
static int keys_of_columns(struct sl_files_reader* f, struct sluice_error* error);

/// Whether some object's own column behind dataset column `column` has a
/// type that object inferred and may still widen (partition keys do not).
static int files_type_inferred(void* reader, int64_t column) {
  struct sl_files_reader* f = reader;
  if (column < 0 || column >= f->n_file_cols) return 0;
  for (int64_t i = 0; i < f->n_parts; ++i) {
    const struct files_part* p = &f->parts[i];
    int64_t c = p->columns_of != NULL ? p->columns_of[column] : column;
    if (c >= 0 && f->format->type_inferred(p->reader, c)) return 1;
  }
  return 0;
}

/// Each object's reader refines its own types, and then all are unified
/// again (by name with union_by_name: the dataset's types are made anew
/// from the objects' widened ones).
static int files_refine(void* reader, int* changed, struct sluice_error* error) {
  struct sl_files_reader* f = reader;
  *changed = 0;
  for (int64_t i = 0; i < f->n_parts; ++i) {
    int part_changed = 0;
    SL_RETURN_NOT_OK(f->format->refine(f->parts[i].reader, &part_changed, error));
    *changed |= part_changed;
  }
  if (!*changed) return 0;
  if (!f->by_name) return unify_parts(f, changed, error);
  for (int64_t i = 0; i < f->n_parts; ++i) {
    struct files_part* p = &f->parts[i];
    if (p->columns_of != NULL) sl_free(f->alloc, p->columns_of, columns_of_size(f->n_file_cols));
    p->columns_of = NULL;
    if (p->own_types.release != NULL) p->own_types.release(&p->own_types);
  }
  if (f->unified.release != NULL) f->unified.release(&f->unified);
  if (f->key_of_column != NULL) {
    sl_free(f->alloc, f->key_of_column, columns_of_size(f->n_file_cols));
    f->key_of_column = NULL;
  }
  SL_RETURN_NOT_OK(unify_by_name(f, error));
  return f->hive.n_keys > 0 ? keys_of_columns(f, error) : 0;
}

/// The part whose splits include the dataset's split `index`.
static struct files_part* part_of(struct sl_files_reader* f, int64_t index) {
  int64_t lo = 0, hi = f->n_parts - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (f->parts[mid].first_split <= index) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return &f->parts[lo];
}

/// How the columns asked of a dataset with partition columns are made: out
/// column k comes from the object reader's answer (child from_batch of it)
/// or from a partition key. `file` are the columns to ask the object's
/// reader for: at least one (a reader asked for none may answer all; an
/// answer with none would have no row count).
struct column_plan {
  struct files_out_column* out;  ///< NULL: only file columns are asked for
  int64_t n_out;
  int64_t* file;  ///< n_out + 1 allocated
  int64_t n_file;
};

static void column_plan_free(const struct sl_files_reader* f, struct column_plan* p) {
  if (p->out != NULL) sl_free(f->alloc, p->out, (size_t)p->n_out * sizeof *p->out);
  if (p->file != NULL) sl_free(f->alloc, p->file, (size_t)(p->n_out + 1) * sizeof *p->file);
  memset(p, 0, sizeof *p);
}

/// The plan for `columns` (NULL = all) of object `part`; p->out stays NULL
/// when none is a partition column and the object has the dataset's columns.
static int plan_columns(const struct sl_files_reader* f, const struct files_part* part,
                        const int64_t* columns, int64_t n_columns, struct column_plan* p,
                        struct sluice_error* error) {
  memset(p, 0, sizeof *p);
  int64_t n_out = columns != NULL ? n_columns : f->n_file_cols + f->n_hive_cols;
  int any_hive = 0;
  for (int64_t k = 0; k < n_out; ++k) {
    int64_t c = columns != NULL ? columns[k] : k;
    if (c < 0 || c >= f->n_file_cols + f->n_hive_cols) {
      return sl_error_set(error, EINVAL, "column %lld is not in the dataset", (long long)c);
    }
    any_hive |= c >= f->n_file_cols;
  }
  if (!any_hive && part->columns_of == NULL && part->own_types.release == NULL) return 0;
  p->n_out = n_out;  // >= 1: a partition column is asked for
  p->out = sl_calloc(f->alloc, (size_t)n_out, sizeof *p->out);
  p->file = sl_alloc(f->alloc, (size_t)(n_out + 1) * sizeof *p->file);
  if (p->out == NULL || p->file == NULL) {
    column_plan_free(f, p);
    return sl_error_set(error, ENOMEM, "out of memory");
  }
  for (int64_t k = 0; k < n_out; ++k) {
    int64_t c = columns != NULL ? columns[k] : k;
    int64_t own = c < f->n_file_cols && part->columns_of != NULL ? part->columns_of[c] : c;
    if (c >= f->n_file_cols) {
      p->out[k] = (struct files_out_column){-1, f->hive_keys[c - f->n_file_cols], -1, NULL, NULL};
    } else if (own == FILES_NO_COLUMN && f->key_of_column != NULL && f->key_of_column[c] >= 0) {
      // A column the object lacks but its directory names: the value there.
      p->out[k] = (struct files_out_column){-1, f->key_of_column[c], -1, NULL, NULL};
    } else if (own < 0) {
      p->out[k] = (struct files_out_column){-1, -1, c, NULL, NULL};
    } else {
      p->out[k] = (struct files_out_column){p->n_file, -1, -1, NULL, NULL};
      const struct ArrowSchema* theirs =
          part->own_types.release != NULL ? part->own_types.children[own] : NULL;
      if (theirs != NULL && sl_types_differ(theirs, f->unified.children[c])) {
        p->out[k].cast_from = theirs;
        p->out[k].cast_to = f->unified.children[c];
      }
      p->file[p->n_file++] = own;
    }
  }
  // Read for the row counts only: the object's cheapest column (its
  // smallest chunks, where the format tells); an object without columns is
  // asked for none, and answers its rows with none.
  if (p->n_file == 0 && part->n_columns > 0) {
    int64_t cheapest = 0, least = -1;
    for (int64_t j = 0; f->format->column_bytes != NULL && j < part->n_columns; ++j) {
      int64_t bytes = f->format->column_bytes(part->reader, j);
      if (bytes >= 0 && (least < 0 || bytes < least)) cheapest = j, least = bytes;
    }
    p->file[p->n_file++] = cheapest;
  }
  return 0;
}

/// `*out` becomes the struct `from` widened by plan `cols` (n_cols): its
/// children move across, each partition column is object's constant for
/// from's rows (its offset included: moved children keep their windows).
/// `from` is consumed either way.
static int widen_struct(const struct sl_hive* hive, const struct ArrowSchema* unified,
                        int64_t object, const struct files_out_column* cols, int64_t n_cols,
                        const struct sluice_allocator* alloc, struct ArrowArray* from,
                        struct ArrowArray* out, const char* name, struct sluice_error* error) {
  int rc = sl_array_init(out, alloc, 1, n_cols, error);
  for (int64_t k = 0; rc == 0 && k < n_cols; ++k) {
    const struct files_out_column* c = &cols[k];
    if (c->missing >= 0) {
      rc = sl_array_nulls(unified->children[c->missing], from->offset + from->length, alloc,
                       out->children[k], error);
    } else if (c->from_batch < 0) {
      rc = sl_hive_column(hive, c->hive_key, object, from->offset + from->length, alloc,
                          out->children[k], error);
    } else if (c->from_batch < from->n_children && from->children[c->from_batch]->release &&
               c->cast_to != NULL) {
      rc = sl_array_cast_type(c->cast_from, from->children[c->from_batch], c->cast_to, alloc,
                              out->children[k], error);
      if (rc != 0) {
        rc = sl_error_prefix(error, "%s: column '%s' as the dataset's type (the objects' "
                             "types joined)", name,
                             c->cast_to->name != NULL ? c->cast_to->name : "");
      }
    } else if (c->from_batch < from->n_children && from->children[c->from_batch]->release) {
      sl_array_move(from->children[c->from_batch], out->children[k]);
    } else {
      rc = sl_error_set(error, EINVAL, "%s: a batch without its column %lld", name,
                        (long long)c->from_batch);
    }
  }
  if (rc == 0) {
    out->length = from->length;
    out->offset = from->offset;
  } else if (out->release != NULL) {
    out->release(out);
  }
  from->release(from);
  return rc;
}

/// The object's reader judges its own split; objects share the first
/// one's column positions (as files_split_open assumes).
static int files_split_may_match(void* reader, const struct sl_split* split,
                                 const struct sl_row_filter* filter) {
  struct sl_files_reader* f = reader;
  if (split->index < 0 || split->index >= f->n_splits) return 1;
  for (int k = 0; k < filter->n_conditions; ++k) {
    if (filter->conditions[k].column >= f->n_file_cols) return 1;  // a partition column
  }
  struct files_part* part = part_of(f, split->index);
  struct sl_split one = part->splits[split->index - part->first_split];
  if (part->columns_of == NULL) return f->format->split_may_match(part->reader, &one, filter);
  // union_by_name: the conditions on the object's own columns, renumbered;
  // a group with a condition on a column the object lacks (or has as type
  // null) holds for none of its rows (a null passes none), unless a
  // partition key fills the column (that condition is dropped: the rest
  // still bound the group).
  size_t own_size = (size_t)(filter->n_conditions > 0 ? filter->n_conditions : 1) *
                    sizeof(struct sl_filter_condition);
  struct sl_filter_condition* own = sl_alloc(f->alloc, own_size);
  if (own == NULL) return 1;  // unsure: read it
  int n_own = 0, n_groups = 0, unbounded = 0;
  for (int k = 0; k < filter->n_conditions;) {
    int g = filter->conditions[k].group, end = k, dead = 0;
    while (end < filter->n_conditions && filter->conditions[end].group == g) {
      int64_t has = part->columns_of[filter->conditions[end].column];
      dead |= has == FILES_NULL_COLUMN ||
              (has == FILES_NO_COLUMN &&
               (f->key_of_column == NULL || f->key_of_column[filter->conditions[end].column] < 0));
      ++end;
    }
    for (int j = k; j < end && !dead; ++j) {
      int64_t c = part->columns_of[filter->conditions[j].column];
      if (c < 0) continue;
      own[n_own] = filter->conditions[j];
      own[n_own].column = c;
      own[n_own++].group = n_groups;
    }
    // A group left without conditions may hold for any row.
    unbounded |= !dead && (n_own == 0 || own[n_own - 1].group != n_groups);
    n_groups += !dead;
    k = end;
  }
  struct sl_row_filter mapped = {n_own, own, n_groups, f->alloc, filter->pending};
  int may = unbounded || (n_groups > 0 && f->format->split_may_match(part->reader, &one, &mapped));
  sl_free(f->alloc, own, own_size);
  return may;
}

static void free_object_fields(struct files_split_state* s) {
  size_t n = (size_t)s->fields_cap;
  if (s->fields_column != NULL) sl_free(s->alloc, s->fields_column, n * sizeof *s->fields_column);
  if (s->fields_path != NULL) sl_free(s->alloc, s->fields_path, n * sizeof *s->fields_path);
}

/// The scan's struct fields (`fields`, of dataset columns) as object
/// `part`'s: each column in the object's numbering, and only columns the
/// object holds with the dataset's type (a cast one keeps all its fields).
/// *mapped = NULL when none is left. ENOMEM.
static int object_fields(const struct sl_files_reader* f, const struct files_part* part,
                         const struct sl_split_fields* fields, struct files_split_state* s,
                         const struct sl_split_fields** mapped) {
  *mapped = NULL;
  if (fields == NULL || fields->n == 0) return 0;
  size_t n = (size_t)fields->n;
  s->fields_cap = fields->n;
  s->fields_column = sl_alloc(s->alloc, n * sizeof *s->fields_column);
  s->fields_path = sl_alloc(s->alloc, n * sizeof *s->fields_path);
  if (s->fields_column == NULL || s->fields_path == NULL) return ENOMEM;
  int64_t m = 0;
  for (int64_t k = 0; k < fields->n; ++k) {
    int64_t c = fields->column[k];
    if (c < 0 || c >= f->n_file_cols) continue;
    int64_t own = part->columns_of != NULL ? part->columns_of[c] : c;
    if (own < 0) continue;
    const struct ArrowSchema* theirs =
        part->own_types.release != NULL ? part->own_types.children[own] : NULL;
    if (theirs != NULL && sl_types_differ(theirs, f->unified.children[c])) continue;
    s->fields_column[m] = own;
    s->fields_path[m++] = fields->path[k];
  }
  s->fields = (struct sl_split_fields){m, s->fields_column, s->fields_path};
  if (m > 0) *mapped = &s->fields;
  return 0;
}

static int files_split_open(void* reader, const struct sl_split* split, const int64_t* columns,
                            int64_t n_columns, void** state, int* projected,
                            struct sluice_error* error) {
  struct sl_files_reader* f = reader;
  *state = NULL;
  if (split->index < 0 || split->index >= f->n_splits) {
    return sl_error_set(error, EINVAL, "split %lld is not in the plan", (long long)split->index);
  }
  struct files_part* part = part_of(f, split->index);
  // The next objects start downloading while this one decodes (those read
  // forward: streams, compressed CSV); opening them all before the scan
  // fetched nothing past their heads.
  int64_t ahead = 0;
  for (int64_t k = 1; k <= FILES_PREFETCH_OBJECTS && part - f->parts + k < f->n_parts &&
                      ahead < 2 * f->readahead;
       ++k) {
    sl_source_prefetch(part[k].source);
    int64_t size = part[k].source->size;
    ahead += size >= 0 && size < f->readahead ? size : f->readahead;
  }
  struct files_split_state* s = sl_alloc(f->alloc, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", part->name);
  *s = (struct files_split_state){.part = part, .format = f->format, .alloc = f->alloc,
                                  .hive = &f->hive, .unified = &f->unified,
                                  .object = part - f->parts};
  // The object's own split, with the scan's placement (its rows are the
  // dataset's: the place's first row counts the objects before), but for
  // an object whose columns are not the dataset's (placement is by column)
  // or not of its types (its batches are cast).
  struct sl_split one = part->splits[split->index - part->first_split];
  one.place = part->columns_of == NULL && part->own_types.release == NULL ? split->place : NULL;
  // The struct fields the scan keeps, of the columns the object holds as
  // the dataset types them.
  int rc = object_fields(f, part, split->fields, s, &one.fields) != 0
               ? sl_error_set(error, ENOMEM, "out of memory")
               : 0;
  struct column_plan plan;
  memset(&plan, 0, sizeof plan);
  if (rc == 0 && (f->n_hive_cols > 0 || part->columns_of != NULL || part->own_types.release != NULL))
    rc = plan_columns(f, part, columns, n_columns, &plan, error);
  if (rc == 0 && plan.out != NULL) {
    int file_projected = 0;
    rc = f->format->split_open(part->reader, &one, plan.file, plan.n_file, &s->state,
                               &file_projected, error);
    // Batch children are the file columns asked for, or all of them.
    for (int64_t k = 0; rc == 0 && !file_projected && k < plan.n_out; ++k) {
      if (plan.out[k].from_batch >= 0) plan.out[k].from_batch = plan.file[plan.out[k].from_batch];
    }
    *projected = 1;
    s->out = plan.out;  // the state's now
    s->n_out = plan.n_out;
    plan.out = NULL;
  } else if (rc == 0) {
    rc = f->format->split_open(part->reader, &one, columns, n_columns, &s->state, projected,
                               error);
  }
  column_plan_free(f, &plan);
  if (rc != 0) {
    if (s->out != NULL) sl_free(f->alloc, s->out, (size_t)s->n_out * sizeof *s->out);
    free_object_fields(s);
    sl_free(f->alloc, s, sizeof *s);
    return sl_error_name(error, part->name);  // (an allocation's names no object)
  }
  atomic_fetch_add(&part->open, 1);
  *state = s;
  return 0;
}

static int files_split_next(void* state, struct ArrowArray* out, struct sluice_error* error) {
  struct files_split_state* s = state;
  int rc = 0;
  if (s->out == NULL) {
    rc = s->format->split_next(s->state, out, error);
  } else {
    struct ArrowArray batch;
    batch.release = NULL;
    out->release = NULL;
    rc = s->format->split_next(s->state, &batch, error);
    if (rc == 0 && batch.release != NULL) {
      rc = widen_struct(s->hive, s->unified, s->object, s->out, s->n_out, s->alloc, &batch, out,
                        s->part->name, error);
    }
  }
  return rc != 0 ? sl_error_name(error, s->part->name) : 0;
}

static void files_split_close(void* state) {
  struct files_split_state* s = state;
  if (s == NULL) return;
  s->format->split_close(s->state);
  struct files_part* part = s->part;
  long long closed = atomic_fetch_add(&part->closed, 1) + 1;
  if (atomic_fetch_sub(&part->open, 1) == 1 && closed >= part->n_splits &&
      atomic_compare_exchange_strong(&part->closed, &closed, 0)) {
    sl_source_drop(part->source, 0, part->source->size);
  }
  if (s->out != NULL) sl_free(s->alloc, s->out, (size_t)s->n_out * sizeof *s->out);
  free_object_fields(s);
  sl_free(s->alloc, s, sizeof *s);
}

static const char* files_split_batch_metadata(void* state) {
  struct files_split_state* s = state;
  return s->format->split_batch_metadata(s->state);
}

static void files_split_held_bytes(void* state, int64_t* held, int64_t* next) {
  struct files_split_state* s = state;
  s->format->split_held_bytes(s->state, held, next);
}

static int64_t files_rows_skipped(void* reader, char* first_reason, size_t cap) {
  struct sl_files_reader* f = reader;
  int64_t total = 0;
  for (int64_t i = 0; i < f->n_parts; ++i) {
    int64_t n = f->format->rows_skipped(f->parts[i].reader, total == 0 ? first_reason : NULL,
                                        total == 0 ? cap : 0);
    if (n > 0 && total == 0 && first_reason != NULL && cap > 0) {
      // Say which object the first skipped row is in.
      char reason[512];
      snprintf(reason, sizeof reason, "%s: %s", f->parts[i].name, first_reason);
      snprintf(first_reason, cap, "%s", reason);
    }
    total += n;
  }
  return total;
}

static int64_t files_column_bytes(void* reader, int64_t column) {
  struct sl_files_reader* f = reader;
  int64_t total = 0;
  if (column >= f->n_file_cols) return 0;  // a partition column costs next to nothing
  for (int64_t i = 0; i < f->n_parts; ++i) {
    const int64_t* own = f->parts[i].columns_of;
    if (own == NULL || own[column] >= 0) {
      total += f->format->column_bytes(f->parts[i].reader, own != NULL ? own[column] : column);
    }
  }
  return total;
}

static int open_part(struct sl_files_reader* f, struct files_part* p,
                     const struct sl_reader_args* args, struct sluice_error* error) {
  struct sl_reader_args part_args = *args;
  part_args.source = p->source;
  // (a format with a footer, from a pipe or a server without Range
  // support, reads a temporary copy, as a single object does)
  int rc = sl_format_open_spooling(f->format, &part_args, &p->reader, error);
  p->source = part_args.source;
  if (rc != 0) return rc;
  rc = f->format->plan_splits(p->reader, &p->splits, &p->n_splits, error);
  if (rc != 0) {
    p->splits = NULL;
    p->n_splits = 0;
    return rc;
  }
  // Every object is open before the scan starts: what its source cached
  // for the open goes now, so that memory grows with the objects being
  // read, not with all of them. The first is read first: what its open
  // read ahead serves its scan (a remote CSV's sample, its first split).
  if (p != f->parts) {
    sl_source_trim(p->source);
    if (f->format->trim != NULL) f->format->trim(p->reader);
  }
  return 0;
}

/// Opening an object is a round trip or two (HEAD, then the head or footer
/// the format reads) when it is remote: many objects open this many at a
/// time instead of one after the other.
#define FILES_OPEN_THREADS 8

/// The objects being opened by several threads (sl_parallel_for).
struct open_job {
  struct sl_files_reader* f;
  const struct sl_location_list* names;
  const struct sl_remote_options* remote;
  const struct sl_reader_args* args;
};

/// Opens object i (its source too, except the first one's, which the caller
/// opened to pick the format).
static int open_object(void* ctx, int64_t i, struct sluice_error* error) {
  struct open_job* job = ctx;
  struct sl_files_reader* f = job->f;
  struct files_part* p = &f->parts[i];
  const char* name = job->names->names[i];
  // What messages call it: without a URL's password.
  size_t shown = sl_location_shown(name, NULL, 0) + 1;
  p->name = sl_alloc(f->alloc, shown);
  if (p->name == NULL) {
    return sl_error_set(error, ENOMEM, "out of memory opening object %lld", (long long)i);
  }
  sl_location_shown(name, p->name, shown);
  // The open's cancel hook is asked before each object, and by the reads
  // that wait on one (a pipe, a trickling body: sl_source.cancelled).
  const struct sl_remote_options* given = job->remote;
  if (given != NULL && given->cancelled != NULL && given->cancelled(given->cancelled_user)) {
    return sl_error_set(error, ECANCELED, "%s: interrupted", p->name);
  }
  if (i > 0) {
    struct sl_remote_options remote = *given;
    remote.size_hint = job->names->sizes[i];
    remote.tail_first = f->format->tail_first;
    SL_RETURN_NOT_OK(sl_source_open_remote(name, &remote, f->alloc, &p->source, error));
    sl_source_ask_cancel(p->source, given->cancelled, given->cancelled_user);
    // (the first object was checked when its bytes chose the format)
    SL_RETURN_NOT_OK(sl_format_refuse_compressed(f->format, p->source, name, error));
  }
  return open_part(f, p, job->args, error);
}

/// A schema node's name ("" for none).
static const char* name_of(const struct ArrowSchema* s) { return s->name != NULL ? s->name : ""; }

/// The index of the child named `name` in `s` among its first `n`, or -1.
static int64_t child_named(const struct ArrowSchema* s, int64_t n, const char* name) {
  for (int64_t c = 0; c < n; ++c) {
    if (strcmp(name_of(s->children[c]), name) == 0) return c;
  }
  return -1;
}

/// Node `col` (a leaf) becomes of `format`, keeping its name, flags and
/// metadata.
static int set_leaf_format(struct ArrowSchema* col, const char* format,
                           const struct sluice_allocator* alloc, struct sluice_error* error) {
  struct ArrowSchema fresh;
  SL_RETURN_NOT_OK(sl_schema_init(&fresh, alloc, format, col->name, col->flags, 0, error));
  int rc = col->metadata != NULL ? sl_schema_set_metadata(&fresh, col->metadata, error) : 0;
  if (rc != 0) {
    fresh.release(&fresh);
    return rc;
  }
  col->release(col);
  *col = fresh;
  return 0;
}

/// Node `into` (of type null) becomes of b's type (a copy of b's tree and
/// metadata), keeping its name (a list's item may be "item" in one object,
/// "element" in another) and nullable.
static int take_type(struct ArrowSchema* into, const struct ArrowSchema* b,
                     const struct sluice_allocator* alloc, struct sluice_error* error) {
  struct ArrowSchema fresh;
  SL_RETURN_NOT_OK(sl_schema_init(&fresh, alloc, b->format, into->name,
                                  b->flags | ARROW_FLAG_NULLABLE, b->n_children, error));
  int rc = sl_schema_set_metadata(&fresh, b->metadata, error);
  for (int64_t i = 0; rc == 0 && i < b->n_children; ++i) {
    rc = sl_schema_copy(b->children[i], alloc, fresh.children[i], error);
  }
  if (rc == 0 && b->dictionary != NULL) {
    rc = sl_schema_alloc_dictionary(&fresh, error);
    if (rc == 0) rc = sl_schema_copy(b->dictionary, alloc, fresh.dictionary, error);
  }
  if (rc != 0) {
    fresh.release(&fresh);
    return rc;
  }
  into->release(into);
  *into = fresh;
  return 0;
}

/// Joins b's type into `into` (a copy of the dataset's column so far,
/// b's namesake), as the objects' batches can be cast to it
/// (sl_array_cast_type): leaves by sl_cast_join; lists, fixed-size lists,
/// maps and structs (the same field names in the same order) by their
/// children, list and large_list as into's (as string and large_string
/// are: the first object's). Else *joins = 0 and `why` names the first
/// difference (at `path`; `named` and `ref` as differs()).
static int join_into(struct ArrowSchema* into, const struct ArrowSchema* b,
                     const struct sluice_allocator* alloc, const char* path, int named,
                     const char* ref, char* why, size_t cap, int* joins, int depth,
                     struct sluice_error* error) {
  *joins = 1;
  const char* an = name_of(into);
  if (sl_type_is_null(into) != sl_type_is_null(b) && (named <= 0 || strcmp(an, name_of(b)) == 0)) {
    // A field of type null (None in every row: struct<a: null>, the items
    // of empty lists) takes the other's type, as a column of type null
    // does; its batches read as nulls of it (sl_array_cast_type).
    into->flags |= ARROW_FLAG_NULLABLE;
    return sl_type_is_null(into) ? take_type(into, b, alloc, error) : 0;
  }
  if (into->dictionary == NULL && b->dictionary == NULL && into->n_children == 0 &&
      b->n_children == 0 && (named <= 0 || strcmp(an, name_of(b)) == 0)) {
    const char* j = sl_cast_join(into->format, b->format);
    if (j == NULL) *joins = !differs(into, b, path, why, cap, named, ref);
    return j != NULL && strcmp(j, into->format) != 0 ? set_leaf_format(into, j, alloc, error) : 0;
  }
  if (depth > 64 || into->dictionary != NULL || b->dictionary != NULL ||
      into->n_children != b->n_children || (named > 0 && strcmp(an, name_of(b)) != 0) ||
      (strcmp(into->format, b->format) != 0 &&
       !(sl_format_is_list(into->format) && sl_format_is_list(b->format)))) {
    *joins = !differs(into, b, path, why, cap, named, ref);
    return 0;
  }
  char sub[256];
  snprintf(sub, sizeof sub, "%s%s%s", path, an, an[0] != '\0' ? "." : "");
  int kids = named < 0 ? 0 : strcmp(into->format, "+m") == 0 ? -1 : !unnamed_children(into->format);
  for (int64_t i = 0; *joins && i < into->n_children; ++i) {
    SL_RETURN_NOT_OK(join_into(into->children[i], b->children[i], alloc, sub, kids, ref, why, cap,
                               joins, depth + 1, error));
  }
  return 0;
}

/// Objects whose columns differ from the first object's only in leaf types
/// that join (string and large_string, int32 and int64, ...: what different
/// writers of one table disagree on), also inside lists, structs and maps
/// (list and large_list: join_into), or in columns of type null in some
/// (an all-None pandas column), read as one dataset of the joined types, as
/// DuckDB and polars read them: f->unified holds them, each object with
/// another type keeps its own schema to cast its batches, and one with a
/// column of type null reads nulls of the dataset's type there. Any other
/// difference is an error naming the first object whose columns do not
/// join those before it (not merely the first that differs: int32, int64,
/// string blames the string).
static int join_types(struct sl_files_reader* f, struct sluice_error* error) {
  if (f->n_parts < 2 || f->format->widen_to != NULL) return 0;  // (CSV joins its own)
  struct ArrowSchema* schemas = sl_calloc(f->alloc, (size_t)f->n_parts, sizeof *schemas);
  if (schemas == NULL) return sl_error_set(error, ENOMEM, "out of memory");
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < f->n_parts; ++i) {
    rc = f->format->schema(f->parts[i].reader, &schemas[i], error);
  }
  const int64_t n = rc == 0 ? schemas[0].n_children : 0;
  const size_t n_size = (size_t)(n > 0 ? n : 1);
  // Each column's type so far (a copy: leaves inside are joined in place).
  struct ArrowSchema* joined = sl_calloc(f->alloc, n_size, sizeof *joined);
  // The object whose column c gives the dataset its type: the first one
  // whose column is not of type null.
  int64_t* typed = sl_calloc(f->alloc, n_size, sizeof *typed);
  if (rc == 0 && (joined == NULL || typed == NULL)) rc = sl_error_set(error, ENOMEM, "out of memory");
  for (int64_t c = 0; rc == 0 && c < n; ++c) {
    rc = sl_schema_copy(schemas[0].children[c], f->alloc, &joined[c], error);
  }
  int joins = rc == 0, any = 0;
  for (int64_t i = 1; rc == 0 && joins && i < f->n_parts; ++i) {
    char why[512];
    joins = schemas[i].n_children == n;
    if (!joins) schema_differs(&schemas[0], &schemas[i], "", why, sizeof why);
    for (int64_t c = 0; rc == 0 && joins && c < n; ++c) {
      const struct ArrowSchema* a = schemas[typed[c]].children[c];
      const struct ArrowSchema* b = schemas[i].children[c];
      const int same_name = strcmp(name_of(a), name_of(b)) == 0;
      if (same_name && sl_type_is_null(a) != sl_type_is_null(b)) {
        if (sl_type_is_null(a)) {  // the objects before it have it as type null
          typed[c] = i;
          joined[c].release(&joined[c]);
          rc = sl_schema_copy(b, f->alloc, &joined[c], error);
        }
        any = 1;
        continue;
      }
      const char* ref = typed[c] == 0 ? "the first" : f->parts[typed[c]].name;
      if (!same_name) {
        joins = !differs(a, b, "", why, sizeof why, 1, ref);
        continue;
      }
      any |= sl_types_differ(a, b);
      // (a field joined to a wider type than that object's: not its type
      // to name; a column's own is told below)
      const char* within = sl_types_differ(a, &joined[c]) ? "the objects before it" : ref;
      rc = join_into(&joined[c], b, f->alloc, "", 1, within, why, sizeof why, &joins, 0, error);
      if (rc == 0 && !joins && strcmp(joined[c].format, a->format) != 0 &&
          b->n_children == 0 && b->dictionary == NULL && joined[c].n_children == 0) {
        // The objects before it joined to another type than the first's.
        char here[64], before[64], first[64];
        sl_format_name(b->format, here, sizeof here);
        sl_format_name(joined[c].format, before, sizeof before);
        sl_format_name(a->format, first, sizeof first);
        snprintf(why, sizeof why, "column '%s' is of type %s here, %s in the objects before it "
                 "(%s in %s)", name_of(a), here, before, first, ref);
      }
    }
    if (rc == 0 && !joins) {
      rc = columns_differ(f, i, why, names_differ(&schemas[0], &schemas[i]), error);
    }
  }
  if (rc == 0 && joins && any) {
    f->n_file_cols = n;  // (what files_close frees columns_of by)
    rc = sl_schema_copy(&schemas[0], f->alloc, &f->unified, error);
    for (int64_t c = 0; rc == 0 && c < n; ++c) {
      // (of type null in the first: the type of the first that is not)
      struct ArrowSchema* col = f->unified.children[c];
      col->release(col);
      *col = joined[c];  // moved
      joined[c].release = NULL;
    }
    for (int64_t i = 0; rc == 0 && i < f->n_parts; ++i) {
      struct files_part* p = &f->parts[i];
      f->unified.flags |= schemas[i].flags & ARROW_FLAG_NULLABLE;
      p->n_columns = n;
      int cast = 0, nulls = 0;
      for (int64_t c = 0; c < n; ++c) {
        struct ArrowSchema *col = f->unified.children[c], *own = schemas[i].children[c];
        if (sl_type_is_null(own) && !sl_type_is_null(col)) {
          col->flags |= ARROW_FLAG_NULLABLE;
          nulls = 1;
          continue;
        }
        merge_nullable(col, own);
        cast |= sl_types_differ(own, col);
      }
      if (nulls) {  // its columns of type null read as nulls of the dataset's types
        p->columns_of = sl_alloc(f->alloc, columns_of_size(n));
        if (p->columns_of == NULL) {
          rc = sl_error_set(error, ENOMEM, "out of memory");
          break;
        }
        for (int64_t c = 0; c < n; ++c) {
          p->columns_of[c] = sl_type_is_null(schemas[i].children[c]) &&
                                     !sl_type_is_null(f->unified.children[c])
                                 ? FILES_NULL_COLUMN
                                 : c;
        }
      }
      if (cast) {  // its own types stay, for the casts
        p->own_types = schemas[i];
        schemas[i].release = NULL;
      }
    }
  }
  for (int64_t i = 0; i < f->n_parts; ++i) {
    if (schemas[i].release != NULL) schemas[i].release(&schemas[i]);
  }
  sl_free(f->alloc, schemas, (size_t)f->n_parts * sizeof *schemas);
  for (int64_t c = 0; joined != NULL && c < n; ++c) {
    if (joined[c].release != NULL) joined[c].release(&joined[c]);
  }
  if (joined != NULL) sl_free(f->alloc, joined, n_size * sizeof *joined);
  if (typed != NULL) sl_free(f->alloc, typed, n_size * sizeof *typed);
  return rc;
}

/// What widen_by_name works with: each object's columns as dataset
/// columns (names matched, in the order first met), and each dataset
/// column's reference, the object whose type the others take.
struct name_match {
  struct ArrowSchema* schemas;  ///< n_parts: the objects' own (for their names)
  int64_t** column;  ///< [i][j]: object i's column j is dataset column column[i][j]
  int64_t n;         ///< dataset columns
  int64_t* ref;      ///< per dataset column: the reference object
  int64_t* ref_col;  ///< ... and its column there
  int64_t* refs;     ///< the objects that are some column's reference, in order
  int64_t n_refs;
  int64_t* map;      ///< scratch for widen_to: max columns of an object
  int64_t* where;    ///< scratch: per dataset column, the column of one object, or -1
  int64_t cap;       ///< entries allocated in ref, ref_col, where
  int64_t widest;    ///< entries allocated in map
};

static void name_match_free(struct sl_files_reader* f, struct name_match* m) {
  for (int64_t i = 0; m->schemas != NULL && i < f->n_parts; ++i) {
    if (m->column != NULL && m->column[i] != NULL) {
      sl_free(f->alloc, m->column[i], columns_of_size(m->schemas[i].n_children));
    }
    if (m->schemas[i].release != NULL) m->schemas[i].release(&m->schemas[i]);
  }
  sl_free(f->alloc, m->schemas, (size_t)f->n_parts * sizeof *m->schemas);
  sl_free(f->alloc, m->column, (size_t)f->n_parts * sizeof *m->column);
  sl_free(f->alloc, m->refs, (size_t)f->n_parts * sizeof *m->refs);
  sl_free(f->alloc, m->ref, columns_of_size(m->cap));
  sl_free(f->alloc, m->ref_col, columns_of_size(m->cap));
  sl_free(f->alloc, m->where, columns_of_size(m->cap));
  sl_free(f->alloc, m->map, columns_of_size(m->widest));
}

/// Fills `m` (zeroed) from the objects' schemas.
static int name_match_init(struct sl_files_reader* f, struct name_match* m,
                           struct sluice_error* error) {
  m->schemas = sl_calloc(f->alloc, (size_t)f->n_parts, sizeof *m->schemas);
  m->column = sl_calloc(f->alloc, (size_t)f->n_parts, sizeof *m->column);
  if (m->schemas == NULL || m->column == NULL) return sl_error_set(error, ENOMEM, "out of memory");
  m->cap = 1;
  for (int64_t i = 0; i < f->n_parts; ++i) {
    if (f->format->schema(f->parts[i].reader, &m->schemas[i], error) != 0) {
      return sl_error_name(error, f->parts[i].name);
    }
    m->cap += m->schemas[i].n_children;
    if (m->schemas[i].n_children > m->widest) m->widest = m->schemas[i].n_children;
  }
  m->ref = sl_alloc(f->alloc, columns_of_size(m->cap));
  m->ref_col = sl_alloc(f->alloc, columns_of_size(m->cap));
  m->where = sl_alloc(f->alloc, columns_of_size(m->cap));
  m->map = sl_alloc(f->alloc, columns_of_size(m->widest));
  m->refs = sl_calloc(f->alloc, (size_t)f->n_parts, sizeof *m->refs);
  if (m->ref == NULL || m->ref_col == NULL || m->where == NULL || m->map == NULL ||
      m->refs == NULL) {
    return sl_error_set(error, ENOMEM, "out of memory");
  }
  // The reference of a column: the first object with rows that has it (as
  // unify_parts takes the first object with rows), else the first that has it.
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t i = 0; i < f->n_parts; ++i) {
      const struct ArrowSchema* s = &m->schemas[i];
      if ((pass == 0) == (holds_no_rows(f, i) != 0)) continue;
      if (m->column[i] == NULL) {
        m->column[i] = sl_alloc(f->alloc, columns_of_size(s->n_children));
        if (m->column[i] == NULL) return sl_error_set(error, ENOMEM, "out of memory");
      }
      for (int64_t j = 0; j < s->n_children; ++j) {
        const char* name = s->children[j]->name != NULL ? s->children[j]->name : "";
        int64_t c = 0;
        while (c < m->n) {
          const struct ArrowSchema* at = m->schemas[m->ref[c]].children[m->ref_col[c]];
          if (strcmp(at->name != NULL ? at->name : "", name) == 0) break;
          ++c;
        }
        if (c == m->n) {
          m->ref[c] = i;
          m->ref_col[c] = j;
          ++m->n;
        }
        m->column[i][j] = c;
      }
    }
  }
  // (the references in object order: each is met once)
  for (int64_t c = 0; c < m->n; ++c) m->where[c] = -1;
  for (int64_t i = 0; i < f->n_parts; ++i) {
    int is_ref = 0;
    for (int64_t j = 0; !is_ref && j < m->schemas[i].n_children; ++j) {
      is_ref = m->ref[m->column[i][j]] == i;
    }
    if (is_ref) m->refs[m->n_refs++] = i;
  }
  return 0;
}

/// unify_parts by name, for formats that infer their types object by object
/// (CSV): each dataset column's reference widens to fit every other object
/// with rows that has the column, and then each of those takes its type,
/// so that every object parses the column as the joined type itself (no
/// cast). The objects' names and column counts are left alone: unify_by_name
/// then matches them.
static int widen_by_name(struct sl_files_reader* f, int* changed, struct sluice_error* error) {
  struct name_match m;
  memset(&m, 0, sizeof m);
  int rc = name_match_init(f, &m, error);
  // Pass 0: each reference R widens to object i (its columns that it is the
  // reference of, against i's of the same name); pass 1: i widens to R.
  for (int pass = 0; rc == 0 && pass < 2; ++pass) {
    for (int64_t i = 0; rc == 0 && i < f->n_parts; ++i) {
      if (pass == 0 && holds_no_rows(f, i)) continue;
      const int64_t* own = m.column[i];
      for (int64_t j = 0; j < m.schemas[i].n_children; ++j) m.where[own[j]] = j;
      for (int64_t k = 0; rc == 0 && k < m.n_refs; ++k) {
        int64_t r = m.refs[k];
        if (r == i) continue;
        const int64_t* to_cols = pass == 0 ? m.column[r] : own;
        int64_t n_to = pass == 0 ? m.schemas[r].n_children : m.schemas[i].n_children, any = 0;
        for (int64_t j = 0; j < n_to; ++j) {
          int64_t c = to_cols[j];
          m.map[j] = m.ref[c] != r ? -1 : pass == 0 ? m.where[c] : m.ref_col[c];
          any |= m.map[j] >= 0;
        }
        if (!any) continue;
        int widened = 0;
        rc = f->format->widen_to(f->parts[pass == 0 ? r : i].reader,
                                 f->parts[pass == 0 ? i : r].reader, m.map, &widened, error);
        if (rc != 0) sl_error_name(error, f->parts[pass == 0 ? r : i].name);
        *changed |= widened;
      }
      for (int64_t j = 0; j < m.schemas[i].n_children; ++j) m.where[own[j]] = -1;
    }
  }
  name_match_free(f, &m);
  return rc;
}

/// union_by_name: the dataset's columns are every object's, matched by
/// name, in the order first met (f->unified); a column some object lacks
/// is nullable, and that object's rows are null in it (part->columns_of).
/// A name must have one type in every object that has it, or types that
/// join (join_into), or be of type null in some (the others' type).
/// Objects whose types are inferred (CSV) are widened by name first, so
/// that they agree.
static int unify_by_name(struct sl_files_reader* f, struct sluice_error* error) {
  f->by_name = 1;
  if (f->format->widen_to != NULL) {
    int widened = 0;
    SL_RETURN_NOT_OK(widen_by_name(f, &widened, error));
  }
  struct ArrowSchema* schemas = sl_calloc(f->alloc, (size_t)f->n_parts, sizeof *schemas);
  if (schemas == NULL) return sl_error_set(error, ENOMEM, "out of memory");
  int rc = 0;
  int64_t cap = 1;  // every object's columns: at most this many differ
  for (int64_t i = 0; rc == 0 && i < f->n_parts; ++i) {
    rc = f->format->schema(f->parts[i].reader, &schemas[i], error);
    if (rc == 0) cap += schemas[i].n_children;
  }
  // Where each dataset column is first met: (object, its column).
  int64_t n = 0;
  int64_t(*first)[2] = rc == 0 ? sl_alloc(f->alloc, (size_t)cap * sizeof *first) : NULL;
  // Each dataset column's type so far (a copy: leaves inside are joined in place).
  struct ArrowSchema* joined = rc == 0 ? sl_calloc(f->alloc, (size_t)cap, sizeof *joined) : NULL;
  if (rc == 0 && (first == NULL || joined == NULL)) rc = sl_error_set(error, ENOMEM, "out of memory");
  for (int64_t i = 0; rc == 0 && i < f->n_parts; ++i) {
    for (int64_t j = 0; rc == 0 && j < schemas[i].n_children; ++j) {
      const struct ArrowSchema* col = schemas[i].children[j];
      const char* name = name_of(col);
      if (child_named(&schemas[i], j, name) >= 0) {
        rc = sl_error_set(error, EINVAL, "%s: two columns are named '%s': union_by_name matches "
                          "columns by name", f->parts[i].name, name);
        break;
      }
      int64_t c = 0;
      while (c < n && strcmp(name_of(schemas[first[c][0]].children[first[c][1]]), name) != 0) ++c;
      char why[512];
      if (c < n) {
        const struct ArrowSchema* was = schemas[first[c][0]].children[first[c][1]];
        if (sl_type_is_null(col)) continue;  // read as nulls of the column's type
        if (sl_type_is_null(was)) {  // the first of another type gives the column its type
          first[c][0] = i;
          first[c][1] = j;
          joined[c].release(&joined[c]);
          rc = sl_schema_copy(col, f->alloc, &joined[c], error);
          continue;
        }
        // (read as the joined type, the objects' batches cast)
        int joins = 1;
        // (joined to a wider type than the first's: not its type to name)
        const int widened = sl_types_differ(was, &joined[c]);
        rc = join_into(&joined[c], col, f->alloc, "", 1,
                       widened ? "the objects before it" : "the first", why, sizeof why, &joins,
                       0, error);
        if (rc == 0 && !joins) {
          rc = sl_error_set(error, EINVAL, "%s: union_by_name: %s; the first is in %s (cast "
                            "the column to one type, or read the objects separately)",
                            f->parts[i].name, why, f->parts[first[c][0]].name);
        }
        continue;
      }
      first[n][0] = i;
      first[n][1] = j;
      rc = sl_schema_copy(col, f->alloc, &joined[n], error);
      ++n;
    }
  }
  if (rc == 0) {
    rc = sl_schema_init(&f->unified, f->alloc, "+s", schemas[0].name, schemas[0].flags, n, error);
  }
  if (rc == 0 && schemas[0].metadata != NULL) {
    rc = sl_schema_set_metadata(&f->unified, schemas[0].metadata, error);
  }
  for (int64_t c = 0; rc == 0 && c < n; ++c) {
    *f->unified.children[c] = joined[c];  // moved
    joined[c].release = NULL;
  }
  f->n_file_cols = n;
  for (int64_t i = 0; rc == 0 && i < f->n_parts; ++i) {
    struct files_part* p = &f->parts[i];
    p->columns_of = sl_alloc(f->alloc, columns_of_size(n));
    if (p->columns_of == NULL) {
      rc = sl_error_set(error, ENOMEM, "out of memory");
      break;
    }
    p->n_columns = schemas[i].n_children;
    int same = schemas[i].n_children == n, cast = 0;
    for (int64_t c = 0; c < n; ++c) {
      struct ArrowSchema* col = f->unified.children[c];
      int64_t j = child_named(&schemas[i], schemas[i].n_children, name_of(col));
      if (j >= 0 && sl_type_is_null(schemas[i].children[j]) && !sl_type_is_null(col)) {
        j = FILES_NULL_COLUMN;
      }
      p->columns_of[c] = j;
      same &= j == c;
      if (j < 0) col->flags |= ARROW_FLAG_NULLABLE;
      else merge_nullable(col, schemas[i].children[j]);
      cast |= j >= 0 && sl_types_differ(schemas[i].children[j], col);
    }
    if (cast) {  // its own types stay, for the casts
      p->own_types = schemas[i];
      schemas[i].release = NULL;
    }
    if (same) {  // the dataset's own columns: read as without union_by_name
      sl_free(f->alloc, p->columns_of, columns_of_size(n));
      p->columns_of = NULL;
    }
  }
  for (int64_t i = 0; i < f->n_parts; ++i) {
    if (schemas[i].release != NULL) schemas[i].release(&schemas[i]);
  }
  sl_free(f->alloc, schemas, (size_t)f->n_parts * sizeof *schemas);
  if (first != NULL) sl_free(f->alloc, first, (size_t)cap * sizeof *first);
  for (int64_t c = 0; joined != NULL && c < n; ++c) {
    if (joined[c].release != NULL) joined[c].release(&joined[c]);
  }
  if (joined != NULL) sl_free(f->alloc, joined, (size_t)cap * sizeof *joined);
  return rc;
}

/// union_by_name with partitions: a key that names a column some objects
/// lack gives those objects' rows its directory value there (the others
/// keep their own values, as without union_by_name); its type must then be
/// the column's.
static int keys_of_columns(struct sl_files_reader* f, struct sluice_error* error) {
  int64_t n = f->n_file_cols;
  for (int64_t k = 0; k < f->hive.n_keys; ++k) {
    int64_t c = child_named(&f->unified, n, f->hive.keys[k]);  // (keys are never NULL)
    int lacking = 0;
    for (int64_t i = 0; c >= 0 && i < f->n_parts; ++i) {
      lacking |= f->parts[i].columns_of != NULL && f->parts[i].columns_of[c] == FILES_NO_COLUMN;
    }
    if (!lacking) continue;
    if (strcmp(f->hive.formats[k], f->unified.children[c]->format) != 0) {
      char key_type[64], column_type[64];
      sl_format_name(f->hive.formats[k], key_type, sizeof key_type);
      sl_format_name(f->unified.children[c]->format, column_type, sizeof column_type);
      return sl_error_set(error, EINVAL, "union_by_name: partition key '%s' (type %s) is a "
                          "column of type %s in some objects only; read without partitions "
                          "(hive_partitioning off) or give the objects that column",
                          f->hive.keys[k], key_type, column_type);
    }
    if (f->key_of_column == NULL) {
      f->key_of_column = sl_alloc(f->alloc, columns_of_size(n));
      if (f->key_of_column == NULL) return sl_error_set(error, ENOMEM, "out of memory");
      for (int64_t j = 0; j < n; ++j) f->key_of_column[j] = -1;
    }
    f->key_of_column[c] = k;
  }
  return 0;
}

/// The partition keys that become columns: those that name no column of the
/// objects (whose schema is object 0's).
static int choose_partition_columns(struct sl_files_reader* f, struct sluice_error* error) {
  struct ArrowSchema schema = {0};
  SL_RETURN_NOT_OK(f->unified.release != NULL
                       ? sl_schema_copy(&f->unified, f->alloc, &schema, error)
                       : f->format->schema(f->parts[0].reader, &schema, error));
  f->n_file_cols = schema.n_children;
  if (f->unified.release == NULL) {
    for (int64_t i = 0; i < f->n_parts; ++i) f->parts[i].n_columns = schema.n_children;
  }
  f->hive_keys = sl_calloc(f->alloc, (size_t)f->hive.n_keys, sizeof *f->hive_keys);
  int rc = f->hive_keys == NULL ? sl_error_set(error, ENOMEM, "out of memory") : 0;
  for (int64_t k = 0; rc == 0 && k < f->hive.n_keys; ++k) {
    int taken = 0;
    for (int64_t c = 0; c < schema.n_children && !taken; ++c) {
      const char* name = schema.children[c]->name;
      taken = name != NULL && strcmp(name, f->hive.keys[k]) == 0;
    }
    if (!taken) f->hive_keys[f->n_hive_cols++] = k;
  }
  schema.release(&schema);
  return rc == 0 && f->unified.release != NULL ? keys_of_columns(f, error) : rc;
}

int sl_files_reader_open(const struct sl_format_reader* format,
                         const struct sl_location_list* names, struct sl_source* first,
                         const struct sl_remote_options* remote,
                         const struct sl_reader_args* args, struct sl_hive* hive,
                         int union_by_name, const struct sl_format_reader** vtable, void** out,
                         struct sluice_error* error) {
  const struct sluice_allocator* alloc = args->alloc;
  *out = NULL;
  *vtable = NULL;
  struct sl_files_reader* f = sl_calloc(alloc, 1, sizeof *f);
  if (f != NULL) f->parts = sl_calloc(alloc, names->n, sizeof *f->parts);
  if (f == NULL || f->parts == NULL) {
    if (f != NULL) sl_free(alloc, f, sizeof *f);
    sl_source_close(first);
    sl_hive_free(hive, alloc);
    return sl_error_set(error, ENOMEM, "out of memory opening %zu objects", names->n);
  }
  f->hive = *hive;  // moved
  memset(hive, 0, sizeof *hive);
  f->format = format;
  f->alloc = alloc;
  f->n_parts = (int64_t)names->n;
  f->readahead = remote != NULL && remote->readahead_bytes > 0 ? remote->readahead_bytes
                                                               : FILES_DEFAULT_READAHEAD;
  f->parts[0].source = first;
  f->vtable = (struct sl_format_reader){
      .name = format->name,
      .extensions = format->extensions,
      .probe = format->probe,
      .open = NULL,  // opened only through sl_files_reader_open
      .schema = files_schema,
      .plan_splits = files_plan_splits,
      .split_open = files_split_open,
      .split_next = files_split_next,
      .split_close = files_split_close,
      .split_held_bytes = format->split_held_bytes != NULL ? files_split_held_bytes : NULL,
      .close = files_close,
      // Stored statistics are per object: the stats layer merges them
      // (sl_files_reader_objects).
      .stored_stats = NULL,
      .split_batch_metadata =
          format->split_batch_metadata != NULL ? files_split_batch_metadata : NULL,
      .rows_skipped = format->rows_skipped != NULL ? files_rows_skipped : NULL,
      // Every object has the real format's reader, so its promise holds.
      .split_by_columns = format->split_by_columns,
      // Objects it cannot map give their columns whole, which the scan's
      // schema still measures and filters right: the fields it does not keep
      // come out null either way.
      .prunes_fields = format->prunes_fields,
      .column_bytes = format->column_bytes != NULL ? files_column_bytes : NULL,
      .count_split_rows = format->count_split_rows != NULL ? files_count_split_rows : NULL,
      .refine = format->refine != NULL ? files_refine : NULL,
      .type_inferred = format->type_inferred != NULL ? files_type_inferred : NULL,
      .split_may_match = format->split_may_match != NULL ? files_split_may_match : NULL,
  };
  // On up to FILES_OPEN_THREADS threads; the error reported is that of the
  // first object, in the given order, that fails, as a serial open would.
  struct open_job job = {.f = f, .names = names, .remote = remote, .args = args};
  int (*cancelled)(void*) = remote != NULL ? remote->cancelled : NULL;
  int rc = sl_parallel_for_polled((int64_t)names->n, FILES_OPEN_THREADS, open_object, &job,
                                  cancelled, remote != NULL ? remote->cancelled_user : NULL,
                                  NULL, error);
  // The hook is the open's only: scans may outlive its caller's state.
  for (int64_t i = 0; i < f->n_parts; ++i) {
    if (f->parts[i].source != NULL) {
      sl_source_stop_asking(f->parts[i].source);
    }
  }
  for (int64_t i = 0; rc == 0 && i < f->n_parts; ++i) {
    struct files_part* p = &f->parts[i];
    if (sl_files_reader_object_excluded(f, i) && p->n_splits > 0) {  // kept for its columns only: no rows
      sl_free(f->alloc, p->splits, (size_t)p->n_splits * sizeof *p->splits);
      p->splits = NULL;
      p->n_splits = 0;
    }
    p->first_split = f->n_splits;
    f->n_splits += p->n_splits;
    atomic_init(&p->closed, 0);
    atomic_init(&p->open, 0);
  }
  int unified = 0;
  if (rc == 0 && union_by_name) rc = unify_by_name(f, error);
  if (rc == 0 && !union_by_name) rc = unify_parts(f, &unified, error);
  if (rc == 0 && !union_by_name) rc = join_types(f, error);
  // (Also without partitions: n_file_cols tells the objects' columns from
  // partition columns, and split_may_match passed every split without it.)
  if (rc == 0) rc = choose_partition_columns(f, error);
  if (rc != 0) {
    files_close(f);
    return rc;
  }
  *vtable = &f->vtable;
  *out = f;
  return 0;
}

int sl_files_reader_key_is_column(const struct sl_format_reader* vtable, void* reader,
                                  const char* key) {
  if (vtable == NULL || vtable->split_open != files_split_open) return 0;
  const struct sl_files_reader* f = reader;
  for (int64_t k = 0; k < f->hive.n_keys; ++k) {
    if (strcmp(f->hive.keys[k], key) != 0) continue;
    for (int64_t j = 0; j < f->n_hive_cols; ++j) {
      if (f->hive_keys[j] == k) return 0;  // a partition column of its own
    }
    return 1;
  }
  return 0;
}

int sl_files_reader_is_partition_column(const struct sl_format_reader* vtable, void* reader,
                                        const char* name) {
  if (vtable == NULL || vtable->split_open != files_split_open || name == NULL) return 0;
  const struct sl_files_reader* f = reader;
  for (int64_t j = 0; j < f->n_hive_cols; ++j) {
    if (strcmp(f->hive.keys[f->hive_keys[j]], name) == 0) return 1;
  }
  for (int64_t c = 0; f->key_of_column != NULL && c < f->n_file_cols; ++c) {
    if (f->key_of_column[c] >= 0 && strcmp(f->hive.keys[f->key_of_column[c]], name) == 0) return 1;
  }
  return 0;
}

int64_t sl_files_reader_objects(const struct sl_format_reader* vtable, void* reader,
                                const struct sl_format_reader** format) {
  if (vtable == NULL || vtable->split_open != files_split_open) return 0;
  const struct sl_files_reader* f = reader;
  *format = f->format;
  return f->n_parts;
}

int sl_files_reader_names_object(const struct sl_format_reader* vtable, void* reader,
                                 const struct sluice_error* error) {
  if (vtable == NULL || vtable->split_open != files_split_open) return 0;
  const struct sl_files_reader* f = reader;
  for (int64_t i = 0; i < f->n_parts; ++i) {
    if (f->parts[i].name != NULL && sl_error_names(error, f->parts[i].name)) return 1;
  }
  return 0;
}

int sl_files_reader_object_excluded(void* reader, int64_t object) {
  const struct sl_files_reader* f = reader;
  return f->hive.none_match || (f->hive.schema_only != NULL && f->hive.schema_only[object]);
}

int sl_files_reader_object_stats(void* reader, int64_t object, const int64_t* columns,
                                 int64_t n_columns, int64_t* row_count,
                                 struct sl_stored_column_stats* stats,
                                 struct ArrowArray* min_max, struct sluice_error* error) {
  const struct sl_files_reader* f = reader;
  if (object < 0 || object >= f->n_parts || f->format->stored_stats == NULL) {
    return sl_error_set(error, EINVAL, "no stored statistics for object %lld",
                        (long long)object);
  }
  void* object_reader = f->parts[object].reader;
  struct column_plan plan;
  memset(&plan, 0, sizeof plan);
  if (f->n_hive_cols > 0 || f->parts[object].columns_of != NULL ||
      f->parts[object].own_types.release != NULL) {  // (its bounds are cast too)
    SL_RETURN_NOT_OK(plan_columns(f, &f->parts[object], columns, n_columns, &plan, error));
  }
  if (plan.out == NULL) {
    return f->format->stored_stats(object_reader, columns, n_columns, row_count, stats, min_max,
                                   error);
  }
  // The object's answer for its own columns, then the partition columns'
  // (a constant: both bounds are the value, exact; all null for a null)
  // and those it lacks (all null).
  struct sl_stored_column_stats* file_stats =
      sl_calloc(f->alloc, (size_t)plan.n_file, sizeof *file_stats);
  struct ArrowArray file_bounds;
  memset(&file_bounds, 0, sizeof file_bounds);
  int rc = file_stats == NULL ? sl_error_set(error, ENOMEM, "out of memory") : 0;
  if (rc == 0) {
    rc = f->format->stored_stats(object_reader, plan.file, plan.n_file, row_count, file_stats,
                                 &file_bounds, error);
  }
  if (rc == 0 && (file_bounds.release == NULL || file_bounds.n_children != plan.n_file)) {
    rc = sl_error_set(error, EINVAL, "%s: stored statistics of a wrong shape",
                      f->parts[object].name);
  }
  for (int64_t k = 0; rc == 0 && k < plan.n_out; ++k) {
    const struct files_out_column* c = &plan.out[k];
    if (c->from_batch >= 0) {
      stats[k] = file_stats[c->from_batch];
    } else if (c->missing >= 0) {
      stats[k] = (struct sl_stored_column_stats){*row_count, 0, 1, 1};
    } else {
      int is_null = f->hive.values[object * f->hive.n_keys + c->hive_key] == NULL;
      stats[k] = (struct sl_stored_column_stats){is_null ? *row_count : 0, !is_null, 1, 1};
    }
  }
  if (rc == 0) {
    rc = widen_struct(&f->hive, &f->unified, object, plan.out, plan.n_out, f->alloc,
                      &file_bounds, min_max, f->parts[object].name, error);
  } else if (file_bounds.release != NULL) {
    file_bounds.release(&file_bounds);
  }
  if (file_stats != NULL) sl_free(f->alloc, file_stats, (size_t)plan.n_file * sizeof *file_stats);
  column_plan_free(f, &plan);
  return rc;
}
