"""The exceptions sluice raises, one per kind of failure of the C library.

Every exception carries the C library's one-line message (``.message``, also
``str(exc)``) and its errno-style code (``.code``). Each also derives from the
built-in exception that fits, so ``except FileNotFoundError`` or
``except ValueError`` keep working.
"""
import errno as _errno


class Error(Exception):
    """Base class of every sluice error.

    Made as Error(code, message) or Error("message"); SourceError and
    NotFoundError also as OSError is: NotFoundError(errno, message, filename)."""

    def __init__(self, code=0, message=""):
        self._init(code, message, ())

    def _init(self, code, message, filenames):
        if isinstance(code, str) and not message:  # Error("message"), as other exceptions
            code, message = 0, code
        # OSError(errno, strerror, filename[, winerror, filename2]) sets
        # .filename (and leaves args as (errno, strerror)), as open() does.
        super().__init__(code, message, *filenames)
        self.code = code
        self.message = message

    def __str__(self):
        return self.message

    def __reduce__(self):
        # As OSError pickles: the filenames in the arguments, the rest
        # (notes, attributes set later) in the state.
        args = (self.code, self.message)
        if isinstance(self, OSError) and (self.filename is not None or
                                          self.filename2 is not None):
            args += (self.filename, None, self.filename2)
        return (type(self), args, self.__dict__ or None)


class InvalidArgumentError(Error, ValueError):
    """A bad argument or option (EINVAL): unknown format, column, option."""


class FormatError(Error, ValueError):
    """The input is not valid in its format (EILSEQ)."""


class UnsupportedError(Error, NotImplementedError):
    """Valid input that sluice does not handle (ENOTSUP)."""


class SourceError(Error, OSError):
    """The source or destination could not be read or written (EIO, ...)."""

    def __init__(self, code=0, message="", *filenames):
        self._init(code, message, filenames)


class NotFoundError(SourceError, FileNotFoundError):
    """The location does not exist (ENOENT)."""


# SourceErrors that are also the built-in OSError subclass for their errno,
# as open() and pyarrow raise them (``except PermissionError`` works).
# Not exported: ``except sluice.SourceError`` and the built-ins catch them.
class SourcePermissionError(SourceError, PermissionError):
    """Permission denied (EACCES, EPERM): a write-protected file, a directory."""


class SourceIsADirectoryError(SourceError, IsADirectoryError):
    """A directory where a file was wanted (EISDIR)."""


class SourceNotADirectoryError(SourceError, NotADirectoryError):
    """A path through a file as if it were a directory (ENOTDIR)."""


class OutOfMemoryError(Error, MemoryError):
    """An allocation failed or the memory budget cannot hold a batch (ENOMEM)."""


_BY_CODE = {
    _errno.EINVAL: InvalidArgumentError,
    _errno.EILSEQ: FormatError,
    _errno.ENOTSUP: UnsupportedError,
    _errno.ENOENT: NotFoundError,
    _errno.ENOMEM: OutOfMemoryError,
    _errno.EACCES: SourcePermissionError,
    _errno.EPERM: SourcePermissionError,
    _errno.EISDIR: SourceIsADirectoryError,
    _errno.ENOTDIR: SourceNotADirectoryError,
    # A value that does not fit its target (a uint64 past Avro's long, too
    # many dictionary values for the index type): pyarrow's ArrowInvalid.
    _errno.ERANGE: InvalidArgumentError,
    _errno.EOVERFLOW: InvalidArgumentError,
    # An Avro enum column met a value its symbols lack (written again as
    # strings where the data can be exported again: sluice.write).
    _errno.EDOM: InvalidArgumentError,
}
if hasattr(_errno, "EOPNOTSUPP"):
    _BY_CODE.setdefault(_errno.EOPNOTSUPP, UnsupportedError)


# Reading or writing the location failed: the disk, the network (a timeout,
# an unreachable host, a protocol error), or the object changed mid-read.
_SOURCE_CODES = {getattr(_errno, name) for name in (
    "EIO", "EACCES", "EISDIR", "EPIPE", "ENOSPC", "EROFS", "ENOTDIR", "ETIMEDOUT",
    "EHOSTUNREACH", "ECONNREFUSED", "ECONNRESET", "EPROTO", "ESTALE", "EAGAIN", "EFBIG",
    "ENAMETOOLONG", "ELOOP", "EEXIST", "EPERM", "EBUSY", "ETXTBSY", "EMFILE", "ENFILE",
    "EDQUOT", "EXDEV", "ENXIO", "ENODEV", "EMLINK", "ENOTEMPTY", "EBADF")
    if hasattr(_errno, name)}


def from_code(code, message):
    """The exception for a C error code and message (used by the extension)."""
    cls = _BY_CODE.get(code)
    if cls is None:
        cls = SourceError if code in _SOURCE_CODES else Error
    return cls(code, message)
