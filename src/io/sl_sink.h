// Sinks: where written bytes go. A file sink writes to a temporary file in the
// target's directory and renames it over the target on commit, so an error
// leaves nothing half-written and an existing file undamaged.
#ifndef SL_SINK_H
#define SL_SINK_H

#include <stdint.h>

#include "sluice.h"
#include "sl_sink_compress.h"

struct sl_remote_options;

struct sl_sink;

/// Opens a sink for `location` (a path, "-" for standard output, or
/// s3://bucket/key: staged in a temporary file in $TMPDIR and uploaded on
/// commit, see sl_s3_upload_file).
int sl_sink_open(const char* location, const struct sluice_allocator* alloc,
                 struct sl_sink** out, struct sluice_error* error);
/// sl_sink_open with settings for remote outputs (s3://); `remote` (may be
/// NULL) must outlive the sink.
int sl_sink_open_remote(const char* location, const struct sl_remote_options* remote,
                        const struct sluice_allocator* alloc, struct sl_sink** out,
                        struct sluice_error* error);
/// Appends bytes (buffered).
int sl_sink_write(struct sl_sink* sink, const void* data, int64_t n, struct sluice_error* error);
/// ECANCELED ("interrupted") when the write this sink belongs to was
/// cancelled (sluice_write_options.cancelled), else 0. Writers that turn one
/// batch into much output poll it between pieces; the sink itself polls it
/// per buffer it writes, and before a commit.
int sl_sink_cancelled(const struct sl_sink* sink, struct sluice_error* error);
/// Appends `n` bytes that are both `data` in memory and bytes [offset,
/// offset + n) of the open file `fd` (e.g. a view of a mapped file, see
/// sl_ref_file_extent). Large runs are copied in the kernel, file to file
/// (copy_file_range) or file to pipe (splice), without faulting the memory
/// in; small ones, and any the kernel refuses, are written from `data`. The
/// sink's bytes are the same as with sl_sink_write(sink, data, n).
/// A file sink copies large runs of a regular file only on commit, all of
/// them at once on several threads, from its own descriptor on the file
/// (`fd` and `data` need not outlive this call; the file's bytes must stay
/// unchanged until commit).
int sl_sink_write_from_file(struct sl_sink* sink, int fd, int64_t offset, const void* data,
                            int64_t n, struct sluice_error* error);
/// sl_sink_write_from_file writes runs shorter than this from memory: a
/// caller need not open the file for them.
#define SL_SINK_COPY_MIN ((int64_t)1 << 20)
/// Compresses the whole file as `kind` (a .csv.gz output), before anything
/// is written; NONE is a no-op. Positions stay those of the bytes written
/// (uncompressed). EINVAL once bytes were written.
int sl_sink_compress(struct sl_sink* sink, enum sl_compression kind, struct sluice_error* error);
/// Bytes written so far (the current offset; IPC file footers need it).
int64_t sl_sink_position(const struct sl_sink* sink);
/// Commit without fsync: faster, but a crash soon after may leave the
/// renamed file without its bytes.
void sl_sink_skip_fsync(struct sl_sink* sink);
/// Flushes, runs the pending copies and ends the compression, then frees
/// the sink's buffer: the bytes are all in the (still unnamed) file, which
/// a later sl_sink_commit names, or sl_sink_abort removes. Writes after it
/// are not allowed. (A partitioned write to S3 finishes each object as it
/// goes and commits them all at the end.)
int sl_sink_finish(struct sl_sink* sink, struct sluice_error* error);
/// The writer will wait a while (a partitioned write's file between the
/// partition's spills): the buffered bytes and pending copies go to the
/// file and the 1 MiB buffer is freed, to be allocated again by the next
/// write. A compressing sink keeps its compressor (its frame goes on).
int sl_sink_idle(struct sl_sink* sink, struct sluice_error* error);
/// Copies a finished s3:// sink's staged bytes (the object, *size of them)
/// into file `dst` at `offset` (in the kernel where the file systems
/// allow), for a caller that keeps many objects in one file until their
/// uploads and then aborts the sink; EINVAL for other sinks.
int sl_sink_copy_staged(const struct sl_sink* sink, int dst, int64_t offset, int64_t* size,
                        struct sluice_error* error);
/// A new file in TMPDIR (or /tmp), unlinked at once so that nothing is left
/// however the process ends (mkstemp: no link another user left is
/// followed); `name` is the output it is for, in messages.
int sl_staging_file(const char* name, int* fd, struct sluice_error* error);
struct stat;
/// Gives the file or directory open as `fd`, made to replace one whose
/// stat is `old`, that one's owner and group where permitted (best
/// effort) and its mode; setuid/setgid only when both owner and group
/// were kept. File sinks do it for the file they replace.
void sl_keep_owner_and_mode(int fd, const struct stat* old);
/// sl_sink_finish, then fsyncs a local file (unless
/// sl_sink_skip_fsync), renames it into place and fsyncs its directory,
/// frees the sink. On failure the temporary file is removed.
int sl_sink_commit(struct sl_sink* sink, struct sluice_error* error);
/// Removes the temporary file, frees the sink. NULL-safe.
void sl_sink_abort(struct sl_sink* sink);

#endif
