// The length-prefixed message stream reader ("lenprefix", .lenprefix).
//
// A stream of messages, each preceded by its length in bytes, read into one
// nullable-free binary column named "message", one row per message, in
// stream order. The prefix kind is the format option
// `length_prefix=KIND` (CLI: -O length_prefix=KIND or --length-prefix KIND):
//   varint (default; protobuf's writeDelimitedTo / parseDelimitedFrom framing,
//   an unsigned LEB128 of at most 10 bytes), u8, u16le, u16be, u32le, u32be,
//   u64le, u64be.
//
// The stream is read forward only (one split), so it works the same on
// files, pipes and remote forward streams. Batches hold at most batch_size
// rows (default 65536) and about 8 MiB of message bytes; a larger message
// gets a batch of its own. Messages of 2 GiB or more are refused (the column
// is binary, with 32-bit offsets). A truncated final prefix or message is an
// error naming the offset of its prefix.
#ifndef SL_LENPREFIX_READER_H
#define SL_LENPREFIX_READER_H

#include "format/sl_format.h"

/// The reader table for length-prefixed message streams.
const struct sl_format_reader* sl_lenprefix_reader(void);

#endif
