// The Avro object container file writer ("avro", .avro). See avro_writer.c
// for the type mapping (the inverse of the reader's, avro_reader.h) and the
// options.
#ifndef SL_AVRO_WRITER_H
#define SL_AVRO_WRITER_H

#include "format/sl_format.h"

const struct sl_format_writer* sl_avro_writer(void);

#endif
