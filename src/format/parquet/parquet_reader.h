// The Parquet reader (format "parquet"): footer, schema -> Arrow, one split
// per row group, projection by column chunk, stored statistics.
#ifndef PARQUET_READER_H
#define PARQUET_READER_H

#include "../sl_format.h"

const struct sl_format_reader* sl_parquet_reader(void);

#endif
