// The Arrow IPC readers: "arrow" (the random-access file format, magic
// "ARROW1", one split per record batch) and "arrows" (the stream format, one
// forward-only split).
#ifndef SL_IPC_READER_H
#define SL_IPC_READER_H

#include "format/sl_format.h"

/// The IPC file reader (".arrow", ".feather", ".ipc").
const struct sl_format_reader* sl_ipc_file_reader(void);
/// The IPC stream reader (".arrows", ".stream").
const struct sl_format_reader* sl_ipc_stream_reader(void);

#endif
