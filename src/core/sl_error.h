// Errors as values: every fallible internal function returns 0 or an errno
// code and fills a caller-provided struct sluice_error.
#ifndef SL_ERROR_H
#define SL_ERROR_H

#include <errno.h>

#include "sluice.h"

#if defined(__GNUC__)
#define SL_PRINTF(fmt_index, args_index) __attribute__((format(printf, fmt_index, args_index)))
#else
#define SL_PRINTF(fmt_index, args_index)
#endif

/// Records `code` and a printf-style message in `error` (which may be NULL)
/// and returns `code`, so that callers can write `return sl_error_set(...)`.
int sl_error_set(struct sluice_error* error, int code, const char* fmt, ...) SL_PRINTF(3, 4);

/// For the public entry points, whose callers may pass error = NULL: points
/// `error` at a scratch struct of the function's then, so that the code
/// below never has to check (several places dereferenced it); and clears
/// it, so that a caller's struct reused after a failure does not keep that
/// failure's code through a call that succeeds (sluice.h: code 0 then).
#define SL_ERROR_OR_SCRATCH(error)                   \
  struct sluice_error sl_error_scratch_;            \
  if ((error) == NULL) (error) = &sl_error_scratch_; \
  sl_error_clear(error)

/// Prefixes the message already in `error` with `"<prefix>: "` (e.g. the
/// object name) and returns error->code. Use when an inner layer did not know
/// which object it was reading.
int sl_error_prefix(struct sluice_error* error, const char* fmt, ...) SL_PRINTF(2, 3);

/// Whether the message in `error` names `name`: holds it, or starts with
/// its first part where a long message was cut (" [...] ").
int sl_error_names(const struct sluice_error* error, const char* name);
/// Leads the message in `error` with "<name>: " unless it names `name`
/// already (sl_error_names); returns error->code. For the places that hand
/// out an inner layer's error (an allocation, the scan engine), whose
/// message may name no object.
int sl_error_name(struct sluice_error* error, const char* name);

/// Records `code` and the message `lead` + `text` (text_len bytes, any
/// length). A text too long for what `lead` leaves keeps its start and its
/// end around " [...] ", cut between whole UTF-8 characters: the end may be
/// what a caller tells the error by (a Python traceback's last line).
int sl_error_set_ends(struct sluice_error* error, int code, const char* lead, const char* text,
                      size_t text_len);

/// Clears `error` (code 0, empty message).
void sl_error_clear(struct sluice_error* error);

#define SL_RETURN_NOT_OK(expr)      \
  do {                              \
    int sl_status_ = (expr);        \
    if (sl_status_ != 0) return sl_status_; \
  } while (0)

#endif
