// Local sources: a regular file mapped whole, or a forward-only descriptor
// (pipe, terminal, /dev/stdin) read in chunks.
#ifndef SL_SOURCE_FILE_H
#define SL_SOURCE_FILE_H

#include "sl_source.h"

/// Opens a local path. Regular files are mmap'd (ranged reads); anything else
/// that can be read (FIFOs, character devices) becomes a forward-only source.
/// `name` is what error messages call the object (the location as written).
int sl_file_source_open(const char* path, const char* name,
                        const struct sluice_allocator* alloc, struct sl_source** out,
                        struct sluice_error* error);

/// A forward-only source over an open descriptor. With `owns_fd` the
/// descriptor is closed with the source (standard input is not).
int sl_fd_source_open(int fd, int owns_fd, const char* name,
                      const struct sluice_allocator* alloc, struct sl_source** out,
                      struct sluice_error* error);

/// Whether `source` is a forward-only source from which nothing was read yet
/// (peeking does not count).
int sl_source_untouched(const struct sl_source* source);

/// Copies the rest of a forward-only source into an unlinked temporary file
/// ($TMPDIR or /tmp) and opens that as a mapped source with ranged reads, for
/// formats that need random access (footers) when reading a pipe. `forward`
/// is read to its end but not closed.
int sl_source_spool(struct sl_source* forward, struct sl_source** out,
                    struct sluice_error* error);

/// Whether `length` bytes at `ptr`, in memory kept alive by `ref`, are a view
/// of a mapped local file; if so, `*fd` is a new descriptor on that file,
/// opened again by its name, which the caller closes, and `*offset` where
/// the bytes start in it. Returns 0 (outputs untouched) for any other memory,
/// and when the name is no longer the mapped file (replaced, removed) or no
/// descriptor is to be had: the caller then copies from memory. Lets a sink
/// copy the bytes file-to-file in the kernel (sl_sink_write_from_file)
/// instead of faulting the mapping in; worth it for runs of SL_SINK_COPY_MIN
/// bytes or more only. A mapping keeps no descriptor open: a dataset of many
/// files would hold one per file.
int sl_ref_file_extent(const struct sl_ref* ref, const void* ptr, int64_t length, int* fd,
                       int64_t* offset);

/// Thread-safe strerror into `buf`; returns `buf`.
const char* sl_errno_text(int errnum, char* buf, size_t cap);
/// The code to return for a failed system call's errno: that errno (EROFS,
/// ENOTDIR, ENAMETOOLONG, ENOSPC, EACCES, ...: callers and Python's
/// e.errno can test it), except those the API gives another meaning
/// (EINVAL a bad argument, EILSEQ malformed input, ENOTSUP, ERANGE,
/// EOVERFLOW, ECANCELED a cancel) and 0, which are EIO.
int sl_errno_code(int errnum);
/// Sets `error` to "<name>: <what>: <strerror(errnum)>" with `code`, and
/// returns it: the message of every failed system call on a file.
int sl_errno_error(struct sluice_error* error, int code, const char* name, const char* what,
                   int errnum);

#endif
