// The CSV format reader ("csv": .csv .tsv .txt). Options arrive through
// sl_reader_args.format_options; see csv_options.c for the keys.
#ifndef SL_CSV_READER_H
#define SL_CSV_READER_H

#include "format/sl_format.h"

const struct sl_format_reader* sl_csv_reader(void);

#endif
