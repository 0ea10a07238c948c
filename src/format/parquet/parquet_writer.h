// The Parquet writer (format "parquet"): Arrow record batches -> row groups,
// dictionary encoding with fallback to PLAIN, data page v1/v2, codecs,
// statistics, nested types.
#ifndef PARQUET_WRITER_H
#define PARQUET_WRITER_H

#include "../sl_format.h"

const struct sl_format_writer* sl_parquet_writer(void);

#endif
