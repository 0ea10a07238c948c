// A zstd frame whose window passes what the streaming decoder takes (128
// MiB, zstd's default; `zstd --long=28` and up write larger ones) is not
// corrupt: its message says how large a window it needs, as the zstd CLI
// does ("Use --long=28 or --memory=256MB"). One-shot decoding into a buffer
// of the whole output (Parquet pages, IPC buffers, Avro blocks of known
// size) needs no window and takes such frames.
#ifndef SL_ZSTD_WINDOW_H
#define SL_ZSTD_WINDOW_H

#include <stddef.h>

/// When `code` (a zstd error) says the frame's window is too large, writes
/// "the zstd frame needs a window of N MiB, more than the 128 MiB limit"
/// into buf (N from the frame header at src[0, n) when it starts there,
/// else without it) and returns 1; else returns 0.
int sl_zstd_window_error(size_t code, const void* src, size_t n, char* buf, size_t cap);

#endif
