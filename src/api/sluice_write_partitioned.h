// Hive-partitioned writes: each row goes to a file under
// `<location>/<key>=<value>/...` chosen by its values of the partition
// columns (which the files then leave out), as pyarrow's write_dataset,
// DuckDB's COPY ... PARTITION_BY and polars' partition_by lay them out, so
// that every reader of Hive partitions (sluice's included) reads the table
// back.
#ifndef SLUICE_WRITE_PARTITIONED_H
#define SLUICE_WRITE_PARTITIONED_H

#include "sluice.h"
#include "../format/sl_format.h"

struct sl_sink;
struct sl_remote_options;

/// The settings of `options` that remote sinks (s3://) take.
void sl_write_remote_options(const struct sluice_write_options* options,
                             struct sl_remote_options* out);

/// A new sink for `location` (a file or s3:// object) for `writer`: not
/// fsynced with options->no_fsync, compressed whole where the writer is
/// compressible and the name or options->compression ask for it (then
/// args->compression is cleared: it was the file's, not the format's). The
/// caller writes, then commits or aborts it (`remote` must live until
/// then). (src/api/sluice_dataset.c; shared with the one-file write.)
int sl_write_open_sink(const struct sl_format_writer* writer, const char* location,
                       const struct sluice_write_options* options,
                       const struct sl_remote_options* remote, struct sl_write_args* args,
                       struct sl_sink** out, struct sluice_error* error);

/// EINVAL, naming the field, for write options no write can take: a
/// negative count, or n_partition_by > 0 without partition_by. Checked by
/// sluice_write and, before its thread starts, sluice_writer_open.
int sl_write_options_check(const char* location, const struct sluice_write_options* options,
                           struct sluice_error* error);

/// Writes `stream` (checked already) partitioned by options->partition_by
/// under `location`, a directory or an s3:// prefix: rows are buffered per
/// partition and written out to `part-<n><ext>` files (the partition
/// holding the most bytes first when options->partition_buffer_bytes are
/// spent; each spill ends a row group, block or batch of the partition's
/// open file), none of which appears before every one is written. What
/// may be at `location` already: options->existing_data_behavior.
int sl_write_partitioned(const struct sl_format_writer* writer, struct ArrowArrayStream* stream,
                         const char* location, const struct sluice_write_options* options,
                         struct sl_write_args* args, struct sluice_error* error);

/// The bytes a partitioned write buffers (options->partition_buffer_bytes
/// or its default).
int64_t sl_write_partitioned_budget(const struct sluice_write_options* options);

#endif
