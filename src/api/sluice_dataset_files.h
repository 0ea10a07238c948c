// A dataset of many objects (a directory, a glob, an S3 prefix) read as one
// table: a reader of the sl_format_reader kind that wraps one reader of the
// real format per object, plans the objects' splits end to end, and routes
// each split to its object's reader. The scan engine sees one reader and
// never knows there are several objects.
#ifndef SLUICE_DATASET_FILES_H
#define SLUICE_DATASET_FILES_H

#include "sluice.h"
#include "../format/sl_format.h"
#include "../io/sl_location.h"
#include "sluice_dataset_hive.h"

struct sl_files_reader;

/// Opens every object of `names` (n >= 1) with `format`. `first` is the open
/// source of names->names[0] (ownership passes to the reader, also on error);
/// the others are opened here with `remote`. `args` gives the allocator,
/// batch size and format options (its `source` is ignored). All objects must
/// have the same columns (names and types), unless `union_by_name`: then the
/// dataset's columns are all the objects' columns matched by name (one type
/// per name), in the order first met, and an object's rows are null in the
/// columns it lacks (DuckDB's union_by_name). A column that is nullable in
/// any object (or missing from one) is nullable in the dataset's schema.
/// `hive` (the partitions of
/// `names`, moved into the reader and zeroed, also on error) adds a column
/// per key that names no column of the objects, after theirs. On success
/// *out is the reader and *vtable its function table, both valid until
/// vtable->close(*out).
int sl_files_reader_open(const struct sl_format_reader* format,
                         const struct sl_location_list* names, struct sl_source* first,
                         const struct sl_remote_options* remote,
                         const struct sl_reader_args* args, struct sl_hive* hive,
                         int union_by_name, const struct sl_format_reader** vtable, void** out,
                         struct sluice_error* error);

/// When `vtable` is a files reader's: whether partition key `key` names a
/// column of the objects (which then keep their own values: no partition
/// column is added for it). Otherwise 0.
int sl_files_reader_key_is_column(const struct sl_format_reader* vtable, void* reader,
                                  const char* key);

/// When `vtable` is a files reader's: whether the dataset's column `name`
/// takes its values from key=value directories. Otherwise 0.
int sl_files_reader_is_partition_column(const struct sl_format_reader* vtable, void* reader,
                                        const char* name);

/// When `vtable` is a files reader's (from sl_files_reader_open): sets
/// *format to the real format and returns the number of objects, whose
/// statistics sl_files_reader_object_stats gives. Otherwise 0.
int64_t sl_files_reader_objects(const struct sl_format_reader* vtable, void* reader,
                                const struct sl_format_reader** format);
/// When `vtable` is a files reader's: 1 when the message in `error` names
/// one of its objects. Otherwise 0.
int sl_files_reader_names_object(const struct sl_format_reader* vtable, void* reader,
                                 const struct sluice_error* error);
/// 1 when object `object` is kept for its columns only (the partition
/// filter refused it): a scan reads none of its rows, so neither do
/// statistics. Otherwise 0.
int sl_files_reader_object_excluded(void* reader, int64_t object);
/// Object `object`'s stored statistics, as the real format's stored_stats
/// hook gives them, `columns` being the dataset's: the object answers for
/// its own columns, the partition columns are its constant values.
int sl_files_reader_object_stats(void* reader, int64_t object, const int64_t* columns,
                                 int64_t n_columns, int64_t* row_count,
                                 struct sl_stored_column_stats* stats,
                                 struct ArrowArray* min_max, struct sluice_error* error);

#endif
